//! The limits a turn works within, read once from the configuration.

use crate::config::Config;
use scv_protocol::Risk;
use std::time::Duration;

#[derive(Clone)]
pub(crate) struct Limits {
    pub max_steps: u32,
    /// Compaction starts past this share of the context, in percent.
    pub compact_threshold_percent: u64,
    pub max_history_bytes: usize,
    /// Risk classes that run without asking.
    pub auto_approve: Vec<Risk>,
    pub bash_timeout: Duration,
    pub bash_max_timeout: Duration,
    pub tool_output_max_bytes: usize,
    /// Subagents running at once per turn (0: no `task` tool).
    pub max_subagents: usize,
    pub max_subagent_depth: u32,
    /// A subagent's step cap.
    pub subagent_max_steps: u32,
    /// A subagent's wall-clock cap.
    pub subagent_timeout: Duration,
    /// `web_fetch`: the allowlist, its cap and time limit.
    pub web: crate::egress::fetch::WebLimits,
}

impl Limits {
    pub(crate) fn from_config(config: &Config) -> Limits {
        let limits = &config.limits;
        Limits {
            max_steps: limits.max_steps,
            compact_threshold_percent: limits.compact_threshold_percent,
            max_history_bytes: limits.max_history_bytes,
            auto_approve: limits.auto_approve.clone(),
            bash_timeout: Duration::from_millis(limits.bash_timeout_ms.max(1)),
            bash_max_timeout: Duration::from_millis(limits.bash_max_timeout_ms.max(1)),
            tool_output_max_bytes: limits.tool_output_max_bytes,
            max_subagents: limits.max_subagents as usize,
            max_subagent_depth: limits.max_subagent_depth,
            subagent_max_steps: limits.subagent_max_steps,
            subagent_timeout: Duration::from_millis(limits.subagent_timeout_ms),
            web: config.sandbox.web.clone(),
        }
    }
}
