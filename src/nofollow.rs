//! Paths another account can change, reached through descriptors without
//! following a symbolic link.
//!
//! In the protected setup room-core runs as root and the agent account owns
//! session folders and often the folders above them. A symbolic link planted
//! there would turn root's `create_dir` and `chown` by path into root's
//! writes anywhere (`owned/proj -> /etc/systemd/system`), and root's read of
//! a status file into a read of any file. So every such path is walked from
//! `/` one component at a time with `O_NOFOLLOW`, each step relative to the
//! descriptor of the folder before it; a link anywhere on the path ends the
//! walk with [`PathError::Link`], which names it. What is created is created
//! with `mkdirat` in the descriptor of its parent, opened again without
//! following a link, and handed over with `fchown` on that descriptor.

use std::ffi::{CString, OsStr};
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::libc;
use nix::sys::stat::{fstatat, mkdirat, Mode};
use nix::unistd::{fchown, Gid, Uid};

/// Why a path could not be used.
#[derive(Debug)]
pub(crate) enum PathError {
    /// A component (named by the path up to it) is a symbolic link.
    Link(PathBuf),
    /// A component is neither a folder nor missing.
    NotAFolder(PathBuf),
    /// The path is not absolute, or has `.` or `..` in it.
    NotNormal(PathBuf),
    /// A system call on the component failed.
    Io(PathBuf, io::Error),
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::Link(p) => write!(
                f,
                "{} is a symbolic link, and room-core follows none in a session's folder",
                p.display()
            ),
            PathError::NotAFolder(p) => write!(f, "{} is not a folder", p.display()),
            PathError::NotNormal(p) => write!(
                f,
                "{} is not an absolute path without . or .. components",
                p.display()
            ),
            PathError::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

impl std::error::Error for PathError {}

/// The normal components of an absolute path, or `NotNormal`.
fn components(path: &Path) -> Result<Vec<&OsStr>, PathError> {
    let not_normal = || PathError::NotNormal(path.to_path_buf());
    let mut parts = path.components();
    if parts.next() != Some(Component::RootDir) {
        return Err(not_normal());
    }
    // `components()` drops a `.` in the middle; the bytes still hold it.
    let bytes = path.as_os_str().as_bytes();
    if bytes.split(|b| *b == b'/').any(|s| s == b"." || s == b"..") {
        return Err(not_normal());
    }
    parts
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(not_normal()),
        })
        .collect()
}

fn c_name(name: &OsStr, at: &Path) -> Result<CString, PathError> {
    CString::new(name.as_bytes()).map_err(|_| {
        PathError::Io(
            at.to_path_buf(),
            io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"),
        )
    })
}

/// `openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC)`.
fn open_at(dir: RawFd, name: &CString, flags: libc::c_int) -> io::Result<OwnedFd> {
    let flags = OFlag::from_bits_retain(flags) | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    crate::sys::openat(dir, name, flags)
}

/// Whether `name` in `dir` is a symbolic link (`fstatat` without following).
fn is_link(dir: RawFd, name: &CString) -> bool {
    fstatat(Some(dir), name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK)
}

/// The error for a failed open of the folder `at` (`name` in `dir`).
fn open_error(dir: RawFd, name: &CString, at: PathBuf, e: io::Error) -> PathError {
    match e.raw_os_error() {
        Some(libc::ELOOP) => PathError::Link(at),
        Some(libc::ENOTDIR) if is_link(dir, name) => PathError::Link(at),
        Some(libc::ENOTDIR) => PathError::NotAFolder(at),
        _ => PathError::Io(at, e),
    }
}

/// The folder flags: a descriptor that reads nothing (`O_PATH`: no read
/// permission needed, no device opened), only for a folder.
const DIR_FLAGS: libc::c_int = libc::O_PATH | libc::O_DIRECTORY;

