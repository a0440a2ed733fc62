//! Where a front end finds the daemon, and one connection to it over any
//! byte stream: the local socket (started when absent, as `scv` does) or
//! another machine's daemon through `ssh HOST scv bridge` — the front ends
//! only see a [`DaemonConnection`].

use crate::Connection;
use anyhow::{Context, Result};
use std::path::PathBuf;
use tokio::io::{AsyncRead, AsyncWrite};

pub type BoxRead = Box<dyn AsyncRead + Unpin + Send>;
pub type BoxWrite = Box<dyn AsyncWrite + Unpin + Send>;
/// A protocol connection to a daemon, whatever carries it.
pub type DaemonConnection = Connection<BoxRead, BoxWrite>;

/// Where the daemon is.
#[derive(Debug, Clone)]
pub enum Endpoint {
    /// This machine's daemon on `socket`; `home` is its `$SCV_HOME` (to
    /// start it).
    Local { home: PathBuf, socket: PathBuf },
    /// The daemon on `host`, through `ssh HOST COMMAND`: `ssh` is the
    /// program and its options, `command` the remote shell's command line
    /// (`scv bridge`, which starts that daemon when absent).
    Remote {
        host: String,
        ssh: Vec<String>,
        command: String,
    },
}

impl Endpoint {
    /// A connection to the daemon; with `start`, the daemon is launched
    /// when absent. A remote one is always started by its bridge: the
    /// bridge's command line has no way to say otherwise.
    pub async fn connect(&self, start: bool) -> Result<DaemonConnection> {
        match self {
            Endpoint::Local { home, socket } => {
                let stream = if start {
                    crate::ensure_daemon(home, socket).await?
                } else {
                    tokio::net::UnixStream::connect(socket)
                        .await
                        .with_context(|| {
                            format!("cannot reach the SCV daemon at {}", socket.display())
                        })?
                };
                let (reader, writer) = stream.into_split();
                Ok(Connection::new(Box::new(reader), Box::new(writer)))
            }
            Endpoint::Remote { host, ssh, command } => {
                let (reader, writer) = crate::remote::connect(host, ssh, command)?;
                Ok(Connection::new(Box::new(reader), Box::new(writer)))
            }
        }
    }

    /// The daemon's place, for messages.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Local { socket, .. } => socket.display().to_string(),
            Endpoint::Remote { host, .. } => format!("{host} over ssh"),
        }
    }
}
