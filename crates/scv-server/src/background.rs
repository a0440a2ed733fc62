//! A session's background processes (the table; `tools::background`
//! starts them): `bash {background: true}` starts one
//! and returns at once with its `process_id`; `bash_output` reads what is
//! new in its output, `bash_kill` ends it.
//!
//! Each runs exactly as a `bash` call does — below a reaper (`reaper`), in
//! the session's sandbox through its tool host unless `unsandboxed` — but
//! the call does not wait for it: a task of the session reads its output
//! (stdout and stderr through one pipe, their order kept) into a ring of
//! [`RING_BYTES`], counting what the ring dropped so `bash_output` can say
//! so. Nothing of it outlives its session:
//!
//! - `bash_kill`, and the session's end (its [`Background`] dropped), tell
//!   the reaper to stop; it SIGKILLs everything below it — a child
//!   subreaper, so a double-forked `setsid` daemon is below it too — and
//!   waits for all of it before it exits. The pipe closes only then, so
//!   "ended" means no process of it is left.
//! - The daemon's death, however it dies: the kernel signals each reaper
//!   (its parent-death signal: the server's death kills the tool host,
//!   whose death stops the reaper; unconfined, the reaper is the server's
//!   own child), which then does the same.
//! - With the sandbox, every process of the session is also in the
//!   session's pids cgroup (as root), which is emptied with SIGKILL when
//!   the session's sandbox goes, and removed with the server's subtree
//!   (or swept at the next start after a crash).
//!
//! Bounds: at most `max_background_processes` running per session (the
//! next is refused in words), and as many ended ones kept for their last
//! output (the oldest ended goes first); each ring holds at most
//! [`RING_BYTES`]; one `bash_output` returns at most the tool output cap
//! and waits at most [`MAX_WAIT`].

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What a background process's ring keeps of its output: the last MiB.
pub(crate) const RING_BYTES: usize = 1 << 20;
/// What of a process's command line is kept (to name it in lists).
pub(crate) const MAX_COMMAND_BYTES: usize = 4096;
/// The longest a `bash_output` waits for output (`wait_ms` is capped).
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(60);

/// The background processes of one session (shared with its subagents).
pub(crate) struct Background {
    max: usize,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next: u64,
    procs: Vec<Arc<Proc>>,
}

/// One background process.
pub(crate) struct Proc {
    pub id: String,
    pub command: String,
    out: Mutex<Output>,
    changed: tokio::sync::Notify,
    /// Cancelled to end it (`bash_kill`, the session's end).
    kill: CancellationToken,
    /// Cancelled once it and everything below it are gone.
    done: CancellationToken,
}

/// What `bash_output` reads.
struct Output {
    ring: Ring,
    /// Where the last read stopped, in bytes since the start.
    read: u64,
    /// How it ended, in words, once it has.
    status: Option<String>,
}

/// The last [`RING_BYTES`] of a stream, and how much went through it.
pub(crate) struct Ring {
    bytes: VecDeque<u8>,
    cap: usize,
    /// Bytes pushed since the start.
    written: u64,
}

/// What one read of a ring returned.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Read {
    pub bytes: Vec<u8>,
    /// Bytes written since the last read that the ring no longer held.
    pub lost: u64,
    /// Bytes left unread because of the budget.
    pub more: u64,
}

impl Ring {
    pub(crate) fn new(cap: usize) -> Ring {
        Ring {
            bytes: VecDeque::new(),
            cap: cap.max(1),
            written: 0,
        }
    }

    /// Appends `data`, dropping the oldest bytes beyond the cap first (so
    /// the buffer never grows past it).
    pub(crate) fn push(&mut self, data: &[u8]) {
        self.written += data.len() as u64;
        let data = &data[data.len().saturating_sub(self.cap)..];
        let excess = (self.bytes.len() + data.len()).saturating_sub(self.cap);
        self.bytes.drain(..excess);
        self.bytes.extend(data);
    }

