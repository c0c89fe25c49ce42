//! Section 5, `startup`, its second half: a follow-up message to a real
//! CLI through room-core's stream, cold (a spawn that resumes) and, for
//! codex, warm (within the linger). claude's warm follow-ups are timed
//! paired with the Claude Agent SDK's and claude's own floor (paired.rs);
//! the SDK's cold ones are sdk.rs.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::stats::{ms, realtime_us, stats, Table};

/// Follow-up messages timed per mode where they are not paired.
pub(crate) const FOLLOW_UPS: usize = 20;
/// The pause before each follow-up, on every side (room-core, the floor,
/// the SDK), paired or not: claude keeps working for a while after its `result` (it writes
/// its transcript, it may ask the model for a title), and a message sent
/// into that is slowed by it on whichever side. An app's next message comes
/// seconds later.
pub(crate) const PAUSE_MS: u64 = 500;
/// What claude's assistant messages hold on the stream (its own line,
/// journalled as it printed it).
pub(crate) const ASSISTANT: &str = r#""type":"assistant""#;

/// One mode's medians through room-core.
pub(crate) struct Medians {
    /// POST -> the turn's first event on the stream.
    pub(crate) first_event: f64,
    /// POST -> the first assistant message on the stream (claude only).
    pub(crate) assistant: Option<f64>,
}

/// A follow-up message to a real CLI through the service: POST of the
/// message -> the turn's first event (claude's `system`/`init`) read on the
/// session's stream, and for claude also -> its first assistant message
/// (the figure the Claude Agent SDK is compared on, sdk.rs). Cold:
/// `linger_ms: 0`, every message spawns the CLI, which resumes; warm (given
/// `warm`): within the linger, the message goes to the process that ran
/// the turn before. Returns each mode's medians, cold first.
pub(crate) fn follow_up_latency(
    table: &mut Table,
    harness: &str,
    program: &Path,
    cli_env: &[(String, String)],
    warm: bool,
) -> Vec<Medians> {
    // The turn's first event: claude's `system/init`, codex's `turn/started`
    // (a cold codex answers `initialize` first, which no turn starts).
    let first = match harness {
        "claude" => r#""subtype":"init""#,
        _ => r#""turn/started""#,
    };
    let assistant = (harness == "claude").then_some(ASSISTANT);
    let mut medians: Vec<Medians> = Vec::new();
    let modes = [
        ("cold (spawn + resume)", 0u64),
        ("warm (within the linger)", 60_000),
    ];
    for (mode, linger) in &modes[..if warm { 2 } else { 1 }] {
        let svc = room_kit::Service::builder(env!("CARGO_BIN_EXE_room-core"))
            .config(json!({format!("{harness}_program"): program, "linger_ms": linger}))
            .envs(cli_env.iter().cloned())
            .log_filter("warn")
            .start();
        let folder = svc.folder("follow-ups");
        let (status, v) = svc.post(
            "/v1/sessions",
            json!({"workspace": "ws-warm", "folder": folder, "harness": harness, "prompt": "first"}),
        );
        assert_eq!(status, 201, "{v}");
        let id = v["id"].as_str().unwrap().to_string();
        let idle = |svc: &room_kit::Service| {
            room_kit::wait_until("idle", Duration::from_secs(60), || {
                let v = svc.session(&id);
                (v["state"] == "idle" && v["queue"]["length"] == 0).then_some(v)
            })
        };
        idle(&svc);
        let mut took = Vec::new();
        let mut to_assistant = Vec::new();
        for n in 0..FOLLOW_UPS {
            let (_, page) = svc.get(&format!("/v1/sessions/{id}/events?limit=1"));
            let after = page["last_seq"].as_u64().unwrap();
            let reader = first_event_reader(&svc.base, &svc.token(), &id, after, first, assistant)
                .expect("open a stream");
            std::thread::sleep(Duration::from_millis(PAUSE_MS));
            let began = realtime_us();
            let (status, v) = svc.post(
                &format!("/v1/sessions/{id}/messages"),
                json!({"prompt": format!("follow-up {n}")}),
            );
            assert_eq!(status, 200, "{v}");
            let (read, answered) = reader.join().unwrap();
            took.push(read.saturating_sub(began) as f64 / 1000.0);
            if let Some(at) = answered {
                to_assistant.push(at.saturating_sub(began) as f64 / 1000.0);
            }
            idle(&svc);
        }
        let (p50, p99) = stats(&took);
        let cold = medians.first().map(|m| m.first_event);
        table.row(
            "follow-up message to its turn's first event",
            &format!("real {harness}, {mode}"),
            ms(p50),
            ms(p99),
            match cold {
                Some(cold) => warm_note(FOLLOW_UPS, first, cold, p50),
                None => format!("{FOLLOW_UPS} messages; POST -> {first} on the stream"),
            },
        );
        medians.push(Medians {
            first_event: p50,
            assistant: None,
        });
        if assistant.is_some() && !to_assistant.is_empty() {
            let (p50, p99) = stats(&to_assistant);
            if let Some(m) = medians.last_mut() {
                m.assistant = Some(p50);
            }
            table.row(
                "follow-up message to its first assistant message",
                &format!("real {harness}, {mode}, through room-core"),
                ms(p50),
                ms(p99),
                format!(
                    "{} messages; POST -> the first \"type\":\"assistant\" event on the stream",
                    to_assistant.len()
                ),
            );
        }
    }
    medians
}

/// The notes of the warm row to the turn's first event (`first`, its
/// mark): its count, how far below cold it is, and the target.
pub(crate) fn warm_note(count: usize, first: &str, cold: f64, warm: f64) -> String {
    format!(
        "{count} messages; POST -> {first} on the stream; warm is {:.0}x below cold; target warm p50 < 20 ms, >= 20x below cold",
        cold / warm
    )
}

/// Reads session `id`'s stream after `after` until the first harness event
/// of a turn (the one holding `first`), then, given `then`, on to the first
/// event holding it; when it read each, in realtime µs. The stream is open
/// when this returns (or why it could not be opened), so a message posted
/// after it is read from its first event.
pub(crate) fn first_event_reader(
    base: &str,
    token: &str,
    id: &str,
    after: u64,
    first: &'static str,
    then: Option<&'static str>,
) -> Result<std::thread::JoinHandle<(u64, Option<u64>)>, String> {
    use std::io::BufRead;
    let agent = ureq::AgentBuilder::new()
        .timeout_read(Duration::from_secs(60))
        .build();
    let resp = agent
        .get(&format!("{base}/v1/sessions/{id}/stream?after={after}"))
        .set("Authorization", &format!("Bearer {token}"))
        .call()
        .map_err(|e| format!("open the stream: {e}"))?;
    let mut reader = std::io::BufReader::new(resp.into_reader());
    Ok(std::thread::spawn(move || {
        let mut line = String::new();
        let mut first_at = None;
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                // A turn that ends without `then` gives only its first
                // event; one without a first event is no figure at all.
                let at = first_at.expect("the stream ended before the turn's first event");
                return (at, None);
            }
            if !line.starts_with("data: ") {
                continue;
            }
            if first_at.is_none() && line.contains(first) {
                let at = realtime_us();
                match then {
                    None => return (at, None),
                    Some(_) => first_at = Some(at),
                }
            }
            if let (Some(at), Some(mark)) = (first_at, then) {
                if line.contains(mark) {
                    return (at, Some(realtime_us()));
                }
            }
        }
    }))
}
