//! The demo's third part (issue 31): a session started with a model, an
//! effort, instructions and an image, and what the (fake) harness got,
//! then a message that switches the model; with `--keep`,
//! one more session that waits for an approval, and the service left
//! running with the console's address printed, token in its fragment.

use std::path::Path;
use std::time::Duration;

use room_kit::Service;
use serde_json::{json, Value};

use super::wait::{wait_for, Error};

/// A 1x1 PNG, in base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// Starts the session with options and an image and shows what its
/// harness got; then switches its model with a message.
pub fn run(core: &Service, root: &Path) -> Result<(), Error> {
    let folder = root.join("options");
    let image = json!({"type": "image", "media_type": "image/png", "data": PNG});
    let start = json!({
        "workspace": "demo-workspace",
        "folder": folder,
        "harness": "claude",
        "model": "claude-haiku-4-5",
        "effort": "low",
        "instructions": "Answer in one short line.",
        "prompt": "Which model do you run, and what is in the picture?",
        "attachments": [image],
    });
    // The image's base64 is shown cut: it is the bytes the app sends.
    println!(
        "\n== POST /v1/sessions {}",
        start.to_string().replace(PNG, "iVBORw0KGgo…")
    );
    let s = core.start_session(start);
    let id = s["id"].as_str().unwrap_or_default().to_string();
    println!(
        "   session {id}: model={} effort={} instructions={}",
        s["model"], s["effort"], s["instructions"]
    );
    wait_for(Duration::from_secs(10), || {
        (core.session(&id)["state"] == "idle").then_some(())
    })?;
    let record = wait_for(Duration::from_secs(10), || {
        core.records_in(&folder).into_iter().next()
    })?;
    let argv: Vec<&str> = record["argv"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    println!("\n== the harness's command line carried them:");
    for w in argv.windows(2) {
        if ["--model", "--effort", "--append-system-prompt"].contains(&w[0]) {
            println!("   {} {:?}", w[0], w[1]);
        }
    }
    println!("\n== the harness answered: {}", answer(core, &id));
    let message = json!({"prompt": "Now on opus.", "model": "opus"});
    println!("\n== POST /v1/sessions/{id}/messages {message}");
    let (status, v) = core.post(&format!("/v1/sessions/{id}/messages"), message);
    if status != 200 {
        return Err(format!("the message was refused: {status} {v}").into());
    }
    wait_for(Duration::from_secs(10), || {
        let ended = room_kit::events::all_events(core, &id, 1024)
            .iter()
            .filter(|e| e["kind"] == "turn_ended")
            .count();
        (ended == 2 && core.session(&id)["state"] == "idle").then_some(())
    })?;
    let models: Vec<Value> = room_kit::events::all_events(core, &id, 1024)
        .into_iter()
        .filter(|e| e["kind"] == "turn_started")
        .map(|e| e["data"]["model"].clone())
        .collect();
    println!(
        "   each turn_started names its model: {}",
        Value::Array(models)
    );
    println!(
        "\nDone: the session ran with the model, effort, instructions and image the app chose, \
         and a message switched its model."
    );
    Ok(())
}

/// The text of the last answer session `id`'s harness printed.
fn answer(core: &Service, id: &str) -> String {
    room_kit::events::all_events(core, id, 1024)
        .into_iter()
        .rev()
        .filter(|e| e["kind"] == "harness" && e["data"]["type"] == "assistant")
        .find_map(|e| {
            e["data"]["message"]["content"][0]["text"]
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// Leaves a session waiting for an approval, prints the console's address
/// and waits for Ctrl-C (which stops the service too: it is in the same
/// process group).
pub fn keep(core: &Service, root: &Path) -> Result<(), Error> {
    let start = json!({
        "workspace": "demo-workspace",
        "folder": root.join("approval"),
        "harness": "claude",
        "approvals": "app",
        "model": "claude-haiku-4-5",
        "prompt": "ask: echo approved from the console",
    });
    println!("\n== POST /v1/sessions {start}");
    let s = core.start_session(start);
    let id = s["id"].as_str().unwrap_or_default().to_string();
    wait_for(Duration::from_secs(10), || {
        let v = core.session(&id);
        (v["pending_approvals"]
            .as_array()
            .is_some_and(|a| !a.is_empty()))
        .then_some(())
    })?;
    println!("   session {id} waits for an approval of `echo approved from the console`");
    println!(
        "\n== the console (the token is in the fragment, which the browser never sends):\n   {}/#token={}\n\nThe service runs until Ctrl-C.",
        core.base,
        core.token()
    );
    let mut set = nix::sys::signal::SigSet::empty();
    set.add(nix::sys::signal::Signal::SIGINT);
    set.add(nix::sys::signal::Signal::SIGTERM);
    set.thread_block()?;
    set.wait()?;
    println!("\n== stopping");
    Ok(())
}
