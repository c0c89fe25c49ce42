//! The timer thread: a binary heap of (deadline, session) that turns due
//! deadlines into `Timeout` inputs. A stale or duplicate deadline is harmless:
//! the launch machine ignores a timeout that is not due.
//!
//! Deadlines are coalesced: the thread sleeps until the earliest deadline
//! plus [`SLACK`] and then fires every deadline that is due, as one batch for
//! the event pool. A deadline never fires early (the machine would ignore an
//! early timeout), and at most `SLACK` late, which the machines accept (a
//! late timeout changes nothing but its timing). With a thousand waiting
//! starts polling every 250 ms that is a few hundred wake-ups a second
//! instead of four thousand, and arming a deadline later than the next
//! wake-up does not wake the thread at all.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crossbeam_channel::Sender;
use room_machines::Millis;

use super::clock::Clock;
use super::Event;

/// How late a deadline may fire so that neighbouring deadlines share one
/// wake-up.
pub const SLACK: Millis = 10;

/// Handle to arm deadlines on the timer thread.
#[derive(Clone)]
pub struct Timer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Timer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timer").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Shared {
    inner: Mutex<Inner>,
    wake: Condvar,
}

/// A deadline, ordered by its time only (then by arming order): comparing
/// session IDs when many deadlines share a millisecond was most of the
/// heap's cost.
struct Entry {
    at: Millis,
    seq: u64,
    session: String,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Default)]
struct Inner {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
    /// When the thread wakes next on its own: `None` while it sleeps with
    /// nothing armed; `Some(0)` while it is awake.
    wakes_at: Option<Millis>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Timer {
    /// Starts the thread; due deadlines are sent to `events` in batches.
    pub fn start(clock: Clock, events: Sender<Event>) -> Timer {
        let shared = Arc::new(Shared::default());
        let thread = shared.clone();
        std::thread::Builder::new()
            .name("timer".into())
            .spawn(move || run(clock, &thread, events))
            .expect("spawn timer thread");
        Timer { shared }
    }

    /// Sends `Timeout` to `session` at `at` (at most `SLACK` later).
    pub fn arm(&self, session: &str, at: Millis) {
        let mut inner = self.shared.lock();
        inner.seq += 1;
        let seq = inner.seq;
        inner.heap.push(Reverse(Entry {
            at,
            seq,
            session: session.to_string(),
        }));
        // Wake the thread only if its next wake-up would be too late for
        // this deadline.
        let in_time = inner
            .wakes_at
            .is_some_and(|w| w <= at.saturating_add(SLACK));
        if !in_time {
            drop(inner);
            self.shared.wake.notify_one();
        }
    }
}

fn run(clock: Clock, shared: &Shared, events: Sender<Event>) {
    let mut inner = shared.lock();
    loop {
        let now = clock.now();
        let mut due = Vec::new();
        while inner.heap.peek().is_some_and(|Reverse(e)| e.at <= now) {
            let Reverse(e) = inner.heap.pop().expect("peeked");
            due.push(e.session);
        }
        if !due.is_empty() {
            // Awake: an arm meanwhile needs no notification, the loop
            // looks at the heap again after sending.
            inner.wakes_at = Some(0);
            drop(inner);
            due.sort_unstable();
            due.dedup();
            if events.send(Event::Timeouts(due)).is_err() {
                return;
            }
            inner = shared.lock();
            continue;
        }
        inner = match inner.heap.peek() {
            Some(Reverse(e)) => {
                let wake = e.at.saturating_add(SLACK);
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
    fn fires_due_deadlines_in_one_batch_never_early_and_at_most_slack_late() {
        let clock = Clock::default();
        let (tx, rx) = crossbeam_channel::unbounded();
        let timer = Timer::start(clock, tx);
        let base = clock.now() + 50;
        timer.arm("b", base + 3);
        timer.arm("a", base);
        timer.arm("a", base + 1);
        let Event::Timeouts(ids) = rx.recv_timeout(Duration::from_secs(5)).unwrap() else {
            panic!("not a batch of timeouts");
        };
        let fired = clock.now();
        assert_eq!(ids, ["a", "b"], "one batch, duplicates dropped");
        assert!(fired >= base + 3, "never early: {fired} < {}", base + 3);
        assert!(
            fired <= base + SLACK + 50,
            "at most SLACK late (+ scheduling)"
        );
        // An earlier deadline armed while the thread sleeps wakes it.
        timer.arm("late", clock.now() + 60_000);
        let soon = clock.now() + 20;
        timer.arm("soon", soon);
        let Event::Timeouts(ids) = rx.recv_timeout(Duration::from_secs(5)).unwrap() else {
            panic!("not a batch of timeouts");
        };
        assert_eq!(ids, ["soon"]);
        assert!(clock.now() >= soon);
    }
}
