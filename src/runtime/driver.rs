//! The driver: applies an input to a session's launch, drains its effects
//! and carries each out in order, then re-arms the timer from `poll_timeout`
//! (only if the deadline changed). Effects that answer at once (`Watch`,
//! `Observe`, a free permit, a start with nothing to run) feed their answer
//! back in the same pass, so one call runs the launch as far as it can go.
//! The launch decides when the status file is read; the driver only reads it
//! when asked (`Observe`) and passes on what the watch says.

use std::collections::VecDeque;

use room_machines::launch::{Effect, Phase, Reason, WaitEnd};
use room_machines::session::Event as SessionEvent;
use room_machines::{Input, MarkError, Outcome};

use super::Runtime;
use crate::files;
use crate::sessions::{lock, Session, SessionState};

impl Runtime {
    /// Feeds `input` to session `id`'s launch (ignored if it has none).
    pub(crate) fn feed(&self, id: &str, input: Input) {
        let Some(s) = self.session(id) else {
            return;
        };
        let mut s = lock(&s);
        if s.launch.is_none() {
            // The launch is over (closed while queued for a permit): a permit
            // handed to it must go back, or it would be lost.
            if input == Input::PermitGranted {
                self.release_permit();
            }
            return;
        }
        self.drive(&mut s, Some(input));
    }

    /// Steps the launch with `input` and everything that follows from it.
    pub(crate) fn drive(&self, s: &mut Session, input: Option<Input>) {
        let mut inputs: VecDeque<Input> = input.into_iter().collect();
        loop {
            while let Some(effect) = s.launch.as_mut().and_then(|l| l.poll_effect()) {
                if let Some(run) = &mut s.recording {
                    run.record_effect(&effect);
                }
                self.effect(s, effect, &mut inputs);
            }
            let Some(input) = inputs.pop_front() else {
                break;
            };
            let now = self.clock.now();
            if input == Input::PermitGranted {
                s.permit_at = Some(now);
            }
            let Some(launch) = s.launch.as_mut() else {
                if input == Input::PermitGranted {
                    self.release_permit();
                }
                continue;
            };
            let shown = log::log_enabled!(log::Level::Debug).then(|| format!("{input:?}"));
            let recorded = s.recording.is_some().then(|| input.clone());
            let outcome = launch.handle(now, input);
            if let (Some(run), Some(input)) = (&mut s.recording, recorded) {
                run.record_input(now, input, outcome);
            }
            if outcome == Outcome::Ignored {
                // Late timers and duplicate watch events land here; harmless.
                log::debug!("{}: ignored {}", s.rec.id, shown.unwrap_or_default());
            }
        }
        self.rearm(s);
        self.settle(s);
        // WRITE SIDE (follow.rs): the pass's events and state change.
        self.journal_state(s);
    }

