//! What a turn used: the harness's reports become the turn's figures, and
//! an ended turn's figures join the session's totals.

use super::io::Outcome;
use super::record::{Turn, TurnSeq};
use super::usage::{Usage, UsageReport};
use super::Session;

impl Session {
    /// `TurnUsage`: the turn's own figures add to what it reported before;
    /// a running total counts what it grew by since the last total the
    /// session took (nothing when that is unknown or larger) and becomes
    /// the next one's start. A total is taken only once the turn has named
    /// its native session, whose total it is.
    pub(super) fn handle_usage(
        &mut self,
        now: crate::time::Millis,
        seq: TurnSeq,
        report: UsageReport,
    ) -> Outcome {
        // A spawned turn's harness reports, until the turn is over.
        let Some(run) = self.live_turn(seq).and_then(Turn::run) else {
            return Outcome::Ignored;
        };
        let (named, before) = (run.named, run.usage);
        let used = match report {
            UsageReport::Turn(figures) => Some(figures.believed()),
            UsageReport::Total(_) if !named => return Outcome::Ignored,
            UsageReport::Total(total) => {
                let total = total.believed();
                let base = self.rec().native_total.replace(total);
                base.and_then(|b| total.since(b))
            }
        };
        if let Some(used) = used {
            let spent_before = self.used();
            let turn = self.rec().turn.as_mut().and_then(Turn::run_mut);
            let run = turn.expect("checked above");
            run.usage = Some(before.map_or(used, |b| b.plus(used)));
            self.check_budget(now, spent_before);
        }
        Outcome::Applied
    }

    /// Adds what an ended turn used (`usage`, as its harness reported it)
    /// to the session's totals; what its `turn_ended` carries.
    pub(super) fn meter(&mut self, usage: Option<Usage>) -> Option<Usage> {
        if let Some(used) = usage {
            let r = self.rec();
            r.usage = r.usage.plus(used);
        }
        usage
    }
}
