//! HTTP on the wire, for hostile clients: raw TCP to the service's
//! loopback address (to send what no HTTP client would), a raw reading of
//! an answer, and bounded waits on a socket closing or an answer coming.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// The socket address in a base URL `http://127.0.0.1:PORT`.
pub fn addr(base: &str) -> SocketAddr {
    base.trim_start_matches("http://")
        .parse()
        .expect("a loopback address")
}

/// A connection to `addr` that has sent `bytes`.
pub fn send(addr: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(bytes).expect("send");
    s
}

/// An answer read off the wire.
#[derive(Debug)]
pub struct Raw {
    /// The status code.
    pub status: u16,
    /// The head, lowercased (to look for headers).
    pub head: String,
    /// The body (as far as Content-Length says).
    pub body: String,
}

/// Reads one answer (head, then a Content-Length body) within `limit`;
/// `None` if the connection closed or the time ran out first.
pub fn read_answer(stream: &mut TcpStream, limit: Duration) -> Option<Raw> {
    let deadline = Instant::now() + limit;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut need: Option<usize> = None;
    loop {
        if let Some(need) = need {
            if bytes.len() >= need {
                break;
            }
        } else if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&bytes[..end]).to_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            need = Some(end + 4 + len);
            continue;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    let end = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&bytes[..end]).to_lowercase();
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let body = String::from_utf8_lossy(&bytes[end + 4..need?]).into_owned();
    Some(Raw { status, head, body })
}

/// Whether the peer closes `stream` (EOF or reset) within `limit`; what
/// arrives before that is read and dropped.
pub fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut chunk = [0u8; 4096];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        stream.set_read_timeout(Some(left)).unwrap();
        match stream.read(&mut chunk) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return false
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return true,
        }
    }
}

/// A request with the token on a new connection, answered within `limit`:
/// its status and how long it took (`None`: no answer in time).
pub fn timed_request(
    addr: SocketAddr,
    token: &str,
    request: &str,
    limit: Duration,
) -> Option<(u16, Duration)> {
    let t = Instant::now();
    let (method, path) = request.split_once(' ').unwrap_or(("GET", request));
    let text = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    let mut s = TcpStream::connect_timeout(&addr, limit).ok()?;
    s.write_all(text.as_bytes()).ok()?;
    let answer = read_answer(&mut s, limit.saturating_sub(t.elapsed()))?;
    Some((answer.status, t.elapsed()))
}

/// Asks until a request is answered 200 within `per_try`, for at most
/// `limit`; how long that took.
pub fn answered_within(
    addr: SocketAddr,
    token: &str,
    limit: Duration,
    per_try: Duration,
) -> Option<Duration> {
    let t = Instant::now();
    while t.elapsed() < limit {
        if let Some((200, _)) = timed_request(addr, token, "GET /v1/capabilities", per_try) {
            return Some(t.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}
