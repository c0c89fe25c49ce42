//! A turn's life: spawned, handed its prompt, named, ended (on its own or
//! on purpose, its tree signalled as signals.rs says), or found after a
//! restart; and what its end does to its prompt.

use super::event::Event;
use super::failure::{CutBy, Failure};
use super::io::{Effect, Outcome};
use super::record::{EndWhy, Phase, Process, Run, Turn, TurnSeq};
use super::timers::Deadline;
use super::usage::Usage;
use super::values::{Exit, JournalCap};
use super::{Session, Stdin};
use crate::id::plausible_native_id;
use crate::launch;
use crate::time::Millis;

/// How a turn ended, as far as its prompt is concerned.
enum End {
    /// No process could be started.
    SpawnFailed(String),
    /// Its process exited (with the end of its stderr).
    Exited(Exit, String),
    /// A restored turn, killed by the restore.
    Gone,
}

/// What becomes of a turn's prompt.
enum Fate {
    /// It ran (or the user ended it after it reached the harness): done.
    Done,
    /// It never got to run: back to the head of the queue.
    Requeue,
    /// It cannot be run: reported, and the queue moves on.
    Fail(Failure),
}

/// The deadlines that are the current turn's: they go with it.
const TURN_DEADLINES: [Deadline; 5] = [
    Deadline::KillGrace,
    Deadline::KillWait,
    Deadline::InterruptGrace,
    Deadline::StartupTimeout,
    Deadline::Linger,
];

impl Session {
    /// The current turn if it is `seq` and not a restored one.
    pub(super) fn live_turn(&self, seq: TurnSeq) -> Option<&Turn> {
        self.state
            .record
            .turn
            .as_ref()
            .filter(|t| t.seq == seq && !self.state.survivor)
    }

    /// Takes turn `seq` out of the record if it is the live one and has a
    /// process (`spawned`) or not, with what this run said on its stdin;
    /// its deadlines go with it.
    fn take_turn(&mut self, seq: TurnSeq, spawned: bool) -> Option<(Turn, Stdin)> {
        self.live_turn(seq)
            .filter(|t| t.process().is_some() == spawned)?;
        for deadline in TURN_DEADLINES {
            self.state.timers.stop(deadline);
        }
        let stdin = std::mem::take(&mut self.state.stdin);
        self.state.signalled = None;
        self.void_pending(seq);
        let turn = self.rec().turn.take()?;
        Some((turn, stdin))
    }

    pub(super) fn handle_spawned(
        &mut self,
        now: Millis,
        seq: TurnSeq,
        process: Process,
    ) -> Outcome {
        let Some(t) = self.live_turn(seq).filter(|t| t.phase == Phase::Asked) else {
            return Outcome::Ignored;
        };
        let (prompt, ending, launch) = (t.prompt.id, t.ending, t.launch);
        let resume = self.state.record.native_id.clone();
        let r = self.rec();
        if r.native_id.is_some() {
            if let Some(cut) = r.cut.as_mut() {
                cut.carried_by = Some(seq);
            }
        }
        let t = r.turn.as_mut().expect("checked above");
        // Its choice is in force from the turn that runs it.
        r.chosen = r.chosen.with(&t.prompt.choice);
        // Ended before it was spawned: it never gets its prompt.
        t.phase = match ending {
            Some(_) => Phase::Spawned(Run::new(process)),
            None => Phase::Prompted(Run::new(process)),
        };
        self.emit(Event::TurnStarted {
            turn: seq,
            prompt,
            resume,
            model: self.choice_in_force().model,
        });
        if ending.is_some() {
            self.signal_term(now, seq);
        } else {
            self.rec().error = None;
            // After the `Persist` that `finish` puts first.
            self.staged.push(Effect::DeliverPrompt { seq });
            if !launch {
                self.await_sign_of_life(now);
            }
        }
        Outcome::Applied
    }

    /// The turn that just got its prompt must name its session within the
    /// startup timeout (a launch's first turn has its own deadline, from
    /// its spawn).
    pub(super) fn await_sign_of_life(&mut self, now: Millis) {
        let at = now.saturating_add(self.config.startup_timeout);
        self.state.timers.set(Deadline::StartupTimeout, at);
    }

