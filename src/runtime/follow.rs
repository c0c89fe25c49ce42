//! Following sessions (issue #13): what the API's session list, interrupt,
//! health, readiness, `/metrics` and event routes ask of the runtime, and
//! each session's journal.
//!
//! The second half, marked WRITE SIDE, journals today's runtime: harness
//! lines, state changes, turn start and end, the copy wait, the app's
//! commands and errors, each as the session machine's own
//! [`room_machines::session::Event`] so the journal's format stays when the
//! runtime is rebuilt around that machine (which then journals its `Emit`s
//! itself, and these calls go). Events are staged in the journal and
//! written (one fdatasync) at the end of a pass over the session: at
//! `persist`, at the end of `drive`, after a turn's spawn, at the end of an
//! app command. So a harness spawn never waits for the journal.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use room_machines::session::{EndWhy, Event, Exit, PromptId, Shown, TurnSeq};
use serde_json::{json, Value};

use super::clock::unix_ms;
use super::Runtime;
use crate::error::Refusal;
use crate::harness::Harness;
use crate::journal::{Journal, Journals, NewEvent, MAX_LINE};
use crate::metrics::Snapshot;
use crate::sessions::{lock, view, Session, SessionState};

/// The most sessions one page of the list returns, and the default.
pub const MAX_LIST: usize = 1024;
/// The default page of the session list.
pub const DEFAULT_LIST: usize = 256;

/// The states, in the order health and `/metrics` list them.
const STATES: [&str; 5] = ["pending", "running", "idle", "closed", "failed"];

/// The journals and what the write side tracks per session.
#[derive(Debug)]
pub struct Follow {
    journals: Journals,
    tracked: Mutex<HashMap<String, Tracked>>,
    /// Starting, [`READY`] or [`STOPPING`].
    phase: AtomicU8,
}

/// `Follow::phase`: both sockets serve.
const READY: u8 = 1;
/// `Follow::phase`: the stop has begun.
const STOPPING: u8 = 2;

/// What the write side remembers about a session in this run.
#[derive(Debug, Default)]
struct Tracked {
    /// The state last journalled.
    shown: Option<Shown>,
    /// The running turn's number and its prompt's.
    turn: Option<(TurnSeq, PromptId)>,
    /// The last turn number given (seeded from the journal).
    last_turn: Option<TurnSeq>,
    /// Why the running turn is being ended on purpose.
    ending: Option<EndWhy>,
}

impl Follow {
    /// The journals of `state_dir`; not ready.
    pub fn new(state_dir: &std::path::Path) -> Follow {
        Follow {
            journals: Journals::new(state_dir),
            tracked: Mutex::default(),
            phase: AtomicU8::new(0),
        }
    }

    fn tracked(&self) -> MutexGuard<'_, HashMap<String, Tracked>> {
        self.tracked.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `GET /v1/sessions`'s query.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    /// Only this workspace's sessions.
    pub workspace: Option<String>,
    /// Only sessions in this state.
    pub state: Option<SessionState>,
    /// Start after this session (the previous page's `next_after`).
    pub after: Option<String>,
    /// At most this many (1..=[`MAX_LIST`]).
    pub limit: usize,
}

fn state_name(state: SessionState) -> &'static str {
    match state {
        SessionState::Pending => "pending",
        SessionState::Running => "running",
        SessionState::Idle => "idle",
        SessionState::Closed => "closed",
        SessionState::Failed => "failed",
    }
}

fn shown(state: SessionState) -> Shown {
    match state {
        SessionState::Pending => Shown::Pending,
        SessionState::Running => Shown::Running,
        SessionState::Idle => Shown::Idle,
        SessionState::Closed => Shown::Closed,
        SessionState::Failed => Shown::Failed,
    }
}

impl Runtime {
    // ------------------------------------------------------ read side ----

    /// Session `id`'s journal; `None` for an unknown session.
    pub fn journal(&self, id: &str) -> Option<Arc<Journal>> {
        let s = self.session(id)?;
        let s = lock(&s);
        Some(self.journal_of(&s))
    }

    /// The session's journal, closed (for readers) once the session is
    /// closed and no turn of it runs, so nothing more will be written.
    fn journal_of(&self, s: &Session) -> Arc<Journal> {
        let journal = self.follow.journals.get(&s.rec.id);
        if s.rec.state == SessionState::Closed && s.turn.is_none() {
            journal.close();
        }
        journal
    }

