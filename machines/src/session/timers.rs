//! The deadlines the session keeps itself, in one table (as quinn-proto's
//! connection keeps its timers): each kind has one slot, set, stopped or
//! due, and the earliest of them is the session's own next deadline. The
//! launch keeps its own deadlines, and a pending approval's is in the
//! record (`until`), so neither is copied here.

use serde::{Deserialize, Serialize};

use super::io::Timer;
use crate::time::Millis;

/// A deadline the session keeps in its [`TimerTable`]: the [`Timer`]s that
/// are neither the launch's nor an approval's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Deadline {
    /// The ending turn, which got SIGTERM, gets SIGKILL then.
    KillGrace,
    /// The turn that got SIGKILL and is still there is given up then
    /// (`AbandonTree`).
    KillWait,
    /// The turn asked in its protocol to stop (or whose linger is over)
    /// gets SIGTERM then.
    InterruptGrace,
    /// The finished turn's lingering process stops waiting then.
    Linger,
    /// The current turn must have named its session by then: a launch's
    /// first turn from its spawn, any other from getting its prompt.
    StartupTimeout,
    /// The record that could not be written is written again then.
    PersistRetry,
    /// The next turn starts then without the snapshot it waits for.
    SnapshotWait,
}

impl Deadline {
    /// Every kind, in the order [`TimerTable::next`] prefers them when two
    /// fall due at once.
    pub const ALL: [Deadline; 7] = [
        Deadline::KillGrace,
        Deadline::KillWait,
        Deadline::InterruptGrace,
        Deadline::Linger,
        Deadline::StartupTimeout,
        Deadline::PersistRetry,
        Deadline::SnapshotWait,
    ];

    /// The name `poll_timeout` gives it.
    pub fn timer(self) -> Timer {
        match self {
            Deadline::KillGrace => Timer::KillGrace,
            Deadline::KillWait => Timer::KillWait,
            Deadline::InterruptGrace => Timer::InterruptGrace,
            Deadline::Linger => Timer::Linger,
            Deadline::StartupTimeout => Timer::StartupTimeout,
            Deadline::PersistRetry => Timer::PersistRetry,
            Deadline::SnapshotWait => Timer::SnapshotWait,
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// When each of the session's own deadlines falls, if it is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimerTable([Option<Millis>; Deadline::ALL.len()]);

impl TimerTable {
    /// Sets `deadline` to fall at `at`, replacing when it fell before.
    pub fn set(&mut self, deadline: Deadline, at: Millis) {
        self.0[deadline.slot()] = Some(at);
    }

    /// Stops `deadline`; it no longer falls.
    pub fn stop(&mut self, deadline: Deadline) {
        self.0[deadline.slot()] = None;
    }

    /// When `deadline` falls, if it is set.
    pub fn get(&self, deadline: Deadline) -> Option<Millis> {
        self.0[deadline.slot()]
    }

    /// Whether `deadline` is set.
    pub fn is_set(&self, deadline: Deadline) -> bool {
        self.get(deadline).is_some()
    }

    /// Whether `deadline` is set and has fallen by `now`.
    pub fn is_due(&self, deadline: Deadline, now: Millis) -> bool {
        self.get(deadline).is_some_and(|at| now >= at)
    }

    /// The earliest deadline set, named as `poll_timeout` names it; of two
    /// at the same moment, the one earlier in [`Deadline::ALL`].
    pub fn next(&self) -> Option<(Millis, Timer)> {
        let mut next: Option<(Millis, Timer)> = None;
        for deadline in Deadline::ALL {
            if let Some(at) = self.get(deadline) {
                if next.map_or(true, |(first, _)| at < first) {
                    next = Some((at, deadline.timer()));
                }
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_is_the_earliest_and_the_first_kind_of_a_tie() {
        let mut t = TimerTable::default();
        assert_eq!(t.next(), None);
        t.set(Deadline::PersistRetry, 50);
        t.set(Deadline::Linger, 70);
        assert_eq!(t.next(), Some((50, Timer::PersistRetry)));
        t.set(Deadline::StartupTimeout, 50);
        assert_eq!(t.next(), Some((50, Timer::StartupTimeout)));
        t.set(Deadline::KillGrace, 50);
        assert_eq!(t.next(), Some((50, Timer::KillGrace)));
        t.stop(Deadline::KillGrace);
        t.stop(Deadline::StartupTimeout);
        t.stop(Deadline::PersistRetry);
        assert_eq!(t.next(), Some((70, Timer::Linger)));
        assert!(!t.is_due(Deadline::Linger, 69));
        assert!(t.is_due(Deadline::Linger, 70));
        assert!(!t.is_due(Deadline::KillGrace, 1_000));
    }

    #[test]
    fn every_kind_has_its_own_slot() {
        let mut t = TimerTable::default();
        for (i, d) in Deadline::ALL.into_iter().enumerate() {
            t.set(d, i as Millis);
        }
        for (i, d) in Deadline::ALL.into_iter().enumerate() {
            assert_eq!(t.get(d), Some(i as Millis));
        }
    }
}
