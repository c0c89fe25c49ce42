//! The driver: feeds one input to a locked session's machine, drains its
//! effects and carries each out in order, feeds back the answers known at
//! once (a watch armed, a free permit, a spawn) under the same lock, then
//! journals the pass's events, re-arms the timer from `poll_timeout` (only
//! when it changed) and tells whoever waits for a turn that it is gone.
//!
//! `Persist` is always the first effect of the input that emits it. For an
//! app command ([`Runtime::command`]) a failed write puts the snapshot taken
//! before `handle` back and drops the rest: the app is told nothing changed.
//! After any other input the world has already changed (a process exited, a
//! timer fired): the machine is told at once (`PersistFailed`), before the
//! effects after the write, and decides what waits for the record.

use std::collections::VecDeque;

use room_machines::launch::Phase;
use room_machines::session::{
    DecidedBy, Effect, EndWhy, Event, Exit, Input, LaunchInput, Outcome, Refusal as Refused,
};
use serde_json::{json, Value};

use super::spawn_order::SpawnOrder;
use super::Runtime;
use crate::attachments::store::ImageStore;
use crate::error::Refusal;
use crate::journal::NewEvent;
use crate::sessions::failure_text::describe;
use crate::sessions::{prompt_log, turn_key, view, Hosted};

/// What one pass over a session collects while it carries out effects.
#[derive(Default)]
pub(super) struct Pass {
    /// Answers known at once, fed back in under the same lock.
    pub inputs: VecDeque<Input>,
    /// Events to journal, in order.
    pub events: Vec<NewEvent>,
    /// The same events, logged when they are journalled: a log line is a
    /// write to stderr, kept off the way to a spawn.
    pub logged: Vec<Event>,
    /// Events were staged in the journal ([`Runtime::stage_events`]); the
    /// pass's end makes them durable.
    pub staged: bool,
}

/// The refusal an app gets for the machine's; `waiting` is how many prompts
/// the session's queue holds.
pub(super) fn refusal(id: &str, why: Refused, waiting: usize) -> Refusal {
    match why {
        Refused::QueueFull => Refusal::new(
            429,
            "queue_full",
            format!(
                "Session {id} has {waiting} prompts waiting, the most it holds (max_queued_prompts); send this one once some have run."
            ),
        ),
        Refused::Closed => Refusal::finished(id, "closed"),
        Refused::Failed => Refusal::finished(id, "failed"),
        Refused::Starting => Refusal::new(
            409,
            "session_starting",
            format!(
                "Session {id} is still starting; it cannot be relaunched before its harness has started."
            ),
        ),
        Refused::ServiceStopping => Refusal::new(
            503,
            "service_stopping",
            format!("room-core is stopping; session {id} takes commands again once it is back."),
        ),
        Refused::NoApproval => Refusal::new(
            404,
            "approval_not_found",
            format!("Session {id} has no approval request with that number."),
        ),
        Refused::ApprovalAnswered => Refusal::new(
            409,
            "approval_answered",
            format!("That approval request of session {id} was answered already."),
        ),
        Refused::BudgetSpent => Refusal::new(
            409,
            "budget_spent",
            format!(
                "Session {id} has spent its budget; raise it with POST /v1/sessions/{id}/budget."
            ),
        ),
        Refused::TurnRunning => Refusal::new(
            409,
            "turn_running",
            format!(
                "Session {id} has a turn running or about to start; send this once that turn has ended (POST /v1/sessions/{id}/interrupt ends it now)."
            ),
        ),
        Refused::FolderRecording => Refusal::new(
            409,
            "diff_pending",
            format!(
                "Session {id}'s last turn has ended and its folder is being recorded; rewind once its turn_diff event is journalled."
            ),
        ),
        Refused::NoSuchTurn => Refusal::new(
            409,
            "no_such_turn",
            format!("Session {id} has no turn of that number that has ended."),
        ),
        Refused::Rewinding => Refusal::new(
            409,
            "rewind_running",
            format!("Session {id} is being rewound already; send this once that rewind has answered."),
        ),
    }
}

impl Runtime {
    /// Feeds `input` to the locked session `s` and carries out everything
    /// that follows.
    pub(crate) fn drive(&self, s: &mut Hosted, input: Input) -> Outcome {
        let outcome = self.step(s, input);
        self.pass(s, Pass::default());
        outcome
    }

