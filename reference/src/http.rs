//! A small HTTP/1.1 server over `std::net` for the reference website and for
//! test stubs: one request per connection (`Connection: close`), a thread per
//! connection up to a cap, and limits on every side so a hostile or stuck
//! client cannot hold it: the head's size, the body's size (Content-Length
//! only; chunked bodies are refused), a timeout per read and write, and a
//! deadline for the whole request.
//!
//! Hand-written rather than hyper: the reference needs none of HTTP/1.1's
//! harder parts (keep-alive, pipelining, chunked uploads), and the service's
//! own HTTP stack is being replaced separately; this keeps the two apart.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// What one server accepts.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The request line and headers together.
    pub max_head: usize,
    /// The body.
    pub max_body: usize,
    /// One read or write.
    pub io_timeout: Duration,
    /// Reading the whole request.
    pub request_deadline: Duration,
    /// Connections served at once; more are answered 503 and closed.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_head: 16 * 1024,
            max_body: 1 << 20,
            io_timeout: Duration::from_secs(10),
            request_deadline: Duration::from_secs(30),
            max_connections: 64,
        }
    }
}

/// One request.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string (after `?`), undecoded.
    pub query: String,
    /// Headers in order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Request {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The bearer token, if the request carries one.
    pub fn bearer(&self) -> Option<&str> {
        self.header("authorization")?
            .strip_prefix("Bearer ")
            .map(str::trim)
    }

    /// The path split on `/`, without empty parts.
    pub fn segments(&self) -> Vec<&str> {
        self.path.split('/').filter(|s| !s.is_empty()).collect()
    }

    /// A query parameter, percent-decoded (`+` is a space).
    pub fn query_param(&self, key: &str) -> Option<String> {
        self.query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k) == key).then(|| decode(v))
        })
    }
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit));
        match (bytes[i], hex) {
            (b'+', _) => out.push(b' '),
            (b'%', Some(h)) => {
                let h = std::str::from_utf8(h).expect("hex digits are ASCII");
                out.push(u8::from_str_radix(h, 16).expect("two hex digits"));
                i += 2;
            }
            (b, _) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The Content-Type.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A JSON answer.
    pub fn json(status: u16, value: &Value) -> Response {
        Response {
            status,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
        }
    }

    /// `{"error": message, "code": code}` with `status`: the error shape
    /// Core uses too.
    pub fn error(status: u16, code: &str, message: impl Into<String>) -> Response {
        Response::json(
            status,
            &serde_json::json!({"error": message.into(), "code": code}),
        )
    }
}

/// What serves each request.
pub type Handler = Arc<dyn Fn(&Request) -> Response + Send + Sync>;

