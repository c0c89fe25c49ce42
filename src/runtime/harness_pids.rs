//! Which processes are harnesses Core started, and for which session. The
//! session side registers a harness's pid when it spawns it and removes it
//! when it exits; the agent socket reads it to classify callers.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// A shared pid → session ID map.
#[derive(Debug, Clone, Default)]
pub struct HarnessPids(Arc<RwLock<HashMap<u32, String>>>);

impl HarnessPids {
    /// Records that `pid` is `session`'s harness.
    pub fn insert(&self, pid: u32, session: &str) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(pid, session.to_string());
    }

    /// Forgets `pid` (the harness exited).
    pub fn remove(&self, pid: u32) {
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&pid);
    }

    /// The session whose harness `pid` is, if any.
    pub fn session_of(&self, pid: u32) -> Option<String> {
        self.0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&pid)
            .cloned()
    }
}
