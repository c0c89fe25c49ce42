//! A rewind and a fork (docs/api.md, `POST …/rewind` and `POST …/fork`).
//!
//! A rewind: the runtime puts the session's
//! folder back as a turn left it. The machine decides when one may begin
//! (no turn running or about to start, the last turn's folder recorded)
//! and starts no turn until it is over: a message sent meanwhile waits in
//! the queue, and a launch's first turn waits for it. A rewind of the
//! conversation leaves a [`Cut`] in the record: the next process resumes
//! the native session cut there (a lingering one, whose conversation
//! holds the turns after it, ends), and once a turn that carried it has
//! run, the harness's own conversation goes on from the cut.
//!
//! A fork: a new session, before anything of it runs, takes another's
//! native session and a [`Cut`] with `fork` set, so its first process
//! resumes that session at the cut as one of its own.

use super::event::Event;
use super::io::{Outcome, Refusal};
use super::record::{Cut, Phase, Stage, Turn, TurnSeq};
use super::Session;
use crate::id::plausible_native_id;
use crate::time::Millis;

impl Session {
    /// `Fork`: a new session, before anything of it ran, takes another's
    /// native session cut where the fork says.
    pub(super) fn handle_fork(&mut self, parent: String, native_id: String, cut: Cut) -> Outcome {
        let r = &self.state.record;
        let fresh = r.stage == Stage::Starting
            && r.native_id.is_none()
            && r.turn.is_none()
            && r.next_turn == 1;
        if !fresh || !plausible_native_id(&native_id) {
            return Outcome::Ignored;
        }
        let after_turn = cut.after_turn;
        let r = self.rec();
        r.native_id = Some(native_id);
        r.cut = Some(Cut {
            fork: true,
            carried_by: None,
            ..cut
        });
        self.emit(Event::Forked { parent, after_turn });
        Outcome::Applied
    }

    /// Whether a rewind or a fork may go back to turn `turn`: `None` when
    /// it has ended, or why not (it runs, or it has not been).
    pub fn ended_turn(&self, turn: TurnSeq) -> Option<Refusal> {
        let r = &self.state.record;
        match &r.turn {
            Some(t) if t.seq == turn && !t.finished() => Some(Refusal::TurnRunning),
            _ if turn == 0 || turn >= r.next_turn => Some(Refusal::NoSuchTurn),
            _ => None,
        }
    }

    /// `RewindBegin`: holds the queue for a rewind to turn `to_turn`, or
    /// says why not.
    pub(super) fn handle_rewind_begin(&mut self, to_turn: TurnSeq) -> Outcome {
        if self.state.halted {
            return Outcome::Refused(Refusal::ServiceStopping);
        }
        if self.state.record.stage == Stage::Closed {
            return Outcome::Refused(Refusal::Closed);
        }
        if self.launch_live() || self.state.record.stage == Stage::Starting {
            return Outcome::Refused(Refusal::Starting);
        }
        if self.state.rewinding {
            return Outcome::Refused(Refusal::Rewinding);
        }
        let running = self
            .state
            .record
            .turn
            .as_ref()
            .is_some_and(|t| !t.finished());
        // A turn whose folder is being recorded before it is as good as
        // started: the rewind would change the folder under it.
        let gate = self.state.snapshot;
        let next_asked =
            gate.asked == Some(self.state.record.next_turn) && gate.ready != gate.asked;
        if running || next_asked {
            return Outcome::Refused(Refusal::TurnRunning);
        }
        if self.state.snapshot.after.is_some() {
            return Outcome::Refused(Refusal::FolderRecording);
        }
        if let Some(why) = self.ended_turn(to_turn) {
            return Outcome::Refused(why);
        }
        self.state.rewinding = true;
        Outcome::Applied
    }

    /// `RewindOver`: the queue goes on, from the cut if there is one.
    pub(super) fn handle_rewind_over(&mut self, now: Millis, cut: Option<Cut>) -> Outcome {
        if !std::mem::take(&mut self.state.rewinding) {
            return Outcome::Ignored;
        }
        if let Some(cut) = cut {
            self.rec().cut = Some(Cut {
                carried_by: None,
                ..cut
            });
            self.end_linger(now);
        }
        self.pump(now);
        Outcome::Applied
    }

    /// Turn `turn` is over: if it carried the cut and had its prompt, the
    /// harness's conversation now goes on from the cut, which is done
    /// with; if it never ran, the next process carries it again.
    pub(super) fn cut_carried(&mut self, turn: &Turn) {
        let Some(cut) = &self.state.record.cut else {
            return;
        };
        if cut.carried_by != Some(turn.seq) {
            return;
        }
        let ran = matches!(turn.phase, Phase::Prompted(_) | Phase::Lingering { .. });
        let r = self.rec();
        if ran {
            r.cut = None;
        } else if let Some(cut) = r.cut.as_mut() {
            cut.carried_by = None;
        }
    }
}