    pub(super) fn handle_spawn_failed(
        &mut self,
        now: Millis,
        seq: TurnSeq,
        reason: String,
    ) -> Outcome {
        let Some((turn, stdin)) = self.take_turn(seq, false) else {
            return Outcome::Ignored;
        };
        self.settle(now, turn, stdin, End::SpawnFailed(reason));
        self.carry_on(now);
        Outcome::Applied
    }

    pub(super) fn handle_undelivered(
        &mut self,
        now: Millis,
        seq: TurnSeq,
        error: String,
    ) -> Outcome {
        let Some(t) = self.live_turn(seq) else {
            return Outcome::Ignored;
        };
        match t.phase {
            Phase::Prompted(_) => {}
            // Its harness finished the prompt, so the report says only that
            // its stdin broke: that ends the process, unless something
            // ends it already.
            Phase::Lingering { .. } if t.ending.is_none() => {}
            _ => return Outcome::Ignored,
        }
        let launch_turn = t.launch && !t.reported() && self.launch_live();
        let already_ending = t.ending.is_some();
        let prompt = t.prompt.id;
        let t = self.rec().turn.as_mut().expect("checked above");
        if let Phase::Prompted(run) = &t.phase {
            // The process runs on without it.
            t.phase = Phase::Spawned(run.clone());
        }
        if already_ending {
            // Stopped, closed, cut or timed out already: that says what
            // happened; not having the prompt only decides its fate (it
            // goes back to the queue, or is reported if interrupted).
            return Outcome::Applied;
        }
        self.end_turn(now, EndWhy::Undelivered);
        if launch_turn {
            // The launch fails when the turn has ended (`settle`): a harness
            // that exited at once closed its stdin, and its exit and stderr
            // say why.
            self.state.stdin.undelivered = Some(error);
        } else {
            // The cause is the disk or the harness, not the prompt: keep it
            // first and wait for the user rather than spawn in a loop.
            self.rec().paused = true;
            self.set_error(Failure::PromptUndelivered { prompt, error });
        }
        Outcome::Applied
    }

    pub(super) fn handle_native_id(
        &mut self,
        now: Millis,
        seq: TurnSeq,
        native_id: String,
    ) -> Outcome {
        // The harness's word is untrusted: an ID that cannot be one is
        // never recorded nor passed back on a later turn's command line.
        if !plausible_native_id(&native_id) {
            return Outcome::Ignored;
        }
        let Some(t) = self.live_turn(seq) else {
            return Outcome::Ignored;
        };
        // A harness that names itself after its startup timeout is being
        // killed; its prompt is already promised to a relaunch or a new
        // process.
        let late = matches!(
            t.ending,
            Some(EndWhy::StartupTimeout | EndWhy::NoSignOfLife)
        );
        // Only a spawned turn names its session, once.
        let unnamed = t.run().is_some_and(|run| !run.named);
        if !unnamed || late {
            return Outcome::Ignored;
        }
        let launch_turn = t.launch && self.launch_live();
        // A warm turn that names the session it resumed changes nothing a
        // restore needs from the record: the journal holds what its
        // harness printed after its prompt (`TurnTail`), so no record write
        // stands between its first line and the next.
        let known = t.warm
            && self.state.record.retrying.is_none()
            && self.state.record.native_id.as_deref() == Some(native_id.as_str());
        self.state.timers.stop(Deadline::StartupTimeout);
        let r = if known {
            &mut self.state.record
        } else {
            self.rec()
        };
        let run = r.turn.as_mut().and_then(Turn::run_mut);
        run.expect("checked above").named = true;
        r.retrying = None;
        if r.native_id.as_deref() != Some(native_id.as_str()) {
            // A fork's cut names a session of its own on purpose.
            let lost = match (&r.native_id, &r.cut) {
                (Some(resumed), None) => Some(Failure::NotCarriedOver {
                    turn: seq,
                    resumed: resumed.clone(),
                    began: native_id.clone(),
                }),
                _ => None,
            };
            r.native_id = Some(native_id.clone());
            // A new native session: its running total starts from nothing.
            r.native_total = Some(Usage::default());
            self.emit(Event::NativeId {
                turn: seq,
                native_id: native_id.clone(),
            });
            if let Some(lost) = lost {
                self.set_error(lost);
            }
        }
        if launch_turn {
            self.complete_launch(now, Some(native_id));
        }
        Outcome::Applied
    }

