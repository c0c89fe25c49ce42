//! Section 3, `classify`: `classify()` alone on a depth-10 ancestry, and
//! an agent-socket request (refused, and forwarded to the fake website)
//! from this binary's client mode at the bottom of a chain of shells.

use std::process::{Command, Stdio};
use std::time::Instant;

use room_core::procfs::Procfs;
use room_kit::{quote, FakeWebsite, LOOP_ID};
use room_machines::{classify, Caller, EnvView, ProcView};
use serde_json::{json, Value};

use crate::service::Core;
use crate::stats::{stats, us, Table};
use crate::{CLIENT_ENV, CLIENT_RUNS_ENV, DEPTH, STAMP_ENV};

/// Requests of each kind the client times.
const CLASSIFY_RUNS: usize = 300;

/// The section: classify() in memory, then the client's round trips.
pub(crate) fn classification(table: &mut Table) {
    println!(
        "\n3. classification: classify() alone, and an agent-socket request from depth {DEPTH}"
    );
    // classify() alone on a depth-10 ancestry, the marker on the farthest
    // process (the whole ancestry is scanned twice: harness, then marker).
    let mut ancestry: Vec<ProcView> = (0..DEPTH as u32)
        .map(|i| ProcView {
            pid: 1000 - i,
            harness: None,
            env: EnvView::Readable { loop_marker: None },
        })
        .collect();
    ancestry[DEPTH - 1].env = EnvView::Readable {
        loop_marker: Some(LOOP_ID.into()),
    };
    assert_eq!(classify(None, &ancestry), Caller::Loop(LOOP_ID.into()));
    let samples: Vec<f64> = (0..301)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..1000 {
                std::hint::black_box(classify(None, std::hint::black_box(&ancestry)));
            }
            t.elapsed().as_nanos() as f64 / 1000.0 / 1000.0
        })
        .collect();
    let (p50, p99) = stats(&samples);
    table.row(
        "classify() alone",
        "depth-10 ancestry in memory",
        us(p50),
        us(p99),
        "301 samples, each the mean of 1000 calls; target < 5 µs".into(),
    );

    let web = FakeWebsite::start();
    let svc = Core::start(json!({"website_url": web.url}));
    // A chain of shells under this process, the client at its bottom, so
    // that the client's ancestry (itself to pid 1) is DEPTH long.
    let own = Procfs::default()
        .ancestry(std::process::id(), |_| None)
        .len();
    let shells = DEPTH.saturating_sub(own + 1);
    let me = std::env::current_exe().unwrap();
    let mut script = format!("exec {}", quote(&me.to_string_lossy()));
    for _ in 0..shells {
        script = format!("sh -c {}; :", quote(&script));
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg(if shells == 0 {
            script
        } else {
            format!("{script}; :")
        })
        .env(CLIENT_ENV, svc.socket())
        .env(CLIENT_RUNS_ENV, CLASSIFY_RUNS.to_string())
        .env("CLOUDROOM_LOOP", LOOP_ID)
        .env_remove(STAMP_ENV)
        .stderr(Stdio::inherit())
        .output()
        .expect("run the client chain");
    let line = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{e}: {line}"));
    let depth = v["depth"].as_u64().unwrap();
    let get = |k: &str| -> Vec<f64> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() / 1000.0)
            .collect()
    };
    let (p50, p99) = stats(&get("walk"));
    table.row(
        "/proc walk + classify()",
        &format!("the caller itself, real depth {depth}"),
        us(p50),
        us(p99),
        format!("{CLASSIFY_RUNS} runs, in the client process"),
    );
    let (p50, p99) = stats(&get("refused"));
    table.row(
        "agent-socket round trip",
        &format!("depth {depth}, refused (thread list from a loop)"),
        us(p50),
        us(p99),
        format!("{CLASSIFY_RUNS} runs; target p50 < 1 ms"),
    );
    let (p50, p99) = stats(&get("forwarded"));
    table.row(
        "agent-socket round trip",
        &format!("depth {depth}, forwarded (loop list) to the fake website"),
        us(p50),
        us(p99),
        format!("{CLASSIFY_RUNS} runs; target p50 < 1 ms"),
    );
    assert_eq!(
        web.calls().len(),
        CLASSIFY_RUNS,
        "every loop list reached the website"
    );
}
