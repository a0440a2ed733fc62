//! Claude Code's permission rules (`permissions.allow|deny|ask` in a
//! settings file), applied to SCV's tool calls. Read from the user's
//! `~/.claude/settings.json` and SCV's `$SCV_HOME/settings.json`, and from a
//! trusted workspace's `.claude/settings.json` and `settings.local.json`
//! (repository configuration: `trust`).
//!
//! Claude Code's order: a matching `deny` refuses the call, else a matching
//! `ask` asks the user (whatever `auto_approve` says), else a matching
//! `allow` runs it without asking — but only a call that stays in the
//! sandbox (a read, a file tool's write, a sandboxed `bash`): no rule lets
//! a call that leaves the sandbox (`unsandboxed: true`, an MCP tool, any
//! command with the sandbox off) skip its approval. An allowed Bash rule
//! covers a compound command only when it covers every part of it
//! (`scv_hooks::Mode::All`); a deny or ask rule holds when any part matches.
//!
//! A rule SCV cannot read is a warning naming the file (the session goes
//! on without it). Bounded: at most [`MAX_RULES`] rules in all.

use scv_hooks::{Mode, Places, Rule};
use serde_json::Value;
use std::path::Path;

/// The most rules all the files together may bring.
pub(crate) const MAX_RULES: usize = 512;

/// What a rule decided for a call; the text names the rule and its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Deny(String),
    Ask(String),
    Allow(String),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Allow,
    Deny,
    Ask,
}

#[derive(Debug)]
struct Entry {
    kind: Kind,
    rule: Rule,
    /// The settings file it came from.
    source: String,
}

/// Every rule read, in the order of their files.
#[derive(Debug, Default)]
pub(crate) struct Permissions {
    entries: Vec<Entry>,
}

impl Permissions {
    /// Adds the rules of one settings file (`text`, at `path`); what
    /// cannot be read goes to `warnings`.
    pub(crate) fn add_file(&mut self, path: &Path, text: &str, warnings: &mut Vec<String>) {
        let file = path.display().to_string();
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            // The hooks reader says what is wrong with the JSON.
            return;
        };
        let Some(permissions) = value.get("permissions") else {
            return;
        };
        for (key, kind) in [
            ("deny", Kind::Deny),
            ("ask", Kind::Ask),
            ("allow", Kind::Allow),
        ] {
            let Some(list) = permissions.get(key) else {
                continue;
            };
            let Some(list) = list.as_array() else {
                warnings.push(format!(
                    "{file}: permissions.{key} must be a list of rules; skipped"
                ));
                continue;
            };
            for item in list {
                if self.entries.len() >= MAX_RULES {
                    warnings.push(format!(
                        "{file}: more than {MAX_RULES} permission rules in all; the rest are skipped"
                    ));
                    return;
                }
                let parsed = item
                    .as_str()
                    .ok_or_else(|| "a rule must be a string".to_string())
                    .and_then(Rule::parse);
                match parsed {
                    Ok(rule) => self.entries.push(Entry {
                        kind,
                        rule,
                        source: file.clone(),
                    }),
                    Err(why) => warnings.push(format!(
                        "{file}: permissions.{key} rule {item} is skipped: {why}"
                    )),
                }
            }
        }
    }

    /// No rules at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// What the rules say of a call of SCV's tool `tool`: the first
    /// matching `deny`, else `ask`, else `allow` (`contained`: the call
    /// stays in the sandbox; an `allow` never covers one that does not).
    pub(crate) fn check(
        &self,
        tool: &str,
        arguments: &Value,
        places: &Places<'_>,
        contained: bool,
    ) -> Option<Verdict> {
        let find = |kind: Kind, mode: Mode| {
            self.entries
                .iter()
                .filter(|e| e.kind == kind)
                .find(|e| e.rule.matches(tool, arguments, places, mode))
                .map(|e| format!("`{}` ({})", e.rule.as_str(), e.source))
        };
        if let Some(rule) = find(Kind::Deny, Mode::Any) {
            return Some(Verdict::Deny(rule));
        }
        if let Some(rule) = find(Kind::Ask, Mode::Any) {
            return Some(Verdict::Ask(rule));
        }
        if !contained {
            return None;
        }
        // A command of several parts: each part covered by some `allow`.
        let command = arguments.get("command").and_then(Value::as_str);
        if let (Some(command), true) = (command, tool == "bash") {
            let parts = scv_hooks::command_parts(command)?;
            let mut rules = Vec::new();
            for part in parts.iter().filter(|p| !p.is_empty()) {
                let part = serde_json::json!({ "command": part });
                let saying = |e: &&Entry| {
                    e.kind == Kind::Allow && e.rule.matches(tool, &part, places, Mode::All)
                };
                let entry = self.entries.iter().find(saying)?;
                let rule = format!("`{}` ({})", entry.rule.as_str(), entry.source);
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            return (!rules.is_empty()).then(|| Verdict::Allow(rules.join(", ")));
        }
        find(Kind::Allow, Mode::All).map(Verdict::Allow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn permissions(text: &str) -> (Permissions, Vec<String>) {
        let mut p = Permissions::default();
        let mut warnings = Vec::new();
        p.add_file(Path::new("/p/.claude/settings.json"), text, &mut warnings);
        (p, warnings)
    }

    #[test]
    fn deny_then_ask_then_allow_and_allow_stays_in_the_sandbox() {
        let (p, warnings) = permissions(
            r#"{"permissions": {"allow": ["Bash(cargo test:*)", "Bash(git *)"],
                "deny": ["Bash(git push --force*)"], "ask": ["Bash(git push *)"]}}"#,
        );
        assert!(warnings.is_empty());
        let places = Places {
            cwd: Path::new("/w"),
            home: None,
        };
        let check = |command: &str, contained: bool| {
            p.check("bash", &json!({"command": command}), &places, contained)
        };
        assert!(matches!(
            check("cargo test -p x", true),
            Some(Verdict::Allow(_))
        ));
        assert_eq!(check("cargo test -p x", false), None);
        assert!(matches!(
            check("git push --force origin", true),
            Some(Verdict::Deny(_))
        ));
        assert!(matches!(
            check("git push origin", true),
            Some(Verdict::Ask(_))
        ));
        assert!(
            matches!(check("git status", true), Some(Verdict::Allow(r)) if r.contains("Bash(git *)"))
        );
        assert_eq!(check("git status && rm -rf /", true), None);
        assert!(
            matches!(check("git add . && cargo test", true), Some(Verdict::Allow(r)) if r.contains("cargo test") && r.contains("git *"))
        );
        assert_eq!(check("git log $(rm -rf x)", true), None);
        assert_eq!(check("ls", true), None);
    }

    #[test]
    fn unreadable_rules_are_warnings() {
        let (p, warnings) =
            permissions(r#"{"permissions": {"allow": ["Bsh(ls)", 3, "Read"], "deny": "Bash"}}"#);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        assert!(warnings[0].contains("permissions.deny must be a list"));
        assert!(warnings[1].contains("Bsh"));
        assert!(!p.is_empty());
    }
}
