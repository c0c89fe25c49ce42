//! A session's event journal: an append-only file of JSON lines,
//! `<state_dir>/events/<session id>.jsonl`, one event a line:
//! `{"seq":N,"at_ms":T,"kind":"…","data":…}`.
//!
//! An event is written and fdatasync'd before anyone can read it, so what a
//! reader was served survives kill -9. A crash can only leave the last line
//! unfinished (an append is one `write`): opening the journal copies those
//! bytes aside and cuts them (`repair.rs`), the only bytes ever removed, so
//! they are never served. Sequence numbers start at 1 and ascend by one,
//! which is what lets a stream resume after any `seq` with no gap and no
//! duplicate.
//!
//! Any other damage (bit rot, a stray write) costs only the lines it hits:
//! `rule.rs` says which lines are served, the same for the scan and for
//! every read; a damaged line is skipped and stays in the file, the events
//! after it are served, and a `journal_repaired` event (`report.rs`) says
//! what was skipped, once. Its seq is past every seq the damage could have
//! held, so no seq a reader may have seen is given again.
//!
//! The index is sparse: one offset every [`STRIDE`] events (or every
//! [`MARK_BYTES`] of file, whichever comes first), so its memory stays small
//! at any journal size; a read seeks to the nearest offset at or before
//! what it wants and scans forward, at most a stride of lines (and skips
//! damage that runs past a mark's span to the next mark).
//!
//! A journal has caps ([`Caps`]: bytes and events). A harness's events
//! ([`Journal::append_output`]) are journalled only while they fit under
//! both; the first one that does not is dropped with everything after it
//! in that append, and the caller is told which cap it met. room-core's own
//! events ([`Journal::append`]) are always journalled: they are bounded by
//! the app's commands, and the events that say a turn was cut must land.
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

mod lines;
pub mod registry;
mod repair;
mod report;
mod rule;
mod scan;

use std::collections::VecDeque;
use std::fs::OpenOptions;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::value::RawValue;
use tokio::sync::watch;

use lines::{Kind, Lines};
use repair::TailFix;
use report::Damage;
use rule::Sequence;

pub use registry::Journals;
pub use report::{Repaired, Run, SetAside, MAX_LISTED, REPAIRED};
pub use room_machines::session::JournalCap;

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

/// The index keeps the offset of one line in this many (at least).
pub const STRIDE: u64 = 256;

/// ...and of the first line after this many bytes since the last kept one,
/// so a read never scans much more than a megabyte to reach its first line.
pub const MARK_BYTES: u64 = 1 << 20;

/// The most bytes of lines one page or stream chunk reads (it always has at
/// least one line when there is one): a page of long events is cut short
/// rather than held whole in memory.
pub const MAX_PAGE_BYTES: usize = 4 << 20;

/// A journal's caps. Past either, a harness's events are no longer
/// journalled; room-core's own still are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// The most bytes the file holds (harness events that would take it
    /// past this are dropped).
    pub bytes: u64,
    /// The most events (the same for their count).
    pub events: u64,
}

impl Caps {
    /// No caps at all (a journal that only room-core writes, tests).
    pub const NONE: Caps = Caps {
        bytes: u64::MAX,
        events: u64::MAX,
    };
}

impl Default for Caps {
    fn default() -> Self {
        Caps::NONE
    }
}

/// What [`Journal::append_output`] did.
#[derive(Debug, Default)]
pub struct Appended {
    /// The events journalled (staged ones first), with their seq and time.
    pub events: Vec<Event>,
    /// The cap a harness event met: it and the rest of the batch were
    /// dropped.
    pub capped: Option<JournalCap>,
}

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
    /// The caps on harness events.
    caps: Caps,
}

