//! `GET /v1/sessions` carries what a list of sessions shows, so a client
//! (the console's list) needs one request per refresh and no session's
//! whole view: each entry's folder, pending approval count and usage, the
//! same as the session's own view says.

use room_kit::events::await_event;
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// Session `id`'s entry in the list.
fn entry(svc: &Service, id: &str) -> Value {
    let (status, list) = svc.get("/v1/sessions");
    assert_eq!(status, 200, "{list}");
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("{id} is not listed: {list}"))
        .clone()
}

/// The entry agrees with the session's own view on what they share.
fn agrees_with_its_view(svc: &Service, id: &str, e: &Value) {
    let view = svc.session(id);
    assert_eq!(e["folder"], view["folder"], "{e}\n{view}");
    assert_eq!(e["usage"], view["usage"], "{e}\n{view}");
    assert_eq!(
        e["pending_approval_count"],
        json!(view["pending_approvals"].as_array().unwrap().len()),
        "{e}\n{view}"
    );
}

#[test]
fn each_entry_carries_its_folder_and_what_its_turns_used() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("listed");
    let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": "hello"})));
    let id = s["id"].as_str().unwrap();
    svc.await_session(id, "idle", |v| v["state"] == "idle");
    let e = entry(&svc, id);
    assert_eq!(e["folder"], json!(folder));
    assert_eq!(e["pending_approval_count"], 0);
    // The fake claude's one model request.
    assert_eq!(
        e["usage"],
        json!({"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 3,
               "cache_write_tokens": 7, "cost_usd": 0.0001756})
    );
    agrees_with_its_view(&svc, id, &e);

    // A session that has not run a turn yet: no usage, nothing asked.
    let waiting = svc.folder("waiting");
    let s = svc.start_session(start_body(&waiting, "codex", json!({"project_copy": true})));
    let id = s["id"].as_str().unwrap();
    let e = entry(&svc, id);
    assert_eq!(
        (&e["state"], &e["pending_approval_count"]),
        (&json!("pending"), &json!(0))
    );
    assert_eq!(
        e["usage"],
        json!({"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
               "cache_write_tokens": 0, "cost_usd": null})
    );
    agrees_with_its_view(&svc, id, &e);
}

#[test]
fn an_entry_counts_the_approvals_waiting_for_the_app() {
    let test = "an_entry_counts_the_approvals_waiting_for_the_app";
    let Some(agent) = agent_account(test) else {
        return;
    };
    // `approvals: app` relays through the agent socket, outside the state dir.
    let sockets = TempDir::new("list-approvals");
    let svc = Service::start(
        ROOM_CORE,
        json!({"agent_uid": agent.uid.as_raw(), "agent_socket": sockets.path().join("agent.sock")}),
    );
    std::fs::create_dir_all(svc.folder("")).unwrap();
    let folder = svc.folder("asks");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"approvals": "app", "prompt": "ask: true"}),
    ));
    let id = s["id"].as_str().unwrap();
    await_event(&svc, id, "an approval request", |e| {
        e["kind"] == "approval_requested"
    });
    let e = entry(&svc, id);
    assert_eq!(e["pending_approval_count"], 1, "{e}");
    agrees_with_its_view(&svc, id, &e);
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/approvals/1"),
        json!({"decision": "allow"}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(entry(&svc, id)["pending_approval_count"], 0);
}
