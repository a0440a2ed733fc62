//! The tools a session offers: the built-in ones (one line each in
//! [`BUILTINS`]) and the tools of connected MCP servers, looked up by name
//! once per call.

use super::builtin::{Builtin, ToolContext, ToolResult};
use super::tool_search::{self, Loaded};
use super::{
    bash, bash_kill, bash_output, edit_file, list_dir, mcp, output, read_file, search, skill, task,
    web_fetch, write_file,
};
use crate::model::ToolSpec;
use scv_mcp::McpTool;
use scv_protocol::Risk;
use serde_json::Value;
use std::sync::{Arc, LazyLock};

/// Every built-in tool, in the order they are offered.
const BUILTINS: &[&Builtin] = &[
    &bash::TOOL,
    &read_file::TOOL,
    &write_file::TOOL,
    &edit_file::TOOL,
    &list_dir::TOOL,
    &search::TOOL,
    &bash_output::TOOL,
    &bash_kill::TOOL,
    &web_fetch::TOOL,
];

/// What a session offers beyond the built-in tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Offer {
    /// The session has skills: offer `skill`.
    pub skill: bool,
    /// Plan mode: `write` tools are not offered.
    pub plan: bool,
    /// Subagents may start: offer `task`, described so (its agents listed).
    pub task: Option<Arc<str>>,
}

/// One tool of a session.
pub(crate) struct Tool {
    risk: Risk,
    kind: Kind,
}

enum Kind {
    Builtin(&'static Builtin),
    Mcp(Arc<McpTool>),
    /// `task`: run by the agent loop itself (a child session), never here.
    Task,
    /// `mcp_tool_search`: finds and loads the session's MCP tools.
    Search(Arc<Loaded>, Arc<[Arc<McpTool>]>),
}

impl Tool {
    pub(crate) fn risk(&self) -> Risk {
        self.risk
    }

    /// What an approval prompt shows of a call.
    pub(crate) fn summary(&self, arguments: &Value) -> String {
        match &self.kind {
            Kind::Builtin(builtin) => (builtin.summary)(arguments),
            Kind::Mcp(tool) => mcp::summary(tool, arguments),
            Kind::Task => task::summary(arguments),
            Kind::Search(..) => format!(
                "Search MCP tools: {}",
                super::builtin::arg(arguments, "query")
            ),
        }
    }

    /// `task`: the call starts a subagent.
    pub(crate) fn is_task(&self) -> bool {
        matches!(self.kind, Kind::Task)
    }

    /// `web_fetch`: runs without asking for an allowed host.
    pub(crate) fn is_web_fetch(&self) -> bool {
        matches!(&self.kind, Kind::Builtin(builtin) if builtin.name == web_fetch::TOOL.name)
    }

    /// The tool's MCP server is configured with `auto_approve = true`.
    pub(crate) fn server_auto_approves(&self) -> bool {
        matches!(&self.kind, Kind::Mcp(tool) if tool.auto_approve)
    }

    /// For a command-running tool, whether this call will run inside the
    /// sandbox (`enforced`: the session has one); `None` for other tools.
    pub(crate) fn sandboxed(&self, arguments: &Value, enforced: bool) -> Option<bool> {
        match &self.kind {
            Kind::Builtin(builtin) => builtin
                .stays_sandboxed
                .map(|stays| enforced && stays(arguments)),
            Kind::Mcp(_) | Kind::Task | Kind::Search(..) => None,
        }
    }

    /// The call asks to run outside the sandbox (it always asks first).
    pub(crate) fn leaves_sandbox(&self, arguments: &Value) -> bool {
        match &self.kind {
            Kind::Builtin(builtin) => builtin
                .stays_sandboxed
                .is_some_and(|stays| !stays(arguments)),
            Kind::Mcp(_) | Kind::Task | Kind::Search(..) => false,
        }
    }

