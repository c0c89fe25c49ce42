//! The open journals: one [`Journal`] per session, shared by whoever writes
//! it (the runtime) and whoever reads it (pages, streams), so an append
//! wakes every reader of that session.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::UNIX_EPOCH;

use super::handle::{Caps, Journal};

/// `<state_dir>/events`, where the journals live.
pub fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join("events")
}

/// The journals of one state dir, by session ID.
#[derive(Debug)]
pub struct Journals {
    dir: PathBuf,
    open: Mutex<HashMap<String, Arc<Journal>>>,
    written: Arc<AtomicU64>,
    caps: Caps,
}

impl Journals {
    /// The journals under `<state_dir>/events` (nothing is opened yet),
    /// each with `caps` on its harness events.
    pub fn new(state_dir: &Path, caps: Caps) -> Journals {
        Journals {
            dir: dir(state_dir),
            open: Mutex::default(),
            written: Arc::default(),
            caps,
        }
    }

    /// Session `id`'s journal, the same one for every caller.
    pub fn get(&self, id: &str) -> Arc<Journal> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.entry(id.to_string())
            .or_insert_with(|| {
                Arc::new(Journal::counted(
                    &self.dir,
                    id,
                    self.caps,
                    self.written.clone(),
                ))
            })
            .clone()
    }

    /// Session `id`'s journal if something has asked for it in this run.
    pub fn peek(&self, id: &str) -> Option<Arc<Journal>> {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.get(id).cloned()
    }

    /// Events written since the service started, all journals together.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }

    /// When session `id` last had an event (Unix ms): the last event's time
    /// when its journal has been read in this run, else the file's mtime
    /// (one `stat`, no read); `None` when it has no journal.
    pub fn last_activity(&self, id: &str) -> Option<u64> {
        if let Some(at) = self.peek(id).and_then(|j| j.last_at()) {
            return Some(at);
        }
        let meta = std::fs::metadata(self.dir.join(format!("{id}.jsonl"))).ok()?;
        // A reader's open creates an empty journal: that is no activity.
        if meta.len() == 0 {
            return None;
        }
        let modified = meta.modified().ok()?;
        let ms = modified.duration_since(UNIX_EPOCH).ok()?.as_millis();
        Some(u64::try_from(ms).unwrap_or(u64::MAX))
    }
}