    /// An app command: snapshot, handle, write the record first or roll
    /// back, then carry out the rest. `Err` changed nothing.
    pub(super) fn command(&self, s: &mut Hosted, input: Input) -> Result<Outcome, Refusal> {
        let (before, permit_at) = (s.machine.clone(), s.permit_at);
        let outcome = self.step(s, input);
        if let Outcome::Refused(why) = outcome {
            return Err(refusal(&s.id, why, s.machine.record().queue.len()));
        }
        let pass = match self.persist_first(s) {
            Ok(pass) => pass,
            Err(e) => {
                log::error!(
                    "{}: cannot write its record: {e}; the command is undone",
                    s.id
                );
                s.machine = before;
                s.permit_at = permit_at;
                if let Some(r) = &mut s.recording {
                    r.unrecord_last();
                }
                return Err(Refusal::new(
                    500,
                    "state_unwritable",
                    format!(
                        "Cannot record session {} in {}: {e}. Nothing was changed.",
                        s.id,
                        self.config.state_dir.display()
                    ),
                ));
            }
        };
        self.pass(s, pass);
        Ok(outcome)
    }

    /// Carries out the input's durable writes, which come first (each
    /// accepted prompt's append to the prompt log, then the record when it
    /// changed otherwise): `Err` when one failed, with what was appended
    /// before it cut back off the log and nothing else done. The pass it
    /// begins goes on with [`Runtime::pass`].
    pub(super) fn persist_first(&self, s: &mut Hosted) -> std::io::Result<Pass> {
        let mut pass = Pass::default();
        let mut appended_from = None;
        while let Some(effect) = s.machine.poll_effect() {
            if let Some(r) = &mut s.recording {
                r.effect(&effect);
            }
            let written = match &effect {
                Effect::PersistPrompt(prompt) => s.prompts.append(prompt).map(|before| {
                    appended_from.get_or_insert(before);
                }),
                Effect::Persist => self.write(s),
                _ => {
                    self.carry_out(s, effect, &mut pass);
                    break;
                }
            };
            if let Err(e) = written {
                if let Some(len) = appended_from {
                    if let Err(cut) = s.prompts.truncate(len) {
                        log::error!(
                            "{}: cannot undo its prompt log's append ({cut}): a restart may queue the refused prompt",
                            s.id
                        );
                    }
                }
                return Err(e);
            }
        }
        Ok(pass)
    }

    /// Drains the machine, feeding back what is answered at once, then
    /// finishes the pass.
    pub(super) fn pass(&self, s: &mut Hosted, mut pass: Pass) {
        loop {
            while let Some(effect) = s.machine.poll_effect() {
                if let Some(r) = &mut s.recording {
                    r.effect(&effect);
                }
                self.carry_out(s, effect, &mut pass);
            }
            let Some(input) = pass.inputs.pop_front() else {
                break;
            };
            self.step(s, input);
        }
        self.finish(s, pass);
    }

    /// Hands one input to the machine (recorded when timelines are), and
    /// measures what only the runtime measures: a permit's grant, and the
    /// harness startup from it to the event that completes the launch.
    pub(super) fn step(&self, s: &mut Hosted, input: Input) -> Outcome {
        let now = self.clock.now();
        let granted = input == Input::Launch(LaunchInput::PermitGranted);
        let named = matches!(input, Input::NativeId { .. });
        let was_live = s.machine.launch_live();
        let recorded = s.recording.is_some().then(|| input.clone());
        let shown = log::log_enabled!(log::Level::Debug).then(|| format!("{input:?}"));
        let outcome = s.machine.handle(now, input);
        if let Some(shown) = shown {
            log::debug!("{}: {shown} -> {outcome:?}", s.id);
        }
        if let (Some(r), Some(input)) = (&mut s.recording, recorded) {
            r.input(now, input, outcome);
        }
        if granted && s.machine.launch_live() {
            s.permit_at = Some(now);
        }
        if was_live && !s.machine.launch_live() {
            let started = s
                .machine
                .launch()
                .is_some_and(|l| matches!(l.state().phase, Phase::Started { .. }));
            if let Some(at) = s.permit_at.take().filter(|_| named && started) {
                let ms = now.saturating_sub(at);
                s.extras.agent_start_ms = Some(ms);
                self.metrics.agent_start.observe_ms(ms);
            }
        }
        outcome
    }

