//! `scv trust [DIR]`, `scv trust --list`, `scv trust --revoke DIR`: which
//! workspaces' repository configuration (hooks, MCP servers, permission
//! rules) may run or apply. They edit `trusted_workspaces` in
//! `$SCV_HOME/config.toml` (everything else in it kept as it was) and the
//! digests in `$SCV_HOME/trust.json` (`scv_client::trust`); a running
//! daemon uses them from the next session.

use anyhow::{anyhow, Result};
use scv_client::trust::{self, Revoked};
use std::path::Path;
use std::process::ExitCode;

/// `scv trust DIR`: trusts DIR with its repository configuration as it is
/// now, and says what that lets run.
pub fn trust(home: &Path, dir: &Path) -> Result<ExitCode> {
    let dir = dir
        .canonicalize()
        .map_err(|err| anyhow!("{}: {err}", dir.display()))?;
    if !dir.is_dir() {
        return Err(anyhow!("{} is not a directory", dir.display()));
    }
    let files = trust::read_files(&dir);
    let added = trust::trust(home, &dir, &files).map_err(|err| anyhow!(err))?;
    if added {
        println!(
            "trusted {} (added to {})",
            dir.display(),
            home.join("config.toml").display()
        );
    } else {
        println!("trusted {} as it is now", dir.display());
    }
    if files.is_empty() {
        println!("  it has no repository configuration now; what it adds later is asked about");
    }
    for file in &files {
        let enables = trust::enables(file);
        if enables.is_empty() {
            println!("  {}", file.rel);
        } else {
            println!("  {}: {}", file.rel, enables.join("; "));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `scv trust --list`: the trusted directories and the workspaces whose
/// files were recorded, with whether each file is as it was trusted.
pub fn list(home: &Path) -> Result<ExitCode> {
    let dirs = trust::trusted_dirs(home);
    if dirs.is_empty() {
        println!("no trusted workspaces (scv trust DIR adds one)");
        return Ok(ExitCode::SUCCESS);
    }
    let records = trust::records(home);
    for dir in &dirs {
        println!("{}", dir.display());
        for (workspace, record) in &records.workspaces {
            if !Path::new(workspace).starts_with(dir) {
                continue;
            }
            let now = trust::read_files(Path::new(workspace));
            let mut states = Vec::new();
            for file in &now {
                let state = match record.files.get(&file.rel) {
                    Some(digest) if *digest == file.digest() => "as trusted",
                    Some(_) => "changed since trusted",
                    None => "added since trusted",
                };
                states.push(format!("{} ({state})", file.rel));
            }
            let when = scv_client::time::utc(record.trusted_unix_seconds);
            if states.is_empty() {
                println!("  {workspace}  trusted {when}");
            } else {
                println!("  {workspace}  trusted {when}: {}", states.join(", "));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `scv trust --revoke DIR`.
pub fn revoke(home: &Path, dir: &Path) -> Result<ExitCode> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    match trust::revoke(home, &dir).map_err(|err| anyhow!(err))? {
        Revoked::Removed => {
            println!("{} is no longer trusted", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Revoked::CoveredBy(parent) => {
            eprintln!(
                "scv: {} is trusted because {} is; revoke that: scv trust --revoke {}",
                dir.display(),
                parent.display(),
                parent.display()
            );
            Ok(ExitCode::from(1))
        }
        Revoked::NotTrusted => {
            eprintln!("scv: {} is not trusted", dir.display());
            Ok(ExitCode::from(1))
        }
    }
}
