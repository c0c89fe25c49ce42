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
//! held: its start is journalled before anything its harness prints. Once
//! the prompt is on its way ([`TurnWork::handing_over`]) the harness may
//! answer it and exit before the release: its lines and its end wait for
//! the release then, and none of them is lost.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use room_machines::session::{Exit, Input};

use super::handle::{Command, IoHandle};
use super::stdin::{Report, TurnInput};
use crate::procfs::ProcKey;
use crate::runtime::reading::Reading;
use crate::sessions::live_turn::Held;
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
    /// The harness exited and left processes in its tree.
    LeftBehind,
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
    /// The prompt is being said: an end waits for the release.
    handing_over: bool,
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
    /// of a turn whose prompt was never said is not held: its harness never
    /// had its prompt, so its held lines go. Once the prompt is being said
    /// ([`handing_over`](Self::handing_over)), the end is held with the
    /// lines before it, until the release that follows. A report of what
    /// the harness left that waits still when the end comes goes: the
    /// tree is gone (or given up) by then.
    pub(super) fn push(&self, work: Work) -> Flow {
        let mut q = self.lock();
        if let Work::Lines(lines) = &work {
            q.bytes += lines.iter().map(line_bytes).sum::<usize>();
        }
        if matches!(work, Work::Ended { .. }) {
            q.items.retain(|w| !matches!(w, Work::LeftBehind));
        }
        if matches!(work, Work::Ended { .. }) && q.held && !q.handing_over {
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

impl Held for TurnWork {
    /// The prompt is about to be said: from now on the harness may answer
    /// it, and exit, before the [`release`](Self::release), which must
    /// follow; what it prints and its end wait for it.
    fn handing_over(&self) {
        self.lock().handing_over = true;
    }

    /// The prompt is handed over: the worker may go.
    fn release(&self) {
        let mut q = self.lock();
        q.held = false;
        self.schedule(&mut q);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crossbeam_channel::Receiver;
    use nix::sys::eventfd::{EfdFlags, EventFd};

    use super::*;
    use crate::harness::talk::Talker;
    use crate::journal::Journal;

    /// A turn's queue whose schedules and poller commands are counted.
    fn queue() -> (Arc<TurnWork>, Receiver<Arc<TurnWork>>, Receiver<Command>) {
        let (jobs, scheduled) = crossbeam_channel::unbounded();
        let (tx, commands) = crossbeam_channel::unbounded();
        let wake = Arc::new(EventFd::from_flags(EfdFlags::EFD_NONBLOCK).unwrap());
        let io = IoHandle { tx, wake };
        let dir = std::env::temp_dir();
        let parts = Parts {
            id: 7,
            schedule: Box::new(move |w| jobs.send(w).is_ok()),
            io: io.clone(),
            handle: Weak::new(),
            now: TurnNow::new(1),
            key: ProcKey {
                pid: 1,
                start_time: 1,
            },
            reading: Reading::new(Arc::new(Journal::new(&dir, "turn-work-test")), 1),
        };
        let (stdin, _keep) = std::os::unix::net::UnixStream::pair().unwrap();
        let stdin = std::process::ChildStdin::from(std::os::fd::OwnedFd::from(stdin));
        let talker = Talker::Claude(Box::default());
        let work = TurnWork::new(parts, |report| {
            TurnInput::new(7, stdin, talker, io, report, TurnNow::new(1))
        });
        (work, scheduled, commands)
    }

    fn lines(n: usize, bytes: usize) -> Work {
        Work::Lines(vec![Line::Text("x".repeat(bytes)); n])
    }

    #[test]
    fn a_held_queue_is_scheduled_only_once_released_and_once_at_a_time() {
        let (work, scheduled, _) = queue();
        assert_eq!(work.push(lines(1, 10)), Flow::Go);
        assert!(scheduled.is_empty(), "held until the prompt is handed over");
        assert_eq!(work.take().0.len(), 0);
        work.release();
        assert_eq!(scheduled.len(), 1);
        work.push(lines(1, 10));
        assert_eq!(scheduled.len(), 1, "scheduled at most once");
        let (round, more) = work.take();
        assert_eq!((round.len(), more), (2, false));
        assert_eq!(work.take().0.len(), 0, "nothing left: no longer scheduled");
        work.push(lines(1, 10));
        assert_eq!(scheduled.len(), 2);
    }

    #[test]
    fn a_round_is_bounded_and_the_rest_goes_behind_the_other_turns() {
        let (work, scheduled, _) = queue();
        work.release();
        for _ in 0..ROUND + 3 {
            work.push(lines(1, 1));
        }
        let (round, more) = work.take();
        assert_eq!((round.len(), more), (ROUND, true));
        work.again();
        assert_eq!(scheduled.len(), 2, "scheduled again for the rest");
        assert_eq!(work.take().0.len(), 3);
    }

    #[test]
    fn too_much_waiting_pauses_the_reading_until_the_worker_caught_up() {
        let (work, _, commands) = queue();
        work.release();
        let half = WAITING_BYTES / 2;
        assert_eq!(work.push(lines(1, half)), Flow::Go);
        assert_eq!(work.push(lines(1, half)), Flow::Pause);
        assert_eq!(work.push(lines(1, 10)), Flow::Pause, "still too much");
        assert!(commands.is_empty());
        // A round of all three leaves nothing waiting: reading resumes.
        work.take();
        let resumed: Vec<u64> = commands
            .try_iter()
            .filter_map(|c| match c {
                Command::Resume(id) => Some(id),
                _ => None,
            })
            .collect();
        assert_eq!(resumed, vec![7]);
        assert_eq!(work.push(lines(1, 10)), Flow::Go);
    }

    #[test]
    fn what_was_left_is_reported_in_order_unless_the_end_comes_first() {
        let (work, _, _) = queue();
        work.release();
        work.push(lines(1, 10));
        work.push(Work::LeftBehind);
        let (round, _) = work.take();
        assert!(matches!(
            round.as_slice(),
            [Work::Lines(_), Work::LeftBehind]
        ));
        // The tree is gone before the worker got to the report: moot.
        work.push(Work::LeftBehind);
        work.push(lines(1, 10));
        work.push(Work::Ended {
            exit: Exit::Code(0),
            detail: String::new(),
        });
        let (round, _) = work.take();
        assert!(matches!(
            round.as_slice(),
            [Work::Lines(_), Work::Ended { .. }]
        ));
    }

    #[test]
    fn an_end_while_the_prompt_is_being_said_waits_for_the_release_with_its_lines() {
        let (work, scheduled, _) = queue();
        work.handing_over();
        // The harness answered and exited before the turn's start was
        // journalled: nothing goes, nothing runs before the release.
        work.push(lines(2, 10));
        work.push(Work::Ended {
            exit: Exit::Code(0),
            detail: String::new(),
        });
        assert!(scheduled.is_empty(), "held until the release");
        assert_eq!(work.take().0.len(), 0);
        work.release();
        assert_eq!(scheduled.len(), 1);
        let (round, _) = work.take();
        assert!(matches!(
            round.as_slice(),
            [Work::Lines(_), Work::Ended { .. }]
        ));
    }

    #[test]
    fn an_end_before_the_prompt_drops_the_held_lines_and_keeps_the_rest() {
        let (work, scheduled, _) = queue();
        work.push(lines(2, 10));
        work.push(Work::Undelivered(vec![]));
        work.push(Work::Ended {
            exit: Exit::Code(0),
            detail: String::new(),
        });
        assert_eq!(scheduled.len(), 1, "the end is never held");
        let (round, _) = work.take();
        assert!(matches!(
            round.as_slice(),
            [Work::Undelivered(_), Work::Ended { .. }]
        ));
    }
}
