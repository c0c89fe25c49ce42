//! Section 1, `lag`: from a copy's `ready` written to its harness
//! running, with the inotify watch and with 250 ms polling, beside 1 to
//! 10,000 other waiting starts, and a grandparent renamed into place; the
//! spawn floor under it (the same harness spawned straight from the bench).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use room_kit::status_file;
use serde_json::json;

use crate::service::{await_file, tmpfs_state, with, Core};
use crate::stats::{ms, realtime_us, stats, Table};
use crate::STAMP_ENV;

/// Runs per waiting count with the watch (and of the spawn floor).
const LAG_RUNS_WATCH: usize = 200;
/// Runs per waiting count with polling (each waits up to 250 ms).
const LAG_RUNS_POLL: usize = 100;
/// Other starts waiting while the lag is measured. Polling stops at 1,000:
/// 10,000 starts polled every 250 ms keep the service busy (see the
/// waiting section), which is no lag measurement.
const LAG_WAITING: [usize; 3] = [1, 1_000, 10_000];
/// The most waiting starts the polling half runs beside.
const LAG_WAITING_POLL: usize = 1_000;

impl Core {
    /// Starts a promised copy into `folder` (its harness stamps as `name`,
    /// the folder's own name) and returns its ID once it waits.
    fn start_promised(&self, name: &str, folder: &Path) -> String {
        let v = self.start_session(&json!({
            "workspace": format!("ws-{name}"),
            "folder": folder,
            "harness": "codex",
            "project_copy": true,
            "prompt": "go",
        }));
        let id = v["id"].as_str().unwrap().to_string();
        self.await_waiting(&id);
        id
    }

    /// When (realtime µs) the harness stamped as `name` ran; returns once
    /// session `id` has finished (its turn ended, its record written), so
    /// the next wake is measured on its own.
    fn harness_ran(&self, name: &str, id: &str) -> u64 {
        let stamp = await_file(&self.stamps.join(name), Duration::from_secs(5));
        self.await_state(id, "idle");
        stamp.trim().parse().unwrap()
    }
}

/// How long run `n` waits before its change lands: at a varying phase of
/// the 250 ms poll when polling; a short varying pause with the watch.
fn pause(watch: bool, n: usize) -> u64 {
    if watch {
        (n as u64 * 7) % 20
    } else {
        (n as u64 * 37) % 250
    }
}

/// One wake: the app's order (the mark says copying, the files land in the
/// folder, then the mark is rewritten in place to ready), `pause` ms after
/// the files land. Returns the lag from the writer's close of `ready` to
/// the harness's stamp, and how long the write itself took (ms).
fn wake_once(svc: &Core, name: &str, pause: u64) -> (f64, f64) {
    let folder = svc.folder(name);
    let id = svc.start_promised(name, &folder);
    let status = status_file(&folder);
    std::fs::write(&status, "copying\n").unwrap();
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("AGENTS.md"), "landed\n").unwrap();
    std::thread::sleep(Duration::from_millis(pause));
    let before = realtime_us();
    std::fs::write(&status, "ready\n").unwrap();
    let closed = realtime_us();
    let started = svc.harness_ran(name, &id);
    (
        started.saturating_sub(closed) as f64 / 1000.0,
        closed.saturating_sub(before) as f64 / 1000.0,
    )
}

/// One wake by a grandparent renamed into place over one renamed away:
/// `<g>/sandbox/<name>` says copying; a copy of it that says ready is
/// renamed over `<g>` after `<g>` is renamed away. Returns the lag from
/// the second rename to the harness's stamp (ms).
fn grandparent_once(svc: &Core, name: &str, pause: u64) -> f64 {
    let g = svc.folder(&format!("{name}-g"));
    let folder = g.join("sandbox").join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(status_file(&folder), "copying\n").unwrap();
    let id = svc.start_promised(name, &folder);
    let staged = svc.folder(&format!("{name}-g.new"));
    let staged_folder = staged.join("sandbox").join(name);
    std::fs::create_dir_all(&staged_folder).unwrap();
    std::fs::write(staged_folder.join("AGENTS.md"), "landed\n").unwrap();
    std::fs::write(status_file(&staged_folder), "ready\n").unwrap();
    std::thread::sleep(Duration::from_millis(pause));
    std::fs::rename(&g, svc.folder(&format!("{name}-g.old"))).unwrap();
    std::fs::rename(&staged, &g).unwrap();
    let renamed = realtime_us();
    let started = svc.harness_ran(name, &id);
    started.saturating_sub(renamed) as f64 / 1000.0
}

/// Where the floor's harness runs and stamps (removed after the section).
fn spawn_root() -> PathBuf {
    std::env::temp_dir().join(format!("room-core-bench-spawn-{}", std::process::id()))
}

