//! What ACP shows of a session's plan mode and its custom commands:
//! session modes `default` and `plan` (`session/set_mode`), and the
//! commands and skills `/NAME` runs (`available_commands_update`).

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, SessionMode, SessionModeState,
    UnstructuredCommandInput,
};
use scv_protocol::{CommandInfo, CommandKind, Mode};

/// The modes, with the session's current one.
pub fn state(current: Mode) -> SessionModeState {
    SessionModeState::new(
        current.as_str(),
        vec![
            SessionMode::new(Mode::Default.as_str(), "Default")
                .description("Every tool, as approvals and the sandbox allow".to_string()),
            SessionMode::new(Mode::Plan.as_str(), "Plan").description(
                "Reads and runs read-only commands; changes nothing; answers with a plan"
                    .to_string(),
            ),
        ],
    )
}

/// A mode id as the client sent it.
pub fn parse(id: &str) -> Option<Mode> {
    match id {
        "default" => Some(Mode::Default),
        "plan" => Some(Mode::Plan),
        _ => None,
    }
}

/// The session's commands and skills as ACP's available commands.
pub fn commands(infos: &[CommandInfo]) -> Vec<AvailableCommand> {
    infos
        .iter()
        .map(|info| {
            let description = match info.kind {
                CommandKind::Command => info.description.clone(),
                CommandKind::Skill => format!("{} (skill)", info.description),
            };
            let hint = info
                .argument_hint
                .clone()
                .unwrap_or_else(|| "arguments".to_string());
            AvailableCommand::new(info.name.clone(), description).input(
                AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(hint)),
            )
        })
        .collect()
}