    pub(super) fn handle_ended(
        &mut self,
        now: Millis,
        seq: TurnSeq,
        exit: Exit,
        detail: String,
    ) -> Outcome {
        let Some((turn, stdin)) = self.take_turn(seq, true) else {
            return Outcome::Ignored;
        };
        if turn.finished() {
            // Its end is journalled; its lingering process is gone.
            self.carry_on(now);
            return Outcome::Applied;
        }
        let usage = self.meter(turn.usage());
        self.emit(Event::TurnEnded {
            turn: seq,
            prompt: turn.prompt.id,
            exit: Some(exit),
            by: turn.ending,
            usage,
        });
        self.record_after(now, &turn);
        self.cut_carried(&turn);
        self.settle(now, turn, stdin, End::Exited(exit, detail));
        self.carry_on(now);
        Outcome::Applied
    }

    pub(super) fn handle_survivor_gone(&mut self, now: Millis, seq: TurnSeq) -> Outcome {
        let restored = self.state.record.turn.as_ref().map(|t| t.seq);
        if !self.state.survivor || restored != Some(seq) {
            return Outcome::Ignored;
        }
        self.state.survivor = false;
        self.void_pending(seq);
        let turn = self.rec().turn.take().expect("checked above");
        if turn.finished() {
            // Killed while it lingered: its turn was over.
            self.carry_on(now);
            return Outcome::Applied;
        }
        let usage = self.meter(turn.usage());
        self.emit(Event::TurnEnded {
            turn: seq,
            prompt: turn.prompt.id,
            exit: None,
            by: Some(turn.ending.unwrap_or(EndWhy::Restore)),
            usage,
        });
        self.record_after(now, &turn);
        self.cut_carried(&turn);
        // A restored turn: this run said nothing on its stdin.
        let stdin = std::mem::take(&mut self.state.stdin);
        self.settle(now, turn, stdin, End::Gone);
        self.carry_on(now);
        Outcome::Applied
    }

    /// The turn's output met the full journal: end the turn and pause the
    /// queue (every later turn would meet the same full journal), or fail
    /// the launch whose first turn it is. `error` says why either way, even
    /// when the turn was already ending, since its output is being dropped.
    pub(super) fn handle_output_capped(
        &mut self,
        now: Millis,
        seq: TurnSeq,
        cap: JournalCap,
    ) -> Outcome {
        let Some(t) = self.live_turn(seq).filter(|t| t.process().is_some()) else {
            return Outcome::Ignored;
        };
        let launch_turn = t.launch && !t.reported() && self.launch_live();
        let full = Failure::JournalFull {
            cap,
            turn: seq,
            launch: launch_turn,
        };
        self.end_turn(now, EndWhy::OutputCapped);
        if launch_turn {
            self.fail_launch(now, full);
        } else {
            if !self.state.record.paused {
                self.rec().paused = true;
            }
            self.set_error(full);
        }
        Outcome::Applied
    }

    pub(super) fn handle_timeout(&mut self, now: Millis) -> Outcome {
        let mut applied = false;
        applied |= self.kill_grace_over(now);
        applied |= self.kill_wait_over(now);
        if self.state.timers.is_due(Deadline::InterruptGrace, now) {
            self.state.timers.stop(Deadline::InterruptGrace);
            if let Some(seq) = self.state.record.turn.as_ref().map(|t| t.seq) {
                self.signal_term(now, seq);
            }
            applied = true;
        }
        if self.state.timers.is_due(Deadline::StartupTimeout, now) {
            self.startup_timeout(now);
            applied = true;
        }
        applied |= self.linger_over(now);
        applied |= self.snapshot_wait_over(now);
        applied |= self.retry_persist(now);
        applied |= self.approvals_timed_out(now);
        let launch_due = self
            .launch
            .as_ref()
            .and_then(|l| l.poll_timeout())
            .is_some_and(|(at, _)| now >= at);
        if launch_due {
            applied |= self.feed_launch(now, launch::Input::Timeout) == launch::Outcome::Applied;
        }
        if applied {
            Outcome::Applied
        } else {
            Outcome::Ignored
        }
    }

