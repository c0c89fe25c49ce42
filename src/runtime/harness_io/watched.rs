//! One harness process as the poller watches it: its stdout split into
//! lines for its worker, its stderr's end kept, its stdin's waiting lines
//! written, its exit noticed through its pidfd; then its tree watched by
//! the watcher (what the harness left there goes to its worker, for the
//! session to end), its pipes read to their end (at most [`OUTPUT_WAIT`]
//! once the tree is gone or given up: something that escaped it could hold
//! them open), and its end handed to the worker after everything it
//! printed.

use std::io::{ErrorKind, Read};
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{ChildStderr, ChildStdout, ExitStatus};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::epoll::{Epoll, EpollEvent, EpollFlags};
use room_machines::session::Exit;

use super::stdin::Stdin;
use super::token::Token;
use super::turn_work::{Flow, TurnWork, Work};
use crate::supervise::output::{LineSplitter, Tail, STDERR_TAIL};
use crate::supervise::{Child, Ended, Tree};

/// How long, once a turn's whole tree is gone, its pipes get to reach their
/// end (at once, unless something escaped the tree).
pub(super) const OUTPUT_WAIT: Duration = Duration::from_secs(2);

/// How often a process without a pidfd (a kernel before 5.3) is asked
/// whether it has exited.
pub(super) const EXIT_POLL: Duration = Duration::from_millis(50);

/// A watched harness process.
pub(crate) struct Watched {
    pub(super) id: u64,
    child: Child,
    tree: Tree,
    stdout: Option<ChildStdout>,
    /// Stdout is in the poller's interest list.
    reading: bool,
    /// Stdout's reading is paused until the worker catches up (`Resume`).
    paused: bool,
    split: LineSplitter,
    stderr: Option<ChildStderr>,
    tail: Tail,
    stdin: Arc<Stdin>,
    work: Arc<TurnWork>,
    exit: Option<Exit>,
    /// Its tree is gone: how it ended, and until when its pipes are waited for.
    gone: Option<(Ended, Instant)>,
    /// The session gave its tree up (`AbandonTree`).
    given_up: bool,
}

/// Where a watched process is, for the poller's loop.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum State {
    /// Running, or its pipes are being read to their end.
    Watching,
    /// It exited: its tree goes to the watcher.
    Exited,
    /// Its end was handed to the worker: forget it.
    Done,
}

impl Watched {
    /// A process to watch; `line_cap` is its stdout's longest line.
    pub(super) fn new(
        child: Child,
        tree: Tree,
        pipes: (ChildStdout, ChildStderr),
        stdin: Arc<Stdin>,
        work: Arc<TurnWork>,
        line_cap: usize,
    ) -> Watched {
        Watched {
            id: work.id,
            child,
            tree,
            stdout: Some(pipes.0),
            reading: false,
            paused: false,
            split: LineSplitter::new(line_cap),
            stderr: Some(pipes.1),
            tail: Tail::default(),
            stdin,
            work,
            exit: None,
            gone: None,
            given_up: false,
        }
    }

