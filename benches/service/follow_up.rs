//! Section 5, `startup`, its second half: a follow-up message to a real
//! CLI, cold (a spawn that resumes) and warm (within the linger), through
//! room-core's stream; and claude's own floor (its stdin straight from the
//! bench). The Claude Agent SDK's side is sdk.rs.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::stats::{ms, realtime_us, stats, Table};

/// Follow-up messages timed per mode.
pub(crate) const FOLLOW_UPS: usize = 20;
/// The pause before each follow-up, on every side (room-core, the floor,
/// the SDK): claude keeps working for a while after its `result` (it writes
/// its transcript, it may ask the model for a title), and a message sent
/// into that is slowed by it on whichever side. An app's next message comes
/// seconds later.
pub(crate) const PAUSE_MS: u64 = 500;
/// What claude's assistant messages hold on the stream (its own line,
/// journalled as it printed it).
const ASSISTANT: &str = r#""type":"assistant""#;

/// A follow-up message to a real CLI through the service: POST of the
/// message -> the turn's first event (claude's `system`/`init`) read on the
/// session's stream, and for claude also -> its first assistant message
/// (the figure the Claude Agent SDK is compared on, sdk.rs). Cold:
/// `linger_ms: 0`, every message spawns the CLI, which resumes; warm:
/// within the linger, the message goes to the process that ran the turn
/// before. Returns the first assistant message's medians, cold then warm
/// (none for codex).
pub(crate) fn follow_up_latency(
    table: &mut Table,
    harness: &str,
    program: &Path,
    cli_env: &[(String, String)],
) -> Vec<f64> {
    // The turn's first event: claude's `system/init`, codex's `turn/started`
    // (a cold codex answers `initialize` first, which no turn starts).
    let first = match harness {
        "claude" => r#""subtype":"init""#,
        _ => r#""turn/started""#,
    };
    let assistant = (harness == "claude").then_some(ASSISTANT);
    let mut medians = Vec::new();
    let mut assistant_medians = Vec::new();
    for (mode, linger) in [
        ("cold (spawn + resume)", 0u64),
        ("warm (within the linger)", 60_000),
    ] {
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
            let reader = first_event_reader(&svc.base, &svc.token(), &id, after, first, assistant);
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
        medians.push(p50);
        table.row(
            "follow-up message to its turn's first event",
            &format!("real {harness}, {mode}"),
            ms(p50),
            ms(p99),
            if medians.len() == 2 {
                format!(
                    "{FOLLOW_UPS} messages; POST -> {first} on the stream; warm is {:.0}x below cold; target warm p50 < 20 ms, >= 20x below cold",
                    medians[0] / medians[1]
                )
            } else {
                format!("{FOLLOW_UPS} messages; POST -> {first} on the stream")
            },
        );
        if assistant.is_some() && !to_assistant.is_empty() {
            let (p50, p99) = stats(&to_assistant);
            assistant_medians.push(p50);
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
    assistant_medians
}

/// The floor under a warm follow-up: claude on stream-json driven straight
/// from the bench (its turn's command as the service builds it), one user
/// message after another, timed from the write to `system`/`init` on its
/// stdout. What the service's warm figure adds to this is its own.
pub(crate) fn warm_floor(
    table: &mut Table,
    claude: &Path,
    cli_env: &[(String, String)],
    root: &Path,
) {
    use room_core::harness::speech::Said;
    use std::io::BufRead;
    let folder = root.join("work").join("warm-floor");
    std::fs::create_dir_all(&folder).unwrap();
    let mut spec = crate::service::claude_turn_spec(root, claude, &folder).expect("a turn's spec");
    spec.env
        .extend(cli_env.iter().map(|(k, v)| (k.into(), v.into())));
    let (mut child, mut talker) = crate::service::spawn_turn(spec);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut until = |what: &str| {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "claude ended before {what}"
            );
            if line.contains(what) {
                return;
            }
        }
    };
    for out in talker.say(Said::prompt("first".into())) {
        stdin.write_all(out.line.as_bytes()).unwrap();
    }
    until(r#""type":"result""#);
    let (mut took, mut to_assistant) = (Vec::new(), Vec::new());
    for n in 0..FOLLOW_UPS {
        let line = room_core::harness::claude::protocol::user_message(&format!("follow-up {n}"));
        std::thread::sleep(Duration::from_millis(PAUSE_MS));
        let began = Instant::now();
        stdin.write_all(line.as_bytes()).unwrap();
        until(r#""subtype":"init""#);
        took.push(began.elapsed().as_secs_f64() * 1000.0);
        until(ASSISTANT);
        to_assistant.push(began.elapsed().as_secs_f64() * 1000.0);
        until(r#""type":"result""#);
    }
    drop(stdin);
    let _ = child.wait();
    let (p50, p99) = stats(&took);
    table.row(
        "follow-up message to its turn's first event",
        "real claude, warm, straight from the bench (the floor)",
        ms(p50),
        ms(p99),
        format!("{FOLLOW_UPS} messages; write to its stdin -> system/init on its stdout: claude's own time"),
    );
    let (p50, p99) = stats(&to_assistant);
    table.row(
        "follow-up message to its first assistant message",
        "real claude, warm, straight from the bench (the floor)",
        ms(p50),
        ms(p99),
        format!("the same {FOLLOW_UPS} messages, to the first assistant message on its stdout: claude run with the service's own turn spec, no service"),
    );
}

/// Reads session `id`'s stream after `after` until the first harness event
/// of a turn (the one holding `first`), then, given `then`, on to the first
/// event holding it; when it read each, in realtime µs.
fn first_event_reader(
    base: &str,
    token: &str,
    id: &str,
    after: u64,
    first: &'static str,
    then: Option<&'static str>,
) -> std::thread::JoinHandle<(u64, Option<u64>)> {
    use std::io::BufRead;
    let agent = ureq::AgentBuilder::new()
        .timeout_read(Duration::from_secs(60))
        .build();
    let resp = agent
        .get(&format!("{base}/v1/sessions/{id}/stream?after={after}"))
        .set("Authorization", &format!("Bearer {token}"))
        .call()
        .expect("open a stream");
    let mut reader = std::io::BufReader::new(resp.into_reader());
    std::thread::spawn(move || {
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
    })
}
