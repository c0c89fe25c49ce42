//! The project copy's status file, `<folder>.cloudroom-files`: where it is and
//! what one read of it says (content and mtime, as a launch `Observation`).

use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use nix::libc;
use room_machines::copy::MAX_MARK_BYTES;
use room_machines::{MarkError, Observation};

use crate::nofollow::{self, PathError};

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
pub type Raw = Option<(Content, SystemTime)>;

/// What lies at the status path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// A regular file's first bytes (at most one past `MAX_MARK_BYTES`).
    Bytes(Vec<u8>),
    /// Not a regular file (a FIFO, a folder, a device, a socket): never
    /// opened for reading, so it cannot block or feed a read forever; named
    /// here for the log.
    NotAFile(&'static str),
}

/// Reads the status file once, without blocking whatever lies there. A
/// missing file is `Ok(None)`; any other failure is an error (logged by the
/// caller's `observation`).
///
/// The path is opened with `O_PATH` first, which opens nothing (no FIFO
/// rendezvous, no device driver: a file that is a device must not arm it),
/// and through no symbolic link anywhere on the path (`nofollow`): the
/// service may read as root where the agent account plants links, and a
/// link to a root-only file must not show that file's text. A link, and a
/// regular file with more than one name (a hard link to a file elsewhere),
/// are malformed marks. The descriptor is checked with `fstat`; only a
/// regular file is then opened for reading, through `/proc/self/fd`, so the
/// file read is the one checked even if the path is swapped meanwhile. At
/// most one byte past `MAX_MARK_BYTES` is read.
pub fn read_raw(path: &Path) -> std::io::Result<Raw> {
    let handle = match nofollow::open_path(path) {
        Ok(fd) => std::fs::File::from(fd),
        Err(e) if e.is_not_found() => return Ok(None),
        Err(PathError::Link(at)) => {
            log::debug!(
                "{}: {} is a symbolic link; treated as missing",
                path.display(),
                at.display()
            );
            return Ok(Some((
                Content::NotAFile("behind a symbolic link"),
                SystemTime::now(),
            )));
        }
        Err(PathError::Io(_, e)) => return Err(e),
        Err(e) => return Err(std::io::Error::other(e.to_string())),
    };
    let meta = handle.metadata()?;
    let mtime = meta.modified().unwrap_or_else(|_| SystemTime::now());
    if !meta.file_type().is_file() {
        return Ok(Some((not_a_file(path, &meta.file_type()), mtime)));
    }
    if meta.nlink() > 1 {
        log::debug!(
            "{} has {} names; treated as missing",
            path.display(),
            meta.nlink()
        );
        return Ok(Some((Content::NotAFile("a file with other names"), mtime)));
    }
    // The checked descriptor's own file, reopened for reading (the service
    // needs /proc anyway, for its callers' ancestry).
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(format!("/proc/self/fd/{}", handle.as_raw_fd()))?;
    // Read one byte past the limit so an oversized file is reported as such.
    let mut bytes = Vec::new();
    file.take(MAX_MARK_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(Some((Content::Bytes(bytes), mtime)))
}

/// What lies at `path` when it is not a regular file (said at debug level:
/// the launch reports the malformed mark itself, once).
fn not_a_file(path: &Path, t: &std::fs::FileType) -> Content {
    let what = if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    log::debug!("{} is {what}; treated as missing", path.display());
    Content::NotAFile(what)
}

/// The launch's view of a read: the mark, and its age now (`now - mtime`).
/// An mtime in the future has age 0 and says how far ahead it lies, so the
/// launch can tell clock trouble from a fresh copy. Something other than a
/// regular file is a malformed mark (reported once by the launch, treated as
/// missing), as `NotText`: it holds no text.
pub fn observation(raw: &Raw) -> Observation {
    match raw {
        None => Observation::missing(),
        Some((content, mtime)) => {
            let (age, ahead) = match SystemTime::now().duration_since(*mtime) {
                Ok(age) => (age.as_millis() as u64, None),
                Err(e) => (0, Some(e.duration().as_millis() as u64)),
            };
            let observed = match content {
                Content::Bytes(bytes) => Observation::from_file(bytes, age),
                Content::NotAFile(_) => Observation {
                    mark: None,
                    age: Some(age),
                    malformed: Some(MarkError::NotText),
                    ..Observation::default()
                },
            };
            match ahead {
                Some(ms) => observed.dated_ahead(ms),
                None => observed,
            }
        }
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

    #[test]
    fn what_is_not_a_regular_file_is_a_malformed_mark_read_without_blocking() {
        let dir = std::env::temp_dir().join(format!("rc-files-odd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let not_a_mark = |name: &str, what: &'static str| {
            let raw = read_raw(&status_file(&dir.join(name))).unwrap();
            assert_eq!(raw.as_ref().map(|r| &r.0), Some(&Content::NotAFile(what)));
            let o = observation(&raw);
            assert_eq!((o.mark, o.malformed), (None, Some(MarkError::NotText)));
        };
        // A FIFO with no writer would block a plain open(2) forever.
        nix::unistd::mkfifo(
            &status_file(&dir.join("fifo")),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        not_a_mark("fifo", "a FIFO");
        std::fs::create_dir(status_file(&dir.join("folder"))).unwrap();
        not_a_mark("folder", "a folder");
        // A symlink to /dev/zero would feed a read forever; a link is not
        // followed at all.
        std::os::unix::fs::symlink("/dev/zero", status_file(&dir.join("zero"))).unwrap();
        not_a_mark("zero", "behind a symbolic link");
        // A 10 MB file: only the cap (plus one byte) is read.
        let big = status_file(&dir.join("big"));
        std::fs::write(&big, vec![b'x'; 10_000_000]).unwrap();
        match read_raw(&big).unwrap() {
            Some((Content::Bytes(b), _)) => assert_eq!(b.len(), MAX_MARK_BYTES + 1),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            observe(&dir.join("big")).malformed,
            Some(MarkError::TooLong(MAX_MARK_BYTES + 1))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn no_link_on_the_path_is_followed_and_no_text_of_another_file_is_shown() {
        let dir = std::env::temp_dir().join(format!("rc-files-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("rootonly")).unwrap();
        std::fs::create_dir_all(dir.join("owned")).unwrap();
        // A root-only file whose line is a mark, reached through a link as
        // the status file and through a linked folder above it.
        let secret = dir.join("rootonly/code.cloudroom-files");
        std::fs::write(&secret, "failed: the root-only text\n").unwrap();
        std::os::unix::fs::symlink(&secret, status_file(&dir.join("owned/code"))).unwrap();
        std::os::unix::fs::symlink(dir.join("rootonly"), dir.join("owned/proj")).unwrap();
        for folder in [dir.join("owned/code"), dir.join("owned/proj/code")] {
            let raw = read_raw(&status_file(&folder)).unwrap();
            assert_eq!(
                raw.as_ref().map(|r| &r.0),
                Some(&Content::NotAFile("behind a symbolic link")),
                "{}",
                folder.display()
            );
            let o = observe(&folder);
            assert_eq!((o.mark, o.malformed), (None, Some(MarkError::NotText)));
        }
        // A second name for a file elsewhere is not a mark either.
        std::fs::hard_link(&secret, status_file(&dir.join("owned/hard"))).unwrap();
        let raw = read_raw(&status_file(&dir.join("owned/hard"))).unwrap();
        assert_eq!(
            raw.as_ref().map(|r| &r.0),
            Some(&Content::NotAFile("a file with other names"))
        );
        // The file itself, at its own path, still reads.
        assert_eq!(
            observe(&dir.join("rootonly/code")).mark,
            None,
            "a file with two names is malformed wherever it is read"
        );
        std::fs::remove_file(status_file(&dir.join("owned/hard"))).unwrap();
        assert_eq!(
            observe(&dir.join("rootonly/code")).mark,
            Some(CopyMark::Failed("the root-only text".into()))
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
