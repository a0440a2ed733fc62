//! `workspace.trust` (capability `trust`): the session's workspace trusted
//! with its repository configuration as it is now — as `scv trust DIR`
//! does: `trusted_workspaces` in config.toml, the files' digests in
//! `$SCV_HOME/trust.json` — and the session made to use it from its next
//! turn (hooks, rules; a turn running now keeps what it started with).

use super::SessionHost;
use crate::session::factory::SessionFactory;
use crate::session::reject::{Handled, Reject};
use scv_protocol::{ErrorCode, EventBody};
use std::sync::Arc;

impl SessionHost {
    pub(super) async fn trust_workspace(&mut self, rid: &str, session_id: &str) -> Handled {
        let settings = self.session(session_id)?.settings.clone();
        let (home, cwd) = (self.shared.scv_home.clone(), settings.cwd.clone());
        crate::blocking::run(move || {
            let files = crate::trust::read(&cwd);
            scv_client::trust::trust(&home, &cwd, &files)
        })
        .await
        .map_err(|err| Reject::new(ErrorCode::InternalError, err.to_string()))?
        .map_err(|why| {
            Reject::new(
                ErrorCode::InternalError,
                format!("cannot trust the workspace: {why}"),
            )
        })?;
        // config.toml changed: the session reads what it trusts now.
        self.shared.live.refresh().await;
        let trust = self.reload_customization(session_id).await?;
        let trust = trust.unwrap_or_else(|| scv_protocol::WorkspaceTrust {
            workspace: settings.cwd.display().to_string(),
            trusted: true,
            files: Vec::new(),
        });
        self.reply(
            rid,
            Some(session_id.to_string()),
            EventBody::WorkspaceTrusted(trust),
        )
        .await;
        Ok(())
    }

    /// The session's hooks, rules, commands and trust read again, for its
    /// next turn (a turn running now keeps what it started with); its
    /// workspace's trust as it is now.
    pub(super) async fn reload_customization(
        &mut self,
        session_id: &str,
    ) -> Result<Option<scv_protocol::WorkspaceTrust>, Reject> {
        let settings = self.session(session_id)?.settings.clone();
        let current = self.shared.current();
        let source = settings.custom.source;
        let custom = SessionFactory::new(&self.shared)
            .customization(&current, &settings.cwd, source)
            .await?;
        let trust = custom.trust.as_ref().and_then(crate::trust::info);
        let mut next = (*settings).clone();
        if next.transcript.is_none() && !custom.hooks.is_empty() {
            // Hooks now, none before: they get their transcript and
            // `CLAUDE_ENV_FILE` from here on.
            (next.transcript, next.sandbox, next.tool_env) = SessionFactory::new(&self.shared)
                .hook_files(true, next.sandbox.take(), next.tool_env.clone())
                .await;
        }
        next.custom = Arc::new(custom);
        self.session(session_id)?.settings = Arc::new(next);
        Ok(trust)
    }
}
