//! A session's journal through `GET /v1/sessions/{id}/events`, the session
//! list and interrupt, against the real binary with the fake harnesses.

use std::time::Duration;

use room_kit::events::{all_events, await_event, await_turn_diff, turn_ended};
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// Index of the first event of `kind` (panics naming the journal if none).
fn first(events: &[Value], kind: &str) -> usize {
    events
        .iter()
        .position(|e| e["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {events:#?}"))
}

#[test]
fn a_started_sessions_events_come_in_order() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"project_copy": true, "prompt": "hello"}),
    ));
    let id = s["id"].as_str().unwrap();
    await_event(&svc, id, "the copy wait", |e| {
        e["kind"] == "copy_wait_began"
    });
    mark(&folder, "ready");
    // The turn's folder is recorded after it (its `turn_diff`), as the
    // session shows idle or after.
    await_turn_diff(&svc, id, 1);
    let events = await_event(&svc, id, "idle after the turn", |e| {
        e["kind"] == "state" && e["data"]["state"] == "idle"
    });

    // Gapless seqs from 1, times in order.
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], i as u64 + 1, "{events:#?}");
        assert!(
            e["at_ms"].as_u64().unwrap() >= events[i.saturating_sub(1)]["at_ms"].as_u64().unwrap()
        );
    }
    // The wait, the copy landing, the turn, the harness's events as it
    // printed them, the turn's end; the state first and last.
    let wait = first(&events, "copy_wait_began");
    let ready = first(&events, "copy_wait_ended");
    let start = first(&events, "turn_started");
    let harness = first(&events, "harness");
    let end = first(&events, "turn_ended");
    assert!(
        wait < ready && ready < start && start < harness && harness < end,
        "{events:#?}"
    );
    assert_eq!(events[0]["kind"], "state");
    assert_eq!(events[0]["data"], json!({"state": "pending"}));
    assert_eq!(events[wait]["data"]["on"], "missing_mark");
    assert_eq!(events[wait]["data"]["limit_ms"], 300_000);
    assert_eq!(events[ready]["data"]["why"], "landed");
    assert_eq!(
        events[start]["data"],
        json!({"turn": 1, "prompt": 1, "resume": null})
    );
    let printed: Vec<&Value> = events[start..end]
        .iter()
        .filter(|e| e["kind"] == "harness")
        .map(|e| &e["data"])
        .collect();
    let native = svc.await_session(id, "idle", |v| v["state"] == "idle")["native_id"].clone();
    assert_eq!(
        printed
            .iter()
            .map(|d| d["type"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["system", "assistant", "result"]
    );
    assert_eq!(printed[0]["session_id"], native);
    assert_eq!(
        events[end]["data"],
        json!({"turn": 1, "prompt": 1, "exit": {"code": 0}, "by": null,
               // The fake claude's one model request.
               "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 3,
                         "cache_write_tokens": 7, "cost_usd": 0.0001756}})
    );
    let native_event = first(&events, "native_id");
    assert!(harness < native_event && native_event < end);
    let states: Vec<&Value> = events.iter().filter(|e| e["kind"] == "state").collect();
    assert_eq!(
        states.last().unwrap()["data"],
        json!({"state": "idle"}),
        "{events:#?}"
    );
    let diff = first(&events, "turn_diff");
    assert!(end < diff, "{events:#?}");
    let last = events
        .iter()
        .rev()
        .find(|e| e["kind"] != "turn_diff")
        .unwrap();
    assert_eq!(last["data"], json!({"state": "idle"}), "{events:#?}");

    // Pages of 2 give the same events; the page says where to go on.
    assert_eq!(all_events(&svc, id, 2), events);
    let (status, page) = svc.get(&format!("/v1/sessions/{id}/events?after=2&limit=3"));
    assert_eq!(status, 200);
    assert_eq!(page["events"].as_array().unwrap().len(), 3);
    assert_eq!(page["events"][0]["seq"], 3);
    assert_eq!(page["next_after"], 5);
    assert_eq!(page["last_seq"], events.len());
    assert_eq!(page["closed"], false);

    // A failed copy's reason is in the journal.
    let folder = svc.folder("failing");
    mark(&folder, "copying");
    let s = svc.start_session(start_body(&folder, "codex", json!({"project_copy": true})));
    let id = s["id"].as_str().unwrap();
    await_event(&svc, id, "the copy wait", |e| {
        e["kind"] == "copy_wait_began"
    });
    mark(&folder, "failed: disk full");
    let events = await_event(&svc, id, "the wait's end", |e| {
        e["kind"] == "copy_wait_ended"
    });
    let ended = &events[first(&events, "copy_wait_ended")];
    assert_eq!(ended["data"]["why"], json!({"copy_failed": "disk full"}));
}

