//! The numbers every section shares: the realtime clock the harness
//! stamps with, median and p99 of a sample, a median's 95% interval, the
//! printed table, and the units the table shows.

use std::time::{SystemTime, UNIX_EPOCH};

/// The realtime clock in µs: comparable across processes, unlike
/// `Instant`, so a harness's stamp and the bench's reading subtract.
pub(crate) fn realtime_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Median and p99 (nearest rank) of a sample.
pub(crate) fn stats(v: &[f64]) -> (f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    (rank(0.5), rank(0.99))
}

/// A sample's median and a distribution-free interval for it, with the
/// interval's coverage: the order statistics k and n+1-k of the sorted
/// sample, k the largest rank for which P(Binomial(n, 1/2) < k) <= 2.5%
/// (each bound lies above the true median as a fair coin's heads do), so
/// the coverage is at least 95%. None for fewer than 6 values, which no
/// such k bounds. The median is the mean of the middle two for even n.
pub(crate) fn median_ci(v: &[f64]) -> Option<MedianCi> {
    let n = v.len();
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    // P(B = i) for i = 0, 1, …, summed while the tail stays within 2.5%.
    let (mut pmf, mut below_k, mut k) = (0.5f64.powi(n as i32), 0.0, 0);
    while k < n / 2 && below_k + pmf <= 0.025 {
        below_k += pmf;
        pmf *= (n - k) as f64 / (k + 1) as f64;
        k += 1;
    }
    if k == 0 {
        return None;
    }
    Some(MedianCi {
        median: (v[(n - 1) / 2] + v[n / 2]) / 2.0,
        low: v[k - 1],
        high: v[n - k],
        coverage: 1.0 - 2.0 * below_k,
        ranks: (k, n + 1 - k),
    })
}

/// A median and its interval ([`median_ci`]).
pub(crate) struct MedianCi {
    /// The sample's median.
    pub(crate) median: f64,
    /// The interval's lower bound (the k-th smallest value).
    pub(crate) low: f64,
    /// Its upper bound (the k-th largest).
    pub(crate) high: f64,
    /// The chance the interval holds the true median (at least 0.95).
    pub(crate) coverage: f64,
    /// The bounds' ranks in the sorted sample, from 1.
    pub(crate) ranks: (usize, usize),
}

/// The printed result table.
#[derive(Default)]
pub(crate) struct Table {
    /// Each row as printed: figure, setup, median, p99, notes.
    rows: Vec<[String; 5]>,
}

impl Table {
    /// Prints one row at once (a long run shows its figures as it goes)
    /// and keeps it for the table at the end.
    pub(crate) fn row(
        &mut self,
        what: &str,
        setup: &str,
        median: String,
        p99: String,
        note: String,
    ) {
        let r = [what.into(), setup.into(), median, p99, note];
        println!("  {}", r.join(" | "));
        self.rows.push(r);
    }

    /// Prints every row as one aligned table.
    pub(crate) fn print(&self) {
        let head = ["figure", "setup", "median", "p99", "notes"];
        let mut w = head.map(str::len);
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let parts: Vec<String> = cells
                .iter()
                .enumerate()
                .map(|(i, c)| format!("{c:<width$}", width = w[i]))
                .collect();
            println!("| {} |", parts.join(" | "));
        };
        line(&head.map(String::from));
        line(&w.map(|n| "-".repeat(n)));
        for r in &self.rows {
            line(r);
        }
    }
}

/// A duration in ms, to the hundredth.
pub(crate) fn ms(x: f64) -> String {
    format!("{x:.2} ms")
}

/// A signed difference of durations in ms, to the hundredth.
pub(crate) fn signed_ms(x: f64) -> String {
    format!("{x:+.2} ms")
}

/// A duration in µs (to the tenth), or in ns below one µs.
pub(crate) fn us(x: f64) -> String {
    if x < 1.0 {
        format!("{:.0} ns", x * 1000.0)
    } else {
        format!("{x:.1} µs")
    }
}
