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
//! each append or read and closed after, so a journal holds no descriptor
//! between them (a service may hold thousands of sessions).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde_json::value::RawValue;

/// The longest line a journal holds; a harness event longer than this is
/// not journalled (the turn reader caps lines below it anyway).
pub const MAX_LINE: usize = 1 << 20;

/// The most events one page returns.
pub const MAX_PAGE: usize = 1024;

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
    inner: Mutex<Option<Open>>,
}

/// Where each line of the (scanned) file starts.
#[derive(Debug)]
struct Open {
    /// `starts[i]` is the offset of the line of seq `i + 1`; one more entry
    /// holds the end of the file.
    starts: Vec<u64>,
}

impl Open {
    fn last_seq(&self) -> u64 {
        (self.starts.len() - 1) as u64
    }

    fn end(&self) -> u64 {
        *self.starts.last().expect("starts holds the end")
    }
}

/// `<state_dir>/events`, where the journals live.
pub fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join("events")
}

impl Journal {
    /// The journal of session `id` under `events_dir` (not opened yet).
    pub fn new(events_dir: &Path, id: &str) -> Journal {
        Journal {
            path: events_dir.join(format!("{id}.jsonl")),
            inner: Mutex::new(None),
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

    /// The open journal, opening (and repairing) it on first use.
    fn open(&self) -> Result<MutexGuard<'_, Option<Open>>, JournalError> {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            *guard = Some(open_file(&self.path).map_err(|e| self.io(e))?);
        }
        Ok(guard)
    }

    /// Appends `events` with one write and one fdatasync, so they are
    /// durable before this returns; returns them with their seq and time.
    pub fn append(&self, events: Vec<NewEvent>, at_ms: u64) -> Result<Vec<Event>, JournalError> {
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let mut guard = self.open()?;
        let open = guard.as_mut().expect("opened");
        let mut bytes = Vec::new();
        let mut lens = Vec::with_capacity(events.len());
        let mut out = Vec::with_capacity(events.len());
        for (n, e) in events.into_iter().enumerate() {
            let event = Event {
                seq: open.last_seq() + 1 + n as u64,
                at_ms,
                kind: e.kind,
                data: e.data,
            };
            let before = bytes.len();
            serde_json::to_writer(&mut bytes, &event).map_err(|e| self.io(e.into()))?;
            bytes.push(b'\n');
            let len = bytes.len() - before;
            if len > MAX_LINE {
                return Err(JournalError::TooLong(len));
            }
            lens.push(len as u64);
            out.push(event);
        }
        let end = open.end();
        let file = writable(&self.path).map_err(|e| self.io(e))?;
        let written = file
            .write_all_at(&bytes, end)
            .and_then(|()| file.sync_data());
        if let Err(e) = written {
            // Nothing of a failed append may be served: cut the file back
            // to where it was (what reached the disk is dropped too).
            let _ = file.set_len(end);
            return Err(self.io(e));
        }
        let mut at = end;
        for len in lens {
            at += len;
            open.starts.push(at);
        }
        Ok(out)
    }

    /// The last seq written (0 for an empty journal).
    pub fn last_seq(&self) -> Result<u64, JournalError> {
        Ok(self.open()?.as_ref().expect("opened").last_seq())
    }

    /// Up to `limit` events after seq `after`, oldest first.
    pub fn page(&self, after: u64, limit: usize) -> Result<Vec<Event>, JournalError> {
        let limit = limit.min(MAX_PAGE);
        let guard = self.open()?;
        let open = guard.as_ref().expect("opened");
        let first = after.min(open.last_seq()) as usize;
        let last = (first + limit).min(open.last_seq() as usize);
        if first >= last {
            return Ok(Vec::new());
        }
        let (from, to) = (open.starts[first], open.starts[last]);
        let mut buf = vec![0u8; (to - from) as usize];
        File::open(&self.path)
            .and_then(|f| f.read_exact_at(&mut buf, from))
            .map_err(|e| self.io(e))?;
        drop(guard);
        buf.split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| {
                serde_json::from_slice(l)
                    .map_err(|e| self.io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
            })
            .collect()
    }
}

