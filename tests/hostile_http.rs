//! The HTTP API against hostile local clients (any process in the sandbox
//! can reach loopback, with or without the token): nothing one sends or
//! holds open crashes, stalls or slows the service for the others. Raw TCP
//! to 127.0.0.1 only; every wait is bounded.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use room_kit::procs::{exited, open_fds, set_nofile};
use room_kit::wire::{addr, answered_within, closed_within, read_answer, send, timed_request};
use room_kit::*;
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

const TOO_LARGE: &str = r#"{"code":"too_large","error":"The body is larger than 1 MiB."}"#;

/// A start's or a message's refusal: they may carry a prompt's images.
const TOO_LARGE_WITH_IMAGES: &str =
    r#"{"code":"too_large","error":"The body is larger than 28 MiB."}"#;

fn head(method: &str, path: &str, token: Option<&str>, extra: &str) -> String {
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}{extra}\r\n")
}

/// A connection that has sent the head of `POST /v1/sessions` with `extra`
/// headers, and nothing of a body.
fn post_head(addr: std::net::SocketAddr, token: Option<&str>, extra: &str) -> TcpStream {
    send(addr, head("POST", "/v1/sessions", token, extra).as_bytes())
}

const CHUNKED: &str = "Transfer-Encoding: chunked\r\n";

/// The service still answers a normal request, at once.
fn still_answers(svc: &Service) {
    let t = Instant::now();
    let (status, v) = svc.get("/v1/capabilities");
    assert_eq!(status, 200, "{v}");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
}

#[test]
fn a_huge_declared_body_is_refused_unread_with_or_without_the_token() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let addr = addr(&svc.base);
    let huge = "Content-Length: 1000000000000\r\n";
    // Without the token: 401, and the connection closes without reading.
    let mut s = send(addr, head("GET", "/v1/capabilities", None, huge).as_bytes());
    let a = read_answer(&mut s, Duration::from_secs(5)).expect("an answer");
    assert_eq!(
        (a.status, a.body.as_str()),
        (401, r#"{"error":"unauthorized"}"#)
    );
    assert!(a.head.contains("connection: close"), "{}", a.head);
    assert!(closed_within(&mut s, Duration::from_secs(1)));
    // With it: 413 before a byte of the body, then the connection closes.
    for (method, refusal) in [("GET", TOO_LARGE), ("POST", TOO_LARGE_WITH_IMAGES)] {
        let mut s = send(
            addr,
            head(method, "/v1/sessions", Some(TOKEN), huge).as_bytes(),
        );
        let a = read_answer(&mut s, Duration::from_secs(5)).expect("an answer");
        assert_eq!((a.status, a.body.as_str()), (413, refusal));
        assert!(closed_within(&mut s, Duration::from_secs(4)));
    }
    still_answers(&svc);
}

#[test]
fn the_largest_content_length_four_times_leaves_the_service_answering() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let addr = addr(&svc.base);
    for token in [None, Some(TOKEN), None, Some(TOKEN)] {
        let mut s = post_head(addr, token, "Content-Length: 18446744073709551615\r\n");
        // hyper refuses a length past 2^64-3 itself (431, no body) and closes.
        let a = read_answer(&mut s, Duration::from_secs(5)).expect("an answer");
        assert!(a.status >= 400, "{a:?}");
        assert!(closed_within(&mut s, Duration::from_secs(4)));
    }
    still_answers(&svc);
    assert!(svc.log().lines().all(|l| !l.contains("panicked")));
}

#[test]
fn a_hundred_connections_that_declare_a_body_and_send_none_hold_nothing_up() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let addr = addr(&svc.base);
    let declared = "Content-Type: application/json\r\nContent-Length: 100\r\n";
    let mut stalled: Vec<TcpStream> = (0..100)
        .map(|i| {
            let token = (i % 2 == 0).then_some(TOKEN);
            post_head(addr, token, declared)
        })
        .collect();
    // So do chunked ones that never send a chunk.
    stalled.extend((0..10).map(|_| post_head(addr, Some(TOKEN), CHUNKED)));
    let (status, took) = timed_request(addr, TOKEN, "GET /v1/capabilities", Duration::from_secs(1))
        .expect("answered within 1 s");
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(1), "{took:?}");
    // The body's deadline (5 s for all of it) ends a stalled one with a 408.
    let a = read_answer(&mut stalled[0], Duration::from_secs(8)).expect("an answer");
    assert_eq!(a.status, 408, "{a:?}");
    assert_eq!(
        a.body,
        r#"{"code":"body_timeout","error":"The body did not arrive within 5 s."}"#
    );
    assert!(closed_within(&mut stalled[0], Duration::from_secs(1)));
}

#[test]
fn a_body_sent_a_byte_at_a_time_is_cut_off_at_its_deadline() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let addr = addr(&svc.base);
    let mut s = post_head(addr, Some(TOKEN), "Content-Length: 1000\r\n");
    let t = Instant::now();
    // A byte every 100 ms would take 100 s; the deadline is for the whole body.
    let answer = loop {
        let _ = s.write_all(b" ");
        if let Some(a) = read_answer(&mut s, Duration::from_millis(100)) {
            break a;
        }
        assert!(t.elapsed() < Duration::from_secs(8), "never cut off");
    };
    assert_eq!(answer.status, 408);
    assert!(t.elapsed() < Duration::from_secs(7), "{:?}", t.elapsed());
}

