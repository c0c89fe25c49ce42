//! `room-cli files wait`: when to give up on a project copy. Pure: the CLI
//! reads the status file and the clock and asks [`verdict`].

use serde::{Deserialize, Serialize};

use crate::copy::{CopyMark, Observation};
use crate::Millis;

/// `FILES_WAIT_GRACE`: how long a missing status file is waited for.
pub const FILES_WAIT_GRACE: Millis = 10_000;
/// `FILES_WAIT_LIMIT`: the longest `files wait` waits in all.
pub const FILES_WAIT_LIMIT: Millis = 10 * 60 * 1000;

/// What `files wait` does after one read of the status file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The files are there (or no copy is coming): exit 0.
    Ready,
    /// The copy failed with this reason: exit 1.
    Failed(String),
    /// Still copying (or the file may yet appear): read again later.
    Wait,
    /// The limit passed while still copying: exit 1.
    TimedOut,
}

/// Decides after `elapsed` ms of waiting, with `grace` for a missing file and
/// `limit` in all.
pub fn verdict(o: &Observation, elapsed: Millis, grace: Millis, limit: Millis) -> Verdict {
    match &o.mark {
        Some(CopyMark::Ready) => Verdict::Ready,
        Some(CopyMark::Failed(r)) => Verdict::Failed(r.clone()),
        Some(CopyMark::Copying) if elapsed >= limit => Verdict::TimedOut,
        Some(CopyMark::Copying) => Verdict::Wait,
        // No (readable) status file: no copy is coming once the grace is over.
        None if elapsed >= grace => Verdict::Ready,
        None => Verdict::Wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_limit_and_marks() {
        let missing = Observation::missing();
        let copying = Observation::marked(CopyMark::Copying, 0);
        assert_eq!(
            verdict(&missing, 9_999, FILES_WAIT_GRACE, FILES_WAIT_LIMIT),
            Verdict::Wait
        );
        assert_eq!(
            verdict(&missing, 10_000, FILES_WAIT_GRACE, FILES_WAIT_LIMIT),
            Verdict::Ready
        );
        assert_eq!(
            verdict(&copying, 599_999, FILES_WAIT_GRACE, FILES_WAIT_LIMIT),
            Verdict::Wait
        );
        assert_eq!(
            verdict(&copying, 600_000, FILES_WAIT_GRACE, FILES_WAIT_LIMIT),
            Verdict::TimedOut
        );
        let failed = Observation::marked(CopyMark::Failed("disk full".into()), 0);
        assert_eq!(
            verdict(&failed, 0, FILES_WAIT_GRACE, FILES_WAIT_LIMIT),
            Verdict::Failed("disk full".into())
        );
    }
}
