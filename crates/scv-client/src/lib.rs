//! SCV client library: where `$SCV_HOME` and the daemon socket live, and a
//! typed protocol connection over any byte stream.

pub mod connection;
pub mod home;

pub use connection::Connection;
pub use home::{default_socket_path, scv_home};
