//! Signalling everything of a tree that runs now, once per signal: the
//! leader through its pidfd, each member its supervision mode finds (its
//! cgroup's, or its process group and the marked `setsid` descendants),
//! each checked to be that member still when it is signalled. The session
//! machine keeps the grace between SIGTERM and SIGKILL.

use std::collections::HashSet;

use nix::sys::signal::Signal;

use super::cgroup;
use super::members::{Member, TreeLook};
use super::process::{self, Stat};
use super::{Mode, Supervisor, Tree};

/// One tree and what it has been sent.
#[derive(Debug)]
pub(super) struct TreeSignals {
    /// How its members are found.
    pub look: TreeLook,
    /// (pid, start time or 0, signal) already sent.
    signalled: HashSet<(u32, u64, i32)>,
    /// Why a signal could not be sent as it should, if one could not.
    pub problem: Option<String>,
}

impl TreeSignals {
    /// `tree`, sent nothing yet.
    pub(super) fn new(tree: Tree) -> TreeSignals {
        TreeSignals {
            look: TreeLook::new(tree),
            signalled: HashSet::new(),
            problem: None,
        }
    }
}

impl Supervisor {
    /// Sends `signal` once to everything of `tree` that runs now (the
    /// leader through its pidfd, every member found as
    /// its mode finds them) and returns at once: the
    /// caller keeps the grace itself (the session machine's kill grace) and
    /// sends SIGKILL when it is over. Returns the pids signalled.
    pub fn signal(&self, tree: &Tree, signal: Signal) -> Vec<u32> {
        let table = self.table();
        let mut once = TreeSignals::new(tree.clone());
        let pids = self.signal_tree(&mut once, &table, signal);
        if !pids.contains(&tree.pid) {
            // The look missed the leader (a no-op if it has exited).
            tree.signal_leader(signal);
        }
        pids
    }

    /// Sends `signal` to what of `e`'s tree has not had it; returns the pids
    /// still running.
    pub(super) fn signal_tree(
        &self,
        e: &mut TreeSignals,
        table: &[Stat],
        signal: Signal,
    ) -> Vec<u32> {
        let running = self.running(&mut e.look, table);
        let cgroup = match (&self.mode, &e.look.tree.cgroup) {
            (Mode::Cgroup(root), Some(dir)) => Some((root.path_of(dir).unwrap_or_default(), dir)),
            _ => None,
        };
        if let Some((_, dir)) = &cgroup {
            if signal == Signal::SIGKILL && !running.is_empty() {
                if let Err(err) = cgroup::kill(dir) {
                    e.problem = Some(format!("cannot kill {}: {err}", dir.display()));
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
}
