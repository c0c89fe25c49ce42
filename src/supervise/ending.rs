//! Ending a tree step by step with a grace of the supervisor's own: SIGTERM
//! to all of it at the first look, SIGKILL to what is left once the grace
//! is over, done when nothing is left (or [`KILL_WAIT`] after the SIGKILL).
//! Each look returns when the next is due, so one thread ends any number of
//! trees side by side, never sleeping on one. It serves callers that keep
//! no clock of their own ([`Supervisor::terminate`],
//! [`Supervisor::terminate_all`]); the service's turns are ended by the
//! session machine's signals and grace ([`Supervisor::signal`]), their
//! trees watched by the watcher.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::cgroup;
use super::members::{Member, TreeLook};
use super::process::{self, Stat, KILL_WAIT};
use super::{reap, Ended, Mode, Supervisor, Tree, MAX_POLL};

/// One tree being ended.
#[derive(Debug)]
struct TreeEnding {
    look: TreeLook,
    /// (pid, start time or 0, signal) already sent.
    signalled: HashSet<(u32, u64, i32)>,
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
            look: TreeLook::new(tree),
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

    /// When its next look is due; `None` once it is done.
    fn next(&self) -> Option<Instant> {
        (!self.done).then_some(self.next)
    }

    fn finish(&mut self) {
        self.done = true;
        self.look.finish(&mut self.ended);
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

    /// Sends `signal` once to everything of `tree` that runs now (the
    /// leader through its pidfd, every member found as
    /// [`terminate`](Self::terminate) finds them) and returns at once: the
    /// caller keeps the grace itself (the session machine's kill grace) and
    /// sends SIGKILL when it is over. Returns the pids signalled.
    pub fn signal(&self, tree: &Tree, signal: Signal) -> Vec<u32> {
        let table = self.table();
        let mut once = self.begin_end(tree.clone(), Instant::now());
        let pids = self.signal_tree(&mut once, &table, signal);
        if !pids.contains(&tree.pid) {
            // The look missed the leader (a no-op if it has exited).
            tree.signal_leader(signal);
        }
        pids
    }

    /// Sends `signal` to what of `e`'s tree has not had it; returns the pids
    /// still running.
    fn signal_tree(&self, e: &mut TreeEnding, table: &[Stat], signal: Signal) -> Vec<u32> {
        let running = self.running(&mut e.look, table);
        let cgroup = match (&self.mode, &e.look.tree.cgroup) {
            (Mode::Cgroup(root), Some(dir)) => Some((root.path_of(dir).unwrap_or_default(), dir)),
            _ => None,
        };
        if let Some((_, dir)) = &cgroup {
            if signal == Signal::SIGKILL && !running.is_empty() {
                if let Err(err) = cgroup::kill(dir) {
                    e.ended.problem = Some(format!("cannot kill {}: {err}", dir.display()));
                }
            }
        }
        for &Member {
            pid, start_time, ..
        } in &running
        {
            if !e
                .signalled
                .insert((pid, start_time.unwrap_or(0), signal as i32))
            {
                continue;
            }
            match (&cgroup, start_time) {
                (Some((path, _)), _) => {
                    process::signal_checked(pid, signal, || cgroup::holds(path, pid));
                }
                (None, Some(start)) => {
                    process::signal_exact(pid, start, signal);
                }
                (None, None) => {}
            }
        }
        // The group as a whole too, for what forked since the scan (its
        // number is the turn's while a member is in it).
        if running.iter().any(|m| m.in_group) {
            let pgid = nix::unistd::Pid::from_raw(e.look.tree.pid as i32);
            let _ = nix::sys::signal::killpg(pgid, signal);
        }
        running.iter().map(|m| m.pid).collect()
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
                    e.look.tree.signal_leader(Signal::SIGKILL);
                }
            }
            // Orphans of these trees that have exited are our zombies.
            reap::sweep();
            let table = self.table();
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
