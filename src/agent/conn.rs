//! One connection's I/O: the request read under one deadline for the whole
//! of it (a trickle does not extend it) and a size cap, the answer written
//! under another, and the acceptor's own answers, written without blocking.

use std::io::{BufReader, ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use super::AgentRequest;
use crate::website::Answer;

/// The largest request read (room-cli's argv and cwd).
pub const MAX_REQUEST: u64 = 1 << 20;

/// How long a peer has to send its whole request, from its connection.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);

/// How long a peer has to take its whole answer.
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(5);

/// The socket, read until `deadline` at the latest: each read waits only
/// for what is left of it.
struct Until<'a> {
    stream: &'a UnixStream,
    deadline: Instant,
}

impl Read for Until<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(late());
        }
        self.stream.set_read_timeout(Some(left))?;
        let mut stream = self.stream;
        stream.read(buf).map_err(|e| match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => late(),
            _ => e,
        })
    }
}

fn late() -> std::io::Error {
    std::io::Error::new(
        ErrorKind::TimedOut,
        format!("it did not arrive within {} s", REQUEST_DEADLINE.as_secs()),
    )
}

/// Reads one request: a JSON value, at most `MAX_REQUEST` bytes, before
/// `deadline`.
pub fn read_request(stream: &UnixStream, deadline: Instant) -> Result<AgentRequest, String> {
    let reader = BufReader::new(Until { stream, deadline }.take(MAX_REQUEST));
    match serde_json::Deserializer::from_reader(reader)
        .into_iter::<AgentRequest>()
        .next()
    {
        Some(Ok(req)) => Ok(req),
        // A late request reads "it did not arrive within 5 s".
        Some(Err(e)) => Err(e.to_string()),
        None => Err("it is empty".into()),
    }
}

/// Writes the answer, all of it before `ANSWER_DEADLINE` or not at all: a
/// peer that does not read cannot hold the connection longer.
pub fn write_answer(stream: &UnixStream, answer: &Answer) {
    let mut bytes = serde_json::to_vec(answer).unwrap_or_default();
    bytes.push(b'\n');
    let deadline = Instant::now() + ANSWER_DEADLINE;
    let mut left = &bytes[..];
    let mut stream = stream;
    while !left.is_empty() {
        let time = deadline.saturating_duration_since(Instant::now());
        if time.is_zero() || stream.set_write_timeout(Some(time)).is_err() {
            return;
        }
        match stream.write(left) {
            Ok(0) => return,
            Ok(n) => left = &left[n..],
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // The caller may be gone; Core has done the work either way.
            Err(_) => return,
        }
    }
}

/// Writes a short answer from the acceptor, which must never wait on a
/// peer: nonblocking, and dropped if the socket cannot take it at once (a
/// fresh connection's buffer always can).
pub fn answer_now(stream: &UnixStream, answer: &Answer) {
    let mut bytes = serde_json::to_vec(answer).unwrap_or_default();
    bytes.push(b'\n');
    if stream.set_nonblocking(true).is_ok() {
        let mut stream = stream;
        let _ = stream.write_all(&bytes);
    }
}
