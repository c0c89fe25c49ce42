//! The session: everything after the start request is accepted.
//!
//! One [`Stage`] says where the session is in its life; the prompt queue,
//! the pause and the current turn sit beside it in the persisted
//! [`Record`]. The machine composes the [`Launch`] (the copy wait and the
//! startup permit) as quinn's connection composes its streams: what the
//! runtime reports to the launch goes in through [`Input::Launch`]
//! ([`LaunchInput`]), the launch's work for the runtime comes out through
//! [`Effect::Launch`] ([`LaunchEffect`]), and the session feeds and acts on
//! the rest itself, so neither type can carry what never crosses.
//!
//! The rules (each has a row in docs/machines.md and a test):
//! - **Queue.** Every accepted prompt gets a number and is queued; its
//!   `prompt_queued` event carries its text, cut to fit a journal line, and
//!   it is appended to the prompt log (`PersistPrompt`), which is all a
//!   queued message writes (one that starts a turn at once is in the
//!   record its `Persist` writes, and is not logged). At most `max_queued_prompts` wait (`QueueFull`);
//!   a prompt coming back to the queue is never refused. Prompts run in the
//!   order they were accepted: one coming back goes before every prompt
//!   accepted after it, and a steer never overtakes a waiting prompt. A turn
//!   starts only when the session has started (or as a launch's first turn,
//!   once the permit is granted), is not paused, has no turn (a restored
//!   turn whose survivor check is outstanding counts), is not closed or
//!   failed, and the service is not stopping. One turn at a time, ever: the
//!   turn lives in the record, so a restart sees it.
//! - **Turns.** `SpawnTurn` → `TurnSpawned` (persisted: pid, pgid, start
//!   time) → `DeliverPrompt`, so a kill -9 never leaves an unrecorded turn
//!   that has its prompt. `NativeId` marks the turn as reported in (and
//!   completes a launch's first turn). `TurnEnded` settles its prompt.
//! - **Stop** pauses the queue and ends the running turn (SIGTERM, then
//!   SIGKILL after `kill_grace`, and its tree given up (`AbandonTree`)
//!   `KILL_WAIT` after that if it is still there); during a launch it
//!   completes at once.
//!   **Interrupt** ends the turn without pausing. **Close** ends the launch
//!   (its harness never starts) or the turn, and nothing starts again.
//!   **Service stop** ends the launch (a start that had not started waits
//!   again next run) and cuts the turn.
//! - **Left behind.** What a harness that exited left in its tree
//!   (`LeftBehind`: a daemon, a background job) is ended as a stopped
//!   turn is, by the session's own grace; `TurnEnded` comes once the tree
//!   is gone. A tree gets each signal once: what is left of a turn being
//!   ended changes nothing (a second SIGTERM means "hurry" to some CLIs).
//! - **Relaunch** (resume, wake, restart) never waits for a copy, and is
//!   refused while the first launch or another relaunch is under way.
//! - **First sign of life.** Any other turn, a warm follow-up included,
//!   that has not named its session within `startup_timeout` of getting its
//!   prompt is ended (`Unresponsive`); its prompt runs once more in a new
//!   process, and fails if that one does not either.
//! - **Startup timeout.** A launch's first turn that has not named its
//!   session within `startup_timeout` is ended, the launch fails with
//!   "claude did not start within 120 s …", the permit returns, and its
//!   prompt goes back to the head of the queue for a relaunch.
//! - **A prompt never wedges the queue.** A later turn that cannot be
//!   spawned reports its prompt failed and the queue moves on; a launch's
//!   first turn that cannot be spawned fails the launch, prompt kept.
//! - **A cut turn is never silent.** A turn cut by a service stop or by the
//!   service dying says so in `error`; its prompt is queued again only if
//!   the harness never reported in, so no prompt runs twice.
//! - **Journal cap.** A turn whose output meets the session's full journal
//!   (`OutputCapped`) is ended (SIGTERM, then SIGKILL), the queue is paused
//!   and `error` says why; its prompt is not run again. A launch's first
//!   turn that had not named its session fails the launch. A full journal
//!   stays full, so a later turn of the session ends the same way at its
//!   first output.
//! - **Restore.** A recorded turn is first killed if it survived
//!   (`KillSurvivor` → `SurvivorGone`); nothing else runs on the session
//!   before that. Then a start that had not started waits again (a new
//!   launch, a new limit) and a started session runs its queue.
//! - **Durability.** Every input that changes the record emits `Persist`
//!   before anything else it emits, so the runtime can roll back an app
//!   command whose record cannot be written (see docs/machines.md). One
//!   exception: a message that goes straight to a lingering process (a
//!   warm follow-up) emits only its prompt's `PersistPrompt`, so no record
//!   write stands in the harness's way: a restore completes the record
//!   on disk (the turn before, lingering) from the prompt log and the
//!   journal's tail (`TurnTail`), where it also learns whether a warm
//!   turn's harness began (a warm turn that names the session it resumed
//!   writes no record either). A
//!   write that failed otherwise (`PersistFailed`) holds back the prompt of
//!   a turn the record does not name, notes a spawn it does not name
//!   (`NoteSpawn`, as for a launch's first turn, which no write precedes),
//!   and is tried again a second later (`PersistRetry`).
//! - **Usage.** What a turn's harness reports (`TurnUsage`) is the turn's:
//!   its own figures add up; a native session's running total counts what
//!   it grew by since the last one (none when that is unknown: a total
//!   before the turn named its session is ignored, and a new native
//!   session starts from zero). Figures past belief read as nothing, sums
//!   saturate. `turn_ended` carries the turn's usage, and the record's
//!   totals are the sum of the ended turns'.
//! - **Failures are data** ([`Failure`]); the runtime words them.
//! - **Approvals.** A tool use the harness asks about (`ApprovalRequested`)
//!   is denied at once with `approvals: auto` (the modes decide), else
//!   waits for the app (`ApprovalDecided`) at most `approval_timeout`.
//!   Each request is answered exactly once (`AnswerApproval`); ending a
//!   turn denies what it has pending first; a turn gone by itself, or
//!   after a kill -9, leaves its requests void; at most `MAX_PENDING` wait.
//!
//! Where the rules are silent the machine does what a user would expect:
//! a prompt whose turn was stopped or interrupted after it reached the
//! harness is not run again (the user ended it); one stopped before it
//! reached the harness goes back to the queue (an interrupted one is
//! reported failed, or interrupt would start it again at once); a launch's
//! first turn ended by stop or interrupt before it reported in completes
//! the launch without a native ID, as a paused or empty queue does.

