//! The timer thread: turns due deadlines into `Timeout` inputs. A stale or
//! duplicate deadline is harmless: the launch machine ignores a timeout that
//! is not due.
//!
//! Deadlines are coalesced into buckets [`SLACK`] ms wide: a deadline goes
//! into the bucket that ends at or after it, and the thread wakes once per
//! bucket and fires the whole bucket as one batch for the event pool. A
//! deadline never fires early (the machine would ignore an early timeout),
//! and less than `SLACK` late, which the machines accept (a late timeout
//! changes nothing but its timing). With a thousand waiting starts polling
//! every 250 ms that is at most 25 wake-ups per 250 ms instead of a thousand,
//! arming a deadline in a bucket that is already due to wake the thread does
//! not wake it, and a bucket is taken whole (no per-deadline heap work).
//! A watched start does not poll at all: its only deadlines are its copy
//! limit and, for an unpromised wait on `copying`, the moment the mark turns
//! too old, which fires less than one bucket late (see the launch
//! machine's property tests).

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use room_machines::Millis;

use crate::clock::Clock;

/// The width of a bucket: how late a deadline may fire so that neighbouring
/// deadlines share one wake-up.
pub(crate) const SLACK: Millis = 25;

/// Handle to arm deadlines on the timer thread; a deadline names its
/// session by a `T` (the runtime uses the session's own handle, so a firing
/// deadline needs no lookup).
pub(crate) struct Alarms<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for Alarms<T> {
    fn clone(&self) -> Self {
        Alarms {
            shared: self.shared.clone(),
        }
    }
}

impl<T> std::fmt::Debug for Alarms<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Alarms").finish_non_exhaustive()
    }
}

struct Shared<T> {
    inner: Mutex<Inner<T>>,
    wake: Condvar,
}

struct Inner<T> {
    /// Bucket end → the deadlines in it, in arming order.
    buckets: BTreeMap<Millis, Vec<T>>,
    /// When the thread wakes next on its own: `None` while it sleeps with
    /// nothing armed; `Some(0)` while it is awake.
    wakes_at: Option<Millis>,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The end of the bucket that holds a deadline at `at`: the first multiple
/// of `SLACK` at or after it.
fn bucket(at: Millis) -> Millis {
    at.div_ceil(SLACK).saturating_mul(SLACK)
}

impl<T: Send + 'static> Alarms<T> {
    /// Starts the thread; due deadlines are handed to `fire` in batches
    /// (duplicates included: a stale deadline is harmless). The thread ends
    /// when `fire` returns false.
    pub(crate) fn start(
        clock: Clock,
        fire: impl FnMut(Vec<T>) -> bool + Send + 'static,
    ) -> Alarms<T> {
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                buckets: BTreeMap::new(),
                wakes_at: None,
            }),
            wake: Condvar::new(),
        });
        let thread = shared.clone();
        std::thread::Builder::new()
            .name("timer".into())
            .spawn(move || run(clock, &thread, fire))
            .expect("spawn timer thread");
        Alarms { shared }
    }

    /// Fires `session` at `at` (less than `SLACK` later).
    pub(crate) fn arm(&self, session: T, at: Millis) {
        let end = bucket(at);
        let mut inner = self.shared.lock();
        inner.buckets.entry(end).or_default().push(session);
        // Wake the thread only if it would otherwise sleep past this bucket.
        let in_time = inner.wakes_at.is_some_and(|w| w <= end);
        if !in_time {
            drop(inner);
            self.shared.wake.notify_one();
        }
    }
}

fn run<T>(clock: Clock, shared: &Shared<T>, mut fire: impl FnMut(Vec<T>) -> bool) {
    let mut inner = shared.lock();
    loop {
        let now = clock.now();
        let mut due: Vec<T> = Vec::new();
        while let Some(entry) = inner.buckets.first_entry() {
            if *entry.key() > now {
                break;
            }
            let mut bucket = entry.remove();
            if due.is_empty() {
                due = bucket;
            } else {
                due.append(&mut bucket);
            }
        }
        if !due.is_empty() {
            // Awake: an arm meanwhile needs no notification, the loop
            // looks at the buckets again after firing.
            inner.wakes_at = Some(0);
            drop(inner);
            if !fire(due) {
                return;
            }
            inner = shared.lock();
            continue;
        }
        inner = match inner.buckets.keys().next().copied() {
            Some(wake) => {
                inner.wakes_at = Some(wake);
                let left = clock
                    .instant(wake)
                    .saturating_duration_since(std::time::Instant::now());
                shared
                    .wake
                    .wait_timeout(inner, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => {
                inner.wakes_at = None;
                shared.wake.wait(inner).unwrap_or_else(|e| e.into_inner())
            }
        };
        inner.wakes_at = Some(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn buckets_end_at_or_after_their_deadlines() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), SLACK);
        assert_eq!(bucket(SLACK), SLACK);
        assert_eq!(bucket(SLACK + 1), 2 * SLACK);
        for at in 0..100 {
            assert!(bucket(at) >= at && bucket(at) < at + SLACK);
        }
    }

    #[test]
    fn fires_a_bucket_in_one_batch_and_never_early() {
        let clock = Clock::default();
        let (tx, rx) = crossbeam_channel::unbounded::<Vec<&str>>();
        let timer = Alarms::start(clock, move |due| tx.send(due).is_ok());
        // Three deadlines in one bucket.
        let base = bucket(clock.now() + 50) + 1;
        timer.arm("b", base + 3);
        timer.arm("a", base);
        timer.arm("a", base + 1);
        let ids = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        let fired = clock.now();
        assert_eq!(ids, ["b", "a", "a"], "one batch, in arming order");
        assert!(fired >= base + 3, "never early: {fired} < {}", base + 3);
        // How late it fires is up to the scheduler; the bucket it fires at
        // ends less than SLACK after each deadline (tested above).
        // An earlier deadline armed while the thread sleeps wakes it.
        timer.arm("late", clock.now() + 60_000);
        let soon = clock.now() + 20;
        timer.arm("soon", soon);
        let ids = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert_eq!(ids, ["soon"]);
        assert!(clock.now() >= soon);
    }
}