/// Makes `folder` and every missing folder above it, never through a
/// symbolic link; each folder it creates is handed to `owner` (uid, gid)
/// when given. A folder that exists is left as it is (owner included).
/// Returns a descriptor of `folder`.
pub(crate) fn make_folders(folder: &Path, owner: Option<(u32, u32)>) -> Result<OwnedFd, PathError> {
    let names = components(folder)?;
    let mut at = PathBuf::from("/");
    let mut dir = open_at(
        libc::AT_FDCWD,
        &CString::new("/").expect("no NUL"),
        DIR_FLAGS,
    )
    .map_err(|e| PathError::Io(at.clone(), e))?;
    for name in names {
        at.push(name);
        let c = c_name(name, &at)?;
        let opened = match open_at(dir.as_raw_fd(), &c, DIR_FLAGS) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                create_at(dir.as_raw_fd(), &c, &at, owner)
            }
            other => other.map_err(|e| open_error(dir.as_raw_fd(), &c, at.clone(), e)),
        };
        dir = opened?;
    }
    Ok(dir)
}

/// Creates the folder `name` in `dir` (or finds one made meanwhile), opens
/// it without following a link and, when it is new, hands it to `owner`.
fn create_at(
    dir: RawFd,
    name: &CString,
    at: &Path,
    owner: Option<(u32, u32)>,
) -> Result<OwnedFd, PathError> {
    let made = match mkdirat(Some(dir), name.as_c_str(), Mode::from_bits_truncate(0o777)) {
        Ok(()) => true,
        Err(Errno::EEXIST) => false,
        Err(e) => return Err(PathError::Io(at.to_path_buf(), e.into())),
    };
    // Between the mkdirat and this open the parent's owner could put a link
    // in its place: O_NOFOLLOW refuses it, and the chown goes to whatever
    // folder this descriptor is, never to a path.
    let fd = open_at(dir, name, libc::O_RDONLY | libc::O_DIRECTORY)
        .map_err(|e| open_error(dir, name, at.to_path_buf(), e))?;
    if let (true, Some((uid, gid))) = (made, owner) {
        let (uid, gid) = (Uid::from_raw(uid), Gid::from_raw(gid));
        if let Err(e) = fchown(fd.as_raw_fd(), Some(uid), Some(gid)) {
            return Err(PathError::Io(at.to_path_buf(), e.into()));
        }
    }
    Ok(fd)
}

/// Opens `path` with `O_PATH` (which opens nothing: no FIFO rendezvous, no
/// device driver) when no component of it, the last included, is a
/// symbolic link. A missing component is `NotFound`; a link is
/// [`PathError::Link`] (the kernel's `RESOLVE_NO_SYMLINKS` where it has
/// openat2, else a walk).
pub(crate) fn open_path(path: &Path) -> Result<OwnedFd, PathError> {
    let how = nix::fcntl::OpenHow::new()
        .flags(nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_CLOEXEC)
        .resolve(nix::fcntl::ResolveFlag::RESOLVE_NO_SYMLINKS);
    match crate::sys::openat2(libc::AT_FDCWD, path, how) {
        Ok(fd) => Ok(fd),
        Err(nix::errno::Errno::ELOOP) => Err(first_link(path)),
        Err(nix::errno::Errno::ENOSYS) | Err(nix::errno::Errno::EPERM) => walk_path(path),
        Err(e) => Err(PathError::Io(path.to_path_buf(), e.into())),
    }
}

/// The walk `open_path` does on a kernel without openat2 (before 5.6, or a
/// seccomp filter that refuses it).
fn walk_path(path: &Path) -> Result<OwnedFd, PathError> {
    let names = components(path)?;
    let mut at = PathBuf::from("/");
    let mut fd = open_at(
        libc::AT_FDCWD,
        &CString::new("/").expect("no NUL"),
        DIR_FLAGS,
    )
    .map_err(|e| PathError::Io(at.clone(), e))?;
    let last = names.len().saturating_sub(1);
    for (i, name) in names.into_iter().enumerate() {
        at.push(name);
        let c = c_name(name, &at)?;
        let flags = if i == last { libc::O_PATH } else { DIR_FLAGS };
        fd = match open_at(fd.as_raw_fd(), &c, flags) {
            // O_PATH | O_NOFOLLOW opens a link itself rather than failing.
            Ok(_) if i == last && is_link(fd.as_raw_fd(), &c) => return Err(PathError::Link(at)),
            Ok(next) => next,
            Err(e) => return Err(open_error(fd.as_raw_fd(), &c, at, e)),
        };
    }
    Ok(fd)
}

