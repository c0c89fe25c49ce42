//! Whatever a local process leaves at a session's status path (a FIFO, a
//! folder, a symlink to /dev/zero, a 10 MB file), a start answers 201 at
//! once, a promised start holds, an unpromised one starts, every other
//! request answers within 1 s, SIGTERM stops the service and a restart with
//! the same thing in place serves.

use std::path::Path;
use std::time::{Duration, Instant};

use room_kit::procs::stops_within_2_s;
use room_kit::*;
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// What the test leaves at a status path.
#[derive(Clone, Copy)]
enum Odd {
    Fifo,
    Folder,
    DevZero,
    TenMegabytes,
}

fn leave(odd: Odd, folder: &Path) {
    let path = status_file(folder);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    match odd {
        Odd::Fifo => {
            nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap()
        }
        Odd::Folder => std::fs::create_dir(&path).unwrap(),
        Odd::DevZero => std::os::unix::fs::symlink("/dev/zero", &path).unwrap(),
        Odd::TenMegabytes => std::fs::write(&path, vec![b'c'; 10_000_000]).unwrap(),
    }
}

/// A start answered 201 within 1 s.
fn start_at_once(svc: &Service, body: serde_json::Value) -> serde_json::Value {
    let t = Instant::now();
    let v = svc.start_session(body);
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "took {:?}",
        t.elapsed()
    );
    v
}

/// A request answered within 1 s.
fn quick(svc: &Service, path: &str) -> serde_json::Value {
    let t = Instant::now();
    let (status, v) = svc.get(path);
    assert_eq!(status, 200, "{path}: {v}");
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "{path} took {:?}",
        t.elapsed()
    );
    v
}

fn holds_nothing_up(odd: Odd) {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    let promised = svc.folder("promised");
    let unpromised = svc.folder("unpromised");
    leave(odd, &promised);
    leave(odd, &unpromised);

    let waiting = start_at_once(
        &svc,
        start_body(&promised, "claude", json!({"project_copy": true})),
    );
    let waiting = waiting["id"].as_str().unwrap().to_string();
    start_at_once(&svc, start_body(&unpromised, "codex", json!({})));
    // The unpromised start runs: the thing at its status path is no mark.
    svc.await_record(&unpromised, 1, Duration::from_secs(10));
    // The promised one holds, as for a missing mark, across several polls.
    let v = svc.await_session(&waiting, "the wait", |v| !v["waiting_for"].is_null());
    assert_eq!(v["waiting_for"]["mark"], "missing", "{v}");
    std::thread::sleep(Duration::from_millis(600));
    let v = quick(&svc, &format!("/v1/sessions/{waiting}"));
    assert_eq!(v["state"], "pending", "{v}");
    quick(&svc, "/v1/capabilities");
    quick(&svc, "/metrics");
    assert!(svc.records_in(&promised).is_empty());

    // SIGTERM stops it within 2 s.
    let pid = svc.pid().unwrap();
    stops_within_2_s(pid, nix::sys::signal::Signal::SIGTERM, || svc.log());

    // A restart with it still in place serves, and the start waits again.
    svc.restart();
    let v = quick(&svc, &format!("/v1/sessions/{waiting}"));
    assert_eq!(v["state"], "pending", "{v}");
    let v = svc.await_session(&waiting, "the wait after the restart", |v| {
        v["waiting_for"]["mark"] == "missing"
    });
    assert_eq!(v["state"], "pending");
    start_at_once(&svc, start_body(&svc.folder("later"), "codex", json!({})));
}

#[test]
fn a_fifo_as_the_status_file_holds_nothing_up() {
    holds_nothing_up(Odd::Fifo);
}

#[test]
fn a_folder_as_the_status_file_holds_nothing_up() {
    holds_nothing_up(Odd::Folder);
}

#[test]
fn a_symlink_to_dev_zero_as_the_status_file_holds_nothing_up() {
    holds_nothing_up(Odd::DevZero);
}

#[test]
fn a_ten_megabyte_status_file_holds_nothing_up() {
    holds_nothing_up(Odd::TenMegabytes);
}
