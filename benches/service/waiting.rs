//! Section 2, `waiting`: what 1,000 and 10,000 starts waiting for copies
//! that never land cost the service (CPU from the scheduler, RSS, inotify
//! watches), with the watch and with polling.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::service::{tmpfs_state, with, Core};
use crate::stats::Table;

/// The waiting starts measured, added in turn to one service.
const WAITING: [usize; 2] = [1_000, 10_000];
/// How long each count is measured.
const WINDOW: Duration = Duration::from_secs(30);
/// 10,000 starts polled keep a core busy; a shorter window says as much.
const WINDOW_POLL_10K: Duration = Duration::from_secs(10);

/// The section: for each kind of watching, each count, one window.
pub(crate) fn waiting(table: &mut Table) {
    let max_watches = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
        .map_or_else(|_| "?".into(), |s| s.trim().to_string());
    println!(
        "\n2. waiting cost: {:?} promised copies that never land, each in its own sandbox folder (max_user_watches {max_watches})",
        WAITING
    );
    for watch in [true, false] {
        let svc = Core::start(with(
            json!({"watch": watch, "copy_wait_ms": 3_600_000}),
            tmpfs_state("waiting"),
        ));
        let (_, idle_rss) = svc.cpu_and_rss();
        let mut waiting = 0;
        for count in WAITING {
            svc.add_waiting(waiting, count);
            waiting = count;
            std::thread::sleep(Duration::from_secs(2));
            let window = if !watch && count > 1_000 {
                WINDOW_POLL_10K
            } else {
                WINDOW
            };
            let (cpu0, _) = svc.cpu_and_rss();
            let threads0 = svc.cpu_threads();
            let t0 = Instant::now();
            std::thread::sleep(window);
            let (cpu1, rss) = svc.cpu_and_rss();
            let exact_secs = svc.cpu_since(&threads0);
            let secs = t0.elapsed().as_secs_f64();
            let ticks = (cpu1 - cpu0) / secs * 100.0;
            let exact = exact_secs / secs * 100.0;
            let states = svc.states();
            assert_eq!(
                states.get("pending").copied(),
                Some(count as u64),
                "{states:?}"
            );
            let target = match (watch, count) {
                (true, 1_000) => "; target < 0.1%",
                (true, _) => "; target < 0.5%",
                _ => "",
            };
            table.row(
                "waiting cost",
                &format!(
                    "{}, {count} starts waiting",
                    if watch { "inotify watch" } else { "250 ms polling" }
                ),
                format!("{exact:.4}% of a core"),
                "-".into(),
                format!(
                    "scheduler's run time over a {secs:.0} s window: {:.2} ms of CPU (utime+stime: {ticks:.2}%){target}; RSS {:.1} MiB ({:.1} MiB before the starts; target < 50 MiB); {} inotify watches",
                    exact_secs * 1000.0,
                    rss as f64 / 1024.0,
                    idle_rss as f64 / 1024.0,
                    svc.inotify_watches()
                ),
            );
        }
    }
}
