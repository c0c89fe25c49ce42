//! What `SpawnTurn` asks of the runtime beside the turn's number: the
//! prompt its new process gets, and how that process starts.

use room_machines::session::{Attachment, Cut, ModelChoice};

/// `SpawnTurn`'s fields beside the turn.
pub(super) struct SpawnOrder {
    /// The prompt, said once the process runs.
    pub prompt: String,
    /// The prompt's images, read from the session's store when it is said.
    pub attachments: Vec<Attachment>,
    /// The native session it resumes, if any.
    pub resume: Option<String>,
    /// Where a rewind or a fork cut its conversation, if one did.
    pub cut: Option<Cut>,
    /// Plan only.
    pub plan_only: bool,
    /// The model and effort in force.
    pub choice: ModelChoice,
}
