//! task: hands a piece of work to a subagent, a child session with a
//! subset of the session's tools. The agent loop runs it (agent::subagent);
//! this is what the model is offered and what its arguments must be.

use super::builtin::{arg, schema_of};
use crate::model::ToolSpec;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::{Arc, LazyLock};

pub(crate) const NAME: &str = "task";

const DESCRIPTION: &str = "Start a subagent: a fresh agent with its own context that carries out one self-contained task with the tools it is given and reports back; its final answer is this call's result. Use it for work that needs many steps but whose details you do not need (exploring a codebase, running and summarizing tests, an independent change). Several task calls in one response run at the same time. The subagent sees none of this conversation: put everything it needs in `prompt`, and say what to report.";

/// The `task` call's arguments. Nothing else is taken: a client that does
/// not see children is asked a child's approvals on the `task` call, and
/// stray fields there (a `command`) must not look like the child's call.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskArgs {
    /// A short (3-6 word) description of the task, shown to the user.
    pub description: String,
    /// The whole task for the subagent: what to do, what it needs to know, what to report.
    pub prompt: String,
    /// Optional: the name of a subagent definition to run (see the list above); without it, a general-purpose subagent.
    #[serde(default, alias = "subagent_type")]
    pub agent: Option<String>,
}

/// The tool's description for a session whose definitions are listed in
/// `agents` (`scv_commands::Catalog::agent_index`).
pub(crate) fn description(agents: Option<&str>) -> Arc<str> {
    match agents {
        None => DESCRIPTION.into(),
        Some(index) => {
            format!("{DESCRIPTION}\n\nSubagent definitions (pass the name as `agent`):\n{index}")
                .into()
        }
    }
}

pub(crate) fn spec(description: &str) -> ToolSpec {
    static PARAMETERS: LazyLock<Arc<Value>> = LazyLock::new(|| Arc::new(schema_of::<TaskArgs>()));
    ToolSpec {
        name: NAME.into(),
        description: description.into(),
        parameters: PARAMETERS.clone(),
    }
}

pub(crate) fn summary(arguments: &Value) -> String {
    let agent = arg(arguments, "agent");
    let description = arg(arguments, "description");
    if agent.is_empty() {
        format!("Start subagent: {description}")
    } else {
        format!("Start subagent {agent}: {description}")
    }
}

/// The arguments, checked: what the model reads when they are wrong.
pub(crate) fn parse(arguments: &Value) -> Result<TaskArgs, String> {
    let mut args: TaskArgs =
        super::builtin::parse(arguments).map_err(|err| format!("error: {err}"))?;
    // Claude Code's name for its built-in agent, which models trained on
    // it send (as `subagent_type`): SCV's general-purpose subagent.
    if args.agent.as_deref() == Some("general-purpose") {
        args.agent = None;
    }
    for (field, value) in [("description", &args.description), ("prompt", &args.prompt)] {
        if value.trim().is_empty() {
            return Err(format!(
                "error: `{field}` is empty; give the subagent a {field}"
            ));
        }
    }
    if args.prompt.len() > scv_protocol::limits::MAX_PROMPT_BYTES {
        return Err(format!(
            "error: `prompt` is {} bytes; a subagent's prompt is at most {} bytes",
            args.prompt.len(),
            scv_protocol::limits::MAX_PROMPT_BYTES
        ));
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_and_empty_fields_are_named() {
        let missing = parse(&json!({"prompt": "p"})).unwrap_err();
        assert!(missing.contains("description"), "{missing}");
        let empty = parse(&json!({"description": "d", "prompt": "  "})).unwrap_err();
        assert_eq!(
            empty,
            "error: `prompt` is empty; give the subagent a prompt"
        );
        let ok = parse(&json!({"description": "d", "prompt": "p", "agent": "explore"})).unwrap();
        assert_eq!(ok.agent.as_deref(), Some("explore"));
    }

    /// A stray field could pass for a child's call where a client sees
    /// the child's approval on this call: refused, named. Claude Code's
    /// `subagent_type` is understood as `agent`.
    #[test]
    fn a_field_the_tool_does_not_take_is_refused() {
        let err = parse(&json!({"description": "d", "prompt": "p", "command": "git status"}))
            .unwrap_err();
        assert!(err.contains("command"), "{err}");
        let cc =
            parse(&json!({"description": "d", "prompt": "p", "subagent_type": "explore"})).unwrap();
        assert_eq!(cc.agent.as_deref(), Some("explore"));
        let general =
            parse(&json!({"description": "d", "prompt": "p", "subagent_type": "general-purpose"}))
                .unwrap();
        assert_eq!(general.agent, None);
    }

    #[test]
    fn the_schema_requires_description_and_prompt() {
        let spec = spec("x");
        assert_eq!(
            spec.parameters["required"],
            json!(["description", "prompt"])
        );
        assert!(spec.parameters["properties"]["agent"].is_object());
    }
}
