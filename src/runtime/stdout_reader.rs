//! A turn's stdout reader (started once the turn's start is journalled):
//! it journals every servable JSON line as a `harness` event, batching
//! lines that arrived together; it feeds what the process's talker hears
//! in each line (`NativeId` for each line that names the session until the
//! session takes an ID, which it decides; an approval request, the end of
//! the turn with what it used, a refused prompt or steer; `TurnUsage` for
//! what another line says the turn used). The talker parses a line once; the reader parses
//! none. A line it cannot journal as it is (over the cap, not UTF-8, too
//! deep, not JSON) is counted in the turn's `output_dropped` and
//! `harness_line_rejected` events (line_reports.rs), at most one a second
//! per reason, and reading goes on; a request in such a line, or one the
//! talker cannot take, is answered at once by the talker and journalled
//! as `request_refused`. When the journal has no room for an event (its
//! caps), it feeds `OutputCapped` once and from then on reads the pipe to
//! its end and drops what it reads, so the harness never blocks on a full
//! pipe and nothing is held.

use std::cell::Cell;
use std::io::Read;
use std::process::ChildStdout;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use room_machines::session::{Input, JournalCap, Outcome, TurnSeq};

use super::line_reports::{request_refused, Dropped, LineReports};
use super::Runtime;
use crate::harness::refusal::{Unread, Unreadable};
use crate::harness::speech::{Heard, Hearing};
use crate::journal::{Journal, NewEvent, Unservable, MAX_LINE};
use crate::sessions::turn_input::TurnInput;
use crate::sessions::turn_now::TurnNow;
use crate::sessions::{lock, SessionHandle};
use crate::supervise::output::{Line, LineReader, HEAD};

/// The longest stdout line journalled: 1 MiB less the room the journal's
/// own fields take, so every line read fits a journal line.
pub(super) const LINE_CAP: usize = MAX_LINE - 1024;

/// The most harness events journalled in one append: a 64 KiB read of
/// `{}` lines is 20,000 of them, and each takes a few hundred bytes of
/// memory until it is written.
const BATCH_MAX: usize = 1024;

impl Runtime {
    /// A turn's stdout reader.
    pub(super) fn read_output(
        &self,
        handle: SessionHandle,
        now: TurnNow,
        journal: Arc<Journal>,
        stdout: ChildStdout,
        input: TurnInput,
    ) {
        let what = format!("{} turn {}", journal_name(&journal), now.get());
        let drain = Drain::default();
        let mut lines = LineReader::with_cap(drain.over(stdout), LINE_CAP);
        let mut batch = Vec::new();
        // The turn whose session ID the session took: each turn of a
        // process that serves several (warm follow-ups) names it again.
        let mut named: Option<TurnSeq> = None;
        let mut capped = false;
        let began = Instant::now();
        let mut reports = LineReports::new(now.get());
        loop {
            let line = match lines.next_line() {
                // Past the cap, everything is read and dropped: the line
                // reader holds at most one capped line meanwhile.
                Ok(Some(_)) if capped => continue,
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(e) => {
                    log::warn!("{what}: cannot read stdout: {e}");
                    break;
                }
            };
            let seq = now.get();
            let at = began.elapsed().as_millis() as u64;
            let reported = batch.len();
            reports.serve(seq, &mut batch);
            reports.due(at, &mut batch);
            // What cannot be journalled as it is is reported, and a request
            // its start names is answered at once (the talker refuses it).
            let (event, mut hearing) = match line {
                Line::Text(line) => match NewEvent::harness(&line) {
                    Ok(event) => (Some(event), input.hear(&line)),
                    Err(Unservable::Blank) => (None, Hearing::default()),
                    Err(why) => {
                        reports.rejected(at, why, &line, &mut batch);
                        let head = &line.as_bytes()[..line.len().min(HEAD)];
                        let unread = Unread {
                            why: Unreadable::Unservable(why),
                            bytes: line.len() as u64,
                            head,
                        };
                        (None, input.hear_unread(unread))
                    }
                },
                Line::TooLong { bytes, head } => {
                    reports.dropped(at, Dropped::OverCap, bytes, &mut batch);
                    let why = Unreadable::OverCap { cap: LINE_CAP };
                    let unread = Unread {
                        why,
                        bytes,
                        head: &head,
                    };
                    (None, input.hear_unread(unread))
                }
                Line::NotUtf8 { bytes, head } => {
                    let bytes = bytes as u64;
                    reports.dropped(at, Dropped::NotUtf8, bytes, &mut batch);
                    let why = Unreadable::NotUtf8;
                    let unread = Unread {
                        why,
                        bytes,
                        head: &head,
                    };
                    (None, input.hear_unread(unread))
                }
            };
            log_reports(&batch[reported..], &what);
            let usage = hearing.usage.take();
            let refused = hearing.refused.take();
            let native_id = hearing.named.filter(|_| named != Some(seq));
            batch.extend(event);
            if let Some(refused) = &refused {
                log::warn!(
                    "{what}: refused a {} request of {} bytes ({}; answered: {})",
                    refused.request.as_deref().unwrap_or("harness"),
                    refused.bytes,
                    refused.why.code(),
                    refused.answered
                );
                batch.push(request_refused(seq, refused));
            }
            if matches!(hearing.heard, Some(Heard::Finished { .. })) {
                // The turn's output is over (its process may serve the
                // next): what it dropped is reported before its end.
                reports.flush(&mut batch);
            }
            // Lines that arrived together are journalled together (one
            // fdatasync), up to BATCH_MAX of them, so a batch of tiny
            // lines never holds much memory; one that names the session,
            // reports usage, asks or ends the turn before it is fed.
            let feeds = native_id.is_some()
                || usage.is_some()
                || hearing.heard.is_some()
                || refused.is_some();
            if feeds || !lines.has_line() || batch.len() >= BATCH_MAX {
                if let Some(cap) = append(&journal, &mut batch, &what) {
                    capped = true;
                    drain.start();
                    self.output_capped(&handle, seq, cap, &what);
                    continue;
                }
            }
            if let Some(native_id) = native_id {
                // The session decides whether it is an ID; until it takes
                // one, each line that names the session is fed.
                let bytes = native_id.len();
                if self.applied(&handle, Input::NativeId { seq, native_id }) {
                    named = Some(seq);
                } else {
                    log::info!("{what}: the session did not take a session ID of {bytes} bytes");
                }
            }
            // One input per line: the line that finishes the turn carries
            // what it used; usage on any other line is its own input.
            let mut usage = usage;
            let fed = hearing.heard.map(|heard| match heard {
                Heard::Asked(request) => Input::ApprovalRequested { seq, request },
                Heard::Finished { failed } => Input::TurnFinished {
                    seq,
                    failed,
                    usage: usage.take(),
                },
                Heard::SteerRefused { prompt, text } => {
                    Input::SteerUndelivered { seq, prompt, text }
                }
                Heard::PromptRefused(error) => Input::PromptUndelivered { seq, error },
            });
            if let Some(report) = usage {
                self.feed(&handle, Input::TurnUsage { seq, report });
            }
            if let Some(fed) = fed {
                self.feed(&handle, fed);
            }
        }
        if !capped {
            reports.serve(now.get(), &mut batch);
            let reported = batch.len();
            reports.flush(&mut batch);
            log_reports(&batch[reported..], &what);
            if let Some(cap) = append(&journal, &mut batch, &what) {
                self.output_capped(&handle, now.get(), cap, &what);
            }
        }
        if capped {
            log::info!(
                "{what}: dropped {} bytes of output past the journal's cap",
                drain.dropped()
            );
        }
    }

