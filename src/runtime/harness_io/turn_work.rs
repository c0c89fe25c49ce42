//! A turn's work for the event pool, in the order it happened: the lines
//! its stdout gave, the inputs for what its stdin could not take, and its
//! end. The poller and the stdin's senders push; one pool worker at a time
//! takes (the turn is scheduled at most once), so the turn's work is done in
//! order, and a turn that floods gives the worker back after a round. What
//! waits is bounded: past [`WAITING_BYTES`] of lines the poller stops
//! reading the turn's stdout until the worker has caught up, as a full pipe
//! would stop the harness.
//!
//! Until the turn's prompt is handed over (`DeliverPrompt`), its work is
//! held: its start is journalled before anything its harness prints.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use room_machines::session::{Exit, Input};

use super::handle::{Command, IoHandle};
use super::stdin::{Report, TurnInput};
use crate::procfs::ProcKey;
use crate::runtime::reading::Reading;
use crate::sessions::turn_now::TurnNow;
use crate::sessions::SessionHandle;
use crate::supervise::output::Line;

/// The bytes of lines that may wait for the worker before the poller stops
/// reading the turn's stdout (a line over it still goes whole).
pub(super) const WAITING_BYTES: usize = 256 << 10;

/// The items a worker takes in one round before it gives the pool back.
const ROUND: usize = 16;

/// One item of a turn's work.
#[derive(Debug)]
pub(crate) enum Work {
    /// Lines read together from stdout.
    Lines(Vec<Line>),
    /// Inputs for what stdin could not take.
    Undelivered(Vec<Input>),
    /// The harness exited and nothing of its tree is left: its exit status
    /// and its stderr's end.
    Ended {
        /// How it exited.
        exit: Exit,
        /// Its stderr's end.
        detail: String,
    },
}

/// A turn's work queue, and what its worker needs.
pub(crate) struct TurnWork {
    /// The process, as the poller names it.
    pub(crate) id: u64,
    me: Weak<TurnWork>,
    schedule: Schedule,
    io: IoHandle,
    queue: Mutex<Queue>,
    /// Past the journal's cap: the poller drops what stdout says.
    discard: AtomicBool,
    /// Bytes dropped since.
    dropped: AtomicU64,
    /// The session.
    pub(crate) handle: SessionHandle,
    /// The turn the process serves now.
    pub(crate) now: TurnNow,
    /// The process, for the agent socket's table of harnesses.
    pub(crate) key: ProcKey,
    /// Its stdin.
    pub(crate) input: TurnInput,
    /// What the worker keeps between rounds (the batch being built, the
    /// reports of dropped lines); only the scheduled worker takes it.
    pub(crate) reading: Mutex<Reading>,
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Work>,
    /// Bytes of lines waiting.
    bytes: usize,
    /// Until the prompt is handed over.
    held: bool,
    /// A worker has it, or a job for it is queued.
    scheduled: bool,
    /// The poller stopped reading stdout until the worker catches up.
    paused: bool,
}

/// Hands a round of a turn's work to the event pool; false if it is gone.
pub(crate) type Schedule = Box<dyn Fn(Arc<TurnWork>) -> bool + Send + Sync>;

/// What a push asks of the pusher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    /// Go on reading.
    Go,
    /// Stop reading stdout until told (`Resume`).
    Pause,
}

/// What a [`TurnWork`] is made of, besides what it makes itself.
pub(super) struct Parts {
    pub(super) id: u64,
    pub(super) schedule: Schedule,
    pub(super) io: IoHandle,
    pub(super) handle: SessionHandle,
    pub(super) now: TurnNow,
    pub(super) key: ProcKey,
    pub(super) reading: Reading,
}

