//! Opening a session on the daemon: connect (starting it when asked),
//! `initialize` with a version check, then a new session in a workspace
//! or a stored one resumed or forked. Every failure is one readable line.

use anyhow::{bail, Result};
use scv_client::{Endpoint, Open};
use scv_protocol::{Capabilities, Event, PeerInfo, SessionFork, SessionResume, SessionStart};
use std::path::Path;

pub use scv_client::DaemonConnection;

pub struct Opened {
    pub conn: DaemonConnection,
    /// `initialized`, `session.started`, `queue.snapshot` (and a stored
    /// session's `session.transcript`).
    pub events: Vec<Event>,
    pub session_id: String,
    /// What the user should know of how it was opened (`--continue` of a
    /// session open elsewhere continues in a fork of it).
    pub note: Option<String>,
}

/// The provider and model a session asks for (`--provider`, `--model`);
/// `None` takes the daemon's configured ones.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    pub provider: Option<String>,
    pub model: Option<String>,
    /// Start in this mode (`--plan`).
    pub mode: Option<scv_protocol::Mode>,
}

/// Which session to open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Which {
    /// A new one.
    #[default]
    New,
    /// This stored one, resumed.
    Resume(String),
    /// The most recently updated stored session of the workspace that is
    /// not open elsewhere (`--continue`).
    Last,
    /// The most recently updated stored session anywhere that is not open
    /// elsewhere (`scv resume --last`).
    Latest,
    /// This live detached session, attached (capability `detach`).
    Attach(String),
    /// A new one holding this stored one's history (up to `turn_id`).
    Fork {
        session_id: String,
        turn_id: Option<String>,
    },
}

/// Connects to `endpoint` (with `start`, launching the daemon when
/// absent), initializes as `client` asking for `capabilities` (and
/// `sessions`), and opens the session `which` says in `cwd`.
pub async fn open(
    endpoint: &Endpoint,
    start: bool,
    client: &str,
    capabilities: Option<Capabilities>,
    cwd: &Path,
    choice: &Choice,
    which: &Which,
) -> Result<Opened> {
    let capabilities = Capabilities {
        sessions: true,
        ..capabilities.unwrap_or_default()
    };
    let mut conn = endpoint.connect(start).await?;
    let initialized = conn
        .initialize(
            Some(PeerInfo {
                name: client.into(),
                version: env!("CARGO_PKG_VERSION").into(),
            }),
            Some(capabilities),
        )
        .await?;
    let resume = |session_id: String| {
        Open::Resume(SessionResume {
            session_id,
            provider: choice.provider.clone(),
            model: choice.model.clone(),
            additional_directories: Vec::new(),
        })
    };
    if let Which::Attach(id) = which {
        let mut events = conn.attach_session(id).await?;
        let session_id = events
            .first()
            .and_then(|e| e.session_id.clone())
            .unwrap_or_else(|| id.clone());
        events.insert(0, initialized);
        return Ok(Opened {
            conn,
            events,
            session_id,
            note: None,
        });
    }
    let mut note = None;
    let open = match which {
        Which::Attach(_) | Which::New => new_session(cwd, choice),
        Which::Resume(id) => resume(id.clone()),
        Which::Fork {
            session_id,
            turn_id,
        } => Open::Fork(SessionFork {
            session_id: session_id.clone(),
            turn_id: turn_id.clone(),
        }),
        Which::Last | Which::Latest => {
            let here = (*which == Which::Last).then(|| cwd.display().to_string());
            let sessions = conn.list_sessions(here.clone(), None).await?;
            match sessions
                .into_iter()
                .find(|s| s.damaged.is_none() && s.turns > 0 && s.parent.is_none())
            {
                // Open elsewhere (another terminal, a background run): it
                // cannot be resumed here, so this continues in a fork of
                // it, and says so.
                Some(last) if last.open => {
                    let short = crate::sessions_cmd::short_id(&last.session_id).to_string();
                    note = Some(format!(
                        "the last session here ({short}) is open elsewhere, so this is a fork of it; to follow that one instead: `scv attach {short}`"
                    ));
                    Open::Fork(SessionFork {
                        session_id: last.session_id,
                        turn_id: None,
                    })
                }
                Some(last) => resume(last.session_id),
                None if here.is_some() => bail!(
                    "no earlier session in {} to continue (`scv resume` lists every directory's)",
                    cwd.display()
                ),
                None => bail!("no stored session to resume"),
            }
        }
    };
    let scv_client::Opened {
        mut events,
        session_id,
    } = conn.open_more(open).await?;
    events.insert(0, initialized);
    Ok(Opened {
        conn,
        events,
        session_id,
        note,
    })
}

/// A new session in `cwd` as `choice` says.
/// A new session in `cwd` as `choice` says.
pub fn new_session(cwd: &Path, choice: &Choice) -> Open {
    Open::Start(SessionStart {
        cwd: cwd.display().to_string(),
        provider: choice.provider.clone(),
        model: choice.model.clone(),
        mode: choice.mode,
        ..Default::default()
    })
}