#[test]
fn bad_event_queries_are_refused_with_a_sentence() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let s = svc.start_session(start_body(&svc.folder("q"), "codex", json!({})));
    let id = s["id"].as_str().unwrap();
    for (query, status, code, message) in [
        (
            "limit=0",
            422,
            "invalid_parameter",
            "The parameter limit must be from 1 to 1024, not 0.",
        ),
        (
            "limit=1025",
            422,
            "invalid_parameter",
            "The parameter limit must be from 1 to 1024, not 1025.",
        ),
        (
            "after=-1",
            422,
            "invalid_parameter",
            "The parameter after must be a whole number, not \"-1\".",
        ),
        (
            "since=3",
            422,
            "unknown_parameter",
            "Unknown parameter \"since\". Known parameters: after, limit.",
        ),
    ] {
        let (got, v) = svc.get(&format!("/v1/sessions/{id}/events?{query}"));
        assert_eq!(
            (got, v["code"].as_str(), v["error"].as_str()),
            (status, Some(code), Some(message)),
            "{query}"
        );
    }
    let (status, v) = svc.get("/v1/sessions/cr_nope/events");
    assert_eq!(
        (status, v["code"].as_str()),
        (404, Some("session_not_found"))
    );
    let (status, page) = svc.get(&format!("/v1/sessions/{id}/events?after=100000"));
    assert_eq!(status, 200);
    assert_eq!(page["events"], json!([]));
    assert_eq!(page["next_after"], 100000);
}

#[test]
fn a_torn_journal_line_after_kill_9_is_dropped() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("torn");
    let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": "first"})));
    let id = s["id"].as_str().unwrap().to_string();
    // The turn's end, the idle state after it and its diff (journalled
    // once the folder is recorded after the turn, which may be after the
    // idle state) are the last events.
    await_event(&svc, &id, "the idle state", |e| {
        e["data"]["state"] == "idle"
    });
    let before = await_event(&svc, &id, "turn 1's diff", |e| {
        e["kind"] == "turn_diff" && e["data"]["turn"] == 1
    })
    .len() as u64;

    svc.kill9();
    // A crash tore the line being written.
    let file = svc.state.join("events").join(format!("{id}.jsonl"));
    let mut bytes = std::fs::read(&file).unwrap();
    let whole = bytes.len();
    bytes.extend_from_slice(format!(r#"{{"seq":{},"at_ms":1,"kind":"harn"#, before + 1).as_bytes());
    std::fs::write(&file, &bytes).unwrap();
    svc.start_again();

    let events = all_events(&svc, &id, 1024);
    assert_eq!(events.len() as u64, before, "{events:#?}");
    assert_eq!(
        std::fs::read(&file).unwrap().len(),
        whole,
        "the torn bytes are cut"
    );
    // The journal goes on from the last whole event.
    let (status, _) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "second"}),
    );
    assert_eq!(status, 200);
    let events = await_event(&svc, &id, "the second turn's end", |e| {
        turn_ended(e) && e["data"]["turn"] == 2
    });
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], i as u64 + 1);
    }
    for line in std::fs::read_to_string(&file).unwrap().lines() {
        serde_json::from_str::<Value>(line).expect("every line is whole");
    }
}

