//! Section 10, `queue`: `POST …/messages` to a paused session with 1 and
//! with 5,000 prompts waiting; a queued prompt is one append whatever the
//! queue holds.

use std::time::Instant;

use serde_json::json;

use crate::service::Core;
use crate::stats::{ms, stats, Table};

/// Messages timed per queue length in the queue section.
const MESSAGES: usize = 200;
/// The queue the second half of the queue section posts behind.
const QUEUED: usize = 5_000;

/// `POST …/messages` to a paused session (so the prompt stays queued), from
/// the request to its 200, with one prompt waiting (each session's first
/// message, untimed, made its prompt log) and with [`QUEUED`] waiting: a
/// queued message is one append to the prompt log whatever the queue
/// holds, so the two should cost the same.
pub(crate) fn message_cost(table: &mut Table) {
    println!("\n10. queue: POST …/messages to a paused session, 1 and {QUEUED} prompts waiting");
    let svc = Core::start(json!({"max_queued_prompts": QUEUED + MESSAGES}));
    let paused = |name: &str| {
        let v = svc.start_session(&json!({
            "workspace": format!("ws-{name}"),
            "folder": svc.folder(name),
            "harness": "claude",
        }));
        let id = v["id"].as_str().unwrap().to_string();
        svc.await_state(&id, "idle");
        let (status, _) = Core::call(
            &svc.agent,
            &svc.base,
            "POST",
            &format!("/v1/sessions/{id}/stop"),
            Some(&json!({})),
        );
        assert_eq!(status, 200);
        id
    };
    let post = |id: &str, n: usize| {
        let began = Instant::now();
        let (status, v) = Core::call(
            &svc.agent,
            &svc.base,
            "POST",
            &format!("/v1/sessions/{id}/messages"),
            Some(&json!({"prompt": format!("prompt {n}: add a test for the parser's error path")})),
        );
        assert_eq!(status, 200, "{v}");
        began.elapsed().as_secs_f64() * 1000.0
    };
    // One waiting: each timed message goes to a paused session of its own.
    let empty: Vec<f64> = (0..MESSAGES)
        .map(|n| {
            let id = paused(&format!("q1-{n}"));
            post(&id, 0);
            post(&id, 1)
        })
        .collect();
    let id = paused("q5000");
    for n in 0..QUEUED {
        post(&id, n);
    }
    let full: Vec<f64> = (0..MESSAGES).map(|n| post(&id, QUEUED + n)).collect();
    let record = std::fs::metadata(svc.state.join("sessions").join(format!("{id}.json")))
        .map_or(0, |m| m.len());
    let (p50_empty, p99_empty) = stats(&empty);
    let (p50_full, p99_full) = stats(&full);
    table.row(
        "message, 1 waiting",
        "paused session, fake claude",
        ms(p50_empty),
        ms(p99_empty),
        format!("{MESSAGES} messages, each to its own paused session holding one: the prompt appended to its prompt log (fdatasync) and journalled (fdatasync)"),
    );
    table.row(
        &format!("message, {QUEUED} waiting"),
        "paused session, fake claude",
        ms(p50_full),
        ms(p99_full),
        format!(
            "{MESSAGES} more to one session holding {QUEUED}: p50 ratio {:.2} to 1 waiting (target at most 1.5); its record stays {record} bytes (waiting prompts by number)",
            p50_full / p50_empty
        ),
    );
}
