//! What an app command answers.

use room_machines::session::TurnSeq;
use serde_json::Value;

/// What an app command answers.
#[derive(Debug)]
pub struct CommandAnswer {
    /// The session's view once the command is applied.
    pub view: Value,
    /// The turn the command ends, when it still runs: the answer is due
    /// only once it is gone ([`Runtime::when_turn_gone`], at most
    /// [`Runtime::turn_bound`] later), and then shows the view as it is.
    pub turn: Option<TurnSeq>,
}
