//! Warm follow-ups: a harness's process outlives its turn by
//! `Config::linger`, so the next prompt goes straight to it instead of a
//! new process that resumes the session. The finished turn's `turn_ended`
//! is journalled at once (no exit, no `by`); the process stays the turn's
//! in the record, so stop, close, a restart and the service's stop end it
//! and a restore after a crash kills it, and nothing else counts it.

use super::event::Event;
use super::record::{Phase, Run, Turn, TurnSeq};
use super::timers::Deadline;
use super::Session;
use crate::time::Millis;

impl Session {
    /// The turn a command that ends turns (stop, interrupt, close, a
    /// restart) must see gone before it answers: the record's turn, unless
    /// it is finished and its process lingers untouched (nothing of a turn
    /// runs there).
    pub fn turn_to_await(&self) -> Option<TurnSeq> {
        let t = self.state.record.turn.as_ref()?;
        (!t.finished() || t.ending.is_some()).then_some(t.seq)
    }

    /// Whether the record's turn is finished and its process waits for the
    /// next prompt (its stdin still open, nothing ending it).
    pub(super) fn lingering(&self) -> bool {
        !self.state.stdin.closed
            && !self.state.survivor
            && self
                .state
                .record
                .turn
                .as_ref()
                .is_some_and(|t| matches!(t.phase, Phase::Lingering { .. }) && t.ending.is_none())
    }

    /// Turn `seq`, prompted, is done and lingers: its usage joins the
    /// totals, its end is journalled, what it had pending is void, and a
    /// queued prompt goes to its process.
    pub(super) fn linger(&mut self, now: Millis, seq: TurnSeq) {
        self.void_pending(seq);
        let t = self.rec().turn.as_mut().expect("the live turn");
        // Only a prompted turn is done (`handle_finished`).
        let Phase::Prompted(Run { process, usage, .. }) = t.phase else {
            return;
        };
        t.phase = Phase::Lingering { process };
        let prompt = t.prompt.id;
        let usage = self.meter(usage);
        self.emit(Event::TurnEnded {
            turn: seq,
            prompt,
            exit: None,
            by: None,
            usage,
        });
        let t = self.state.record.turn.clone().expect("the live turn");
        self.record_after(now, &t);
        self.cut_carried(&t);
        let until = now.saturating_add(self.config.linger);
        self.state.timers.set(Deadline::Linger, until);
        self.pump(now);
    }

    /// Takes the head of the queue into a new turn in the lingering
    /// process. The record names the new turn (with the process) before
    /// the prompt is written, unless the prompt was just accepted: then its
    /// log append and the journal's `turn_started` do (`finish`).
    pub(super) fn continue_turn(&mut self, now: Millis) {
        // Nothing else this input did changed the record: the one on disk
        // is the turn before, lingering.
        let clean = !self.dirty;
        let was = self.choice_in_force();
        let r = self.rec();
        let Some(prompt) = r.queue.pop_front() else {
            return;
        };
        let seq = r.next_turn;
        r.next_turn += 1;
        let before = r.turn.take().expect("a lingering turn");
        let process = before.process().expect("a lingering turn's process");
        r.chosen = r.chosen.with(&prompt.choice);
        let now_chosen = was.with(&prompt.choice);
        r.error = None;
        r.turn = Some(Turn {
            warm: true,
            phase: Phase::Prompted(Run::new(process)),
            ..Turn::asked(seq, prompt.clone(), false)
        });
        let resume = r.native_id.clone();
        self.state.timers.stop(Deadline::Linger);
        self.continued = clean;
        // Its stdin is open (it lingered): only what was steered into the
        // turn before goes.
        self.state.stdin.steered = false;
        self.state.stdin.last_steer = None;
        self.emit(Event::TurnStarted {
            turn: seq,
            prompt: prompt.id,
            resume,
            model: now_chosen.model.clone(),
        });
        self.staged.push(super::io::Effect::ContinueTurn {
            seq,
            prompt: prompt.text.to_string(),
            switch: was.changes_to(&now_chosen),
            attachments: prompt.attachments.clone(),
        });
        self.await_sign_of_life(now);
    }

    /// The linger is over: the process's stdin closes (it exits by
    /// itself), and SIGTERM follows after the kill grace if it does not.
    /// Whether it was due.
    pub(super) fn linger_over(&mut self, now: Millis) -> bool {
        if !self.state.timers.is_due(Deadline::Linger, now) {
            return false;
        }
        self.end_linger(now);
        true
    }

    /// Whether the lingering process can run the head of the queue as it
    /// chose: not when it changes an effort the harness takes only when
    /// its process starts.
    pub(super) fn takes_in_place(&self) -> bool {
        // A cut conversation goes on only in a process resumed at the cut.
        if self.state.record.cut.is_some() {
            return false;
        }
        let Some(next) = self.state.record.queue.front() else {
            return true;
        };
        let changes = self.choice_in_force().changes_to(&next.choice);
        !(self.options.effort_at_spawn && changes.effort.is_some())
    }

    /// The process lingers no more: its stdin closes (it exits by itself),
    /// and SIGTERM follows after the kill grace if it does not. Its end
    /// lets the queue go on in a new process.
    pub(super) fn end_linger(&mut self, now: Millis) {
        self.state.timers.stop(Deadline::Linger);
        if let Some(seq) = self.state.record.turn.as_ref().map(|t| t.seq) {
            if self.lingering() {
                self.close_input(seq);
                let at = now.saturating_add(self.config.kill_grace);
                self.state.timers.set(Deadline::InterruptGrace, at);
            }
        }
    }
}
