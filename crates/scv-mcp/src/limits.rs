//! Bounds on what a server can make SCV hold.

/// Tools kept per server; the rest are left out (logged, and said in the
/// server's status).
pub const MAX_TOOLS_PER_SERVER: usize = 100;
/// A tool description longer than this is cut.
pub const MAX_DESCRIPTION_BYTES: usize = 4 * 1024;
/// A tool whose input schema serializes to more than this is left out.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// One message from a server (a line on stdio, a body or event over
/// HTTP). A larger one fails the call and, on stdio, restarts the server.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// A line of a server's stderr kept for the log.
pub const MAX_STDERR_LINE_BYTES: usize = 4 * 1024;
/// Configured servers.
pub const MAX_SERVERS: usize = 32;
/// How long a turn's first request waits for servers still starting.
pub const FIRST_REQUEST_WAIT: std::time::Duration = std::time::Duration::from_secs(1);
/// Backoff after a failure: doubling from the first to the last.
pub const BACKOFF_FIRST: std::time::Duration = std::time::Duration::from_secs(2);
pub const BACKOFF_MAX: std::time::Duration = std::time::Duration::from_secs(60);
/// How long stopping every server (daemon or `--stdio` exit, a session's
/// end) waits at most: each server gets 1 s to close its connection and
/// its reaper 3 s to end everything below it, all at once.
pub const SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
