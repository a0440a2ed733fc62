//! The sandbox under SCV's tool processes.
//!
//! A [`Policy`] says what one command may touch: read the filesystem
//! except the user's home (bar its toolchains and caches) and `$SCV_HOME`,
//! write only the workspace, the temp directories and configured roots (or
//! nothing but a private temp directory), and optionally no IP network.
//! The server builds it per call and hands it, as JSON, to the tool
//! process (the reaper), which prepares it ([`Prepared`]: a Landlock
//! ruleset, seccomp filters, a user and mount namespace plan, a process
//! bound) and applies it in the command's child between `fork` and `exec`
//! ([`Confinement::apply`]) — never in the server, and inherited by every
//! descendant. [`probe`] tells the server what the kernel can enforce;
//! [`env`] decides which variables a tool process may see.
//!
//! Two walls: Landlock governs which files a command opens; the second
//! wall closes what Landlock does not see — Unix sockets, terminals, the
//! keyrings and io_uring (`doors`), file modes and `.git` (read-only
//! mounts, `namespace`), capabilities even as root (`caps`), inherited
//! descriptors and the controlling terminal ([`detach`]), and the number
//! of processes (`pids`).

mod caps;
mod doors;
pub mod env;
mod error;
mod namespace;
mod network;
mod paths;
mod pids;
mod policy;
mod prepared;
mod probe;
mod ruleset;

pub use error::Error;
pub use policy::{
    holds_home, system_temp_dirs, Mode, Policy, Settings, HOME_DENIED, HOME_READABLE,
};
pub use prepared::{detach, Confinement, Prepared};
pub use probe::{probe, Support, TEST_NO_LANDLOCK, TEST_NO_USERNS};
