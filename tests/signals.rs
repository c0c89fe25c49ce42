//! SIGTERM, SIGINT, SIGHUP and SIGQUIT each stop the service cleanly within
//! 2 s while clients stall it (an HTTP head half sent, an HTTP body never
//! sent, an agent-socket caller that sends nothing): its running turn is
//! ended and its agent socket file removed.

use std::os::unix::net::UnixStream;
use std::time::Duration;

use nix::sys::signal::Signal;
use room_kit::procs::{exited_within, stops_within_2_s};
use room_kit::wire::{addr, send};
use room_kit::*;
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

fn stops_within_2_s_with_stalled_clients(signal: Signal) {
    let svc = Service::start(ROOM_CORE, json!({}));
    let addr = addr(&svc.base);
    let folder = svc.folder("code");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({"prompt": "sleep: 30"}),
    ));
    let turn = svc.await_record(&folder, 1, Duration::from_secs(10));
    let turn = turn["pid"].as_u64().unwrap() as u32;
    svc.await_session(s["id"].as_str().unwrap(), "running", |v| {
        v["state"] == "running"
    });

    let socket = svc.state.join("agent.sock");
    let _stalled = (
        send(addr, b"GET /v1/capabilities HTTP/1.1\r\nHost: 127"),
        send(
            addr,
            format!(
                "POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 100\r\n\r\n{{"
            )
            .as_bytes(),
        ),
        UnixStream::connect(&socket).expect("the agent socket"),
    );
    // Let the service take the stalled clients in hand.
    std::thread::sleep(Duration::from_millis(200));

    let pid = svc.pid().unwrap();
    let took = stops_within_2_s(pid, signal, || svc.log());
    eprintln!("{signal}: stopped in {took:?}");
    assert!(!socket.exists(), "the agent socket file is left behind");
    assert!(
        exited_within(turn, Duration::from_secs(2)).is_some(),
        "the turn outlived the service"
    );
    assert!(svc.log().contains("stopped"), "{}", svc.log());
}

#[test]
fn sigterm_stops_the_service_within_2_s_whatever_clients_stall() {
    stops_within_2_s_with_stalled_clients(Signal::SIGTERM);
}

#[test]
fn sigint_stops_the_service_within_2_s_whatever_clients_stall() {
    stops_within_2_s_with_stalled_clients(Signal::SIGINT);
}

#[test]
fn sighup_stops_the_service_within_2_s_whatever_clients_stall() {
    stops_within_2_s_with_stalled_clients(Signal::SIGHUP);
}

#[test]
fn sigquit_stops_the_service_within_2_s_whatever_clients_stall() {
    stops_within_2_s_with_stalled_clients(Signal::SIGQUIT);
}
