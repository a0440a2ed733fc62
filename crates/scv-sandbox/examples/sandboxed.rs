//! Runs a command in the sandbox of a workspace, to look at what it sees:
//! `cargo run -p scv-sandbox --example sandboxed -- [--read-only] DIR COMMAND...`
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let read_only = args.first().is_some_and(|a| a == "--read-only");
    if read_only {
        args.remove(0);
    }
    let workspace = PathBuf::from(args.remove(0)).canonicalize().unwrap();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let settings = scv_sandbox::Settings {
        mode: if read_only {
            scv_sandbox::Mode::ReadOnly
        } else {
            scv_sandbox::Mode::WorkspaceWrite
        },
        network: scv_sandbox::Network::On,
        protect_git: true,
        mount_namespace: std::env::var_os("NO_USERNS").is_none(),
        scv_home: home.clone().unwrap_or_default().join(".scv"),
        user_home: home,
        ..Default::default()
    };
    let mut policy = scv_sandbox::Policy::new(&settings, &workspace);
    policy.git = scv_sandbox::repositories(std::slice::from_ref(&workspace)).git;
    if let Some(dir) = std::env::var_os("SESSION_DIR") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        std::fs::create_dir_all(dir.join("shm")).unwrap();
        policy.session_dir = Some(dir);
    }
    std::env::set_current_dir(&workspace).unwrap();
    let mut prepared = scv_sandbox::Prepared::new(&policy).expect("prepared");
    let mut confinement = prepared.take_confinement().unwrap();
    let mut command = std::process::Command::new(&args[0]);
    command.args(&args[1..]).env("TMPDIR", prepared.tmpdir());
    unsafe { command.pre_exec(move || confinement.apply()) };
    let status = command.status().expect("spawn");
    std::process::exit(status.code().unwrap_or(1));
}
