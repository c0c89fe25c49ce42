//! `GET /v1/sessions/{id}/stream` against the real binary with the fake
//! harnesses: live delivery, resuming with Last-Event-ID across a restart,
//! many readers, the end of a closed session's stream, keep-alives, the
//! stream cap and a service stop with streams open.

use std::time::{Duration, Instant};

use room_kit::events::{all_events, await_event, await_turn_diff, turn_ended};
use room_kit::procs::stops_within_2_s;
use room_kit::sse::{Item, SseEvent, Stream};
use room_kit::wire::{addr, send};
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// A session whose first turn is over, its folder recorded (the turn's
/// `turn_diff`, which follows the turn's end), and its id.
fn idle_session(svc: &Service, name: &str) -> String {
    let s = svc.start_session(start_body(
        &svc.folder(name),
        "codex",
        json!({"prompt": "hi"}),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    await_event(svc, &id, "the first turn's end", turn_ended);
    svc.await_session(&id, "idle", |v| v["state"] == "idle");
    await_turn_diff(svc, &id, 1);
    id
}

fn message(svc: &Service, id: &str, prompt: &str) {
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": prompt}),
    );
    assert_eq!(status, 200, "{v}");
}

/// The stream's events as the pages show them.
fn as_pages(events: &[SseEvent]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e.event != "end")
        .map(|e| {
            assert_eq!(
                e.event,
                e.data["kind"].as_str().unwrap(),
                "event: is the kind"
            );
            assert_eq!(e.id, e.data["seq"].as_u64(), "id: is the seq");
            e.data.clone()
        })
        .collect()
}

#[test]
fn the_stream_delivers_a_harness_event_within_50_ms_of_its_printing() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let id = idle_session(&svc, "lag");
    let mut stream = Stream::open(&svc, &id, None, "");
    assert_eq!(stream.status, 200);
    assert_eq!(stream.content_type, "text/event-stream");
    message(&svc, &id, "stamps: 20 20");
    let events = stream.until(|e| e.data["kind"] == "turn_ended" && e.data["data"]["turn"] == 2);
    let lags: Vec<f64> = events
        .iter()
        .filter(|e| e.data["data"]["type"] == "stamp")
        .map(|e| {
            let printed = e.data["data"]["ns"].as_u64().unwrap() as u128;
            (e.read_ns.saturating_sub(printed)) as f64 / 1e6
        })
        .collect();
    assert_eq!(lags.len(), 20, "{events:#?}");
    eprintln!("print -> read lag (ms): {lags:.2?}");
    for lag in &lags {
        assert!(
            *lag < 50.0,
            "a harness event reached the reader {lag:.1} ms after it was printed: {lags:.1?}"
        );
    }
}

#[test]
fn last_event_id_resumes_across_a_restart_without_gap_or_duplicate() {
    let mut svc = Service::start(ROOM_CORE, json!({}));
    let id = idle_session(&svc, "resume");
    // A reader reads part of the journal, then the service restarts.
    let mut stream = Stream::open(&svc, &id, None, "");
    let mut seen = stream.until(|e| e.data["kind"] == "harness");
    svc.restart();
    // The stop ends the stream (after what it had sent).
    while let Some(e) = stream.next_event() {
        seen.push(e);
    }
    let last_seen = seen.last().unwrap().id.unwrap();
    message(&svc, &id, "after the restart");
    await_event(&svc, &id, "the second turn's end", |e| {
        turn_ended(e) && e["data"]["turn"] == 2
    });
    svc.post(&format!("/v1/sessions/{id}/close"), json!({}));

    // It picks up after the last event it saw: everything once, in order.
    let mut resumed = Stream::open(&svc, &id, Some(last_seen), "");
    let rest = resumed.until_end();
    let mut got = as_pages(&seen);
    got.extend(as_pages(&rest));
    let journal = all_events(&svc, &id, 1024);
    assert_eq!(got, journal);
    let end = rest.last().unwrap();
    assert_eq!(end.event, "end");
    assert_eq!(end.id, None);
    assert_eq!(
        end.data,
        json!({"reason": "session_closed", "last_seq": journal.len()})
    );
    // ?after= does the same; Last-Event-ID wins over it.
    let from_query = Stream::open(&svc, &id, None, &format!("?after={last_seen}")).until_end();
    assert_eq!(as_pages(&from_query), as_pages(&rest));
    let both = Stream::open(&svc, &id, Some(journal.len() as u64 - 1), "?after=0").until_end();
    assert_eq!(as_pages(&both), journal[journal.len() - 1..].to_vec());
}

