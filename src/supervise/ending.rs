//! Ending a tree step by step: SIGTERM to all of it at the first look,
//! SIGKILL to what is left once the grace is over, done when nothing is
//! left (or [`KILL_WAIT`] after the SIGKILL). Each look returns when the
//! next is due, so one thread can end any number of trees side by side
//! (the ender, and [`Supervisor::terminate_all`]), never sleeping on one.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::process::{self, KILL_WAIT};
use super::{cgroup, reap, Ended, Mode, Supervisor, Tree};

/// The longest pause between two looks at a tree that is ending.
const MAX_POLL: Duration = Duration::from_millis(20);

/// One tree being ended.
#[derive(Debug)]
pub struct TreeEnding {
    pub(super) tree: Tree,
    pub(super) marker: Vec<u8>,
    /// Members seen so far (pid to start time).
    pub(super) known: HashMap<u32, u64>,
    /// (pid, start time or 0, signal) already sent.
    pub(super) signalled: HashSet<(u32, u64, i32)>,
    pub(super) ended: Ended,
    signal: Signal,
    kill_at: Instant,
    give_up: Instant,
    pause: Duration,
    next: Instant,
    done: bool,
}

impl TreeEnding {
    /// A tree to end, its grace running from `now`; its first look is due
    /// at once.
    pub(super) fn new(tree: Tree, now: Instant, grace: Duration) -> TreeEnding {
        TreeEnding {
            marker: tree.key.marker(),
            tree,
            known: HashMap::new(),
            signalled: HashSet::new(),
            ended: Ended::default(),
            signal: Signal::SIGTERM,
            kill_at: now + grace,
            give_up: now + grace + KILL_WAIT,
            pause: Duration::from_millis(1),
            next: now,
            done: false,
        }
    }

    /// The tree.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// When its next look is due; `None` once it is done.
    pub fn next(&self) -> Option<Instant> {
        (!self.done).then_some(self.next)
    }

    /// How it ended, once it is done.
    pub fn ended(&self) -> Option<&Ended> {
        self.done.then_some(&self.ended)
    }

    /// Nothing runs (or the bound is reached): removes the cgroup.
    fn finish(&mut self) {
        self.done = true;
        if let Some(dir) = &self.tree.cgroup {
            if self.ended.left.is_empty() {
                let until = Instant::now() + Duration::from_secs(1);
                if let Err(e) = cgroup::remove(dir, until) {
                    self.ended.problem = Some(format!("cannot remove {}: {e}", dir.display()));
                }
            }
        }
        if !self.ended.is_clean() {
            log::warn!(
                "turn {}: not all of it ended: {:?}",
                self.tree.key,
                self.ended
            );
        }
    }
}

impl Supervisor {
    /// Starts ending `tree` (its grace from `now`): feed it to
    /// [`look`](Self::look) until it is done.
    pub fn begin_end(&self, tree: Tree, now: Instant) -> TreeEnding {
        TreeEnding::new(tree, now, self.grace)
    }

    /// One look at each of `endings` that is due at `now`: each tree's first
    /// look sends SIGTERM to every member once (a second SIGTERM means
    /// "hurry" to some CLIs), the first look past its grace SIGKILL; a tree
    /// with nothing left is done. Returns when the next look is due (`None`
    /// when all are done). One process table serves every tree looked at.
    pub fn look(&self, endings: &mut [TreeEnding], now: Instant) -> Option<Instant> {
        let due = |e: &TreeEnding| !e.done && e.next <= now;
        if endings.iter().any(due) {
            for e in endings.iter_mut().filter(|e| due(e)) {
                if e.signal == Signal::SIGTERM && now >= e.kill_at {
                    e.signal = Signal::SIGKILL;
                    e.ended.forced = true;
                    e.tree.signal_leader(Signal::SIGKILL);
                }
            }
            // Orphans of these trees that have exited are our zombies.
            reap::sweep();
            let table = match &self.mode {
                Mode::ProcessGroups { .. } => process::snapshot(),
                Mode::Cgroup(_) => Vec::new(),
            };
            let mut finished = false;
            for e in endings.iter_mut().filter(|e| due(e)) {
                let left = self.signal_tree(e, &table, e.signal);
                if left.is_empty() {
                    e.finish();
                    finished = true;
                } else if now >= e.give_up {
                    e.ended.left = left;
                    e.finish();
                    finished = true;
                } else {
                    // Look again at the end of the grace, not up to a
                    // pause after it.
                    let until_kill = e.kill_at.saturating_duration_since(now);
                    let nap = if until_kill.is_zero() {
                        e.pause
                    } else {
                        e.pause.min(until_kill)
                    };
                    e.next = now + nap;
                    e.pause = (e.pause * 2).min(MAX_POLL);
                }
            }
            if finished {
                // The last look may have found orphans just turned zombies.
                reap::sweep();
            }
        }
        endings.iter().filter_map(TreeEnding::next).min()
    }
}