/// The journal file for writing (created 0600).
fn writable(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(nix::libc::O_CLOEXEC)
        .open(path)
}

/// Scans a journal file (creating it), drops a torn last line and indexes
/// where each line starts.
fn open_file(path: &Path) -> std::io::Result<Open> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = writable(path)?;
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    file.read_to_end(&mut bytes)?;
    let mut starts = vec![0u64];
    let mut at = 0usize;
    while let Some(n) = bytes[at..].iter().position(|b| *b == b'\n') {
        let line = &bytes[at..at + n];
        // A line that is not a whole event ends the journal: only the last
        // line can be torn, and nothing after a torn line is trusted.
        let whole =
            serde_json::from_slice::<Event>(line).is_ok_and(|e| e.seq == starts.len() as u64);
        if !whole {
            break;
        }
        at += n + 1;
        starts.push(at as u64);
    }
    if at < bytes.len() {
        log::warn!(
            "{}: dropping {} bytes of a torn last event",
            path.display(),
            bytes.len() - at
        );
        file.set_len(at as u64)?;
        file.sync_data()?;
    }
    Ok(Open { starts })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Write;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rc-journal-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn kinds(events: &[Event]) -> Vec<(u64, String)> {
        events.iter().map(|e| (e.seq, e.kind.clone())).collect()
    }

    #[test]
    fn events_get_gapless_seqs_and_pages_resume_after_any_seq() {
        let dir = temp("pages");
        let j = Journal::new(&dir, "cr_a");
        assert_eq!(j.last_seq().unwrap(), 0);
        let batch: Vec<NewEvent> = (0..5)
            .map(|n| NewEvent::new(format!("k{n}"), &json!({"n": n})))
            .collect();
        let written = j.append(batch, 42).unwrap();
        assert_eq!(
            written.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5]
        );
        assert_eq!(
            kinds(&j.page(0, 2).unwrap()),
            [(1, "k0".into()), (2, "k1".into())]
        );
        assert_eq!(
            kinds(&j.page(3, 10).unwrap()),
            [(4, "k3".into()), (5, "k4".into())]
        );
        assert!(j.page(5, 10).unwrap().is_empty());
        assert!(j.page(99, 10).unwrap().is_empty());
        // Reopened (a restart): the seqs go on.
        let j = Journal::new(&dir, "cr_a");
        let e = j
            .append(vec![NewEvent::new("after", &json!({}))], 43)
            .unwrap();
        assert_eq!(e[0].seq, 6);
        assert_eq!(j.page(5, 10).unwrap()[0].at_ms, 43);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_harness_event_is_kept_as_printed() {
        let dir = temp("raw");
        let j = Journal::new(&dir, "cr_b");
        let printed = r#"{"type":"system","subtype":"init","z":1,"a":[1, 2]}"#;
        j.append(vec![NewEvent::harness(printed).unwrap()], 1)
            .unwrap();
        let e = &j.page(0, 1).unwrap()[0];
        assert_eq!(e.kind, "harness");
        assert_eq!(e.data.get(), printed);
        assert!(NewEvent::harness("not json").is_none());
        assert!(NewEvent::harness("{} {}").is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_torn_last_line_is_dropped_at_open_and_never_served() {
        let dir = temp("torn");
        let j = Journal::new(&dir, "cr_c");
        j.append(vec![NewEvent::new("one", &json!({}))], 1).unwrap();
        drop(j);
        let path = dir.join("cr_c.jsonl");
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"seq":2,"at_ms":2,"kind":"tw"#).unwrap();
        drop(f);
        let j = Journal::new(&dir, "cr_c");
        assert_eq!(j.last_seq().unwrap(), 1);
        assert_eq!(kinds(&j.page(0, 10).unwrap()), [(1, "one".into())]);
        let e = j.append(vec![NewEvent::new("two", &json!({}))], 3).unwrap();
        assert_eq!(e[0].seq, 2);
        assert_eq!(kinds(&j.page(1, 10).unwrap()), [(2, "two".into())]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp("mode");
        let j = Journal::new(&dir, "cr_d");
        j.append(vec![NewEvent::new("x", &json!({}))], 1).unwrap();
        let mode = std::fs::metadata(j.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
