//! Watching a tree step by step, without a signal and without a clock of
//! its own: looks at it (first at once, then at growing pauses) until
//! nothing of it runs, or until it is given up. Whoever owns the tree ends
//! what runs in it (the session machine's signals and grace); the watch
//! only tells when it is gone. Each look returns when the next is due, so
//! one thread watches any number of trees side by side.

use std::time::{Duration, Instant};

use super::members::TreeLook;
use super::{reap, Ended, Supervisor, Tree, MAX_POLL};

/// One tree being watched.
#[derive(Debug)]
pub(super) struct TreeWatch {
    look: TreeLook,
    /// What its first look found running, until it is taken.
    first: Option<Vec<u32>>,
    /// Its first look is done.
    looked: bool,
    /// It is to be given up at its next look.
    giving_up: bool,
    ended: Ended,
    pause: Duration,
    next: Instant,
    done: bool,
}

impl TreeWatch {
    /// The tree.
    pub(super) fn tree(&self) -> &Tree {
        self.look.tree()
    }

    /// When its next look is due; `None` once it is done.
    pub(super) fn next(&self) -> Option<Instant> {
        (!self.done).then_some(self.next)
    }

    /// What its first look found running (empty: nothing), once, after
    /// that look; never for a tree given up before it.
    pub(super) fn take_first(&mut self) -> Option<Vec<u32>> {
        self.first.take()
    }

    /// How it ended, once it is done: nothing of it runs, or it was given
    /// up with what still ran in [`Ended::left`].
    pub(super) fn ended(&self) -> Option<&Ended> {
        self.done.then_some(&self.ended)
    }

    /// Gives it up at once: its next look is its last.
    pub(super) fn give_up(&mut self, now: Instant) {
        self.giving_up = true;
        self.next = now;
    }
}

impl Supervisor {
    /// Starts watching `tree`; its first look is due at `now`.
    pub(super) fn begin_watch(&self, tree: Tree, now: Instant) -> TreeWatch {
        TreeWatch {
            look: TreeLook::new(tree),
            first: None,
            looked: false,
            giving_up: false,
            ended: Ended::default(),
            pause: Duration::from_millis(1),
            next: now,
            done: false,
        }
    }

    /// One look at each of `watches` that is due at `now`, sending nothing:
    /// a tree with nothing left, or given up, is done. Returns when the
    /// next look is due (`None` when all are done). One process table
    /// serves every tree looked at.
    pub(super) fn watch_look(&self, watches: &mut [TreeWatch], now: Instant) -> Option<Instant> {
        let due = |w: &TreeWatch| !w.done && w.next <= now;
        if watches.iter().any(due) {
            // Orphans of these trees that have exited are our zombies.
            reap::sweep();
            let table = self.table();
            let mut finished = false;
            for w in watches.iter_mut().filter(|w| due(w)) {
                let left: Vec<u32> = self
                    .running(&mut w.look, &table)
                    .iter()
                    .map(|m| m.pid)
                    .collect();
                if !w.looked && !w.giving_up {
                    w.first = Some(left.clone());
                }
                w.looked = true;
                if left.is_empty() || w.giving_up {
                    w.ended.left = left;
                    w.done = true;
                    w.look.finish(&mut w.ended);
                    finished = true;
                } else {
                    w.next = now + w.pause;
                    w.pause = (w.pause * 2).min(MAX_POLL);
                }
            }
            if finished {
                // The last look may have found orphans just turned zombies.
                reap::sweep();
            }
        }
        watches.iter().filter_map(TreeWatch::next).min()
    }
}