#[test]
fn fifty_readers_each_get_every_event() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let id = idle_session(&svc, "fifty");
    let streams: Vec<Stream> = (0..50).map(|_| Stream::open(&svc, &id, None, "")).collect();
    let readers: Vec<_> = streams
        .into_iter()
        .map(|mut s| std::thread::spawn(move || s.until_end()))
        .collect();
    message(&svc, &id, "stamps: 30 2");
    await_event(&svc, &id, "the second turn's end", |e| {
        turn_ended(e) && e["data"]["turn"] == 2
    });
    svc.post(&format!("/v1/sessions/{id}/close"), json!({}));
    let journal = all_events(&svc, &id, 1024);
    assert!(journal.len() > 40, "{journal:#?}");
    for r in readers {
        let events = r.join().unwrap();
        assert_eq!(as_pages(&events), journal);
        assert_eq!(events.last().unwrap().event, "end");
    }
}

#[test]
fn a_stream_ends_when_its_session_closes_after_its_last_event() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let (id, _, _) = svc.running_session("closing");
    let id = id.as_str();
    let mut stream = Stream::open(&svc, id, None, "");
    stream.until(|e| e.data["kind"] == "harness");
    svc.post(&format!("/v1/sessions/{id}/close"), json!({}));
    let rest = stream.until_end();
    let kinds: Vec<&str> = rest.iter().map(|e| e.event.as_str()).collect();
    // The close, then the killed turn's end: the session's last event.
    let closed = kinds.iter().position(|k| *k == "closed").expect("closed");
    let ended = kinds
        .iter()
        .position(|k| *k == "turn_ended")
        .expect("turn_ended");
    assert!(closed < ended, "{kinds:?}");
    assert_eq!(rest[ended].data["data"]["by"], "close");
    assert_eq!(kinds.last(), Some(&"end"));
    // A closed session's stream replays and ends at once.
    let t = Instant::now();
    let again = Stream::open(&svc, id, None, "").until_end();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(as_pages(&again), all_events(&svc, id, 1024));
}

#[test]
fn an_idle_stream_gets_a_keep_alive_and_outlives_the_request_deadlines() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let id = idle_session(&svc, "quiet");
    let mut stream = Stream::open(&svc, &id, None, "");
    let replayed = all_events(&svc, &id, 1024).len();
    for _ in 0..replayed {
        stream.next_event().unwrap();
    }
    // Nothing happens for 15 s (three times the head and body deadlines).
    let t = Instant::now();
    assert_eq!(stream.next_item(), Item::Comment("keep-alive".into()));
    let quiet = t.elapsed();
    assert!(
        quiet > Duration::from_secs(13) && quiet < Duration::from_secs(18),
        "{quiet:?}"
    );
    // ...and the stream still delivers.
    message(&svc, &id, "later");
    let e = stream.next_event().unwrap();
    assert_eq!(e.id, Some(replayed as u64 + 1));
}

