//! Frame and provider limits named by the protocol document. Frame limits
//! count encoded JSON bytes and exclude the newline delimiter.

const KIB: usize = 1024;
const MIB: usize = 1024 * 1024;

/// Largest client frame the server reads.
pub const MAX_CLIENT_FRAME_BYTES: usize = MIB;
/// Largest prompt accepted by `turn.start` and `queue.update`.
pub const MAX_PROMPT_BYTES: usize = 256 * KIB;
/// Largest encoded server frame (room for a capped 1 MiB assistant message
/// with worst-case JSON escaping plus the envelope).
pub const MAX_SERVER_FRAME_BYTES: usize = 8 * MIB;

/// Writer queue bound in frames, per connection.
pub const WRITER_QUEUE_FRAMES: usize = 256;
/// Writer queue bound in bytes: at least 16 MiB, otherwise twice the frame cap.
pub const WRITER_QUEUE_BYTES: usize = max(16 * MIB, 2 * MAX_SERVER_FRAME_BYTES);

/// Provider reader caps.
pub const MAX_SSE_EVENT_BYTES: usize = MIB;
pub const MAX_RESPONSE_BYTES: usize = 4 * MIB;
pub const MAX_ASSISTANT_TEXT_BYTES: usize = MIB;
pub const MAX_TOOL_ARGUMENT_BYTES: usize = 256 * KIB;
pub const MAX_TOOL_CALLS_PER_RESPONSE: usize = 32;

/// Client-side bounds advertised in `session.started`.
pub const MAX_TRANSCRIPT_BYTES: usize = 8 * MIB;
pub const MAX_TRANSCRIPT_ITEMS: usize = 10_000;
pub const MAX_PROMPT_HISTORY_BYTES: usize = MIB;
pub const MAX_PROMPT_HISTORY_ITEMS: usize = 200;

/// Bounds the SCV server sets on what one client can make it hold. The
/// protocol document names none of these; docs/RELIABILITY.md lists them.
/// Prompts queued per session.
pub const MAX_QUEUED_PROMPTS: usize = 64;
/// Encoded bytes of a session's queued entries, so a `queue.snapshot`
/// always fits in one server frame.
pub const MAX_QUEUED_BYTES: usize = 4 * MIB;
/// Sessions one connection may hold.
pub const MAX_SESSIONS_PER_CONNECTION: usize = 1024;

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}
