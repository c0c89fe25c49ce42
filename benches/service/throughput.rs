//! Section 4, `throughput`: `POST /v1/sessions` from 8 clients at once,
//! blank starts that spawn a harness and plan-only starts (on disk and on
//! tmpfs), each run until every start is idle.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::service::Core;
use crate::stats::{ms, stats, Table};

/// Clients posting at once.
const CLIENTS: usize = 8;
/// How long they post.
const POSTING: Duration = Duration::from_secs(8);

/// The section: one service per kind of start.
pub(crate) fn throughput(table: &mut Table) {
    println!(
        "\n4. start throughput: POST /v1/sessions from {CLIENTS} clients for {} s",
        POSTING.as_secs()
    );
    // The third run keeps the state on tmpfs (no fsync cost), when there is
    // one, to show what the store's fsyncs cost.
    let shm = Path::new("/dev/shm");
    let mut runs = vec![(false, None), (true, None)];
    if shm.is_dir() {
        runs.push((
            true,
            Some(shm.join(format!("room-core-bench-{}", std::process::id()))),
        ));
    }
    for (plan_only, state) in runs {
        let extra = match &state {
            Some(dir) => json!({"state_dir": dir}),
            None => json!({}),
        };
        let svc = Arc::new(Core::start(extra));
        let t0 = Instant::now();
        let workers: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let svc = svc.clone();
                std::thread::spawn(move || {
                    let agent = ureq::AgentBuilder::new()
                        .timeout(Duration::from_secs(30))
                        .build();
                    let mut lat = Vec::new();
                    let mut i = 0;
                    while t0.elapsed() < POSTING {
                        let name = format!("tp-{c}-{i}");
                        let mut body = json!({
                            "workspace": format!("ws-{name}"),
                            "folder": svc.folder(&name),
                            "harness": "codex",
                        });
                        if plan_only {
                            body["plan_only"] = json!(true);
                        } else {
                            body["prompt"] = json!("go");
                        }
                        let t = Instant::now();
                        let (status, v) =
                            Core::call(&agent, &svc.base, "POST", "/v1/sessions", Some(&body));
                        lat.push(t.elapsed().as_secs_f64() * 1000.0);
                        assert_eq!(status, 201, "{v}");
                        i += 1;
                    }
                    lat
                })
            })
            .collect();
        let lat: Vec<f64> = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        let posted = t0.elapsed().as_secs_f64();
        let total = lat.len() as u64;
        // Nothing lost: every session reaches idle (its harness ran and
        // reported its thread; plan_only starts have no prompt to run).
        let deadline = Instant::now() + Duration::from_secs(120);
        let settled = loop {
            let states = svc.states();
            if states.get("idle").copied() == Some(total) {
                break t0.elapsed().as_secs_f64();
            }
            assert!(
                Instant::now() < deadline,
                "not every start settled: {states:?} of {total}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        if !plan_only {
            let stamps = std::fs::read_dir(&svc.stamps).unwrap().count() as u64;
            assert_eq!(stamps, total, "every blank start ran its harness once");
        }
        let (p50, p99) = stats(&lat);
        table.row(
            "start throughput",
            match (plan_only, &state) {
                (false, _) => "blank starts with a prompt (harness spawn), 8 clients",
                (true, None) => "plan_only starts (no prompt, no harness), 8 clients",
                (true, Some(_)) => "plan_only starts, state on tmpfs (no fsync cost), 8 clients",
            },
            ms(p50),
            ms(p99),
            format!(
                "{:.0} starts/s accepted ({total} in {posted:.1} s); all {} in {settled:.1} s = {:.0} starts/s",
                total as f64 / posted,
                if plan_only { "idle" } else { "spawned, reported and idle" },
                total as f64 / settled
            ),
        );
    }
}
