//! MCP tools loaded when needed. When the connected servers' tool
//! definitions weigh more than [`DEFER_ABOVE_BYTES`] (about 12,000 tokens,
//! a tenth of a 128k-token context), they are not all offered: the model
//! gets `mcp_tool_search` {`query`, `limit`?}, which finds tools by name
//! and description and loads the ones it returns; from the next request
//! on, those are offered too, for the rest of the session (at most
//! [`MAX_LOADED`]). Offered tools keep one order — built-in ones, then
//! the search tool, then the loaded MCP tools by name — so a provider's
//! prompt cache holds between requests. Every MCP tool stays callable by
//! its name.

use crate::model::ToolSpec;
use scv_mcp::McpTool;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

/// The search tool's name.
pub(crate) const NAME: &str = "mcp_tool_search";
/// MCP tool definitions heavier than this are loaded through the search.
pub(crate) const DEFER_ABOVE_BYTES: usize = 48 * 1024;
/// MCP tools loaded in one session at most (the earliest stay).
pub(crate) const MAX_LOADED: usize = 64;
/// Tools one search returns at most.
const MAX_RESULTS: usize = 10;

/// The MCP tools a session loaded.
#[derive(Default)]
pub(crate) struct Loaded {
    names: Mutex<BTreeSet<String>>,
    version: AtomicU64,
}

impl Loaded {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.names
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        self.lock().contains(name)
    }

    /// Changes whenever a tool is loaded.
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }

    /// Loads `names` (as many as fit under [`MAX_LOADED`]); the ones
    /// loaded now or before.
    fn load(&self, names: &[String]) -> Vec<String> {
        let mut set = self.lock();
        let mut loaded = Vec::new();
        for name in names {
            if set.contains(name) || set.len() < MAX_LOADED {
                if set.insert(name.clone()) {
                    self.version.fetch_add(1, Ordering::SeqCst);
                }
                loaded.push(name.clone());
            }
        }
        loaded
    }
}

/// What the definitions of `tools` weigh, as offered.
fn weight(tools: &[Arc<McpTool>]) -> usize {
    tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
        .sum()
}

/// Whether `tools` are loaded through the search instead of offered.
pub(crate) fn deferred(tools: &[Arc<McpTool>]) -> bool {
    weight(tools) > DEFER_ABOVE_BYTES
}

pub(crate) fn spec() -> ToolSpec {
    static PARAMETERS: LazyLock<Arc<Value>> = LazyLock::new(|| {
        Arc::new(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for in the tools' names and descriptions."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "How many tools to load (default 5)."}
            },
            "required": ["query"]
        }))
    });
    ToolSpec {
        name: NAME.into(),
        description: "Find tools of the connected MCP servers by what they do and load them: the tools it returns can be called from the next step on. The MCP servers' tools are not listed otherwise.".into(),
        parameters: PARAMETERS.clone(),
    }
}

/// Runs one search: finds, loads and lists the tools.
pub(crate) fn run(
    arguments: &Value,
    tools: &[Arc<McpTool>],
    loaded: &Loaded,
) -> Result<String, String> {
    let query = arguments
        .get("query")
        .and_then(Value::as_str)
        .filter(|q| !q.trim().is_empty())
        .ok_or("`query` is required: words to look for")?;
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(5, |n| (n as usize).clamp(1, MAX_RESULTS));
    let found = search(tools, query, limit);
    if found.is_empty() {
        return Ok(format!(
            "No MCP tool matches `{query}`; try other words ({} tools are connected).",
            tools.len()
        ));
    }
    let names: Vec<String> = found.iter().map(|t| t.name.clone()).collect();
    let now = loaded.load(&names);
    let mut out = String::from("Loaded (call them from the next step on):\n");
    for tool in &found {
        if now.contains(&tool.name) {
            let line: String = tool
                .description
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .take(200)
                .collect();
            out.push_str(&format!("- {}: {line}\n", tool.name));
        }
    }
    if now.len() < found.len() {
        out.push_str(&format!(
            "({} more matched, but a session loads at most {MAX_LOADED} tools)\n",
            found.len() - now.len()
        ));
    }
    Ok(out)
}

/// The best `limit` tools for `query`: each word found in a tool's name
/// counts 2, in its description 1; ties by name.
fn search(tools: &[Arc<McpTool>], query: &str, limit: usize) -> Vec<Arc<McpTool>> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 1)
        .map(str::to_lowercase)
        .collect();
    let mut scored: Vec<(usize, &Arc<McpTool>)> = tools
        .iter()
        .map(|tool| {
            let name = tool.name.to_lowercase();
            let description = tool.description.to_lowercase();
            let score = words
                .iter()
                .map(|w| {
                    2 * usize::from(name.contains(w.as_str()))
                        + usize::from(description.contains(w.as_str()))
                })
                .sum();
            (score, tool)
        })
        .filter(|(score, _)| *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, t)| t.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tool(name: &str, description: &str) -> Arc<McpTool> {
        Arc::new(McpTool {
            name: name.into(),
            server: "s".into(),
            tool: name.into(),
            description: description.into(),
            input_schema: Arc::new(json!({"type":"object"})),
            read_only_hint: None,
            destructive_hint: None,
            auto_approve: false,
            timeout: std::time::Duration::from_secs(1),
        })
    }

    #[test]
    fn searches_rank_by_name_then_description_and_load_what_they_return() {
        let tools = vec![
            tool("mcp__s__invoice_create", "Create an invoice"),
            tool(
                "mcp__s__customer_get",
                "Get a customer and their invoice list",
            ),
            tool("mcp__s__ping", "Check the server"),
        ];
        let loaded = Loaded::default();
        let text = run(&json!({"query": "invoice"}), &tools, &loaded).unwrap();
        assert!(
            text.find("invoice_create").unwrap() < text.find("customer_get").unwrap(),
            "{text}"
        );
        assert!(
            loaded.contains("mcp__s__invoice_create") && loaded.contains("mcp__s__customer_get")
        );
        assert!(!loaded.contains("mcp__s__ping"));
        assert_eq!(loaded.version(), 2);
        assert!(run(&json!({"query": "weather"}), &tools, &loaded)
            .unwrap()
            .starts_with("No MCP tool"));
        assert!(run(&json!({}), &tools, &loaded).is_err());
    }
}