    /// Carries out one effect.
    fn carry_out(&self, s: &mut Hosted, effect: Effect, pass: &mut Pass) {
        match effect {
            Effect::Persist => {
                if let Err(e) = self.write(s) {
                    log::error!("{}: cannot write its record: {e}", s.id);
                    let error = e.to_string();
                    self.step(s, Input::PersistFailed { error });
                }
            }
            Effect::PersistPrompt(prompt) => {
                // Only an app command accepts a prompt, and its writes come
                // first (`persist_first`): this is never reached.
                if let Err(e) = s.prompts.append(&prompt) {
                    log::error!("{}: cannot log prompt {}: {e}", s.id, prompt.id);
                }
            }
            Effect::NoteSpawn { seq } => {
                // A failed note does not stop the spawn: the prompt is
                // handed over only once a written record names the turn.
                match self.store.note_spawn(&s.id, &turn_key(&s.id, seq)) {
                    Ok(()) => s.spawn_noted = true,
                    Err(e) => log::error!("{}: cannot note turn {seq} before its spawn: {e}", s.id),
                }
            }
            Effect::Launch(e) => self.launch_effect(s, e, pass),
            Effect::SpawnTurn {
                seq,
                prompt,
                resume,
                cut,
                plan_only,
                choice,
                attachments,
            } => {
                let order = SpawnOrder {
                    prompt,
                    attachments,
                    resume,
                    cut,
                    plan_only,
                    choice,
                };
                self.spawn_turn(s, pass, seq, order)
            }
            Effect::Snapshot { turn, at } => self.ask_snapshot(s, pass, turn, at),
            Effect::DeliverPrompt { seq } => self.deliver(s, pass, seq),
            Effect::Signal { seq, signal } => self.signal_turn(s, seq, signal),
            Effect::AbandonTree { seq } => self.abandon_tree(s, seq),
            Effect::KillSurvivor { seq, process } => self.kill_survivor(s, seq, process),
            Effect::CloseInput { seq } => self.close_input(s, seq),
            Effect::InterruptTurn { seq } => self.interrupt_turn(s, pass, seq),
            Effect::Steer { seq, prompt, text } => self.steer(s, pass, seq, prompt, text),
            Effect::ContinueTurn {
                seq,
                prompt,
                switch,
                attachments,
            } => self.continue_turn(s, pass, seq, (prompt, attachments), switch),
            Effect::AnswerApproval {
                seq,
                harness_ref,
                tool,
                decision,
                by,
                message,
            } => self.answer_approval(s, pass, seq, (harness_ref, tool), (decision, by, message)),
            Effect::Emit(event) => {
                if let Event::TurnEnded {
                    exit, by, usage, ..
                } = &event
                {
                    self.metrics.turns.inc(turn_outcome(*exit, *by));
                    if let Some(used) = usage {
                        self.metrics.tokens.add(s.start.harness.name(), used);
                    }
                }
                pass.events.push(journalled(&event, s.start.harness.name()));
                pass.logged.push(event);
            }
        }
    }

    /// Writes the session's record now: its waiting prompts by number, their
    /// texts being in the prompt log (which is then compacted).
    pub(super) fn write(&self, s: &mut Hosted) -> std::io::Result<()> {
        let record = s.record();
        let mut value = serde_json::to_value(&record)?;
        if s.prompts.complete {
            prompt_log::strip_queue(&mut value);
        }
        self.store.save(&s.id, &value)?;
        if s.prompts.complete {
            s.prompts.compact(record.core.queue.iter());
        }
        // Once the record no longer names a prompt, its images go.
        if s.images_arriving == 0 {
            let named = record
                .core
                .queue
                .iter()
                .chain(record.core.turn.iter().map(|t| &t.prompt));
            ImageStore::of(self.store.dir(), &s.id).prune(named.flat_map(|p| &p.attachments));
        }
        let spawned = record
            .turn_process
            .as_ref()
            .is_some_and(|t| t.pid.is_some());
        // The record names what the note named (or the turn is over).
        if s.spawn_noted && (spawned || record.core.turn.is_none()) {
            self.store.drop_spawn_note(&s.id);
            s.spawn_noted = false;
        }
        Ok(())
    }

    /// Hands the pass's events to the journal to write ahead of its next
    /// append, with no fdatasync now, and logs them: what a prompt's line
    /// must not wait for, while the harness's output, whichever thread
    /// appends it, still comes after them. The pass's end makes them
    /// durable, and no reader sees them before.
    pub(super) fn stage_events(&self, s: &Hosted, pass: &mut Pass) {
        for event in pass.logged.drain(..) {
            log_event(&s.id, s.start.harness.name(), &event);
        }
        for event in pass.events.drain(..) {
            s.journal.stage(event);
            pass.staged = true;
        }
    }

    /// Appends what was staged and the pass's events to the journal (one
    /// write, one fdatasync), so they are durable before anyone can read
    /// them, and logs them.
    pub(super) fn flush_events(&self, s: &Hosted, pass: &mut Pass) {
        for event in pass.logged.drain(..) {
            log_event(&s.id, s.start.harness.name(), &event);
        }
        let events = std::mem::take(&mut pass.events);
        let at = crate::clock::unix_ms();
        let written = if events.is_empty() {
            if !std::mem::take(&mut pass.staged) {
                return;
            }
            s.journal.flush(at).map(drop)
        } else {
            pass.staged = false;
            s.journal.append(events, at).map(drop)
        };
        if let Err(e) = written {
            log::error!("{}: cannot journal its events: {e}", s.id);
            let what = format!("the event journal of {}", s.id);
            self.store
                .failed(&what, &std::io::Error::other(e.to_string()));
        }
    }

