//! Ending a tree step by step with a grace of the supervisor's own: SIGTERM
//! to all of it at the first look, SIGKILL to what is left once the grace
//! is over, done when nothing is left (or [`KILL_WAIT`] after the SIGKILL).
//! Each look returns when the next is due, so one thread ends any number of
//! trees side by side, never sleeping on one. Only the tests use it
//! ([`Supervisor::terminate`], [`Supervisor::terminate_all`]): the
//! service's turns are ended by the session machine's signals and grace
//! ([`Supervisor::signal`], signalling.rs), their trees watched by the
//! watcher.

use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::process::KILL_WAIT;
use super::signalling::TreeSignals;
use super::{reap, Ended, Supervisor, Tree, MAX_POLL};

/// One tree being ended.
#[derive(Debug)]
struct TreeEnding {
    signals: TreeSignals,
    ended: Ended,
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
    fn new(tree: Tree, now: Instant, grace: Duration) -> TreeEnding {
        TreeEnding {
            signals: TreeSignals::new(tree),
            ended: Ended::default(),
            signal: Signal::SIGTERM,
            kill_at: now + grace,
            give_up: now + grace + KILL_WAIT,
            pause: Duration::from_millis(1),
            next: now,
            done: false,
        }
    }

    /// When its next look is due; `None` once it is done.
    fn next(&self) -> Option<Instant> {
        (!self.done).then_some(self.next)
    }

    fn finish(&mut self) {
        self.done = true;
        if let Some(problem) = self.signals.problem.take() {
            self.ended.problem = Some(problem);
        }
        self.signals.look.finish(&mut self.ended);
    }
}

impl Supervisor {
    /// Ends `tree`: SIGTERM to all of it, SIGKILL to what is left after the
    /// grace; returns when nothing is left (or [`KILL_WAIT`] after the
    /// SIGKILL, with what is left in [`Ended::left`]).
    pub fn terminate(&self, tree: &Tree) -> Ended {
        self.terminate_all(std::slice::from_ref(tree))
            .pop()
            .unwrap_or_default()
    }

    /// [`terminate`](Self::terminate) for many trees at once: one grace for
    /// all. The results are in the order of `trees`.
    pub fn terminate_all(&self, trees: &[Tree]) -> Vec<Ended> {
        let started = Instant::now();
        let mut endings: Vec<TreeEnding> = trees
            .iter()
            .map(|t| self.begin_end(t.clone(), started))
            .collect();
        while let Some(next) = self.look(&mut endings, Instant::now()) {
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
        endings.into_iter().map(|e| e.ended).collect()
    }

    /// Starts ending `tree` (its grace from `now`): feed it to
    /// [`look`](Self::look) until it is done.
    fn begin_end(&self, tree: Tree, now: Instant) -> TreeEnding {
        TreeEnding::new(tree, now, self.grace)
    }

    /// One look at each of `endings` that is due at `now`: each tree's first
    /// look sends SIGTERM to every member once (a second SIGTERM means
    /// "hurry" to some CLIs), the first look past its grace SIGKILL; a tree
    /// with nothing left is done. Returns when the next look is due (`None`
    /// when all are done). One process table serves every tree looked at.
    fn look(&self, endings: &mut [TreeEnding], now: Instant) -> Option<Instant> {
        let due = |e: &TreeEnding| !e.done && e.next <= now;
        if endings.iter().any(due) {
            for e in endings.iter_mut().filter(|e| due(e)) {
                if e.signal == Signal::SIGTERM && now >= e.kill_at {
                    e.signal = Signal::SIGKILL;
                    e.ended.forced = true;
                    e.signals.look.tree.signal_leader(Signal::SIGKILL);
                }
            }
            // Orphans of these trees that have exited are our zombies.
            reap::sweep();
            let table = self.table();
            let mut finished = false;
            for e in endings.iter_mut().filter(|e| due(e)) {
                let left = self.signal_tree(&mut e.signals, &table, e.signal);
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