    /// `GET /v1/sessions`: sessions by creation (then ID), filtered, a page
    /// after `after`.
    pub fn list(&self, q: &ListQuery) -> Result<Value, Refusal> {
        let mut rows: Vec<(u64, String, crate::sessions::SessionRef)> = self
            .all_sessions()
            .into_iter()
            .map(|s| {
                let (created, id) = {
                    let g = lock(&s);
                    (g.rec.created_ms, g.rec.id.clone())
                };
                (created, id, s)
            })
            .collect();
        rows.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        let start = match &q.after {
            None => 0,
            Some(after) => {
                rows.iter()
                    .position(|(_, id, _)| id == after)
                    .ok_or_else(|| {
                        Refusal::new(
                            422,
                            "invalid_parameter",
                            format!("No session {after} to list after."),
                        )
                    })?
                    + 1
            }
        };
        let mut page = Vec::new();
        let mut more = false;
        for (_, _, s) in &rows[start..] {
            let s = lock(s);
            if q.workspace
                .as_ref()
                .is_some_and(|w| *w != s.rec.start.workspace)
                || q.state.is_some_and(|st| st != view::state(&s))
            {
                continue;
            }
            if page.len() == q.limit {
                more = true;
                break;
            }
            page.push(self.list_item(&s));
        }
        let next_after = more.then(|| page.last().map(|v: &Value| v["id"].clone()));
        Ok(json!({"sessions": page, "next_after": next_after.flatten()}))
    }

    fn list_item(&self, s: &Session) -> Value {
        let v = self.render(s);
        let last = self
            .follow
            .journals
            .last_activity(&s.rec.id)
            .unwrap_or(0)
            .max(s.rec.created_ms);
        json!({
            "id": v["id"],
            "workspace": v["workspace"],
            "harness": v["harness"],
            "kind": v["kind"],
            "state": v["state"],
            "waiting_for": v["waiting_for"],
            "queue": v["queue"],
            "native_id": v["native_id"],
            "created_ms": v["created_ms"],
            "last_activity_ms": last,
        })
    }

    /// `POST /v1/sessions/{id}/interrupt`: ends the running turn as stop
    /// does, but leaves the queue going, so the next prompt runs. Nothing
    /// to do without a running turn.
    pub fn interrupt(&self, id: &str) -> Result<Value, Refusal> {
        self.with(id, |s| {
            Self::open_or_refuse(s)?;
            if s.rec.state == SessionState::Failed {
                return Err(Refusal::finished(&s.rec.id, "failed"));
            }
            if s.turn.is_some() && !s.turn_killed {
                let turn = self.tracked_turn(s).map_or(0, |(t, _)| t);
                self.journal_event(s, Event::Interrupted { turn });
                self.end_turn(s, EndWhy::Interrupt);
            }
            Ok(self.render(s))
        })
    }

