//! Section 9, `approvals`: an approval's round trip, from the fake
//! harness's request through the stream to the app's answer back on its
//! stdin; then real claude's, natively and through an ACP agent
//! (approvals_real.rs); needs root and the agent account (skipped without
//! them).

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::service::Core;
use crate::stats::{ms, stats, Table};
use crate::TOKEN;

/// Requests timed in the approvals section.
const APPROVALS: usize = 40;

/// An app that answers each approval request as soon as the stream shows
/// it, against each fake harness (fixtures/fake_harness.py `asks:`) running
/// as the agent account, as `approvals: app` needs.
pub(crate) fn approval_round_trip(table: &mut Table) {
    println!(
        "\n9. approvals: harness asks -> approval_requested on the stream -> app answers -> harness reads it"
    );
    let agent = nix::unistd::User::from_name(room_kit::AGENT)
        .ok()
        .flatten()
        .filter(|_| nix::unistd::geteuid().is_root());
    let Some(agent) = agent else {
        println!("  skipped: needs root and the {} account", room_kit::AGENT);
        return;
    };
    let sockets = std::env::temp_dir().join(format!("room-core-bench-sock-{}", std::process::id()));
    std::fs::create_dir_all(&sockets).unwrap();
    std::fs::set_permissions(
        &sockets,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let svc = Core::start(json!({
        "agent_uid": agent.uid.as_raw(),
        "agent_socket": sockets.join("agent.sock"),
        "claude_program": fixtures.join("fake-claude"),
        "codex_program": fixtures.join("fake-codex"),
        "harness_env": ["FAKE_HARNESS_RECORD"],
    }));
    for harness in ["claude", "codex"] {
        round_trips(table, &svc, harness, &agent.name);
    }
    drop(svc);
    crate::approvals_real::real_round_trips(table, &agent, &sockets);
    let _ = std::fs::remove_dir_all(&sockets);
}

/// One session of `harness` asking [`APPROVALS`] times, one after another.
fn round_trips(table: &mut Table, svc: &Core, harness: &str, account: &str) {
    let folder = svc.folder(&format!("asks-{harness}"));
    let v = svc.start_session(&json!({
        "workspace": "ws-asks",
        "folder": folder,
        "harness": harness,
        "approvals": "app",
        "prompt": format!("asks: {APPROVALS}"),
    }));
    let id = v["id"].as_str().unwrap().to_string();
    let answered = approver(&svc.base, &id, APPROVALS);
    let record = room_kit::wait_until("the round trips", Duration::from_secs(60), || {
        svc.records_in(&folder).into_iter().find(|r| {
            r["round_trips_us"]
                .as_array()
                .is_some_and(|a| a.len() == APPROVALS)
        })
    });
    assert_eq!(answered.join().unwrap(), APPROVALS);
    let took: Vec<f64> = record["round_trips_us"]
        .as_array()
        .unwrap()
        .iter()
        .map(|us| us.as_f64().unwrap() / 1000.0)
        .collect();
    let (p50, p99) = stats(&took);
    table.row(
        "approval round trip",
        &format!("fake {harness} as {account}, app answers at once"),
        ms(p50),
        ms(p99),
        format!(
            "{APPROVALS} requests one after another: the request journalled (fdatasync) and streamed, the answer's POST recorded (fdatasync) and written to the harness's stdin; the app's own time is its HTTP round trips; target p50 < 5 ms"
        ),
    );
}

/// Follows session `id`'s stream and allows each approval request as it
/// shows; how many it answered.
fn approver(base: &str, id: &str, want: usize) -> std::thread::JoinHandle<usize> {
    use std::io::BufRead;
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(30))
        .build();
    let (base, id) = (base.to_string(), id.to_string());
    std::thread::spawn(move || {
        let resp = agent
            .get(&format!("{base}/v1/sessions/{id}/stream"))
            .set("Authorization", &format!("Bearer {TOKEN}"))
            .call()
            .expect("open a stream");
        let mut reader = std::io::BufReader::new(resp.into_reader());
        let mut answered = 0;
        let mut line = String::new();
        while answered < want {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                break;
            }
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            if !data.contains(r#""kind":"approval_requested""#) {
                continue;
            }
            let v: Value = serde_json::from_str(data.trim_end()).expect("an event");
            let n = &v["data"]["id"];
            agent
                .post(&format!("{base}/v1/sessions/{id}/approvals/{n}"))
                .set("Authorization", &format!("Bearer {TOKEN}"))
                .send_json(json!({"decision": "allow"}))
                .expect("the answer is taken");
            answered += 1;
        }
        answered
    })
}