    /// Feeds `input` to the session behind `handle`: whether it applied.
    fn applied(&self, handle: &SessionHandle, input: Input) -> bool {
        handle
            .upgrade()
            .is_some_and(|s| self.drive(&mut lock(&s), input) == Outcome::Applied)
    }

    /// The journal had no room for the turn's output: the machine decides.
    fn output_capped(&self, handle: &SessionHandle, seq: TurnSeq, cap: JournalCap, what: &str) {
        log::warn!(
            "{what}: the journal is at its cap of {cap}; dropping the turn's further output"
        );
        self.feed(handle, Input::OutputCapped { seq, cap });
    }
}

/// Logs the reports of lines not journalled as they are (at most one a
/// second per turn and reason).
fn log_reports(reports: &[NewEvent], what: &str) {
    for r in reports {
        log::warn!("{what}: {} {}", r.kind, r.data.get());
    }
}

/// The session ID a journal belongs to, for log lines.
fn journal_name(journal: &Journal) -> String {
    journal
        .path()
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
}

/// A turn's stdout as its line reader reads it, until [`Drain::start`]:
/// from then on a read reads the pipe to its end in 64 KiB chunks, drops
/// them and reports the end, so a flood past the journal's cap costs a
/// read per chunk, not a line split per line, and the harness is never
/// left blocked on a full pipe.
#[derive(Clone, Default)]
struct Drain {
    on: Rc<Cell<bool>>,
    dropped: Rc<Cell<u64>>,
}

/// A reader whose reads a [`Drain`] can turn into draining.
struct Drained<R> {
    inner: R,
    drain: Drain,
}

impl Drain {
    fn over<R: Read>(&self, inner: R) -> Drained<R> {
        Drained {
            inner,
            drain: self.clone(),
        }
    }

    fn start(&self) {
        self.on.set(true);
    }

    /// Bytes read and dropped since the start (what the line reader had
    /// read in already is not counted).
    fn dropped(&self) -> u64 {
        self.dropped.get()
    }
}

impl<R: Read> Read for Drained<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if !self.drain.on.get() {
            return self.inner.read(buf);
        }
        let mut scratch = vec![0u8; 64 << 10];
        loop {
            match self.inner.read(&mut scratch) {
                Ok(0) => return Ok(0),
                Ok(n) => self.drain.dropped.set(self.drain.dropped.get() + n as u64),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Journals `batch` (and empties it) as far as the journal's caps let it;
/// the cap it met, if it met one.
fn append(journal: &Journal, batch: &mut Vec<NewEvent>, what: &str) -> Option<JournalCap> {
    if batch.is_empty() {
        return None;
    }
    let events = std::mem::take(batch);
    match journal.append_output(events, crate::clock::unix_ms()) {
        Ok(appended) => appended.capped,
        Err(e) => {
            log::error!("{what}: cannot journal the harness's events: {e}");
            None
        }
    }
}
