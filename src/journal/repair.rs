//! Mending a journal's end so that appends can go on after it, deleting
//! nothing: an unfinished last line (bytes after the last newline that are
//! not a whole event: what a crash mid-append leaves) is first copied aside
//! to `<id>.jsonl.damaged-<n>` (0600, durable) and only then cut from the
//! journal; a whole last event that lacks only its newline gets it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::report::SetAside;

/// The most copies set aside beside one journal (one per crash mid-append
/// that left bytes behind).
const MAX_COPIES: u32 = 10_000;

/// What a journal's end needs before the next append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TailFix {
    /// Nothing: the file ends with a newline.
    Sound,
    /// The last event is whole but has no newline: one goes at `at`.
    Newline {
        /// The file's length.
        at: u64,
    },
    /// `len` bytes from `at` to the end are an unfinished line: set aside
    /// and cut.
    SetAside {
        /// Where they start.
        at: u64,
        /// How many.
        len: u64,
    },
}

/// Applies `fix` to the journal at `path`: what was set aside, if anything.
pub(super) fn mend(path: &Path, fix: TailFix) -> io::Result<Option<SetAside>> {
    match fix {
        TailFix::Sound => Ok(None),
        TailFix::Newline { at } => {
            let file = open_for_write(path)?;
            file.write_all_at(b"\n", at)?;
            file.sync_data()?;
            log::warn!(
                "{}: its last event (ending at byte {at}) had no newline; one was added",
                path.display()
            );
            Ok(None)
        }
        TailFix::SetAside { at, len } => {
            let copy = set_aside(path, at, len)?;
            let file = open_for_write(path)?;
            file.set_len(at)?;
            file.sync_data()?;
            log::warn!(
                "{}: its last {len} bytes (from byte {at}) are an unfinished line, what a crash \
                 mid-append leaves (never served); copied to {} and cut",
                path.display(),
                copy.display()
            );
            let file = copy
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(Some(SetAside {
                file,
                offset: at,
                bytes: len,
            }))
        }
    }
}

fn open_for_write(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_CLOEXEC | nix::libc::O_NOFOLLOW)
        .open(path)
}

/// Copies `len` bytes at `at` of `path` into a new file beside it,
/// `<name>.damaged-<n>` (the first free `n` from 1), made 0600 and durable
/// (the file and its name) before this returns; its path.
fn set_aside(path: &Path, at: u64, len: u64) -> io::Result<PathBuf> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut from = File::open(path)?;
    for n in 1..=MAX_COPIES {
        let copy = dir.join(format!("{name}.damaged-{n}"));
        let mut to = match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(nix::libc::O_CLOEXEC | nix::libc::O_NOFOLLOW)
            .open(&copy)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        let copied = from
            .seek(SeekFrom::Start(at))
            .and_then(|_| io::copy(&mut (&mut from).take(len), &mut to))
            .and_then(|copied| to.sync_all().map(|()| copied))
            .and_then(|copied| sync_dir(Some(dir)).map(|()| copied));
        return match copied {
            Ok(copied) if copied == len => Ok(copy),
            Ok(copied) => {
                let _ = std::fs::remove_file(&copy);
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("{copied} of {len} bytes could be read to set aside"),
                ))
            }
            Err(e) => {
                // A partial copy is no copy: the bytes stay in the journal.
                let _ = std::fs::remove_file(&copy);
                Err(e)
            }
        };
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{MAX_COPIES} copies of damaged bytes are beside it already"),
    ))
}

/// fsyncs a folder, so the names made in it are durable.
pub(super) fn sync_dir(dir: Option<&Path>) -> std::io::Result<()> {
    match dir {
        Some(dir) => std::fs::File::open(dir)?.sync_all(),
        None => Ok(()),
    }
}
