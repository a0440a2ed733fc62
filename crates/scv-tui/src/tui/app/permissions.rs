//! `/permissions` (capability `permissions`): the permission rules of the
//! settings files that apply to the session, and "always allow" made
//! lasting. `/permissions keep` keeps the newest session rule (or the one
//! named, in Claude Code's syntax) for every project
//! (`$SCV_HOME/settings.json`); `--project` keeps it for this one (the
//! trusted workspace's `.claude/settings.local.json`); `/permissions
//! remove RULE` removes a kept rule.

use super::{App, Outgoing, SessionView};
use scv_protocol::{ClientMessage, PermissionRule, PermissionsEdit, PermissionsList, RuleScope};

/// How `/permissions` is used, said when it is used otherwise.
const USAGE: &str = "/permissions · /permissions keep [--project] [RULE] · /permissions remove [--project] RULE (RULE in Claude Code's syntax, such as Bash(cargo test:*))";

impl App {
    /// `/permissions [keep|remove] [--project] [RULE]`.
    pub(super) fn permissions_command(&mut self, session: SessionView, arg: &str) -> Vec<Outgoing> {
        let newest = self.rules.list().iter().rev().find_map(|r| r.claude());
        match request(session.session_id, arg, newest) {
            Ok(message) => vec![self.send(message)],
            Err(hint) => {
                self.hint = Some(hint);
                Vec::new()
            }
        }
    }

    /// `permissions.listed` (after a keep or remove too).
    pub(super) fn permissions_listed(
        &mut self,
        kept: Option<String>,
        removed: Option<String>,
        rules: Vec<PermissionRule>,
    ) {
        let (notices, lines) = listed(kept, removed, &rules);
        notices.into_iter().for_each(|n| self.notice(n));
        if !lines.is_empty() {
            self.notes(lines);
        }
    }
}

/// The request `/permissions ARG` makes (`newest`: the session's newest
/// rule in Claude Code's syntax, which `keep` alone keeps), or the hint
/// that says why none.
fn request(session_id: String, arg: &str, newest: Option<String>) -> Result<ClientMessage, String> {
    let mut words = arg.split_whitespace();
    let verb = words.next();
    let mut scope = RuleScope::User;
    let mut rule = Vec::new();
    for word in words {
        if word == "--project" {
            scope = RuleScope::Project;
        } else {
            rule.push(word);
        }
    }
    let rule = rule.join(" ");
    Ok(match verb {
        None => ClientMessage::PermissionsList(PermissionsList { session_id }),
        Some("keep") => {
            let rule = if rule.is_empty() {
                newest.ok_or_else(|| {
                    "no session rule to keep: choose \"always allow\" in an approval first, or name one: /permissions keep Bash(cargo test:*)".to_string()
                })?
            } else {
                rule
            };
            ClientMessage::PermissionsKeep(PermissionsEdit {
                session_id,
                rule,
                scope,
            })
        }
        Some("remove") if !rule.is_empty() => ClientMessage::PermissionsRemove(PermissionsEdit {
            session_id,
            rule,
            scope,
        }),
        Some(_) => return Err(format!("usage: {USAGE}")),
    })
}

/// What `permissions.listed` shows: notices (what was kept or removed,
/// or that there are none) and the rules' lines.
fn listed(
    kept: Option<String>,
    removed: Option<String>,
    rules: &[PermissionRule],
) -> (Vec<String>, Vec<String>) {
    let file_of = |rule: &str| {
        rules
            .iter()
            .find(|r| r.rule == rule && r.scope.is_some())
            .map(|r| r.path.clone())
    };
    let mut notices = Vec::new();
    if let Some(kept) = kept {
        let place = file_of(&kept).unwrap_or_else(|| "its settings file".into());
        notices.push(format!(
            "kept: allow {kept} — in {place}; new sessions (and this one's next turn) run it without asking, inside the sandbox"
        ));
    }
    if let Some(removed) = removed {
        notices.push(format!(
            "removed: {removed} — sessions ask again from their next turn"
        ));
    }
    if rules.is_empty() {
        notices.push(
            "no permission rules in the settings files (/permissions keep keeps the newest \"always allow\" rule)"
                .into(),
        );
        return (notices, Vec::new());
    }
    let mut lines = vec!["permission rules (deny wins over ask, ask over allow):".to_string()];
    for r in rules {
        let writable = match r.scope {
            Some(RuleScope::User) => " (yours: /permissions remove)",
            Some(RuleScope::Project) => " (this project's: /permissions remove --project)",
            None => "",
        };
        lines.push(format!("  {} {} — {}{writable}", r.kind, r.rule, r.path));
    }
    (notices, lines)
}
