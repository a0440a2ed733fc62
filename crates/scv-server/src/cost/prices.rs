//! The built-in price table: list prices in USD per million tokens, as the
//! providers publish them for their standard (non-batch, non-priority)
//! tier. Prices change; `[pricing."MODEL"]` in config.toml adds a model or
//! overrides one of these. A model that is not here and not configured has
//! no price: its tokens are shown, its cost is "no price", never $0.
//!
//! Checked 2025-10-15 against:
//! - OpenAI: <https://openai.com/api/pricing/> and
//!   <https://platform.openai.com/docs/pricing> (cached input is OpenAI's
//!   automatic prompt caching; there is no cache-write charge).
//! - Anthropic: <https://docs.claude.com/en/docs/about-claude/pricing>
//!   (cache write is the 5-minute cache write, 1.25 × input; cache read
//!   0.1 × input).
//! - DeepSeek: <https://api-docs.deepseek.com/quick_start/pricing>
//!   (DeepSeek-V3.2-Exp from 2025-09-29: cache hit 0.028, miss 0.28,
//!   output 0.42, for both `deepseek-chat` and `deepseek-reasoner`).
//!
//! Left out on purpose: Gemini (tiered by prompt length, and its cache
//! prices changed), OpenRouter's routes (its own per-route prices), and
//! local models (Ollama, LM Studio: configure `input = 0` … to see $0).

use super::Price;

const fn p(input: f64, cached_input: f64, cache_write: f64, output: f64) -> Price {
    Price {
        input,
        cached_input,
        cache_write,
        output,
    }
}

/// Model → price, per million tokens: input, cached input, cache write,
/// output.
pub(crate) const BUILTIN: &[(&str, Price)] = &[
    // OpenAI
    ("gpt-4.1", p(2.00, 0.50, 2.00, 8.00)),
    ("gpt-4.1-mini", p(0.40, 0.10, 0.40, 1.60)),
    ("gpt-4.1-nano", p(0.10, 0.025, 0.10, 0.40)),
    ("gpt-4o", p(2.50, 1.25, 2.50, 10.00)),
    ("gpt-4o-mini", p(0.15, 0.075, 0.15, 0.60)),
    ("gpt-5", p(1.25, 0.125, 1.25, 10.00)),
    ("gpt-5-mini", p(0.25, 0.025, 0.25, 2.00)),
    ("gpt-5-nano", p(0.05, 0.005, 0.05, 0.40)),
    ("o3", p(2.00, 0.50, 2.00, 8.00)),
    ("o4-mini", p(1.10, 0.275, 1.10, 4.40)),
    // Anthropic
    ("claude-sonnet-4-5", p(3.00, 0.30, 3.75, 15.00)),
    ("claude-sonnet-4-0", p(3.00, 0.30, 3.75, 15.00)),
    ("claude-sonnet-4", p(3.00, 0.30, 3.75, 15.00)),
    ("claude-opus-4-1", p(15.00, 1.50, 18.75, 75.00)),
    ("claude-opus-4-0", p(15.00, 1.50, 18.75, 75.00)),
    ("claude-opus-4", p(15.00, 1.50, 18.75, 75.00)),
    ("claude-haiku-4-5", p(1.00, 0.10, 1.25, 5.00)),
    ("claude-3-5-haiku", p(0.80, 0.08, 1.00, 4.00)),
    // DeepSeek
    ("deepseek-chat", p(0.28, 0.028, 0.28, 0.42)),
    ("deepseek-reasoner", p(0.28, 0.028, 0.28, 0.42)),
];
