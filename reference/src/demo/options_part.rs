//! The demo's third part (issue 31): a session started with a model, an
//! effort and instructions, and what the (fake) harness got; with `--keep`,
//! one more session that waits for an approval, and the service left
//! running with the console's address printed, token in its fragment.

use std::path::Path;
use std::time::Duration;

use room_kit::Service;
use serde_json::{json, Value};

use super::wait::{wait_for, Error};

/// Starts the session with options and shows what its harness got.
pub fn run(core: &Service, root: &Path) -> Result<(), Error> {
    let folder = root.join("options");
    let start = json!({
        "workspace": "demo-workspace",
        "folder": folder,
        "harness": "claude",
        "model": "claude-haiku-4-5",
        "effort": "low",
        "instructions": "Answer in one short line.",
        "prompt": "Which model do you run?",
    });
    println!("\n== POST /v1/sessions {start}");
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
    println!("\nDone: the session ran with the model, effort and instructions the app chose.");
    Ok(())
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
