//! Prometheus metrics: the `agent_start` and `copy_wait` histograms,
//! counters (turns by outcome, room-cli calls by decision, tokens by
//! harness and kind, events written) and gauges (sessions by state, startup
//! permits, open streams), rendered in the text exposition format.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use room_machines::session::Usage;

/// Bucket bounds in seconds, from 10 ms to the 5-minute copy limit.
const BUCKETS: [f64; 12] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 60.0, 300.0,
];

/// A cumulative histogram of durations.
#[derive(Debug, Default)]
pub struct Histogram {
    inner: Mutex<(Vec<u64>, u64, f64)>,
}

impl Histogram {
    /// Records a duration in milliseconds.
    pub fn observe_ms(&self, ms: u64) {
        let secs = ms as f64 / 1000.0;
        let mut h = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if h.0.is_empty() {
            h.0 = vec![0; BUCKETS.len()];
        }
        for (i, bound) in BUCKETS.iter().enumerate() {
            if secs <= *bound {
                h.0[i] += 1;
            }
        }
        h.1 += 1;
        h.2 += secs;
    }

    fn render(&self, name: &str, help: &str, out: &mut String) {
        let h = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} histogram");
        for (i, bound) in BUCKETS.iter().enumerate() {
            let n = h.0.get(i).copied().unwrap_or(0);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {n}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", h.1);
        let _ = writeln!(out, "{name}_sum {}", h.2);
        let _ = writeln!(out, "{name}_count {}", h.1);
    }
}

/// A counter per label value, from a fixed list of values.
#[derive(Debug)]
pub struct Counters {
    labels: &'static [&'static str],
    counts: Vec<AtomicU64>,
}

impl Counters {
    /// Counters for `labels`, all 0.
    pub fn new(labels: &'static [&'static str]) -> Counters {
        Counters {
            labels,
            counts: labels.iter().map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Adds one to `label`'s counter (a label not in the list is a bug: it
    /// is logged and dropped).
    pub fn inc(&self, label: &str) {
        match self.labels.iter().position(|l| *l == label) {
            Some(i) => {
                self.counts[i].fetch_add(1, Ordering::Relaxed);
            }
            None => log::error!("no metric label {label:?}"),
        }
    }

    /// `label`'s count.
    pub fn get(&self, label: &str) -> u64 {
        self.labels
            .iter()
            .position(|l| *l == label)
            .map_or(0, |i| self.counts[i].load(Ordering::Relaxed))
    }

    fn render(&self, name: &str, label: &str, help: &str, out: &mut String) {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} counter");
        for (l, n) in self.labels.iter().zip(&self.counts) {
            let n = n.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}{{{label}=\"{l}\"}} {n}");
        }
    }
}

/// The harnesses, as `room_core_tokens_total` labels them.
pub(crate) const HARNESSES: [&str; 3] = ["claude", "codex", "acp"];

/// The kinds of token, as `room_core_tokens_total` labels them.
pub(crate) const TOKEN_KINDS: [&str; 4] = ["input", "output", "cache_read", "cache_write"];

/// Tokens the turns used, by harness and kind ([`HARNESSES`] ×
/// [`TOKEN_KINDS`]); a count saturates rather than wrap.
#[derive(Debug, Default)]
pub struct Tokens {
    counts: [[AtomicU64; TOKEN_KINDS.len()]; HARNESSES.len()],
}

impl Tokens {
    /// Counts what a turn of `harness` used (a harness not in the list is
    /// a bug: it is logged and dropped).
    pub fn add(&self, harness: &str, used: &Usage) {
        let Some(h) = HARNESSES.iter().position(|n| *n == harness) else {
            log::error!("no metric label {harness:?}");
            return;
        };
        let by_kind = [
            used.input_tokens,
            used.output_tokens,
            used.cache_read_tokens,
            used.cache_write_tokens,
        ];
        for (count, n) in self.counts[h].iter().zip(by_kind) {
            let _ = count.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                Some(c.saturating_add(n))
            });
        }
    }

    /// The count of `harness` and `kind` (0 for a label not in the lists).
    pub fn get(&self, harness: &str, kind: &str) -> u64 {
        let h = HARNESSES.iter().position(|n| *n == harness);
        let k = TOKEN_KINDS.iter().position(|n| *n == kind);
        h.zip(k)
            .map_or(0, |(h, k)| self.counts[h][k].load(Ordering::Relaxed))
    }

    fn render(&self, out: &mut String) {
        let name = "room_core_tokens_total";
        let _ = writeln!(
            out,
            "# HELP {name} Tokens the turns used, as their harnesses reported, by harness and kind (input: neither read from nor written to the cache)."
        );
        let _ = writeln!(out, "# TYPE {name} counter");
        for harness in HARNESSES {
            for kind in TOKEN_KINDS {
                let n = self.get(harness, kind);
                let _ = writeln!(out, "{name}{{harness=\"{harness}\",kind=\"{kind}\"}} {n}");
            }
        }
    }
}

