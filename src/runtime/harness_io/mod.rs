//! Harness I/O on one thread for every harness: the poller. Each harness
//! process's stdout, stderr, stdin (while lines wait for room) and pidfd
//! are in one epoll interest list (nix's safe epoll: no crate beyond what
//! the runtime has, and no async runtime outside the API); the poller reads
//! what is there, one chunk a descriptor a wake so no harness starves
//! another, splits stdout into lines and hands them to the turn's worker
//! on the event pool ([`TurnWork`]), keeps stderr's end, writes what waits
//! for stdin, and, when a harness exits, has the watcher watch its tree
//! (what the harness left there is reported to the session, whose grace
//! ends it) and hands its end to the worker after everything it printed,
//! once nothing of the tree is left or the session gave it up. It never
//! takes a session's lock nor touches the disk, so no harness, however it
//! behaves, holds up another. The thread count does not grow with running
//! or lingering harnesses: a harness costs its descriptors and a few
//! hundred bytes (docs/performance.md).

mod handle;
pub(crate) mod stdin;
mod token;
pub(crate) mod turn_work;
mod watched;

use std::collections::BTreeSet;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::process::{ChildStderr, ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use nix::errno::Errno;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};
use rustc_hash::FxHashMap;

use super::reading::{Reading, LINE_CAP};
use crate::harness::talk::Talker;
use crate::journal::Journal;
use crate::procfs::ProcKey;
use crate::sessions::turn_now::TurnNow;
use crate::sessions::SessionHandle;
use crate::supervise::output::CHUNK;
use crate::supervise::watcher::{Seen, Watcher};
use crate::supervise::{Child, Supervisor, Tree};

use handle::{Command, IoHandle};
use stdin::TurnInput;
use token::{Token, WAKE};
use turn_work::TurnWork;
use watched::Watched;

/// The events one wait returns at most.
const EVENTS: usize = 256;

/// A turn's process, as it is handed to the poller.
pub(crate) struct Turn {
    /// The process.
    pub(crate) child: Child,
    /// Its tree, for the watcher.
    pub(crate) tree: Tree,
    /// Its stdin, stdout and stderr.
    pub(crate) pipes: (ChildStdin, ChildStdout, ChildStderr),
    /// Its talker, which words what is said on its stdin.
    pub(crate) talker: Talker,
    /// The turn it serves.
    pub(crate) now: TurnNow,
    /// The process, for the agent socket's table of harnesses.
    pub(crate) key: ProcKey,
    /// Its session.
    pub(crate) handle: SessionHandle,
    /// Its session's journal.
    pub(crate) journal: Arc<Journal>,
    /// Hands a round of its work to the event pool; false if it is gone.
    pub(crate) schedule: turn_work::Schedule,
}

/// The poller, as the runtime holds it; dropping it stops the thread.
pub(crate) struct HarnessIo {
    handle: IoHandle,
    /// Processes to watch from now on.
    new: Sender<Watched>,
    ids: AtomicU64,
}

