//! A record that could not be written: what is held back until it is,
//! and when it is written again.

use super::io::{Effect, Outcome, PERSIST_RETRY};
use super::timers::Deadline;
use super::Session;
use crate::time::Millis;

impl Session {
    /// `PersistFailed`: the record on disk is older than the machine's. A
    /// prompt whose turn it does not name is not handed over (a kill -9
    /// would leave a turn nobody knows ran it), a spawn it does not name
    /// gets its note, and the write is tried again after
    /// [`PERSIST_RETRY`] unless another input writes it first.
    pub(super) fn handle_persist_failed(&mut self, now: Millis, error: String) -> Outcome {
        let at = now.saturating_add(PERSIST_RETRY);
        self.state.timers.set(Deadline::PersistRetry, at);
        let mut held = Vec::new();
        let mut i = 0;
        while i < self.effects.len() {
            match self.effects[i] {
                Effect::DeliverPrompt { seq } => {
                    self.effects.remove(i);
                    held.push(seq);
                    continue;
                }
                Effect::SpawnTurn { seq, .. }
                    if i == 0
                        || !matches!(self.effects[i - 1], Effect::NoteSpawn { seq: s } if s == seq) =>
                {
                    self.effects.insert(i, Effect::NoteSpawn { seq });
                    i += 1;
                }
                _ => {}
            }
            i += 1;
        }
        for seq in held {
            self.handle_undelivered(
                now,
                seq,
                format!("its turn could not be recorded ({error})"),
            );
        }
        Outcome::Applied
    }

    /// The retry's deadline came: write the record again.
    pub(super) fn retry_persist(&mut self, now: Millis) -> bool {
        if !self.state.timers.is_due(Deadline::PersistRetry, now) {
            return false;
        }
        self.state.timers.stop(Deadline::PersistRetry);
        self.dirty = true;
        true
    }
}