mod approval;
mod approvals;
mod attachment;
mod budget;
mod choice;
mod commands;
mod durability;
pub mod event;
mod excerpt;
mod failure;
pub mod io;
mod launch_io;
mod launching;
mod linger;
mod metering;
mod phase;
#[cfg(test)]
mod phase_tests;
mod prompt;
pub mod record;
pub mod retry;
mod rewinding;
mod signals;
mod snapshots;
mod spending;
mod tail;
mod talk;
mod timers;
mod turns;
pub mod usage;
mod values;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::launch::Launch;
use crate::time::Millis;

pub use crate::launch::LaunchEffect;
pub use approval::{
    Approval, ApprovalId, ApprovalMode, DecidedBy, Decision, Request as ApprovalRequest,
    APPROVAL_TIMEOUT, MAX_PENDING,
};
pub use attachment::{Attachment, ImageType, IMAGE_TYPES};
pub use budget::Budget;
pub use choice::{Effort, ModelChoice, EFFORTS};
pub use event::Event;
pub use excerpt::{excerpt, PROMPT_TEXT_MAX};
pub use failure::{CutBy, Failure, FAILURE_TEXT_MAX};
pub use io::{
    Config, Effect, Input, Options, Outcome, Refusal, Signal, Timer, KILL_GRACE, KILL_WAIT, LINGER,
    MAX_QUEUED_PROMPTS, PERSIST_RETRY, SNAPSHOT_WAIT, STARTUP_TIMEOUT,
};
pub use launch_io::LaunchInput;
pub use record::{
    EndWhy, NewPrompt, Phase, Process, Prompt, PromptId, Record, Run, Shown, Stage, Text, Turn,
    TurnSeq,
};
pub use retry::{retry_difference, StartFields};
pub use tail::TurnTail;
pub use timers::{Deadline, TimerTable};
pub use usage::{Usage, UsageReport, Usd};
pub use values::{Boundary, Cut, Exit, JournalCap, RelaunchMode, SnapshotGate};

