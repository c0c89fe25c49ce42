//! Prometheus metrics: the `agent_start` and `copy_wait` histograms and
//! sessions by state, rendered in the text exposition format.

use std::fmt::Write;
use std::sync::Mutex;

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

/// The service's metrics.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Harness startup, from startup permit to harness up; never the copy wait.
    pub agent_start: Histogram,
    /// How long launches waited for their project copy.
    pub copy_wait: Histogram,
}

impl Metrics {
    /// The text exposition, with `by_state` as the sessions gauge.
    pub fn render(&self, by_state: &[(&str, usize)]) -> String {
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
        for (state, n) in by_state {
            let _ = writeln!(out, "room_core_sessions{{state=\"{state}\"}} {n}");
        }
        out
    }
}