    /// Runs one call; its output is capped at `ctx.max_output_bytes`.
    pub(crate) async fn run(&self, arguments: &Value, ctx: &ToolContext<'_>) -> ToolResult {
        let result = match &self.kind {
            Kind::Builtin(builtin) => (builtin.run)(arguments, ctx).await?,
            Kind::Mcp(tool) => mcp::run(tool, arguments, ctx).await,
            Kind::Search(loaded, tools) => match tool_search::run(arguments, tools, loaded) {
                Ok(text) => super::builtin::ToolOutput::ok(text),
                Err(why) => super::builtin::ToolOutput::error(format!("error: {why}")),
            },
            Kind::Task => {
                return Err(super::builtin::ToolError::Internal(
                    "a task call reached the tool runner; the agent loop runs it".into(),
                ))
            }
        };
        let (text, cut) = output::cap(result.output, ctx.max_output_bytes);
        Ok(super::builtin::ToolOutput {
            success: result.success,
            output: text,
            truncated: result.truncated || cut,
        })
    }
}

/// The tools of a session, and their specs as offered to the model.
pub(crate) struct Registry {
    tools: Vec<(String, Tool)>,
    specs: Vec<ToolSpec>,
}

impl Registry {
    /// The built-in tools (built once).
    pub(crate) fn builtins() -> Arc<Registry> {
        static BUILT: LazyLock<Arc<Registry>> = LazyLock::new(|| {
            Arc::new(Registry {
                tools: builtin_tools(),
                specs: BUILTINS.iter().map(|b| spec_of(b)).collect(),
            })
        });
        BUILT.clone()
    }

    /// A session's tools: the built-in ones, `skill` when it has skills,
    /// and `mcp` (the connected servers' tools). In plan mode the `write`
    /// tools stay known (a call is refused by name, not "unknown") but are
    /// not offered.
    ///
    /// With `loaded` (the session's), MCP tools weighing more than
    /// [`tool_search::DEFER_ABOVE_BYTES`] are offered through
    /// `mcp_tool_search`: only the loaded ones are offered, after it, by
    /// name; every one stays callable.
    pub(crate) fn for_session(
        mcp: &[Arc<McpTool>],
        offer: Offer,
        loaded: Option<&Arc<Loaded>>,
    ) -> Arc<Registry> {
        let builtins = Registry::builtins();
        if mcp.is_empty() && offer == Offer::default() {
            return builtins;
        }
        let loaded = loaded.filter(|_| tool_search::deferred(mcp));
        let mut tools = builtin_tools();
        if offer.skill {
            tools.push(builtin_tool(&skill::TOOL));
        }
        if offer.task.is_some() {
            let tool = Tool {
                risk: Risk::Read,
                kind: Kind::Task,
            };
            tools.push((task::NAME.to_string(), tool));
        }
        if let Some(loaded) = loaded {
            let tool = Tool {
                risk: Risk::Read,
                kind: Kind::Search(loaded.clone(), mcp.iter().cloned().collect()),
            };
            tools.push((tool_search::NAME.to_string(), tool));
        }
        let mut by_name: Vec<&Arc<McpTool>> = mcp.iter().collect();
        if loaded.is_some() {
            // One order whatever the servers' order, for prompt caches.
            by_name.sort_by(|a, b| a.name.cmp(&b.name));
        }
        for tool in by_name {
            tools.push((
                tool.name.clone(),
                Tool {
                    risk: Risk::Mcp,
                    kind: Kind::Mcp(tool.clone()),
                },
            ));
        }
        let specs = tools
            .iter()
            .filter(|(_, tool)| !(offer.plan && tool.risk == Risk::Write))
            .filter(|(name, tool)| match (&tool.kind, loaded) {
                (Kind::Mcp(_), Some(loaded)) => loaded.contains(name),
                _ => true,
            })
            .map(|(_, tool)| match &tool.kind {
                Kind::Builtin(builtin) => builtin_spec(builtin),
                Kind::Mcp(tool) => ToolSpec {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    parameters: tool.input_schema.clone(),
                },
                Kind::Task => task::spec(offer.task.as_deref().unwrap_or_default()),
                Kind::Search(..) => tool_search::spec(),
            })
            .collect();
        Arc::new(Registry { tools, specs })
    }

    /// These tools only (a subagent's): the others are unknown to it,
    /// offered or not.
    pub(crate) fn only(&self, names: &[String]) -> Arc<Registry> {
        let keep = |name: &str| names.iter().any(|n| n == name);
        Arc::new(Registry {
            tools: self
                .tools
                .iter()
                .filter(|(name, _)| keep(name))
                .map(|(name, tool)| {
                    let kind = match &tool.kind {
                        Kind::Builtin(builtin) => Kind::Builtin(builtin),
                        Kind::Mcp(mcp) => Kind::Mcp(mcp.clone()),
                        Kind::Task => Kind::Task,
                        Kind::Search(loaded, tools) => Kind::Search(loaded.clone(), tools.clone()),
                    };
                    let tool = Tool {
                        risk: tool.risk,
                        kind,
                    };
                    (name.clone(), tool)
                })
                .collect(),
            specs: self
                .specs
                .iter()
                .filter(|spec| keep(&spec.name))
                .cloned()
                .collect(),
        })
    }

