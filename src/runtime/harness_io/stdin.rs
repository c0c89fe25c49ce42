//! A turn's stdin: the lines the process's [`Talker`] words, for what the
//! session says and for what the harness asked, written in order without
//! blocking anyone. A line is written at once if the pipe has room (the
//! usual case: no thread is woken for it); what does not fit waits, at most
//! [`WAITING_MAX`] lines, and the poller writes it when the pipe drains. So
//! a harness that stops reading blocks no thread, and what waits for it is
//! bounded. Lines are worded and written or queued under one lock, so what
//! the runtime says and what the output's worker answers reach the pipe in
//! the order the talker worded them.
//!
//! What could not be written goes to the turn's worker (turn_work.rs) as
//! the input it means: the prompt as `PromptUndelivered`, a steered prompt
//! as `SteerUndelivered` (it goes back to the queue); anything else only to
//! the log (the turn is ending then, and the machine's grace ends it).

use std::collections::VecDeque;
use std::io::{ErrorKind, Write};
use std::os::fd::AsFd;
use std::process::ChildStdin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use nix::sys::epoll::{Epoll, EpollEvent, EpollFlags};
use room_machines::session::{Input, TurnSeq};

use super::handle::{Command, IoHandle};
use super::token::Token;
use crate::harness::refusal::Unread;
use crate::harness::speech::{Carries, Hearing, Out, Said};
use crate::harness::talk::{Read, Talker};
use crate::harness::Harness;
use crate::sessions::turn_now::TurnNow;

/// The most lines waiting for the pipe: more than a session has approval
/// requests pending, and the steers an app could send meanwhile.
const WAITING_MAX: usize = 256;

/// The sending end of a turn's stdin; cheap to clone.
#[derive(Clone)]
pub(crate) struct TurnInput {
    shared: Arc<Stdin>,
}

impl std::fmt::Debug for TurnInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnInput")
            .field("id", &self.shared.id)
            .finish()
    }
}

/// What the senders and the poller share of a turn's stdin.
pub(super) struct Stdin {
    id: u64,
    harness: Harness,
    io: IoHandle,
    report: Report,
    now: TurnNow,
    pipe: Mutex<Pipe>,
}

/// Where the inputs for what could not be written go: the turn's worker.
pub(crate) type Report = Box<dyn Fn(Vec<Input>) + Send + Sync>;

/// The pipe and what waits for it.
struct Pipe {
    talker: Talker,
    /// Open until it is closed, or a write to it failed.
    fd: Option<ChildStdin>,
    waiting: VecDeque<Out>,
    /// Bytes of the first waiting line already written.
    written: usize,
    /// Close once what waits is written.
    close_after: bool,
    /// The poller watches the pipe for room.
    armed: bool,
}

impl TurnInput {
    /// The stdin (non-blocking) of process `id`, serving `now`, which talks
    /// as `talker` does; the inputs for what could not be written go to
    /// `report`.
    pub(super) fn new(
        id: u64,
        stdin: ChildStdin,
        talker: Talker,
        io: IoHandle,
        report: Report,
        now: TurnNow,
    ) -> TurnInput {
        TurnInput {
            shared: Arc::new(Stdin {
                id,
                harness: talker.harness(),
                io,
                report,
                now,
                pipe: Mutex::new(Pipe {
                    talker,
                    fd: Some(stdin),
                    waiting: VecDeque::new(),
                    written: 0,
                    close_after: false,
                    armed: false,
                }),
            }),
        }
    }

    /// What the poller keeps of it.
    pub(super) fn shared(&self) -> Arc<Stdin> {
        self.shared.clone()
    }

    /// Whether the harness process takes a prompt into its running turn.
    pub(crate) fn takes_steers(&self) -> bool {
        self.shared.lock().talker.takes_steers()
    }

    /// Words `said` and writes its lines, or queues what does not fit. What
    /// cannot be queued ([`WAITING_MAX`] lines wait: the harness does not
    /// read) is given back, as what each line carried.
    pub(crate) fn say(&self, said: Said) -> Result<(), Vec<Carries>> {
        let mut pipe = self.shared.lock();
        let lines = pipe.talker.say(said);
        self.shared.queue(&mut pipe, lines)
    }

    /// What a line of the harness's stdout means; the lines it must be
    /// answered with are written or queued here (one that cannot be is
    /// logged). The line is parsed before the pipe is taken, so a long line
    /// never holds up what the runtime says meanwhile.
    pub(crate) fn hear(&self, line: &str) -> Hearing {
        self.heard(Talker::read(self.shared.harness, line))
    }

    /// What a line of the harness's stdout that was not read whole, or
    /// cannot be served, means: a request its start names is answered at
    /// once.
    pub(crate) fn hear_unread(&self, unread: Unread) -> Hearing {
        self.heard(Talker::read_unread(self.shared.harness, unread))
    }

    fn heard(&self, read: Read) -> Hearing {
        let mut pipe = self.shared.lock();
        let mut hearing = pipe.talker.heard(read);
        let writes = std::mem::take(&mut hearing.writes);
        if let Err(lost) = self.shared.queue(&mut pipe, writes) {
            log::warn!(
                "{} lines for the harness could not be queued: {lost:?}",
                lost.len()
            );
        }
        hearing
    }

