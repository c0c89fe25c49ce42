//! A prompt's images (`attachments` on a start or a message): refused with
//! the rule named when they break one, kept until their prompt is done
//! (across a restart), passed to each CLI its own way (what the fake
//! harnesses saw: claude's image blocks, codex's `data:` URL inputs), and
//! journalled as their type, size and sha256, never their bytes.

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use room_kit::events::{all_events, await_turns_ended, journal};
use room_kit::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// A 1x1 GIF.
const GIF: &str = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7";

fn image(media_type: &str, data: &str) -> Value {
    json!({"type": "image", "media_type": media_type, "data": data})
}

/// What the fake harness and the journal say of an image: its type, its
/// decoded size and its sha256.
fn seen(media_type: &str, data: &str) -> Value {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    let sha: String = Sha256::digest(&raw)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    json!({"media_type": media_type, "bytes": raw.len(), "sha256": sha})
}

/// Session `id`'s image store in the state dir.
fn store(state: &Path, id: &str) -> std::path::PathBuf {
    state.join("sessions").join(format!("{id}.images"))
}

#[test]
fn a_starts_images_reach_claude_as_image_blocks_and_the_journal_keeps_no_bytes() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("claude-image");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": "what is this?", "attachments": [image("image/png", PNG)]}),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    await_turns_ended(&svc, &id, 1);
    let record = svc.await_record(&folder, 1, Duration::from_secs(10));
    assert_eq!(record["prompts"], json!(["what is this?"]), "{record}");
    assert_eq!(record["images"], json!([[seen("image/png", PNG)]]));
    // The journal names the image; its bytes are nowhere in it.
    let queued: Vec<Value> = all_events(&svc, &id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == "prompt_queued")
        .collect();
    assert_eq!(
        queued[0]["data"]["attachments"],
        json!([seen("image/png", PNG)])
    );
    let text = serde_json::to_string(&journal(&svc.state, &id)).unwrap();
    assert!(!text.contains(&PNG[..40]), "the journal holds the bytes");
    let answer = all_events(&svc, &id, 1024)
        .into_iter()
        .find(|e| e["kind"] == "harness" && e["data"]["type"] == "assistant")
        .unwrap();
    assert!(
        answer
            .to_string()
            .contains("I see 1 image: image/png of 70 bytes"),
        "{answer}"
    );
    // Its prompt done, the image is gone from the state dir.
    assert!(
        !store(&svc.state, &id).exists(),
        "the image outlived its prompt"
    );
}

#[test]
fn a_messages_images_reach_codex_and_a_lingering_claude_in_order() {
    let svc = Service::start(ROOM_CORE, json!({"linger_ms": 30000}));
    for harness in ["codex", "claude"] {
        let folder = svc.folder(&format!("{harness}-images"));
        let s = svc.start_session(start_body(&folder, harness, json!({"prompt": "first"})));
        let id = s["id"].as_str().unwrap().to_string();
        await_turns_ended(&svc, &id, 1);
        let (status, v) = svc.post(
            &format!("/v1/sessions/{id}/messages"),
            json!({"prompt": "compare them",
                   "attachments": [image("image/gif", GIF), image("image/png", PNG)]}),
        );
        assert_eq!(status, 200, "{v}");
        await_turns_ended(&svc, &id, 2);
        let records = svc.records_in(&folder);
        assert_eq!(records.len(), 1, "{harness}: one process");
        assert_eq!(
            records[0]["images"],
            json!([[], [seen("image/gif", GIF), seen("image/png", PNG)]]),
            "{harness}"
        );
        assert_eq!(records[0]["prompts"][1], "compare them");
    }
}

#[test]
fn a_queued_prompts_images_survive_a_kill_9() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("kept");
    let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": "first"})));
    let id = s["id"].as_str().unwrap().to_string();
    await_turns_ended(&svc, &id, 1);
    let (status, _) = svc.post(&format!("/v1/sessions/{id}/stop"), json!({}));
    assert_eq!(status, 200);
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "later", "attachments": [image("image/png", PNG)]}),
    );
    assert_eq!(status, 200, "{v}");
    assert!(store(&svc.state, &id).is_dir());
    svc.kill9();
    svc.start_again();
    svc.await_listen();
    let (status, v) = svc.post(&format!("/v1/sessions/{id}/resume"), json!({}));
    assert_eq!(status, 200, "{v}");
    let record = svc.await_record(&folder, 2, Duration::from_secs(10));
    assert_eq!(record["images"], json!([[seen("image/png", PNG)]]));
    await_turns_ended(&svc, &id, 2);
    assert!(!store(&svc.state, &id).exists());
}

#[test]
fn images_that_break_a_rule_are_refused_with_the_rule_named_and_nothing_is_kept() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("refused-images");
    let s = svc.start_session(start_body(&folder, "claude", json!({"prompt": "first"})));
    let id = s["id"].as_str().unwrap().to_string();
    await_turns_ended(&svc, &id, 1);
    let messages = format!("/v1/sessions/{id}/messages");
    let cases = [
        (
            json!({"prompt": "x", "attachments": [image("image/jpeg", PNG)]}),
            "attachments[0]: the data is image/png, not the image/jpeg declared.",
        ),
        (
            json!({"prompt": "x", "attachments": [image("image/png", "aGVsbG8=")]}),
            "attachments[0]: the data is not a PNG, JPEG, GIF or WebP image (its first bytes say none of them).",
        ),
        (
            json!({"prompt": "x", "deliver": "steer", "attachments": [image("image/png", PNG)]}),
            "A steered message joins the running turn as text: model, effort and attachments go \
             with a queued message.",
        ),
        (
            json!({"prompt": "x", "attachments": vec![image("image/png", PNG); 21]}),
            "attachments holds 21 images; a prompt carries at most 20.",
        ),
    ];
    for (body, error) in cases {
        let (status, v) = svc.post(&messages, body.clone());
        assert_eq!(
            (status, &v["code"], v["error"].as_str().unwrap_or_default()),
            (422, &json!("invalid_field"), error),
            "{body}"
        );
    }
    let (status, v) = svc.post(
        "/v1/sessions",
        start_body(
            &svc.folder("no-prompt"),
            "claude",
            json!({"prompt": null, "attachments": [image("image/png", PNG)]}),
        ),
    );
    assert_eq!(
        (status, v["error"].as_str().unwrap_or_default()),
        (
            422,
            "attachments go with a first prompt: this start has none."
        ),
        "{v}"
    );
    assert!(!store(&svc.state, &id).exists(), "nothing was kept");
    let queued = all_events(&svc, &id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == "prompt_queued")
        .count();
    assert_eq!(queued, 1, "nothing was queued");
}