    /// What was written after `*from` (at most `budget` bytes, cut at a
    /// character boundary when it is cut), moving `*from` past it.
    pub(crate) fn read(&self, from: &mut u64, budget: usize) -> Read {
        let oldest = self.written - self.bytes.len() as u64;
        let lost = oldest.saturating_sub(*from);
        let start = from.saturating_sub(oldest).min(self.bytes.len() as u64) as usize;
        let available = self.bytes.len() - start;
        let mut take = available.min(budget);
        if take < available {
            // Not in the middle of a UTF-8 sequence: back off over
            // continuation bytes (at most three; never to nothing).
            let whole = take;
            while take > 0 && whole - take < 3 && (self.bytes[start + take] & 0xC0) == 0x80 {
                take -= 1;
            }
            if take == 0 {
                take = whole;
            }
        }
        let bytes: Vec<u8> = self.bytes.range(start..start + take).copied().collect();
        *from = oldest + (start + take) as u64;
        Read {
            bytes,
            lost,
            more: (available - take) as u64,
        }
    }

    /// The bytes it holds now (its memory, give or take the allocator).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }
}

impl Background {
    /// A session's table: at most `max` running at once.
    pub(crate) fn new(max: u32) -> Arc<Background> {
        Arc::new(Background {
            max: max as usize,
            table: Mutex::new(Table::default()),
        })
    }

    /// The process `id`, or the model is told which there are.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<Proc>, String> {
        let table = crate::sync::lock(&self.table);
        if let Some(proc) = table.procs.iter().find(|p| p.id == id.trim()) {
            return Ok(proc.clone());
        }
        let known: Vec<&str> = table.procs.iter().map(|p| p.id.as_str()).collect();
        let known = if known.is_empty() {
            "there is none".to_string()
        } else {
            format!("there are: {}", known.join(", "))
        };
        Err(format!(
            "no background process `{id}` in this session ({known})"
        ))
    }

    /// Every process it keeps, oldest first.
    pub(crate) fn list(&self) -> Vec<Arc<Proc>> {
        crate::sync::lock(&self.table).procs.clone()
    }

    /// Takes a place for a new process, or says why there is none; the
    /// oldest ended processes beyond the bound are forgotten.
    pub(crate) fn admit(&self, command: &str) -> Result<Arc<Proc>, String> {
        let mut table = crate::sync::lock(&self.table);
        let running = table.procs.iter().filter(|p| !p.ended()).count();
        if self.max == 0 {
            return Err("refused: background processes are off here (max_background_processes = 0); run the command in the foreground".into());
        }
        if running >= self.max {
            let list: Vec<String> = table
                .procs
                .iter()
                .filter(|p| !p.ended())
                .map(|p| {
                    let line = p.command.lines().next().unwrap_or("");
                    let end = crate::text::floor_boundary(line, 80);
                    let more = if end < p.command.len() { "…" } else { "" };
                    format!("{} ({}{more})", p.id, &line[..end])
                })
                .collect();
            return Err(format!(
                "refused: this session already has {running} background processes running, the most max_background_processes ({}) allows{}. Stop one with bash_kill first, or run the command in the foreground",
                self.max,
                if list.is_empty() {
                    String::new()
                } else {
                    format!(": {}", list.join(", "))
                }
            ));
        }
        let ended = table.procs.len() - running;
        let mut forget = (ended + 1).saturating_sub(self.max.max(1));
        table.procs.retain(|p| {
            if forget > 0 && p.ended() {
                forget -= 1;
                false
            } else {
                true
            }
        });
        table.next += 1;
        let proc = Arc::new(Proc {
            id: format!("bg{}", table.next),
            command: command[..crate::text::floor_boundary(command, MAX_COMMAND_BYTES)].to_string(),
            out: Mutex::new(Output {
                ring: Ring::new(RING_BYTES),
                read: 0,
                status: None,
            }),
            changed: tokio::sync::Notify::new(),
            kill: CancellationToken::new(),
            done: CancellationToken::new(),
        });
        table.procs.push(proc.clone());
        Ok(proc)
    }

    /// Forgets `proc` (it did not start).
    pub(crate) fn forget(&self, proc: &Arc<Proc>) {
        let mut table = crate::sync::lock(&self.table);
        table.procs.retain(|p| !Arc::ptr_eq(p, proc));
    }
}

impl Drop for Background {
    /// The session is over: every process of it is ended (the reaper of
    /// each kills everything below it).
    fn drop(&mut self) {
        let table = crate::sync::lock(&self.table);
        for proc in &table.procs {
            proc.kill.cancel();
        }
    }
}

