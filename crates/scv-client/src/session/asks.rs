//! Requests other than prompts, typed: each one this client sends is
//! remembered by its request id as an [`Asked`], and the event answering
//! it (or the `error` it caused) comes out as one typed update naming
//! what was asked. Front ends keep no request ids of their own.

use scv_protocol::{
    CheckpointInfo, ClientMessage, DaemonStatus, EventBody, FileChange, MissedCheckpoint, Mode,
    PermissionRule, ProcessState, StoredSession, WorkspaceTrust,
};
use std::collections::VecDeque;

/// Requests awaiting an answer; past it the oldest is forgotten (its
/// answer then comes as news, `asked: None`).
pub const MAX_PENDING: usize = 256;

/// What a request asked, as much as its answer needs to be understood.
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    /// `daemon.control` `status`.
    Status,
    /// Another `daemon.control` command.
    Control,
    Models,
    Sessions,
    Delete {
        session_id: String,
    },
    /// `session.close`.
    Close,
    Checkpoints,
    Diff {
        checkpoint_id: String,
    },
    Restore {
        checkpoint_id: String,
        files: bool,
        conversation: bool,
    },
    /// `session.configure`: which of the model, the mode and the budget
    /// it set.
    Configure {
        model: bool,
        mode: Option<Mode>,
        budget: bool,
    },
    Trust,
    Pause {
        paused: bool,
    },
    /// A user's edit, move or removal of a queued prompt.
    QueueEdit {
        queue_id: String,
    },
    Resolve {
        approval_id: String,
    },
    Cancel {
        turn_id: String,
    },
    Clear,
    /// A session opened on this connection (start, resume, fork).
    Open,
    /// The answer to an MCP server's question.
    Elicitation {
        elicitation_id: String,
    },
    /// `permissions.list`, `.keep` or `.remove`: the rule kept or
    /// removed (`None`: a listing).
    Permissions {
        kept: Option<String>,
        removed: Option<String>,
    },
    /// `process.list`.
    Processes,
    /// `process.kill` (`kill`) or `process.peek` of a background process.
    Process {
        process_id: String,
        kill: bool,
    },
    /// `session.detach` (capability `detach`).
    Detach,
    /// `session.attach`.
    Attach,
}

impl Asked {
    /// What `message` asks.
    pub fn of(message: &ClientMessage) -> Asked {
        match message {
            ClientMessage::DaemonControl(control) => match control.command {
                scv_protocol::DaemonCommand::Status => Asked::Status,
                _ => Asked::Control,
            },
            ClientMessage::ModelsList(_) => Asked::Models,
            ClientMessage::SessionList(_) => Asked::Sessions,
            ClientMessage::SessionDelete(delete) => Asked::Delete {
                session_id: delete.session_id.clone(),
            },
            ClientMessage::SessionClose(_) => Asked::Close,
            ClientMessage::CheckpointList(_) => Asked::Checkpoints,
            ClientMessage::CheckpointDiff(diff) => Asked::Diff {
                checkpoint_id: diff.checkpoint_id.clone(),
            },
            ClientMessage::CheckpointRestore(restore) => Asked::Restore {
                checkpoint_id: restore.checkpoint_id.clone(),
                files: restore.files,
                conversation: restore.conversation,
            },
            ClientMessage::SessionConfigure(configure) => Asked::Configure {
                model: configure.model.is_some() || configure.provider.is_some(),
                mode: configure.mode,
                budget: configure.max_session_cost_usd.is_some(),
            },
            ClientMessage::WorkspaceTrust(_) => Asked::Trust,
            ClientMessage::SessionPause(pause) => Asked::Pause {
                paused: pause.paused,
            },
            ClientMessage::QueueUpdate(edit) => Asked::QueueEdit {
                queue_id: edit.queue_id.clone(),
            },
            ClientMessage::QueueMove(edit) => Asked::QueueEdit {
                queue_id: edit.queue_id.clone(),
            },
            ClientMessage::QueueRemove(edit) => Asked::QueueEdit {
                queue_id: edit.queue_id.clone(),
            },
            ClientMessage::ApprovalResolve(resolve) => Asked::Resolve {
                approval_id: resolve.approval_id.clone(),
            },
            ClientMessage::TurnCancel(cancel) => Asked::Cancel {
                turn_id: cancel.turn_id.clone(),
            },
            ClientMessage::SessionClear(_) => Asked::Clear,
            ClientMessage::ElicitationResolve(resolve) => Asked::Elicitation {
                elicitation_id: resolve.elicitation_id.clone(),
            },
            ClientMessage::PermissionsList(_) => Asked::Permissions {
                kept: None,
                removed: None,
            },
            ClientMessage::PermissionsKeep(edit) => Asked::Permissions {
                kept: Some(edit.rule.clone()),
                removed: None,
            },
            ClientMessage::PermissionsRemove(edit) => Asked::Permissions {
                kept: None,
                removed: Some(edit.rule.clone()),
            },
            ClientMessage::ProcessList(_) => Asked::Processes,
            ClientMessage::ProcessKill(request) => Asked::Process {
                process_id: request.process_id.clone(),
                kill: true,
            },
            ClientMessage::ProcessPeek(request) => Asked::Process {
                process_id: request.process_id.clone(),
                kill: false,
            },
            ClientMessage::SessionDetach(_) => Asked::Detach,
            ClientMessage::SessionAttach(_) => Asked::Attach,
            ClientMessage::Initialize(_)
            | ClientMessage::SessionStart(_)
            | ClientMessage::SessionResume(_)
            | ClientMessage::SessionFork(_)
            | ClientMessage::TurnStart(_) => Asked::Open,
        }
    }
}

