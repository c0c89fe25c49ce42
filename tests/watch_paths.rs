//! The watch sees a change anywhere on the status file's path: a
//! parent renamed into place, a grandparent renamed into place (also over
//! one renamed away), a parent deleted and made again. Polls are a minute
//! apart here, so only the watch can start a harness within a second of
//! `ready`.

use std::path::Path;
use std::time::Duration;

use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// Polls a minute apart: a start within a second is the watch's doing.
fn service() -> Service {
    Service::start(ROOM_CORE, json!({"poll_ms": 60_000}))
}

/// Starts a promised copy into `folder` and waits until it holds on `mark`.
fn waiting_start(svc: &Service, folder: &Path, mark: &str) -> String {
    let s = svc.start_session(start_body(folder, "codex", json!({"project_copy": true})));
    let id = s["id"].as_str().unwrap().to_string();
    svc.await_session(&id, "the wait", |v| v["waiting_for"]["mark"] == mark);
    id
}

/// Lands the project and a `ready` mark for `folder` at `staged`, a folder
/// that is not on the start's path yet.
fn stage_ready(staged: &Path) {
    land_project(staged);
    mark(staged, "ready\n");
}

/// The harness ran in `folder` within a second of `ready_ms` (Unix ms).
fn started_within_a_second(svc: &Service, folder: &Path, ready_ms: u64) -> Value {
    let record = svc.await_record(folder, 1, Duration::from_secs(5));
    let started = record["started_ms"].as_u64().unwrap();
    assert!(
        started.saturating_sub(ready_ms) < 1_000,
        "the harness started {} ms after ready\n{}",
        started.saturating_sub(ready_ms),
        svc.log()
    );
    assert_eq!(names(&record), PROJECT_NAMES);
    record
}

/// A start into `<top>/<below>`, where `<top>` does not exist yet, waits
/// on a missing mark; the copy fills `<top>.tmp/<below>`, marks it ready and
/// renames `<top>.tmp` into place.
fn renamed_into_place(top: &str, below: &str) {
    let svc = service();
    let folder = svc.folder(top).join(below);
    std::fs::create_dir_all(svc.folder("")).unwrap();
    waiting_start(&svc, &folder, "missing");
    let staged = svc.folder(&format!("{top}.tmp"));
    stage_ready(&staged.join(below));
    std::fs::rename(&staged, svc.folder(top)).unwrap();
    let ready_ms = unix_ms();
    started_within_a_second(&svc, &folder, ready_ms);
}

#[test]
fn a_parent_renamed_into_place_starts_the_harness_within_a_second_of_ready() {
    renamed_into_place("sandbox", "code");
}

#[test]
fn a_grandparent_renamed_into_place_starts_the_harness_within_a_second_of_ready() {
    // Neither the grandparent nor the parent exists yet.
    renamed_into_place("project", "sandbox/code");
}

#[test]
fn a_grandparent_renamed_over_one_renamed_away_starts_the_harness_within_a_second_of_ready() {
    let svc = service();
    // The path exists and says copying; watching only the parent would see
    // nothing of what follows.
    let grandparent = svc.folder("project");
    let folder = grandparent.join("sandbox/code");
    mark(&folder, "copying\n");
    waiting_start(&svc, &folder, "copying");
    let staged = svc.folder("project.new");
    stage_ready(&staged.join("sandbox/code"));
    std::fs::rename(&grandparent, svc.folder("project.old")).unwrap();
    std::fs::rename(&staged, &grandparent).unwrap();
    let ready_ms = unix_ms();
    started_within_a_second(&svc, &folder, ready_ms);
    // The folder renamed away was left alone.
    assert_eq!(
        std::fs::read_to_string(status_file(&svc.folder("project.old").join("sandbox/code")))
            .unwrap(),
        "copying\n"
    );
}

#[test]
fn a_parent_deleted_and_recreated_starts_the_harness_within_a_second_of_ready() {
    let svc = service();
    let parent = svc.folder("sandbox");
    let folder = parent.join("code");
    mark(&folder, "copying\n");
    let id = waiting_start(&svc, &folder, "copying");
    std::fs::remove_dir_all(&parent).unwrap();
    // Seen at once: the mark is gone.
    svc.await_session(&id, "the mark to go", |v| {
        v["waiting_for"]["mark"] == "missing"
    });
    std::fs::create_dir_all(&parent).unwrap();
    land_project(&folder);
    mark(&folder, "ready\n");
    let ready_ms = unix_ms();
    started_within_a_second(&svc, &folder, ready_ms);
}
