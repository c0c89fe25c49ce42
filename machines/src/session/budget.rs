//! A session's budget: what its turns may use in all (`max_cost_usd`,
//! `max_tokens`); spending.rs holds the session to it.

use serde::{Deserialize, Serialize};

use super::usage::{Usage, Usd};

/// What a session's turns may use in all; none of either: no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// The most the turns may cost, as their harness reports cost.
    #[serde(default)]
    pub max_cost_usd: Option<Usd>,
    /// The most tokens (input, output, cache read and write) they may use.
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

impl Budget {
    /// No limit at all.
    pub fn is_unlimited(&self) -> bool {
        self.max_cost_usd.is_none() && self.max_tokens.is_none()
    }

    /// Whether `used` has reached a limit.
    pub fn spent_by(&self, used: &Usage) -> bool {
        let tokens = used
            .input_tokens
            .saturating_add(used.output_tokens)
            .saturating_add(used.cache_read_tokens)
            .saturating_add(used.cache_write_tokens);
        let cost = used.cost_usd.unwrap_or_default();
        self.max_tokens.is_some_and(|max| tokens >= max)
            || self.max_cost_usd.is_some_and(|max| cost >= max)
    }
}
