//! Work for the event pool.

use std::path::PathBuf;
use std::sync::Arc;

use room_machines::session::{LaunchInput, TurnSeq};

use super::harness_io::turn_work::TurnWork;
use crate::sessions::SessionHandle;
use crate::supervise::TurnRecord;

/// Work for the event pool.
#[derive(Debug)]
pub(crate) enum Job {
    /// A launch input for session `id`: the watch's `Changed` and
    /// `Watched(false)`, a permit handed over by a release.
    Input(String, LaunchInput),
    /// Deadlines that fell due together: feed each session a `Timeout`.
    Timeouts(Vec<SessionHandle>),
    /// Read the status file of this folder and feed the session what it says.
    Observe(SessionHandle, PathBuf),
    /// Kill what the restored turn's record still names, then feed
    /// `SurvivorGone`.
    Survivor(SessionHandle, TurnSeq, TurnRecord),
    /// A round of a turn's work: its output, what its stdin could not
    /// take, its end.
    Turn(Arc<TurnWork>),
}