/// Which component of `path` is the link openat2 refused (for the message;
/// `path` itself when none is found, as the path may have changed since).
fn first_link(path: &Path) -> PathError {
    match walk_path(path) {
        Err(e @ PathError::Link(_)) => e,
        _ => PathError::Link(path.to_path_buf()),
    }
}

impl PathError {
    /// Whether a component is missing.
    pub(crate) fn is_not_found(&self) -> bool {
        matches!(self, PathError::Io(_, e) if e.kind() == io::ErrorKind::NotFound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, MetadataExt};

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("nofollow-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn folders_are_made_down_the_whole_path() {
        let root = temp("make");
        let folder = root.join("a/b/c");
        make_folders(&folder, None).unwrap();
        assert!(folder.is_dir());
        make_folders(&folder, None).expect("an existing folder is fine");
    }

    #[test]
    fn a_link_at_any_depth_is_refused_and_nothing_is_made_behind_it() {
        let root = temp("link");
        let target = root.join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::create_dir(root.join("owned")).unwrap();
        symlink(&target, root.join("owned/proj")).unwrap();
        for (folder, link) in [
            (root.join("owned/proj/service.d"), root.join("owned/proj")),
            (root.join("owned/proj/a/b"), root.join("owned/proj")),
            (root.join("owned/proj"), root.join("owned/proj")),
        ] {
            match make_folders(&folder, None) {
                Err(PathError::Link(at)) => assert_eq!(at, link),
                other => panic!("{}: {other:?}", folder.display()),
            }
        }
        assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0);
        let e = make_folders(&root.join("owned/proj/x"), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}/owned/proj is a symbolic link, and room-core follows none in a session's folder",
                root.display()
            )
        );
    }

    #[test]
    fn only_what_is_created_changes_owner() {
        if !nix::unistd::geteuid().is_root() {
            return eprintln!("skipped: chown needs root");
        }
        let root = temp("owner");
        let folder = root.join("new/deeper");
        make_folders(&folder, Some((4242, 4243))).unwrap();
        for dir in [root.join("new"), folder] {
            let m = std::fs::metadata(&dir).unwrap();
            assert_eq!((m.uid(), m.gid()), (4242, 4243), "{}", dir.display());
        }
        assert_eq!(std::fs::metadata(&root).unwrap().uid(), 0);
    }

    #[test]
    fn paths_that_are_not_normal_are_refused() {
        for p in ["relative/x", "/a/../etc", "/a/./b"] {
            assert!(
                matches!(
                    make_folders(Path::new(p), None),
                    Err(PathError::NotNormal(_))
                ),
                "{p}"
            );
        }
    }

    #[test]
    fn open_path_refuses_links_anywhere_and_finds_files() {
        let root = temp("open");
        std::fs::create_dir(root.join("real")).unwrap();
        std::fs::write(root.join("real/file"), "x").unwrap();
        symlink(root.join("real"), root.join("dirlink")).unwrap();
        symlink(root.join("real/file"), root.join("real/filelink")).unwrap();
        open_path(&root.join("real/file")).unwrap();
        for (path, link) in [
            (root.join("dirlink/file"), root.join("dirlink")),
            (root.join("real/filelink"), root.join("real/filelink")),
        ] {
            match open_path(&path) {
                Err(PathError::Link(at)) => assert_eq!(at, link),
                other => panic!("{}: {other:?}", path.display()),
            }
            match walk_path(&path) {
                Err(PathError::Link(at)) => assert_eq!(at, link),
                other => panic!("walk {}: {other:?}", path.display()),
            }
        }
        assert!(open_path(&root.join("real/missing"))
            .unwrap_err()
            .is_not_found());
        assert!(walk_path(&root.join("real/missing"))
            .unwrap_err()
            .is_not_found());
    }
}