impl TurnWork {
    /// A held queue for process `parts.id`; its stdin made by `input`, given
    /// where to report what it could not write (this queue).
    pub(super) fn new(parts: Parts, input: impl FnOnce(Report) -> TurnInput) -> Arc<TurnWork> {
        Arc::new_cyclic(|me| TurnWork {
            id: parts.id,
            me: me.clone(),
            schedule: parts.schedule,
            io: parts.io,
            queue: Mutex::new(Queue {
                held: true,
                ..Queue::default()
            }),
            discard: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            handle: parts.handle,
            now: parts.now,
            key: parts.key,
            input: input({
                let me = me.clone();
                Box::new(move |inputs| {
                    if let Some(work) = me.upgrade() {
                        work.push(Work::Undelivered(inputs));
                    }
                })
            }),
            reading: Mutex::new(parts.reading),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `work`; whether the poller should stop reading stdout. The end
    /// is never held: a turn that ends before its prompt was handed over
    /// never had its output read, so its held lines go.
    pub(super) fn push(&self, work: Work) -> Flow {
        let mut q = self.lock();
        if let Work::Lines(lines) = &work {
            q.bytes += lines.iter().map(line_bytes).sum::<usize>();
        }
        if matches!(work, Work::Ended { .. }) && q.held {
            q.held = false;
            q.items.retain(|w| !matches!(w, Work::Lines(_)));
            q.bytes = 0;
        }
        q.items.push_back(work);
        self.schedule(&mut q);
        if q.bytes >= WAITING_BYTES {
            q.paused = true;
            Flow::Pause
        } else {
            Flow::Go
        }
    }

    /// The prompt is handed over: the worker may go.
    pub(crate) fn release(&self) {
        let mut q = self.lock();
        q.held = false;
        self.schedule(&mut q);
    }

    fn schedule(&self, q: &mut Queue) {
        if q.held || q.scheduled || q.items.is_empty() {
            return;
        }
        if let Some(me) = self.me.upgrade() {
            q.scheduled = (self.schedule)(me);
        }
    }

    /// The worker: the next round of work (empty when there is none, and
    /// the turn is no longer scheduled) and whether more is left (then the
    /// worker schedules it again with [`again`](Self::again)).
    pub(crate) fn take(&self) -> (Vec<Work>, bool) {
        let mut q = self.lock();
        if q.held || q.items.is_empty() {
            q.scheduled = false;
            return (Vec::new(), false);
        }
        let n = q.items.len().min(ROUND);
        let round: Vec<Work> = q.items.drain(..n).collect();
        let taken: usize = round
            .iter()
            .map(|w| match w {
                Work::Lines(lines) => lines.iter().map(line_bytes).sum(),
                _ => 0,
            })
            .sum();
        q.bytes -= taken.min(q.bytes);
        if q.paused && q.bytes < WAITING_BYTES / 2 {
            q.paused = false;
            self.io.send(Command::Resume(self.id));
        }
        let more = !q.items.is_empty();
        (round, more)
    }

    /// The worker: more is left after its round; back in the pool's queue,
    /// behind the other turns.
    pub(crate) fn again(&self) {
        let mut q = self.lock();
        q.scheduled = false;
        self.schedule(&mut q);
    }

    /// The journal is full: the poller drops what stdout says from now on.
    pub(crate) fn discard(&self) {
        self.discard.store(true, Ordering::SeqCst);
    }

    /// Whether stdout's lines are dropped.
    pub(super) fn discarding(&self) -> bool {
        self.discard.load(Ordering::SeqCst)
    }

    /// Counts `n` bytes dropped past the cap.
    pub(super) fn count_dropped(&self, n: usize) {
        self.dropped.fetch_add(n as u64, Ordering::SeqCst);
    }

    /// Bytes dropped past the cap.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::SeqCst)
    }
}

impl std::fmt::Debug for TurnWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnWork").field("id", &self.id).finish()
    }
}

/// The bytes a line holds while it waits.
fn line_bytes(line: &Line) -> usize {
    match line {
        Line::Text(s) => s.len(),
        Line::TooLong { head, .. } | Line::NotUtf8 { head, .. } => head.len(),
    }
}
