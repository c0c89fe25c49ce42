//! A turn's tree where no cgroup can be made: its session, its process
//! group, its descendants, and its marked orphans.
//!
//! The turn's process leads a session of its own (its pid is the session's
//! ID and its group's). The tree is every
//! process that
//! - is the turn's process (same pid and start time), or is in its process
//!   group or session, or
//! - was seen as a member before (same pid and start time), or
//! - is an orphan carrying the turn's marker (`ROOM_CORE_TURN=<key>` in its
//!   environment): the service is a child subreaper, so a `setsid` +
//!   double-fork daemon is re-parented to the service, where it is found by
//!   that marker, or
//! - descends from a member,
//!
//! and started no earlier than the turn (an older process cannot be part
//! of it, whatever a recycled number says).
//!
//! Limits (honest ones): a process that both leaves the session (`setsid`)
//! and clears or rewrites its environment, and whose parent has exited, is
//! not found; a process whose environment cannot be read (a setuid program
//! run by a non-root service) is found only through its session, group or
//! parent. Each scan reads the whole process table, so a tree that forks
//! faster than it is scanned can outrun the grace; SIGKILL rounds go on
//! until the bound of `terminate`.

use std::collections::HashMap;
use std::io;

use super::process::Stat;

/// How far the turn's session and group numbers name the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Numbers {
    /// The turn's process is alive (or was seen alive by this service): its
    /// session and group numbers are still its own.
    Trusted,
    /// The turn's process is gone: a member of that session or group must
    /// also carry the marker (the numbers may have been reused).
    WithMarker,
    /// The turn's pid belongs to another process now: the numbers say
    /// nothing.
    Ignored,
}

/// Where a marked orphan may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Orphans {
    /// Among the children of this pid (the subreaper service).
    ChildrenOf(u32),
    /// Anywhere (after a restart, orphans went to init).
    Anywhere,
}

/// What names one turn's tree.
#[derive(Debug, Clone)]
pub(crate) struct Ids {
    /// The turn's process, session and group ID (0: unknown).
    pub leader: u32,
    /// Its start time (0: unknown).
    pub leader_start: u64,
    /// See [`Numbers`].
    pub numbers: Numbers,
    /// See [`Orphans`].
    pub orphans: Orphans,
}

/// The members of the tree in `table` (zombies included: the caller
/// decides what is gone). `known` holds members seen before (pid to start
/// time) and gains the ones found now. `has_marker` reads a process's
/// environment; it is asked only where the rules need it.
pub(crate) fn members(
    table: &[Stat],
    ids: &Ids,
    known: &mut HashMap<u32, u64>,
    has_marker: &mut dyn FnMut(u32) -> bool,
) -> Vec<Stat> {
    let mut children: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, p) in table.iter().enumerate() {
        children.entry(p.ppid).or_default().push(i);
    }
    let young = |p: &Stat| p.start_time >= ids.leader_start;
    let mut member = vec![false; table.len()];
    let mut todo = Vec::new();
    for (i, p) in table.iter().enumerate() {
        if !young(p) {
            continue;
        }
        let numbered = ids.leader != 0 && (p.sid == ids.leader || p.pgid == ids.leader);
        let seed = (ids.leader != 0 && p.pid == ids.leader && p.start_time == ids.leader_start)
            || known.get(&p.pid) == Some(&p.start_time)
            || match ids.numbers {
                Numbers::Trusted => numbered,
                Numbers::WithMarker => numbered && has_marker(p.pid),
                Numbers::Ignored => false,
            }
            || (match ids.orphans {
                Orphans::ChildrenOf(parent) => p.ppid == parent,
                Orphans::Anywhere => true,
            } && !p.is_gone()
                && has_marker(p.pid));
        if seed {
            member[i] = true;
            todo.push(i);
        }
    }
    while let Some(i) = todo.pop() {
        for &c in children.get(&table[i].pid).into_iter().flatten() {
            if !member[c] && young(&table[c]) {
                member[c] = true;
                todo.push(c);
            }
        }
    }
    let found: Vec<Stat> = table
        .iter()
        .zip(member)
        .filter_map(|(p, m)| m.then_some(*p))
        .collect();
    known.extend(found.iter().map(|p| (p.pid, p.start_time)));
    found
}

