//! Starting a `bash -c LINE` for a tool or a hook: inside the session's
//! sandbox through its tool host, or unconfined below a reaper of its own.
//! Here rather than in `reaper`, which knows nothing of sessions, or in
//! `sandbox`, which decides policies and starts no command.

use crate::reaper::Reaper;
use std::ffi::OsString;

/// What a `bash -c LINE` gets.
pub(crate) struct Bash<'a> {
    pub line: &'a str,
    pub cwd: &'a std::path::Path,
    /// Exactly this environment (the tool environment, plus what the
    /// caller adds).
    pub env: Vec<(OsString, OsString)>,
    pub stdin: std::os::fd::OwnedFd,
    pub stdout: std::os::fd::OwnedFd,
    pub stderr: std::os::fd::OwnedFd,
    /// Where the reaper writes its report.
    pub report: std::os::fd::OwnedFd,
}

/// Starts `bash -c LINE` below a reaper, in a process group of its own:
/// inside the session's sandbox through its tool host when `sandbox` is
/// given (the policy it ran under is returned), else unconfined below a
/// reaper of its own. The caller keeps the other ends of the descriptors.
pub(crate) async fn bash(
    sandbox: Option<(&crate::sandbox::SandboxView, crate::sandbox::Runs)>,
    bash: Bash<'_>,
) -> Result<(Reaper, Option<crate::sandbox::CallPolicy>), String> {
    let argv: Vec<OsString> = vec!["bash".into(), "-c".into(), bash.line.into()];
    if let Some((view, runs)) = sandbox {
        let request = crate::reaper::host::Request {
            argv,
            cwd: bash.cwd.as_os_str().to_os_string(),
            env: bash.env,
        };
        let fds = [bash.stdin, bash.stdout, bash.stderr, bash.report];
        let (policy, hosted) = view.spawn(runs, &request, fds).await?;
        return Ok((Reaper::Hosted(hosted), Some(policy)));
    }
    let report_fd = std::os::fd::AsRawFd::as_raw_fd(&bash.report);
    let mut command = crate::reaper::command(Some(report_fd));
    command
        .arg("--")
        .args(&argv)
        .current_dir(bash.cwd)
        .env_clear()
        .envs(bash.env.iter().map(|(name, value)| (name, value)))
        .process_group(0)
        .stdin(std::process::Stdio::from(bash.stdin))
        .stdout(std::process::Stdio::from(bash.stdout))
        .stderr(std::process::Stdio::from(bash.stderr));
    let child = command
        .spawn()
        .map_err(|err| format!("cannot start bash: {err}"))?;
    // Our copies of the write ends must go, or the reads never end.
    drop(command);
    drop(bash.report);
    Ok((Reaper::Child(child), None))
}
