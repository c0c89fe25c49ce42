//! The launch as the runtime meets it through a session: the launch inputs
//! the runtime reports ([`LaunchInput`]) and the launch effects it carries
//! out ([`LaunchEffect`]). The session feeds the launch everything else
//! itself (stop, close, service stop, timeouts, the harness's start or
//! failure) and acts on the rest of its effects (start the harness, pause
//! the queue, the launch's end), so neither can cross this boundary.
//!
//! The names and their serde forms are the launch's own.

use serde::{Deserialize, Serialize};

use crate::copy::{MarkError, Observation};
use crate::launch::{self, WaitEnd, WaitOn};
use crate::time::Millis;

/// What the runtime reports to a session's launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchInput {
    /// The status file was read (answer to [`LaunchEffect::Observe`]).
    Observed(Observation),
    /// The watch saw something change on the status file's path.
    Changed,
    /// Whether the status file's path is watched (answer to
    /// [`LaunchEffect::Watch`], or a watch lost).
    Watched(bool),
    /// A startup permit was granted (answer to [`LaunchEffect::AskPermit`]).
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

/// A launch effect the runtime carries out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchEffect {
    /// Watch the status file's path; answer `Watched` (no answer: no watch).
    Watch,
    /// Stop watching the status file's path.
    Unwatch,
    /// Read `<folder>.cloudroom-files` now; answer `Observed`.
    Observe,
    /// The status file exists but is not a mark; it is treated as missing.
    MalformedMark(MarkError),
    /// A `copying` mark is dated `ahead` ms ahead of the service's clock.
    MarkInFuture {
        /// How far ahead of the clock its mtime lies.
        ahead: Millis,
    },
    /// The launch holds for the copy, at most until `until`.
    WaitFor {
        /// What holds it now.
        on: WaitOn,
        /// When the wait ends at the latest.
        until: Millis,
    },
    /// The check for the copy is over after `waited` ms.
    WaitEnded {
        /// Why it ended.
        why: WaitEnd,
        /// How long it lasted.
        waited: Millis,
    },
    /// Queue for a startup permit; answer `PermitGranted`.
    AskPermit,
    /// Withdraw a queued ask; a grant already on its way still arrives.
    CancelPermitAsk,
    /// Give a startup permit back (held, or granted when not wanted).
    ReleasePermit,
}

impl LaunchEffect {
    /// The runtime's part of a launch effect; `None` for those the session
    /// acts on itself.
    pub(super) fn of(effect: launch::Effect) -> Option<LaunchEffect> {
        use launch::Effect as E;
        Some(match effect {
            E::Watch => LaunchEffect::Watch,
            E::Unwatch => LaunchEffect::Unwatch,
            E::Observe => LaunchEffect::Observe,
            E::MalformedMark(e) => LaunchEffect::MalformedMark(e),
            E::MarkInFuture { ahead } => LaunchEffect::MarkInFuture { ahead },
            E::WaitFor { on, until } => LaunchEffect::WaitFor { on, until },
            E::WaitEnded { why, waited } => LaunchEffect::WaitEnded { why, waited },
            E::AskPermit => LaunchEffect::AskPermit,
            E::CancelPermitAsk => LaunchEffect::CancelPermitAsk,
            E::ReleasePermit => LaunchEffect::ReleasePermit,
            E::StartHarness | E::PauseQueue | E::Closed | E::Ended(_) => return None,
        })
    }
}
