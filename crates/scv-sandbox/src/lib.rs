//! The sandbox under SCV's tool processes.
//!
//! A [`Policy`] says what one command may touch: read the whole filesystem
//! except a few credential trees, write only the workspace, the temp
//! directories and configured roots (or nothing but a private temp
//! directory), and optionally no IP network. The server builds it per call
//! and hands it, as JSON, to the tool process (the reaper), which turns it
//! into a Landlock ruleset and seccomp filters ([`Prepared`]) and applies
//! them in the command's child between `fork` and `exec`
//! ([`Confinement::apply`]) — never in the server, and inherited by every
//! descendant. [`probe`] tells the server whether the kernel can enforce it;
//! [`env`] decides which variables a tool process may see.

pub mod env;
mod error;
mod network;
mod policy;
mod prepared;
mod probe;
mod ruleset;

pub use error::Error;
pub use policy::{system_temp_dirs, Mode, Policy, DENIED_IN_HOME};
pub use prepared::{Confinement, Prepared};
pub use probe::{probe, Support, TEST_NO_LANDLOCK};
