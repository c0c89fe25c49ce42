//! A session's journal: the one handle its writer and its readers share,
//! its caps, what readers watch, and its opening (scanned on first use,
//! then repaired).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use room_machines::session::TurnTail;
use tokio::sync::watch;

use super::event::NewEvent;
use super::index::{Index, Pending};
use super::repair::{self, TailFix};
use super::scan;

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
    /// An event's line would be longer than [`MAX_LINE`](super::MAX_LINE).
    #[error("an event of {0} bytes is over the journal's line limit")]
    TooLong(usize),
}

/// A session's journal.
#[derive(Debug)]
pub struct Journal {
    pub(super) path: PathBuf,
    /// Held across an append's write and fdatasync (appends are serial, so
    /// seqs are gapless), and while the file is first scanned.
    pub(super) write: Mutex<()>,
    /// Where each line starts and the recent lines; `None` until scanned.
    /// Never held across I/O.
    pub(super) index: Mutex<Option<Index>>,
    /// Events staged for the next append (see [`Journal::stage`]).
    pub(super) staged: Mutex<Vec<NewEvent>>,
    pub(super) tail: watch::Sender<Tail>,
    /// Events written, shared by the journals of one registry (metrics).
    pub(super) written: Arc<AtomicU64>,
    /// The caps on harness events.
    pub(super) caps: Caps,
}

/// Now, in Unix ms.
pub(super) fn unix_ms() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(now.as_millis()).unwrap_or(u64::MAX)
}

/// Locks `m`, also when a holder panicked.
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
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

    pub(super) fn io(&self, source: std::io::Error) -> JournalError {
        JournalError::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// Scans the file unless it was, then repairs it (see
    /// [`Journal::settle`]); the caller holds the write lock, so no append
    /// runs meanwhile. A repair that fails is logged and tried again by the
    /// next append: readers are served meanwhile, from what the scan found.
    pub(super) fn load(&self, write: &MutexGuard<'_, ()>) -> Result<(), JournalError> {
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
    pub(super) fn settle(&self) -> Result<Option<(NewEvent, Pending)>, JournalError> {
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
    pub(super) fn ensure(&self) -> Result<(), JournalError> {
        if lock(&self.index).is_some() {
            return Ok(());
        }
        self.load(&lock(&self.write))
    }

    /// The caps on harness events.
    pub fn caps(&self) -> Caps {
        self.caps
    }

    /// The last seq written (0 for an empty journal).
    pub fn last_seq(&self) -> Result<u64, JournalError> {
        self.ensure()?;
        Ok(lock(&self.index).as_ref().expect("loaded").last_seq())
    }

    /// The last started turn that did not end, and whether its harness
    /// printed anything after its start (scanning the file first): what a
    /// restore completes a record with.
    pub fn turn_tail(&self) -> Result<Option<TurnTail>, JournalError> {
        self.ensure()?;
        Ok(lock(&self.index).as_ref().expect("loaded").turn)
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
}
