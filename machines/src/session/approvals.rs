//! Tool approvals: a harness asks before it runs a tool, and the session
//! decides who answers. With `approvals: auto` the session's permission
//! modes already let the harness run what they allow, so what it still
//! asks about is denied at once; with `approvals: app` the request waits
//! for the app, at most `approval_timeout`, and then is denied.
//!
//! Only a request that waits for the app gets a number, a place in the
//! record and events; one denied at once (by the modes, the cap, or its
//! turn ending) is answered and nothing else.
//!
//! Every request is answered exactly once (`AnswerApproval`), unless its
//! turn's process is gone first, and nothing pending outlives its turn:
//! whatever ends the turn (stop, interrupt, close, a restart, the service's
//! stop, a timeout, the journal's cap) denies what is pending first, and a
//! turn that ends by itself leaves nothing to answer. After a kill -9 the
//! restore finds the requests on record and reports them void.

use super::approval::{
    Approval, ApprovalId, ApprovalMode, DecidedBy, Decision, Request, MAX_PENDING,
};
use super::event::Event;
use super::io::{Effect, Outcome, Refusal};
use super::values::{EndWhy, TurnSeq};
use super::Session;
use crate::time::Millis;

impl Session {
    /// `ApprovalRequested`: the turn's harness asks before it runs a tool.
    pub(super) fn handle_approval_requested(
        &mut self,
        now: Millis,
        seq: TurnSeq,
        request: Request,
    ) -> Outcome {
        let Some(turn) = self.state.record.turn.as_ref() else {
            return Outcome::Ignored;
        };
        // Only a spawned turn's harness asks, until the turn is over.
        if turn.seq != seq || turn.run().is_none() || self.state.survivor {
            return Outcome::Ignored;
        }
        let auto = self.options.approvals == ApprovalMode::Auto;
        let decided = match turn.ending {
            Some(why) => Some((DecidedBy::TurnEnding(why), Decision::Deny)),
            // A plan_only turn changes nothing, whoever would be asked.
            None if self.options.plan_only => Some((DecidedBy::Modes, Decision::Deny)),
            None if auto && self.options.auto_allows => Some((DecidedBy::Modes, Decision::Allow)),
            None if auto => Some((DecidedBy::Modes, Decision::Deny)),
            None if self.state.record.pending_approvals.len() >= MAX_PENDING => {
                Some((DecidedBy::TooMany, Decision::Deny))
            }
            None => None,
        };
        if let Some((by, decision)) = decided {
            // Nothing for the app to answer: decided at once, with nothing
            // written or journalled, so a harness that floods requests
            // costs no disk write.
            self.staged.push(Effect::AnswerApproval {
                seq,
                harness_ref: request.harness_ref,
                tool: request.tool,
                decision,
                by,
                message: None,
            });
            return Outcome::Applied;
        }
        let r = self.rec();
        let id = r.next_approval;
        r.next_approval += 1;
        let approval = Approval {
            id,
            turn: seq,
            harness_ref: request.harness_ref,
            tool: request.tool,
            input: request.input,
            reason: request.reason,
            until: now.saturating_add(self.config.approval_timeout),
        };
        self.emit(Event::ApprovalRequested {
            approval: id,
            turn: seq,
            tool: approval.tool.clone(),
            input: approval.input.clone(),
            reason: approval.reason.clone(),
        });
        self.rec().pending_approvals.push(approval);
        Outcome::Applied
    }

    /// `ApprovalDecided`: the app's answer to request `id`.
    pub(super) fn handle_approval_decided(
        &mut self,
        id: ApprovalId,
        decision: Decision,
        message: Option<String>,
    ) -> Outcome {
        if self.state.halted {
            return Outcome::Refused(Refusal::ServiceStopping);
        }
        let r = &self.state.record;
        let Some(i) = r.pending_approvals.iter().position(|a| a.id == id) else {
            return Outcome::Refused(if id >= 1 && id < r.next_approval {
                Refusal::ApprovalAnswered
            } else {
                Refusal::NoApproval
            });
        };
        let approval = self.rec().pending_approvals.remove(i);
        self.answer(approval, decision, message, DecidedBy::App);
        Outcome::Applied
    }

    /// Denies every request whose deadline has come; whether any had.
    pub(super) fn approvals_timed_out(&mut self, now: Millis) -> bool {
        let due: Vec<Approval> = self
            .state
            .record
            .pending_approvals
            .iter()
            .filter(|a| now >= a.until)
            .cloned()
            .collect();
        if due.is_empty() {
            return false;
        }
        self.rec().pending_approvals.retain(|a| now < a.until);
        for approval in due {
            self.answer(approval, Decision::Deny, None, DecidedBy::Timeout);
        }
        true
    }

    /// The turn is being ended: what it has pending is denied first.
    pub(super) fn deny_pending(&mut self, seq: TurnSeq, why: EndWhy) {
        for approval in self.take_pending(seq) {
            self.answer(approval, Decision::Deny, None, DecidedBy::TurnEnding(why));
        }
    }

    /// The turn's process is gone: what it had pending needs no answer.
    pub(super) fn void_pending(&mut self, seq: TurnSeq) {
        for approval in self.take_pending(seq) {
            self.emit(Event::ApprovalResolved {
                approval: approval.id,
                turn: approval.turn,
                decision: Decision::Deny,
                by: DecidedBy::TurnGone,
                message: None,
            });
        }
    }

    /// The earliest deadline of a pending request.
    pub(super) fn approval_deadline(&self) -> Option<Millis> {
        let pending = &self.state.record.pending_approvals;
        pending.iter().map(|a| a.until).min()
    }

    fn take_pending(&mut self, seq: TurnSeq) -> Vec<Approval> {
        if !self
            .state
            .record
            .pending_approvals
            .iter()
            .any(|a| a.turn == seq)
        {
            return Vec::new();
        }
        let (theirs, rest) = std::mem::take(&mut self.rec().pending_approvals)
            .into_iter()
            .partition(|a| a.turn == seq);
        self.rec().pending_approvals = rest;
        theirs
    }

    /// Answers the harness and records who decided what.
    fn answer(
        &mut self,
        approval: Approval,
        decision: Decision,
        message: Option<String>,
        by: DecidedBy,
    ) {
        self.staged.push(Effect::AnswerApproval {
            seq: approval.turn,
            harness_ref: approval.harness_ref,
            tool: approval.tool,
            decision,
            by,
            message: message.clone(),
        });
        self.emit(Event::ApprovalResolved {
            approval: approval.id,
            turn: approval.turn,
            decision,
            by,
            message,
        });
    }
}
