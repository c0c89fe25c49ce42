//! A session's budget, with the fake claude (each model request it makes
//! uses 10 input, 5 output, 3 cache read and 7 cache write tokens: 25, and
//! 0.0001756 USD).

use std::time::Duration;

use room_kit::events::all_events;
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

fn of_kind(svc: &Service, id: &str, kind: &str) -> Vec<Value> {
    all_events(svc, id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == kind)
        .map(|e| e["data"].clone())
        .collect()
}

#[test]
fn a_spent_budget_refuses_messages_until_the_app_raises_it() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("budget");
    // Two turns of one request each: 50 tokens reach a budget of 40.
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": "one", "max_tokens": 40}),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    assert_eq!(s["budget"], json!({"max_cost_usd": null, "max_tokens": 40}));
    assert_eq!(s["budget_spent"], false);
    svc.await_session(&id, "idle", |v| v["state"] == "idle");
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "two"}),
    );
    assert_eq!(status, 200, "{v}");
    let view = svc.await_session(&id, "spent", |v| {
        v["budget_spent"] == true && v["state"] == "idle"
    });
    assert_eq!(view["usage"]["input_tokens"], 20);
    let spent = of_kind(&svc, &id, "budget_spent");
    assert_eq!(spent.len(), 1, "{spent:?}");
    assert_eq!(spent[0]["used"]["output_tokens"], 10);
    assert_eq!(spent[0]["budget"]["max_tokens"], 40);
    let ended = of_kind(&svc, &id, "turn_ended");
    assert_eq!(ended[1]["by"], "budget", "{ended:?}");

    for (prompt, deliver) in [("three", "queue"), ("three", "steer")] {
        let (status, v) = svc.post(
            &format!("/v1/sessions/{id}/messages"),
            json!({"prompt": prompt, "deliver": deliver}),
        );
        assert_eq!(
            (status, v["code"].as_str()),
            (409, Some("budget_spent")),
            "{v}"
        );
        assert_eq!(
            v["error"],
            format!(
                "Session {id} has spent its budget; raise it with POST /v1/sessions/{id}/budget."
            )
        );
    }
    for bad in [
        json!({"max_tokens": 0}),
        json!({"max_tokens": 1.5}),
        json!({"max_cost_usd": -1}),
        json!({"max": 1}),
    ] {
        let (status, v) = svc.post(&format!("/v1/sessions/{id}/budget"), bad.clone());
        assert_eq!(status, 422, "{bad}: {v}");
    }
    // A request that says nothing lifts no limit.
    let (status, v) = svc.call("POST", &format!("/v1/sessions/{id}/budget"), None);
    assert_eq!(
        (status, v["code"].as_str()),
        (422, Some("invalid_body")),
        "{v}"
    );
    // Raised: the message is taken and runs; a restart keeps the budget.
    // A whole number may be written as JSON likes (1000.0).
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/budget"),
        json!({"max_tokens": 1000.0, "max_cost_usd": 1.5}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["budget_spent"], false);
    assert_eq!(of_kind(&svc, &id, "budget_set").len(), 1);
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "three"}),
    );
    assert_eq!(status, 200, "{v}");
    svc.await_record(&folder, 3, Duration::from_secs(10));
    svc.restart();
    assert_eq!(
        svc.session(&id)["budget"],
        json!({"max_cost_usd": 1.5, "max_tokens": 1000})
    );
}
