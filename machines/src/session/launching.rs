//! The launch inside the session: beginning one, passing its inputs and
//! effects through, and what the session does when it asks to start the
//! harness, when the harness has started and when it failed.

use super::event::Event;
use super::failure::Failure;
use super::io::{Effect, Outcome};
use super::launch_io::LaunchInput;
use super::record::Stage;
use super::timers::Deadline;
use super::Session;
use crate::launch::{self, Launch, LaunchEffect};
use crate::time::Millis;

impl Session {
    /// Begins a launch: the first start's (which waits for a promised copy)
    /// or a relaunch (which never waits).
    pub(super) fn begin_launch(&mut self, now: Millis, relaunch: bool) {
        let plan = launch::Plan {
            promised: self.options.promised && !relaunch,
            relaunch,
        };
        self.launch = Some(Launch::new(self.config.launch, plan, now));
        self.forget_snapshot();
        self.pump_launch(now);
    }

    /// `Input::Launch`: what the runtime reports to the launch. A permit
    /// granted when the launch no longer wants it (it is over, or a
    /// relaunch replaced it) is given back, so no permit is ever lost.
    pub(super) fn handle_launch(&mut self, now: Millis, input: LaunchInput) -> Outcome {
        let granted = input == LaunchInput::PermitGranted;
        match self.feed_launch(now, input.into()) {
            launch::Outcome::Applied => Outcome::Applied,
            launch::Outcome::Ignored if granted => {
                self.staged
                    .push(Effect::Launch(LaunchEffect::ReleasePermit));
                Outcome::Applied
            }
            launch::Outcome::Ignored => Outcome::Ignored,
        }
    }

    /// Hands an input to the launch and carries out what it answers.
    pub(super) fn feed_launch(&mut self, now: Millis, input: launch::Input) -> launch::Outcome {
        let Some(l) = self.launch.as_mut() else {
            return launch::Outcome::Ignored;
        };
        let outcome = l.handle(now, input);
        self.pump_launch(now);
        outcome
    }

    /// Drains the launch's effects: `StartHarness` and `PauseQueue` are the
    /// session's to act on, and its end is the session's to show; the rest
    /// goes to the runtime (the copy wait's beginning and end are journalled
    /// too).
    fn pump_launch(&mut self, now: Millis) {
        while let Some(effect) = self.launch.as_mut().and_then(Launch::poll_effect) {
            match effect {
                launch::Effect::StartHarness => self.start_harness(now),
                launch::Effect::PauseQueue => {
                    if !self.state.record.paused {
                        self.rec().paused = true;
                    }
                }
                launch::Effect::Closed | launch::Effect::Ended(_) => {}
                launch::Effect::Runtime(effect) => {
                    let event = match &effect {
                        LaunchEffect::WaitFor { on, until } => {
                            let began = self.launch.as_ref().map_or(now, |l| l.state().began);
                            Some(Event::CopyWaitBegan {
                                on: *on,
                                limit_ms: until.saturating_sub(began),
                            })
                        }
                        LaunchEffect::WaitEnded { why, waited } => Some(Event::CopyWaitEnded {
                            why: why.clone(),
                            waited_ms: *waited,
                        }),
                        _ => None,
                    };
                    self.staged.push(Effect::Launch(effect));
                    if let Some(e) = event {
                        self.emit(e);
                    }
                }
            }
        }
    }

    /// The permit is held: run the head of the queue as the launch's first
    /// turn. With nothing to run (a paused or empty queue, or a turn still
    /// ending) the launch completes at once and the harness runs later.
    pub(super) fn start_harness(&mut self, now: Millis) {
        let r = &self.state.record;
        if r.paused || r.turn.is_some() || r.queue.is_empty() || self.state.rewinding {
            self.complete_launch(now, None);
            return;
        }
        if !self.folder_recorded(now) {
            self.state.snapshot.holds_launch = true;
            return;
        }
        self.spawn_turn(true);
        let at = now.saturating_add(self.config.startup_timeout);
        self.state.timers.set(Deadline::StartupTimeout, at);
    }

    /// The launch is done: the harness named its session (or the launch had
    /// nothing to run). Its permit goes back; the session has started.
    pub(super) fn complete_launch(&mut self, now: Millis, native_id: Option<String>) {
        let native_id = native_id.or_else(|| self.state.record.native_id.clone());
        self.feed_launch(now, launch::Input::HarnessStarted { native_id });
        self.state.timers.stop(Deadline::StartupTimeout);
        if self.state.record.stage == Stage::Starting {
            self.rec().stage = Stage::Started;
        }
    }

    /// The launch failed: its permit goes back and the session shows why.
    pub(super) fn fail_launch(&mut self, now: Millis, failure: Failure) {
        self.feed_launch(now, launch::Input::HarnessFailed);
        // Its first turn, still ending, is no longer a launch's: however it
        // ends, it must not complete or fail a later launch (a relaunch).
        if let Some(t) = self.rec().turn.as_mut() {
            t.launch = false;
        }
        self.state.timers.stop(Deadline::StartupTimeout);
        self.rec().stage = Stage::Failed;
        self.set_error(failure);
    }
}