    /// Sessions by state, in [`STATES`] order.
    fn by_state(&self) -> [(&'static str, usize); 5] {
        let mut counts = STATES.map(|s| (s, 0));
        for s in self.all_sessions() {
            let name = state_name(view::state(&lock(&s)));
            if let Some(c) = counts.iter_mut().find(|(n, _)| *n == name) {
                c.1 += 1;
            }
        }
        counts
    }

    /// (total, in use, queued) startup permits.
    fn permit_counts(&self) -> (usize, usize, usize) {
        let total = self.config.permits();
        let free = self.permits.free();
        (total, total.saturating_sub(free), self.permits.queued())
    }

    /// `GET /v1/health`: version, uptime, sessions by state, permits.
    pub fn health(&self) -> Value {
        let (total, in_use, queued) = self.permit_counts();
        let sessions: serde_json::Map<String, Value> = self
            .by_state()
            .iter()
            .map(|(s, n)| (s.to_string(), json!(n)))
            .collect();
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "uptime_ms": self.clock.now(),
            "ready": self.ready(),
            "sessions": sessions,
            "permits": {"total": total, "in_use": in_use, "queued": queued},
            "events_written": self.follow.journals.written(),
        })
    }

    /// `GET /metrics`, with `streams_open` from the front end.
    pub fn metrics_text(&self, streams_open: usize) -> String {
        let by_state = self.by_state();
        let (_, permits_in_use, permits_queued) = self.permit_counts();
        self.metrics.render(&Snapshot {
            by_state: &by_state,
            permits_in_use,
            permits_queued,
            events_written: self.follow.journals.written(),
            streams_open,
        })
    }

    /// Whether the service is ready: the restore is done, both sockets
    /// serve ([`Runtime::set_ready`]) and no stop has begun.
    pub fn ready(&self) -> bool {
        self.readiness().is_ok()
    }

    /// [`Runtime::ready`], or why not.
    pub fn readiness(&self) -> Result<(), &'static str> {
        match self.follow.phase.load(Ordering::SeqCst) {
            _ if self.is_stopping() => Err("it is stopping"),
            READY => Ok(()),
            STOPPING => Err("it is stopping"),
            _ => Err("it is starting (restoring its sessions, opening its sockets)"),
        }
    }

    /// The service says both its sockets serve (the restore ran in
    /// `Runtime::start`).
    pub fn set_ready(&self) {
        self.follow.phase.store(READY, Ordering::SeqCst);
    }

    /// The service says its stop has begun.
    pub fn set_stopping(&self) {
        self.follow.phase.store(STOPPING, Ordering::SeqCst);
    }

    // ----------------------------------------------------- WRITE SIDE ----
    // Today's runtime's journal writes. The session-machine runtime
    // journals its `Emit`s and harness lines itself; these go then.

    fn tracked_turn(&self, s: &Session) -> Option<(TurnSeq, PromptId)> {
        self.follow.tracked().get(&s.rec.id).and_then(|t| t.turn)
    }

    /// Stages one of room-core's events (written at the next flush).
    pub(crate) fn journal_event(&self, s: &Session, event: Event) {
        self.follow
            .journals
            .get(&s.rec.id)
            .stage(NewEvent::tagged(&event));
    }

    /// Writes what is staged for the session (one fdatasync; nothing when
    /// nothing is staged), then closes the journal for readers if the
    /// session is over: closed, and its last turn's end written.
    pub(crate) fn journal_flush(&self, s: &Session) {
        let Some(journal) = self.follow.journals.peek(&s.rec.id) else {
            return;
        };
        if let Err(e) = journal.flush(unix_ms()) {
            log::error!("{}: cannot journal: {e}", s.rec.id);
        }
        self.journal_of(s);
    }

    /// Stages a state event if the state shown to the app changed since
    /// the last one journalled.
    pub(crate) fn note_state(&self, s: &Session) {
        let now = shown(view::state(s));
        let changed = {
            let mut tracked = self.follow.tracked();
            let t = tracked.entry(s.rec.id.clone()).or_default();
            (t.shown != Some(now))
                .then(|| t.shown = Some(now))
                .is_some()
        };
        if changed {
            self.journal_event(s, Event::State { state: now });
        }
    }

    /// [`Runtime::note_state`], then writes what is staged. Called at
    /// `persist` and at the end of each `drive`.
    pub(crate) fn journal_state(&self, s: &Session) {
        self.note_state(s);
        self.journal_flush(s);
    }

    /// A session restored from its record, whose state was `was`: a state
    /// event if the restore changed it (as the session machine does).
    pub(crate) fn journal_restored(&self, s: &Session, was: SessionState) {
        self.follow
            .tracked()
            .entry(s.rec.id.clone())
            .or_default()
            .shown = Some(shown(was));
        self.journal_state(s);
    }

    /// A turn's process is running: stages its start, written with the
    /// record (or the flush) that follows, before any of its harness lines.
    pub(crate) fn journal_turn_started(&self, s: &Session) {
        let journal = self.follow.journals.get(&s.rec.id);
        let last = self
            .follow
            .tracked()
            .get(&s.rec.id)
            .and_then(|t| t.last_turn);
        // Turn numbers go on across restarts: the first turn of a run
        // continues from the journal's last `turn_started`.
        let last = last.unwrap_or_else(|| {
            journal
                .last_of("turn_started")
                .ok()
                .flatten()
                .and_then(|e| serde_json::from_str::<Value>(e.data.get()).ok())
                .and_then(|d| d["turn"].as_u64())
                .unwrap_or(0)
        });
        let turn = last + 1;
        {
            let mut tracked = self.follow.tracked();
            let t = tracked.entry(s.rec.id.clone()).or_default();
            t.last_turn = Some(turn);
            // Today's runtime does not number prompts; a turn's prompt
            // takes the turn's number.
            t.turn = Some((turn, turn));
            t.ending = None;
        }
        self.journal_event(
            s,
            Event::TurnStarted {
                turn,
                prompt: turn,
                resume: s.rec.native_id.clone(),
            },
        );
    }

    /// The harness named its session.
    pub(crate) fn journal_native_id(&self, s: &Session, native_id: &str) {
        let turn = self.tracked_turn(s).map_or(0, |(t, _)| t);
        self.journal_event(
            s,
            Event::NativeId {
                turn,
                native_id: native_id.to_string(),
            },
        );
    }

    /// The turn's process is gone: journals its end (exit status, who
    /// ended it) and counts its outcome.
    pub(crate) fn journal_turn_ended(&self, s: &Session, status: &std::io::Result<ExitStatus>) {
        let (turn, by) = {
            let mut tracked = self.follow.tracked();
            let t = tracked.entry(s.rec.id.clone()).or_default();
            (t.turn.take(), t.ending.take())
        };
        let exit = status.as_ref().ok().and_then(|st| {
            use std::os::unix::process::ExitStatusExt;
            st.code()
                .map(Exit::Code)
                .or_else(|| st.signal().map(Exit::Signal))
        });
        let outcome = match by {
            Some(EndWhy::Stop) => "stopped",
            Some(EndWhy::Interrupt) => "interrupted",
            Some(EndWhy::Close) => "closed",
            Some(EndWhy::Restart) => "restarted",
            _ if exit.is_some_and(Exit::success) => "succeeded",
            _ => "failed",
        };
        self.metrics.turns.inc(outcome);
        let (turn, prompt) = turn.unwrap_or((0, 0));
        self.journal_event(
            s,
            Event::TurnEnded {
                turn,
                prompt,
                exit,
                by,
            },
        );
    }

    /// Something went wrong; `error` in the view says the same.
    pub(crate) fn journal_error(&self, s: &Session, message: &str) {
        let message = message.to_string();
        self.journal_event(s, Event::Error { message });
    }

    /// Ends the running turn on purpose (stop, interrupt, close, restart),
    /// remembering why for its `turn_ended`.
    pub(crate) fn end_turn(&self, s: &mut Session, why: EndWhy) {
        if s.turn.is_some() && !s.turn_killed {
            let mut tracked = self.follow.tracked();
            tracked.entry(s.rec.id.clone()).or_default().ending = Some(why);
        }
        self.kill_turn(s);
    }

    /// Reads a turn's output to its end, journalling each line that is one
    /// JSON value as printed (others are dropped); `named` hears the first
    /// event that names the native session, after that event is
    /// journalled. Returns whether one did. Lines that arrived together
    /// are journalled together (one fdatasync), so a harness printing
    /// faster than the disk syncs is batched rather than held up.
    pub(crate) fn read_harness(
        &self,
        id: &str,
        harness: Harness,
        stdout: impl Read,
        mut named: impl FnMut(String),
    ) -> bool {
        let mut reader = BufReader::with_capacity(64 << 10, stdout);
        let mut reported = false;
        let mut batch: Vec<Vec<u8>> = Vec::new();
        loop {
            let mut line = Vec::new();
            match read_line(&mut reader, &mut line) {
                Ok(true) => {}
                Ok(false) | Err(_) => break,
            }
            let native_id = (!reported)
                .then(|| serde_json::from_slice::<Value>(&line).ok())
                .flatten()
                .and_then(|event| harness.native_id(&event));
            batch.push(line);
            if native_id.is_some() || !reader.buffer().contains(&b'\n') {
                self.journal_harness(id, &std::mem::take(&mut batch));
            }
            if let Some(native_id) = native_id {
                reported = true;
                named(native_id);
            }
        }
        self.journal_harness(id, &batch);
        reported
    }

    /// What a turn's harness printed, as printed: each line that is one
    /// JSON value is an event (others are dropped). One write for the lot.
    fn journal_harness(&self, id: &str, lines: &[Vec<u8>]) {
        let events: Vec<NewEvent> = lines
            .iter()
            .filter_map(|l| std::str::from_utf8(l).ok().and_then(NewEvent::harness))
            .collect();
        if events.is_empty() {
            return;
        }
        if let Err(e) = self.follow.journals.get(id).append(events, unix_ms()) {
            log::error!("{id}: cannot journal the harness's events: {e}");
        }
    }
}