    /// The names of the tools offered to the model.
    pub(crate) fn offered_names(&self) -> Vec<String> {
        self.specs.iter().map(|spec| spec.name.clone()).collect()
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    pub(crate) fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }
}

fn builtin_tools() -> Vec<(String, Tool)> {
    BUILTINS.iter().map(|b| builtin_tool(b)).collect()
}

fn builtin_tool(builtin: &'static Builtin) -> (String, Tool) {
    let tool = Tool {
        risk: builtin.risk,
        kind: Kind::Builtin(builtin),
    };
    (builtin.name.to_string(), tool)
}

/// A built-in tool's spec as built once ([`Registry::builtins`]): its
/// schema derived anew for every session's registry cost each idle
/// session ~13 KiB.
fn builtin_spec(builtin: &Builtin) -> ToolSpec {
    let built = Registry::builtins();
    built
        .specs
        .iter()
        .find(|spec| spec.name == builtin.name)
        .cloned()
        .unwrap_or_else(|| spec_of(builtin))
}

fn spec_of(builtin: &Builtin) -> ToolSpec {
    ToolSpec {
        name: builtin.name.to_string(),
        description: builtin.description.to_string(),
        parameters: Arc::new((builtin.parameters)()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The argument schemas exactly as models were offered them before
    /// they were derived from the argument structs (issue 24): same
    /// values, and the same text in the order they were written, which is
    /// what a request body carries when serde_json keeps insertion order
    /// (it does in a workspace build, where another crate turns
    /// `preserve_order` on).
    #[test]
    fn every_builtin_schema_is_the_one_models_were_offered() {
        let offered = [
            (
                "bash",
                json!({
                    "type": "object",
                    "properties": {
                        "command": {"type": "string", "description": "The command line to run."},
                        "timeout_ms": {"type": "integer", "minimum": 1, "description": "Kill the command after this many milliseconds."},
                        "unsandboxed": {"type": "boolean", "description": "Run outside the sandbox (asks the user first). Only after a command failed because the sandbox forbade it."},
                        "background": {"type": "boolean", "description": "Start it in the background and return at once with its process_id (a dev server, a watcher); read its output with bash_output, stop it with bash_kill."}
                    },
                    "required": ["command"]
                }),
            ),
            (
                "read_file",
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Path relative to the workspace."},
                        "offset": {"type": "integer", "minimum": 1},
                        "limit": {"type": "integer", "minimum": 1}
                    },
                    "required": ["path"]
                }),
            ),
            (
                "write_file",
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "content": {"type": "string"}
                    },
                    "required": ["path", "content"]
                }),
            ),
            (
                "edit_file",
                json!({
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "old_string": {"type": "string"},
                        "new_string": {"type": "string"},
                        "replace_all": {"type": "boolean"}
                    },
                    "required": ["path", "old_string", "new_string"]
                }),
            ),
            (
                "list_dir",
                json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"]
                }),
            ),
            (
                "search",
                json!({
                    "type": "object",
                    "properties": {
                        "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax)."},
                        "path": {"type": "string", "description": "Directory or file to search; default the workspace."},
                        "glob": {"type": "string", "description": "Only files whose path matches this glob, e.g. *.rs"}
                    },
                    "required": ["pattern"]
                }),
            ),
            (
                "bash_output",
                json!({
                    "type": "object",
                    "properties": {
                        "process_id": {"type": "string", "description": "The process_id bash returned."},
                        "wait_ms": {"type": "integer", "minimum": 0, "description": "Wait up to this long (at most 60000) for output when there is none yet."}
                    },
                    "required": ["process_id"]
                }),
            ),
            (
                "bash_kill",
                json!({
                    "type": "object",
                    "properties": {
                        "process_id": {"type": "string", "description": "The process_id bash returned."}
                    },
                    "required": ["process_id"]
                }),
            ),
            (
                "web_fetch",
                json!({
                    "type": "object",
                    "properties": {
                        "url": {"type": "string", "description": "The http:// or https:// URL to fetch."}
                    },
                    "required": ["url"]
                }),
            ),
        ];
        let specs = Registry::builtins();
        let names: Vec<&str> = specs.specs().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            offered.iter().map(|(name, _)| *name).collect::<Vec<_>>()
        );
        for (spec, (name, schema)) in specs.specs().iter().zip(&offered) {
            assert_eq!(*spec.parameters, *schema, "{name}");
            assert_eq!(
                serde_json::to_string(&*spec.parameters).unwrap(),
                serde_json::to_string(schema).unwrap(),
                "{name}"
            );
        }
    }
}
