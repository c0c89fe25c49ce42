//! A session's event journal: an append-only file of JSON lines,
//! `<state_dir>/events/<session id>.jsonl`, one event a line:
//! `{"seq":N,"at_ms":T,"kind":"…","data":…}`.
//!
//! An event is written and fdatasync'd before anyone can read it, so what a
//! reader was served survives kill -9. A crash can only tear the last line
//! (a line is one `write`); opening the journal drops a torn last line, so it
//! is never served. Sequence numbers start at 1 and have no gaps, which is
//! what lets a stream resume after any `seq` with no gap and no duplicate.
//!
//! The file is scanned lazily, on the first append or read, so a service
//! with many sessions does not scan every journal at start; it is opened for
//! each append or file read and closed after, so a journal holds no
//! descriptor between them (a service may hold thousands of journals).
//!
//! Readers are told of appends through [`Journal::subscribe`] (a tokio watch
//! channel, which needs no tokio runtime to send: the synchronous runtime
//! appends, the async front end waits). The last events are kept in memory
//! ([`RECENT_EVENTS`], [`RECENT_BYTES`]), so a reader at the tail never
//! touches the file and never waits for an append's fdatasync: appends hold
//! the write lock across their write and sync, readers only the index lock,
//! which no I/O is ever done under.

pub mod registry;
mod scan;

use std::collections::VecDeque;
use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::value::RawValue;
use tokio::sync::watch;

pub use registry::Journals;

/// The longest line a journal holds; a harness event longer than this is
/// not journalled (the turn reader caps lines below it anyway).
pub const MAX_LINE: usize = 1 << 20;

/// The most events one page returns.
pub const MAX_PAGE: usize = 1024;

/// The most recent events a journal keeps in memory for readers at its tail.
pub const RECENT_EVENTS: usize = 256;

/// ...and the most bytes of them (an event longer than this is read from
/// the file).
pub const RECENT_BYTES: usize = 256 << 10;

/// One event to append: its kind and its data, already JSON.
#[derive(Debug, Clone)]
pub struct NewEvent {
    /// `harness` for what a harness printed, else room-core's own kind.
    pub kind: String,
    /// The data: a harness event as printed, or room-core's own object.
    pub data: Box<RawValue>,
}

impl NewEvent {
    /// An event whose data is serialised from `data`.
    pub fn new(kind: impl Into<String>, data: &impl serde::Serialize) -> NewEvent {
        let text = serde_json::to_string(data).unwrap_or_else(|_| "null".into());
        NewEvent {
            kind: kind.into(),
            data: RawValue::from_string(text).unwrap_or_else(|_| null()),
        }
    }

    /// One of room-core's own events, a `#[serde(tag = "kind", content =
    /// "data")]` enum such as the session machine's `Event`: its `kind` and
    /// `data` become the line's (`null` data for a variant without fields).
    pub fn tagged(event: &impl serde::Serialize) -> NewEvent {
        #[derive(serde::Deserialize)]
        struct Tagged {
            kind: String,
            data: Option<Box<RawValue>>,
        }
        // Through the text, not a `Value`, so the data's fields keep their
        // order.
        let text = serde_json::to_string(event).unwrap_or_default();
        match serde_json::from_str::<Tagged>(&text) {
            Ok(t) => NewEvent {
                kind: t.kind,
                data: t.data.unwrap_or_else(null),
            },
            Err(_) => NewEvent::new("unknown", &()),
        }
    }

    /// A harness's own event, kept byte for byte as it printed it. `None`
    /// when the line is not one JSON value.
    pub fn harness(line: &str) -> Option<NewEvent> {
        let raw: Box<RawValue> = serde_json::from_str(line.trim()).ok()?;
        Some(NewEvent {
            kind: "harness".into(),
            data: raw,
        })
    }
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".into()).expect("null is JSON")
}

/// One journalled event, as stored and served.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Event {
    /// Its place in the session's journal, from 1, no gaps.
    pub seq: u64,
    /// Unix ms when it was journalled.
    pub at_ms: u64,
    /// What kind of event.
    pub kind: String,
    /// Its data.
    pub data: Box<RawValue>,
}