/// One spawn of the stamp harness straight from the bench: spawn to stamp (ms).
fn spawn_floor_once() -> f64 {
    let root = spawn_root();
    let (stamps, cwd) = (root.join("stamps"), root.join("spawn"));
    std::fs::create_dir_all(&stamps).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let _ = std::fs::remove_file(stamps.join("spawn"));
    let before = realtime_us();
    let out = Command::new(std::env::current_exe().unwrap())
        .current_dir(&cwd)
        .env(STAMP_ENV, &stamps)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("spawn the harness");
    assert!(out.status.success());
    let at: u64 = std::fs::read_to_string(stamps.join("spawn"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    at.saturating_sub(before) as f64 / 1000.0
}

/// The section: the floor, then the wakes with each kind of watching.
pub(crate) fn lag(table: &mut Table) {
    println!("\n1. wake lag: \"ready\" written -> harness process running");
    // The floor: the same harness spawned straight from this process (std's
    // posix_spawn, as the service does), from spawn to its stamp; measured
    // alone here, and again between the wakes below (this VM's speed drifts
    // with the load other work puts on it).
    let floor: Vec<f64> = (0..LAG_RUNS_WATCH).map(|_| spawn_floor_once()).collect();
    let (p50, p99) = stats(&floor);
    table.row(
        "harness spawn alone",
        "posix_spawn of the stamp harness from the bench, no service",
        ms(p50),
        ms(p99),
        format!("{LAG_RUNS_WATCH} runs; the floor under the wake lag (exec, dynamic loading)"),
    );
    let mut medians = std::collections::HashMap::new();
    let modes: &[bool] = if std::env::var_os("ROOM_BENCH_LAG_WATCH_ONLY").is_some() {
        &[true]
    } else {
        &[true, false]
    };
    let mode = |watch: bool| {
        if watch {
            "inotify watch"
        } else {
            "250 ms polling"
        }
    };
    for &watch in modes {
        let svc = Core::start(with(
            json!({"watch": watch, "copy_wait_ms": 3_600_000}),
            tmpfs_state("lag"),
        ));
        let mut waiting = 0;
        for others in LAG_WAITING {
            if !watch && others > LAG_WAITING_POLL {
                break;
            }
            svc.add_waiting(waiting, others);
            waiting = others;
            // Let the new waits settle (with polling: into their rhythm).
            std::thread::sleep(Duration::from_millis(500));
            let runs = if watch { LAG_RUNS_WATCH } else { LAG_RUNS_POLL };
            let mut beside = Vec::new();
            let (lags, writes): (Vec<f64>, Vec<f64>) = (0..runs)
                .map(|n| {
                    if watch {
                        beside.push(spawn_floor_once());
                    }
                    wake_once(&svc, &format!("lag-{others}-{n}"), pause(watch, n))
                })
                .unzip();
            let (p50, p99) = stats(&lags);
            let (write_p50, _) = stats(&writes);
            medians.insert((watch, others), p50);
            let note = if watch {
                let (beside_p50, _) = stats(&beside);
                // Each wake less the floor spawn just before it: drift in
                // this VM's speed cancels out.
                let paired: Vec<f64> = lags.iter().zip(&beside).map(|(l, f)| l - f).collect();
                let (over, _) = stats(&paired);
                format!(
                    "{runs} runs; {over:+.2} ms over the spawn floor (median of each wake less the floor spawn just before it; target within 0.5 ms); floor between these wakes {}; the writer's own write+close, before this, {}",
                    ms(beside_p50),
                    ms(write_p50)
                )
            } else {
                let on = medians.get(&(true, others)).copied().unwrap_or(f64::NAN);
                format!("{runs} runs; polling / watch median = {:.0}x", p50 / on)
            };
            table.row(
                "wake lag",
                &format!("{}, {others} other starts waiting", mode(watch)),
                ms(p50),
                ms(p99),
                note,
            );
        }
        let runs = if watch { LAG_RUNS_WATCH } else { LAG_RUNS_POLL };
        let lags: Vec<f64> = (0..runs)
            .map(|n| grandparent_once(&svc, &format!("gp-{n}"), pause(watch, n)))
            .collect();
        let (p50, p99) = stats(&lags);
        medians.insert((watch, 0), p50);
        let note = if watch {
            format!("{runs} runs; target p50 < 10 ms")
        } else {
            let on = medians.get(&(true, 0)).copied().unwrap_or(f64::NAN);
            format!("{runs} runs; polling / watch median = {:.0}x", p50 / on)
        };
        table.row(
            "grandparent-rename wake",
            &format!(
                "{}, a grandparent renamed over one renamed away, {waiting} other starts waiting",
                mode(watch)
            ),
            ms(p50),
            ms(p99),
            note,
        );
    }
    let _ = std::fs::remove_dir_all(spawn_root());
}
