//! The harness path on this branch: the agent socket started in-process
//! (`agent::start` with a `Shared` built here), a plain `sh` registered in
//! `HarnessPids` as a session's harness, and its tool command run through the
//! real room-cli. A harness above the caller always wins over a marker.

mod in_process;

use in_process::InProcess;
use room_core::procfs::ProcKey;
use room_kit::{FakeWebsite, LOOP_ID};
use serde_json::json;

#[test]
fn a_harness_session_wins_over_a_loop_marker() {
    let web = FakeWebsite::start();
    let core = InProcess::start(&web);

    // The harness's tool command carries a marker: the session still wins.
    let (out, _) = core.harness_runs(
        Some("cr_seed"),
        &format!("CLOUDROOM_LOOP={LOOP_ID} room-cli loop list"),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "{\"ok\":true}\n");
    assert_eq!(
        web.calls(),
        vec![(
            "/api/core/automation".to_string(),
            json!({"action": "list", "session": "cr_seed"})
        )]
    );

    // Even commands a script may not run go through as the session.
    let (out, _) = core.harness_runs(
        Some("cr_seed"),
        &format!("env CLOUDROOM_LOOP={LOOP_ID} room-cli loop report done"),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        web.calls().pop().unwrap().1,
        json!({"action": "report", "session": "cr_seed", "args": ["done"]})
    );
    let (out, _) = core.harness_runs(Some("cr_seed"), "room-cli thread spawn --top-level go");
    assert_eq!(out.code, 0, "{out:?}");
    let (path, body) = web.calls().pop().unwrap();
    assert_eq!(path, "/api/core/launch");
    assert_eq!(body["session"], "cr_seed");
    assert!(body.get("automation").is_none(), "{body}");

    // The same shell, not registered as a harness: the marker decides.
    let (out, _) = core.harness_runs(
        None,
        &format!("CLOUDROOM_LOOP={LOOP_ID} room-cli loop list"),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        web.calls().pop().unwrap().1,
        json!({"action": "list", "automation": LOOP_ID})
    );
    assert_eq!(web.calls().len(), 4);
}

#[test]
fn a_recycled_pid_is_not_taken_for_a_harness() {
    let web = FakeWebsite::start();
    let core = InProcess::start(&web);
    // A harness that was reaped but whose entry is still there (a `setsid`
    // descendant holds its stderr open), and its pid now belongs to this
    // shell: same pid, another start time.
    let (out, _) = core.runs_under("room-cli loop list", |shell| {
        let reaped = ProcKey {
            start_time: shell.start_time - 1,
            ..shell
        };
        Some((reaped, "cr_reaped".to_string()))
    });
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "Run cloudroom loop from a Cloudroom cloud thread or from a loop's check script (marked by CLOUDROOM_LOOP)\n"
    );
    assert_eq!(web.calls(), vec![], "nothing reaches the website");
    // The shell registered under its own start time is the harness.
    let (out, _) = core.harness_runs(Some("cr_live"), "room-cli loop list");
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        web.calls(),
        vec![(
            "/api/core/automation".to_string(),
            json!({"action": "list", "session": "cr_live"})
        )]
    );
}

#[test]
fn the_socket_is_the_service_accounts_only_and_goes_away_on_stop() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let web = FakeWebsite::start();
    let mut core = InProcess::start(&web);
    let meta = std::fs::metadata(&core.socket).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    core.server.take().unwrap().stop();
    assert!(!core.socket.exists());
}
