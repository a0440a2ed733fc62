//! Background processes (extension, capability `processes`): a client
//! stops one of a session's `bash {background: true}` processes, or looks
//! at the end of its output without taking it from the model (the model's
//! `bash_output` still returns everything new to it), or lists them (a
//! client that attached late learns what runs).
//! docs/PROTOCOL-EXTENSIONS.md describes each.

use serde::{Deserialize, Serialize};

/// Most output a `process.state` carries (bytes): the end of the ring.
pub const MAX_PROCESS_PEEK_BYTES: usize = 64 * 1024;

/// `process.list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessList {
    pub session_id: String,
}

/// `process.kill` and `process.peek`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRequest {
    pub session_id: String,
    pub process_id: String,
}

/// `process.state`: one background process as it stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessState {
    pub process_id: String,
    /// Its command line.
    pub command: String,
    pub running: bool,
    /// How it ended, in words, once it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// `process.peek`: the end of its output (at most
    /// [`MAX_PROCESS_PEEK_BYTES`]), read or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}