/// One journalled event as its line (without the newline): what pages and
/// streams serve, byte for byte as the file holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its seq.
    pub seq: u64,
    /// Its time.
    pub at_ms: u64,
    /// Its kind.
    pub kind: String,
    /// The whole event, `{"seq":…,"at_ms":…,"kind":…,"data":…}`.
    pub json: String,
}

impl Line {
    /// Parses a journal line; `None` when it is not a whole event.
    fn parse(bytes: &[u8]) -> Option<Line> {
        let event: Event = serde_json::from_slice(bytes).ok()?;
        Some(Line {
            seq: event.seq,
            at_ms: event.at_ms,
            kind: event.kind,
            json: String::from_utf8(bytes.to_vec()).ok()?,
        })
    }
}

/// What readers watch: the last seq written and whether the session is over
/// (closed, nothing more will be written).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tail {
    /// The last seq written (0: none).
    pub last: u64,
    /// The session is closed and its last event written.
    pub closed: bool,
}

/// Why the journal could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Reading or writing the file failed.
    #[error("the event journal {path}: {source}")]
    Io {
        /// The journal file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// An event's line would be longer than [`MAX_LINE`].
    #[error("an event of {0} bytes is over the journal's line limit")]
    TooLong(usize),
}

/// A session's journal.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    /// Held across an append's write and fdatasync (appends are serial, so
    /// seqs are gapless), and while the file is first scanned.
    write: Mutex<()>,
    /// Where each line starts and the recent lines; `None` until scanned.
    /// Never held across I/O.
    index: Mutex<Option<Index>>,
    /// Events staged for the next append (see [`Journal::stage`]).
    staged: Mutex<Vec<NewEvent>>,
    tail: watch::Sender<Tail>,
    /// Events written, shared by the journals of one registry (metrics).
    written: Arc<AtomicU64>,
}

/// Where each line starts, and the recent lines.
#[derive(Debug, Default)]
struct Index {
    /// `starts[i]` is the offset of the line of seq `i + 1`; one more entry
    /// holds the end of the file.
    starts: Vec<u64>,
    /// The last lines, oldest first.
    recent: VecDeque<Arc<Line>>,
    /// Their bytes.
    recent_bytes: usize,
    /// The last event's time (0: none).
    last_at: u64,
}

impl Index {
    fn last_seq(&self) -> u64 {
        (self.starts.len() - 1) as u64
    }

    fn end(&self) -> u64 {
        *self.starts.last().expect("starts holds the end")
    }

    /// Adds a line (at `end` after it) to the index and the recent window.
    fn push(&mut self, line: Line, end: u64) {
        self.starts.push(end);
        self.last_at = line.at_ms;
        self.remember(line);
    }

    /// Keeps `line` in the recent window, dropping the oldest past its
    /// bounds. A line too long for the window empties it: the window always
    /// ends at the last seq, or holds nothing.
    fn remember(&mut self, line: Line) {
        let len = line.json.len();
        if len > RECENT_BYTES {
            self.recent.clear();
            self.recent_bytes = 0;
            return;
        }
        self.recent_bytes += len;
        self.recent.push_back(Arc::new(line));
        while self.recent.len() > RECENT_EVENTS || self.recent_bytes > RECENT_BYTES {
            let old = self.recent.pop_front().expect("not empty");
            self.recent_bytes -= old.json.len();
        }
    }

    /// Up to `limit` lines after `after` from the recent window; `None` when
    /// the window does not reach back to `after + 1`.
    fn recent_after(&self, after: u64, limit: usize) -> Option<Vec<Arc<Line>>> {
        if after >= self.last_seq() {
            return Some(Vec::new());
        }
        let first = self.recent.front()?.seq;
        if after + 1 < first {
            return None;
        }
        let skip = (after + 1 - first) as usize;
        Some(self.recent.iter().skip(skip).take(limit).cloned().collect())
    }
}