/// How a turn ended, as `room_core_turns_total` counts it.
pub(crate) const TURN_OUTCOMES: &[&str] = &[
    "succeeded",
    "failed",
    "stopped",
    "interrupted",
    "closed",
    "restarted",
];

/// What became of a room-cli call, as `room_core_agent_calls_total` counts
/// it: the policy's decision (`forwarded`, `refused`, `local`), its own
/// help, or a usage error.
pub(crate) const AGENT_DECISIONS: &[&str] =
    &["forwarded", "refused", "local", "help", "usage_error"];

/// The service's metrics.
#[derive(Debug)]
pub struct Metrics {
    /// Harness startup, from startup permit to harness up; never the copy wait.
    pub agent_start: Histogram,
    /// How long launches waited for their project copy.
    pub copy_wait: Histogram,
    /// Turns by outcome ([`TURN_OUTCOMES`]).
    pub turns: Counters,
    /// room-cli calls by decision ([`AGENT_DECISIONS`]).
    pub agent_calls: Counters,
    /// Tokens by harness and kind.
    pub tokens: Tokens,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            agent_start: Histogram::default(),
            copy_wait: Histogram::default(),
            turns: Counters::new(TURN_OUTCOMES),
            agent_calls: Counters::new(AGENT_DECISIONS),
            tokens: Tokens::default(),
        }
    }
}

/// The gauges and totals read from the running service at render time.
#[derive(Debug, Default)]
pub struct Snapshot<'a> {
    /// Sessions by state.
    pub by_state: &'a [(&'a str, usize)],
    /// Startup permits held.
    pub permits_in_use: usize,
    /// Launches queued for a permit.
    pub permits_queued: usize,
    /// Journal events written since start.
    pub events_written: u64,
    /// Event streams open now.
    pub streams_open: usize,
}

impl Metrics {
    /// The text exposition, with the gauges of `now`.
    pub fn render(&self, now: &Snapshot) -> String {
        let mut out = String::new();
        self.agent_start.render(
            "room_core_agent_start_seconds",
            "Harness startup time, from startup permit to harness up (the copy wait excluded).",
            &mut out,
        );
        self.copy_wait.render(
            "room_core_copy_wait_seconds",
            "How long launches waited for their project copy to land.",
            &mut out,
        );
        out.push_str("# HELP room_core_sessions Sessions by state.\n");
        out.push_str("# TYPE room_core_sessions gauge\n");
        for (state, n) in now.by_state {
            let _ = writeln!(out, "room_core_sessions{{state=\"{state}\"}} {n}");
        }
        self.turns.render(
            "room_core_turns_total",
            "outcome",
            "Turns that ended, by outcome (stopped, interrupted, closed, restarted: ended on purpose).",
            &mut out,
        );
        self.agent_calls.render(
            "room_core_agent_calls_total",
            "decision",
            "room-cli calls on the agent socket, by what became of them.",
            &mut out,
        );
        self.tokens.render(&mut out);
        let singles = [
            (
                "room_core_events_written_total",
                "counter",
                "Events appended to session journals since the service started.",
                now.events_written,
            ),
            (
                "room_core_permits_in_use",
                "gauge",
                "Startup permits held by launches.",
                now.permits_in_use as u64,
            ),
            (
                "room_core_permits_queued",
                "gauge",
                "Launches queued for a startup permit.",
                now.permits_queued as u64,
            ),
            (
                "room_core_streams_open",
                "gauge",
                "Event streams (GET /v1/sessions/{id}/stream) open now.",
                now.streams_open as u64,
            ),
        ];
        for (name, kind, help, value) in singles {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            let _ = writeln!(out, "{name} {value}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_counted_by_harness_and_kind_and_saturate() {
        let t = Tokens::default();
        let used = Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_tokens: 3,
            cache_write_tokens: 7,
            cost_usd: None,
        };
        t.add("claude", &used);
        t.add("claude", &used);
        t.add("nobody", &used);
        assert_eq!(t.get("claude", "input"), 20);
        assert_eq!(t.get("claude", "cache_write"), 14);
        assert_eq!(t.get("codex", "output"), 0);
        t.add(
            "codex",
            &Usage {
                output_tokens: u64::MAX,
                ..used
            },
        );
        t.add("codex", &used);
        assert_eq!(t.get("codex", "output"), u64::MAX);
        let mut out = String::new();
        t.render(&mut out);
        assert!(
            out.contains("\nroom_core_tokens_total{harness=\"claude\",kind=\"cache_read\"} 6\n")
        );
        assert_eq!(out.lines().filter(|l| !l.starts_with('#')).count(), 12);
    }
}
