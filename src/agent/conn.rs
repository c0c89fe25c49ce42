//! One connection's I/O: the request ([`AgentRequest`]) read under one
//! deadline for the whole of it (a trickle does not extend it) and a size
//! cap, the answer written under another, and the acceptor's own answers,
//! written without blocking.

use std::cell::Cell;
use std::io::{BufReader, ErrorKind, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::website::Answer;

/// One room-cli request.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct AgentRequest {
    /// room-cli's arguments, without the program name.
    pub argv: Vec<String>,
    /// room-cli's working directory.
    #[serde(default)]
    pub cwd: String,
}

/// The largest request read (room-cli's argv and cwd).
pub const MAX_REQUEST: u64 = 1 << 20;

/// How long a peer has to send its whole request, from its connection.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);

/// How long a peer has to take its whole answer.
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(5);

/// The socket, read until `deadline` at the latest: each read waits only
/// for what is left of it, and none once the peer process has exited.
struct Until<'a> {
    stream: &'a UnixStream,
    deadline: Instant,
    /// The peer's pidfd: readable once it exits.
    peer: BorrowedFd<'a>,
    /// Set when the read ended because the peer exited.
    gone: &'a Cell<bool>,
}

impl Until<'_> {
    /// Waits up to `left` for the socket to be readable; `Ok(false)` when the
    /// peer exited first.
    fn wait(&self, left: Duration) -> std::io::Result<bool> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let mut fds = [
            PollFd::new(self.stream.as_fd(), PollFlags::POLLIN),
            PollFd::new(self.peer, PollFlags::POLLIN),
        ];
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
        poll(&mut fds, timeout)?;
        Ok(fds[1].revents() == Some(PollFlags::empty()))
    }
}

impl Read for Until<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(late());
        }
        // EINTR comes back as `Interrupted`, which the reader retries.
        if !self.wait(left)? {
            self.gone.set(true);
            return Err(std::io::Error::other("the caller is gone"));
        }
        // The poll said readable (or the deadline passed); the timeout only
        // guards against a spurious wake.
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

/// Why no request was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// The process that connected exited before its request was whole.
    Gone,
    /// The request was late, too large or not a request: why.
    Bad(String),
}

/// Reads one request: a JSON value, at most `MAX_REQUEST` bytes, before
/// `deadline`, while the process `peer` (a pidfd) runs.
pub(crate) fn read_request(
    stream: &UnixStream,
    deadline: Instant,
    peer: BorrowedFd<'_>,
) -> Result<AgentRequest, ReadError> {
    let gone = Cell::new(false);
    let until = Until {
        stream,
        deadline,
        peer,
        gone: &gone,
    };
    let reader = BufReader::new(until.take(MAX_REQUEST));
    let read = serde_json::Deserializer::from_reader(reader)
        .into_iter::<AgentRequest>()
        .next();
    match read {
        Some(Ok(req)) => Ok(req),
        _ if gone.get() => Err(ReadError::Gone),
        // A late request reads "it did not arrive within 5 s".
        Some(Err(e)) => Err(ReadError::Bad(e.to_string())),
        None => Err(ReadError::Bad("it is empty".into())),
    }
}

/// Writes the answer, all of it before `ANSWER_DEADLINE` or not at all: a
/// peer that does not read cannot hold the connection longer.
pub(crate) fn write_answer(stream: &UnixStream, answer: &Answer) {
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
pub(crate) fn answer_now(stream: &UnixStream, answer: &Answer) {
    let mut bytes = serde_json::to_vec(answer).unwrap_or_default();
    bytes.push(b'\n');
    if stream.set_nonblocking(true).is_ok() {
        let mut stream = stream;
        let _ = stream.write_all(&bytes);
    }
}
