//! Ending a tree step by step: SIGTERM to all of it at the first look,
//! SIGKILL to what is left once the grace is over, done when nothing is
//! left (or [`KILL_WAIT`] after the SIGKILL). Each look returns when the
//! next is due, so one thread can end any number of trees side by side
//! (the ender, and [`Supervisor::terminate_all`]), never sleeping on one.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::cgroup;
use super::group::{self, Ids, Numbers, Orphans};
use super::process::{self, Stat, KILL_WAIT};
use super::{reap, Ended, Mode, Supervisor, Tree};

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
    /// Ends `tree`: SIGTERM to all of it, SIGKILL to what is left after the
    /// grace; returns when nothing is left (or [`KILL_WAIT`] after the
    /// SIGKILL, with what is left in [`Ended::left`]).
    pub fn terminate(&self, tree: &Tree) -> Ended {
        self.terminate_all(std::slice::from_ref(tree))
            .pop()
            .unwrap_or_default()
    }

    /// [`terminate`](Self::terminate) for many trees at once: one grace for
    /// all (service stop). The results are in the order of `trees`.
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
        let table = match self.mode {
            Mode::ProcessGroups { .. } => process::snapshot(),
            Mode::Cgroup(_) => Vec::new(),
        };
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
        match (&self.mode, &e.tree.cgroup) {
            (Mode::Cgroup(root), Some(dir)) => {
                if !cgroup::populated(dir).unwrap_or(true) {
                    return Vec::new();
                }
                let path = root.path_of(dir).unwrap_or_default();
                if signal == Signal::SIGKILL {
                    if let Err(err) = cgroup::kill(dir) {
                        e.ended.problem = Some(format!("cannot kill {}: {err}", dir.display()));
                    }
                }
                let procs = cgroup::procs(dir);
                for &pid in &procs {
                    if e.signalled.insert((pid, 0, signal as i32)) {
                        process::signal_checked(pid, signal, || cgroup::holds(&path, pid));
                    }
                }
                procs
            }
            _ => {
                // The group number is the turn's while its leader exists
                // (running or a zombie); once reaped, the number may have
                // been freed and reused, so a member must carry the marker
                // (or have been seen before).
                let leader = e.tree.pid;
                let numbers = if table
                    .iter()
                    .any(|p| p.pid == leader && p.start_time == e.tree.start_time)
                {
                    Numbers::Trusted
                } else {
                    Numbers::WithMarker
                };
                let ids = Ids {
                    leader,
                    leader_start: e.tree.start_time,
                    numbers,
                    orphans: Orphans::ChildrenOf(std::process::id()),
                };
                let marker = e.marker.clone();
                // A claimed pid is a turn's own process (another turn's,
                // at service stop), never an orphan: its environment is not
                // read.
                let mut has_marker = |pid| {
                    !reap::is_claimed(pid) && process::environ_has(pid, &marker) == Some(true)
                };
                let alive: Vec<Stat> = group::members(table, &ids, &mut e.known, &mut has_marker)
                    .into_iter()
                    .filter(|p| !p.is_gone())
                    .collect();
                for p in &alive {
                    if e.signalled.insert((p.pid, p.start_time, signal as i32)) {
                        process::signal_exact(p.pid, p.start_time, signal);
                    }
                }
                // The group as a whole too, for what forked since the scan
                // (its number is the turn's while a member is in it).
                if alive.iter().any(|p| p.pgid == e.tree.pid) {
                    let pgid = nix::unistd::Pid::from_raw(e.tree.pid as i32);
                    let _ = nix::sys::signal::killpg(pgid, signal);
                }
                alive.iter().map(|p| p.pid).collect()
            }
        }
    }

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
