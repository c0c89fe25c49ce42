//! Which processes are harnesses Core started, and for which session. The
//! session side registers a harness when it spawns it and removes it when it
//! exits; the agent socket reads it to classify callers.
//!
//! A harness is keyed by its pid and start time ([`ProcKey`]), not its pid
//! alone: an entry outlives its process (it is removed once the harness has
//! exited and the supervisor has ended what it left behind, which takes up
//! to the kill grace when a `setsid` descendant ignores SIGTERM), and a pid
//! reused in that time must not be taken for the harness. A harness always wins, so that mistake
//! would hand a session's rights to an unrelated process.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::procfs::ProcKey;

/// A shared (pid, start time) → session ID map.
#[derive(Debug, Clone, Default)]
pub struct HarnessPids(Arc<RwLock<HashMap<ProcKey, String>>>);

impl HarnessPids {
    /// Records that the process `key` is `session`'s harness.
    pub fn insert(&self, key: ProcKey, session: &str) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, session.to_string());
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
            .cloned()
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
}
