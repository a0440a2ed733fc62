//! A server's tools as SCV offers them, read leniently: one malformed tool
//! is left out (and said why), never the whole list.

use crate::limits::{MAX_DESCRIPTION_BYTES, MAX_SCHEMA_BYTES, MAX_TOOLS_PER_SERVER};
use crate::names::tool_name;
use serde_json::Value;
use std::sync::Arc;

/// One tool of one server.
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// The name the model sees (`mcp__SERVER__TOOL`, mapped when needed).
    pub name: String,
    pub server: String,
    /// The name the server knows.
    pub tool: String,
    pub description: String,
    /// A JSON Schema object (`"type": "object"`).
    pub input_schema: Arc<Value>,
    /// The server's hints: shown in approvals, never trusted.
    pub read_only_hint: Option<bool>,
    pub destructive_hint: Option<bool>,
    /// The server's `auto_approve`.
    pub auto_approve: bool,
    /// The server's `tool_timeout_ms`.
    pub timeout: std::time::Duration,
}

/// What a list of tools held: the usable ones and why others were left out.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub tools: Vec<McpTool>,
    pub left_out: Vec<String>,
}

/// Reads the `tools` array of `tools/list` results (one per page).
pub(crate) fn read(server: &str, pages: &[Value], allow: Option<&[String]>) -> Listing {
    let mut listing = Listing::default();
    for entry in pages
        .iter()
        .filter_map(|page| page.get("tools").and_then(Value::as_array))
        .flatten()
    {
        match one(server, entry) {
            Ok(tool) => {
                if allow.is_some_and(|allow| !allow.contains(&tool.tool)) {
                    continue;
                }
                if listing.tools.iter().any(|t| t.tool == tool.tool) {
                    listing
                        .left_out
                        .push(format!("`{}`: listed twice", tool.tool));
                } else if listing.tools.len() >= MAX_TOOLS_PER_SERVER {
                    listing.left_out.push(format!(
                        "`{}`: over {MAX_TOOLS_PER_SERVER} tools",
                        tool.tool
                    ));
                } else {
                    listing.tools.push(tool);
                }
            }
            Err(why) => listing.left_out.push(why),
        }
    }
    listing
}

fn one(server: &str, entry: &Value) -> Result<McpTool, String> {
    let Some(tool) = entry.get("name").and_then(Value::as_str) else {
        return Err("a tool without a name".into());
    };
    let shown: String = tool.chars().take(80).collect();
    let mut schema = match entry.get("inputSchema") {
        Some(Value::Object(schema)) => schema.clone(),
        Some(_) => return Err(format!("`{shown}`: its input schema is not an object")),
        None => return Err(format!("`{shown}`: it has no input schema")),
    };
    match schema.get("type") {
        None => {
            schema.insert("type".into(), "object".into());
        }
        Some(Value::String(kind)) if kind == "object" => {}
        Some(_) => {
            return Err(format!(
                "`{shown}`: its input schema is not of type \"object\""
            ))
        }
    }
    if let Some(properties) = schema.get("properties") {
        if !properties.is_object() {
            return Err(format!(
                "`{shown}`: its schema's `properties` is not an object"
            ));
        }
    }
    let schema = Value::Object(schema);
    if schema.to_string().len() > MAX_SCHEMA_BYTES {
        return Err(format!(
            "`{shown}`: its input schema is over {MAX_SCHEMA_BYTES} bytes"
        ));
    }
    let mut description = entry
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if description.len() > MAX_DESCRIPTION_BYTES {
        let mut cut = MAX_DESCRIPTION_BYTES;
        while !description.is_char_boundary(cut) {
            cut -= 1;
        }
        description.truncate(cut);
    }
    let hint = |key: &str| {
        entry
            .get("annotations")
            .and_then(|a| a.get(key))
            .and_then(Value::as_bool)
    };
    Ok(McpTool {
        name: tool_name(server, tool),
        server: server.to_string(),
        tool: tool.to_string(),
        description,
        input_schema: Arc::new(schema),
        read_only_hint: hint("readOnlyHint"),
        destructive_hint: hint("destructiveHint"),
        auto_approve: false,
        timeout: std::time::Duration::from_secs(60),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bad_tools_are_left_out_and_said_why() {
        let page = json!({"tools": [
            {"name": "echo", "description": "Echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
             "annotations": {"readOnlyHint": true}},
            {"name": "no_type", "inputSchema": {"properties": {}}},
            {"name": "bad", "inputSchema": "oops"},
            {"name": "string_schema", "inputSchema": {"type": "string"}},
            {"inputSchema": {}},
            {"name": "echo", "inputSchema": {}},
        ]});
        let listing = read("s", &[page], None);
        let names: Vec<_> = listing.tools.iter().map(|t| t.tool.as_str()).collect();
        assert_eq!(names, ["echo", "no_type"]);
        assert_eq!(listing.tools[0].name, "mcp__s__echo");
        assert_eq!(listing.tools[0].read_only_hint, Some(true));
        assert_eq!(listing.tools[1].input_schema["type"], "object");
        assert_eq!(listing.left_out.len(), 4, "{:?}", listing.left_out);
    }

    #[test]
    fn the_allow_list_and_the_bound_hold() {
        let tools: Vec<Value> = (0..200)
            .map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}}))
            .collect();
        let page = json!({ "tools": tools });
        let listing = read("s", std::slice::from_ref(&page), None);
        assert_eq!(listing.tools.len(), MAX_TOOLS_PER_SERVER);
        assert_eq!(listing.left_out.len(), 100);
        let allow = vec!["t3".to_string(), "t150".to_string()];
        let listing = read("s", &[page], Some(&allow));
        assert_eq!(listing.tools.len(), 2);
    }
}