/// `session.configured`: the session's provider, model and mode now.
#[derive(Debug, Clone, PartialEq)]
pub struct Configured {
    pub provider: String,
    pub model: String,
    pub context_max_tokens: u64,
    pub max_session_cost_usd: Option<f64>,
    pub mode: Option<Mode>,
}

/// An answer, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Status(Box<DaemonStatus>),
    Models {
        provider: String,
        models: Vec<String>,
    },
    Sessions(Vec<StoredSession>),
    Deleted,
    /// `session.closed`: the session ended on this connection.
    Closed,
    Checkpoints {
        checkpoints: Vec<CheckpointInfo>,
        missed: Option<MissedCheckpoint>,
    },
    Diffed {
        checkpoint_id: String,
        files: Vec<FileChange>,
        diff: String,
        truncated: bool,
    },
    Restored {
        checkpoint_id: String,
        files_restored: bool,
        conversation_restored: bool,
        files: Vec<FileChange>,
    },
    Configured(Configured),
    Trusted(Box<WorkspaceTrust>),
    /// The rules of the settings files (`permissions.listed`).
    Permissions(Vec<PermissionRule>),
    /// A background process as it stands (`process.kill`, `process.peek`).
    Process(ProcessState),
    /// The session's background processes (`process.list`).
    Processes(Vec<ProcessState>),
}

impl Answer {
    /// The answer `body` is, when it is one.
    pub(super) fn of(body: &EventBody) -> Option<Answer> {
        Some(match body {
            EventBody::DaemonStatus { status } => Answer::Status(Box::new(status.clone())),
            EventBody::ModelsListed { provider, models } => Answer::Models {
                provider: provider.clone(),
                models: models.clone(),
            },
            EventBody::SessionListed { sessions } => Answer::Sessions(sessions.clone()),
            EventBody::SessionDeleted {} => Answer::Deleted,
            EventBody::CheckpointListed {
                checkpoints,
                missed,
            } => Answer::Checkpoints {
                checkpoints: checkpoints.clone(),
                missed: missed.clone(),
            },
            EventBody::CheckpointDiffed {
                checkpoint_id,
                files,
                diff,
                truncated,
            } => Answer::Diffed {
                checkpoint_id: checkpoint_id.clone(),
                files: files.clone(),
                diff: diff.clone(),
                truncated: *truncated,
            },
            EventBody::CheckpointRestored {
                checkpoint_id,
                files_restored,
                conversation_restored,
                files,
            } => Answer::Restored {
                checkpoint_id: checkpoint_id.clone(),
                files_restored: *files_restored,
                conversation_restored: *conversation_restored,
                files: files.clone(),
            },
            EventBody::SessionConfigured {
                provider,
                model,
                context_max_tokens,
                max_session_cost_usd,
                mode,
            } => Answer::Configured(Configured {
                provider: provider.clone(),
                model: model.clone(),
                context_max_tokens: *context_max_tokens,
                max_session_cost_usd: *max_session_cost_usd,
                mode: *mode,
            }),
            EventBody::WorkspaceTrusted(trust) => Answer::Trusted(Box::new(trust.clone())),
            EventBody::PermissionsListed(listed) => Answer::Permissions(listed.rules.clone()),
            EventBody::ProcessState(state) => Answer::Process(state.clone()),
            EventBody::ProcessListed { processes } => Answer::Processes(processes.clone()),
            _ => return None,
        })
    }
}

/// The requests waiting for their answer, oldest first.
#[derive(Debug, Default)]
pub(super) struct Pending {
    asked: VecDeque<(String, Asked)>,
}

impl Pending {
    pub(super) fn insert(&mut self, request_id: String, asked: Asked) {
        if self.asked.len() >= MAX_PENDING {
            self.asked.pop_front();
        }
        self.asked.push_back((request_id, asked));
    }

    /// What `request_id` asked, now answered.
    pub(super) fn take(&mut self, request_id: Option<&str>) -> Option<Asked> {
        let request_id = request_id?;
        let index = self.asked.iter().position(|(id, _)| id == request_id)?;
        self.asked.remove(index).map(|(_, asked)| asked)
    }

    pub(super) fn clear(&mut self) {
        self.asked.clear();
    }
}
