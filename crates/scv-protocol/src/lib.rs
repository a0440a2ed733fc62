//! The SCV client protocol, version 2: every client message and server event
//! as serde types, the stable error codes, the frame limits, and the
//! newline-delimited JSON codec that enforces them.
//!
//! The contract is the protocol document (`shared/seed/…`); this crate is its
//! executable form. Unknown object fields are ignored on input; unknown
//! message types are rejected (see [`ClientFrame::parse`]).

pub mod checkpoints;
pub mod codec;
pub mod codes;
pub mod customize;
pub mod detach;
pub mod elicit_form;
pub mod elicitation;
pub mod events;
pub mod images;
pub mod limits;
pub mod messages;
pub mod permissions;
pub mod processes;
pub mod sessions;
pub mod subagents;
pub mod trust;

pub use checkpoints::*;
pub use codec::{Frame, FrameCodec};
pub use codes::{ErrorCode, FailureCode};
pub use customize::*;
pub use detach::*;
pub use elicitation::*;
pub use events::*;
pub use images::PromptImage;
pub use messages::*;
pub use permissions::*;
pub use processes::*;
pub use sessions::*;
pub use subagents::*;
pub use trust::*;

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u32 = 2;
