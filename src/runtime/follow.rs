//! Following sessions: what the API's session list, health,
//! readiness, `/metrics` and event routes ask of the runtime, and each
//! session's journal. The journal is written by the driver (the machine's
//! `Emit`s) and by each turn's output worker (the harness's lines); this is
//! its read side. Interrupt is an app command like stop (ops.rs).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::{json, Value};

use super::follow_state::{READY, STOPPING};
use super::list_query::ListQuery;
use super::Runtime;
use crate::error::Refusal;
use crate::journal::Journal;
use crate::metrics::Snapshot;
use crate::sessions::{lock, view, Hosted};

/// The states, in the order health and `/metrics` list them.
const STATES: [&str; 5] = ["pending", "running", "idle", "closed", "failed"];

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
    fn journal_of(&self, s: &Hosted) -> Arc<Journal> {
        close_if_over(s);
        s.journal.clone()
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
                    (g.extras.created_ms, g.id.clone())
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
                .is_some_and(|w| *w != s.start.workspace)
                || q.state.is_some_and(|st| st != s.machine.shown())
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

    /// A session as the list shows it: where it is, and what a list of
    /// sessions shows of each (its folder, how many approvals wait for the
    /// app, what its turns used), so a client needs no session's view.
    fn list_item(&self, s: &Hosted) -> Value {
        let v = self.render(s);
        let pending = v["pending_approvals"].as_array().map_or(0, Vec::len);
        let last = self
            .follow
            .journals
            .last_activity(&s.id)
            .unwrap_or(0)
            .max(s.extras.created_ms);
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
            "folder": v["folder"],
            "pending_approval_count": pending,
            "usage": v["usage"],
        })
    }

    /// Sessions by state, in [`STATES`] order.
    fn by_state(&self) -> [(&'static str, usize); 5] {
        let mut counts = STATES.map(|s| (s, 0));
        for s in self.all_sessions() {
            let name = view::state_name(lock(&s).machine.shown());
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

    /// Why the state dir takes no writes now (a full disk, ...), if it
    /// does not: the service serves what it has and refuses changes
    /// (`state_unwritable`) until writes succeed again.
    pub fn degraded(&self) -> Option<String> {
        self.store.fault()
    }

    /// Notes that a write to the state dir outside the runtime failed.
    pub fn state_write_failed(&self, what: &str, e: std::io::Error) {
        self.store.failed(what, &e);
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
}

/// Closes the session's journal for readers once nothing more will be
/// written: the session is closed and no turn of it is left (its end is
/// journalled).
pub(super) fn close_if_over(s: &Hosted) {
    if s.machine.journal_over() {
        s.journal.close();
    }
}