    /// Closes stdin once what waits is written: the harness sees the end of
    /// its input.
    pub(crate) fn close(&self) {
        let mut pipe = self.shared.lock();
        pipe.close_after = true;
        if pipe.waiting.is_empty() {
            pipe.fd = None;
        }
    }
}

impl Stdin {
    fn lock(&self) -> MutexGuard<'_, Pipe> {
        self.pipe.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `lines` behind what waits and writes what the pipe takes.
    fn queue(&self, pipe: &mut Pipe, lines: Vec<Out>) -> Result<(), Vec<Carries>> {
        let mut lost = Vec::new();
        let mut closed = Vec::new();
        for out in lines {
            if pipe.fd.is_none() {
                closed.push(out.carries);
            } else if pipe.waiting.len() >= WAITING_MAX {
                lost.push(out.carries);
            } else {
                pipe.waiting.push_back(out);
            }
        }
        self.report(closed, "its stdin is closed");
        self.pump(pipe);
        if !pipe.waiting.is_empty() && !pipe.armed && pipe.fd.is_some() {
            // The poller writes the rest when the pipe has room.
            pipe.armed = self.io.send(Command::Write(self.id));
        }
        if lost.is_empty() {
            Ok(())
        } else {
            Err(lost)
        }
    }

    /// Writes what waits until the pipe is full; a failed write closes the
    /// pipe and reports every line that waited.
    fn pump(&self, pipe: &mut Pipe) {
        while let (Some(fd), Some(out)) = (pipe.fd.as_mut(), pipe.waiting.front()) {
            match fd.write(&out.line.as_bytes()[pipe.written..]) {
                Ok(n) => {
                    pipe.written += n;
                    if pipe.written == out.line.len() {
                        pipe.written = 0;
                        pipe.waiting.pop_front();
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => {
                    pipe.fd = None;
                    self.fail(pipe, &why(&e));
                    return;
                }
            }
        }
        if pipe.waiting.is_empty() && pipe.close_after {
            pipe.fd = None;
        }
    }

    /// Reports everything that waits as not written, for `why`.
    fn fail(&self, pipe: &mut Pipe, why: &str) {
        pipe.written = 0;
        let carries = pipe.waiting.drain(..).map(|o| o.carries).collect();
        self.report(carries, why);
    }

    fn report(&self, carries: Vec<Carries>, why: &str) {
        if carries.is_empty() {
            return;
        }
        let seq = self.now.get();
        let mut inputs = Vec::new();
        for c in carries {
            undelivered(seq, c, why, |input| inputs.push(input));
        }
        if !inputs.is_empty() {
            (self.report)(inputs);
        }
    }

    /// The poller: starts watching the pipe for room (`Write`).
    pub(super) fn arm(&self, epoll: &Epoll) {
        let mut pipe = self.lock();
        let Some(fd) = pipe.fd.as_ref().filter(|_| !pipe.waiting.is_empty()) else {
            // Written meanwhile, or closed: nothing to watch for.
            pipe.armed = false;
            return;
        };
        let event = EpollEvent::new(EpollFlags::EPOLLOUT, Token::Stdin.of(self.id));
        if let Err(e) = epoll.add(fd.as_fd(), event) {
            log::error!("cannot watch a harness's stdin: {e}");
            pipe.fd = None;
            self.fail(&mut pipe, &format!("its stdin cannot be watched: {e}"));
        }
    }

    /// The poller: the pipe has room (or its reader is gone): writes what
    /// waits, and stops watching once nothing does.
    pub(super) fn writable(&self, epoll: &Epoll) {
        let mut pipe = self.lock();
        self.pump(&mut pipe);
        if pipe.waiting.is_empty() {
            pipe.armed = false;
            if let Some(fd) = &pipe.fd {
                let _ = epoll.delete(fd.as_fd());
            }
        }
    }

    /// The poller, once the harness's tree is gone: writes what it can;
    /// whether lines still wait (something that escaped the tree holds the
    /// pipe and does not read).
    pub(super) fn waits_after_exit(&self) -> bool {
        let mut pipe = self.lock();
        self.pump(&mut pipe);
        !pipe.waiting.is_empty()
    }

    /// The poller, at the turn's end: reports what still waits as not
    /// written and closes the pipe, so a later line is reported at once.
    pub(super) fn end(&self, epoll: &Epoll) {
        let mut pipe = self.lock();
        if let Some(fd) = pipe.fd.take() {
            let _ = epoll.delete(fd.as_fd());
        }
        self.fail(&mut pipe, "its harness ended before it read it");
    }
}

/// Reports what a line that carried `carries` not being written means.
pub(crate) fn undelivered(
    seq: TurnSeq,
    carries: Carries,
    error: &str,
    mut report: impl FnMut(Input),
) {
    match carries {
        Carries::Prompt => report(Input::PromptUndelivered {
            seq,
            error: error.to_string(),
        }),
        Carries::Steer { prompt, text } => report(Input::SteerUndelivered { seq, prompt, text }),
        Carries::Other(what) => {
            log::warn!("turn {seq}: {what} for its harness was not written: {error}")
        }
    }
}

/// Why a write to stdin failed, in a sentence.
fn why(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::BrokenPipe => {
            "its stdin was closed before it read the prompt (the harness exited or stopped reading)"
                .to_string()
        }
        _ => format!("writing its stdin failed: {e}"),
    }
}
