//! The demo's fourth part (issue 32): a session's turns change files, by
//! their shell, and someone edits the folder between them; each turn's
//! `turn_diff` lists what that turn changed, the edit between turns is its
//! own `folder_changed`, and the diff route serves the unified diff.

use std::path::Path;
use std::time::Duration;

use room_kit::events::await_turn_diff;
use room_kit::Service;
use serde_json::{json, Value};

use super::wait::{wait_for, Error};

/// Runs two turns with an edit between them and prints what each changed;
/// the session's ID.
pub fn run(core: &Service, root: &Path) -> Result<String, Error> {
    let folder = root.join("diffs");
    let start = json!({
        "workspace": "demo-workspace",
        "folder": folder,
        "harness": "claude",
        "prompt": "run: printf 'one\\ntwo\\n' > notes.txt && echo draft > draft.txt",
    });
    println!("\n== POST /v1/sessions {start}");
    let s = core.start_session(start);
    let id = s["id"].as_str().unwrap_or_default().to_string();
    println!(
        "   turn 1 changed: {}",
        files(&await_turn_diff(core, &id, 1))
    );
    std::fs::write(folder.join("by-hand.txt"), "written between turns\n")?;
    let message = json!({"prompt": "run: sed -i s/two/TWO/ notes.txt && rm draft.txt"});
    println!("\n== (by-hand.txt written by hand), then POST /v1/sessions/{id}/messages {message}");
    let (status, v) = core.post(&format!("/v1/sessions/{id}/messages"), message);
    if status != 200 {
        return Err(format!("the message was refused: {status} {v}").into());
    }
    println!(
        "   turn 2 changed: {}",
        files(&await_turn_diff(core, &id, 2))
    );
    let between = wait_for(Duration::from_secs(10), || {
        room_kit::events::all_events(core, &id, 1024)
            .into_iter()
            .find(|e| e["kind"] == "folder_changed")
    })?;
    println!(
        "   changed between the turns (folder_changed): {}",
        files(&between["data"])
    );
    let (status, diff) = core.get(&format!("/v1/sessions/{id}/turns/2/diff"));
    if status != 200 {
        return Err(format!("the diff was refused: {status} {diff}").into());
    }
    println!("\n== GET /v1/sessions/{id}/turns/2/diff");
    for line in diff["diff"].as_str().unwrap_or_default().lines() {
        println!("   {line}");
    }
    println!(
        "\nDone: each turn's diff holds what that turn changed, and the edit between them is its own."
    );
    Ok(id)
}

/// A diff's (or a rewind's) files as `path (status)`, comma-separated.
pub(super) fn files(diff: &Value) -> String {
    diff["files"]
        .as_array()
        .map(|files| {
            files
                .iter()
                .map(|f| {
                    format!(
                        "{} ({})",
                        f["path"].as_str().unwrap_or("?"),
                        f["status"].as_str().unwrap_or("?")
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_else(|| format!("nothing recorded: {}", diff["missing"]))
}
