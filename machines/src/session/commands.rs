//! The app's commands (message, stop, interrupt, resume, close, relaunch)
//! and the service's stop.

use super::event::Event;
use super::io::{Outcome, Refusal};
use super::prompt::NewPrompt;
use super::record::{EndWhy, Stage};
use super::timers::Deadline;
use super::values::RelaunchMode;
use super::Session;
use crate::launch;
use crate::time::Millis;

impl Session {
    /// Why an app command is refused before it looks at anything else.
    fn refusal(&self) -> Option<Refusal> {
        if self.state.halted {
            Some(Refusal::ServiceStopping)
        } else if self.state.record.stage == Stage::Closed {
            Some(Refusal::Closed)
        } else {
            None
        }
    }

    pub(super) fn handle_message(&mut self, now: Millis, prompt: NewPrompt) -> Outcome {
        if let Some(r) = self.refusal() {
            return Outcome::Refused(r);
        }
        if self.state.record.stage == Stage::Failed {
            return Outcome::Refused(Refusal::Failed);
        }
        if self.budget_spent() {
            return Outcome::Refused(Refusal::BudgetSpent);
        }
        if self.state.record.queue.len() >= self.config.max_queued_prompts {
            return Outcome::Refused(Refusal::QueueFull);
        }
        self.accept(prompt);
        self.pump(now);
        Outcome::Applied
    }

    pub(super) fn handle_stop(&mut self, now: Millis) -> Outcome {
        if let Some(r) = self.refusal() {
            return Outcome::Refused(r);
        }
        if self.launch_live() {
            // The launch's rule: stop completes at once and pauses the queue
            // (it answers `PauseQueue`); the harness still starts later.
            self.feed_launch(now, launch::Input::Stop);
        }
        if !self.state.record.paused {
            self.rec().paused = true;
        }
        self.end_turn(now, EndWhy::Stop);
        self.emit(Event::Stopped);
        Outcome::Applied
    }

    pub(super) fn handle_interrupt(&mut self, now: Millis) -> Outcome {
        if let Some(r) = self.refusal() {
            return Outcome::Refused(r);
        }
        // A finished turn's lingering process runs no turn to interrupt.
        let running = self.state.record.turn.as_ref().filter(|t| !t.finished());
        let Some(seq) = running.map(|t| t.seq) else {
            return Outcome::Ignored;
        };
        if !self.end_turn(now, EndWhy::Interrupt) {
            // Already ending, or a restored turn being killed anyway.
            return Outcome::Ignored;
        }
        self.emit(Event::Interrupted { turn: seq });
        Outcome::Applied
    }

    pub(super) fn handle_resume(&mut self, now: Millis) -> Outcome {
        if let Some(r) = self.refusal() {
            return Outcome::Refused(r);
        }
        if !self.state.record.paused {
            return Outcome::Ignored;
        }
        self.rec().paused = false;
        self.emit(Event::Resumed);
        self.pump(now);
        Outcome::Applied
    }

    pub(super) fn handle_close(&mut self, now: Millis) -> Outcome {
        if self.state.record.stage == Stage::Closed {
            // Closing a closed session answers it again.
            return Outcome::Ignored;
        }
        if self.state.halted {
            return Outcome::Refused(Refusal::ServiceStopping);
        }
        if self.launch_live() {
            // The launch ends (its harness never starts) and gives its
            // permit back, held or still queued for.
            self.feed_launch(now, launch::Input::Close);
        }
        self.rec().stage = Stage::Closed;
        self.state.timers.stop(Deadline::StartupTimeout);
        self.end_turn(now, EndWhy::Close);
        self.emit(Event::Closed);
        Outcome::Applied
    }

    pub(super) fn handle_relaunch(&mut self, now: Millis, mode: RelaunchMode) -> Outcome {
        if let Some(r) = self.refusal() {
            return Outcome::Refused(r);
        }
        if self.state.record.stage == Stage::Starting || self.launch_live() {
            return Outcome::Refused(Refusal::Starting);
        }
        if mode == RelaunchMode::Restart {
            self.end_turn(now, EndWhy::Restart);
        }
        let r = &self.state.record;
        if mode != RelaunchMode::Wake && r.paused {
            self.rec().paused = false;
        }
        if self.state.record.error.is_some() {
            self.rec().error = None;
        }
        if self.state.record.stage == Stage::Failed {
            self.rec().stage = Stage::Started;
        }
        self.emit(Event::Relaunched { mode });
        self.begin_launch(now, true);
        Outcome::Applied
    }

    pub(super) fn handle_service_stop(&mut self, now: Millis) -> Outcome {
        if self.state.halted {
            return Outcome::Ignored;
        }
        self.state.halted = true;
        // What the stop changes: a wait or start it ends, a turn it cuts,
        // work it leaves queued. A session with none of these (idle, or
        // closed and over) is left as it is: its journal gets nothing, so a
        // service with many quiet sessions stops in one pass of locks.
        let r = &self.state.record;
        let changes = self.launch_live()
            || r.turn.as_ref().is_some_and(|t| !t.finished())
            || !r.queue.is_empty();
        if self.launch_live() {
            // The record keeps its stage: a start that had not started
            // waits again next run.
            self.feed_launch(now, launch::Input::ServiceStop);
        }
        self.state.timers.stop(Deadline::StartupTimeout);
        self.end_turn(now, EndWhy::ServiceStop);
        if changes {
            self.emit(Event::ServiceStopped);
        }
        Outcome::Applied
    }
}
