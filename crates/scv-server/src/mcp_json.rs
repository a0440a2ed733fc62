//! Claude Code's project MCP file, `WORKSPACE/.mcp.json`, as SCV's
//! session servers (`session.start.mcp_servers`' shape). Read only in a
//! trusted workspace (it is repository configuration: `trust`).
//!
//! ```json
//! {"mcpServers": {
//!   "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/docs"]},
//!   "api": {"type": "http", "url": "${API_BASE_URL:-https://api.example.com}/mcp",
//!           "headers": {"Authorization": "Bearer ${API_KEY}"}}}}
//! ```
//!
//! `${VAR}` and `${VAR:-default}` are expanded, as Claude Code does, in
//! `command`, `args`, `env`, `url` and `headers`, from SCV's environment;
//! a variable that is not set and has no default skips its server with a
//! warning. `type` is `stdio` (the default with `command`) or `http`;
//! `sse` (an older transport SCV does not speak) is skipped with a
//! warning. Other keys are ignored. MCP tools always ask before they run
//! (an entry here cannot set `auto_approve`). Bounded by
//! `scv_mcp::MAX_SERVERS`.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// The servers of `.mcp.json` (`text`, at `path`) in SCV's shape, and a
/// warning for each one skipped.
pub(crate) fn servers(
    path: &Path,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> (BTreeMap<String, Value>, Vec<String>) {
    let file = path.display();
    let mut out = BTreeMap::new();
    let mut warnings = Vec::new();
    let root: Value = match serde_json::from_str(text) {
        Ok(root) => root,
        Err(err) => {
            warnings.push(format!(
                "{file}: not valid JSON ({err}); its MCP servers are skipped"
            ));
            return (out, warnings);
        }
    };
    let Some(servers) = root.get("mcpServers").and_then(Value::as_object) else {
        return (out, warnings);
    };
    for (name, entry) in servers {
        if out.len() >= scv_mcp::MAX_SERVERS {
            warnings.push(format!(
                "{file}: more than {} MCP servers; `{name}` and the rest are skipped",
                scv_mcp::MAX_SERVERS
            ));
            break;
        }
        match server(entry, env) {
            Ok(value) => {
                out.insert(name.clone(), value);
            }
            Err(why) => warnings.push(format!("{file}: MCP server `{name}` is skipped: {why}")),
        }
    }
    (out, warnings)
}

/// One entry as SCV's server table.
fn server(entry: &Value, env: &dyn Fn(&str) -> Option<String>) -> Result<Value, String> {
    let Some(entry) = entry.as_object() else {
        return Err("an entry must be an object".into());
    };
    let text = |key: &str| -> Result<Option<String>, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => expand(s, env).map(Some),
            Some(_) => Err(format!("`{key}` must be a string")),
        }
    };
    let map = |key: &str| -> Result<Option<Map<String, Value>>, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(o)) => {
                let mut out = Map::new();
                for (k, v) in o {
                    let v = v
                        .as_str()
                        .ok_or_else(|| format!("`{key}.{k}` must be a string"))?;
                    out.insert(k.clone(), expand(v, env)?.into());
                }
                Ok(Some(out))
            }
            Some(_) => Err(format!("`{key}` must be an object of strings")),
        }
    };
    let kind = entry.get("type").and_then(Value::as_str);
    let mut out = Map::new();
    match kind {
        Some("sse") => {
            return Err("its `type` is `sse`, a transport SCV does not speak (use `http`)".into())
        }
        Some("http" | "streamable-http") => {
            let url = text("url")?.ok_or("an `http` server needs a `url`")?;
            out.insert("url".into(), url.into());
            if let Some(headers) = map("headers")? {
                out.insert("headers".into(), headers.into());
            }
        }
        None | Some("stdio") => {
            let command = text("command")?.ok_or("a `stdio` server needs a `command`")?;
            out.insert("command".into(), command.into());
            if let Some(args) = entry.get("args") {
                let args = args.as_array().ok_or("`args` must be a list of strings")?;
                let args = args
                    .iter()
                    .map(|a| {
                        a.as_str()
                            .ok_or("`args` must be a list of strings".to_string())
                    })
                    .map(|a| a.and_then(|a| expand(a, env)))
                    .collect::<Result<Vec<_>, _>>()?;
                out.insert("args".into(), json!(args));
            }
            if let Some(vars) = map("env")? {
                out.insert("env".into(), vars.into());
            }
        }
        Some(other) => {
            return Err(format!(
                "its `type` `{other}` is not one SCV knows (stdio, http)"
            ))
        }
    }
    Ok(Value::Object(out))
}

/// `text` with `${VAR}` and `${VAR:-default}` replaced from `env`.
fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`${{` without its `}}` in `{text}`"));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("`${{{inner}}}` is not a variable"));
        }
        match (env(name).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {
                return Err(format!(
                    "the variable `{name}` is not set (and has no `:-default`)"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "API_KEY" => Some("k123".into()),
            _ => None,
        }
    }

    #[test]
    fn expands_variables_and_defaults() {
        assert_eq!(expand("${HOME}/docs", &env).unwrap(), "/home/u/docs");
        assert_eq!(
            expand("${NOPE:-https://x}/mcp", &env).unwrap(),
            "https://x/mcp"
        );
        assert_eq!(expand("plain $HOME", &env).unwrap(), "plain $HOME");
        assert!(expand("${NOPE}", &env)
            .unwrap_err()
            .contains("`NOPE` is not set"));
        assert!(expand("${bad name}", &env).is_err());
        assert!(expand("${HOME", &env).is_err());
    }

    #[test]
    fn servers_in_scvs_shape_and_skips_named() {
        let text = r#"{"mcpServers": {
            "files": {"command": "npx", "args": ["-y", "srv", "${HOME}/docs"], "env": {"K": "${API_KEY}"}},
            "api": {"type": "http", "url": "${NOPE:-https://a.example}/mcp", "headers": {"Authorization": "Bearer ${API_KEY}"}},
            "old": {"type": "sse", "url": "https://x"},
            "missing": {"command": "x", "args": ["${NOPE}"]}}}"#;
        let (servers, warnings) = servers(Path::new("/w/.mcp.json"), text, &env);
        assert_eq!(
            servers["files"],
            json!({"command": "npx", "args": ["-y", "srv", "/home/u/docs"], "env": {"K": "k123"}})
        );
        assert_eq!(
            servers["api"],
            json!({"url": "https://a.example/mcp", "headers": {"Authorization": "Bearer k123"}})
        );
        assert_eq!(servers.len(), 2);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings
            .iter()
            .any(|w| w.contains("`old`") && w.contains("sse")));
        assert!(warnings
            .iter()
            .any(|w| w.contains("`missing`") && w.contains("NOPE")));
    }
}