impl HarnessIo {
    /// Starts the poller's thread and the watcher's.
    pub(crate) fn start(supervisor: Arc<Supervisor>) -> std::io::Result<HarnessIo> {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        let wake = Arc::new(EventFd::from_flags(
            EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK,
        )?);
        epoll.add(wake.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, WAKE))?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let (new, added) = crossbeam_channel::unbounded();
        let handle = IoHandle { tx, wake };
        let poller = Poller {
            epoll,
            wake: handle.wake.clone(),
            commands: rx,
            added,
            me: handle.clone(),
            watcher: Watcher::start(supervisor)?,
            watched: FxHashMap::default(),
            deadlines: BTreeSet::new(),
            no_pidfd: Vec::new(),
        };
        std::thread::Builder::new()
            .name("harness-io".into())
            .spawn(move || poller.run())?;
        Ok(HarnessIo {
            handle,
            new,
            ids: AtomicU64::new(1),
        })
    }

    /// A new process ID for the poller (never 0, never reused).
    pub(crate) fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::SeqCst)
    }

    /// The way to the poller, for a turn's stdin and worker.
    pub(crate) fn handle(&self) -> IoHandle {
        self.handle.clone()
    }

    /// Watches `turn`'s process from now on: its pipes made non-blocking,
    /// its stdin worded by its talker, its work queued for the pool and held
    /// until its prompt is handed over ([`TurnWork::release`]). Fails if
    /// the pipes cannot be set up or the poller is gone.
    pub(crate) fn watch(&self, turn: Turn) -> std::io::Result<(TurnInput, Arc<TurnWork>)> {
        let (stdin, stdout, stderr) = turn.pipes;
        for fd in [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()] {
            set_nonblocking(fd)?;
        }
        let id = self.next_id();
        let (io, talker, now) = (self.handle(), turn.talker, turn.now.clone());
        let reading = Reading::new(turn.journal, turn.now.get());
        let parts = turn_work::Parts {
            id,
            schedule: turn.schedule,
            io: self.handle(),
            handle: turn.handle,
            now: turn.now,
            key: turn.key,
            reading,
        };
        let work = TurnWork::new(parts, |report| {
            TurnInput::new(id, stdin, talker, io, report, now)
        });
        let input = work.input.clone();
        let watched = Watched::new(
            turn.child,
            turn.tree,
            (stdout, stderr),
            input.shared(),
            work.clone(),
            LINE_CAP,
        );
        if self.new.send(watched).is_err() || self.handle.wake.write(1).is_err() {
            return Err(std::io::Error::other("the harness poller is gone"));
        }
        Ok((input, work))
    }

    /// The session gave process `id`'s tree up (`AbandonTree`): the
    /// watcher stops waiting for it, now or as soon as the harness exits.
    pub(crate) fn give_up(&self, id: u64) {
        if !self.handle.send(Command::GiveUp(id)) {
            log::error!("the harness poller is gone: process {id}'s tree is not given up");
        }
    }
}

impl Drop for HarnessIo {
    fn drop(&mut self) {
        self.handle.send(Command::Stop);
    }
}

/// The poller's thread.
struct Poller {
    epoll: Epoll,
    wake: Arc<EventFd>,
    commands: Receiver<Command>,
    added: Receiver<Watched>,
    me: IoHandle,
    watcher: Watcher,
    watched: FxHashMap<u64, Watched>,
    /// When each process whose tree is gone stops waiting for its pipes.
    deadlines: BTreeSet<(Instant, u64)>,
    /// Processes without a pidfd, whose exit is polled for.
    no_pidfd: Vec<u64>,
}

impl Poller {
    fn run(mut self) {
        let mut events = vec![EpollEvent::empty(); EVENTS];
        let mut chunk = vec![0u8; CHUNK];
        loop {
            let timeout = self.timeout();
            let n = match self.epoll.wait(&mut events, timeout) {
                Ok(n) => n,
                Err(Errno::EINTR) => 0,
                Err(e) => {
                    log::error!("the harness poller cannot wait: {e}");
                    std::thread::sleep(std::time::Duration::from_millis(100));
                    0
                }
            };
            for event in &events[..n] {
                if event.data() == WAKE {
                    let _ = self.wake.read();
                    continue;
                }
                let (id, token) = Token::split(event.data());
                let Some(w) = self.watched.get_mut(&id) else {
                    continue;
                };
                let state = w.on_event(token, &self.epoll, &mut chunk);
                self.settle(id, state);
            }
            while let Ok(w) = self.added.try_recv() {
                self.add(w);
            }
            while let Ok(command) = self.commands.try_recv() {
                if !self.command(command) {
                    return;
                }
            }
            self.due(Instant::now());
        }
    }

    /// The longest wait: until the next deadline, or the next poll for an
    /// exit without a pidfd.
    fn timeout(&self) -> EpollTimeout {
        let now = Instant::now();
        let mut next = self.deadlines.first().map(|(at, _)| *at);
        if !self.no_pidfd.is_empty() {
            let poll = now + watched::EXIT_POLL;
            next = Some(next.map_or(poll, |n| n.min(poll)));
        }
        match next {
            None => EpollTimeout::NONE,
            Some(at) => {
                let ms = at.saturating_duration_since(now).as_millis() + 1;
                EpollTimeout::try_from(ms.min(60_000)).unwrap_or(EpollTimeout::NONE)
            }
        }
    }

