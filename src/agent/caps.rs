//! Places per key (per process, per session), each key under one cap,
//! entered without waiting: one process or one session past its cap is
//! answered "busy" at once and leaves every other one its places.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// The most connections served at once (each on its own thread); past it a
/// caller is answered [`busy`](super::busy) at once.
pub const MAX_CONNECTIONS: usize = 256;
/// The most website calls at once; past it a forwarded command is answered
/// [`busy`](super::busy) at once. Calls hold connections for up to the website's timeout,
/// so this leaves most connections to calls that need no website.
pub const MAX_WEBSITE_CALLS: usize = 64;
/// Connections from one process at once (checked by the acceptor).
pub const MAX_PER_PROCESS: usize = 16;
/// Connections classified to one session at once.
pub const MAX_PER_SESSION: usize = 32;
/// Connections at once from callers that belong to no session (loop
/// scripts, refused callers), together.
pub const MAX_OUTSIDE_SESSIONS: usize = 64;

/// The agent socket's caps (the constants here by default; tests lower
/// them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// Connections served at once, in all.
    pub connections: usize,
    /// Connections from one process at once.
    pub per_process: usize,
    /// Connections classified to one session at once.
    pub per_session: usize,
    /// Connections of callers of no session at once, together.
    pub outside_sessions: usize,
    /// Website calls at once.
    pub website_calls: usize,
}

impl Default for Caps {
    fn default() -> Caps {
        Caps {
            connections: MAX_CONNECTIONS,
            per_process: MAX_PER_PROCESS,
            per_session: MAX_PER_SESSION,
            outside_sessions: MAX_OUTSIDE_SESSIONS,
            website_calls: MAX_WEBSITE_CALLS,
        }
    }
}

/// At most `cap` holders per key.
#[derive(Debug)]
pub struct Counts<K: Eq + Hash> {
    held: Arc<Mutex<HashMap<K, usize>>>,
    cap: usize,
}

impl<K: Eq + Hash> Clone for Counts<K> {
    fn clone(&self) -> Self {
        Counts {
            held: self.held.clone(),
            cap: self.cap,
        }
    }
}

/// One place under a key, given back on drop.
#[derive(Debug)]
pub struct Held<K: Eq + Hash> {
    held: Arc<Mutex<HashMap<K, usize>>>,
    key: Option<K>,
}

impl<K: Eq + Hash + Clone> Counts<K> {
    /// Counts with `cap` places per key.
    pub fn new(cap: usize) -> Counts<K> {
        Counts {
            held: Arc::default(),
            cap,
        }
    }

    /// A place under `key`, or `None` when its `cap` are held.
    pub fn enter(&self, key: &K) -> Option<Held<K>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let n = held.entry(key.clone()).or_insert(0);
        if *n >= self.cap {
            return None;
        }
        *n += 1;
        Some(Held {
            held: self.held.clone(),
            key: Some(key.clone()),
        })
    }

    /// The cap per key.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// How many places `key` holds.
    pub fn held(&self, key: &K) -> usize {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.get(key).copied().unwrap_or(0)
    }
}

impl<K: Eq + Hash> Drop for Held<K> {
    fn drop(&mut self) {
        let Some(key) = self.key.take() else { return };
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = held.get_mut(&key) {
            *n -= 1;
            if *n == 0 {
                // An empty key takes no memory: keys come and go with peers.
                held.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_has_its_own_cap_and_empty_keys_are_forgotten() {
        let counts = Counts::<&str>::new(2);
        let a1 = counts.enter(&"a").unwrap();
        let _a2 = counts.enter(&"a").unwrap();
        assert!(counts.enter(&"a").is_none(), "a is at its cap");
        let b = counts.enter(&"b").expect("b has its own places");
        drop(a1);
        assert_eq!(counts.held(&"a"), 1);
        assert!(counts.enter(&"a").is_some());
        drop(b);
        assert_eq!(counts.held.lock().unwrap().get("b"), None);
    }
}
