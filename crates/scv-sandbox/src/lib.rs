//! The sandbox under SCV's tool processes.
//!
//! A [`Policy`] says what one command may touch. On a machine with user
//! namespaces the command runs on a made-up machine (`machine`): a root
//! built up from nothing, holding the system's software read-only, a home
//! with only the allow-listed toolchain and cache trees (credentials in
//! them shown empty or filtered, `credentials`), the session's own `/tmp`
//! and `/dev/shm`, the workspace (writable in `workspace-write`), the
//! configured roots, and every repository under a writable root read-only
//! ([`repositories`]). The server builds the policy per session and hands
//! it, as JSON, to the tool process (the reaper), which prepares it
//! ([`Prepared`]: the machine planned, a Landlock ruleset, seccomp
//! filters, the session's pids cgroup) and applies it in the command's
//! child between `fork` and `exec` ([`Confinement::apply`]) — never in the
//! server, and inherited by every descendant. [`probe`] tells the server
//! what the kernel can enforce; [`env`] builds a tool process's
//! environment from an allow-list.
//!
//! Two walls: the machine and Landlock govern which files a command sees
//! and opens; the rest closes what they do not — Unix sockets, terminals,
//! the keyrings and io_uring (`doors`), capabilities even as root
//! (`caps`), inherited descriptors and the controlling terminal
//! ([`detach`]), and the number of processes (`pids`). Without user
//! namespaces, Landlock alone cuts the host down (`ruleset::build`), and
//! the server names what that lacks.

mod caps;
pub mod credentials;
mod doors;
pub mod egress;
pub mod env;
mod error;
mod machine;
mod namespace;
mod network;
mod paths;
mod pids;
mod policy;
mod prepared;
mod probe;
mod repos;
mod resident;
mod ruleset;
mod sys;

pub use error::Error;
pub use machine::SYSTEM;
pub use pids::{CgroupTree, SessionCgroup};
pub use policy::{
    holds_home, plants_code, system_temp_dirs, Mode, Network, Policy, Settings, HOME_READABLE,
};
pub use prepared::{detach, Confinement, Prepared};
pub use probe::{probe, Support, TEST_NO_LANDLOCK, TEST_NO_USERNS};
pub use repos::{repositories, Found, MAX_ENTRIES, MAX_SHARED_FILES};
pub use resident::{Joining, Resident};
