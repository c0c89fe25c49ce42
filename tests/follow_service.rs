//! The service as a whole: `/v1/ready` and sd_notify around the restore and
//! the stop, `/v1/health`, the new `/metrics` counters and gauges, and
//! `--help` / `--version` of both binaries.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use room_kit::events::{all_events, await_event, await_turn_diff, turn_ended};
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// What one probe of `/v1/ready` saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    Refused,
    Status(u16),
}

fn probe(addr: SocketAddr, path: &str) -> (Probe, String) {
    let mut s = match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
        Ok(s) => s,
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
            return (Probe::Refused, String::new())
        }
        Err(e) => panic!("connect: {e}"),
    };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no answer: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (Probe::Status(status), body)
}

fn recv(socket: &UnixDatagram) -> String {
    let mut buf = [0u8; 256];
    let n = socket.recv(&mut buf).expect("a notification in time");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn ready_and_sd_notify_around_the_restore_and_the_stop() {
    // A service with sessions to restore, stopped.
    let mut svc = Service::start(ROOM_CORE, json!({}));
    let mut ids = Vec::new();
    for n in 0..20 {
        let folder = svc.folder(&format!("r{n}"));
        let body = start_body(&folder, "codex", json!({"project_copy": n % 2 == 0}));
        ids.push(svc.start_session(body)["id"].as_str().unwrap().to_string());
    }
    for id in ids.iter().skip(1).step_by(2) {
        svc.await_session(id, "started", |v| v["state"] == "idle");
    }
    svc.stop();

    // The same state dir on a known port, with NOTIFY_SOCKET, probed from
    // the moment it starts.
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    svc.set_config("listen", json!(addr.to_string()));
    let notify_path = svc.root.join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut child = svc
        .command()
        .env("NOTIFY_SOCKET", &notify_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    loop {
        let (p, _) = probe(addr, "/v1/ready");
        if seen.last() != Some(&p) {
            seen.push(p);
        }
        if p == Probe::Status(200) {
            break;
        }
        assert!(Instant::now() < deadline, "never ready: {seen:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
    // Refused (not bound yet) or 503, and then 200, never back.
    assert!(
        seen.iter()
            .all(|p| matches!(p, Probe::Refused | Probe::Status(503 | 200))),
        "{seen:?}"
    );
    // Once ready, every session is there, and systemd was told.
    let base = format!("http://{addr}");
    let (_, list) = get(&base, "/v1/sessions");
    assert_eq!(list["sessions"].as_array().unwrap().len(), ids.len());
    assert_eq!(recv(&notify), "READY=1");
    let (_, health) = get(&base, "/v1/health");
    assert_eq!(health["ready"], true);
    assert_eq!(health["sessions"]["pending"], 10, "{health}");
    assert_eq!(health["sessions"]["idle"], 10, "{health}");

    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert_eq!(recv(&notify), "STOPPING=1");
    child.wait().unwrap();
    assert_eq!(probe(addr, "/v1/ready").0, Probe::Refused);
    svc.set_config("listen", json!("127.0.0.1:0"));
}

/// A GET with the token against `base`.
fn get(base: &str, path: &str) -> (u16, Value) {
    call(base, "GET", path, None, Some(TOKEN))
}

/// A harness that takes `secs` before it starts (so its launch holds its
/// startup permit that long).
fn slow_harness(dir: &Path, secs: u32) -> std::path::PathBuf {
    let fake = fixtures_dir().join("fake-claude");
    let path = dir.join("slow-claude");
    std::fs::write(
        &path,
        format!("#!/bin/sh\nsleep {secs}\nexec {} \"$@\"\n", fake.display()),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn health_and_metrics_show_sessions_permits_turns_calls_and_events() {
    let root = temp_root();
    let slow = slow_harness(&root, 3);
    let svc = Service::start(
        ROOM_CORE,
        json!({"startup_permits": 1, "claude_program": slow}),
    );
    let (status, h) = svc.get("/v1/health");
    assert_eq!(status, 200);
    assert_eq!(h["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(h["permits"], json!({"total": 1, "in_use": 0, "queued": 0}));
    assert!(h["uptime_ms"].as_u64().is_some());

    // Two starts: one holds the only permit while its harness starts, the
    // other queues for it.
    let a = svc.start_session(start_body(
        &svc.folder("a"),
        "claude",
        json!({"prompt": "one"}),
    ));
    let b = svc.start_session(start_body(
        &svc.folder("b"),
        "claude",
        json!({"prompt": "two"}),
    ));
    // A start answers before its launch's first read (on the service's
    // event pool), after which it asks for its permit.
    let h = wait_until(
        "the permit asked for twice",
        Duration::from_secs(10),
        || {
            let (_, h) = svc.get("/v1/health");
            (h["permits"] == json!({"total": 1, "in_use": 1, "queued": 1})).then_some(h)
        },
    );
    assert_eq!(h["sessions"]["pending"], 2);
    let metrics = svc.get("/metrics").1;
    let metrics = metrics.as_str().unwrap();
    assert!(
        metrics.contains("\nroom_core_permits_in_use 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("\nroom_core_permits_queued 1\n"),
        "{metrics}"
    );

    for s in [&a, &b] {
        let id = s["id"].as_str().unwrap();
        await_event(&svc, id, "the turn's end", turn_ended);
        svc.await_session(id, "idle", |v| v["state"] == "idle");
        // The turn's diff, journalled once its folder is recorded, which
        // may be after the idle state: the session's last event.
        await_turn_diff(&svc, id, 1);
    }
    // A room-cli call from outside any harness: refused by the policy.
    let out = Command::new(env!("CARGO_BIN_EXE_room-cli"))
        .args(["thread", "list"])
        .env("ROOM_CORE_SOCKET", svc.state.join("agent.sock"))
        .env_remove("CLOUDROOM_LOOP")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");

    let (_, h) = svc.get("/v1/health");
    assert_eq!(h["permits"], json!({"total": 1, "in_use": 0, "queued": 0}));
    assert_eq!(h["sessions"]["idle"], 2);
    let written = h["events_written"].as_u64().unwrap();
    let journalled = all_events(&svc, a["id"].as_str().unwrap(), 1024).len()
        + all_events(&svc, b["id"].as_str().unwrap(), 1024).len();
    assert_eq!(written, journalled as u64);
    let metrics = svc.get("/metrics").1;
    let metrics = metrics.as_str().unwrap();
    for line in [
        "room_core_turns_total{outcome=\"succeeded\"} 2".to_string(),
        "room_core_turns_total{outcome=\"interrupted\"} 0".to_string(),
        "room_core_agent_calls_total{decision=\"refused\"} 1".to_string(),
        "room_core_agent_calls_total{decision=\"forwarded\"} 0".to_string(),
        format!("room_core_events_written_total {written}"),
        "room_core_permits_in_use 0".to_string(),
        "room_core_streams_open 0".to_string(),
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
    let _ = std::fs::remove_dir_all(root);
}

fn run(bin: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(bin)
        .args(args)
        .env("ROOM_CORE_SOCKET", "/nonexistent/room-core.sock")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn room_core_says_where_the_demo_is() {
    let core = ROOM_CORE;
    let (code, out, err) = run(core, &["--demo"]);
    assert_eq!(code, Some(2));
    assert_eq!(out, "");
    assert_eq!(
        err,
        "room-core: the demo is its own binary, room-demo: `cargo run --release --bin room-demo` in the repository\n"
    );
}

#[test]
fn help_and_version_for_both_binaries() {
    let core = ROOM_CORE;
    let cli = env!("CARGO_BIN_EXE_room-cli");
    let version = env!("CARGO_PKG_VERSION");

    let (code, out, err) = run(core, &["--help"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("Usage: room-core [--config FILE]"), "{out}");
    assert!(out.contains("--version"));
    assert_eq!(err, "");
    assert_eq!(
        run(core, &["--version"]),
        (Some(0), format!("room-core {version}\n"), String::new())
    );
    for bad in [&["--bogus"][..], &["--config"], &["a", "b", "c"]] {
        let (code, out, err) = run(core, bad);
        assert_eq!(code, Some(2), "{bad:?}");
        assert_eq!(out, "");
        assert!(err.starts_with("Usage: room-core"), "{err}");
    }
    let (code, _, err) = run(core, &["--config", "/nonexistent/room.json"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("room-core: "), "{err}");

    let (code, out, _) = run(cli, &["--help"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("Usage: room-cli <command>"), "{out}");
    assert_eq!(
        run(cli, &["--version"]),
        (Some(0), format!("room-cli {version}\n"), String::new())
    );
    let (code, out, err) = run(cli, &["--bogus"]);
    assert_eq!(code, Some(2));
    assert_eq!(out, "");
    assert!(err.contains("Commands: room-cli thread,"), "{err}");
}
