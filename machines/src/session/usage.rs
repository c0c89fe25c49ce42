//! What a turn used, as its harness reported it: tokens by kind and, where
//! the harness says, the cost in USD. A harness is not trusted: a figure it
//! cannot have meant is not believed, and sums saturate.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The most tokens one figure of one report is believed to say (a million
/// million: far past any turn, or any thread's running total); a larger
/// figure reads as nothing.
pub const TOKENS_MAX: u64 = 1_000_000_000_000;

/// The most USD one report is believed to say; a larger cost reads as none.
pub const COST_MAX_USD: f64 = 1_000_000.0;

/// Picodollars in one USD.
const PICOS: f64 = 1e12;

/// An amount in USD, held in picodollars so that sums are exact and never
/// wrap (they saturate at about 18 million USD); written as a number of USD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Usd(u64);

impl Usd {
    /// A cost a harness reported, if it is believable: a finite number from
    /// 0 to [`COST_MAX_USD`].
    pub fn reported(usd: f64) -> Option<Usd> {
        (usd.is_finite() && (0.0..=COST_MAX_USD).contains(&usd)).then(|| Usd::of(usd))
    }

    /// The amount, rounded to the picodollar (saturating).
    fn of(usd: f64) -> Usd {
        // `as` saturates: a sum read back past u64 stays at its top.
        Usd((usd * PICOS).round() as u64)
    }

    /// In USD.
    pub fn usd(self) -> f64 {
        self.0 as f64 / PICOS
    }

    fn plus(self, other: Usd) -> Usd {
        Usd(self.0.saturating_add(other.0))
    }
}

impl Serialize for Usd {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.usd())
    }
}

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Usd, D::Error> {
        let usd = f64::deserialize(d)?;
        if usd.is_finite() && usd >= 0.0 {
            Ok(Usd::of(usd))
        } else {
            Err(serde::de::Error::custom(
                "a cost is a finite number, at least 0",
            ))
        }
    }
}

/// Tokens by kind and the cost: of one turn, or a session's total over its
/// turns. `input_tokens` is what was neither read from nor written to the
/// prompt cache, so the four counts add up to every token the model read
/// and wrote (codex's own input count, which includes the cached ones, is
/// split accordingly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens not read from or written to the cache.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens (reasoning included).
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens read from the cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the cache.
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// The cost in USD; none where the harness reports none (codex never
    /// does). A sum holds the costs that were reported.
    #[serde(default)]
    pub cost_usd: Option<Usd>,
}

/// What a harness said it used, in one of its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UsageReport {
    /// The turn's own figures (claude's `result`); a turn that reports more
    /// than once used their sum.
    Turn(Usage),
    /// The native session's running total so far, over all its turns and
    /// processes (codex's `thread/tokenUsage/updated`): the turn used what it grew by.
    Total(Usage),
}

impl Usage {
    /// Nothing at all (and no cost).
    pub fn is_none(&self) -> bool {
        *self == Usage::default()
    }

    /// The figures with what cannot be believed left out: a count over
    /// [`TOKENS_MAX`] reads as 0, a cost over [`COST_MAX_USD`] as none.
    pub fn believed(self) -> Usage {
        let count = |n: u64| if n > TOKENS_MAX { 0 } else { n };
        Usage {
            input_tokens: count(self.input_tokens),
            output_tokens: count(self.output_tokens),
            cache_read_tokens: count(self.cache_read_tokens),
            cache_write_tokens: count(self.cache_write_tokens),
            cost_usd: self.cost_usd.filter(|c| c.usd() <= COST_MAX_USD),
        }
    }

    /// Both added up (saturating); the cost is the sum of those reported,
    /// none if neither was.
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cache_read_tokens: self
                .cache_read_tokens
                .saturating_add(other.cache_read_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_add(other.cache_write_tokens),
            cost_usd: match (self.cost_usd, other.cost_usd) {
                (Some(a), Some(b)) => Some(a.plus(b)),
                (a, b) => a.or(b),
            },
        }
    }

    /// What a running total grew by since `earlier`; none when any figure
    /// went down (the total is not the one `earlier` was taken from). The
    /// cost is known only when both totals carry one.
    pub fn since(self, earlier: Usage) -> Option<Usage> {
        let cost_usd = match (self.cost_usd, earlier.cost_usd) {
            (Some(a), Some(b)) if a < b => return None,
            (Some(a), Some(b)) => Some(Usd(a.0 - b.0)),
            _ => None,
        };
        Some(Usage {
            input_tokens: self.input_tokens.checked_sub(earlier.input_tokens)?,
            output_tokens: self.output_tokens.checked_sub(earlier.output_tokens)?,
            cache_read_tokens: self
                .cache_read_tokens
                .checked_sub(earlier.cache_read_tokens)?,
            cache_write_tokens: self
                .cache_write_tokens
                .checked_sub(earlier.cache_write_tokens)?,
            cost_usd,
        })
    }
}

