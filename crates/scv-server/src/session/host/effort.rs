//! `session.configure.reasoning_effort` (extension): how hard the model
//! reasons from the session's next turn — `low`, `medium`, `high`, `none`
//! (the field is not sent), or `default` (config.toml's
//! `reasoning_effort` again). Each wire maps it as config.toml's does.
//! The running turn keeps the effort it started with; the session's
//! journal does not keep it (a resumed session has config.toml's).

use super::SessionHost;
use crate::model::Effort;
use crate::session::reject::{invalid, Reject};
use std::sync::Arc;

/// An effort as the request names it: `Some(None)` is `none`.
fn parse(effort: &str) -> Option<Option<Effort>> {
    match effort {
        "low" => Some(Some(Effort::Low)),
        "medium" => Some(Some(Effort::Medium)),
        "high" => Some(Some(Effort::High)),
        "none" => Some(None),
        _ => None,
    }
}

impl SessionHost {
    /// Sets the session's reasoning effort (its `session.configured`
    /// follows, from `configure`).
    pub(super) fn set_effort(
        &mut self,
        session_id: &str,
        effort: &str,
        switching: bool,
    ) -> Result<(), Reject> {
        if switching {
            return Err(invalid(
                "reasoning_effort cannot come with provider or model: send it in its own session.configure",
            ));
        }
        let session = self.session(session_id)?;
        let effort = match effort {
            "default" => session.settings.config.provider.reasoning_effort,
            other => parse(other).ok_or_else(|| {
                invalid(format!(
                    "reasoning_effort must be low, medium, high, none or default (got `{other}`)"
                ))
            })?,
        };
        let mut settings = (*session.settings).clone();
        settings.provider.reasoning_effort = effort;
        session.settings = Arc::new(settings);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efforts() {
        assert_eq!(parse("high"), Some(Some(Effort::High)));
        assert_eq!(parse("none"), Some(None));
        assert_eq!(parse("max"), None);
    }
}
