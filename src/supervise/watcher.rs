//! The watcher: one thread that watches, side by side, the trees of
//! harnesses that have exited, and tells each tree's owner what its first
//! look found running and when nothing of it is left. It sends no signal
//! and keeps no clock: ending what a harness left is its owner's (the
//! session machine's signals and grace), and so is giving a tree up. A
//! harness costs it no thread: the trees wait in a list, each looked at
//! when its next look is due.

use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::watching::TreeWatch;
use super::{Ended, Supervisor, Tree, TurnKey};

/// What the watcher tells of a tree, in this order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Its first look is done: the pids it found running (empty: none,
    /// and `Gone` follows at once). Not told of a tree given up before it.
    First(Vec<u32>),
    /// Nothing of it runs any more, or it was given up (then
    /// [`Ended::left`] lists what still ran); the last word on it.
    Gone(Ended),
}

/// What to call with what the watcher sees of a tree.
type Report = Box<dyn FnMut(Seen) + Send>;

/// What the watcher is asked.
enum Order {
    Watch(Tree, Report),
    GiveUp(TurnKey),
}

/// The sending end of the watcher; cheap to clone. The thread ends once
/// every sender is gone: nobody is left to hear of a tree, nor to give one
/// up.
#[derive(Clone)]
pub struct Watcher {
    tx: Sender<Order>,
}

impl Watcher {
    /// Starts the watcher's thread.
    pub fn start(supervisor: Arc<Supervisor>) -> std::io::Result<Watcher> {
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::Builder::new()
            .name("watcher".into())
            .spawn(move || run(&supervisor, &rx))?;
        Ok(Watcher { tx })
    }

    /// Watches `tree` from now on (its first look at once) and calls
    /// `report` with what it sees ([`Seen`]) on the watcher's thread, which
    /// it must not block. False if the watcher is gone.
    pub fn watch(&self, tree: Tree, report: impl FnMut(Seen) + Send + 'static) -> bool {
        self.tx.send(Order::Watch(tree, Box::new(report))).is_ok()
    }

    /// Gives up the tree of turn `key`: one last look, and `Seen::Gone`
    /// with what still runs. Nothing if that tree is not watched (any
    /// more). False if the watcher is gone.
    pub fn give_up(&self, key: &TurnKey) -> bool {
        self.tx.send(Order::GiveUp(key.clone())).is_ok()
    }
}

fn run(supervisor: &Supervisor, rx: &Receiver<Order>) {
    let mut watches: Vec<TreeWatch> = Vec::new();
    let mut reports: Vec<Report> = Vec::new();
    loop {
        let next = watches.iter().filter_map(TreeWatch::next).min();
        let got = match next {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(at) => rx.recv_deadline(at),
        };
        let mut take = |order: Order| match order {
            Order::Watch(tree, report) => {
                watches.push(supervisor.begin_watch(tree, Instant::now()));
                reports.push(report);
            }
            Order::GiveUp(key) => {
                if let Some(w) = watches.iter_mut().find(|w| w.tree().key() == &key) {
                    w.give_up(Instant::now());
                }
            }
        };
        match got {
            Ok(first) => {
                take(first);
                rx.try_iter().for_each(&mut take);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        supervisor.watch_look(&mut watches, Instant::now());
        let mut i = 0;
        while i < watches.len() {
            if let Some(first) = watches[i].take_first() {
                (reports[i])(Seen::First(first));
            }
            if let Some(ended) = watches[i].ended() {
                let ended = ended.clone();
                watches.swap_remove(i);
                (reports.swap_remove(i))(Seen::Gone(ended));
            } else {
                i += 1;
            }
        }
    }
}
