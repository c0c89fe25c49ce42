//! A counting gate: at most `cap` holders at once, entered without waiting
//! (a caller past the cap gets a clear "busy" answer instead of a queue).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// At most `cap` holders at once.
#[derive(Debug, Clone)]
pub struct Gate {
    held: Arc<AtomicUsize>,
    cap: usize,
}

/// One place in a [`Gate`], given back on drop.
#[derive(Debug)]
pub struct Pass {
    held: Arc<AtomicUsize>,
}

impl Gate {
    /// A gate for `cap` holders.
    pub fn new(cap: usize) -> Gate {
        Gate {
            held: Arc::default(),
            cap,
        }
    }

    /// A place, or `None` when all `cap` are held.
    pub fn enter(&self) -> Option<Pass> {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.cap).then_some(n + 1)
            })
            .ok()
            .map(|_| Pass {
                held: self.held.clone(),
            })
    }

    /// How many places are held.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// The cap.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Waits until no place is held or `limit` has passed; whether it emptied.
    pub fn wait_empty(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while self.held() > 0 {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        self.held.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_lets_in_at_most_its_cap_and_takes_back_on_drop() {
        let gate = Gate::new(2);
        let a = gate.enter().unwrap();
        let _b = gate.enter().unwrap();
        assert!(gate.enter().is_none());
        drop(a);
        assert_eq!(gate.held(), 1);
        assert!(gate.enter().is_some());
        assert!(!gate.wait_empty(Duration::from_millis(10)));
    }
}
