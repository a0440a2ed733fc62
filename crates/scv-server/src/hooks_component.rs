//! The user's hooks files as a daemon component: read when the daemon
//! starts and again on `reload`, so a malformed `$SCV_HOME/hooks.json` (or
//! Claude Code's `~/.claude/settings.json`) is
//! reported at once — in the log and in `daemon.status` (`scv daemon
//! reload` prints it) as `hooks:user`, `failed`, with the file and line —
//! not only when the next session refuses to start. Sessions read the
//! file themselves when they start (`customize`); this only tells.

use crate::component::{BoxFuture, Component, Context};
use scv_protocol::{ComponentKind, ComponentState, ComponentStatus};
use std::sync::Mutex;

/// What the last read found: `None` when there is no file.
#[derive(Default)]
pub(crate) struct UserHooks(Mutex<Option<Result<(), String>>>);

impl UserHooks {
    async fn check(&self, cx: &Context) {
        let path = cx.shared.scv_home.join("hooks.json");
        let settings = crate::claude::user_dir().map(|dir| dir.join("settings.json"));
        let read = crate::blocking::run(move || {
            let settings = settings.filter(|s| s.exists());
            if !path.exists() && settings.is_none() {
                return None;
            }
            let hooks = scv_hooks::Hooks::load(&[path]);
            let claude =
                settings.map(|s| scv_hooks::Hooks::load_settings(&s, scv_hooks::Origin::User));
            Some(
                hooks
                    .and_then(|_| claude.transpose())
                    .map(drop)
                    .map_err(|e| e.to_string()),
            )
        })
        .await
        .ok()
        .flatten();
        if let Some(Err(err)) = &read {
            tracing::error!("hooks: {err} (sessions will not start until it is fixed)");
        }
        *crate::sync::lock(&self.0) = read;
    }
}

impl Component for UserHooks {
    fn kind(&self) -> ComponentKind {
        ComponentKind::Hooks
    }

    fn start<'a>(&'a self, cx: &'a Context) -> BoxFuture<'a, ()> {
        Box::pin(self.check(cx))
    }

    fn reconcile<'a>(&'a self, cx: &'a Context, reload: bool) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if reload {
                self.check(cx).await;
            }
        })
    }

    fn status<'a>(&'a self, _cx: &'a Context) -> BoxFuture<'a, Vec<ComponentStatus>> {
        let read = crate::sync::lock(&self.0).clone();
        Box::pin(async move {
            let Some(read) = read else {
                return Vec::new();
            };
            let (state, error) = match read {
                Ok(_) => (ComponentState::Connected, None),
                Err(err) => (ComponentState::Failed, Some(err)),
            };
            vec![ComponentStatus {
                id: ComponentKind::Hooks.id("user"),
                account: None,
                bot_id: None,
                user_id: None,
                enabled: true,
                state,
                last_success_unix_seconds: None,
                error,
                restarts: 0,
                remote_tools: None,
                tools: None,
                tool_names: None,
            }]
        })
    }

    fn stop<'a>(&'a self, _cx: &'a Context) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}
