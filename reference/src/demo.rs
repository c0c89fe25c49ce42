//! `room-demo`: starts the service (the room-core binary) on its defaults
//! in a temp state dir, starts a session that promises a project copy into a
//! temp folder, shows it pending while the copy runs, writes the files and
//! `ready`, and shows it started with the names its harness saw. The second
//! part (`loop_part`) runs a loop's check script through the reference
//! website and shows what `room-cli loop list` says afterwards. The third
//! (`options_part`) starts a session with a model, an effort,
//! instructions and an image, shows what its harness got, and switches its
//! model with a message. The fourth (`diff_part`) runs two turns that
//! change files, with an edit by hand between them, and shows each turn's
//! diff and the edit between them as its own entry. The fifth
//! (`rewind_part`) rewinds that session's folder to turn 1 after a dry run
//! that names the edit it would undo. With `--keep` it
//! leaves a session waiting for an approval and the service running, and
//! prints the console's address.

mod diff_part;
mod loop_part;
mod options_part;
mod rewind_part;
mod wait;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use room_kit::{land_project, Service};
use serde_json::{json, Value};

use wait::{wait_for, Error};

/// Runs the demo (with `keep`, the service stays up until Ctrl-C); the
/// temp folder is removed at the end.
pub fn run(keep: bool) -> Result<(), Error> {
    let bins = binaries()?;
    let root = std::env::temp_dir().join(format!("room-core-demo-{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    // The agent account reaches its socket and room-cli in here.
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755))?;
    let result = demo(&root, &bins, keep);
    let _ = std::fs::remove_dir_all(&root);
    result
}

/// The binaries the demo starts: room-core, room-cli, room-website.
type Binaries = [PathBuf; 3];

/// The service's binaries and the website's, beside this one (built first
/// when cargo ran the demo: `cargo run` builds room-demo only).
fn binaries() -> Result<Binaries, Error> {
    let names = ["room-core", "room-cli", "room-website"];
    let dir = crate::workspace::profile_dir()?;
    if std::env::var_os("CARGO").is_some() && names.iter().any(|n| !dir.join(n).exists()) {
        println!(
            "== building room-core, room-cli and room-website (cargo run builds room-demo only)"
        );
    }
    crate::workspace::binaries(names)
}

fn demo(root: &Path, [core, cli, website]: &Binaries, keep: bool) -> Result<(), Error> {
    let folder = root.join("code");
    // Part two's website: Core is told where it will listen, and how to sign in.
    let agent = loop_part::Agent::detect();
    let website_port = room_kit::free_port();
    let signin = uuid::Uuid::new_v4().simple().to_string();
    // The fake harnesses (the kit's default) even where the real CLIs are
    // installed: the demo needs no network, and they record what each
    // harness saw; they run as the agent account where there is one.
    let mut svc = Service::builder(core)
        .root(root)
        .config(json!({
            // The service makes its own token, as in production.
            "token": null,
            "agent_socket": root.join("agent.sock"),
            "agent_uid": agent.uid,
            "website_url": format!("http://127.0.0.1:{website_port}"),
            "website_token": signin,
        }))
        .log_filter("warn")
        .inherit_output()
        .prepare();
    println!(
        "== starting room-core with the fake harnesses, state dir {}",
        svc.state.display()
    );
    svc.start_again();

    let start = json!({
        "workspace": "demo-workspace",
        "folder": folder,
        "harness": "claude",
        "project_copy": true,
        "prompt": "Which files do you see?",
    });
    println!("\n== POST /v1/sessions {start}");
    let session = svc.start_session(start);
    let id = session["id"].as_str().unwrap_or_default().to_string();
    show(&session);

    std::thread::sleep(Duration::from_secs(1));
    let status_file = room_core::files::status_file(&folder);
    println!("\n== the app marks {} as copying", status_file.display());
    std::fs::write(&status_file, "copying\n")?;
    std::thread::sleep(Duration::from_millis(500));
    show(&svc.session(&id));

    println!("\n== the files land, then the mark says ready");
    land_project(&folder);
    std::fs::write(&status_file, "ready\n")?;
    let started = wait_for(Duration::from_secs(10), || {
        let v = svc.session(&id);
        (v["state"] != "pending" && !v["native_id"].is_null()).then_some(v)
    })?;
    show(&started);

    let record = wait_for(Duration::from_secs(10), || svc.records().into_iter().next())?;
    println!(
        "\n== the harness ({}) started in {} and saw {}",
        record["harness"], record["cwd"], record["names"]
    );
    println!("\nDone: the session waited for its project copy, then started.");
    loop_part::run(&loop_part::Context {
        root,
        core: &svc,
        agent: &agent,
        website_port,
        signin: &signin,
        cli,
        website,
    })?;
    options_part::run(&svc, root)?;
    let id = diff_part::run(&svc, root)?;
    rewind_part::run(&svc, root, &id)?;
    if keep {
        options_part::keep(&svc, root)?;
    }
    Ok(())
}

fn show(v: &Value) {
    println!(
        "   session {}: state={} waiting_for={} native_id={} agent_start_ms={}",
        v["id"], v["state"], v["waiting_for"], v["native_id"], v["agent_start_ms"]
    );
}