    /// The current turn did not name its session in time. A launch's first
    /// turn is ended and the launch fails (its permit returns; the prompt
    /// goes back to the queue once the turn is gone). Any other turn that
    /// has its prompt is ended, and its prompt runs once more in a new
    /// process, or fails if it already did.
    fn startup_timeout(&mut self, now: Millis) {
        self.state.timers.stop(Deadline::StartupTimeout);
        let Some(t) = self.state.record.turn.as_ref().filter(|t| !t.reported()) else {
            return;
        };
        let within_ms = self.config.startup_timeout;
        if t.launch {
            if self.launch_live() {
                self.end_turn(now, EndWhy::StartupTimeout);
                self.fail_launch(now, Failure::NotStarted { within_ms });
            }
            return;
        }
        // Only a turn with its prompt shows, or fails to show, a sign of life.
        let prompted = matches!(t.phase, Phase::Prompted(_));
        if !prompted || t.ending.is_some() || self.state.survivor {
            return;
        }
        let (turn, prompt) = (t.seq, t.prompt.id);
        let retried = self.state.record.retrying != Some(prompt);
        self.end_turn(now, EndWhy::NoSignOfLife);
        self.emit(Event::Unresponsive {
            turn,
            prompt,
            within_ms,
            retried,
        });
    }

    /// Starts ending the current turn: SIGTERM now (or as soon as it is
    /// spawned), SIGKILL after the grace. An interrupt (or a spent budget)
    /// of a turn that has its prompt asks the harness first, and
    /// SIGTERM comes only after the grace; anything else ending that turn
    /// meanwhile sends it at once. `false` when there is no turn to end:
    /// none, already ending, or a restored one the restore kills.
    pub(super) fn end_turn(&mut self, now: Millis, why: EndWhy) -> bool {
        let Some(t) = self.state.record.turn.as_ref() else {
            return false;
        };
        if self.state.survivor {
            return false;
        }
        let (seq, spawned, delivered) = (t.seq, t.process().is_some(), t.delivered());
        if t.ending.is_some() {
            let asks = matches!(why, EndWhy::Interrupt | EndWhy::Budget);
            if !asks && self.state.timers.is_set(Deadline::InterruptGrace) {
                self.state.timers.stop(Deadline::InterruptGrace);
                self.signal_term(now, seq);
            }
            return false;
        }
        self.deny_pending(seq, why);
        self.rec().turn.as_mut().expect("checked above").ending = Some(why);
        let can_ask = !self.state.stdin.closed;
        let asked_for = matches!(why, EndWhy::Interrupt | EndWhy::Budget);
        if spawned && delivered && asked_for && can_ask {
            self.ask_to_stop(now, seq);
        } else if spawned {
            self.signal_term(now, seq);
        }
        true
    }

