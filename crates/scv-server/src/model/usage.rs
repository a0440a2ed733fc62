//! Tokens a provider reported.

/// Tokens used by one provider request, or summed over several, kept apart
/// by kind: the cache figures and reasoning tokens a cost report needs are
/// here, while `turn.completed` reports the two totals
/// ([`Usage::input_tokens`], [`Usage::output_tokens`]). A wire fills what
/// it reads; one that reports no breakdown puts all its input in `input`.
///
/// The figures are the provider's, so every sum saturates: a hostile or
/// broken provider cannot overflow them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Input tokens neither read from nor written to a prompt cache.
    pub input: u64,
    /// Input tokens read from a prompt cache (Anthropic
    /// `cache_read_input_tokens`).
    pub cache_read: u64,
    /// Input tokens written to a prompt cache (Anthropic
    /// `cache_creation_input_tokens`).
    pub cache_write: u64,
    /// Output tokens, reasoning included.
    pub output: u64,
    /// Of `output`, the tokens spent reasoning.
    pub reasoning: u64,
}

impl Usage {
    /// By kind, as the protocol's `usage_detail` and the journal say it.
    pub(crate) fn detail(self) -> scv_protocol::UsageDetail {
        scv_protocol::UsageDetail {
            input: self.input,
            cache_read: self.cache_read,
            cache_write: self.cache_write,
            output: self.output,
            reasoning: self.reasoning,
        }
    }

    /// Every input token, cached or not: what `turn.completed` reports as
    /// `input_tokens`, and what the token estimate is calibrated against.
    pub fn input_tokens(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }

    /// What `turn.completed` reports as `output_tokens`.
    pub fn output_tokens(&self) -> u64 {
        self.output
    }

    /// Adds `other`, field by field, saturating.
    pub fn add(&mut self, other: Usage) {
        self.input = self.input.saturating_add(other.input);
        self.cache_read = self.cache_read.saturating_add(other.cache_read);
        self.cache_write = self.cache_write.saturating_add(other.cache_write);
        self.output = self.output.saturating_add(other.output);
        self.reasoning = self.reasoning.saturating_add(other.reasoning);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_and_sums_saturate() {
        let huge = Usage {
            input: u64::MAX,
            cache_read: 1,
            cache_write: u64::MAX,
            output: u64::MAX - 1,
            reasoning: 7,
        };
        assert_eq!(huge.input_tokens(), u64::MAX);
        let mut total = Usage::default();
        total.add(huge);
        total.add(huge);
        assert_eq!(
            total,
            Usage {
                input: u64::MAX,
                cache_read: 2,
                cache_write: u64::MAX,
                output: u64::MAX,
                reasoning: 14,
            }
        );
        let small = Usage {
            input: 25,
            cache_read: 1000,
            cache_write: 100,
            ..Usage::default()
        };
        assert_eq!(small.input_tokens(), 1125);
    }
}