    fn effect(&self, s: &mut Session, effect: Effect, inputs: &mut VecDeque<Input>) {
        log::debug!("{}: {effect:?}", s.rec.id);
        if effect == Effect::Observe {
            let observation = files::observe(&s.rec.start.folder);
            inputs.push_back(Input::Observed(observation));
            return;
        }
        let id = s.rec.id.clone();
        match effect {
            // Answered above.
            Effect::Observe => {}
            // With `watch: false` there is no watch and no answer: the
            // launch polls.
            Effect::Watch => {
                if let Some(w) = &self.watch {
                    let watched = w.add(&id, &s.rec.start.folder);
                    inputs.push_back(Input::Watched(watched));
                }
            }
            Effect::Unwatch => {
                if let Some(w) = &self.watch {
                    w.remove(&id);
                }
            }
            Effect::MarkInFuture { ahead } => log::warn!(
                "{id}: {} is dated {} s ahead of this machine's clock: clock trouble, not a fresh copy",
                files::status_file(&s.rec.start.folder).display(),
                ahead / 1000
            ),
            // An empty file is what a read between a writer's truncation and
            // its write sees: not worth a warning.
            Effect::MalformedMark(MarkError::Empty) => {
                log::debug!("{id}: the status file is empty; treated as missing")
            }
            Effect::MalformedMark(e) => log::warn!(
                "{id}: {} is not a status mark ({e}); treated as missing",
                files::status_file(&s.rec.start.folder).display()
            ),
            Effect::WaitFor { on, until } => {
                let limit_ms =
                    until.saturating_sub(s.launch.as_ref().map_or(0, |l| l.state().began));
                log::info!("{id}: waiting for the project copy ({on:?}) up to {limit_ms} ms");
                // WRITE SIDE (follow.rs).
                self.journal_event(s, SessionEvent::CopyWaitBegan { on, limit_ms });
            }
            Effect::WaitEnded { why, waited } => {
                match &why {
                    WaitEnd::CopyFailed(reason) => log::warn!(
                        "{id}: the project copy failed ({}); starting the harness after {waited} ms",
                        if reason.is_empty() { "no reason given" } else { reason }
                    ),
                    WaitEnd::NoCopy | WaitEnd::Landed if waited == 0 => {
                        log::debug!("{id}: copy check over at once: {why:?}")
                    }
                    _ => log::info!("{id}: copy wait over after {waited} ms: {why:?}"),
                }
                // WRITE SIDE (follow.rs): staged, so the spawn that may follow
                // does not wait for the journal.
                self.journal_event(
                    s,
                    SessionEvent::CopyWaitEnded {
                        why: why.clone(),
                        waited_ms: waited,
                    },
                );
                self.metrics.copy_wait.observe_ms(waited);
                s.rec.copy = Some(why);
            }
            Effect::AskPermit => {
                if self.permits.ask(&id) {
                    inputs.push_back(Input::PermitGranted);
                }
            }
            Effect::StartHarness => self.start_harness(s, inputs),
            Effect::ReleasePermit => self.release_permit(),
            Effect::PauseQueue => {
                s.rec.paused = true;
                self.persist(s);
            }
            // Settled from the launch's phase once the pass is over.
            Effect::Closed | Effect::Ended(_) => {}
        }
    }

    /// Gives a permit back, handing it to the oldest queued launch.
    pub(crate) fn release_permit(&self) {
        if let Some(next) = self.permits.release() {
            let _ = self
                .events
                .send(super::Event::Input(next, Input::PermitGranted));
        }
    }

    /// Re-arms the timer when the launch's next deadline changed.
    fn rearm(&self, s: &mut Session) {
        let next = s
            .launch
            .as_ref()
            .and_then(|l| l.poll_timeout())
            .map(|(at, _)| at);
        if next != s.armed {
            s.armed = next;
            if let Some(at) = next {
                self.timer.arm(s.me.clone(), at);
            }
        }
    }

    /// Applies a finished launch to the session: started, closed or ended.
    fn settle(&self, s: &mut Session) {
        let Some(phase) = s.launch.as_ref().map(|l| l.state().phase.clone()) else {
            return;
        };
        match phase {
            Phase::Started { native_id } => {
                let now = self.clock.now();
                if let Some(at) = s.permit_at.take() {
                    let ms = now.saturating_sub(at);
                    s.rec.agent_start_ms = Some(ms);
                    self.metrics.agent_start.observe_ms(ms);
                }
                if native_id.is_some() {
                    s.rec.native_id = native_id;
                }
                s.rec.waiting_start = false;
                s.rec.state = if s.turn.is_some() {
                    SessionState::Running
                } else {
                    SessionState::Idle
                };
                log::info!("{}: harness started", s.rec.id);
            }
            Phase::Closed => {
                s.rec.state = SessionState::Closed;
                s.rec.waiting_start = false;
            }
            Phase::Ended(Reason::ServiceStop) => {
                // Keep `waiting_start`: the next run waits again.
            }
            Phase::Ended(Reason::HarnessFailed(msg)) => {
                log::error!("{}: harness failed to start: {msg}", s.rec.id);
                self.journal_error(s, &msg); // WRITE SIDE (follow.rs)
                s.rec.state = SessionState::Failed;
                s.rec.error = Some(msg);
                s.rec.waiting_start = false;
            }
            _ => return,
        }
        let id = s.rec.id.clone();
        if let (Some(dir), Some(run)) = (&self.config.record_timelines, s.recording.take()) {
            super::record::append(dir, &id, self.config.launch(), run);
        }
        s.launch = None;
        s.armed = None;
        self.permits.cancel(&id);
        self.persist(s);
        self.pump(s);
    }

    /// Writes the session's record; a failed write is logged, not fatal.
    pub(crate) fn persist(&self, s: &Session) {
        if let Err(e) = self.store.save(&s.rec.id, &s.rec) {
            log::error!("{}: cannot persist: {e}", s.rec.id);
        }
        self.journal_state(s); // WRITE SIDE (follow.rs)
    }
}
