//! Permission rules the user keeps (`permissions.keep`): an `allow` rule
//! in Claude Code's syntax added to, or removed from, the `permissions`
//! of a settings file — `$SCV_HOME/settings.json` (every project) or a
//! trusted workspace's `.claude/settings.local.json` (this project) — and
//! the rules of the files that apply, listed. The file's other keys stay
//! (serde_json writes them in sorted order). A rule is checked as the
//! session reads it (`scv_hooks::Rule`); an MCP tool's rule is refused: an
//! MCP call leaves the sandbox, and no rule skips its approval.

use scv_protocol::{PermissionRule, RuleScope};
use serde_json::{Map, Value};

/// A settings file's rules, in the order `permissions` lists them.
pub(crate) fn rules_of(text: &[u8], path: &str, scope: Option<RuleScope>) -> Vec<PermissionRule> {
    let Ok(value) = serde_json::from_slice::<Value>(text) else {
        return Vec::new();
    };
    let mut rules = Vec::new();
    for kind in ["allow", "ask", "deny"] {
        let list = value
            .get("permissions")
            .and_then(|p| p.get(kind))
            .and_then(Value::as_array);
        for rule in list.into_iter().flatten().filter_map(Value::as_str) {
            rules.push(PermissionRule {
                rule: rule.to_string(),
                kind: kind.to_string(),
                path: path.to_string(),
                scope,
            });
        }
    }
    rules
}

/// Checks `rule` as a rule to keep: one SCV reads, and not an MCP tool's.
pub(crate) fn check(rule: &str) -> Result<(), String> {
    let parsed = scv_hooks::Rule::parse(rule.trim())
        .map_err(|why| format!("`{rule}` is not a rule SCV reads: {why}"))?;
    if parsed.as_str().starts_with("mcp__") {
        return Err(format!(
            "`{rule}` names an MCP tool: its calls leave the sandbox, and no kept rule skips their approval"
        ));
    }
    Ok(())
}

/// The settings file `before` (`None`: none yet) with `rule` added to
/// (`add`) or removed from `permissions.allow`; `None` when nothing
/// changes (kept already; not there).
pub(crate) fn edit(
    before: Option<&[u8]>,
    rule: &str,
    add: bool,
) -> Result<Option<Vec<u8>>, String> {
    let mut value = match before {
        None => Value::Object(Map::new()),
        Some(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Value::Object(Map::new()),
        Some(bytes) => serde_json::from_slice::<Value>(bytes)
            .map_err(|err| format!("is not JSON SCV can edit ({err}); fix it by hand"))?,
    };
    let Some(root) = value.as_object_mut() else {
        return Err("is not a JSON object; fix it by hand".into());
    };
    let permissions = root
        .entry("permissions")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(permissions) = permissions.as_object_mut() else {
        return Err("has `permissions` that is not an object; fix it by hand".into());
    };
    let allow = permissions
        .entry("allow")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(allow) = allow.as_array_mut() else {
        return Err("has `permissions.allow` that is not a list; fix it by hand".into());
    };
    let rule = rule.trim();
    let at = allow.iter().position(|r| r.as_str() == Some(rule));
    match (add, at) {
        (true, Some(_)) | (false, None) => return Ok(None),
        (true, None) => {
            if allow.len() >= crate::permissions::MAX_RULES {
                return Err(format!(
                    "holds {} allow rules already, the most SCV reads",
                    crate::permissions::MAX_RULES
                ));
            }
            allow.push(Value::String(rule.to_string()));
        }
        (false, Some(at)) => {
            allow.remove(at);
        }
    }
    let mut out = serde_json::to_vec_pretty(&value).map_err(|e| e.to_string())?;
    out.push(b'\n');
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_and_removes_a_rule_and_leaves_the_rest() {
        let before = br#"{"model": "x", "permissions": {"deny": ["Bash(rm:*)"]}, "hooks": {}}"#;
        let after = edit(Some(before), "Bash(cargo test:*)", true)
            .unwrap()
            .unwrap();
        let value: Value = serde_json::from_slice(&after).unwrap();
        assert_eq!(value["permissions"]["allow"][0], "Bash(cargo test:*)");
        assert_eq!(value["permissions"]["deny"][0], "Bash(rm:*)");
        assert_eq!(value["model"], "x");
        assert!(edit(Some(&after), "Bash(cargo test:*)", true)
            .unwrap()
            .is_none());
        let removed = edit(Some(&after), "Bash(cargo test:*)", false)
            .unwrap()
            .unwrap();
        let value: Value = serde_json::from_slice(&removed).unwrap();
        assert_eq!(value["permissions"]["allow"], serde_json::json!([]));
        assert!(edit(Some(&removed), "Bash(cargo test:*)", false)
            .unwrap()
            .is_none());
        let rules = rules_of(&after, "/h/settings.json", Some(RuleScope::User));
        assert_eq!(
            rules
                .iter()
                .map(|r| (r.kind.as_str(), r.rule.as_str()))
                .collect::<Vec<_>>(),
            [("allow", "Bash(cargo test:*)"), ("deny", "Bash(rm:*)")]
        );
    }

    #[test]
    fn a_file_it_cannot_edit_and_a_rule_it_cannot_keep_say_why() {
        assert!(edit(Some(b"[1]"), "Read", true)
            .unwrap_err()
            .contains("not a JSON object"));
        assert!(edit(Some(b"{oops"), "Read", true)
            .unwrap_err()
            .contains("not JSON"));
        let odd = br#"{"permissions": {"allow": "Read"}}"#;
        assert!(edit(Some(odd), "Read", true)
            .unwrap_err()
            .contains("not a list"));
        assert!(edit(None, "Read", true).unwrap().is_some());
        assert!(check("Bash(cargo test:*)").is_ok());
        assert!(check("mcp__github__create_issue")
            .unwrap_err()
            .contains("MCP tool"));
        assert!(check("Bash(").is_err());
    }
}
