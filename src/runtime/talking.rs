//! The effects said on a turn's stdin to a harness that talks (claude's
//! stream-json): the end of its input, an interrupt, a steered prompt and
//! an approval's answer. The harness adapter words each line; the turn's
//! stdin writer writes it.

use room_machines::session::{DecidedBy, Decision, Input, PromptId, TurnSeq};

use super::driver::Pass;
use super::Runtime;
use crate::sessions::turn_input::{undelivered, Say};
use crate::sessions::Hosted;

impl Runtime {
    /// `CloseInput`: the end of the turn's stdin.
    pub(super) fn close_input(&self, s: &Hosted, seq: TurnSeq) {
        self.say(s, seq, Say::Close, "the end of its input");
    }

    /// `InterruptTurn`: the harness's own interrupt request.
    pub(super) fn interrupt_turn(&self, s: &Hosted, seq: TurnSeq) {
        match s.start.harness.interrupt_line() {
            Some(line) => self.say(s, seq, Say::Line(line), "an interrupt"),
            None => log::warn!("{}: turn {seq}'s harness takes no interrupt", s.id),
        }
    }

    /// `ContinueTurn`: the lingering process serves turn `seq` from now
    /// on (its record, its threads' reports); the turn's start is
    /// journalled, then its prompt handed to the process's stdin.
    pub(super) fn continue_turn(
        &self,
        s: &mut Hosted,
        pass: &mut Pass,
        seq: TurnSeq,
        prompt: String,
    ) {
        let harness = s.start.harness;
        let Some(live) = s.live.as_mut() else {
            pass.inputs.push_back(Input::PromptUndelivered {
                seq,
                error: "its process is not there".into(),
            });
            return;
        };
        live.seq = seq;
        live.now.set(seq);
        if let Some((at, _)) = s.supervised.as_mut() {
            // The record keeps the process's own key (its cgroup, its
            // marker), now under the turn it serves.
            *at = seq;
        }
        self.flush_events(s, pass);
        let Some(live) = s.live.as_ref() else {
            return;
        };
        if let Err(say) = live.input.say(Say::Prompt(harness.prompt_bytes(&prompt))) {
            undelivered(seq, say, "its stdin's writer is gone", |input| {
                pass.inputs.push_back(input)
            });
        }
    }

    /// `Steer`: a prompt for the running turn; `SteerUndelivered` when it
    /// cannot be handed to the turn's writer.
    pub(super) fn steer(
        &self,
        s: &Hosted,
        pass: &mut Pass,
        seq: TurnSeq,
        prompt: PromptId,
        text: String,
    ) {
        let Some(line) = s.start.harness.steer_line(&text) else {
            pass.inputs
                .push_back(Input::SteerUndelivered { seq, prompt, text });
            return;
        };
        if let Err(say) = hand(s, seq, Say::Steer { prompt, text, line }) {
            undelivered(seq, say, "the turn takes no more input", |input| {
                pass.inputs.push_back(input)
            });
        }
    }

    /// `AnswerApproval`: the answer, in the harness's words.
    pub(super) fn answer_approval(
        &self,
        s: &Hosted,
        seq: TurnSeq,
        harness_ref: &str,
        tool: &str,
        (decision, by, message): (Decision, DecidedBy, Option<&str>),
    ) {
        match s
            .start
            .harness
            .answer_line(harness_ref, tool, decision, by, message)
        {
            Some(line) => self.say(s, seq, Say::Line(line), "an approval's answer"),
            None => log::error!("{}: turn {seq}'s harness takes no approval's answer", s.id),
        }
    }

    /// Hands `say` to turn `seq`'s stdin writer; a turn that is gone or
    /// does not read needs it no more (its end is on its way).
    fn say(&self, s: &Hosted, seq: TurnSeq, say: Say, what: &str) {
        if hand(s, seq, say).is_err() {
            log::warn!(
                "{}: turn {seq} takes no more input; {what} is dropped",
                s.id
            );
        }
    }
}

/// Hands `say` to turn `seq`'s stdin writer; gives it back when the turn
/// has no process any more or its writer takes nothing more.
fn hand(s: &Hosted, seq: TurnSeq, say: Say) -> Result<(), Say> {
    match s.live.as_ref().filter(|l| l.seq == seq) {
        Some(live) => live.input.say(say),
        None => Err(say),
    }
}
