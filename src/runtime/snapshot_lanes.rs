//! The snapshot lanes: threads of their own that take the sessions'
//! snapshots (runtime/snapshotting.rs), a session's always on the same
//! lane, so its snapshots are taken in the order they were asked for.
//! Bounded: a full lane refuses a job, and its turn goes on without it.

use std::path::PathBuf;

use crossbeam_channel::{Sender, TrySendError};
use room_machines::session::{Boundary, TurnSeq};

use crate::sessions::SessionHandle;

/// Lanes: two snapshots of different sessions run side by side.
const LANES: usize = 2;
/// The most snapshots waiting per lane; past it a snapshot is not taken
/// (its turn goes on, and its diff says so).
const LANE_BOUND: usize = 256;
/// One snapshot to take.
pub(crate) struct Job {
    /// The session.
    pub session: SessionHandle,
    /// Its ID.
    pub id: String,
    /// Its folder.
    pub folder: PathBuf,
    /// The turn.
    pub turn: TurnSeq,
    /// Which side of it.
    pub at: Boundary,
}

/// The lanes' senders.
pub(crate) struct Lanes(Vec<Sender<Job>>);

impl Lanes {
    /// Starts the lanes; each runs `take` on its jobs, in order, until
    /// `take` says to stop (the runtime is gone).
    pub(crate) fn start(
        take: impl Fn(Job) -> bool + Clone + Send + 'static,
    ) -> std::io::Result<Lanes> {
        let mut senders = Vec::new();
        for n in 0..LANES {
            let (tx, rx) = crossbeam_channel::bounded::<Job>(LANE_BOUND);
            let take = take.clone();
            std::thread::Builder::new()
                .name(format!("snapshots-{n}"))
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        if !take(job) {
                            return;
                        }
                    }
                })?;
            senders.push(tx);
        }
        Ok(Lanes(senders))
    }

    /// Queues `job` on its session's lane; gives it back when the lane is
    /// full.
    pub(crate) fn ask(&self, job: Job) -> Result<(), Job> {
        let lane = job
            .id
            .bytes()
            .fold(0usize, |h, b| h.wrapping_mul(31) + b as usize);
        match self.0[lane % self.0.len()].try_send(job) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) => Err(job),
        }
    }
}
