//! Reading a process's figures from `/proc`, for tests and benchmarks.

/// A numeric field of `/proc/<pid>/status` (e.g. `VmRSS:` in KiB); 0 when
/// absent.
pub fn status_field(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Resident memory in MiB: the whole, what the process allocated
/// (anonymous) and the pages of its files (its binary, its libraries).
#[derive(Debug, Clone, Copy)]
pub struct Resident {
    pub total: f64,
    pub anonymous: f64,
    pub file: f64,
}

/// The process's [`Resident`] memory, from one read of its status.
pub fn resident(pid: u32) -> Resident {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mib = |field: &str| {
        status
            .lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0) as f64
            / 1024.0
    };
    Resident {
        total: mib("VmRSS:"),
        anonymous: mib("RssAnon:"),
        file: mib("RssFile:"),
    }
}

/// Fields of `/proc/<pid>/stat` after the command name.
fn stat_fields(pid: u32) -> Vec<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    rest.split_whitespace().map(str::to_string).collect()
}

/// User + system CPU seconds so far (Linux counts in 1/100 s).
pub fn cpu_seconds(pid: u32) -> f64 {
    let fields = stat_fields(pid);
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// Voluntary and involuntary context switches of each thread, by thread id.
pub fn context_switches(pid: u32) -> Switches {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Switches::default();
    };
    let by_thread = tasks
        .flatten()
        .map(|task| {
            let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
            let switches = status
                .lines()
                .filter(|l| {
                    l.starts_with("voluntary_ctxt_switches:")
                        || l.starts_with("nonvoluntary_ctxt_switches:")
                })
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>();
            (task.file_name().to_string_lossy().to_string(), switches)
        })
        .collect();
    Switches { by_thread }
}

/// A sample of [`context_switches`].
#[derive(Debug, Default)]
pub struct Switches {
    by_thread: std::collections::HashMap<String, u64>,
}

impl std::ops::Sub<&Switches> for &Switches {
    type Output = u64;

    /// Switches between two samples, counted per thread: a thread that
    /// exited in between takes its count with it (it would otherwise make
    /// the total go backwards); one that started counts from zero.
    fn sub(self, earlier: &Switches) -> u64 {
        self.by_thread
            .iter()
            .map(|(tid, n)| n.saturating_sub(earlier.by_thread.get(tid).copied().unwrap_or(0)))
            .sum()
    }
}

/// True while the process exists and is not a zombie.
pub fn is_running(pid: i32) -> bool {
    match stat_fields(pid as u32).first() {
        Some(state) => state != "Z",
        None => false,
    }
}
