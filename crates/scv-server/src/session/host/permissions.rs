//! `permissions.list`, `permissions.keep` and `permissions.remove`
//! (capability `permissions`): the rules of the settings files that apply
//! to the session, and an `allow` rule the user keeps — in
//! `$SCV_HOME/settings.json` (scope `user`) or the trusted workspace's
//! `.claude/settings.local.json` (scope `project`, whose trust record moves
//! with SCV's own edit and nothing else: `scv_client::trust::rerecord`).
//! The session reads its rules again for its next turn; each request is
//! answered with `permissions.listed`.

use super::SessionHost;
use crate::kept_rules;
use crate::session::reject::{invalid, Handled, Reject};
use scv_client::trust::Decision;
use scv_protocol::{ErrorCode, EventBody, PermissionsEdit, PermissionsListed, RuleScope};
use std::path::Path;

/// The project's file a `project` rule is kept in.
const PROJECT_FILE: &str = ".claude/settings.local.json";

impl SessionHost {
    /// `permissions.list`.
    pub(super) async fn permissions_list(&mut self, rid: &str, session_id: &str) -> Handled {
        let settings = self.session(session_id)?.settings.clone();
        let home = self.shared.scv_home.clone();
        let rules = crate::blocking::run(move || {
            listed(&home, &settings.cwd, settings.custom.trust.as_ref())
        })
        .await
        .map_err(|err| Reject::new(ErrorCode::InternalError, err.to_string()))?;
        self.reply(
            rid,
            Some(session_id.to_string()),
            EventBody::PermissionsListed(PermissionsListed { rules }),
        )
        .await;
        Ok(())
    }

    /// `permissions.keep` (`add`) or `permissions.remove`.
    pub(super) async fn permissions_edit(
        &mut self,
        rid: &str,
        edit: PermissionsEdit,
        add: bool,
    ) -> Handled {
        if add {
            kept_rules::check(&edit.rule).map_err(invalid)?;
        }
        let settings = self.session(&edit.session_id)?.settings.clone();
        let home = self.shared.scv_home.clone();
        let rule = edit.rule.clone();
        let scope = edit.scope;
        crate::blocking::run(move || match scope {
            RuleScope::User => edit_user(&home, &rule, add),
            RuleScope::Project => edit_project(
                &home,
                &settings.cwd,
                settings.custom.trust.as_ref(),
                &rule,
                add,
            ),
        })
        .await
        .map_err(|err| Reject::new(ErrorCode::InternalError, err.to_string()))?
        .map_err(invalid)?;
        // The session's next turn applies the rules as they are now.
        self.reload_customization(&edit.session_id).await?;
        self.permissions_list(rid, &edit.session_id).await
    }
}

/// The rules of the files that apply to a session in `cwd`
/// (`customize::permission_files`), each with the scope that writes its
/// file, if one does.
fn listed(home: &Path, cwd: &Path, trust: Option<&Decision>) -> Vec<scv_protocol::PermissionRule> {
    let (user, project) = (home.join("settings.json"), cwd.join(PROJECT_FILE));
    let mut rules = Vec::new();
    for (path, text) in crate::customize::permission_files(home, cwd, trust) {
        let scope = if path == user {
            Some(RuleScope::User)
        } else if path == project {
            Some(RuleScope::Project)
        } else {
            None
        };
        let shown = path.display().to_string();
        rules.extend(kept_rules::rules_of(text.as_bytes(), &shown, scope));
    }
    rules
}

/// `$SCV_HOME/settings.json` with `rule` kept or removed.
fn edit_user(home: &Path, rule: &str, add: bool) -> Result<(), String> {
    let path = home.join("settings.json");
    let before = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
    };
    let shown = path.display();
    match kept_rules::edit(before.as_deref(), rule, add).map_err(|why| format!("{shown} {why}"))? {
        Some(after) => scv_client::home::write_private(&path, &after),
        None if add => Ok(()),
        None => Err(format!("{shown} keeps no rule `{rule}`")),
    }
}

/// The workspace's `.claude/settings.local.json` with `rule` kept or
/// removed: only in a trusted workspace whose file is trusted as it is
/// (or absent), written beneath the workspace (no link followed out), and
/// its trust record moved to what SCV wrote.
fn edit_project(
    home: &Path,
    cwd: &Path,
    trust: Option<&Decision>,
    rule: &str,
    add: bool,
) -> Result<(), String> {
    if !trust.is_some_and(|t| t.trusted) {
        return Err(format!(
            "{} is not trusted: a project rule is kept only in a trusted workspace (`scv trust`); keep it for every project instead (scope `user`)",
            cwd.display()
        ));
    }
    let ws = crate::tools::beneath::Workspace::open(cwd)?;
    let rel = ws.relative(PROJECT_FILE)?;
    let before = ws.read_small(&rel, scv_client::trust::MAX_FILE_BYTES);
    let exists = ws.stat(&rel).is_ok();
    if exists && before.is_none() {
        return Err(format!(
            "{PROJECT_FILE} cannot be read as a small regular file"
        ));
    }
    let shown = cwd.join(PROJECT_FILE);
    let shown = shown.display();
    let Some(after) =
        kept_rules::edit(before.as_deref(), rule, add).map_err(|why| format!("{shown} {why}"))?
    else {
        return if add {
            Ok(())
        } else {
            Err(format!("{shown} keeps no rule `{rule}`"))
        };
    };
    let digest = before.as_deref().map(scv_client::trust::digest);
    // The record first: a file the user has not trusted as it is now is
    // never rewritten (and so never trusted) by this.
    scv_client::trust::rerecord(home, cwd, PROJECT_FILE, digest.as_deref(), &after)?;
    if !exists {
        ws.create(&rel)?;
    }
    ws.replace(&rel, &after, 0o644)
}
