//! The effects said on a turn's stdin: the end of its input, an interrupt,
//! a steered prompt, a warm follow-up's prompt and an approval's answer.
//! The process's talker words each in its harness's protocol; the turn's
//! stdin writes it (harness_io/stdin.rs).

use room_machines::session::{
    Attachment, DecidedBy, Decision, Input, ModelChoice, PromptId, TurnSeq,
};

use super::driver::Pass;
use super::harness_io::stdin::undelivered;
use super::Runtime;
use crate::attachments::store::ImageStore;
use crate::harness::speech::{Answer, Image, Said};
use crate::sessions::Hosted;

impl Runtime {
    /// `CloseInput`: the end of the turn's stdin.
    pub(super) fn close_input(&self, s: &Hosted, seq: TurnSeq) {
        match live(s, seq) {
            Some(l) => l.input.close(),
            None => log::warn!(
                "{}: turn {seq} takes no more input; its end is dropped",
                s.id
            ),
        }
    }

    /// `InterruptTurn`: the harness's own interrupt request.
    pub(super) fn interrupt_turn(&self, s: &Hosted, pass: &mut Pass, seq: TurnSeq) {
        self.say(s, pass, seq, Said::Interrupt);
    }

    /// `ContinueTurn`: the lingering process serves turn `seq` from now
    /// on (its record, its threads' reports); the turn's start is
    /// journalled, then its prompt said to the process.
    pub(super) fn continue_turn(
        &self,
        s: &mut Hosted,
        pass: &mut Pass,
        seq: TurnSeq,
        (prompt, attachments): (String, Vec<Attachment>),
        switch: ModelChoice,
    ) {
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
        // The turn's start is staged, not written yet: the prompt's line
        // goes out now, and the journal writes the start ahead of anything
        // the harness answers (its reader's append takes staged events
        // first) and makes it durable by the pass's end.
        self.stage_events(s, pass);
        match self.images(&s.id, &attachments) {
            Ok(images) => {
                let said = Said::Prompt {
                    text: prompt,
                    images,
                    switch,
                };
                self.say(s, pass, seq, said);
            }
            Err(error) => pass
                .inputs
                .push_back(Input::PromptUndelivered { seq, error }),
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
        self.say(s, pass, seq, Said::Steer { prompt, text });
    }

    /// `AnswerApproval`: the answer, in the harness's words.
    pub(super) fn answer_approval(
        &self,
        s: &Hosted,
        pass: &mut Pass,
        seq: TurnSeq,
        (harness_ref, tool): (String, String),
        (decision, by, message): (Decision, DecidedBy, Option<String>),
    ) {
        let answer = Answer {
            harness_ref,
            tool,
            decision,
            by,
            message,
        };
        self.say(s, pass, seq, Said::Answer(answer));
    }

    /// The images `attachments` names, from session `id`'s store, for the
    /// harness; why not, when one cannot be read.
    pub(super) fn images(
        &self,
        id: &str,
        attachments: &[Attachment],
    ) -> Result<Vec<Image>, String> {
        // Most prompts carry none: no path is made for them.
        if attachments.is_empty() {
            return Ok(Vec::new());
        }
        let store = ImageStore::of(self.store.dir(), id);
        attachments
            .iter()
            .map(|a| {
                let data = store.read(a).map_err(|e| {
                    format!(
                        "its image {:.12}… cannot be read from the state dir: {e}",
                        a.sha256
                    )
                })?;
                Ok(Image {
                    media_type: a.media_type.media_type(),
                    data,
                })
            })
            .collect()
    }

    /// Says `said` to turn `seq`'s process; what cannot be handed to its
    /// writer is reported as what it carried (a prompt, a steer; the rest
    /// only in the log: a turn that is gone or does not read needs it no
    /// more, its end is on its way).
    fn say(&self, s: &Hosted, pass: &mut Pass, seq: TurnSeq, said: Said) {
        let said = match live(s, seq) {
            Some(live) => live.input.say(said),
            None => Err(vec![said.carries()]),
        };
        for carries in said.err().unwrap_or_default() {
            let why = "the turn takes no more input";
            undelivered(seq, carries, why, |input| pass.inputs.push_back(input));
        }
    }
}

/// Turn `seq`'s process, if it still serves that turn.
fn live(s: &Hosted, seq: TurnSeq) -> Option<&crate::sessions::live_turn::LiveTurn> {
    s.live.as_deref().filter(|l| l.seq == seq)
}
