//! `room-cli files wait`: when to give up on a project copy. Pure: the CLI
//! reads the status file, the folder and the clock and asks [`verdict`].

use serde::{Deserialize, Serialize};

use crate::copy::{CopyMark, Observation};
use crate::time::Millis;

/// `FILES_WAIT_GRACE`: how long a missing status file is waited for while
/// the folder looks empty.
pub const FILES_WAIT_GRACE: Millis = 10_000;
/// `FILES_WAIT_LIMIT`: the longest `files wait` waits in all.
pub const FILES_WAIT_LIMIT: Millis = 10 * 60 * 1000;
/// The one entry a folder may hold and still look empty: Cloudroom's own,
/// which is there before any project file lands.
pub const OWN_ENTRY: &str = ".cloudroom";

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

/// Whether a folder entry named `name` is the project's (anything but
/// [`OWN_ENTRY`]). A folder looks empty when it has none, or does not exist
/// yet.
pub fn is_project_entry(name: &str) -> bool {
    name != OWN_ENTRY
}

/// Decides after `elapsed` ms of waiting, with `grace` for a missing file and
/// `limit` in all. `looks_empty`: the folder holds nothing but
/// [`OWN_ENTRY`], or does not exist yet.
///
/// A missing status file is waited for only while the folder looks empty: a
/// folder with files in it and no status file is a folder no copy is coming
/// to (a blank thread someone has worked in, a project cloned before), so
/// the wait ends at once.
pub fn verdict(
    o: &Observation,
    looks_empty: bool,
    elapsed: Millis,
    grace: Millis,
    limit: Millis,
) -> Verdict {
    match &o.mark {
        Some(CopyMark::Ready) => Verdict::Ready,
        Some(CopyMark::Failed(r)) => Verdict::Failed(r.clone()),
        Some(CopyMark::Copying) if elapsed >= limit => Verdict::TimedOut,
        Some(CopyMark::Copying) => Verdict::Wait,
        // No (readable) status file: no copy is coming once the grace is over.
        None if !looks_empty || elapsed >= grace => Verdict::Ready,
        None => Verdict::Wait,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(o: &Observation, looks_empty: bool, elapsed: Millis) -> Verdict {
        verdict(o, looks_empty, elapsed, FILES_WAIT_GRACE, FILES_WAIT_LIMIT)
    }

    #[test]
    fn grace_limit_and_marks() {
        let missing = Observation::missing();
        let copying = Observation::marked(CopyMark::Copying, 0);
        assert_eq!(at(&missing, true, 9_999), Verdict::Wait);
        assert_eq!(at(&missing, true, 10_000), Verdict::Ready);
        for looks_empty in [true, false] {
            assert_eq!(at(&copying, looks_empty, 599_999), Verdict::Wait);
            assert_eq!(at(&copying, looks_empty, 600_000), Verdict::TimedOut);
        }
        let failed = Observation::marked(CopyMark::Failed("disk full".into()), 0);
        assert_eq!(at(&failed, true, 0), Verdict::Failed("disk full".into()));
    }

    #[test]
    fn a_folder_with_files_and_no_status_file_is_ready_at_once() {
        assert_eq!(at(&Observation::missing(), false, 0), Verdict::Ready);
        // A malformed status file counts as missing.
        assert_eq!(
            at(&Observation::from_file(b"??", 0), false, 0),
            Verdict::Ready
        );
        assert_eq!(
            at(&Observation::from_file(b"??", 0), true, 0),
            Verdict::Wait
        );
    }

    #[test]
    fn only_cloudroom_s_own_entry_leaves_a_folder_looking_empty() {
        assert!(!is_project_entry(".cloudroom"));
        for name in [
            ".git",
            "README.md",
            ".cloudroom-files",
            ".Cloudroom",
            "cloudroom",
        ] {
            assert!(is_project_entry(name), "{name}");
        }
    }
}
