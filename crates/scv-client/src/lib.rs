//! SCV client library: where `$SCV_HOME` and the daemon socket live, and a
//! typed protocol connection over any byte stream (the local socket, or
//! ssh to another machine's `scv bridge`), the daemon control
//! helper, and starting the daemon when it is not running.

pub mod connection;
pub mod control;
pub mod daemon;
pub mod driver;
pub mod endpoint;
pub mod home;
pub mod images;
mod remote;
pub mod rules;
pub mod session;
pub mod text;
pub mod time;
pub mod trust;

pub use connection::{frame_line, Connection, Open, Opened};
pub use control::{control, ControlError};
pub use daemon::ensure_daemon;
pub use driver::{Batch, Driver};
pub use endpoint::{DaemonConnection, Endpoint};
pub use home::{
    check_home, create_private_dir, default_socket_path, resolve_home, scv_home, scv_home_from,
    HomeSource,
};
pub use session::{SessionClient, Update};
