//! `scv undo [--force]`: what `/undo` does, for the last session of this
//! directory — resumes it, restores its newest checkpoint (files and
//! conversation) and prints what changed. A path someone else changed
//! since is refused with the list, unless `--force`.

use crate::session::{self, Choice, Which};
use anyhow::{bail, Result};
use scv_client::Endpoint;
use scv_protocol::{
    Capabilities, CheckpointList, CheckpointRestore, ClientMessage, EventBody, FileChangeKind,
};
use std::path::Path;
use std::process::ExitCode;

/// The answer to request `rid`, skipping the session's other events.
async fn answer(conn: &mut session::DaemonConnection, rid: &str) -> Result<EventBody> {
    loop {
        let Some(event) = conn.next_event().await? else {
            bail!("the daemon closed the connection");
        };
        if event.request_id.as_deref() == Some(rid) {
            return Ok(event.body);
        }
    }
}

pub async fn run(endpoint: &Endpoint, cwd: &Path, force: bool) -> Result<ExitCode> {
    let capabilities = Capabilities {
        checkpoints: true,
        ..Default::default()
    };
    let session::Opened {
        mut conn,
        session_id,
        ..
    } = session::open(
        endpoint,
        true,
        "scv-undo",
        Some(capabilities),
        cwd,
        &Choice::default(),
        &Which::Last,
    )
    .await?;
    let rid = conn
        .send(ClientMessage::CheckpointList(CheckpointList {
            session_id: session_id.clone(),
        }))
        .await?;
    let checkpoints = match answer(&mut conn, &rid).await? {
        EventBody::CheckpointListed {
            missed: Some(missed),
            ..
        } => {
            eprintln!(
                "cannot undo: the last turn that changed files ran without an undo point ({}); its changes stay as they are",
                scv_client::text::visible(&missed.message)
            );
            return Ok(ExitCode::FAILURE);
        }
        EventBody::CheckpointListed { checkpoints, .. } => checkpoints,
        EventBody::Error(error) => bail!(
            "{}: {}",
            scv_client::text::error_words(error.code),
            error.message
        ),
        other => bail!("unexpected answer {}", other.type_name()),
    };
    let Some(last) = checkpoints.last() else {
        eprintln!("nothing to undo: no turn of the last session here changed files");
        return Ok(ExitCode::SUCCESS);
    };
    let rid = conn
        .send(ClientMessage::CheckpointRestore(CheckpointRestore {
            session_id,
            checkpoint_id: last.checkpoint_id.clone(),
            files: true,
            conversation: true,
            force,
        }))
        .await?;
    match answer(&mut conn, &rid).await? {
        EventBody::CheckpointRestored { files, .. } => {
            let prompt = last.prompt.lines().next().unwrap_or_default();
            println!("undone: the turn “{}”", scv_client::text::visible(prompt));
            for file in &files {
                let what = match file.change {
                    FileChangeKind::Modified => "put back",
                    FileChangeKind::Added => "recreated",
                    FileChangeKind::Deleted => "removed",
                };
                println!("  {what}: {}", scv_client::text::visible(&file.path));
            }
            if files.is_empty() {
                println!("  no file needed changing");
            }
            Ok(ExitCode::SUCCESS)
        }
        EventBody::Error(error) => match error.conflicts {
            Some(conflicts) => {
                eprintln!("not undone: changed since by someone other than the agent (`scv undo --force` restores anyway):");
                for path in conflicts {
                    eprintln!("  {}", scv_client::text::visible(&path));
                }
                Ok(ExitCode::FAILURE)
            }
            None => bail!(
                "{}: {}",
                scv_client::text::error_words(error.code),
                error.message
            ),
        },
        other => bail!("unexpected answer {}", other.type_name()),
    }
}
