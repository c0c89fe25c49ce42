//! Section 11, `lingering`: the service's threads and memory with 1,000
//! harness processes lingering at once (each warm for its next prompt),
//! beside the same service idle and beside a thread per pipe and exit (the
//! design before the poller, four a harness).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::service::Core;
use crate::stats::Table;

/// Harnesses lingering at once.
const LINGERING: usize = 1_000;

/// Threads and RSS of the service idle, then with [`LINGERING`] harnesses
/// lingering (the bench binary playing codex: each session's launch turn
/// runs, and its process stays for the next prompt). The goal: at most 32
/// threads and under 64 MiB whatever the count, where a thread per pipe and
/// exit would hold four threads a harness.
pub(crate) fn lingering(table: &mut Table) {
    println!("\n11. lingering: threads and RSS with {LINGERING} harnesses lingering at once");
    let svc = Core::start(json!({"linger_ms": 600_000}));
    let (idle_threads, idle_rss) = threads_and_rss(svc.pid());
    let began = Instant::now();
    for n in 0..LINGERING {
        svc.start_session(&json!({
            "workspace": format!("ws-linger-{n}"),
            "folder": svc.folder(&format!("linger-{n}")),
            "harness": "codex",
            "prompt": "hello",
        }));
    }
    // Every launch's turn has run and its process waits for the next prompt.
    let deadline = Instant::now() + Duration::from_secs(300);
    let states = loop {
        let states = svc.states();
        let idle = states.get("idle").copied().unwrap_or(0);
        if (idle as usize >= LINGERING && children(svc.pid()) >= LINGERING)
            || Instant::now() >= deadline
        {
            break states;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let harnesses = children(svc.pid());
    let (threads, rss) = threads_and_rss(svc.pid());
    println!("   its threads: {}", thread_names(svc.pid()));
    println!(
        "   {LINGERING} sessions started and idle in {:.1} s: {states:?}, {harnesses} harness processes",
        began.elapsed().as_secs_f64()
    );
    assert!(
        harnesses >= LINGERING,
        "only {harnesses} of {LINGERING} harnesses linger"
    );
    table.row(
        "threads, idle",
        "service, no harness",
        idle_threads.to_string(),
        "-".into(),
        format!("RSS {:.1} MiB", idle_rss as f64 / 1024.0),
    );
    table.row(
        &format!("threads, {LINGERING} lingering"),
        "fake codex (bench binary)",
        threads.to_string(),
        "-".into(),
        format!(
            "RSS {:.1} MiB (goal: at most 32 threads, under 64 MiB); a thread per pipe and exit: {} threads",
            rss as f64 / 1024.0,
            idle_threads + 4 * harnesses
        ),
    );
}

/// (Threads, VmRSS in KiB) of process `pid`.
fn threads_and_rss(pid: u32) -> (usize, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("Threads:") as usize, field("VmRSS:"))
}

/// The names of process `pid`'s threads, each with its count.
fn thread_names(pid: u32) -> String {
    let mut names = std::collections::BTreeMap::<String, usize>::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        *names.entry(name.trim().to_string()).or_default() += 1;
    }
    names
        .iter()
        .map(|(name, n)| {
            if *n > 1 {
                format!("{name} x{n}")
            } else {
                name.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Processes whose parent is `pid` (the harnesses it spawned).
fn children(pid: u32) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let rest = &stat[stat.rfind(')').map_or(0, |i| i + 2)..];
            rest.split_whitespace().nth(1) == Some(&pid.to_string())
        })
        .count()
}
