//! The project copy's status file, `<folder>.cloudroom-files`: where it is and
//! what one read of it says (content and mtime, as a launch `Observation`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use room_machines::copy::MAX_MARK_BYTES;
use room_machines::Observation;

/// The suffix the app appends to a session folder's path for its status file.
pub const STATUS_SUFFIX: &str = ".cloudroom-files";

/// `<folder>.cloudroom-files`: a sibling of the folder, not a file inside it,
/// so the app can mark a folder that does not exist yet.
pub fn status_file(folder: &Path) -> PathBuf {
    let text = folder.as_os_str().to_string_lossy();
    let trimmed = text.trim_end_matches('/');
    PathBuf::from(format!("{trimmed}{STATUS_SUFFIX}"))
}

/// What one read of a status file found: its bytes (up to one past
/// `MAX_MARK_BYTES`) and mtime, or `None` when there is no file.
pub type Raw = Option<(Vec<u8>, SystemTime)>;

/// Reads the status file once. A missing file is `Ok(None)`; any other
/// failure is an error (logged by the caller's `observation`).
pub fn read_raw(path: &Path) -> std::io::Result<Raw> {
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mtime = file
        .metadata()
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| SystemTime::now());
    // Read one byte past the limit so an oversized file is reported as such.
    let mut bytes = Vec::new();
    (&mut file)
        .take(MAX_MARK_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(Some((bytes, mtime)))
}

/// The launch's view of a read: the mark, and its age now (`now - mtime`).
/// An mtime in the future has age 0 and says how far ahead it lies, so the
/// launch can tell clock trouble from a fresh copy.
pub fn observation(raw: &Raw) -> Observation {
    match raw {
        None => Observation::missing(),
        Some((bytes, mtime)) => match SystemTime::now().duration_since(*mtime) {
            Ok(age) => Observation::from_file(bytes, age.as_millis() as u64),
            Err(e) => Observation::from_file(bytes, 0).dated_ahead(e.duration().as_millis() as u64),
        },
    }
}

/// Reads the status file once. A missing or unreadable file is a missing
/// mark; the age is as [`observation`] gives it.
pub fn observe(folder: &Path) -> Observation {
    let path = status_file(folder);
    match read_raw(&path) {
        Ok(raw) => observation(&raw),
        Err(e) => {
            log::warn!("cannot read {}: {e}", path.display());
            Observation::missing()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use room_machines::CopyMark;

    #[test]
    fn status_file_is_a_sibling_of_the_folder() {
        assert_eq!(
            status_file(Path::new("/code/")),
            PathBuf::from("/code.cloudroom-files")
        );
        assert_eq!(
            status_file(Path::new("/w/a b")),
            PathBuf::from("/w/a b.cloudroom-files")
        );
    }

    #[test]
    fn reads_mark_and_age() {
        let dir = std::env::temp_dir().join(format!("rc-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let folder = dir.join("code");
        assert_eq!(observe(&folder), Observation::missing());
        std::fs::write(status_file(&folder), "ready\n").unwrap();
        let o = observe(&folder);
        assert_eq!(o.mark, Some(CopyMark::Ready));
        assert!(o.age.unwrap() < 60_000);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
