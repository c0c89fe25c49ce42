//! What of a tree runs now, look by look: its cgroup's processes, or its
//! session, process group, descendants and marked orphans as group.rs
//! finds them. One [`TreeLook`] keeps what the looks at a tree have
//! learned; the ending (which signals what it finds), the watching (which
//! only looks) and a one-off signal share it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::cgroup;
use super::group::{self, Ids, Numbers, Orphans};
use super::process::{self, Stat};
use super::{reap, Ended, Mode, Supervisor, Tree};

/// A tree and what the looks at it learned so far.
#[derive(Debug)]
pub(super) struct TreeLook {
    pub(super) tree: Tree,
    marker: Vec<u8>,
    /// Members seen so far (pid to start time): a member stays one
    /// whatever it does to its session, group or environment.
    known: HashMap<u32, u64>,
}

/// A process of a tree found running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Member {
    /// Its pid.
    pub(super) pid: u32,
    /// Its start time; `None` in a cgroup, which names it for as long as
    /// it is in there.
    pub(super) start_time: Option<u64>,
    /// It is in the turn's process group (which a group signal reaches).
    pub(super) in_group: bool,
}

impl TreeLook {
    /// `tree`, not looked at yet.
    pub(super) fn new(tree: Tree) -> TreeLook {
        TreeLook {
            marker: tree.key.marker(),
            tree,
            known: HashMap::new(),
        }
    }

    /// The tree.
    pub(super) fn tree(&self) -> &Tree {
        &self.tree
    }

    /// Nothing of the tree runs any more (or it is given up, then
    /// `ended.left` says what still runs): its cgroup is removed if it is
    /// empty, and what is not clean is logged.
    pub(super) fn finish(&self, ended: &mut Ended) {
        if let Some(dir) = &self.tree.cgroup {
            if ended.left.is_empty() {
                let until = Instant::now() + Duration::from_secs(1);
                if let Err(e) = cgroup::remove(dir, until) {
                    ended.problem = Some(format!("cannot remove {}: {e}", dir.display()));
                }
            }
        }
        if !ended.is_clean() {
            log::warn!("turn {}: not all of it ended: {ended:?}", self.tree.key);
        }
    }
}

impl Supervisor {
    /// The process table a look needs (none in a cgroup, whose members
    /// are listed by the kernel).
    pub(super) fn table(&self) -> Vec<Stat> {
        match self.mode {
            Mode::ProcessGroups { .. } => process::snapshot(),
            Mode::Cgroup(_) => Vec::new(),
        }
    }

    /// What of `look`'s tree runs now; `table` is [`table`](Self::table)'s.
    pub(super) fn running(&self, look: &mut TreeLook, table: &[Stat]) -> Vec<Member> {
        if let (Mode::Cgroup(_), Some(dir)) = (&self.mode, &look.tree.cgroup) {
            if !cgroup::populated(dir).unwrap_or(true) {
                return Vec::new();
            }
            return cgroup::procs(dir)
                .into_iter()
                .map(|pid| Member {
                    pid,
                    start_time: None,
                    in_group: false,
                })
                .collect();
        }
        // The group number is the turn's while its leader exists (running
        // or a zombie); once reaped, the number may have been freed and
        // reused, so a member must carry the marker (or have been seen
        // before).
        let leader = look.tree.pid;
        let numbers = if table
            .iter()
            .any(|p| p.pid == leader && p.start_time == look.tree.start_time)
        {
            Numbers::Trusted
        } else {
            Numbers::WithMarker
        };
        let ids = Ids {
            leader,
            leader_start: look.tree.start_time,
            numbers,
            orphans: Orphans::ChildrenOf(std::process::id()),
        };
        let marker = &look.marker;
        // A claimed pid is a turn's own process (another turn's, at service
        // stop), never an orphan: its environment is not read.
        let mut has_marker =
            |pid| !reap::is_claimed(pid) && process::environ_has(pid, marker) == Some(true);
        group::members(table, &ids, &mut look.known, &mut has_marker)
            .into_iter()
            .filter(|p| !p.is_gone())
            .map(|p| Member {
                pid: p.pid,
                start_time: Some(p.start_time),
                in_group: p.pgid == leader,
            })
            .collect()
    }
}
