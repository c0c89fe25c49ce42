//! Section 8, `follow`: a harness's output to SSE readers of its session's
//! stream (1 and 50 readers), each stamp printed by this binary's harness
//! mode; then the journal's appends (journal.rs).

use std::time::Duration;

use serde_json::{json, Value};

use crate::journal::journal_throughput;
use crate::service::Core;
use crate::stats::{ms, realtime_us, stats, Table};
use crate::TOKEN;

/// Stamps per lag run, and the gap between them (each measured alone).
const FOLLOW_STAMPS: u64 = 200;
/// The gap between two stamps, in ms.
const FOLLOW_GAP_MS: u64 = 10;

/// An SSE reader of `id`'s stream after seq `after`: for each stamp event,
/// the realtime µs it was printed and read. Returns once it has `want`.
fn stamp_reader(
    base: &str,
    id: &str,
    after: u64,
    want: usize,
) -> std::thread::JoinHandle<Vec<(u64, u64)>> {
    use std::io::BufRead;
    let agent = ureq::AgentBuilder::new()
        .timeout_read(Duration::from_secs(30))
        .build();
    let resp = agent
        .get(&format!("{base}/v1/sessions/{id}/stream?after={after}"))
        .set("Authorization", &format!("Bearer {TOKEN}"))
        .call()
        .expect("open a stream");
    let mut reader = std::io::BufReader::new(resp.into_reader());
    std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut line = String::new();
        while got.len() < want {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            if !data.contains(r#""type":"stamp""#) {
                continue;
            }
            let read = realtime_us();
            let v: Value = serde_json::from_str(data.trim_end()).expect("an event");
            got.push((v["data"]["us"].as_u64().unwrap(), read));
        }
        got
    })
}

/// The section: one session, its stamps read by 1 reader, then by 50.
pub(crate) fn follow(table: &mut Table) {
    println!("\n8. following a session: harness prints -> SSE client reads; journal appends");
    let svc = Core::start(json!({}));
    let v = svc.start_session(&json!({
        "workspace": "ws-follow",
        "folder": svc.folder("follow"),
        "harness": "codex",
        "prompt": "first",
    }));
    let id = v["id"].as_str().unwrap().to_string();
    svc.await_state(&id, "idle");
    let mut medians = Vec::new();
    for readers in [1usize, 50] {
        // Each reader starts at the journal's end: the stamps come after.
        let (_, page) = Core::call(
            &svc.agent,
            &svc.base,
            "GET",
            &format!("/v1/sessions/{id}/events?limit=1"),
            None,
        );
        let after = page["last_seq"].as_u64().unwrap();
        let handles: Vec<_> = (0..readers)
            .map(|_| stamp_reader(&svc.base, &id, after, FOLLOW_STAMPS as usize))
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        let (status, _) = Core::call(
            &svc.agent,
            &svc.base,
            "POST",
            &format!("/v1/sessions/{id}/messages"),
            Some(&json!({"prompt": format!("stamps: {FOLLOW_STAMPS} {FOLLOW_GAP_MS}")})),
        );
        assert_eq!(status, 200);
        let mut lags = Vec::new();
        for h in handles {
            let got = h.join().unwrap();
            assert_eq!(
                got.len(),
                FOLLOW_STAMPS as usize,
                "every reader got every stamp"
            );
            lags.extend(
                got.iter()
                    .map(|(printed, read)| read.saturating_sub(*printed) as f64 / 1000.0),
            );
        }
        svc.await_state(&id, "idle");
        let (p50, p99) = stats(&lags);
        medians.push(p50);
        table.row(
            "event delivery lag",
            &format!("harness prints -> SSE client reads, {readers} reader(s)"),
            ms(p50),
            ms(p99),
            format!(
                "{} samples ({FOLLOW_STAMPS} stamps {FOLLOW_GAP_MS} ms apart{}); includes the fdatasync before serving; target p50 < 2 ms, p99 < 10 ms",
                lags.len(),
                if readers > 1 {
                    format!(", each read by all {readers}; median {:.2}x one reader", p50 / medians[0])
                } else {
                    String::new()
                }
            ),
        );
    }
    drop(svc);
    journal_throughput(table);
}
