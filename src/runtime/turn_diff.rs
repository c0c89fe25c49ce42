//! `GET /v1/sessions/{id}/turns/{turn}/diff`: what a turn changed in its
//! session's folder, from the trees recorded before and after it (the
//! session's snapshot index), as its files and a unified diff capped at
//! [`MAX_DIFF`] bytes.

use room_machines::session::{Boundary, TurnSeq};
use serde_json::{json, Value};

use super::snapshot_index::{last_of, SnapshotIndex};
use super::snapshotting::{missing, summarize};
use super::Runtime;
use crate::error::Refusal;
use crate::sessions::lock;

/// The most bytes of unified diff one answer holds; the rest is cut at a
/// line, and the answer says so (`truncated`).
pub(crate) const MAX_DIFF: usize = 1 << 20;

impl Runtime {
    /// Turn `turn`'s diff in session `id`.
    pub fn turn_diff(&self, id: &str, turn: &str) -> Result<Value, Refusal> {
        let s = self.session(id).ok_or_else(|| Refusal::no_session(id))?;
        let no_turn = || {
            Refusal::new(
                404,
                "no_such_turn",
                format!("Session {id} has no turn {turn} that has ended."),
            )
        };
        let seq: TurnSeq = turn.parse().ok().filter(|n| *n > 0).ok_or_else(no_turn)?;
        let (running, recording) = {
            let s = lock(&s);
            let running = s
                .machine
                .record()
                .turn
                .as_ref()
                .is_some_and(|t| t.seq == seq && !t.finished());
            (running, s.machine.state().snapshot.after == Some(seq))
        };
        let Some(snapshots) = self.snapshots.as_ref() else {
            return Err(Refusal::new(
                409,
                "snapshots_off",
                "This service records no snapshots (the config's snapshots is false), so no turn has a diff.",
            ));
        };
        let index = SnapshotIndex::of(&self.config.state_dir, id);
        let unreadable = |e: std::io::Error| {
            Refusal::new(
                500,
                "snapshot_unreadable",
                format!("Turn {seq} of session {id}: its snapshots cannot be read: {e}."),
            )
        };
        // Read once for both sides of the turn.
        let shots = index.read().map_err(unreadable)?;
        let Some(after) = last_of(&shots, seq, Boundary::After).cloned() else {
            if running {
                return Err(Refusal::new(
                    409,
                    "turn_running",
                    format!(
                        "Turn {seq} of session {id} has not ended: its diff comes once it has."
                    ),
                ));
            }
            if recording {
                return Err(Refusal::new(
                    409,
                    "diff_pending",
                    format!("Turn {seq} of session {id} has ended and its folder is being recorded: its diff comes with its turn_diff event."),
                ));
            }
            return Err(no_turn());
        };
        let before = last_of(&shots, seq, Boundary::Before).cloned();
        let (Some(b), Some(a)) = (
            before.as_ref().and_then(|b| b.tree.as_ref()),
            after.tree.as_ref(),
        ) else {
            return Ok(json!({ "turn": seq, "missing": missing(before.as_ref(), &after) }));
        };
        let files = snapshots.changes(b, a).map_err(unreadable)?;
        let unified = snapshots.unified(b, a, MAX_DIFF).map_err(unreadable)?;
        let mut data = json!({
            "turn": seq,
            "diff": unified.text,
            "truncated": unified.truncated,
            "max_bytes": MAX_DIFF,
        });
        summarize(&mut data, &files);
        Ok(data)
    }
}
