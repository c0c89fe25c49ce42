//! A turn's work on the event pool ([`TurnWork`]): what its harness
//! printed, what its stdin could not take, and its end, in that order.
//!
//! Lines: every servable JSON line is journalled as a `harness` event,
//! lines read together in one append; what the process's talker hears in
//! each line is fed (`NativeId` for each line that names the session until
//! the session takes an ID, which it decides; an approval request, the end
//! of the turn with what it used, a refused prompt or steer; `TurnUsage`
//! for what another line says the turn used). The talker parses a line
//! once; this parses none. A line it cannot journal as it is (over the cap,
//! not UTF-8, too deep, not JSON) is counted in the turn's `output_dropped`
//! and `harness_line_rejected` events (line_reports.rs), at most one a
//! second per reason; a request in such a line, or one the talker cannot
//! take, is answered at once by the talker and journalled as
//! `request_refused`. When the journal has no room for an event (its caps),
//! it feeds `OutputCapped` once and from then on the poller drops what the
//! harness prints, so the harness never blocks on a full pipe and nothing
//! is held.
//!
//! What the harness left in its tree when it exited is fed as `LeftBehind`
//! (the session's grace ends it). The end: what is left of the reports is
//! journalled, the process leaves the agent socket's table, and
//! `TurnEnded` is fed.

use room_machines::session::{Input, JournalCap, Outcome, TurnSeq};

use super::harness_io::turn_work::{TurnWork, Work};
use super::line_reports::{request_refused, Dropped};
use super::reading::{Reading, BATCH_MAX, LINE_CAP};
use super::Runtime;
use crate::harness::refusal::{Unread, Unreadable};
use crate::harness::speech::{Heard, Hearing};
use crate::journal::{NewEvent, Unservable};
use crate::sessions::{lock, SessionHandle};
use crate::supervise::output::{Line, HEAD};

impl Runtime {
    /// A round of a turn's work, as the pool's job.
    pub(super) fn work_turn(&self, work: &TurnWork) {
        loop {
            let (round, more) = work.take();
            if round.is_empty() {
                return;
            }
            let mut reading = work.reading.lock().unwrap_or_else(|e| e.into_inner());
            for item in round {
                match item {
                    Work::Lines(lines) => {
                        for line in lines {
                            self.line(work, &mut reading, line);
                        }
                    }
                    Work::Undelivered(inputs) => {
                        self.append(work, &mut reading);
                        for input in inputs {
                            self.feed(&work.handle, input);
                        }
                    }
                    Work::LeftBehind => {
                        self.append(work, &mut reading);
                        let seq = work.now.get();
                        self.feed(&work.handle, Input::LeftBehind { seq });
                    }
                    Work::Ended { exit, detail } => {
                        self.finish_output(work, &mut reading);
                        self.harness_pids.remove(work.key);
                        let seq = work.now.get();
                        self.feed(&work.handle, Input::TurnEnded { seq, exit, detail });
                    }
                }
            }
            // Lines read together are journalled together (one fdatasync).
            self.append(work, &mut reading);
            drop(reading);
            if more {
                work.again();
                return;
            }
        }
    }