/// Token counts with no cost, for the tests' figures.
#[cfg(test)]
pub(crate) fn tokens(i: u64, o: u64, r: u64, w: u64) -> Usage {
    Usage {
        input_tokens: i,
        output_tokens: o,
        cache_read_tokens: r,
        cache_write_tokens: w,
        cost_usd: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cost_reads_and_writes_as_usd_and_sums_exactly() {
        let c = Usd::reported(0.000_175_6).unwrap();
        assert_eq!(serde_json::to_string(&c).unwrap(), "0.0001756");
        let back: Usd = serde_json::from_str("0.00017559999999999999").unwrap();
        assert_eq!(back, c);
        // Two turns' costs add up to their decimal sum, not a float's.
        let two = Usage {
            cost_usd: Some(c),
            ..Usage::default()
        }
        .plus(Usage {
            cost_usd: Some(Usd::reported(0.000_351_2).unwrap()),
            ..Usage::default()
        });
        assert_eq!(serde_json::to_string(&two.cost_usd).unwrap(), "0.0005268");
        for bad in [-0.01, f64::NAN, f64::INFINITY, COST_MAX_USD * 2.0] {
            assert_eq!(Usd::reported(bad), None, "{bad}");
        }
        assert!(serde_json::from_str::<Usd>("-1").is_err());
        // A total past the cap of one report still reads back.
        let big: Usd = serde_json::from_str("2000000").unwrap();
        assert_eq!(big.usd(), 2_000_000.0);
    }

    #[test]
    fn figures_past_belief_are_dropped_and_sums_saturate() {
        let u = tokens(TOKENS_MAX + 1, 5, TOKENS_MAX, 0).believed();
        assert_eq!(u, tokens(0, 5, TOKENS_MAX, 0));
        let huge = tokens(u64::MAX, 1, 0, 0);
        assert_eq!(huge.plus(huge).input_tokens, u64::MAX);
        let top = Usage {
            cost_usd: Some(Usd(u64::MAX)),
            ..Usage::default()
        };
        assert_eq!(top.plus(top).cost_usd, Some(Usd(u64::MAX)));
        assert_eq!(top.believed().cost_usd, None);
    }

    #[test]
    fn a_sum_keeps_the_costs_reported_and_a_growth_needs_both() {
        let with = |usd: f64| Usage {
            cost_usd: Usd::reported(usd),
            ..tokens(1, 1, 1, 1)
        };
        assert_eq!(
            with(1.0).plus(tokens(1, 1, 1, 1)).cost_usd,
            with(1.0).cost_usd
        );
        assert_eq!(tokens(1, 1, 1, 1).plus(tokens(1, 1, 1, 1)).cost_usd, None);
        assert_eq!(
            tokens(30, 15, 9, 21).since(tokens(10, 5, 3, 7)),
            Some(tokens(20, 10, 6, 14))
        );
        assert_eq!(tokens(30, 15, 9, 21).since(tokens(31, 0, 0, 0)), None);
        assert_eq!(
            with(3.0).since(with(1.0)).unwrap().cost_usd,
            with(2.0).cost_usd
        );
        assert_eq!(with(1.0).since(with(3.0)), None);
        assert_eq!(with(3.0).since(tokens(1, 1, 1, 1)).unwrap().cost_usd, None);
    }

    #[test]
    fn a_usage_serialises_with_every_field_and_reads_without_any() {
        let u = tokens(10, 5, 3, 7);
        assert_eq!(
            serde_json::to_string(&u).unwrap(),
            r#"{"input_tokens":10,"output_tokens":5,"cache_read_tokens":3,"cache_write_tokens":7,"cost_usd":null}"#
        );
        assert_eq!(
            serde_json::from_str::<Usage>("{}").unwrap(),
            Usage::default()
        );
        let r = UsageReport::Total(u);
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.starts_with(r#"{"total":{"input_tokens":10"#), "{json}");
    }
}
