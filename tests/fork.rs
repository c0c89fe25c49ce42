//! `POST /v1/sessions/{id}/fork` refused, each with what a user would need
//! to know, and nothing made: the fake harness writes no message a
//! conversation can be forked at (tests/real_fork.rs forks with the real
//! CLIs).

use room_kit::events::await_turn_diff;
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

#[test]
fn a_fork_is_refused_with_why_and_makes_nothing() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("parent");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({ "prompt": "run: echo 1 > a.txt" }),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    await_turn_diff(&svc, &id, 1);
    let fork = |body: Value| {
        let (status, v) = svc.post(&format!("/v1/sessions/{id}/fork"), body);
        (status, v["code"].as_str().unwrap_or("").to_string(), v)
    };
    let new = svc.folder("fork");
    let body = |at: u64, folder: &std::path::Path| json!({"at_turn": at, "folder": folder, "workspace": "forked"});
    let (status, code, _) = fork(json!({"at_turn": 1, "folder": "rel", "workspace": "w"}));
    assert_eq!((status, code.as_str()), (422, "invalid_field"));
    let (status, code, _) = fork(json!({"at_turn": 0, "folder": new, "workspace": "w"}));
    assert_eq!((status, code.as_str()), (422, "invalid_field"));
    let (status, code, _) = fork(json!({"at_turn": 1, "folder": new}));
    assert_eq!((status, code.as_str()), (422, "invalid_field"));
    let (status, code, v) = fork(body(2, &new));
    assert_eq!((status, code.as_str()), (409, "no_such_turn"), "{v}");
    let (status, code, v) = fork(body(1, &folder.join("inside")));
    assert_eq!((status, code.as_str()), (409, "folder_taken"), "{v}");
    let busy = svc.folder("busy");
    std::fs::create_dir_all(&busy).unwrap();
    std::fs::write(busy.join("mine.txt"), "someone's work\n").unwrap();
    let (status, code, v) = fork(body(1, &busy));
    assert_eq!((status, code.as_str()), (409, "folder_not_empty"), "{v}");
    assert_eq!(
        std::fs::read_to_string(busy.join("mine.txt")).unwrap(),
        "someone's work\n"
    );
    let (status, code, v) = fork(body(1, &new));
    assert_eq!((status, code.as_str()), (409, "conversation_uncut"), "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("claude wrote no message in turn 1"),
        "{v}"
    );
    assert!(!new.exists(), "nothing was made");
    let (status, list) = svc.get("/v1/sessions");
    assert_eq!(status, 200);
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1, "{list}");
    let (status, v) = svc.post("/v1/sessions/cr_nope/fork", body(1, &new));
    assert_eq!(
        (status, v["code"].as_str()),
        (404, Some("session_not_found"))
    );
}

#[test]
fn with_snapshots_off_a_fork_says_why_it_cannot_be() {
    let svc = Service::start(ROOM_CORE, json!({"snapshots": false}));
    let folder = svc.folder("off");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({ "prompt": "run: echo 1 > a.txt" }),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    room_kit::events::await_turns_ended(&svc, &id, 1);
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/fork"),
        json!({"at_turn": 1, "folder": svc.folder("f"), "workspace": "w"}),
    );
    assert_eq!(
        (status, v["code"].as_str()),
        (409, Some("snapshots_off")),
        "{v}"
    );
}