/// `<state_dir>/events`, where the journals live.
pub fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join("events")
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Journal {
    /// The journal of session `id` under `events_dir` (not opened yet).
    pub fn new(events_dir: &Path, id: &str) -> Journal {
        Journal::counted(events_dir, id, Arc::default())
    }

    /// The same, counting its written events into `written`.
    pub(crate) fn counted(events_dir: &Path, id: &str, written: Arc<AtomicU64>) -> Journal {
        Journal {
            path: events_dir.join(format!("{id}.jsonl")),
            write: Mutex::new(()),
            index: Mutex::new(None),
            staged: Mutex::new(Vec::new()),
            tail: watch::Sender::new(Tail::default()),
            written,
        }
    }

    /// The journal's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, source: std::io::Error) -> JournalError {
        JournalError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Scans the file (repairing a torn last line) unless it was; the
    /// caller holds the write lock, so no append runs meanwhile.
    fn load(&self, _write: &MutexGuard<'_, ()>) -> Result<(), JournalError> {
        if lock(&self.index).is_some() {
            return Ok(());
        }
        let index = scan::open(&self.path).map_err(|e| self.io(e))?;
        let last = index.last_seq();
        *lock(&self.index) = Some(index);
        self.tail.send_modify(|t| t.last = last);
        Ok(())
    }

    /// Makes sure the file has been scanned.
    fn ensure(&self) -> Result<(), JournalError> {
        if lock(&self.index).is_some() {
            return Ok(());
        }
        self.load(&lock(&self.write))
    }

    /// Stages `event` for the next append or [`Journal::flush`], which
    /// writes it ahead of its own events. A caller that must not wait for an
    /// fdatasync now (the runtime just before it spawns a harness) stages,
    /// and flushes after.
    pub fn stage(&self, event: NewEvent) {
        lock(&self.staged).push(event);
    }

    /// Appends what was staged; with nothing staged it returns at once
    /// (it does not wait for an append in progress).
    pub fn flush(&self, at_ms: u64) -> Result<Vec<Event>, JournalError> {
        if lock(&self.staged).is_empty() {
            return Ok(Vec::new());
        }
        self.append(Vec::new(), at_ms)
    }

    /// Appends the staged events and then `events` with one write and one
    /// fdatasync, so they are durable before this returns (and before any
    /// reader is told of them); returns them with their seq and time.
    pub fn append(&self, events: Vec<NewEvent>, at_ms: u64) -> Result<Vec<Event>, JournalError> {
        let write = lock(&self.write);
        if events.is_empty() && lock(&self.staged).is_empty() {
            return Ok(Vec::new());
        }
        self.load(&write)?;
        let mut all = std::mem::take(&mut *lock(&self.staged));
        all.extend(events);
        let (end, first) = {
            let index = lock(&self.index);
            let index = index.as_ref().expect("loaded");
            (index.end(), index.last_seq() + 1)
        };
        let mut bytes = Vec::new();
        let mut lines = Vec::with_capacity(all.len());
        let mut out = Vec::with_capacity(all.len());
        for (n, e) in all.into_iter().enumerate() {
            let event = Event {
                seq: first + n as u64,
                at_ms,
                kind: e.kind,
                data: e.data,
            };
            let before = bytes.len();
            serde_json::to_writer(&mut bytes, &event).map_err(|e| self.io(e.into()))?;
            let len = bytes.len() - before;
            if len + 1 > MAX_LINE {
                return Err(JournalError::TooLong(len + 1));
            }
            let json = String::from_utf8(bytes[before..].to_vec()).expect("serde writes UTF-8");
            bytes.push(b'\n');
            lines.push((
                Line {
                    seq: event.seq,
                    at_ms,
                    kind: event.kind.clone(),
                    json,
                },
                end + bytes.len() as u64,
            ));
            out.push(event);
        }
        let file = OpenOptions::new()
            .write(true)
            .custom_flags(nix::libc::O_CLOEXEC)
            .open(&self.path)
            .map_err(|e| self.io(e))?;
        if let Err(e) = file
            .write_all_at(&bytes, end)
            .and_then(|()| file.sync_data())
        {
            // Nothing of a failed append may be served: cut the file back
            // to where it was (what reached the disk is dropped too).
            let _ = file.set_len(end);
            return Err(self.io(e));
        }
        let last = {
            let mut index = lock(&self.index);
            let index = index.as_mut().expect("loaded");
            for (line, end) in lines {
                index.push(line, end);
            }
            index.last_seq()
        };
        drop(write);
        self.written.fetch_add(out.len() as u64, Ordering::Relaxed);
        self.tail.send_modify(|t| t.last = last);
        Ok(out)
    }

    /// The last seq written (0 for an empty journal).
    pub fn last_seq(&self) -> Result<u64, JournalError> {
        self.ensure()?;
        Ok(lock(&self.index).as_ref().expect("loaded").last_seq())
    }

    /// The last event's Unix ms, if the journal has been scanned and has one.
    pub fn last_at(&self) -> Option<u64> {
        lock(&self.index)
            .as_ref()
            .map(|i| i.last_at)
            .filter(|at| *at > 0)
    }

    /// A receiver that sees every append and the close (scanning the file
    /// first, so its `last` is right from the start).
    pub fn subscribe(&self) -> Result<watch::Receiver<Tail>, JournalError> {
        self.ensure()?;
        Ok(self.tail.subscribe())
    }

    /// Marks the session over: its last event is written. Streams end once
    /// they have sent it.
    pub fn close(&self) {
        self.tail
            .send_if_modified(|t| !std::mem::replace(&mut t.closed, true));
    }

    /// Whether [`Journal::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.tail.borrow().closed
    }

    /// Up to `limit` lines after seq `after` from memory only: `None` when
    /// the journal has not been scanned or the recent window does not reach
    /// back that far (then [`Journal::lines`] reads the file). Never does
    /// I/O, never waits for an append.
    pub fn recent(&self, after: u64, limit: usize) -> Option<Vec<Arc<Line>>> {
        lock(&self.index)
            .as_ref()?
            .recent_after(after, limit.min(MAX_PAGE))
    }

    /// Up to `limit` lines after seq `after`, oldest first: from memory when
    /// they are recent, else from the file.
    pub fn lines(&self, after: u64, limit: usize) -> Result<Vec<Arc<Line>>, JournalError> {
        let limit = limit.min(MAX_PAGE);
        self.ensure()?;
        let (from, to) = {
            let index = lock(&self.index);
            let index = index.as_ref().expect("loaded");
            if let Some(lines) = index.recent_after(after, limit) {
                return Ok(lines);
            }
            let first = after.min(index.last_seq()) as usize;
            let last = (first + limit).min(index.last_seq() as usize);
            (index.starts[first], index.starts[last])
        };
        let file = std::fs::File::open(&self.path).map_err(|e| self.io(e))?;
        let mut buf = vec![0u8; (to - from) as usize];
        file.read_exact_at(&mut buf, from).map_err(|e| self.io(e))?;
        buf.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                Line::parse(l).map(Arc::new).ok_or_else(|| {
                    self.io(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "a journalled line is no longer an event",
                    ))
                })
            })
            .collect()
    }

    /// Up to `limit` events after seq `after`, oldest first.
    pub fn page(&self, after: u64, limit: usize) -> Result<Vec<Event>, JournalError> {
        self.lines(after, limit)?
            .iter()
            .map(|l| {
                serde_json::from_str(&l.json)
                    .map_err(|e| self.io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
            })
            .collect()
    }

    /// The last event of `kind`, searching back from the end a page at a time.
    pub fn last_of(&self, kind: &str) -> Result<Option<Event>, JournalError> {
        let mut before = self.last_seq()?;
        while before > 0 {
            let after = before.saturating_sub(MAX_PAGE as u64);
            let lines = self.lines(after, (before - after) as usize)?;
            if let Some(line) = lines.iter().rev().find(|l| l.kind == kind) {
                let event = serde_json::from_str(&line.json).map_err(|e| {
                    self.io(std::io::Error::new(std::io::ErrorKind::InvalidData, e))
                })?;
                return Ok(Some(event));
            }
            before = after;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests;
