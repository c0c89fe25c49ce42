//! Holding a session to its budget: once what the session used (its ended
//! turns and what the running turn has reported) reaches it, the running
//! turn is interrupted, nothing queued starts and a message is refused,
//! until the app raises it.

use super::budget::Budget;
use super::event::Event;
use super::io::{Outcome, Refusal};
use super::record::{EndWhy, Stage, Turn};
use super::usage::Usage;
use super::Session;
use crate::time::Millis;

impl Session {
    /// What the session has used: its ended turns' totals and what the
    /// running turn has reported so far.
    pub fn used(&self) -> Usage {
        let r = &self.state.record;
        // A finished turn's usage is in the totals already.
        match r.turn.as_ref().and_then(Turn::usage) {
            Some(u) => r.usage.plus(u),
            None => r.usage,
        }
    }

    /// Whether the session has spent its budget.
    pub fn budget_spent(&self) -> bool {
        self.state.record.budget.spent_by(&self.used())
    }

    /// `SetBudget`: the app's new budget; what was held back by the old
    /// one goes on if the new one allows it.
    pub(super) fn handle_set_budget(&mut self, now: Millis, budget: Budget) -> Outcome {
        if self.state.halted {
            return Outcome::Refused(Refusal::ServiceStopping);
        }
        if self.state.record.stage == Stage::Closed {
            return Outcome::Refused(Refusal::Closed);
        }
        if self.state.record.budget != budget {
            self.rec().budget = budget;
            self.emit(Event::BudgetSet { budget });
        }
        self.pump(now);
        Outcome::Applied
    }

    /// After what the session used grew: once it reaches the budget, the
    /// journal says so and the running turn is interrupted.
    pub(super) fn check_budget(&mut self, now: Millis, before: Usage) {
        let budget = self.state.record.budget;
        let used = self.used();
        if budget.spent_by(&before) || !budget.spent_by(&used) {
            return;
        }
        self.emit(Event::BudgetSpent { used, budget });
        let running = self
            .state
            .record
            .turn
            .as_ref()
            .is_some_and(|t| !t.finished() && t.ending.is_none());
        if running {
            self.end_turn(now, EndWhy::Budget);
        }
    }
}
