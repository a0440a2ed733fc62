//! A session's configuration options as ACP shows them
//! (`configOptions`, `session/set_config_option`):
//! - `model` (category `model`): the session's model, chosen among the
//!   ids its provider lists (the daemon's `models.list`, at most 500; the
//!   current model alone until the list is known, or when the provider
//!   lists none);
//! - `mode` (category `mode`): `default` or `plan`, as `session/set_mode`;
//! - `reasoning` (category `thought_level`): `default` (config.toml's
//!   `reasoning_effort`), `none`, `low`, `medium`, `high`.
//!
//! Each change is a `session.configure` of the daemon, so it reaches the
//! next provider request exactly as the TUI's `/model` and plan mode do
//! (the effort as config.toml's `reasoning_effort` would).

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption,
};
use scv_protocol::Mode;

/// The model option's id.
pub const MODEL: &str = "model";
/// The mode option's id.
pub const MODE: &str = "mode";
/// The reasoning effort option's id.
pub const REASONING: &str = "reasoning";
/// Its values; `default` is config.toml's.
pub const EFFORTS: [&str; 5] = ["default", "none", "low", "medium", "high"];

/// What a `session/set_config_option` asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    Model(String),
    Mode(Mode),
    Effort(String),
}

/// The options of a session on `model` (its provider listing `models`)
/// in `mode`.
pub fn options(
    model: &str,
    models: &[String],
    mode: Mode,
    effort: &str,
) -> Vec<SessionConfigOption> {
    let mut ids: Vec<&str> = models.iter().map(String::as_str).collect();
    if !ids.contains(&model) {
        ids.insert(0, model);
    }
    let models: Vec<SessionConfigSelectOption> = ids
        .into_iter()
        .map(|id| SessionConfigSelectOption::new(id.to_string(), id.to_string()))
        .collect();
    let modes = vec![
        SessionConfigSelectOption::new(Mode::Default.as_str(), "Default")
            .description("Every tool, as approvals and the sandbox allow".to_string()),
        SessionConfigSelectOption::new(Mode::Plan.as_str(), "Plan")
            .description("Reads only; changes nothing; answers with a plan".to_string()),
    ];
    vec![
        SessionConfigOption::select(MODEL, "Model", model.to_string(), models)
            .category(SessionConfigOptionCategory::Model)
            .description("The model the next turns use".to_string()),
        SessionConfigOption::select(MODE, "Mode", mode.as_str(), modes)
            .category(SessionConfigOptionCategory::Mode),
        SessionConfigOption::select(
            REASONING,
            "Reasoning effort",
            effort.to_string(),
            EFFORTS
                .iter()
                .map(|e| SessionConfigSelectOption::new(e.to_string(), e.to_string()))
                .collect::<Vec<_>>(),
        )
        .category(SessionConfigOptionCategory::ThoughtLevel)
        .description(
            "How hard the model reasons (default: config.toml's reasoning_effort)".to_string(),
        ),
    ]
}

/// The change `config_id` = `value` asks for, or why it cannot be made.
/// A model must be one the provider lists (when it lists any).
pub fn parse(
    config_id: &str,
    value: &SessionConfigOptionValue,
    model: &str,
    models: &[String],
) -> Result<Change, String> {
    let Some(value) = value.as_value_id() else {
        return Err(format!(
            "option `{config_id}` takes a value id, not a boolean"
        ));
    };
    let value = &*value.0;
    match config_id {
        MODEL => {
            let known = value == model || models.is_empty() || models.iter().any(|m| m == value);
            if !known {
                return Err(format!(
                    "unknown model `{value}` (the provider lists {} models)",
                    models.len()
                ));
            }
            Ok(Change::Model(value.to_string()))
        }
        MODE => crate::modes::parse(value)
            .map(Change::Mode)
            .ok_or_else(|| format!("unknown mode `{value}` (modes: default, plan)")),
        REASONING if EFFORTS.contains(&value) => Ok(Change::Effort(value.to_string())),
        REASONING => Err(format!(
            "unknown reasoning effort `{value}` (efforts: {})",
            EFFORTS.join(", ")
        )),
        other => Err(format!(
            "unknown config option `{other}` (options: model, mode, reasoning)"
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn options_and_changes() {
        let models = vec!["a".to_string(), "b".to_string()];
        let json = serde_json::to_value(options("m", &models, Mode::Plan, "high")).unwrap();
        assert_eq!(json[2]["category"], "thought_level");
        assert_eq!(json[2]["currentValue"], "high");
        assert_eq!(json[0]["id"], "model");
        assert_eq!(json[0]["category"], "model");
        assert_eq!(json[0]["currentValue"], "m");
        let ids: Vec<&str> = json[0]["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["value"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["m", "a", "b"]);
        assert_eq!(json[1]["currentValue"], "plan");
        let value = |v: &str| SessionConfigOptionValue::value_id(v.to_string());
        assert_eq!(
            parse(MODEL, &value("b"), "m", &models),
            Ok(Change::Model("b".into()))
        );
        assert!(parse(MODEL, &value("z"), "m", &models)
            .unwrap_err()
            .contains("unknown model"));
        assert_eq!(
            parse(MODEL, &value("z"), "m", &[]),
            Ok(Change::Model("z".into()))
        );
        assert_eq!(
            parse(MODE, &value("plan"), "m", &[]),
            Ok(Change::Mode(Mode::Plan))
        );
        assert!(parse("effort", &value("x"), "m", &[]).is_err());
        assert_eq!(
            parse(REASONING, &value("low"), "m", &[]),
            Ok(Change::Effort("low".into()))
        );
        assert!(parse(REASONING, &value("max"), "m", &[]).is_err());
        let boolean = SessionConfigOptionValue::boolean(true);
        assert!(parse(MODE, &boolean, "m", &[]).is_err());
    }
}