    /// One line of stdout.
    fn line(&self, work: &TurnWork, r: &mut Reading, line: Line) {
        if r.capped {
            // Past the cap, what was read before the poller heard is dropped.
            return;
        }
        let seq = work.now.get();
        let at = r.began.elapsed().as_millis() as u64;
        let reported = r.batch.len();
        r.reports.serve(seq, &mut r.batch);
        r.reports.due(at, &mut r.batch);
        let input = &work.input;
        // What cannot be journalled as it is is reported, and a request its
        // start names is answered at once (the talker refuses it).
        let (event, mut hearing) = match line {
            Line::Text(line) => match NewEvent::harness(&line) {
                Ok(event) => (Some(event), input.hear(&line)),
                Err(Unservable::Blank) => (None, Hearing::default()),
                Err(why) => {
                    r.reports.rejected(at, why, &line, &mut r.batch);
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
                r.reports.dropped(at, Dropped::OverCap, bytes, &mut r.batch);
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
                r.reports.dropped(at, Dropped::NotUtf8, bytes, &mut r.batch);
                let unread = Unread {
                    why: Unreadable::NotUtf8,
                    bytes,
                    head: &head,
                };
                (None, input.hear_unread(unread))
            }
        };
        log_reports(&r.batch[reported..], &r.what);
        let usage = hearing.usage.take();
        let refused = hearing.refused.take();
        let native_id = hearing.named.filter(|_| r.named != Some(seq));
        r.batch.extend(event);
        if let Some(refused) = &refused {
            log::warn!(
                "{}: refused a {} request of {} bytes ({}; answered: {})",
                r.what,
                refused.request.as_deref().unwrap_or("harness"),
                refused.bytes,
                refused.why.code(),
                refused.answered
            );
            r.batch.push(request_refused(seq, refused));
        }
        if matches!(hearing.heard, Some(Heard::Finished { .. })) {
            // The turn's output is over (its process may serve the next):
            // what it dropped is reported before its end.
            r.reports.flush(&mut r.batch);
        }
        // A line that names the session, reports usage, asks or ends the
        // turn is journalled before it is fed; so is a full batch, so a
        // batch of tiny lines never holds much memory.
        let feeds =
            native_id.is_some() || usage.is_some() || hearing.heard.is_some() || refused.is_some();
        if feeds || r.batch.len() >= BATCH_MAX {
            self.append(work, r);
            if r.capped {
                return;
            }
        }
        if let Some(native_id) = native_id {
            // The session decides whether it is an ID; until it takes one,
            // each line that names the session is fed.
            let bytes = native_id.len();
            if !input.takes_steers() {
                self.feed(&work.handle, Input::NoSteers { seq });
            }
            if self.applied(&work.handle, Input::NativeId { seq, native_id }) {
                r.named = Some(seq);
            } else {
                log::info!(
                    "{}: the session did not take a session ID of {bytes} bytes",
                    r.what
                );
            }
        }
        // One input per line: the line that finishes the turn carries what
        // it used; usage on any other line is its own input.
        let mut usage = usage;
        let fed = hearing.heard.map(|heard| match heard {
            Heard::Asked(request) => Input::ApprovalRequested { seq, request },
            Heard::Finished { failed } => Input::TurnFinished {
                seq,
                failed,
                usage: usage.take(),
            },
            Heard::SteerRefused { prompt, text } => Input::SteerUndelivered { seq, prompt, text },
            Heard::PromptRefused(error) => Input::PromptUndelivered { seq, error },
        });
        if let Some(report) = usage {
            self.feed(&work.handle, Input::TurnUsage { seq, report });
        }
        if let Some(fed) = fed {
            self.feed(&work.handle, fed);
        }
    }

    /// The end of the turn's output: the reports left are journalled.
    fn finish_output(&self, work: &TurnWork, r: &mut Reading) {
        if r.capped {
            log::info!(
                "{}: dropped {} bytes of output past the journal's cap",
                r.what,
                work.dropped()
            );
            return;
        }
        r.reports.serve(work.now.get(), &mut r.batch);
        let reported = r.batch.len();
        r.reports.flush(&mut r.batch);
        log_reports(&r.batch[reported..], &r.what);
        self.append(work, r);
    }

    /// Journals the batch (and empties it) as far as the journal's caps let
    /// it; at the cap, the machine decides, and the poller drops what
    /// comes after.
    fn append(&self, work: &TurnWork, r: &mut Reading) {
        if r.batch.is_empty() || r.capped {
            r.batch.clear();
            return;
        }
        let events = std::mem::take(&mut r.batch);
        let capped = match r.journal.append_output(events, crate::clock::unix_ms()) {
            Ok(appended) => appended.capped,
            Err(e) => {
                log::error!("{}: cannot journal the harness's events: {e}", r.what);
                None
            }
        };
        if let Some(cap) = capped {
            r.capped = true;
            work.discard();
            self.output_capped(&work.handle, work.now.get(), cap, &r.what);
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
