//! The tools a session offers: the built-in ones (one line each in
//! [`BUILTINS`]) and the tools of connected MCP servers, looked up by name
//! once per call.

use super::builtin::{Builtin, ToolContext, ToolResult};
use super::{bash, edit_file, list_dir, mcp, output, read_file, search, write_file};
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
];

/// One tool of a session.
pub(crate) struct Tool {
    risk: Risk,
    kind: Kind,
}

enum Kind {
    Builtin(&'static Builtin),
    Mcp(Arc<McpTool>),
}

impl Tool {
    pub fn risk(&self) -> Risk {
        self.risk
    }

    /// What an approval prompt shows of a call.
    pub fn summary(&self, arguments: &Value) -> String {
        match &self.kind {
            Kind::Builtin(builtin) => (builtin.summary)(arguments),
            Kind::Mcp(tool) => mcp::summary(tool, arguments),
        }
    }

    /// The tool's MCP server is configured with `auto_approve = true`.
    pub fn server_auto_approves(&self) -> bool {
        matches!(&self.kind, Kind::Mcp(tool) if tool.auto_approve)
    }

    /// For a command-running tool, whether this call will run inside the
    /// sandbox (`enforced`: the session has one); `None` for other tools.
    pub fn sandboxed(&self, arguments: &Value, enforced: bool) -> Option<bool> {
        match &self.kind {
            Kind::Builtin(builtin) => builtin
                .stays_sandboxed
                .map(|stays| enforced && stays(arguments)),
            Kind::Mcp(_) => None,
        }
    }

    /// The call asks to run outside the sandbox (it always asks first).
    pub fn leaves_sandbox(&self, arguments: &Value) -> bool {
        match &self.kind {
            Kind::Builtin(builtin) => builtin
                .stays_sandboxed
                .is_some_and(|stays| !stays(arguments)),
            Kind::Mcp(_) => false,
        }
    }

    /// Runs one call; its output is capped at `ctx.max_output_bytes`.
    pub async fn run(&self, arguments: &Value, ctx: &ToolContext<'_>) -> ToolResult {
        let result = match &self.kind {
            Kind::Builtin(builtin) => (builtin.run)(arguments, ctx).await?,
            Kind::Mcp(tool) => mcp::run(tool, arguments, ctx).await,
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
    pub fn builtins() -> Arc<Registry> {
        static BUILT: LazyLock<Arc<Registry>> = LazyLock::new(|| {
            Arc::new(Registry {
                tools: builtin_tools(),
                specs: BUILTINS
                    .iter()
                    .map(|b| ToolSpec {
                        name: b.name.to_string(),
                        description: b.description.to_string(),
                        parameters: Arc::new((b.parameters)()),
                    })
                    .collect(),
            })
        });
        BUILT.clone()
    }

    /// The built-in tools and `mcp` (the connected servers' tools).
    pub fn with_mcp(mcp: &[Arc<McpTool>]) -> Arc<Registry> {
        let builtins = Registry::builtins();
        if mcp.is_empty() {
            return builtins;
        }
        let mut tools = builtin_tools();
        let mut specs = builtins.specs.clone();
        for tool in mcp {
            specs.push(ToolSpec {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters: tool.input_schema.clone(),
            });
            tools.push((
                tool.name.clone(),
                Tool {
                    risk: Risk::Mcp,
                    kind: Kind::Mcp(tool.clone()),
                },
            ));
        }
        Arc::new(Registry { tools, specs })
    }

    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }
}

fn builtin_tools() -> Vec<(String, Tool)> {
    BUILTINS
        .iter()
        .map(|b| {
            let tool = Tool {
                risk: b.risk,
                kind: Kind::Builtin(b),
            };
            (b.name.to_string(), tool)
        })
        .collect()
}