/// Makes this process a child subreaper: orphans of its descendants are
/// re-parented to it instead of to init, where their marker finds them.
pub(crate) fn become_subreaper() -> io::Result<()> {
    nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERVICE: u32 = 100;

    fn p(pid: u32, ppid: u32, pgid: u32, sid: u32, start: u64) -> Stat {
        Stat {
            pid,
            state: b'S',
            ppid,
            pgid,
            sid,
            start_time: start,
        }
    }

    /// The service (100) ran turn 200; 200 ran a shell 201 and a tool
    /// 202; 203 left with `setsid` (its own session 203) and ran 204; 205
    /// is a double-forked daemon re-parented to the service, marked; 300 is
    /// another turn's; 1 and 50 are unrelated.
    fn table() -> Vec<Stat> {
        vec![
            p(1, 0, 1, 1, 1),
            p(50, 1, 50, 50, 5),
            p(SERVICE, 1, SERVICE, SERVICE, 10),
            p(200, SERVICE, 200, 200, 20),
            p(201, 200, 200, 200, 21),
            p(202, 201, 202, 200, 22),
            p(203, 201, 203, 203, 23),
            p(204, 203, 203, 203, 24),
            p(205, SERVICE, 205, 205, 25),
            p(300, SERVICE, 300, 300, 30),
        ]
    }

    fn pids(found: &[Stat]) -> Vec<u32> {
        let mut v: Vec<u32> = found.iter().map(|s| s.pid).collect();
        v.sort();
        v
    }

    fn ids(numbers: Numbers, orphans: Orphans) -> Ids {
        Ids {
            leader: 200,
            leader_start: 20,
            numbers,
            orphans,
        }
    }

    #[test]
    fn the_tree_is_the_session_the_descendants_and_the_marked_orphans() {
        let mut known = HashMap::new();
        let mut asked = Vec::new();
        let found = members(
            &table(),
            &ids(Numbers::Trusted, Orphans::ChildrenOf(SERVICE)),
            &mut known,
            &mut |pid| {
                asked.push(pid);
                pid == 205
            },
        );
        assert_eq!(pids(&found), vec![200, 201, 202, 203, 204, 205]);
        // Only the service's children outside the tree were read.
        asked.sort();
        assert_eq!(asked, vec![205, 300]);
        assert_eq!(known.len(), 6);
    }

    #[test]
    fn a_member_seen_before_stays_one_after_it_is_reparented() {
        let mut known = HashMap::new();
        let i = ids(Numbers::Trusted, Orphans::ChildrenOf(SERVICE));
        members(&table(), &i, &mut known, &mut |_| false);
        // 203 exits: 204 goes to the service, in session 203, unmarked.
        let mut t = table();
        t.retain(|s| s.pid != 203);
        t.iter_mut().find(|s| s.pid == 204).unwrap().ppid = SERVICE;
        let found = members(&t, &i, &mut HashMap::new(), &mut |_| false);
        assert!(!pids(&found).contains(&204), "without memory it is lost");
        let found = members(&t, &i, &mut known, &mut |_| false);
        assert!(pids(&found).contains(&204), "{:?}", pids(&found));
        // A recycled pid 204 (another start time) is not a member.
        t.iter_mut().find(|s| s.pid == 204).unwrap().start_time = 99;
        let found = members(&t, &i, &mut known, &mut |_| false);
        assert!(!pids(&found).contains(&204));
    }

    #[test]
    fn without_the_leader_numbers_need_the_marker_and_old_processes_never_count() {
        let mut t = table();
        t.retain(|s| s.pid != 200);
        let found = members(
            &t,
            &ids(Numbers::WithMarker, Orphans::Anywhere),
            &mut HashMap::new(),
            &mut |pid| pid == 201 || pid == 205 || pid == 50,
        );
        // 201 (marked, session 200) and what it started; 205 (marked);
        // 50 is marked but older than the turn.
        assert_eq!(pids(&found), vec![201, 202, 203, 204, 205]);
        let found = members(
            &t,
            &ids(Numbers::Ignored, Orphans::Anywhere),
            &mut HashMap::new(),
            &mut |_| false,
        );
        assert!(found.is_empty(), "a recycled leader's numbers name nothing");
    }
}