/// Everything a session knows, in memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The persisted part.
    pub record: Record,
    /// `ServiceStop` arrived: nothing starts any more in this run. Not a
    /// session state: the next run starts from the record.
    pub halted: bool,
    /// The current turn was restored and `KillSurvivor` is outstanding.
    pub survivor: bool,
    /// The session's own deadlines.
    pub timers: TimerTable,
    /// What this run said on the current turn's stdin.
    pub stdin: Stdin,
    /// The last signal this run sent to the current turn's tree, if any:
    /// a tree signalled once is never sent SIGTERM again (a second one
    /// means "hurry" to some CLIs). Not in the record: a restart kills the
    /// turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signalled: Option<Signal>,
    /// The snapshot the next turn waits for.
    #[serde(default)]
    pub snapshot: SnapshotGate,
    /// A rewind is under way: no turn starts until it is over.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rewinding: bool,
}

/// What this run said on the current turn's stdin. Not in the record: a
/// restart kills the turn, whose stdin goes with it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stdin {
    /// It is closed (`CloseInput`): nothing more can be said to the harness.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub closed: bool,
    /// A prompt was steered into the turn: claude may run it as a part of
    /// its own after the turn's `result`, so the turn does not linger; its
    /// process ends with all of its parts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub steered: bool,
    /// The last prompt steered into the turn, unless it was handed back
    /// (`SteerUndelivered`): what the app's answer to it reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_steer: Option<PromptId>,
    /// Why the launch's first turn could not get its prompt (the delivery's
    /// error): the launch fails once the turn has ended, with its exit
    /// status and stderr if it exited on its own (that says more than a
    /// closed stdin does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undelivered: Option<String>,
    /// It was closed because the harness said the turn is done: a signal
    /// that ends the process now (the grace after its stdin closed) ends
    /// nothing of the turn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub done: bool,
    /// The harness process takes no prompt into its running turn
    /// (`NoSteers`): a steer is queued.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_steers: bool,
}

/// One session's machine.
#[derive(Debug, Clone)]
pub struct Session {
    config: Config,
    options: Options,
    state: State,
    /// The current or last launch. A finished launch stays so that a permit
    /// granted after it closed is still given back.
    launch: Option<Launch>,
    /// What the input being handled produced, before `Persist` is put in front.
    staged: Vec<Effect>,
    effects: VecDeque<Effect>,
    /// The record changed since the last `Persist`.
    dirty: bool,
    /// Prompts accepted by the input being handled: each is appended to
    /// the session's prompt log (`PersistPrompt`), which is all a queued
    /// message changes on disk.
    appended: Vec<Prompt>,
    /// Prompts whose one durable copy is their prompt log line: appended
    /// since the last `Persist` this run (a warm turn that takes one later,
    /// once its folder is recorded, still writes no record).
    logged: Vec<PromptId>,
    /// The input being handled took a prompt into a lingering process
    /// (`ContinueTurn`) and changed the record in no other way: the record
    /// on disk is the turn before, lingering.
    continued: bool,
    /// The state last reported in an `Event::State`.
    shown: Option<Shown>,
}

impl Session {
    /// A new start at `now`: its record is persisted first, its first
    /// prompt (if any) queued, and its launch begun (the copy wait).
    pub fn new(
        config: Config,
        options: Options,
        prompt: Option<NewPrompt>,
        now: Millis,
    ) -> Session {
        let budget = options.budget;
        let mut s = Session::around(config, options, Record::new());
        s.state.record.budget = budget;
        s.dirty = true;
        if let Some(prompt) = prompt {
            s.accept(prompt);
        }
        s.begin_launch(now, false);
        s.finish();
        s
    }

    /// A session rebuilt at `now` from its persisted record after a restart
    /// (or a kill -9). A recorded turn is killed first (`KillSurvivor`);
    /// then a start that had not started waits again and a started
    /// session runs its queue.
    pub fn restore(config: Config, options: Options, record: Record, now: Millis) -> Session {
        let mut s = Session::around(config, options, record);
        s.shown = Some(s.shown());
        if let Some(turn) = s.state.record.turn.clone() {
            match turn.process() {
                Some(process) => {
                    s.state.survivor = true;
                    s.staged.push(Effect::KillSurvivor {
                        seq: turn.seq,
                        process,
                    });
                }
                None => {
                    // Asked for but never spawned: it never had its prompt.
                    s.rec().turn = None;
                    s.requeue(&turn);
                }
            }
        }
        if !s.state.survivor {
            s.carry_on(now);
        }
        s.finish();
        s
    }