/// A running server; stops when dropped.
pub struct Server {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` (port 0: any free port) and serves `handler` until
    /// stopped.
    pub fn start(addr: &str, limits: Limits, handler: Handler) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let stopping = Arc::new(AtomicBool::new(false));
        let active = Arc::new(AtomicUsize::new(0));
        let flag = stopping.clone();
        let acceptor = std::thread::Builder::new()
            .name("http-accept".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if flag.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else {
                        std::thread::sleep(Duration::from_millis(20));
                        continue;
                    };
                    let _ = stream.set_write_timeout(Some(limits.io_timeout));
                    if active.fetch_add(1, Ordering::SeqCst) >= limits.max_connections {
                        active.fetch_sub(1, Ordering::SeqCst);
                        let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
                        write_response(
                            &stream,
                            &Response::error(503, "busy", "Too many connections; try again."),
                        );
                        continue;
                    }
                    let (handler, active) = (handler.clone(), active.clone());
                    let spawned =
                        std::thread::Builder::new()
                            .name("http-conn".into())
                            .spawn(move || {
                                serve_connection(stream, limits, &handler);
                                active.fetch_sub(1, Ordering::SeqCst);
                            });
                    if spawned.is_err() {
                        log::warn!("http: cannot start a connection thread");
                    }
                }
            })?;
        Ok(Server {
            addr,
            stopping,
            acceptor: Some(acceptor),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wake the blocked accept; connection threads end on their own.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

/// Why a request could not be read; each is answered, then the connection
/// is closed.
fn refuse(status: u16, code: &str, message: &str) -> Response {
    Response::error(status, code, message)
}

fn serve_connection(stream: TcpStream, limits: Limits, handler: &Handler) {
    let _ = stream.set_read_timeout(Some(limits.io_timeout));
    let response = match read_request(&stream, &limits) {
        Ok(request) => handler(&request),
        Err(Some(r)) => r,
        Err(None) => return, // the peer went away or timed out: nobody to answer
    };
    write_response(&stream, &response);
}

fn read_request(mut stream: &TcpStream, limits: &Limits) -> Result<Request, Option<Response>> {
    let deadline = Instant::now() + limits.request_deadline;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i;
        }
        if buf.len() > limits.max_head {
            return Err(Some(refuse(
                431,
                "head_too_large",
                "The request's headers are too large.",
            )));
        }
        if Instant::now() > deadline {
            return Err(Some(refuse(408, "timeout", "The request took too long.")));
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return Err(None),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    if head_end > limits.max_head {
        return Err(Some(refuse(
            431,
            "head_too_large",
            "The request's headers are too large.",
        )));
    }
    let bad = |m: &str| Some(refuse(400, "bad_request", m));
    let head = std::str::from_utf8(&buf[..head_end]).map_err(|_| bad("The head is not UTF-8."))?;
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("The request line is malformed."));
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Err(bad("The request line is malformed."));
    }
    let mut headers = Vec::new();
    for l in lines {
        let (name, value) = l
            .split_once(':')
            .ok_or_else(|| bad("A header is malformed."))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    if headers.iter().any(|(n, _)| n == "transfer-encoding") {
        return Err(Some(refuse(
            501,
            "chunked_unsupported",
            "Send the body with a Content-Length.",
        )));
    }
    let lengths: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n == "content-length")
        .map(|(_, v)| v.as_str())
        .collect();
    let length = match lengths.as_slice() {
        [] => 0,
        [one] => one
            .parse::<usize>()
            .map_err(|_| bad("The Content-Length is not a number."))?,
        _ => return Err(bad("The request has more than one Content-Length.")),
    };
    if length > limits.max_body {
        return Err(Some(refuse(413, "too_large", "The body is too large.")));
    }
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        if Instant::now() > deadline {
            return Err(Some(refuse(408, "timeout", "The request took too long.")));
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return Err(None),
            Ok(n) => body.extend_from_slice(&chunk[..n]),
        }
    }
    body.truncate(length);
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Ok(Request {
        method: method.to_string(),
        path: path.to_string(),
        query: query.to_string(),
        headers,
        body,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "",
    }
}

fn write_response(mut stream: &TcpStream, response: &Response) {
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        response.body.len()
    );
    // The peer may be gone; there is nobody to tell.
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(&response.body))
        .and_then(|()| stream.flush());
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo() -> Server {
        let handler: Handler = Arc::new(|r: &Request| {
            Response::json(
                200,
                &serde_json::json!({
                    "method": r.method, "path": r.path, "q": r.query_param("owner"),
                    "body": String::from_utf8_lossy(&r.body), "auth": r.bearer(),
                }),
            )
        });
        let limits = Limits {
            max_head: 256,
            max_body: 64,
            io_timeout: Duration::from_millis(500),
            request_deadline: Duration::from_secs(2),
            max_connections: 4,
        };
        Server::start("127.0.0.1:0", limits, handler).unwrap()
    }

    fn raw(server: &Server, bytes: &[u8]) -> String {
        let mut s = TcpStream::connect(server.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.write_all(bytes);
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn serves_a_request_with_a_body_and_a_query() {
        let server = echo();
        let resp = ureq::post(&format!("{}/api/x?owner=a%20b+c", server.url()))
            .set("Authorization", "Bearer t0k")
            .send_string("{\"a\":1}")
            .unwrap();
        assert_eq!(resp.status(), 200);
        let v: Value = resp.into_json().unwrap();
        assert_eq!(v["path"], "/api/x");
        assert_eq!(v["q"], "a b c");
        assert_eq!(v["body"], "{\"a\":1}");
        assert_eq!(v["auth"], "t0k");
    }

    #[test]
    fn refuses_oversized_chunked_and_malformed_requests() {
        let server = echo();
        let big = format!(
            "POST / HTTP/1.1\r\nContent-Length: 65\r\n\r\n{}",
            "x".repeat(65)
        );
        assert!(raw(&server, big.as_bytes()).starts_with("HTTP/1.1 413"));
        let long_head = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "y".repeat(300));
        assert!(raw(&server, long_head.as_bytes()).starts_with("HTTP/1.1 431"));
        let chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
        assert!(raw(&server, chunked).starts_with("HTTP/1.1 501"));
        assert!(raw(&server, b"NONSENSE\r\n\r\n").starts_with("HTTP/1.1 400"));
        let two = b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab";
        assert!(raw(&server, two).starts_with("HTTP/1.1 400"));
    }

    #[test]
    fn a_silent_or_slow_client_is_dropped_and_others_are_served() {
        let server = echo();
        let started = Instant::now();
        // Silent clients beyond the cap get 503; the cap frees once they time out.
        let silent: Vec<TcpStream> = (0..4)
            .map(|_| TcpStream::connect(server.addr()).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(100));
        assert!(raw(&server, b"GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 503"));
        drop(silent);
        let ok = (0..100).find_map(|_| {
            let r = raw(&server, b"GET /after HTTP/1.1\r\n\r\n");
            if r.starts_with("HTTP/1.1 200") {
                return Some(r);
            }
            std::thread::sleep(Duration::from_millis(50));
            None
        });
        assert!(ok.is_some(), "served again once the silent clients left");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn percent_decoding_keeps_broken_escapes() {
        assert_eq!(decode("a%2Fb"), "a/b");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz"), "%zz");
    }
}