    /// Watches `w` from now on.
    fn add(&mut self, mut w: Watched) {
        let id = w.id;
        match w.register(&self.epoll) {
            Ok(poll_exit) => {
                if poll_exit {
                    self.no_pidfd.push(id);
                }
            }
            Err(e) => {
                // Its exit is still noticed (polled for), so it still ends
                // whole.
                log::error!("cannot watch turn {}: {e}", w.tree().key());
                self.no_pidfd.push(id);
            }
        }
        self.watched.insert(id, w);
        // It may have exited before it was watched.
        if let Some(w) = self.watched.get_mut(&id) {
            let state = w.check_exit(&self.epoll);
            self.settle(id, state);
        }
    }

    /// Carries out `command`; false to stop.
    fn command(&mut self, command: Command) -> bool {
        match command {
            Command::Write(id) => {
                if let Some(w) = self.watched.get(&id) {
                    w.arm_stdin(&self.epoll);
                }
            }
            Command::Resume(id) => {
                if let Some(w) = self.watched.get_mut(&id) {
                    w.resume(&self.epoll);
                    let state = w.check_end(&self.epoll, Instant::now());
                    self.settle(id, state);
                }
            }
            Command::LeftBehind(id, pids) => {
                if let Some(w) = self.watched.get(&id) {
                    w.left_behind(pids);
                }
            }
            Command::GiveUp(id) => {
                if let Some(w) = self.watched.get_mut(&id) {
                    if w.give_up() && !self.watcher.give_up(w.tree().key()) {
                        log::error!(
                            "the watcher is gone: turn {} is not given up",
                            w.tree().key()
                        );
                    }
                }
            }
            Command::TreeGone(id, ended) => {
                if let Some(w) = self.watched.get_mut(&id) {
                    let state = w.tree_gone(ended, &self.epoll);
                    self.settle(id, state);
                }
            }
            Command::Stop => return false,
        }
        true
    }

    /// What follows from process `id`'s new state.
    fn settle(&mut self, id: u64, state: watched::State) {
        match state {
            watched::State::Watching => {
                // A deadline already past means the process waits for its
                // worker (stdout paused): `Resume` sets the next one. Taken
                // again, it would be due again at once, for ever.
                let deadline = self.watched.get(&id).and_then(Watched::deadline);
                if let Some(at) = deadline.filter(|at| *at > Instant::now()) {
                    self.deadlines.insert((at, id));
                }
            }
            watched::State::Exited => {
                self.no_pidfd.retain(|n| *n != id);
                let Some(w) = self.watched.get(&id) else {
                    return;
                };
                let me = self.me.clone();
                let tree = w.tree().clone();
                // A tree empty at the first look (the usual end) costs the
                // session nothing: its end follows.
                let watching = self.watcher.watch(tree, move |seen| match seen {
                    Seen::First(left) if !left.is_empty() => {
                        me.send(Command::LeftBehind(id, left));
                    }
                    Seen::First(_) => {}
                    Seen::Gone(ended) => {
                        me.send(Command::TreeGone(id, ended));
                    }
                });
                let key = w.tree().key();
                if !watching {
                    log::error!("the watcher is gone: turn {key} is not watched");
                } else if w.given_up() {
                    // Given up before it exited: one look, and its end.
                    self.watcher.give_up(key);
                }
            }
            watched::State::Done => {
                self.watched.remove(&id);
                self.deadlines.retain(|(_, n)| *n != id);
            }
        }
    }

    /// Deadlines due at `now`, and polls for exits without a pidfd.
    fn due(&mut self, now: Instant) {
        while let Some(&(at, id)) = self.deadlines.first() {
            if at > now {
                break;
            }
            self.deadlines.pop_first();
            if let Some(w) = self.watched.get_mut(&id) {
                if w.deadline() == Some(at) {
                    let state = w.check_end(&self.epoll, now);
                    self.settle(id, state);
                }
            }
        }
        for id in self.no_pidfd.clone() {
            if let Some(w) = self.watched.get_mut(&id) {
                let state = w.check_exit(&self.epoll);
                self.settle(id, state);
            }
        }
    }
}

/// Makes `fd` non-blocking: the poller reads and writes it only as far as
/// it is ready. The harness's ends of its pipes are other open files, so
/// they stay as they are.
fn set_nonblocking(fd: BorrowedFd<'_>) -> std::io::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = OFlag::from_bits_truncate(fcntl(fd.as_raw_fd(), FcntlArg::F_GETFL)?);
    fcntl(fd.as_raw_fd(), FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}
