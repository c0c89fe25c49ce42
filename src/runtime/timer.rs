//! The timer thread: a binary heap of (deadline, session) that turns due
//! deadlines into `Timeout` inputs. A stale or duplicate deadline is harmless:
//! the launch machine ignores a timeout that is not due.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use room_machines::{Input, Millis};

use super::clock::Clock;
use super::Event;

/// Handle to arm deadlines on the timer thread.
#[derive(Debug, Clone)]
pub struct Timer {
    arm: Sender<(Millis, String)>,
}

impl Timer {
    /// Starts the thread; due deadlines are sent to `events`.
    pub fn start(clock: Clock, events: Sender<Event>) -> Timer {
        let (arm, rx) = crossbeam_channel::unbounded();
        std::thread::Builder::new()
            .name("timer".into())
            .spawn(move || run(clock, rx, events))
            .expect("spawn timer thread");
        Timer { arm }
    }

    /// Sends `Timeout` to `session` at `at`.
    pub fn arm(&self, session: &str, at: Millis) {
        let _ = self.arm.send((at, session.to_string()));
    }
}

fn run(clock: Clock, rx: Receiver<(Millis, String)>, events: Sender<Event>) {
    let mut heap: BinaryHeap<Reverse<(Millis, String)>> = BinaryHeap::new();
    loop {
        let now = clock.now();
        while heap.peek().is_some_and(|Reverse((at, _))| *at <= now) {
            let Reverse((_, id)) = heap.pop().expect("peeked");
            if events.send(Event::Input(id, Input::Timeout)).is_err() {
                return;
            }
        }
        let next = match heap.peek() {
            Some(Reverse((at, _))) => rx.recv_deadline(clock.instant(*at)),
            // Nothing armed: wait for the next deadline without a timeout.
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match next {
            Ok(entry) => heap.push(Reverse(entry)),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}