    fn around(config: Config, options: Options, record: Record) -> Session {
        Session {
            config,
            options,
            state: State {
                record,
                halted: false,
                survivor: false,
                timers: TimerTable::default(),
                stdin: Stdin::default(),
                signalled: None,
                snapshot: SnapshotGate::default(),
                rewinding: false,
            },
            launch: None,
            staged: Vec::new(),
            effects: VecDeque::new(),
            dirty: false,
            appended: Vec::new(),
            logged: Vec::new(),
            continued: false,
            shown: None,
        }
    }

    // ---- getters ----

    /// Everything the session knows.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// What `Persist` writes.
    pub fn record(&self) -> &Record {
        &self.state.record
    }

    /// The current or last launch (for the view's `waiting_for`).
    pub fn launch(&self) -> Option<&Launch> {
        self.launch.as_ref()
    }

    /// The state shown to the app.
    pub fn shown(&self) -> Shown {
        let r = &self.state.record;
        match r.stage {
            Stage::Closed => Shown::Closed,
            Stage::Failed => Shown::Failed,
            Stage::Starting => Shown::Pending,
            Stage::Started if self.launch_live() => Shown::Pending,
            Stage::Started if r.turn.as_ref().is_some_and(|t| !t.finished()) => Shown::Running,
            Stage::Started => Shown::Idle,
        }
    }

    /// Whether a launch is under way: the copy wait, the permit, or the
    /// first turn until its harness named its session.
    pub fn launch_live(&self) -> bool {
        self.launch.as_ref().is_some_and(Launch::is_pending)
    }

    /// Whether nothing more will be journalled: the session is closed and
    /// no turn of it is left (its end is journalled).
    pub fn journal_over(&self) -> bool {
        let r = &self.state.record;
        r.stage == Stage::Closed && r.turn.is_none() && self.state.snapshot.after.is_none()
    }

    /// The options the session was made with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The limits.
    pub fn config(&self) -> &Config {
        &self.config
    }

    // ---- handle_* ----

    /// Applies one input at time `now`. Refused and ignored inputs change
    /// nothing and emit nothing.
    pub fn handle(&mut self, now: Millis, input: Input) -> Outcome {
        let outcome = match input {
            Input::Message(prompt) => self.handle_message(now, prompt),
            Input::Fork {
                parent,
                native_id,
                cut,
            } => self.handle_fork(parent, native_id, cut),
            Input::RewindBegin { to_turn } => self.handle_rewind_begin(to_turn),
            Input::RewindOver { cut } => self.handle_rewind_over(now, cut),
            Input::Steer(text) => self.handle_steer(now, text),
            Input::SetBudget(budget) => self.handle_set_budget(now, budget),
            Input::Stop => self.handle_stop(now),
            Input::Interrupt => self.handle_interrupt(now),
            Input::Resume => self.handle_resume(now),
            Input::Close => self.handle_close(now),
            Input::Relaunch(mode) => self.handle_relaunch(now, mode),
            Input::ServiceStop => self.handle_service_stop(now),
            Input::Launch(input) => self.handle_launch(now, input),
            Input::Timeout => self.handle_timeout(now),
            Input::TurnSpawned { seq, process } => self.handle_spawned(now, seq, process),
            Input::SpawnFailed { seq, reason } => self.handle_spawn_failed(now, seq, reason),
            Input::PromptUndelivered { seq, error } => self.handle_undelivered(now, seq, error),
            Input::NoSteers { seq } => self.handle_no_steers(seq),
            Input::NativeId { seq, native_id } => self.handle_native_id(now, seq, native_id),
            Input::TurnUsage { seq, report } => self.handle_usage(now, seq, report),
            Input::TurnFinished { seq, failed, usage } => {
                self.handle_finished(now, seq, failed, usage)
            }
            Input::SteerUndelivered { seq, prompt, text } => {
                self.handle_steer_undelivered(now, seq, prompt, text)
            }
            Input::TurnEnded { seq, exit, detail } => self.handle_ended(now, seq, exit, detail),
            Input::LeftBehind { seq } => self.handle_left_behind(now, seq),
            Input::Snapshotted { turn, at } => self.handle_snapshotted(now, turn, at),
            Input::SurvivorGone { seq } => self.handle_survivor_gone(now, seq),
            Input::OutputCapped { seq, cap } => self.handle_output_capped(now, seq, cap),
            Input::PersistFailed { error } => self.handle_persist_failed(now, error),
            Input::ApprovalRequested { seq, request } => {
                self.handle_approval_requested(now, seq, request)
            }
            Input::ApprovalDecided {
                id,
                decision,
                message,
            } => self.handle_approval_decided(id, decision, message),
        };
        self.finish();
        outcome
    }