    /// A turn is gone: settle its launch (if it was a launch's first turn
    /// that never reported in) and its prompt.
    fn settle(&mut self, now: Millis, turn: Turn, stdin: Stdin, end: End) {
        let why = turn
            .ending
            .or(matches!(end, End::Gone).then_some(EndWhy::Restore));
        let id = turn.prompt.id;
        let (delivered, reported) = (turn.delivered(), turn.reported());
        let launch_pending = turn.launch && !reported && self.launch_live();
        // A signal after its harness said the turn was done ends nothing of it.
        let failed_exit = matches!(&end, End::Exited(exit, _)
            if !(exit.success() || stdin.done && matches!(exit, Exit::Signal(_))));
        let undelivered = stdin.undelivered;
        if launch_pending {
            match (&end, why) {
                // Exited with a failure of its own (a signal is likely the
                // SIGTERM the undelivered prompt sent).
                (End::Exited(exit @ Exit::Code(_), detail), Some(EndWhy::Undelivered))
                    if failed_exit =>
                {
                    self.fail_launch(
                        now,
                        Failure::ExitedBeforePrompt {
                            exit: *exit,
                            detail: detail.clone(),
                        },
                    )
                }
                (_, Some(EndWhy::Undelivered)) => self.fail_launch(
                    now,
                    Failure::LaunchPromptUndelivered {
                        prompt: id,
                        error: undelivered,
                    },
                ),
                (End::SpawnFailed(reason), _) => self.fail_launch(
                    now,
                    Failure::NotSpawned {
                        reason: reason.clone(),
                    },
                ),
                (End::Exited(exit, detail), None) if failed_exit => self.fail_launch(
                    now,
                    Failure::ExitedBeforeNamed {
                        exit: *exit,
                        detail: detail.clone(),
                    },
                ),
                // Ended by itself, or by stop or interrupt: started, with
                // whatever native ID the session has.
                _ => self.complete_launch(now, None),
            }
        }
        let fate = match (&end, why) {
            // Its output could not be kept: a prompt the harness had is not
            // run again (a turn of a full session only ever ends this way),
            // and `error` says so; one it never got goes back to the queue.
            (_, Some(EndWhy::OutputCapped)) if delivered => Fate::Done,
            // Its launch failed around it: the prompt was promised to a relaunch.
            (_, Some(EndWhy::StartupTimeout | EndWhy::Undelivered)) => Fate::Requeue,
            // Its harness never began it: once more in a new process, then no more.
            (_, Some(EndWhy::NoSignOfLife)) if self.state.record.retrying == Some(id) => {
                self.rec().retrying = None;
                Fate::Fail(Failure::Unresponsive {
                    turn: turn.seq,
                    prompt: id,
                    within_ms: self.config.startup_timeout,
                })
            }
            (_, Some(EndWhy::NoSignOfLife)) => {
                self.rec().retrying = Some(id);
                Fate::Requeue
            }
            (End::SpawnFailed(_), _) if turn.launch => Fate::Requeue,
            (End::SpawnFailed(reason), _) => Fate::Fail(Failure::PromptNotRun {
                prompt: id,
                reason: reason.clone(),
            }),
            // Held back by the budget: it waits for a raise, queued.
            (_, Some(EndWhy::Budget)) if !delivered => Fate::Requeue,
            (_, Some(EndWhy::Interrupt)) if !delivered => {
                Fate::Fail(Failure::InterruptedBeforeDelivery { prompt: id })
            }
            _ if !delivered => Fate::Requeue,
            (
                _,
                Some(
                    EndWhy::Stop
                    | EndWhy::Interrupt
                    | EndWhy::Close
                    | EndWhy::Restart
                    | EndWhy::Budget,
                ),
            ) => Fate::Done,
            (_, Some(cut @ (EndWhy::ServiceStop | EndWhy::Restore))) => {
                self.set_error(Failure::Cut {
                    turn: turn.seq,
                    prompt: id,
                    by: if cut == EndWhy::ServiceStop {
                        CutBy::ServiceStop
                    } else {
                        CutBy::ServiceEnd
                    },
                    reported,
                });
                if reported {
                    Fate::Done
                } else {
                    Fate::Requeue
                }
            }
            (End::Exited(..), None) if launch_pending && failed_exit => Fate::Requeue,
            // Its harness said why it failed: that, before how it exited.
            (End::Exited(..), None) if turn.failed().is_some() => {
                let why = turn.failed().unwrap_or_default().to_string();
                self.set_error(Failure::HarnessSaidFailed { why });
                Fate::Done
            }
            (End::Exited(exit, detail), None) if failed_exit => {
                self.set_error(Failure::TurnFailed {
                    exit: *exit,
                    detail: detail.clone(),
                });
                Fate::Done
            }
            _ => Fate::Done,
        };
        match fate {
            Fate::Done => {}
            Fate::Requeue => self.requeue(&turn),
            Fate::Fail(failure) => {
                self.emit(Event::PromptFailed {
                    prompt: id,
                    failure: failure.clone(),
                });
                self.set_error(failure);
            }
        }
    }
}