    /// Adds its pipes and its pidfd to the poller's interest list; whether
    /// its exit must be polled for (no pidfd).
    pub(super) fn register(&mut self, epoll: &Epoll) -> std::io::Result<bool> {
        let add = |fd: std::os::fd::BorrowedFd<'_>, token: Token| {
            epoll.add(fd, EpollEvent::new(EpollFlags::EPOLLIN, token.of(self.id)))
        };
        if let Some(out) = &self.stdout {
            add(out.as_fd(), Token::Stdout)?;
            self.reading = true;
        }
        if let Some(err) = &self.stderr {
            add(err.as_fd(), Token::Stderr)?;
        }
        match self.child.pidfd() {
            Some(fd) => add(fd.as_fd(), Token::Exit)?,
            None => return Ok(true),
        }
        Ok(false)
    }

    /// The tree, for the watcher.
    pub(super) fn tree(&self) -> &Tree {
        &self.tree
    }

    /// One event on one of its descriptors; `chunk` is the poller's read
    /// buffer.
    pub(super) fn on_event(&mut self, token: Token, epoll: &Epoll, chunk: &mut [u8]) -> State {
        match token {
            Token::Stdout => self.read_stdout(epoll, chunk),
            Token::Stderr => self.read_stderr(epoll, chunk),
            Token::Stdin => self.stdin.writable(epoll),
            Token::Exit => return self.check_exit(epoll),
        }
        self.check_end(epoll, Instant::now())
    }

    /// One read of stdout: its lines go to the worker (or, past the
    /// journal's cap, nowhere); reading pauses while too much waits.
    fn read_stdout(&mut self, epoll: &Epoll, chunk: &mut [u8]) {
        let Some(out) = self.stdout.as_mut() else {
            return;
        };
        let n = match out.read(chunk) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => return,
            Err(e) => {
                log::warn!("turn {}: cannot read stdout: {e}", self.tree.key());
                0
            }
        };
        let mut lines = Vec::new();
        if n == 0 {
            lines.extend(self.split.finish());
            if let Some(out) = self.stdout.take() {
                let _ = epoll.delete(out.as_fd());
            }
            self.reading = false;
        } else if self.work.discarding() {
            self.work.count_dropped(n);
            self.split.clear();
            return;
        } else {
            self.split.push(&chunk[..n], &mut |l| lines.push(l));
        }
        if lines.is_empty() || self.work.discarding() {
            return;
        }
        if self.work.push(Work::Lines(lines)) == Flow::Pause && self.reading {
            if let Some(out) = &self.stdout {
                let _ = epoll.delete(out.as_fd());
            }
            self.reading = false;
            self.paused = true;
        }
    }

    /// Lines wait for room in its stdin.
    pub(super) fn arm_stdin(&self, epoll: &Epoll) {
        self.stdin.arm(epoll);
    }

    /// The worker caught up: stdout is read again.
    pub(super) fn resume(&mut self, epoll: &Epoll) {
        if !std::mem::take(&mut self.paused) {
            return;
        }
        if let (Some(out), false) = (&self.stdout, self.reading) {
            let event = EpollEvent::new(EpollFlags::EPOLLIN, Token::Stdout.of(self.id));
            match epoll.add(out.as_fd(), event) {
                Ok(()) => self.reading = true,
                Err(e) => log::error!("turn {}: cannot watch stdout: {e}", self.tree.key()),
            }
            if let Some((_, until)) = &mut self.gone {
                // The backlog was the worker's, not the pipe's: the wait
                // for the pipe's end starts again.
                *until = Instant::now() + OUTPUT_WAIT;
            }
        }
    }

    /// One read of stderr: its end is kept.
    fn read_stderr(&mut self, epoll: &Epoll, chunk: &mut [u8]) {
        let Some(err) = self.stderr.as_mut() else {
            return;
        };
        match err.read(chunk) {
            Ok(n) if n > 0 => self.tail.push(&chunk[..n], STDERR_TAIL),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
            _ => {
                // Its end (or a pipe that cannot be read: the same).
                if let Some(err) = self.stderr.take() {
                    let _ = epoll.delete(err.as_fd());
                }
            }
        }
    }

    /// Its pidfd became readable (or the poll for its exit is due): it is
    /// reaped if it has exited.
    pub(super) fn check_exit(&mut self, epoll: &Epoll) -> State {
        if self.exit.is_some() {
            return State::Watching;
        }
        self.exit = match self.child.try_wait() {
            Ok(Some(status)) => Some(exit_of(status)),
            Ok(None) => return State::Watching,
            Err(e) => {
                log::error!("turn {}: cannot wait for its harness: {e}", self.tree.key());
                Some(Exit::Code(-1))
            }
        };
        if let Some(fd) = self.child.pidfd() {
            let _ = epoll.delete(fd.as_fd());
        }
        State::Exited
    }

    /// The watcher's first look found `pids` the harness left running:
    /// the session decides what becomes of them, after what the harness
    /// printed before.
    pub(super) fn left_behind(&self, pids: Vec<u32>) {
        log::info!(
            "turn {}: its harness left {pids:?} running",
            self.tree.key()
        );
        self.work.push(Work::LeftBehind);
    }

    /// The session gave its tree up: whether the watcher is to give it up
    /// now (it watches the tree: the harness exited, the tree is not gone
    /// yet). A harness that has not exited has its tree given up as soon
    /// as it has ([`given_up`](Self::given_up)).
    pub(super) fn give_up(&mut self) -> bool {
        self.given_up = true;
        self.exit.is_some() && self.gone.is_none()
    }

    /// Whether the session gave its tree up.
    pub(super) fn given_up(&self) -> bool {
        self.given_up
    }

    /// The watcher says nothing of its tree is left, or gave it up.
    pub(super) fn tree_gone(&mut self, ended: Ended, epoll: &Epoll) -> State {
        self.gone = Some((ended, Instant::now() + OUTPUT_WAIT));
        self.check_end(epoll, Instant::now())
    }

    /// Until when its pipes are waited for, once its tree is gone.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.gone.as_ref().map(|(_, until)| *until)
    }

    /// Once its tree is gone: its end goes to the worker when its pipes are
    /// at their end, or at the deadline.
    pub(super) fn check_end(&mut self, epoll: &Epoll, now: Instant) -> State {
        let Some((_, until)) = &self.gone else {
            return State::Watching;
        };
        let stdin_waits = self.stdin.waits_after_exit();
        let open = self.stdout.is_some() || self.stderr.is_some() || stdin_waits;
        // Paused, the backlog is the worker's, not the pipe's: it resumes
        // the reading, and the wait for the pipe's end starts again then.
        // (A stdout that could not be watched again is not paused: the
        // deadline bounds it.)
        let paused = self.stdout.is_some() && self.paused;
        if open && (now < *until || paused) {
            return State::Watching;
        }
        let key = self.tree.key();
        if self.stdout.is_some() {
            log::warn!("turn {key}: its stdout is still open; not waiting for it");
        }
        if stdin_waits {
            log::warn!("turn {key}: its stdin is still not read; not waiting for it");
        }
        if let Some(out) = self.stdout.take() {
            let _ = epoll.delete(out.as_fd());
        }
        if let Some(err) = self.stderr.take() {
            let _ = epoll.delete(err.as_fd());
        }
        self.stdin.end(epoll);
        let (ended, _) = self.gone.take().expect("checked above");
        let exit = self.exit.expect("the tree is gone after the exit");
        let detail = self.tail.text();
        log::info!("turn {key} ended: {exit} ({ended:?})");
        self.work.push(Work::Ended { exit, detail });
        State::Done
    }
}

/// How a harness exited, as the machine reads it.
fn exit_of(status: ExitStatus) -> Exit {
    status
        .code()
        .map(Exit::Code)
        .or_else(|| status.signal().map(Exit::Signal))
        .unwrap_or(Exit::Code(-1))
}
