//! Files the service writes for a turn's harness to read (claude's MCP
//! config, which holds secrets and so never goes on a command line): in
//! `room-core-turn-files`, a folder made beside the agent socket, whose
//! folders the agent may enter and no other account may write. The folder
//! is the service's, mode 0711: the agent opens a file whose name it is
//! given and can list, add or change nothing. Each file is made with
//! `O_EXCL` and `O_NOFOLLOW` through the folder's descriptor, given to the
//! agent account, mode 0600, and removed once its process is gone; opening
//! the folder removes what a crash left there.

use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use nix::fcntl::OFlag;
use nix::sys::stat::{fchmod, fstat, mkdirat, Mode};
use nix::unistd::{fchown, unlinkat, Gid, Uid, UnlinkatFlags};

use crate::sys::{create_at, openat};

use super::socket_file::socket_folder;

/// The folder's name beside the agent socket.
pub(crate) const FOLDER: &str = "room-core-turn-files";

/// The folder, open.
#[derive(Debug)]
pub(crate) struct TurnFiles {
    dir: OwnedFd,
    path: PathBuf,
    /// The account the files are given to (none: the service's own).
    owner: Option<(u32, u32)>,
}

impl TurnFiles {
    /// Opens (making) the folder beside the agent socket at `socket`, for
    /// files the account `owner` (uid, gid) reads, and empties it.
    pub(crate) fn open(socket: &Path, owner: Option<(u32, u32)>) -> io::Result<TurnFiles> {
        let parent = socket_folder(socket)?;
        let name = CString::new(FOLDER).expect("no NUL");
        let at = Some(parent.as_raw_fd());
        match mkdirat(at, name.as_c_str(), Mode::from_bits_truncate(0o711)) {
            Ok(()) | Err(nix::errno::Errno::EEXIST) => {}
            Err(e) => return Err(e.into()),
        }
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let dir = openat(parent.as_raw_fd(), name.as_c_str(), flags)?;
        let st = fstat(dir.as_raw_fd())?;
        let me = nix::unistd::geteuid().as_raw();
        if st.st_uid != me || st.st_mode & 0o022 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{FOLDER} beside {} belongs to uid {} with mode {:o}: room-core writes a turn's files only in a folder of its own that no one else may write",
                    socket.display(),
                    st.st_uid,
                    st.st_mode & 0o7777
                ),
            ));
        }
        fchmod(dir.as_raw_fd(), Mode::from_bits_truncate(0o711))?;
        let path = socket.parent().unwrap_or(Path::new("/")).join(FOLDER);
        let files = TurnFiles { dir, path, owner };
        files.empty();
        Ok(files)
    }

    /// Writes `bytes` as the new file `name`, the owner's, mode 0600: its
    /// path, for the harness.
    pub(crate) fn write(&self, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
        let c = file_name(name)?;
        // A file a crash left under this name is not this turn's.
        let at = Some(self.dir.as_raw_fd());
        let _ = unlinkat(at, c.as_c_str(), UnlinkatFlags::NoRemoveDir);
        let flags = OFlag::O_WRONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mode = Mode::from_bits_truncate(0o600);
        let fd = create_at(self.dir.as_raw_fd(), c.as_c_str(), flags, mode)?;
        if let Some((uid, gid)) = self.owner {
            let (uid, gid) = (Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)));
            fchown(fd.as_raw_fd(), uid, gid)?;
        }
        let mut file = std::fs::File::from(fd);
        if let Err(e) = file.write_all(bytes) {
            self.remove(name);
            return Err(e);
        }
        Ok(self.path.join(name))
    }

    /// The folder a run before made beside the agent socket at `socket`,
    /// emptied of what it left; `None` where there is none (it is made when
    /// a turn first needs it).
    pub(crate) fn left(socket: &Path, owner: Option<(u32, u32)>) -> io::Result<Option<TurnFiles>> {
        let parent = socket.parent().unwrap_or(Path::new("/"));
        match std::fs::symlink_metadata(parent.join(FOLDER)) {
            Ok(_) => TurnFiles::open(socket, owner).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes file `name`, if it is there.
    pub(crate) fn remove(&self, name: &str) {
        let Ok(c) = file_name(name) else { return };
        let at = Some(self.dir.as_raw_fd());
        match unlinkat(at, c.as_c_str(), UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(nix::errno::Errno::ENOENT) => {}
            Err(e) => log::warn!("cannot remove {}: {e}", self.path.join(name).display()),
        }
    }

    /// Removes every file in the folder (what a crash left). The listing
    /// is by path (the folder is the service's, in a folder no other
    /// account may write); each removal goes through its descriptor.
    fn empty(&self) {
        let Ok(listing) = std::fs::read_dir(&self.path) else {
            return;
        };
        for entry in listing.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            log::info!(
                "removing {}, left by a turn before a restart",
                self.path.join(&name).display()
            );
            self.remove(&name);
        }
    }
}

