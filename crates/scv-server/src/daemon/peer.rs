//! Who is on the other end of a socket connection: a person's client, or a
//! process SCV runs as a tool (a `bash` command, an MCP server, anything
//! they started). The sandbox already keeps tool processes from opening a
//! Unix socket; this is the second, independent line: a connection from a
//! tool process may not do what only a person may — start a session with
//! tools, its own MCP servers or another provider URL, or manage the
//! daemon.
//!
//! Every tool process runs below a reaper (`scv-server --tool-process`,
//! this binary), which makes itself a child subreaper, so whatever a tool
//! starts — double forks and `setsid` included — keeps a reaper among its
//! ancestors for as long as it lives. The peer's pid comes from
//! `SO_PEERCRED` at connect time.

use crate::reaper::{parent_of, FLAG};

/// Longest ancestry walked (a cycle or a very deep tree ends the walk).
const MAX_DEPTH: usize = 256;

/// Whether process `pid` is a tool process: a reaper of any SCV server is
/// among its ancestors (or it is one). Fails closed: a peer whose ancestry
/// cannot be read (gone already, or unreadable) counts as one — a
/// person's client does not vanish between connecting and asking.
pub(crate) fn is_tool_process(pid: i32) -> bool {
    let mut current = pid;
    for _ in 0..MAX_DEPTH {
        if current <= 1 {
            return false;
        }
        if is_reaper(current) {
            return true;
        }
        match parent_of(current) {
            Some(parent) if parent != current => current = parent,
            Some(_) => return false,
            None => return true,
        }
    }
    true
}

/// `/proc/PID/cmdline` is `… --tool-process …` as its second argument.
fn is_reaper(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|cmdline| cmdline.split(|b| *b == 0).nth(1) == Some(FLAG.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_process_is_no_tool_process() {
        assert!(!is_tool_process(std::process::id() as i32));
        assert!(!is_tool_process(1));
        // A peer that is gone cannot be told: it counts as a tool process.
        assert!(is_tool_process(i32::MAX));
    }
}