impl Proc {
    pub(crate) fn ended(&self) -> bool {
        self.done.is_cancelled()
    }

    /// How it ended, once it has.
    pub(crate) fn status(&self) -> Option<String> {
        crate::sync::lock(&self.out).status.clone()
    }

    /// Output read from its pipe.
    pub(crate) fn push(&self, bytes: &[u8]) {
        crate::sync::lock(&self.out).ring.push(bytes);
        self.changed.notify_waiters();
    }

    /// What is new since the last read, waiting up to `wait` for
    /// something when there is nothing yet and it still runs.
    pub(crate) async fn read_new(
        &self,
        budget: usize,
        wait: Duration,
        cancel: &CancellationToken,
    ) -> (Read, Option<String>) {
        let deadline = tokio::time::Instant::now() + wait.min(MAX_WAIT);
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut out = crate::sync::lock(&self.out);
                let out = &mut *out;
                let pending = out.ring.written > out.read;
                if pending || out.status.is_some() || tokio::time::Instant::now() >= deadline {
                    let read = out.ring.read(&mut out.read, budget);
                    return (read, out.status.clone());
                }
            }
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep_until(deadline) => {}
                () = cancel.cancelled() => {}
            }
            if cancel.is_cancelled() {
                let mut out = crate::sync::lock(&self.out);
                let out = &mut *out;
                let read = out.ring.read(&mut out.read, budget);
                return (read, out.status.clone());
            }
        }
    }

    /// The end of its output (at most `max` bytes, from a character
    /// boundary), without moving where the model's next read starts.
    pub(crate) fn peek(&self, max: usize) -> String {
        let out = crate::sync::lock(&self.out);
        let ring = &out.ring;
        let mut from = ring.written - (ring.bytes.len().min(max)) as u64;
        // Not in the middle of a character: skip continuation bytes.
        let oldest = ring.written - ring.bytes.len() as u64;
        while from < ring.written && (ring.bytes[(from - oldest) as usize] & 0xC0) == 0x80 {
            from += 1;
        }
        let read = ring.read(&mut from, usize::MAX);
        String::from_utf8_lossy(&read.bytes).into_owned()
    }

    /// Told to end (`bash_kill`, the session's end).
    pub(crate) async fn kill_requested(&self) {
        self.kill.cancelled().await;
    }

    /// All of it is gone; `status` says how it ended.
    pub(crate) fn finished(&self, status: String) {
        crate::sync::lock(&self.out).status = Some(status);
        self.done.cancel();
        self.changed.notify_waiters();
    }

    /// Ends it and everything below it; waits until all of it is gone.
    pub(crate) async fn kill(&self) {
        self.kill.cancel();
        self.done.cancelled().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_the_last_bytes_and_counts_the_loss() {
        let mut ring = Ring::new(8);
        let mut from = 0;
        ring.push(b"0123");
        let read = ring.read(&mut from, 100);
        assert_eq!(
            (read.bytes.as_slice(), read.lost, read.more),
            (&b"0123"[..], 0, 0)
        );
        ring.push(b"456789abcdef");
        assert_eq!(ring.len(), 8);
        let read = ring.read(&mut from, 100);
        // 4..=7 went before they were read.
        assert_eq!(
            (read.bytes.as_slice(), read.lost),
            (&b"456789abcdef"[4..], 4)
        );
        assert_eq!(ring.read(&mut from, 100).bytes, b"");
        // More than the cap at once: only its tail is kept.
        ring.push(b"ABCDEFGHIJKL");
        let read = ring.read(&mut from, 3);
        assert_eq!(
            (read.bytes.as_slice(), read.lost, read.more),
            (&b"EFG"[..], 4, 5)
        );
        let read = ring.read(&mut from, 100);
        assert_eq!(
            (read.bytes.as_slice(), read.lost, read.more),
            (&b"HIJKL"[..], 0, 0)
        );
    }

    #[test]
    fn a_cut_read_never_splits_a_character() {
        let mut ring = Ring::new(64);
        ring.push("aé€".as_bytes());
        let mut from = 0;
        let first = ring.read(&mut from, 4);
        assert_eq!((first.bytes.as_slice(), first.more), ("aé".as_bytes(), 3));
        let second = ring.read(&mut from, 100);
        assert_eq!(second.bytes, "€".as_bytes());
    }
}