/// The folder as the service holds it: opened at start where a run before
/// made it (emptying it), else made by the first turn that needs it.
#[derive(Debug)]
pub(crate) struct TurnFolder {
    /// The agent socket the folder is beside.
    socket: PathBuf,
    /// The account its files are given to (none: the service's own).
    owner: Option<(u32, u32)>,
    files: Mutex<Option<Arc<TurnFiles>>>,
}

impl TurnFolder {
    /// The folder beside the agent socket at `socket`, emptied now if a
    /// run before made it.
    pub(crate) fn new(socket: PathBuf, owner: Option<(u32, u32)>) -> TurnFolder {
        let files = match TurnFiles::left(&socket, owner) {
            Ok(left) => left.map(Arc::new),
            Err(e) => {
                log::error!("cannot empty the folder of the files turns read: {e}");
                None
            }
        };
        TurnFolder {
            socket,
            owner,
            files: Mutex::new(files),
        }
    }

    /// The folder, made the first time it is needed.
    pub(crate) fn files(&self) -> io::Result<Arc<TurnFiles>> {
        let mut held = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(files) = held.as_ref() {
            return Ok(files.clone());
        }
        let files = Arc::new(TurnFiles::open(&self.socket, self.owner)?);
        *held = Some(files.clone());
        Ok(files)
    }
}

/// One file written for a process, removed when this is dropped (the
/// session drops it with the process).
#[derive(Debug)]
pub(crate) struct TurnFile {
    files: Arc<TurnFiles>,
    name: String,
    path: PathBuf,
}

impl TurnFile {
    /// Writes `bytes` as file `name` in `files` (see [`TurnFiles::write`]).
    pub(crate) fn write(files: &Arc<TurnFiles>, name: &str, bytes: &[u8]) -> io::Result<TurnFile> {
        let path = files.write(name, bytes)?;
        Ok(TurnFile {
            files: files.clone(),
            name: name.to_string(),
            path,
        })
    }

    /// Its path, for the harness.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TurnFile {
    fn drop(&mut self) {
        self.files.remove(&self.name);
    }
}

/// `name` as one file name: no `/`, no NUL, not `.` or `..`.
fn file_name(name: &str) -> io::Result<CString> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not a file name"),
        ));
    }
    CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in a file name"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// A fresh folder for test `name`.
    fn folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("turn-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    #[test]
    fn a_turns_file_is_private_and_gone_once_removed_and_a_restart_empties_the_folder() {
        let dir = folder("private");
        let socket = dir.join("agent.sock");
        let files = TurnFiles::open(&socket, None).unwrap();
        let path = files.write("t1.mcp.json", b"{\"secret\":1}").unwrap();
        assert_eq!(path, dir.join(FOLDER).join("t1.mcp.json"));
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"secret\":1}");
        let folder_mode = std::fs::metadata(dir.join(FOLDER)).unwrap().mode() & 0o777;
        assert_eq!(folder_mode, 0o711);
        files.remove("t1.mcp.json");
        assert!(!path.exists());
        // A file held for a process goes with it.
        let files = Arc::new(files);
        let held = TurnFile::write(&files, "t3.mcp.json", b"{}").unwrap();
        let path = held.path().to_path_buf();
        assert!(path.exists());
        drop(held);
        assert!(!path.exists());
        let files = Arc::into_inner(files).unwrap();
        // What a crash left is removed when the folder is opened again; a
        // start finds it only where a run before made it.
        files.write("left.mcp.json", b"{}").unwrap();
        drop(files);
        assert!(TurnFiles::left(&socket, None).unwrap().is_some());
        assert!(!dir.join(FOLDER).join("left.mcp.json").exists());
        let elsewhere = dir.join("none").join("agent.sock");
        assert!(TurnFiles::left(&elsewhere, None).unwrap().is_none());
        assert!(TurnFiles::open(&socket, None)
            .unwrap()
            .write("../x", b"")
            .is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_in_place_of_a_file_is_replaced_never_followed() {
        let dir = folder("link");
        let socket = dir.join("agent.sock");
        let files = TurnFiles::open(&socket, None).unwrap();
        let target = dir.join("target");
        std::fs::write(&target, b"kept").unwrap();
        std::os::unix::fs::symlink(&target, dir.join(FOLDER).join("t2.mcp.json")).unwrap();
        files.write("t2.mcp.json", b"new").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"kept");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
