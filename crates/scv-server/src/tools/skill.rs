//! skill: loads one of the session's skills (a `SKILL.md` folder) by name.
//! The system prompt lists each skill's name and description only; this is
//! how the model reads the instructions of the one it needs.

use super::builtin::{parse, schema_of, Builtin, ToolContext, ToolError, ToolOutput, ToolResult};
use schemars::JsonSchema;
use scv_protocol::Risk;
use serde::Deserialize;
use serde_json::Value;

pub(crate) const TOOL: Builtin = Builtin {
    name: "skill",
    risk: Risk::Read,
    description: "Load the instructions of one of the skills listed in the system prompt, by name. Use it when a task matches a skill's description, before you start the task.",
    parameters: schema_of::<SkillArgs>,
    summary: |arguments| format!("Load skill: {}", super::builtin::arg(arguments, "name")),
    stays_sandboxed: None,
    run: |arguments, ctx| Box::pin(run(arguments, ctx)),
};

#[derive(Deserialize, JsonSchema)]
struct SkillArgs {
    /// The skill's name, as listed.
    name: String,
}

async fn run(arguments: &Value, ctx: &ToolContext<'_>) -> ToolResult {
    let args: SkillArgs = parse(arguments)?;
    let Some(skill) = ctx.catalog.skill(&args.name).cloned() else {
        let known: Vec<&str> = ctx.catalog.skills.iter().map(|s| s.name.as_str()).collect();
        return Err(ToolError::Model(format!(
            "no skill named `{}` (skills: {})",
            args.name,
            known.join(", ")
        )));
    };
    let body = crate::blocking::run(move || skill.load_body())
        .await
        .map_err(|err| ToolError::Internal(format!("tool task failed: {err}")))?
        .map_err(|err| ToolError::Model(format!("cannot read skill `{}`: {err}", args.name)))?;
    Ok(ToolOutput::ok(body))
}
