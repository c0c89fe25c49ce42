//! What the harness's protocol on its stdin adds to a turn (both CLIs talk
//! one: claude's stream-json, codex's app server): the harness says when
//! its turn is done, so its process lingers or its stdin closes; an
//! interrupt asks it to stop before any signal; and a prompt can be steered
//! into the running turn.

use super::choice::ModelChoice;
use super::event::Event;
use super::excerpt::{excerpt, PROMPT_TEXT_MAX};
use super::failure::FAILURE_TEXT_MAX;
use super::io::{Effect, Outcome};
use super::prompt::NewPrompt;
use super::record::{Phase, Prompt, PromptId, Run, Stage, Turn, TurnSeq};
use super::timers::Deadline;
use super::usage::UsageReport;
use super::Session;
use crate::time::Millis;

impl Session {
    /// Whether a `Steer` now reaches the running turn: its harness process
    /// takes steers (it did not say `NoSteers`), the turn has its prompt,
    /// has begun it (named its session), is not being ended and its stdin
    /// is open, and no prompt waits in the queue (a steer never runs
    /// before a prompt accepted ahead of it).
    pub fn steerable(&self) -> bool {
        if self.state.stdin.no_steers {
            return false;
        }
        let r = &self.state.record;
        let begun = r.turn.as_ref().is_some_and(|t| {
            matches!(t.phase, Phase::Prompted(Run { named: true, .. })) && t.ending.is_none()
        });
        begun
            && r.queue.is_empty()
            && !self.state.halted
            && !self.state.survivor
            && !self.state.stdin.closed
            && r.stage == Stage::Started
    }

    pub(super) fn handle_no_steers(&mut self, seq: TurnSeq) -> Outcome {
        if self.live_turn(seq).is_none() || self.state.stdin.no_steers {
            return Outcome::Ignored;
        }
        self.state.stdin.no_steers = true;
        Outcome::Applied
    }

    pub(super) fn handle_steer(&mut self, now: Millis, text: String) -> Outcome {
        if !self.steerable() || self.budget_spent() {
            return self.handle_message(now, NewPrompt::text(text));
        }
        let seq = self.state.record.turn.as_ref().map(|t| t.seq);
        let seq = seq.expect("steerable");
        let (shown, text_truncated) = excerpt(&text, PROMPT_TEXT_MAX);
        let r = self.rec();
        let prompt = r.next_prompt;
        r.next_prompt += 1;
        self.emit(Event::PromptSteered {
            prompt,
            turn: seq,
            text: shown,
            text_truncated,
        });
        self.staged.push(Effect::Steer { seq, prompt, text });
        self.state.stdin.steered = true;
        self.state.stdin.last_steer = Some(prompt);
        Outcome::Applied
    }

    /// Whether `prompt` is the last prompt steered into the running turn
    /// and was not handed back: what `deliver: steer`'s answer reports
    /// once the steer's effects are carried out.
    pub fn steered(&self, prompt: PromptId) -> bool {
        self.state.stdin.last_steer == Some(prompt)
    }

    pub(super) fn handle_steer_undelivered(
        &mut self,
        now: Millis,
        seq: TurnSeq,
        prompt: PromptId,
        text: String,
    ) -> Outcome {
        let r = &self.state.record;
        // Once per steered prompt: one never given, or queued already, is not.
        let known = prompt < r.next_prompt
            && !r.queue.iter().any(|p| p.id == prompt)
            && !r.turn.as_ref().is_some_and(|t| t.prompt.id == prompt);
        if r.stage == Stage::Closed || !known {
            return Outcome::Ignored;
        }
        if self.state.stdin.last_steer == Some(prompt) {
            self.state.stdin.last_steer = None;
        }
        self.enqueue(Prompt {
            choice: ModelChoice::default(),
            attachments: Vec::new(),
            id: prompt,
            text: text.into(),
        });
        self.emit(Event::PromptRequeued { prompt, turn: seq });
        self.pump(now);
        Outcome::Applied
    }

    /// The harness's turn is done: what it says it used is taken first (as
    /// `TurnUsage`), then its process lingers for the next prompt
    /// (`Config::linger`), unless the turn was being ended, had not named
    /// its session or failed; else its stdin closes and its process ends.
    pub(super) fn handle_finished(
        &mut self,
        now: Millis,
        seq: TurnSeq,
        failed: Option<String>,
        usage: Option<UsageReport>,
    ) -> Outcome {
        let metered = usage.map(|report| self.handle_usage(now, seq, report));
        let Some(t) = self.live_turn(seq) else {
            return metered.unwrap_or(Outcome::Ignored);
        };
        // Only a turn that has its prompt is done with it, once.
        let Phase::Prompted(run) = &t.phase else {
            return metered.unwrap_or(Outcome::Ignored);
        };
        if self.state.stdin.closed {
            return metered.unwrap_or(Outcome::Ignored);
        }
        let lingers = self.config.linger > 0 && t.ending.is_none() && run.named && failed.is_none();
        if let Some(why) = failed {
            let (why, _) = excerpt(&why, FAILURE_TEXT_MAX);
            let turn = self.rec().turn.as_mut().and_then(Turn::run_mut);
            turn.expect("the live turn").failed = Some(why);
        }
        if lingers && !self.state.stdin.steered {
            self.linger(now, seq);
        } else {
            // It exits once its stdin closes; one that does not (an ACP
            // agent whose own child keeps it alive) is signalled after the
            // grace.
            self.close_input(seq);
            let at = now.saturating_add(self.config.kill_grace);
            self.state.timers.set(Deadline::InterruptGrace, at);
            self.state.stdin.done = true;
        }
        Outcome::Applied
    }

    /// Closes turn `seq`'s stdin; nothing more is said to its harness.
    pub(super) fn close_input(&mut self, seq: TurnSeq) {
        self.state.stdin.closed = true;
        self.staged.push(Effect::CloseInput { seq });
    }

    /// Asks turn `seq`'s harness to stop in its protocol; SIGTERM follows
    /// after the kill grace if the turn is still there.
    pub(super) fn ask_to_stop(&mut self, now: Millis, seq: TurnSeq) {
        self.staged.push(Effect::InterruptTurn { seq });
        let at = now.saturating_add(self.config.kill_grace);
        self.state.timers.set(Deadline::InterruptGrace, at);
    }
}