#[test]
fn the_list_filters_by_workspace_and_state_and_pages_in_a_stable_order() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let mut ids = Vec::new();
    for (n, ws) in ["a", "b", "a", "b", "a"].iter().enumerate() {
        let folder = svc.folder(&format!("list-{n}"));
        let mut body = start_body(&folder, "codex", json!({"workspace": format!("ws-{ws}")}));
        body.as_object_mut().unwrap().remove("prompt");
        ids.push(svc.start_session(body)["id"].as_str().unwrap().to_string());
    }
    let (status, _) = svc.post(&format!("/v1/sessions/{}/close", ids[2]), json!({}));
    assert_eq!(status, 200);
    for id in &ids {
        svc.await_session(id, "settled", |v| v["state"] != "pending");
    }
    let list = |query: &str| -> Value {
        let (status, v) = svc.get(&format!("/v1/sessions{query}"));
        assert_eq!(status, 200, "{query}: {v}");
        v
    };
    let page_ids = |v: &Value| -> Vec<String> {
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    let all = list("");
    assert_eq!(page_ids(&all), ids, "in the order they were started");
    assert_eq!(all["next_after"], Value::Null);
    let one = &all["sessions"][0];
    for field in [
        "id",
        "workspace",
        "harness",
        "kind",
        "state",
        "waiting_for",
        "queue",
        "native_id",
        "created_ms",
        "last_activity_ms",
    ] {
        assert!(one.get(field).is_some(), "{field} in {one}");
    }
    assert!(one["last_activity_ms"].as_u64() >= one["created_ms"].as_u64());
    assert_eq!(one["queue"], json!({"length": 0, "paused": false}));

    let a = list("?workspace=ws-a");
    assert_eq!(
        page_ids(&a),
        [ids[0].clone(), ids[2].clone(), ids[4].clone()]
    );
    let closed = list("?state=closed");
    assert_eq!(page_ids(&closed), [ids[2].clone()]);
    let open_a = list("?workspace=ws-a&state=idle");
    assert_eq!(page_ids(&open_a), [ids[0].clone(), ids[4].clone()]);

    // Pages of 2, each after the last one's `next_after`, give the whole list.
    let mut seen = Vec::new();
    let mut query = "?limit=2".to_string();
    loop {
        let page = list(&query);
        seen.extend(page_ids(&page));
        match page["next_after"].as_str() {
            Some(after) => query = format!("?limit=2&after={after}"),
            None => break,
        }
    }
    assert_eq!(seen, ids);
    // A page after a session of another workspace still starts in place.
    assert_eq!(
        page_ids(&list(&format!("?workspace=ws-a&after={}", ids[1]))),
        [ids[2].clone(), ids[4].clone()]
    );

    for (query, code, message) in [
        (
            "?state=asleep",
            "invalid_parameter",
            "The parameter state must be pending, running, idle, closed or failed, not \"asleep\".",
        ),
        (
            "?limit=0",
            "invalid_parameter",
            "The parameter limit must be from 1 to 1024, not 0.",
        ),
        (
            "?owner=me",
            "unknown_parameter",
            "Unknown parameter \"owner\". Known parameters: workspace, state, after, limit.",
        ),
    ] {
        let (status, v) = svc.get(&format!("/v1/sessions{query}"));
        assert_eq!(
            (status, v["code"].as_str(), v["error"].as_str()),
            (422, Some(code), Some(message))
        );
    }
    // An ID no session has names nothing to page after: not found.
    let (status, v) = svc.get("/v1/sessions?after=cr_nope");
    assert_eq!(
        (status, v["code"].as_str(), v["error"].as_str()),
        (
            404,
            Some("session_not_found"),
            Some("No session cr_nope to list after.")
        )
    );
}

#[test]
fn interrupt_ends_the_turn_and_the_next_queued_prompt_runs() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let (id, folder, first_turn) = svc.running_session("interrupt");
    let id = id.as_str();
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "second"}),
    );
    assert_eq!(status, 200);
    assert_eq!(v["queue"]["length"], 1);

    let (status, v) = svc.post(&format!("/v1/sessions/{id}/interrupt"), json!({}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["queue"]["paused"], false);
    let second = svc.await_record(&folder, 2, Duration::from_secs(10));
    assert_eq!(second["prompt"], "second");
    assert_ne!(second["pid"], first_turn["pid"]);
    let events = await_event(&svc, id, "the second turn's end", |e| {
        turn_ended(e) && e["data"]["turn"] == 2
    });
    let interrupted = first(&events, "interrupted");
    assert_eq!(events[interrupted]["data"], json!({"turn": 1}));
    let ended = first(&events, "turn_ended");
    assert!(interrupted < ended);
    assert_eq!(events[ended]["data"]["by"], "interrupt");
    // Asked in claude's protocol, not signalled: the harness ends the turn
    // itself (its error `result` is journalled first) and, its last turn
    // having failed, exits 1 once its stdin closes.
    let result = events[interrupted..ended]
        .iter()
        .position(|e| e["kind"] == "harness" && e["data"]["type"] == "result");
    assert!(result.is_some(), "{events:?}");
    assert_eq!(events[ended]["data"]["exit"], json!({"code": 1}));
    let v = svc.await_session(id, "idle", |v| v["state"] == "idle");
    assert_eq!(v["queue"], json!({"length": 0, "paused": false}));

    // Nothing to interrupt: the view, and no event.
    await_turn_diff(&svc, id, 2);
    let before = all_events(&svc, id, 1024).len();
    let (status, _) = svc.post(&format!("/v1/sessions/{id}/interrupt"), json!({}));
    assert_eq!(status, 200);
    assert_eq!(all_events(&svc, id, 1024).len(), before);

    // A closed session refuses it, as the other actions do.
    svc.post(&format!("/v1/sessions/{id}/close"), json!({}));
    let (status, v) = svc.post(&format!("/v1/sessions/{id}/interrupt"), json!({}));
    assert_eq!(
        (status, v["code"].as_str()),
        (409, Some("session_finished"))
    );
    assert_eq!(v["error"], format!("Session {id} is closed."));
    let (status, v) = svc.get(&format!("/v1/sessions/{id}/interrupt"));
    assert_eq!(
        (status, v["code"].as_str()),
        (405, Some("method_not_allowed"))
    );
    let (status, v) = svc.post("/v1/sessions/cr_nope/interrupt", json!({}));
    assert_eq!(
        (status, v["code"].as_str()),
        (404, Some("session_not_found"))
    );
}
