//! The signals to the current turn's tree, each sent once a turn: SIGTERM
//! (with the end of its stdin), SIGKILL once the kill grace is over, and
//! the tree given up once [`KILL_WAIT`] after that is over. What a harness
//! that exited by itself left in its tree gets the same, unless the tree
//! was signalled already: the grace is the session's however the turn ends.

use super::io::{Effect, Outcome, Signal, KILL_WAIT};
use super::record::TurnSeq;
use super::timers::Deadline;
use super::Session;
use crate::time::Millis;

impl Session {
    /// Turn `seq`'s harness exited and left processes in its tree: SIGTERM
    /// to them now, SIGKILL after the grace. The harness is gone, so what
    /// waited on it goes (an asked stop, the linger); the startup timeout
    /// runs on (it gives a launch's permit back, whatever the tree does).
    /// A tree signalled already (the turn is being ended) changes nothing:
    /// its grace runs on, and a second SIGTERM means "hurry" to some CLIs.
    pub(super) fn handle_left_behind(&mut self, now: Millis, seq: TurnSeq) -> Outcome {
        let spawned = self.live_turn(seq).is_some_and(|t| t.process().is_some());
        if !spawned || self.state.signalled.is_some() {
            return Outcome::Ignored;
        }
        self.state.timers.stop(Deadline::InterruptGrace);
        self.state.timers.stop(Deadline::Linger);
        self.signal_term(now, seq);
        Outcome::Applied
    }

    /// SIGTERM to the turn, SIGKILL after the grace. The harness gets the
    /// end of its stdin first: one that ignores SIGTERM (or has its output
    /// dropped past the journal's cap, so its end of turn is never heard)
    /// can still end by itself. A tree signalled already gets nothing: a
    /// second reason to end the turn (its output capped while a linger ends
    /// it, a stop after what a harness left got SIGTERM) moves the SIGKILL
    /// no later and sends no second SIGTERM.
    pub(super) fn signal_term(&mut self, now: Millis, seq: TurnSeq) {
        if self.state.signalled.is_some() {
            return;
        }
        if !self.state.stdin.closed {
            self.close_input(seq);
        }
        self.signal(seq, Signal::Term);
        let at = now.saturating_add(self.config.kill_grace);
        self.state.timers.set(Deadline::KillGrace, at);
    }

    /// The kill grace is over: SIGKILL to the turn, which is given up if it
    /// is still there [`KILL_WAIT`] later. Whether it was due.
    pub(super) fn kill_grace_over(&mut self, now: Millis) -> bool {
        if !self.state.timers.is_due(Deadline::KillGrace, now) {
            return false;
        }
        self.state.timers.stop(Deadline::KillGrace);
        if let Some(seq) = self.state.record.turn.as_ref().map(|t| t.seq) {
            self.signal(seq, Signal::Kill);
            let at = now.saturating_add(KILL_WAIT);
            self.state.timers.set(Deadline::KillWait, at);
        }
        true
    }

    /// The kill wait is over and the turn is still there: the runtime
    /// stops waiting for what is left of its tree (`AbandonTree`), and
    /// reports the turn's end once its harness has exited. Whether it was
    /// due.
    pub(super) fn kill_wait_over(&mut self, now: Millis) -> bool {
        if !self.state.timers.is_due(Deadline::KillWait, now) {
            return false;
        }
        self.state.timers.stop(Deadline::KillWait);
        if let Some(seq) = self.state.record.turn.as_ref().map(|t| t.seq) {
            self.staged.push(Effect::AbandonTree { seq });
        }
        true
    }

    fn signal(&mut self, seq: TurnSeq, signal: Signal) {
        self.state.signalled = Some(signal);
        self.staged.push(Effect::Signal { seq, signal });
    }
}
