//! What the runtime reports to a session's launch ([`LaunchInput`]). The
//! session feeds the launch everything else itself (stop, close, service
//! stop, timeouts, the harness's start or failure), so none of that can
//! cross this boundary. The launch's work for the runtime comes out as the
//! launch's own [`LaunchEffect`](crate::launch::LaunchEffect).
//!
//! The names and their serde forms are the launch's own.

use serde::{Deserialize, Serialize};

use crate::copy::Observation;
use crate::launch;

/// What the runtime reports to a session's launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchInput {
    /// The status file was read (answer to `LaunchEffect::Observe`).
    Observed(Observation),
    /// The watch saw something change on the status file's path.
    Changed,
    /// Whether the status file's path is watched (answer to
    /// `LaunchEffect::Watch`, or a watch lost).
    Watched(bool),
    /// A startup permit was granted (answer to `LaunchEffect::AskPermit`).
    PermitGranted,
}

impl From<LaunchInput> for launch::Input {
    fn from(input: LaunchInput) -> launch::Input {
        match input {
            LaunchInput::Observed(o) => launch::Input::Observed(o),
            LaunchInput::Changed => launch::Input::Changed,
            LaunchInput::Watched(w) => launch::Input::Watched(w),
            LaunchInput::PermitGranted => launch::Input::PermitGranted,
        }
    }
}