#[test]
fn streams_have_a_cap_of_their_own_and_requests_are_served_beside_them() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let id = idle_session(&svc, "cap");
    let addr = addr(&svc.base);
    let open = |addr| {
        let mut s = send(
            addr,
            format!("GET /v1/sessions/{id}/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").as_bytes(),
        );
        let head = read_head(&mut s);
        (s, head)
    };
    let mut held = Vec::new();
    for n in 0..256 {
        let (s, head) = open(addr);
        assert!(head.starts_with("http/1.1 200"), "stream {n}: {head}");
        held.push(s);
    }
    let (mut refused, head) = open(addr);
    assert!(head.starts_with("http/1.1 503"), "{head}");
    let body = read_some(&mut refused);
    assert!(body.contains("\"code\":\"too_many_streams\""), "{body}");
    assert!(
        body.contains("256 event streams are open; close one or try again later."),
        "{body}"
    );
    let (status, health) = svc.get("/v1/health");
    assert_eq!(status, 200);
    assert_eq!(health["streams"], json!({"open": 256, "max": 256}));
    // One closes: its place is free again.
    drop(held.pop());
    let ok = wait_until("a free stream place", Duration::from_secs(5), || {
        let (s, head) = open(addr);
        head.starts_with("http/1.1 200").then_some(s)
    });
    held.push(ok);
}

/// Reads a response head (lowercased) off a raw connection.
fn read_head(s: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut bytes = Vec::new();
    let mut b = [0u8; 1];
    while !bytes.ends_with(b"\r\n\r\n") {
        match s.read(&mut b) {
            Ok(1) => bytes.push(b[0]),
            other => panic!(
                "no head: {other:?} after {:?}",
                String::from_utf8_lossy(&bytes)
            ),
        }
    }
    String::from_utf8_lossy(&bytes).to_lowercase()
}

/// What arrives on a raw connection within a second.
fn read_some(s: &mut std::net::TcpStream) -> String {
    use std::io::Read;
    s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    let mut buf = vec![0u8; 4096];
    let n = s.read(&mut buf).unwrap_or(0);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn a_service_stop_with_open_streams_stays_under_2_s() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let id = idle_session(&svc, "stop");
    let (busy, _, _) = svc.running_session("busy");
    let readers: Vec<_> = (0..20)
        .map(|n| {
            let id = if n % 2 == 0 { id.clone() } else { busy.clone() };
            let mut s = Stream::open(&svc, &id, None, "");
            std::thread::spawn(move || {
                while s.next_event().is_some() {}
                Instant::now()
            })
        })
        .collect();
    // Every reader is in its stream before the stop.
    wait_until("20 open streams", Duration::from_secs(10), || {
        let (_, h) = svc.get("/v1/health");
        (h["streams"]["open"] == 20).then_some(())
    });
    let pid = svc.pid().unwrap();
    let t = Instant::now();
    let took = stops_within_2_s(pid, nix::sys::signal::Signal::SIGTERM, || svc.log());
    eprintln!("stopped in {took:?} with 20 streams open");
    for r in readers {
        let ended = r.join().unwrap();
        assert!(
            ended.duration_since(t) < Duration::from_secs(2),
            "a stream outlived the stop"
        );
    }
}

#[test]
fn a_stream_of_an_unknown_session_or_with_a_bad_last_event_id_is_refused() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let s = Stream::open(&svc, "cr_nope", None, "");
    assert_eq!(s.status, 404);
    let id = idle_session(&svc, "bad");
    let agent = ureq::agent();
    let resp = agent
        .get(&format!("{}/v1/sessions/{id}/stream", svc.base))
        .set("Authorization", &format!("Bearer {TOKEN}"))
        .set("Last-Event-ID", "seven")
        .call();
    let Err(ureq::Error::Status(422, r)) = resp else {
        panic!("not 422: {resp:?}")
    };
    let v: Value = serde_json::from_str(&r.into_string().unwrap()).unwrap();
    assert_eq!(
        v["error"],
        "Last-Event-ID must be an event's seq, not \"seven\"."
    );
    let s = Stream::open(&svc, &id, None, "?after=x");
    assert_eq!(s.status, 422);
    let s = Stream::open(&svc, &id, None, "?limit=3");
    assert_eq!(s.status, 422);
}
