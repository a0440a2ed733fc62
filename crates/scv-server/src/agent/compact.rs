//! Compaction of a turn's history: at the threshold before a request, once
//! more on a provider's context overflow, and `/compact [focus]` at once
//! (a turn that asks the model nothing else).

use super::*;

impl Turn {
    /// `/compact`: the history's older exchanges replaced by a summary at
    /// once, whatever its size; no step of the model's.
    pub(super) async fn compact_now(
        &mut self,
        history: &mut History,
        usage: &mut Option<Usage>,
        focus: String,
    ) -> Result<u32, Stop> {
        let plan = self.settings.plan();
        let registry = self.registry(plan).await;
        let (_, fixed_bytes) = self.system_prompt(&registry, plan).await;
        self.compact = Some(focus);
        let compacted = self.compact(fixed_bytes, history, usage, true).await;
        self.compact = None;
        compacted.map(|()| 0)
    }

    /// Replaces the oldest exchanges with a model-written summary when the
    /// estimated prompt passes the threshold (or always, when `force`).
    pub(super) async fn compact(
        &self,
        fixed_bytes: usize,
        history: &mut History,
        usage: &mut Option<Usage>,
        force: bool,
    ) -> Result<(), Stop> {
        let limit = self.settings.context_max_tokens;
        let threshold = limit * self.limits.compact_threshold_percent / 100;
        let before = history.estimate_tokens(fixed_bytes + history.bytes());
        if !force && before <= threshold {
            return Ok(());
        }
        let keep_tokens = (threshold / 2).saturating_sub(history.estimate_tokens(fixed_bytes));
        // `/compact` keeps only the latest exchange whole.
        let keep_bytes = match self.compact {
            Some(_) => 0,
            None => history.bytes_for_tokens(keep_tokens),
        };
        let Some(cut) = compaction::plan(history.messages(), keep_bytes) else {
            if force || before > limit {
                return Err(Stop::Failed(
                    FailureCode::ContextLimit,
                    format!("the request needs about {before} tokens; the context holds {limit} and nothing more can be compacted"),
                ));
            }
            return Ok(());
        };
        self.pre_compact_hooks().await?;
        let per_message = 8 * 1024;
        let transcript = compaction::transcript(
            &history.messages()[..cut],
            per_message,
            history.bytes_for_tokens(limit / 2),
        );
        let focus = match self.compact.as_deref() {
            Some(focus) if !focus.is_empty() => format!(" (focus on: {focus})"),
            _ => String::new(),
        };
        let request = [Message::user(format!(
            "Summarize this transcript{focus}:\n\n{transcript}"
        ))];
        let summary_bytes = Message::user(SUMMARY_SYSTEM_PROMPT).weight() + request[0].weight();
        let held = self.reserve(history.estimate_tokens(summary_bytes))?;
        let provider = &self.settings.provider;
        let span = self
            .trace
            .as_ref()
            .map(|t| t.request(held.max_output_tokens.unwrap_or(provider.max_output_tokens)));
        let summary = async {
            let stream = self
                .open(&Request {
                    system: SUMMARY_SYSTEM_PROMPT,
                    history: &request,
                    rendered: None,
                    tools: &[],
                    max_output_tokens: held.max_output_tokens,
                })
                .await?;
            Ok::<Reply, Stop>(self.cancellable(stream.finish()).await??)
        }
        .await;
        traced(span, &summary, &self.spending);
        let reply = summary?;
        self.spent(held, reply.usage).await?;
        if let Some(step_usage) = reply.usage {
            add_step_usage(usage, step_usage);
        }
        if reply.end == End::Refused {
            return Err(Stop::Failed(
                FailureCode::ProviderError,
                "the model declined to write the summary for compaction".into(),
            ));
        }
        let summary = reply
            .message
            .text
            .unwrap_or_default()
            .as_str()
            .trim()
            .to_string();
        if summary.is_empty() {
            return Err(Stop::Failed(
                FailureCode::ProviderError,
                "the summary request returned no text".into(),
            ));
        }
        let messages = history.split_off(0);
        let (kept, removed) = compaction::apply(messages, cut, summary);
        history.replace(kept);
        let after = history.estimate_tokens(fixed_bytes + history.bytes());
        self.emit(EventBody::ContextCompacted {
            before_tokens: before,
            after_tokens: after,
            removed_messages: removed as u64,
        })
        .await?;
        if after > limit {
            return Err(Stop::Failed(
                FailureCode::ContextLimit,
                format!("the request needs about {after} tokens after compaction; the context holds {limit}"),
            ));
        }
        Ok(())
    }
}