    // ---- poll_* ----

    /// The next effect to carry out, oldest first.
    pub fn poll_effect(&mut self) -> Option<Effect> {
        let effect = self.effects.pop_front();
        if effect.is_none() {
            // Drained: its buffer goes too (see `finish`).
            self.effects = VecDeque::new();
        }
        effect
    }

    /// The earliest deadline and which timer it is: the session's own
    /// (its [`TimerTable`]), an approval request's, or the launch's (poll,
    /// copy limit); of two at once, in that order.
    pub fn poll_timeout(&self) -> Option<(Millis, Timer)> {
        let own = self.state.timers.next();
        let approval = self.approval_deadline().map(|at| (at, Timer::Approval));
        let launch = self
            .launch
            .as_ref()
            .and_then(Launch::poll_timeout)
            .map(|(at, t)| (at, Timer::Launch(t)));
        [own, approval, launch]
            .into_iter()
            .flatten()
            .min_by_key(|(at, _)| *at)
    }

    // ---- helpers shared by the handlers ----

    /// The record, marked changed: the input will emit `Persist`.
    fn rec(&mut self) -> &mut Record {
        self.dirty = true;
        &mut self.state.record
    }

    fn emit(&mut self, event: Event) {
        self.staged.push(Effect::Emit(event));
    }

    fn set_error(&mut self, failure: Failure) {
        self.rec().error = Some(failure.clone());
        self.emit(Event::Error { failure });
    }

    /// Queues a prompt under the next number; its event carries its text
    /// (cut to fit a journal line). The record is not marked for `Persist`:
    /// the prompt goes to the prompt log (`PersistPrompt`), and a record
    /// read back with its log holds it ([`Record::with_logged`]).
    fn accept(&mut self, new: NewPrompt) {
        let NewPrompt {
            text,
            choice,
            attachments,
        } = new;
        let (shown, text_truncated) = excerpt(&text, PROMPT_TEXT_MAX);
        let r = &mut self.state.record;
        let id = r.next_prompt;
        r.next_prompt += 1;
        let prompt = Prompt {
            id,
            text: text.into(),
            choice,
            attachments: attachments.clone(),
        };
        r.queue.push_back(prompt.clone());
        self.appended.push(prompt);
        self.emit(Event::PromptQueued {
            prompt: id,
            text: shown,
            text_truncated,
            attachments,
        });
    }

    /// Puts a turn's prompt back in the queue, in its place.
    fn requeue(&mut self, turn: &Turn) {
        self.enqueue(turn.prompt.clone());
        self.emit(Event::PromptRequeued {
            prompt: turn.prompt.id,
            turn: turn.seq,
        });
    }

    /// Puts a prompt that left the queue back in it, before every prompt
    /// accepted after it: prompts run in the order they were accepted,
    /// whatever way back they took (a requeued turn, a steer that did not
    /// reach its turn).
    fn enqueue(&mut self, prompt: Prompt) {
        let queue = &mut self.rec().queue;
        let at = queue.partition_point(|p| p.id < prompt.id);
        queue.insert(at, prompt);
    }

    /// After a turn is gone (or at a restore): a start that had not started
    /// begins its launch (and so waits again); a started session runs its queue.
    fn carry_on(&mut self, now: Millis) {
        let r = &self.state.record;
        match r.stage {
            Stage::Starting if !self.state.halted && !self.launch_live() && r.turn.is_none() => {
                self.begin_launch(now, false)
            }
            Stage::Started => self.pump(now),
            _ => {}
        }
    }

    /// Starts the next queued prompt if the session may run a turn now.
    fn pump(&mut self, now: Millis) {
        let r = &self.state.record;
        let may = !self.state.halted
            && r.stage == Stage::Started
            && !self.launch_live()
            && !r.paused
            && !self.state.rewinding
            && !r.queue.is_empty()
            && !self.budget_spent();
        if may && r.turn.is_none() {
            if self.folder_recorded(now) {
                self.spawn_turn(false);
            }
        } else if may && self.lingering() {
            if !self.takes_in_place() {
                self.end_linger(now);
            } else if self.folder_recorded(now) {
                self.continue_turn(now);
            }
        }
    }

