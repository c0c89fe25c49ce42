//! What a restore reads from the end of a session's journal: the last turn
//! it started and whether the harness printed anything for it. A warm
//! follow-up writes no record (only its prompt's log append), nor does a
//! warm turn that names the session it resumed, so the journal can know
//! more of the last turn than the record.

use serde::{Deserialize, Serialize};

use super::phase::{Phase, Run, Turn};
use super::record::Record;
use super::values::{PromptId, TurnSeq};

/// The journal's last `turn_started` that no `turn_ended` follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnTail {
    /// The turn it started.
    pub turn: TurnSeq,
    /// The prompt it ran.
    pub prompt: PromptId,
    /// Something its harness printed was journalled after it (a line, or
    /// the report of one that could not be journalled as it was).
    pub printed: bool,
}

impl Record {
    /// Whether the journal's tail can change this record (a warm turn on
    /// record, or a lingering one and a prompt waiting): only then does a
    /// restore read it.
    pub fn reads_journal_tail(&self) -> bool {
        self.turn.as_ref().is_some_and(|t| {
            t.warm || (matches!(t.phase, Phase::Lingering { .. }) && !self.queue.is_empty())
        })
    }

    /// The record completed by the journal's tail, for a warm turn only
    /// (every line its harness prints for it comes after its prompt):
    /// - the record names the turn: a harness that printed for it began
    ///   its prompt, which is then never run again;
    /// - the record is the one before the turn (its process lingering,
    ///   the turn's prompt the next waiting, from the prompt log): the
    ///   turn is put back as the crash found it, in that process, so the
    ///   restore kills the process and cuts or requeues the prompt as for
    ///   any turn.
    ///
    /// A tail that follows neither changes nothing.
    pub fn with_journal_tail(mut self, tail: Option<TurnTail>) -> Record {
        let Some(tail) = tail else {
            return self;
        };
        let next_waits = self.queue.front().is_some_and(|p| p.id == tail.prompt);
        match &mut self.turn {
            Some(t) if t.seq == tail.turn && t.prompt.id == tail.prompt && t.warm => {
                if let Phase::Prompted(run) = &mut t.phase {
                    run.named |= tail.printed;
                }
            }
            Some(t)
                if self.next_turn == tail.turn
                    && next_waits
                    && t.ending.is_none()
                    && matches!(t.phase, Phase::Lingering { .. }) =>
            {
                let process = t.process().expect("a lingering turn's process");
                let prompt = self.queue.pop_front().expect("checked above");
                self.chosen = self.chosen.with(&prompt.choice);
                self.next_turn = tail.turn + 1;
                self.error = None;
                let mut run = Run::new(process);
                run.named = tail.printed;
                self.turn = Some(Turn {
                    warm: true,
                    phase: Phase::Prompted(run),
                    ..Turn::asked(tail.turn, prompt, false)
                });
            }
            _ => {}
        }
        self
    }
}
