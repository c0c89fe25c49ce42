//! The launch's effects, carried out: the status file's watch and reads,
//! the startup permits, and what the copy wait tells the log, the metrics
//! and the session view. The launch decides; this only does.

use room_machines::launch::WaitEnd;
use room_machines::session::{Input, LaunchEffect, LaunchInput};
use room_machines::MarkError;

use super::driver::Pass;
use super::job::Job;
use super::{Runtime, ON_POOL};
use crate::files;
use crate::sessions::Hosted;

impl Runtime {
    /// Carries out one of the launch's effects.
    pub(super) fn launch_effect(&self, s: &mut Hosted, effect: LaunchEffect, pass: &mut Pass) {
        let id = s.id.clone();
        let folder = &s.start.folder;
        match effect {
            // With `watch: false` there is no watch and no answer: the
            // launch polls.
            LaunchEffect::Watch => {
                if let Some(w) = &self.watch {
                    let watched = w.add(&id, folder);
                    pass.inputs
                        .push_back(Input::Launch(LaunchInput::Watched(watched)));
                }
            }
            LaunchEffect::Unwatch => self.unwatch(&id),
            LaunchEffect::Observe => {
                if ON_POOL.with(|p| p.get()) {
                    // Already on the pool: read now, in this pass.
                    let observation = files::observe(folder);
                    pass.inputs
                        .push_back(Input::Launch(LaunchInput::Observed(observation)));
                } else {
                    // Never on a request's thread (nor at start-up):
                    // whatever lies at a status path holds up no one.
                    self.send(Job::Observe(s.me.clone(), folder.clone()));
                }
            }
            LaunchEffect::AskPermit => {
                if self.permits.ask(&id) {
                    pass.inputs
                        .push_back(Input::Launch(LaunchInput::PermitGranted));
                }
            }
            LaunchEffect::CancelPermitAsk => self.permits.cancel(&id),
            LaunchEffect::ReleasePermit => self.release_permit(),
            LaunchEffect::MarkInFuture { ahead } => log::warn!(
                "{id}: {} is dated {} s ahead of this machine's clock: clock trouble, not a fresh copy",
                files::status_file(folder).display(),
                ahead / 1000
            ),
            // An empty file is what a read between a writer's truncation and
            // its write sees: not worth a warning.
            LaunchEffect::MalformedMark(MarkError::Empty) => {
                log::debug!("{id}: the status file is empty; treated as missing")
            }
            LaunchEffect::MalformedMark(e) => log::warn!(
                "{id}: {} is not a status mark ({e}); treated as missing",
                files::status_file(folder).display()
            ),
            LaunchEffect::WaitFor { on, until } => log::info!(
                "{id}: waiting for the project copy ({on:?}) up to {} ms",
                until.saturating_sub(s.machine.launch().map_or(0, |l| l.state().began))
            ),
            LaunchEffect::WaitEnded { why, waited } => {
                // The session's `copy_wait_ended` event says the rest.
                if let WaitEnd::CopyFailed(reason) = &why {
                    log::warn!(
                        "{id}: the project copy failed ({}); starting the harness after {waited} ms",
                        if reason.is_empty() { "no reason given" } else { reason }
                    );
                }
                self.metrics.copy_wait.observe_ms(waited);
                s.extras.copy = Some(why);
            }
        }
    }

    pub(super) fn unwatch(&self, id: &str) {
        if let Some(w) = &self.watch {
            w.remove(id);
        }
    }

    /// Gives a permit back, handing it to the oldest queued launch.
    pub(crate) fn release_permit(&self) {
        if let Some(next) = self.permits.release() {
            self.send(Job::Input(next, LaunchInput::PermitGranted));
        }
    }
}
