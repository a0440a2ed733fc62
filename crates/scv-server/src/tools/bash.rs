//! bash: one command in the workspace, in its own process group, stdin
//! closed, stdout and stderr through one pipe (so their order is kept).
//!
//! The group is killed when the call ends for any reason (exit, timeout,
//! cancel, or the future being dropped), so no process outlives its call,
//! not even a backgrounded grandchild.

use super::{parse, ToolContext, ToolOutput};
use serde::Deserialize;
use serde_json::Value;
use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncReadExt;

#[derive(Deserialize)]
struct BashArgs {
    command: String,
    timeout_ms: Option<u64>,
}

/// Kills the process group on drop.
struct GroupKill(i32);

impl Drop for GroupKill {
    fn drop(&mut self) {
        // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH.
        unsafe {
            libc::killpg(self.0, libc::SIGKILL);
        }
    }
}

pub async fn run(arguments: &Value, ctx: &ToolContext<'_>) -> Result<ToolOutput, String> {
    let args: BashArgs = parse(arguments)?;
    if args.command.trim().is_empty() {
        return Err("command is empty".into());
    }
    let timeout = args
        .timeout_ms
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
        .unwrap_or(ctx.bash_timeout);

    let (reader, writer) = std::io::pipe().map_err(|err| format!("cannot create pipe: {err}"))?;
    let writer_err = writer
        .try_clone()
        .map_err(|err| format!("cannot create pipe: {err}"))?;
    let mut child = tokio::process::Command::new("bash")
        .arg("-c")
        .arg(&args.command)
        .current_dir(ctx.workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::from(OwnedFd::from(writer)))
        .stderr(Stdio::from(OwnedFd::from(writer_err)))
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| format!("cannot start bash: {err}"))?;
    let _group = child.id().map(|pid| GroupKill(pid as i32));
    let mut pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))
        .map_err(|err| format!("cannot read command output: {err}"))?;
    let mut capture = Capture::new(ctx.max_output_bytes);

    let finished = tokio::time::timeout(timeout, async {
        let mut buf = vec![0u8; 16 * 1024];
        let status = loop {
            tokio::select! {
                read = pipe.read(&mut buf) => match read {
                    Ok(0) | Err(_) => break child.wait().await,
                    Ok(n) => capture.push(&buf[..n]),
                },
                status = child.wait() => break status,
            }
        };
        // bash is gone; end stragglers in its group so the pipe closes.
        if let Some(group) = &_group {
            unsafe { libc::killpg(group.0, libc::SIGKILL) };
        }
        while let Ok(n) = pipe.read(&mut buf).await {
            if n == 0 {
                break;
            }
            capture.push(&buf[..n]);
        }
        status
    })
    .await;

    let (text, truncated) = capture.finish();
    let mut out = text;
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    let success = match finished {
        Err(_) => {
            out.push_str(&format!(
                "[command timed out after {} ms and was killed]",
                timeout.as_millis()
            ));
            false
        }
        Ok(Err(err)) => {
            out.push_str(&format!("[cannot wait for command: {err}]"));
            false
        }
        Ok(Ok(status)) => match status.code() {
            Some(code) => {
                out.push_str(&format!("[exit code: {code}]"));
                code == 0
            }
            None => {
                out.push_str("[killed by a signal]");
                false
            }
        },
    };
    Ok(ToolOutput {
        success,
        output: out,
        truncated,
    })
}

/// Keeps the first and last halves of the budget, counting what is skipped,
/// so a chatty command never grows memory.
struct Capture {
    half: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    skipped: usize,
}

impl Capture {
    fn new(max: usize) -> Self {
        Capture {
            half: (max / 2).max(1),
            head: Vec::new(),
            tail: VecDeque::new(),
            skipped: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        let room = self.half - self.head.len();
        if room > 0 {
            let take = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(self.half);
        if excess > 0 {
            self.tail.drain(..excess);
            self.skipped += excess;
        }
    }

    fn finish(self) -> (String, bool) {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.skipped > 0 {
            text.push_str(&format!("\n[... {} bytes omitted ...]\n", self.skipped));
        }
        let tail: Vec<u8> = self.tail.into();
        text.push_str(&String::from_utf8_lossy(&tail));
        (text, self.skipped > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_head_and_tail() {
        let mut capture = Capture::new(10);
        for chunk in [b"01234".as_slice(), b"56789", b"abcdef"] {
            capture.push(chunk);
        }
        let (text, truncated) = capture.finish();
        assert!(truncated);
        assert_eq!(text, "01234\n[... 6 bytes omitted ...]\nbcdef");
    }
}
