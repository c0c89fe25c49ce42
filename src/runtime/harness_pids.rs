//! Which processes are harnesses Core started, and for which session. The
//! session side registers a harness when it spawns it and removes it when it
//! exits; the agent socket reads it to classify callers.
//!
//! A harness is keyed by its pid and start time ([`ProcKey`]), not its pid
//! alone: an entry outlives its process (it is removed once the harness has
//! exited and what it left behind is gone, which takes up to the session's
//! kill grace when a `setsid` descendant ignores SIGTERM), and a pid reused
//! in that time must not be taken for the harness. A harness always wins, so that mistake
//! would hand a session's rights to an unrelated process.
//!
//! In cgroup mode each harness is also known by its turn's cgroup
//! (`…/room-core/<session>-<seq>`, read from `/proc/PID/cgroup` when it is
//! registered: it is spawned into that cgroup, and only Core moves processes
//! between them). Every process in it, or in a cgroup below it, is that
//! session's harness for classification, however it detached.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::procfs::{ProcKey, Procfs};
use crate::supervise::cgroup::BASE_NAME;

/// What is known of one registered harness.
#[derive(Debug, Clone)]
struct Entry {
    session: String,
    /// Its turn's cgroup as `/proc/PID/cgroup` shows it; `None` outside a
    /// turn cgroup (process-group mode).
    cgroup: Option<String>,
}

/// A shared (pid, start time) → session ID map, with each harness's turn
/// cgroup.
#[derive(Debug, Clone, Default)]
pub struct HarnessPids(Arc<RwLock<HashMap<ProcKey, Entry>>>);

/// Whether the cgroup `path` is a turn cgroup of `session`:
/// `…/room-core/<session>-<seq>`. A harness in process-group mode sits in
/// the service's own cgroup, which must never count as a turn's.
pub(crate) fn is_turn_cgroup_of(path: &str, session: &str) -> bool {
    let mut parts = path.rsplit('/');
    let (Some(name), Some(parent)) = (parts.next(), parts.next()) else {
        return false;
    };
    parent == BASE_NAME
        && name
            .strip_prefix(session)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|seq| !seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether the cgroup `path` is `turn` or below it.
fn within(path: &str, turn: &str) -> bool {
    path.strip_prefix(turn)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

impl HarnessPids {
    /// Records that the process `key` is `session`'s harness, with its turn
    /// cgroup if it is in one (read now: the harness is Core's unreaped
    /// child, so its pid is still its own).
    pub fn insert(&self, key: ProcKey, session: &str) {
        let cgroup = Procfs::default()
            .cgroup(key.pid)
            .filter(|c| is_turn_cgroup_of(c, session));
        self.insert_with_cgroup(key, session, cgroup);
    }

    /// [`HarnessPids::insert`] with the cgroup given (tests).
    pub fn insert_with_cgroup(&self, key: ProcKey, session: &str, cgroup: Option<String>) {
        let entry = Entry {
            session: session.to_string(),
            cgroup,
        };
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, entry);
    }

    /// Forgets the process `key` (the harness exited).
    pub fn remove(&self, key: ProcKey) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
    }

    /// The session whose harness the process `key` is, if any.
    pub fn session_of(&self, key: ProcKey) -> Option<String> {
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .map(|e| e.session.clone())
    }

    /// The session whose turn's cgroup is the cgroup `path` (as
    /// `/proc/PID/cgroup` shows it) or holds it, if any.
    pub fn session_in_cgroup(&self, path: &str) -> Option<String> {
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .find(|e| e.cgroup.as_deref().is_some_and(|turn| within(path, turn)))
            .map(|e| e.session.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_with_another_start_time_is_not_the_harness() {
        let pids = HarnessPids::default();
        let harness = ProcKey {
            pid: 10,
            start_time: 100,
        };
        let recycled = ProcKey {
            pid: 10,
            start_time: 101,
        };
        pids.insert(harness, "cr_a");
        assert_eq!(pids.session_of(harness).as_deref(), Some("cr_a"));
        assert_eq!(pids.session_of(recycled), None);
        // A second harness on the reused pid; the first one's removal leaves it.
        pids.insert(recycled, "cr_b");
        pids.remove(harness);
        assert_eq!(pids.session_of(recycled).as_deref(), Some("cr_b"));
    }

    #[test]
    fn only_a_turn_cgroup_of_the_session_and_what_is_below_it_count() {
        assert!(is_turn_cgroup_of("/svc/room-core/cr_a-3", "cr_a"));
        assert!(is_turn_cgroup_of("/room-core/cr-a-b-12", "cr-a-b"));
        // The service's own cgroup (process-group mode), another session's
        // turn, a name without a sequence, a cgroup below a turn.
        for (path, session) in [
            ("/", "cr_a"),
            ("/system.slice/room-core.service", "cr_a"),
            ("/room-core/cr_b-3", "cr_a"),
            ("/room-core/cr_a-", "cr_a"),
            ("/room-core/cr_a-3x", "cr_a"),
            ("/room-core/cr_a-3/sub", "cr_a"),
            ("/other/cr_a-3", "cr_a"),
        ] {
            assert!(!is_turn_cgroup_of(path, session), "{path}");
        }
        let pids = HarnessPids::default();
        let key = ProcKey {
            pid: 10,
            start_time: 100,
        };
        pids.insert_with_cgroup(key, "cr_a", Some("/room-core/cr_a-3".into()));
        let of = |p: &str| pids.session_in_cgroup(p);
        assert_eq!(of("/room-core/cr_a-3").as_deref(), Some("cr_a"));
        assert_eq!(of("/room-core/cr_a-3/tool").as_deref(), Some("cr_a"));
        assert_eq!(of("/room-core/cr_a-30"), None);
        assert_eq!(of("/room-core"), None);
        pids.remove(key);
        assert_eq!(of("/room-core/cr_a-3"), None, "gone with its harness");
    }
}
