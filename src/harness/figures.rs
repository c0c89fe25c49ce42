//! The figures a harness prints, read as untrusted: a count that is not a
//! whole number from 0 to `TOKENS_MAX` reads as 0, a cost that is not a
//! believable number of USD as none.

use room_machines::session::usage::TOKENS_MAX;
use room_machines::session::Usd;
use serde_json::Value;

/// A token count.
pub(crate) fn count(v: &Value) -> u64 {
    v.as_u64().filter(|n| *n <= TOKENS_MAX).unwrap_or(0)
}

/// A cost in USD.
pub(crate) fn cost(v: &Value) -> Option<Usd> {
    v.as_f64().and_then(Usd::reported)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_cannot_be_a_figure_reads_as_nothing() {
        assert_eq!(count(&json!(12)), 12);
        for bad in [
            json!(-1),
            json!(1.5),
            json!("7"),
            json!(null),
            json!(TOKENS_MAX + 1),
        ] {
            assert_eq!(count(&bad), 0, "{bad}");
        }
        assert_eq!(cost(&json!(0.5)).map(Usd::usd), Some(0.5));
        for bad in [json!(-0.1), json!("0.1"), json!(null), json!(1e300)] {
            assert_eq!(cost(&bad), None, "{bad}");
        }
    }
}
