//! The ender: one thread that ends, side by side, the trees of harnesses
//! that have exited (what they left behind gets SIGTERM, SIGKILL after the
//! grace), and tells each tree's owner when nothing of it is left. A
//! harness costs it no thread: the trees wait in a list, each looked at when
//! its next look is due ([`TreeEnding`]).

use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use super::ending::TreeEnding;
use super::{Ended, Supervisor, Tree};

/// What to call with how a tree ended.
type Done = Box<dyn FnOnce(Ended) + Send>;

/// The sending end of the ender; cheap to clone. The thread ends once every
/// sender is gone and its last tree has ended.
#[derive(Clone)]
pub struct Ender {
    tx: Sender<(Tree, Done)>,
}

impl Ender {
    /// Starts the ender's thread.
    pub fn start(supervisor: Arc<Supervisor>) -> std::io::Result<Ender> {
        let (tx, rx) = crossbeam_channel::unbounded();
        std::thread::Builder::new()
            .name("ender".into())
            .spawn(move || run(&supervisor, &rx))?;
        Ok(Ender { tx })
    }

    /// Ends `tree`, its grace from now, and calls `done` (on the ender's
    /// thread: it must not block) once nothing of it is left. False if the
    /// ender is gone.
    pub fn end(&self, tree: Tree, done: impl FnOnce(Ended) + Send + 'static) -> bool {
        self.tx.send((tree, Box::new(done))).is_ok()
    }
}

fn run(supervisor: &Supervisor, rx: &Receiver<(Tree, Done)>) {
    let mut endings: Vec<TreeEnding> = Vec::new();
    let mut dones: Vec<Done> = Vec::new();
    let mut open = true;
    loop {
        let next = endings.iter().filter_map(TreeEnding::next).min();
        let got = match (next, open) {
            (None, false) => return,
            (None, true) => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            (Some(at), true) => rx.recv_deadline(at),
            (Some(at), false) => {
                std::thread::sleep(at.saturating_duration_since(Instant::now()));
                Err(RecvTimeoutError::Timeout)
            }
        };
        let mut take = |(tree, done): (Tree, Done)| {
            endings.push(supervisor.begin_end(tree, Instant::now()));
            dones.push(done);
        };
        match got {
            Ok(first) => {
                take(first);
                rx.try_iter().for_each(&mut take);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => open = false,
        }
        supervisor.look(&mut endings, Instant::now());
        let mut i = 0;
        while i < endings.len() {
            if let Some(ended) = endings[i].ended() {
                let ended = ended.clone();
                endings.swap_remove(i);
                (dones.swap_remove(i))(ended);
            } else {
                i += 1;
            }
        }
    }
}
