//! A session's budget: reached, the running turn is interrupted and no
//! message is taken until the app raises it.

use super::*;
use crate::session::usage::tokens;

fn limit(max_tokens: u64) -> Budget {
    Budget {
        max_cost_usd: None,
        max_tokens: Some(max_tokens),
    }
}

fn used(seq: TurnSeq, n: u64) -> Input {
    Input::TurnUsage {
        seq,
        report: UsageReport::Turn(tokens(n, 0, 0, 0)),
    }
}

#[test]
fn reaching_the_budget_interrupts_the_turn_and_refuses_messages_until_it_is_raised() {
    let mut t = T::running(&["queued"]);
    t.go(Input::SetBudget(limit(100)));
    t.go(used(2, 60));
    assert!(!t.s.budget_spent());
    let e = t.go(used(2, 40));
    assert!(t.s.budget_spent());
    assert!(has(
        &e,
        &Effect::Emit(Event::BudgetSpent {
            used: tokens(100, 0, 0, 0),
            budget: limit(100),
        })
    ));
    assert!(has(&e, &Effect::InterruptTurn { seq: 2 }), "{e:?}");
    let e = t.end(2, Exit::Code(0));
    assert!(e.iter().any(|e| matches!(
        e,
        Effect::Emit(Event::TurnEnded {
            by: Some(EndWhy::Budget),
            ..
        })
    )));
    assert_eq!(spawns(&e), 0, "the queue waits");
    assert_eq!(t.s.record().queue.len(), 1);
    let (o, e) = t.at(t.now, Input::message("more".into()));
    assert_eq!((o, e), (Outcome::Refused(Refusal::BudgetSpent), vec![]));
    // Raised: what was queued runs.
    let e = t.go(Input::SetBudget(limit(1_000)));
    assert!(has(
        &e,
        &Effect::Emit(Event::BudgetSet {
            budget: limit(1_000)
        })
    ));
    assert_eq!(spawns(&e), 1);
}

#[test]
fn the_harness_is_asked_to_stop_when_the_cost_reaches_the_budget() {
    let mut t = T::running(&[]);
    t.named(2);
    t.go(Input::SetBudget(Budget {
        max_cost_usd: Usd::reported(0.01),
        max_tokens: None,
    }));
    let e = t.go(Input::TurnUsage {
        seq: 2,
        report: UsageReport::Turn(Usage {
            cost_usd: Usd::reported(0.02),
            ..Usage::default()
        }),
    });
    assert!(has(&e, &Effect::InterruptTurn { seq: 2 }), "{e:?}");
    let (o, _) = t.at(t.now, Input::Steer("go on".into()));
    assert_eq!(o, Outcome::Refused(Refusal::BudgetSpent));
}