/// Where some served lines start, where the file ends, and the recent
/// lines.
#[derive(Debug, Default)]
struct Index {
    /// The first served line, every [`STRIDE`]th after the last kept one
    /// and the first that starts [`MARK_BYTES`] or more after it; ascending.
    /// So no served line starts `MARK_BYTES` or more past a mark before the
    /// next mark.
    marks: Vec<Mark>,
    /// Where the sequence stands: the last seq served, and the bytes since
    /// the last sure line (which set the next seq).
    seq: Sequence,
    /// Where the last line (served or damaged) ends: where appends go.
    end: u64,
    /// The last lines, oldest first.
    recent: VecDeque<Arc<Line>>,
    /// Their bytes.
    recent_bytes: usize,
    /// The last event's time (0: none).
    last_at: u64,
    /// What the file's end needs and what is to be reported, until done.
    pending: Option<Pending>,
    /// Whether the scan passed over a damaged line: if not, every line
    /// from the first served one on is served, one seq after another.
    damaged: bool,
}

/// A served line the index keeps: a read can start there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mark {
    /// Its seq.
    seq: u64,
    /// Its offset.
    at: u64,
    /// The sequence's slack just after it (see [`rule`]), so a read from it
    /// judges the lines after it as the scan did.
    slack: u64,
}

/// A repair not done yet: the file's end to mend, then the damage to
/// report in a `journal_repaired` event.
#[derive(Debug)]
struct Pending {
    fix: TailFix,
    damage: Damage,
    set_aside: Option<SetAside>,
}

impl Index {
    fn last_seq(&self) -> u64 {
        self.seq.last()
    }

    fn end(&self) -> u64 {
        self.end
    }

    /// Adds the next served line (which ends at `end`) to the index and the
    /// recent window; `appended` when room-core has just written it.
    fn push(&mut self, line: Line, end: u64, appended: bool) {
        let start = self.end;
        if appended {
            self.seq.appended(line.seq);
        } else {
            self.seq.served(&line, end - start);
        }
        let keep = self.marks.last().map_or(true, |m| {
            line.seq - m.seq >= STRIDE || start - m.at >= MARK_BYTES
        });
        if keep {
            self.marks.push(Mark {
                seq: line.seq,
                at: start,
                slack: self.seq.slack(),
            });
        }
        self.end = end;
        self.last_at = line.at_ms;
        self.remember(line);
    }

    /// Passes over a damaged line of `len` bytes.
    fn skip(&mut self, len: u64) {
        self.seq.skipped(len);
        self.end += len;
        self.damaged = true;
    }

    /// The kept line nearest at or before seq `seq` (else the first).
    /// There is one once a line has been served.
    fn mark_before(&self, seq: u64) -> Mark {
        let i = self.marks.partition_point(|m| m.seq <= seq);
        self.marks[i.saturating_sub(1)]
    }

    /// For a damaged line from `start` to `end`: when it reaches
    /// [`MARK_BYTES`] past the kept line before it, no served line comes
    /// between it and the next kept one, so a read goes there: `Some` of
    /// that line (`Some(None)`: there is none).
    fn past_span(&self, start: u64, end: u64) -> Option<Option<Mark>> {
        let i = self.marks.partition_point(|m| m.at <= start);
        let before = self.marks.get(i.checked_sub(1)?)?;
        (end >= before.at + MARK_BYTES).then(|| self.marks.get(i).copied())
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
        // The window holds every served line from its first on (seqs may
        // have gaps where lines were damaged).
        let first = self.recent.front()?.seq;
        if after + 1 < first {
            return None;
        }
        let skip = self.recent.partition_point(|l| l.seq <= after);
        Some(self.recent.iter().skip(skip).take(limit).cloned().collect())
    }
}

/// `<state_dir>/events`, where the journals live.
pub fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join("events")
}

