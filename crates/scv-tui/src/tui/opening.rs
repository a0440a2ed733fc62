//! What a session brings with it as it opens in the view: its
//! [`SessionView`] (from `session.started` or `session.attached`), the
//! notes said as it opens, and its past conversation drawn again as it
//! was (a resumed or forked session). Pure: the App applies what these
//! return.

use super::state::SessionView;
use super::transcript::{ItemKind, ToolCard, ToolState};
use scv_protocol::{SessionAttached, SessionStarted, TranscriptItem, TurnOutcome};

/// The notice when plan mode begins (or a session starts in it).
pub(crate) const PLAN_ON: &str = "plan mode: the agent reads and runs read-only commands, changes nothing, and answers with a plan (Shift+Tab or /plan leaves)";

/// The first block of a session id, enough to tell sessions apart.
pub(crate) fn short_id(session_id: &str) -> &str {
    crate::sessions_cmd::short_id(session_id)
}

impl SessionView {
    /// The session `session.started` describes.
    pub(crate) fn started(session_id: String, started: &SessionStarted) -> SessionView {
        SessionView {
            session_id,
            cwd: started.cwd.clone(),
            model: started.model.clone(),
            context_max_tokens: started.context_max_tokens,
            sandbox: started.sandbox.clone(),
            sandbox_gaps: started.sandbox_gaps.clone(),
            sandbox_network: started.sandbox_network,
            provider: started.provider.clone(),
            mode: started.mode.unwrap_or_default(),
            commands: started.commands.clone().unwrap_or_default(),
            instructions: started.instructions.clone().unwrap_or_default(),
            not_saved: None,
        }
    }

    /// A live session attached to (`session.attached` says less).
    pub(crate) fn attached(session_id: String, attached: &SessionAttached) -> SessionView {
        SessionView {
            session_id,
            cwd: attached.cwd.clone().unwrap_or_default(),
            model: attached.model.clone().unwrap_or_default(),
            context_max_tokens: attached.context_max_tokens.unwrap_or_default(),
            sandbox: None,
            sandbox_gaps: Vec::new(),
            sandbox_network: None,
            provider: attached.provider.clone(),
            mode: scv_protocol::Mode::default(),
            commands: Vec::new(),
            instructions: Vec::new(),
            not_saved: None,
        }
    }
}

impl SessionView {
    /// `session.configured`: the session's model now; the note that says
    /// so (when it is news: see the caller).
    pub(crate) fn configured(&mut self, configured: &scv_client::session::Configured) -> String {
        self.provider = Some(configured.provider.clone());
        self.model = configured.model.clone();
        self.context_max_tokens = configured.context_max_tokens;
        model_note(configured)
    }

    /// `session.warning`: the status line's "not saved" follows the
    /// journal's warnings (others leave it as it is).
    pub(crate) fn warned(&mut self, warning: &scv_protocol::SessionWarning) {
        use scv_protocol::SessionWarningCode;
        match warning.code {
            SessionWarningCode::JournalFailed => {
                self.not_saved = Some(super::state::not_saved_status(&warning.message))
            }
            SessionWarningCode::JournalRecovered => self.not_saved = None,
            SessionWarningCode::Other => {}
        }
    }
}

/// "now using PROVIDER/MODEL (context N tokens); the history is kept".
pub(crate) fn model_note(configured: &scv_client::session::Configured) -> String {
    format!(
        "now using {}/{} (context {} tokens); the history is kept",
        configured.provider,
        configured.model,
        super::state::short(configured.context_max_tokens)
    )
}

/// What the view knows of where it runs, for the opening notes.
pub(crate) struct Here<'a> {
    /// The key variable the first-run note is about (not said twice).
    pub first_run_key: Option<&'a str>,
    /// When the local daemon started (`None`: a remote one).
    pub daemon_started: Option<&'a str>,
}

/// The notes said as a session opens, before anything of its own:
/// config.toml's error (the server runs on the last good one), unknown
/// keys, what the workspace's trust skipped, the sandbox's warnings, the
/// command files skipped, and plan mode.
pub(crate) fn config_notes(started: &SessionStarted, here: &Here<'_>) -> Vec<String> {
    let mut notes = Vec::new();
    for warning in &started.config_warnings {
        if here
            .first_run_key
            .is_some_and(|key| warning.contains(&format!("{key} is not set")))
        {
            continue; // the first-run note says it
        }
        // Local: a key this shell has and the daemon lacks.
        let in_shell = here
            .daemon_started
            .and_then(|started| crate::first_run::key_in_shell_only(warning, Some(started)));
        notes.push(format!(
            "config: {}",
            in_shell.as_deref().unwrap_or(warning)
        ));
    }
    for warning in &started.sandbox_warnings {
        notes.push(format!("sandbox: {warning}"));
    }
    // Command and skill files the server could not use, and why.
    for skipped in &started.command_diagnostics {
        notes.push(format!("skipped: {skipped}"));
    }
    if started.mode == Some(scv_protocol::Mode::Plan) {
        notes.push(PLAN_ON.into());
    }
    notes
}

/// The notes that say which session this is: resumed, forked.
pub(crate) fn origin_notes(session_id: &str, started: &SessionStarted) -> Vec<String> {
    let mut notes = Vec::new();
    if started.resumed {
        notes.push(format!("resumed session {}", short_id(session_id)));
    }
    if let Some(from) = &started.forked_from {
        notes.push(format!(
            "forked: you are in {}; {} is kept",
            short_id(session_id),
            short_id(&from.session_id)
        ));
    }
    notes
}

/// One past item as the view takes it.
pub(crate) enum Past {
    /// A user's prompt: its turn begins here (and the prompt goes back in
    /// the input history).
    Prompt {
        turn_id: String,
        text: String,
    },
    Item(ItemKind),
}

/// A resumed or forked session's past conversation, as the view draws
/// it: each item as it was.
pub(crate) fn past(items: Vec<TranscriptItem>) -> Vec<Past> {
    items.into_iter().filter_map(past_item).collect()
}

fn past_item(item: TranscriptItem) -> Option<Past> {
    let notice = |text: &str| Some(Past::Item(ItemKind::Notice(text.into())));
    match item {
        TranscriptItem::User { text, turn_id } => Some(Past::Prompt { turn_id, text }),
        TranscriptItem::Assistant { text, .. } => Some(Past::Item(ItemKind::Assistant {
            text,
            streaming: false,
        })),
        TranscriptItem::Tool {
            call_id,
            name,
            arguments,
            output,
            success,
            truncated,
            ..
        } => {
            let arguments =
                serde_json::from_str(&arguments).unwrap_or(serde_json::Value::String(arguments));
            // The file has changed since: the change alone.
            let diff = super::edit_diff::of_call(None, &name, &arguments);
            Some(Past::Item(ItemKind::Tool(ToolCard {
                call_id,
                name,
                arguments,
                diff,
                state: if success {
                    ToolState::Done
                } else {
                    ToolState::Failed
                },
                output,
                truncated,
                approved_by: None,
                subagents: Vec::new(),
            })))
        }
        TranscriptItem::TurnEnded {
            outcome, message, ..
        } => match outcome {
            TurnOutcome::Completed => None,
            TurnOutcome::Cancelled => notice("turn cancelled"),
            TurnOutcome::Failed => Some(Past::Item(ItemKind::Error {
                code: "turn_failed".into(),
                message: message.unwrap_or_default(),
            })),
            TurnOutcome::Interrupted => {
                notice("interrupted: SCV stopped while this turn ran; it was not run again")
            }
        },
    }
}
