//! A session's workspace trust as the server applies it: the repository
//! configuration files read once, beneath the workspace; the decision
//! (`scv_client::trust`, which keeps the record); what each file would
//! enable, in words; and what the user is told of what was skipped.

use scv_client::trust::{Decision, FileTrust, RepoFile, MAX_FILE_BYTES, REPOSITORY_FILES};
use scv_protocol::{TrustFile, WorkspaceTrust};
use std::path::{Path, PathBuf};

/// Reads the workspace's repository configuration files: each opened
/// beneath the workspace (a link leading outside is refused at the open),
/// a regular file of at most `MAX_FILE_BYTES`, read from that descriptor.
/// A file that cannot be read so is left out (and said).
pub(crate) fn read(workspace: &Path) -> Vec<RepoFile> {
    let Ok(ws) = crate::tools::beneath::Workspace::open(workspace) else {
        return Vec::new();
    };
    let mut files = Vec::new();
    for rel in REPOSITORY_FILES {
        let Ok(path) = ws.relative(rel) else {
            continue;
        };
        match ws.open_read(&path) {
            Ok((file, size)) if size <= MAX_FILE_BYTES => {
                use std::io::Read;
                use std::os::unix::fs::MetadataExt;
                let changed = file
                    .metadata()
                    .ok()
                    .and_then(|meta| u64::try_from(meta.ctime()).ok());
                let mut bytes = Vec::with_capacity(size as usize);
                if file.take(MAX_FILE_BYTES).read_to_end(&mut bytes).is_ok() {
                    files.push(RepoFile {
                        rel: rel.to_string(),
                        bytes,
                        changed,
                    });
                }
            }
            Ok((_, size)) => tracing::warn!(
                "{}: {size} bytes, over the {MAX_FILE_BYTES}-byte limit; not read",
                workspace.join(rel).display()
            ),
            Err(_) => {}
        }
    }
    files
}

/// Decides the trust of `workspace`'s repository configuration.
pub(crate) fn decide(scv_home: &Path, trusted: &[PathBuf], workspace: &Path) -> Decision {
    scv_client::trust::decide(scv_home, trusted, workspace, read(workspace))
}

/// The decision as `session.started.trust` shows it; `None` when the
/// workspace carries no repository configuration.
pub(crate) fn info(decision: &Decision) -> Option<WorkspaceTrust> {
    if decision.files.is_empty() {
        return None;
    }
    Some(WorkspaceTrust {
        workspace: decision.workspace.display().to_string(),
        trusted: decision.trusted,
        files: decision
            .files
            .iter()
            .map(|(file, trust)| TrustFile {
                path: file.rel.clone(),
                state: trust.as_str().to_string(),
                enables: scv_client::trust::enables(file),
            })
            .collect(),
    })
}

/// What the user is told of the files skipped (`config_warnings`).
pub(crate) fn warnings(decision: &Decision) -> Vec<String> {
    let ws = decision.workspace.display();
    decision
        .skipped()
        .map(|(file, trust)| {
            let what = scv_client::trust::enables(file).join("; ");
            let what = if what.is_empty() {
                String::new()
            } else {
                format!(" ({what})")
            };
            match trust {
                FileTrust::Changed => format!(
                    "{} changed since you trusted {ws}, so SCV does not use it{what}; if you made the change, trust it again: `scv trust {ws}`",
                    file.rel
                ),
                _ => format!(
                    "{ws} is not a trusted workspace, so SCV does not use its {}{what}; if you trust this repository: `scv trust {ws}`",
                    file.rel
                ),
            }
        })
        .collect()
}
