//! Appending to a journal: staged events first, then room-core's own
//! (never capped), then a harness's as far as they fit under the caps, with
//! one write and one fdatasync, before any reader is told of them.

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::atomic::Ordering;
use std::sync::MutexGuard;

use room_machines::session::JournalCap;

use super::event::{Journalled, Line, NewEvent};
use super::handle::{lock, Journal, JournalError};
use super::limits::MAX_LINE;
use super::report::REPAIRED;

/// What [`Journal::append_output`] did.
#[derive(Debug, Default)]
pub struct Appended {
    /// The events journalled (staged ones first), with their seq and time.
    pub events: Vec<Journalled>,
    /// The cap a harness event met: it and the rest of the batch were
    /// dropped.
    pub capped: Option<JournalCap>,
}

impl Journal {
    /// Stages `event` for the next append or [`Journal::flush`], which
    /// writes it ahead of its own events. A caller that must not wait for an
    /// fdatasync now (the runtime just before it spawns a harness) stages,
    /// and flushes after.
    pub fn stage(&self, event: NewEvent) {
        lock(&self.staged).push(event);
    }

    /// Appends what was staged. With nothing staged it still waits for an
    /// append in progress, which may have taken the staged events: once it
    /// returns, everything staged before the call is durable.
    pub fn flush(&self, at_ms: u64) -> Result<Vec<Journalled>, JournalError> {
        self.append(Vec::new(), at_ms)
    }

    /// Appends the staged events and then `events` (room-core's own, never
    /// capped) with one write and one fdatasync, so they are durable before
    /// this returns (and before any reader is told of them); returns them
    /// with their seq and time.
    pub fn append(
        &self,
        events: Vec<NewEvent>,
        at_ms: u64,
    ) -> Result<Vec<Journalled>, JournalError> {
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
    pub(super) fn write_locked(
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
            let event = Journalled {
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
}
