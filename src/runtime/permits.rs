//! Startup permits: a counting semaphore that never blocks a thread. A
//! launch asks; if none is free it is queued, and the release that frees one
//! hands it to the oldest waiter (the runtime then sends it `PermitGranted`).

use std::collections::VecDeque;
use std::sync::Mutex;

/// The semaphore.
#[derive(Debug)]
pub(crate) struct Permits {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    free: usize,
    waiting: VecDeque<String>,
}

impl Permits {
    /// A semaphore with `count` permits.
    pub(crate) fn new(count: usize) -> Permits {
        Permits {
            inner: Mutex::new(Inner {
                free: count,
                waiting: VecDeque::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a permit for `session` now (`true`) or queues it (`false`).
    pub(crate) fn ask(&self, session: &str) -> bool {
        let mut inner = self.lock();
        if inner.free > 0 {
            inner.free -= 1;
            true
        } else {
            inner.waiting.push_back(session.to_string());
            false
        }
    }

    /// Gives a permit back; returns the queued session it now belongs to.
    pub(crate) fn release(&self) -> Option<String> {
        let mut inner = self.lock();
        match inner.waiting.pop_front() {
            Some(next) => Some(next),
            None => {
                inner.free += 1;
                None
            }
        }
    }

    /// Drops `session` from the queue (it closed before its turn came).
    pub(crate) fn cancel(&self, session: &str) {
        self.lock().waiting.retain(|s| s != session);
    }

    /// Free permits right now (for metrics and tests).
    pub(crate) fn free(&self) -> usize {
        self.lock().free
    }

    /// Launches queued for a permit right now (for metrics and health).
    pub(crate) fn queued(&self) -> usize {
        self.lock().waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_a_released_permit_to_the_oldest_waiter() {
        let p = Permits::new(1);
        assert!(p.ask("a"));
        assert!(!p.ask("b"));
        assert!(!p.ask("c"));
        p.cancel("b");
        assert_eq!(p.release(), Some("c".into()));
        assert_eq!(p.release(), None);
        assert_eq!(p.free(), 1);
    }
}