    /// Takes the head of the queue into a new turn and asks for its process.
    /// Not marked for `Persist`: until `TurnSpawned` the turn has no process
    /// and never had its prompt, and a record without it restores the same
    /// (the prompt at the head of the queue). The write this saves is one
    /// per launch while a startup permit is held.
    fn spawn_turn(&mut self, launch: bool) {
        let plan_only = self.options.plan_only;
        let r = &mut self.state.record;
        let Some(prompt) = r.queue.pop_front() else {
            return;
        };
        let seq = r.next_turn;
        r.next_turn += 1;
        // Marked as carried once the process is there (`TurnSpawned`),
        // when the record is written.
        let cut = r.native_id.as_ref().and(r.cut.clone()).map(|c| Cut {
            carried_by: None,
            ..c
        });
        self.staged.push(Effect::SpawnTurn {
            seq,
            prompt: prompt.text.to_string(),
            resume: r.native_id.clone(),
            cut,
            plan_only,
            choice: self.options.choice.with(&r.chosen).with(&prompt.choice),
            attachments: prompt.attachments.clone(),
        });
        r.turn = Some(Turn::asked(seq, prompt, launch));
    }

    /// The model and effort in force: the start's, with what messages
    /// chose since over it.
    pub fn choice_in_force(&self) -> ModelChoice {
        self.options.choice.with(&self.state.record.chosen)
    }

    /// Puts the durable writes in front of what the input produced (each
    /// accepted prompt's `PersistPrompt`, unless the record that follows
    /// holds it as its turn's, then `Persist` when the record changed
    /// otherwise) and reports a change of the shown state last.
    ///
    /// A new session's first state is its first event (before what its
    /// start queues and begins), so a journal opens with it.
    fn finish(&mut self) {
        let dirty = std::mem::take(&mut self.dirty);
        let turn = self.state.record.turn.as_ref();
        let running = turn.map(|t| t.prompt.id);
        // A prompt just accepted that went straight to a lingering process
        // writes no record: its log append is its one durable write, and
        // the record on disk (the turn before, lingering) with the log and
        // the journal's `turn_started` is the new turn
        // (`Record::with_journal_tail`), so no record write stands in front
        // of the harness or after it. Not while a record write is owed:
        // the record on disk would be older than the turn before.
        let logged =
            |id: PromptId| self.appended.iter().any(|p| p.id == id) || self.logged.contains(&id);
        let continued = std::mem::take(&mut self.continued);
        let ahead = dirty
            && continued
            && turn.is_some_and(|t| t.warm && logged(t.prompt.id))
            && !self.state.timers.is_set(Deadline::PersistRetry);
        for prompt in std::mem::take(&mut self.appended) {
            // Otherwise a prompt that went straight to a turn is in the
            // record the `Persist` below writes, its one durable write.
            if ahead || !(dirty && running == Some(prompt.id)) {
                self.logged.push(prompt.id);
                self.effects.push_back(Effect::PersistPrompt(prompt));
            }
        }
        if dirty && !ahead {
            self.logged.clear();
            self.state.timers.stop(Deadline::PersistRetry);
            self.effects.push_back(Effect::Persist);
        } else if let Some(at) = self
            .staged
            .iter()
            .position(|e| matches!(e, Effect::SpawnTurn { .. }))
        {
            // No `Persist` comes before this spawn: the record on disk does
            // not name the turn.
            if let Effect::SpawnTurn { seq, .. } = self.staged[at] {
                self.staged.insert(at, Effect::NoteSpawn { seq });
            }
        }
        let shown = self.shown();
        let first = self.shown.is_none();
        if first {
            self.shown = Some(shown);
            self.effects
                .push_back(Effect::Emit(Event::State { state: shown }));
        }
        // Taken, not drained: a waiting session keeps no buffer it no
        // longer uses (10,000 of them add up).
        self.effects.extend(std::mem::take(&mut self.staged));
        if self.shown != Some(shown) {
            self.shown = Some(shown);
            self.effects
                .push_back(Effect::Emit(Event::State { state: shown }));
        }
    }
}