#[test]
fn five_hundred_idle_connections_leave_room_for_a_request() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let addr = addr(&svc.base);
    let mut idle: Vec<TcpStream> = (0..500)
        .map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect"))
        .collect();
    let (status, took) = timed_request(addr, TOKEN, "GET /v1/capabilities", Duration::from_secs(1))
        .expect("answered within 1 s");
    assert_eq!(status, 200);
    assert!(took < Duration::from_secs(1), "{took:?}");
    // An idle connection is closed once its head is overdue (5 s).
    assert!(closed_within(&mut idle[0], Duration::from_secs(8)));
    // So is a head sent a byte at a time.
    let mut trickle = send(addr, b"G");
    let t = Instant::now();
    for b in b"ET /v1/capabilities HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " {
        if trickle.write_all(&[*b]).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    while t.elapsed() < Duration::from_secs(8) && trickle.write_all(b"a").is_ok() {
        if closed_within(&mut trickle, Duration::from_millis(200)) {
            break;
        }
    }
    assert!(t.elapsed() < Duration::from_secs(7), "{:?}", t.elapsed());
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_the_head_deadline() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let mut s = send(
        addr(&svc.base),
        head("GET", "/v1/capabilities", Some(TOKEN), "").as_bytes(),
    );
    let a = read_answer(&mut s, Duration::from_secs(5)).expect("an answer");
    assert_eq!(a.status, 200);
    assert!(!a.head.contains("connection: close"), "{}", a.head);
    let t = Instant::now();
    assert!(closed_within(&mut s, Duration::from_secs(8)));
    let idle = t.elapsed();
    assert!(
        idle > Duration::from_secs(4) && idle < Duration::from_secs(7),
        "{idle:?}"
    );
}

#[test]
fn running_out_of_descriptors_stops_accepting_only_until_connections_close() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let addr = addr(&svc.base);
    let pid = svc.pid().unwrap();
    // Leave the service a few descriptors, then open more connections than that.
    let (soft, _) = set_nofile(pid, (open_fds(pid) + 8) as u64);
    let crowd: Vec<TcpStream> = (0..64)
        .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok())
        .collect();
    assert!(!crowd.is_empty());
    // The accept loop is failing (EMFILE) now; give it a few tries.
    std::thread::sleep(Duration::from_millis(300));
    drop(crowd);
    let took = answered_within(addr, TOKEN, Duration::from_secs(10), Duration::from_secs(1))
        .unwrap_or_else(|| panic!("never answered again\n{}", svc.log()));
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(!exited(pid));
    set_nofile(pid, soft);
    still_answers(&svc);
    assert!(
        svc.log().contains("HTTP API: accept failed"),
        "{}",
        svc.log()
    );
}

#[test]
fn the_service_raises_its_descriptor_limit_to_the_hard_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    // The service inherits a low soft limit from this process (the other
    // tests here need far fewer than 1024 descriptors).
    setrlimit(Resource::RLIMIT_NOFILE, hard.min(1024), hard).unwrap();
    let svc = Service::start(ROOM_CORE, json!({}));
    setrlimit(Resource::RLIMIT_NOFILE, soft, hard).unwrap();
    let pid = svc.pid().unwrap();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let service_soft = line.split_whitespace().nth(3).unwrap();
    // An unlimited hard limit stops at the kernel's nr_open.
    let expected = if hard == nix::sys::resource::RLIM_INFINITY {
        std::fs::read_to_string("/proc/sys/fs/nr_open").unwrap()
    } else {
        hard.to_string()
    };
    assert_eq!(service_soft, expected.trim(), "{line}");
}

#[test]
fn a_one_mebibyte_header_gets_431() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let addr = addr(&svc.base);
    let mut s = send(
        addr,
        b"GET /v1/capabilities HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ",
    );
    let mut writer = s.try_clone().unwrap();
    // The rest of the header from another thread: the service answers
    // (and stops reading) long before it is all sent.
    let sender = std::thread::spawn(move || {
        let big = vec![b'a'; 1 << 20];
        let _ = writer
            .write_all(&big)
            .and_then(|()| writer.write_all(b"\r\n\r\n"));
    });
    let a = read_answer(&mut s, Duration::from_secs(5)).expect("an answer");
    assert_eq!(a.status, 431);
    drop(s);
    sender.join().unwrap();
    still_answers(&svc);
}

#[test]
fn a_chunked_body_is_counted_as_it_arrives_and_refused_past_one_mebibyte() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let addr = addr(&svc.base);
    // One chunk that declares 256 TiB, or well-formed 64 KiB chunks: either
    // way 413 once the route's cap has arrived (28 MiB for a start, which
    // may carry images; 1 MiB for a budget).
    let block = vec![b' '; 64 << 10];
    let one_huge = |blocks: usize| -> Vec<u8> {
        [b"1000000000000\r\n".as_slice(), &block.repeat(blocks)].concat()
    };
    let many = |blocks: usize| -> Vec<u8> {
        (0..blocks)
            .flat_map(|_| [b"10000\r\n".as_slice(), &block, b"\r\n"].concat())
            .collect()
    };
    let cases = [
        ("/v1/sessions/cr_x/budget", one_huge(20), TOO_LARGE),
        ("/v1/sessions/cr_x/budget", many(20), TOO_LARGE),
        ("/v1/sessions", many(16 * 29), TOO_LARGE_WITH_IMAGES),
    ];
    for (path, body, refusal) in cases {
        let mut s = send(addr, head("POST", path, Some(TOKEN), CHUNKED).as_bytes());
        let mut writer = s.try_clone().unwrap();
        let sender = std::thread::spawn(move || {
            let _ = writer.write_all(&body);
        });
        let a = read_answer(&mut s, Duration::from_secs(5)).expect("an answer");
        assert_eq!((a.status, a.body.as_str()), (413, refusal), "{path}");
        drop(s);
        sender.join().unwrap();
    }
    still_answers(&svc);
}
