//! The folder recorded at turn boundaries (docs/api.md, "Snapshots and diffs"): no
//! turn starts before its folder is recorded, so what the turn changes is
//! told apart from what changed before it; a turn that is over has its
//! folder recorded after it. The runtime takes the snapshots (as the agent
//! account, on a thread of its own); the machine only says when, and waits
//! for the one before a turn at most [`Config::snapshot_wait`].
//!
//! [`Config::snapshot_wait`]: super::Config::snapshot_wait

use super::io::{Effect, Outcome};
use super::record::{Phase, Stage, Turn, TurnSeq};
use super::timers::Deadline;
use super::values::{Boundary, SnapshotGate};
use super::Session;
use crate::time::Millis;

impl Session {
    /// Whether the next turn may start as far as its snapshot goes: it is
    /// taken, its wait ran out, or snapshots are off. Otherwise asks for
    /// it (once) and sets its deadline; `Snapshotted` or the deadline
    /// starts the turn then.
    pub(super) fn folder_recorded(&mut self, now: Millis) -> bool {
        if !self.config.snapshots {
            return true;
        }
        let next = self.state.record.next_turn;
        let gate = &mut self.state.snapshot;
        if gate.ready == Some(next) {
            return true;
        }
        if gate.asked != Some(next) {
            gate.asked = Some(next);
            self.staged.push(Effect::Snapshot {
                turn: next,
                at: Boundary::Before,
            });
            let until = now.saturating_add(self.config.snapshot_wait);
            self.state.timers.set(Deadline::SnapshotWait, until);
        }
        false
    }

    /// A turn just ended (its `turn_ended` is staged): its folder is
    /// recorded after it, when its harness had its prompt (a turn that
    /// never ran changed nothing) and the session goes on (a closed one,
    /// or one the service is stopping, records nothing more).
    pub(super) fn record_after(&mut self, now: Millis, turn: &Turn) {
        let ran = matches!(turn.phase, Phase::Prompted(_) | Phase::Lingering { .. });
        let goes_on = !self.state.halted && self.state.record.stage != Stage::Closed;
        if self.config.snapshots && ran && goes_on {
            self.staged.push(Effect::Snapshot {
                turn: turn.seq,
                at: Boundary::After,
            });
            self.state.snapshot.after = Some(turn.seq);
            if !self.state.timers.is_set(Deadline::SnapshotWait) {
                let until = now.saturating_add(self.config.snapshot_wait);
                self.state.timers.set(Deadline::SnapshotWait, until);
            }
        }
    }

    /// The runtime took (or could not take) a snapshot. Only the one
    /// before the next turn is waited for: that turn may start now.
    pub(super) fn handle_snapshotted(
        &mut self,
        now: Millis,
        turn: TurnSeq,
        at: Boundary,
    ) -> Outcome {
        let gate = self.state.snapshot;
        if at == Boundary::After {
            if gate.after != Some(turn) {
                return Outcome::Ignored;
            }
            self.state.snapshot.after = None;
            if gate.asked.is_none() || gate.ready == gate.asked {
                self.state.timers.stop(Deadline::SnapshotWait);
            }
            return Outcome::Applied;
        }
        if gate.asked != Some(turn) || gate.ready == Some(turn) {
            return Outcome::Ignored;
        }
        self.folder_ready(now, turn);
        Outcome::Applied
    }

    /// The snapshot before the next turn took longer than its wait: the
    /// turn starts without it (its diff says so). Whether it was due.
    pub(super) fn snapshot_wait_over(&mut self, now: Millis) -> bool {
        if !self.state.timers.is_due(Deadline::SnapshotWait, now) {
            return false;
        }
        self.state.timers.stop(Deadline::SnapshotWait);
        self.state.snapshot.after = None;
        let gate = self.state.snapshot;
        if let Some(turn) = gate.asked.filter(|t| gate.ready != Some(*t)) {
            self.folder_ready(now, turn);
        }
        true
    }

    /// Turn `turn` may start: the launch it held goes on, or the queue. A
    /// turn that does not start now (the queue was paused meanwhile) asks
    /// again when it does, since the folder may change until then.
    fn folder_ready(&mut self, now: Millis, turn: TurnSeq) {
        if self.state.snapshot.after.is_none() {
            self.state.timers.stop(Deadline::SnapshotWait);
        }
        self.state.snapshot.ready = Some(turn);
        if std::mem::take(&mut self.state.snapshot.holds_launch) {
            if self.launch_live() {
                self.start_harness(now);
            }
        } else {
            self.pump(now);
        }
        if self.state.record.next_turn == turn {
            self.state.snapshot = SnapshotGate {
                after: self.state.snapshot.after,
                ..SnapshotGate::default()
            };
        }
    }

    /// A launch begins: what was asked or taken before it is stale (the
    /// launch may wait for a copy first).
    pub(super) fn forget_snapshot(&mut self) {
        let after = self.state.snapshot.after;
        self.state.snapshot = SnapshotGate {
            after,
            ..SnapshotGate::default()
        };
        if after.is_none() {
            self.state.timers.stop(Deadline::SnapshotWait);
        }
    }
}