/// Reads one line of output into `line` (without its newline): `false` at
/// the end. A line longer than the journal's [`MAX_LINE`] is skipped up to
/// its newline (given as an empty line), so the turn's output is read to
/// its end whatever the harness prints and nothing unbounded is held.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<bool> {
    line.clear();
    let n = reader
        .by_ref()
        .take(MAX_LINE as u64)
        .read_until(b'\n', line)?;
    if n == 0 {
        return Ok(false);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
        return Ok(true);
    }
    if n < MAX_LINE {
        // The last line, without a newline.
        return Ok(true);
    }
    line.clear();
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(true);
        }
        if let Some(i) = buf.iter().position(|b| *b == b'\n') {
            reader.consume(i + 1);
            return Ok(true);
        }
        let len = buf.len();
        reader.consume(len);
    }
}

#[cfg(test)]
mod tests {
    use super::read_line;

    #[test]
    fn a_line_over_the_limit_is_skipped_and_reading_goes_on() {
        let long = "x".repeat(crate::journal::MAX_LINE + 10);
        let text = format!("{{\"a\":1}}\n{long}\n{{\"b\":2}}\nlast");
        let mut reader = std::io::BufReader::with_capacity(4096, text.as_bytes());
        let mut lines = Vec::new();
        let mut line = Vec::new();
        while read_line(&mut reader, &mut line).unwrap() {
            lines.push(String::from_utf8(line.clone()).unwrap());
        }
        assert_eq!(lines, [r#"{"a":1}"#, "", r#"{"b":2}"#, "last"]);
    }
}