    /// The end of a pass: events journalled, a failed write tried again,
    /// what belonged to a finished turn dropped, the timer re-armed,
    /// waiters told, the timeline written.
    fn finish(&self, s: &mut Hosted, mut pass: Pass) {
        self.flush_events(s, &mut pass);
        super::follow::close_if_over(s);
        let current = s.machine.record().turn.as_ref().map(|t| t.seq);
        if s.live.as_ref().is_some_and(|l| Some(l.seq) != current) {
            s.live = None;
        }
        if s.supervised
            .as_ref()
            .is_some_and(|(q, _)| Some(*q) != current)
        {
            s.supervised = None;
        }
        self.rearm(s);
        let mut i = 0;
        while i < s.waiters.len() {
            if Some(s.waiters[i].0) == current {
                i += 1;
            } else {
                (s.waiters.swap_remove(i).1)();
            }
        }
        if let Some(r) = &s.recording {
            r.save();
        }
    }

    /// Re-arms the timer when the machine's next deadline changed.
    fn rearm(&self, s: &mut Hosted) {
        let next = s.machine.poll_timeout().map(|(at, _)| at);
        if next != s.armed {
            s.armed = next;
            if let Some(at) = next {
                self.timer.arm(s.me.clone(), at);
            }
        }
    }

    /// Calls `notify` once the session's turn `seq` is gone (at once if it
    /// is already); `false` for an unknown session.
    pub fn when_turn_gone(
        &self,
        id: &str,
        seq: room_machines::session::TurnSeq,
        notify: Box<dyn FnOnce() + Send>,
    ) -> bool {
        let Some(s) = self.session(id) else {
            return false;
        };
        let mut s = crate::sessions::lock(&s);
        if s.machine.turn_to_await() == Some(seq) {
            s.waiters.push((seq, notify));
        } else {
            drop(s);
            notify();
        }
        true
    }
}

/// How a turn ended, as `room_core_turns_total` counts it.
fn turn_outcome(exit: Option<Exit>, by: Option<EndWhy>) -> &'static str {
    match by {
        Some(EndWhy::Stop) => "stopped",
        Some(EndWhy::Interrupt) => "interrupted",
        Some(EndWhy::Close) => "closed",
        Some(EndWhy::Restart) => "restarted",
        _ if exit.is_some_and(Exit::success) => "succeeded",
        _ => "failed",
    }
}

/// The journal's line for one of the machine's events: a failure in words.
fn journalled(event: &Event, harness: &str) -> NewEvent {
    match event {
        Event::Error { failure } => {
            NewEvent::new("error", &json!({ "message": describe(failure, harness) }))
        }
        Event::PromptFailed { prompt, failure } => NewEvent::new(
            "prompt_failed",
            &json!({ "prompt": prompt, "error": describe(failure, harness) }),
        ),
        Event::ApprovalRequested {
            approval,
            turn,
            tool,
            input,
            reason,
        } => NewEvent::new(
            "approval_requested",
            &json!({ "id": approval, "turn": turn, "tool": tool,
                     "input": view::tool_input(input), "reason": reason }),
        ),
        Event::ApprovalResolved {
            approval,
            turn,
            decision,
            by,
            message,
        } => NewEvent::new(
            "approval_resolved",
            &json!({ "id": approval, "turn": turn, "decision": decision,
                     "by": decided_by(*by), "message": message }),
        ),
        _ => NewEvent::tagged(event),
    }
}

/// Who decided an approval, as `approval_resolved` says it: `app`,
/// `modes`, `timeout`, `too_many`, `turn_gone`, or what ended the turn
/// (`stop`, `interrupt`, `close`, ...).
fn decided_by(by: DecidedBy) -> Value {
    match by {
        DecidedBy::TurnEnding(why) => json!(why),
        other => json!(other),
    }
}

/// Logs what the journal records, at a level that fits it.
fn log_event(id: &str, harness: &str, event: &Event) {
    match event {
        Event::Error { failure } => log::warn!("{id}: {}", describe(failure, harness)),
        // Its text is in the journal; a log line says how long it is.
        Event::PromptQueued {
            prompt,
            text,
            text_truncated,
            attachments,
        } => log::debug!(
            "{id}: prompt {prompt} queued ({} bytes{}, {} images)",
            text.len(),
            if *text_truncated { ", cut" } else { "" },
            attachments.len()
        ),
        Event::State { .. } | Event::NativeId { .. } => log::debug!("{id}: {event:?}"),
        _ => log::info!("{id}: {event:?}"),
    }
}