/// Now, in Unix ms.
fn unix_ms() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(now.as_millis()).unwrap_or(u64::MAX)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Journal {
    /// The journal of session `id` under `events_dir` (not opened yet),
    /// without caps.
    pub fn new(events_dir: &Path, id: &str) -> Journal {
        Journal::counted(events_dir, id, Caps::NONE, Arc::default())
    }

    /// The same with `caps` on harness events.
    pub fn capped(events_dir: &Path, id: &str, caps: Caps) -> Journal {
        Journal::counted(events_dir, id, caps, Arc::default())
    }

    /// The same, counting its written events into `written`.
    pub(crate) fn counted(
        events_dir: &Path,
        id: &str,
        caps: Caps,
        written: Arc<AtomicU64>,
    ) -> Journal {
        Journal {
            caps,
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

    /// Scans the file unless it was, then repairs it (see
    /// [`Journal::settle`]); the caller holds the write lock, so no append
    /// runs meanwhile. A repair that fails is logged and tried again by the
    /// next append: readers are served meanwhile, from what the scan found.
    fn load(&self, write: &MutexGuard<'_, ()>) -> Result<(), JournalError> {
        if lock(&self.index).is_some() {
            return Ok(());
        }
        let scan::Scanned {
            mut index,
            damage,
            fix,
        } = scan::open(&self.path).map_err(|e| self.io(e))?;
        if fix != TailFix::Sound || damage.news().runs > 0 {
            index.pending = Some(Pending {
                fix,
                damage,
                set_aside: None,
            });
        }
        let last = index.last_seq();
        let repair = index.pending.is_some();
        *lock(&self.index) = Some(index);
        self.tail.send_modify(|t| t.last = last);
        if repair {
            if let Err(e) = self.write_locked(write, Vec::new(), unix_ms(), false) {
                log::error!("{}: cannot repair it yet: {e}", self.path.display());
            }
        }
        Ok(())
    }

    /// Does what a scan left pending, first thing before an append: mends
    /// the file's end (setting an unfinished line aside) and returns the
    /// `journal_repaired` event to write first, if there is damage not
    /// reported yet, with what it reports. What fails stays pending.
    fn settle(&self) -> Result<Option<(NewEvent, Pending)>, JournalError> {
        let Some(mut pending) = lock(&self.index).as_mut().and_then(|i| i.pending.take()) else {
            return Ok(None);
        };
        match repair::mend(&self.path, pending.fix) {
            Ok(set_aside) => {
                pending.fix = TailFix::Sound;
                pending.set_aside = pending.set_aside.take().or(set_aside);
            }
            Err(e) => {
                if let Some(index) = lock(&self.index).as_mut() {
                    index.pending = Some(pending);
                }
                return Err(self.io(e));
            }
        }
        let end = lock(&self.index).as_ref().expect("loaded").end();
        Ok(pending
            .damage
            .event(end, pending.set_aside.clone())
            .map(|event| (event, pending)))
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

    /// Appends the staged events and then `events` (room-core's own, never
    /// capped) with one write and one fdatasync, so they are durable before
    /// this returns (and before any reader is told of them); returns them
    /// with their seq and time.
    pub fn append(&self, events: Vec<NewEvent>, at_ms: u64) -> Result<Vec<Event>, JournalError> {
        Ok(self.write(events, at_ms, false)?.events)
    }

    /// Appends the staged events and then a harness's `events` as far as
    /// they fit under the caps: the first that does not is dropped with the
    /// rest, and [`Appended::capped`] says which cap it met.
    pub fn append_output(
        &self,
        events: Vec<NewEvent>,
        at_ms: u64,
    ) -> Result<Appended, JournalError> {
        self.write(events, at_ms, true)
    }

    /// The caps on harness events.
    pub fn caps(&self) -> Caps {
        self.caps
    }

    fn write(
        &self,
        events: Vec<NewEvent>,
        at_ms: u64,
        capped: bool,
    ) -> Result<Appended, JournalError> {
        let write = lock(&self.write);
        if events.is_empty() && lock(&self.staged).is_empty() {
            return Ok(Appended::default());
        }
        self.load(&write)?;
        self.write_locked(&write, events, at_ms, capped)
    }

    /// [`Journal::write`] once the file is scanned, under the write lock:
    /// the repair's report first (see [`Journal::settle`]), then the staged
    /// events, then `events`.
    fn write_locked(
        &self,
        _write: &MutexGuard<'_, ()>,
        events: Vec<NewEvent>,
        at_ms: u64,
        capped: bool,
    ) -> Result<Appended, JournalError> {
        let report = self.settle()?;
        let mut own = Vec::new();
        if let Some((event, _)) = &report {
            own.push(event.clone());
        }
        own.append(&mut lock(&self.staged));
        let written = self.append_now(own, events, at_ms, capped);
        match (&written, report) {
            (Ok(a), Some((_, pending))) => log::warn!(
                "{}: {} damaged lines ({} bytes) reported in a {REPAIRED} event, seq {}",
                self.path.display(),
                pending.damage.news().lines,
                pending.damage.news().bytes,
                a.events.first().map_or(0, |e| e.seq),
            ),
            // The report is still to be written.
            (Err(_), Some((_, pending))) => {
                if let Some(index) = lock(&self.index).as_mut() {
                    index.pending = Some(pending);
                }
            }
            _ => {}
        }
        written
    }

    /// Writes `own` events (never capped) and then `events` at the file's
    /// end with one write and one fdatasync, then indexes them and tells
    /// readers.
    fn append_now(
        &self,
        own: Vec<NewEvent>,
        events: Vec<NewEvent>,
        at_ms: u64,
        capped: bool,
    ) -> Result<Appended, JournalError> {
        if own.is_empty() && events.is_empty() {
            return Ok(Appended::default());
        }
        let (end, first) = {
            let index = lock(&self.index);
            let index = index.as_ref().expect("loaded");
            (index.end(), index.seq.next())
        };
        let mut bytes = Vec::new();
        let mut lines = Vec::with_capacity(own.len() + events.len());
        let mut out = Vec::with_capacity(own.len() + events.len());
        let mut met = None;
        let all = own
            .into_iter()
            .map(|e| (e, false))
            .chain(events.into_iter().map(|e| (e, capped)));
        for (e, harness) in all {
            let event = Event {
                seq: first + out.len() as u64,
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
            if harness {
                let size = end + bytes.len() as u64 + 1;
                met = if size > self.caps.bytes {
                    Some(JournalCap::Bytes(self.caps.bytes))
                } else if event.seq > self.caps.events {
                    Some(JournalCap::Events(self.caps.events))
                } else {
                    None
                };
                if met.is_some() {
                    bytes.truncate(before);
                    break;
                }
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
        if out.is_empty() {
            return Ok(Appended {
                events: out,
                capped: met,
            });
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
                index.push(line, end, true);
            }
            index.last_seq()
        };
        self.written.fetch_add(out.len() as u64, Ordering::Relaxed);
        self.tail.send_modify(|t| t.last = last);
        Ok(Appended {
            events: out,
            capped: met,
        })
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
    /// they are recent, else from the file, from the nearest indexed line
    /// on, skipping damaged lines by the same rule as the scan. Stops early
    /// once the lines it serves and the damaged ones it passes over come to
    /// [`MAX_PAGE_BYTES`] (after at least one line).
    pub fn lines(&self, after: u64, limit: usize) -> Result<Vec<Arc<Line>>, JournalError> {
        let limit = limit.min(MAX_PAGE);
        self.ensure()?;
        if let Some(lines) = lock(&self.index)
            .as_ref()
            .and_then(|i| i.recent_after(after, limit))
        {
            return Ok(lines);
        }
        self.read_file(after, limit)
    }

    /// [`Journal::lines`] from the file, once it is scanned.
    fn read_file(&self, after: u64, limit: usize) -> Result<Vec<Arc<Line>>, JournalError> {
        self.ensure()?;
        let (mark, to, damaged) = {
            let index = lock(&self.index);
            let index = index.as_ref().expect("loaded");
            if after >= index.last_seq() || limit == 0 {
                return Ok(Vec::new());
            }
            (index.mark_before(after + 1), index.end(), index.damaged)
        };
        let mut file = std::fs::File::open(&self.path).map_err(|e| self.io(e))?;
        if !damaged {
            if let Some(lines) = self.read_counted(&mut file, mark, to, after, limit)? {
                return Ok(lines);
            }
            log::warn!(
                "{}: a line is not what the scan found there; reading it as a damaged journal",
                self.path.display()
            );
        }
        self.read_judged(&mut file, mark, to, after, limit)
    }

    /// [`Journal::read_file`] in a journal with no damaged line: lines are
    /// counted from the mark, and only those served are parsed. `None` when
    /// a line is not the event expected there (the file changed since the
    /// scan).
    fn read_counted(
        &self,
        file: &mut std::fs::File,
        mark: Mark,
        to: u64,
        after: u64,
        limit: usize,
    ) -> Result<Option<Vec<Arc<Line>>>, JournalError> {
        file.seek(SeekFrom::Start(mark.at))
            .map_err(|e| self.io(e))?;
        let reader = BufReader::with_capacity(64 << 10, (&*file).take(to - mark.at));
        let mut lines = Lines::new(reader, mark.at);
        let mut out = Vec::new();
        let mut bytes = 0;
        let mut seq = mark.seq;
        while out.len() < limit && bytes < MAX_PAGE_BYTES {
            let Some(piece) = lines.next_piece().map_err(|e| self.io(e))? else {
                break;
            };
            if piece.kind != Kind::Whole {
                return Ok(None);
            }
            if seq > after {
                let Some(line) = Line::parse(lines.bytes()).filter(|l| l.seq == seq) else {
                    return Ok(None);
                };
                bytes += line.json.len();
                out.push(Arc::new(line));
            }
            seq += 1;
        }
        Ok(Some(out))
    }

    /// [`Journal::read_file`] in a damaged journal: each line is judged by
    /// the scan's rule, from the mark's state on.
    fn read_judged(
        &self,
        file: &mut std::fs::File,
        mut mark: Mark,
        to: u64,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Arc<Line>>, JournalError> {
        let mut out = Vec::new();
        let mut bytes = 0u64;
        'marks: loop {
            let from = mark.at;
            file.seek(SeekFrom::Start(from)).map_err(|e| self.io(e))?;
            // Only what the index said was whole when this began.
            let reader = BufReader::with_capacity(64 << 10, (&*file).take(to - from));
            let mut lines = Lines::new(reader, from);
            // A mark is a served line: the rule takes it as the scan did,
            // and goes on from where the scan was just after it.
            let mut seq = Sequence::after(mark.seq - 1, 0);
            while out.len() < limit && (out.is_empty() || bytes < MAX_PAGE_BYTES as u64) {
                let Some(piece) = lines.next_piece().map_err(|e| self.io(e))? else {
                    break 'marks;
                };
                let line = match piece.kind {
                    Kind::Whole | Kind::Unterminated { kept: true } => seq.check(lines.bytes()),
                    Kind::TooLong | Kind::Unterminated { kept: false } => None,
                };
                match line {
                    Some(line) => {
                        seq.served(&line, piece.len);
                        if piece.start == mark.at {
                            seq = Sequence::after(mark.seq, mark.slack);
                        }
                        if line.seq > after {
                            bytes += line.json.len() as u64;
                            out.push(Arc::new(line));
                        }
                    }
                    None => {
                        seq.skipped(piece.len);
                        bytes += piece.len;
                        // Past a mark's span, damage runs to the next mark:
                        // go there rather than read it.
                        if piece.end() >= from + MARK_BYTES {
                            let past = lock(&self.index)
                                .as_ref()
                                .and_then(|i| i.past_span(piece.start, piece.end()));
                            match past {
                                Some(Some(next)) if next.at < to => {
                                    mark = next;
                                    continue 'marks;
                                }
                                Some(_) => break 'marks,
                                None => {}
                            }
                        }
                    }
                }
            }
            break;
        }
        Ok(out)
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

    /// The last event of `kind`, searching back from the end a stretch of
    /// [`MAX_PAGE`] seqs at a time (each read page by page).
    pub fn last_of(&self, kind: &str) -> Result<Option<Event>, JournalError> {
        let mut before = self.last_seq()?;
        while before > 0 {
            let after = before.saturating_sub(MAX_PAGE as u64);
            let mut found = None;
            let mut from = after;
            while from < before {
                let lines = self.lines(from, MAX_PAGE)?;
                let Some(last) = lines.last() else { break };
                from = last.seq;
                if let Some(line) = lines
                    .iter()
                    .rev()
                    .find(|l| l.seq <= before && l.kind == kind)
                {
                    found = Some(line.clone());
                }
            }
            if let Some(line) = found {
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
mod caps_tests;
#[cfg(test)]
mod repair_props;
#[cfg(test)]
mod repair_tests;
#[cfg(test)]
mod tests;
