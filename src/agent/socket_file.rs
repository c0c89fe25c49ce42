//! The agent socket's file: bound in a folder no other account can write,
//! its owner and mode set before any other account can reach it.
//!
//! The folder is opened by a walk from `/`, one component at a time, each
//! opened with `O_NOFOLLOW` relative to the last: every folder on the way
//! must belong to root or to the service's account and be writable by no
//! one else (a sticky folder like `/tmp` may be passed through, not bound
//! in), and a symlink is followed only where such a folder holds it and it
//! belongs to root or the service. Missing folders are made (0755) on the
//! way. So no other account can swap anything on the path, for the service
//! nor for room-cli, whose connect resolves the same path.
//!
//! The socket is bound in a private folder (0700) made in it, handed to the
//! agent account and made 0600 there, and renamed into place, replacing a
//! stale socket atomically; everything after the walk acts through the
//! folder's descriptor, never by path.

use std::ffi::{CString, OsStr, OsString};
use std::io::{self, Error, ErrorKind};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixListener;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{readlinkat, renameat, AtFlags, OFlag};
use nix::libc;
use nix::sys::stat::{fchmodat, fstatat, mkdirat, FchmodatFlags, Mode};
use nix::unistd::{fchownat, unlinkat, Uid, UnlinkatFlags};

/// The most symlinks followed in one walk (the kernel's limit).
const MAX_LINKS: usize = 40;

/// The bound socket file: its folder (a descriptor) and name, and its inode,
/// so that stop removes this socket and nothing that took its name.
#[derive(Debug)]
pub(crate) struct Bound {
    dir: OwnedFd,
    name: CString,
    inode: u64,
}

impl Bound {
    /// Removes the socket file if it is still this one.
    pub(crate) fn remove(&self) {
        match stat_at(&self.dir, &self.name) {
            Ok(st) if is_socket(&st) && st.st_ino == self.inode => {
                let _ = unlinkat(
                    Some(self.dir.as_raw_fd()),
                    self.name.as_c_str(),
                    UnlinkatFlags::NoRemoveDir,
                );
            }
            _ => {}
        }
    }
}

/// One folder the walk passed through: its path as followed and its stat.
struct Passed {
    path: PathBuf,
    stat: libc::stat,
}

/// Binds the agent socket at `path`: see the module doc. `agent_uid` gets
/// the socket (mode 0600) when it is another account than the service's and
/// not root (root connects whatever the mode); where the service may not
/// hand it over, the start is refused: the socket is never widened.
pub(crate) fn bind(path: &Path, agent_uid: u32) -> io::Result<(UnixListener, Bound)> {
    let (folder, name) = split(path)?;
    let me = nix::unistd::geteuid().as_raw();
    let (dir, passed) = open_folder(path, &folder)?;
    if agent_uid != me && agent_uid != 0 {
        agent_may_enter(path, &passed, agent_uid)?;
    }
    match stat_at(&dir, &name) {
        Ok(st) if is_socket(&st) => {} // stale: replaced by the rename below
        Ok(_) => {
            return Err(Error::new(
                ErrorKind::AlreadyExists,
                format!("{} exists and is not a socket", path.display()),
            ))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let private = CString::new(format!(
        ".{}.{}.new",
        name.to_string_lossy(),
        std::process::id()
    ))
    .expect("no NUL in a file name");
    clear_private(&dir, &private, &name);
    mkdirat(Some(dir.as_raw_fd()), private.as_c_str(), mode(0o700))
        .map_err(|e| context(path, "cannot make a private folder for it", e))?;
    let result = bind_private(path, &dir, &private, &name, agent_uid, me);
    clear_private(&dir, &private, &name);
    result
}

/// Binds in the private folder, sets owner and mode there, renames into
/// place.
fn bind_private(
    path: &Path,
    dir: &OwnedFd,
    private: &CString,
    name: &CString,
    agent_uid: u32,
    me: u32,
) -> io::Result<(UnixListener, Bound)> {
    let pdir = open_dir_at(dir.as_raw_fd(), private)?;
    let st = fstat(&pdir)?;
    if st.st_uid != me || st.st_mode & 0o777 != 0o700 {
        return Err(Error::other(format!(
            "{}: the private folder for the socket is not the service's own",
            path.display()
        )));
    }
    let staged = format!(
        "/proc/self/fd/{}/{}",
        pdir.as_raw_fd(),
        name.to_string_lossy()
    );
    let listener = UnixListener::bind(&staged)
        .map_err(|e| Error::new(e.kind(), format!("cannot bind {}: {e}", path.display())))?;
    if agent_uid != me && agent_uid != 0 {
        // The group stays as it is.
        let r = fchownat(
            Some(pdir.as_raw_fd()),
            name.as_c_str(),
            Some(Uid::from_raw(agent_uid)),
            None,
            AtFlags::AT_SYMLINK_NOFOLLOW,
        );
        if let Err(e) = r {
            let e = Error::from(e);
            return Err(Error::new(
                e.kind(),
                format!(
                    "cannot hand the agent socket {} to the agent account (uid {agent_uid}): {e}; \
                     the service must run as root to serve another account",
                    path.display()
                ),
            ));
        }
    }
    // In a folder only the service can enter, nothing can swap the name.
    fchmodat(
        Some(pdir.as_raw_fd()),
        name.as_c_str(),
        mode(0o600),
        FchmodatFlags::FollowSymlink,
    )
    .map_err(|e| context(path, "cannot make it 0600", e))?;
    let inode = stat_at(&pdir, name)?.st_ino;
    renameat(
        Some(pdir.as_raw_fd()),
        name.as_c_str(),
        Some(dir.as_raw_fd()),
        name.as_c_str(),
    )
    .map_err(|e| context(path, "cannot move it into place", e))?;
    let dir = dir.try_clone()?;
    Ok((
        listener,
        Bound {
            dir,
            name: name.clone(),
            inode,
        },
    ))
}

/// Removes a private folder left by this pid (an earlier start in this
/// process, or a crash of one with the same pid) and the socket in it.
fn clear_private(dir: &OwnedFd, private: &CString, name: &CString) {
    if let Ok(pdir) = open_dir_at(dir.as_raw_fd(), private) {
        let _ = unlinkat(
            Some(pdir.as_raw_fd()),
            name.as_c_str(),
            UnlinkatFlags::NoRemoveDir,
        );
        let _ = unlinkat(
            Some(dir.as_raw_fd()),
            private.as_c_str(),
            UnlinkatFlags::RemoveDir,
        );
    }
}

/// The agent socket's folder and name; a relative path counts from the
/// working directory.
fn split(path: &Path) -> io::Result<(PathBuf, CString)> {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    let (Some(folder), Some(name)) = (abs.parent(), abs.file_name()) else {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("{} names no socket file", path.display()),
        ));
    };
    let name = CString::new(name.as_bytes()).map_err(|_| {
        Error::new(
            ErrorKind::InvalidInput,
            format!("{} holds a NUL", path.display()),
        )
    })?;
    Ok((folder.to_path_buf(), name))
}

/// The folder the agent socket at `path` is bound in, opened by the same
/// walk as [`bind`]'s (made where missing): no other account can write it
/// or a folder on its way.
pub(crate) fn socket_folder(path: &Path) -> io::Result<OwnedFd> {
    let (folder, _) = split(path)?;
    open_folder(path, &folder).map(|(dir, _)| dir)
}

/// Walks from `/` to `folder` as the module doc says; the folder's
/// descriptor and every folder passed (for the agent's reach).
fn open_folder(socket: &Path, folder: &Path) -> io::Result<(OwnedFd, Vec<Passed>)> {
    let me = nix::unistd::geteuid().as_raw();
    let trusted_owner = |uid: u32| uid == 0 || uid == me;
    let refuse = |what: String| {
        Error::new(
            ErrorKind::PermissionDenied,
            format!(
                "agent socket {}: {what}; Core binds it only where no other account can \
                 write a folder on its path",
                socket.display()
            ),
        )
    };
    let mut todo: Vec<OsString> = components(folder);
    todo.reverse(); // popped from the end
    let root = open_dir_at(libc::AT_FDCWD, &CString::new("/").expect("no NUL"))?;
    let mut stack: Vec<(OwnedFd, PathBuf)> = Vec::new();
    let (mut fd, mut at) = (root, PathBuf::from("/"));
    let mut passed = Vec::new();
    let mut links = 0;
    loop {
        let st = fstat(&fd)?;
        if !trusted_owner(st.st_uid) {
            return Err(refuse(format!(
                "{} belongs to uid {}",
                at.display(),
                st.st_uid
            )));
        }
        let sticky = st.st_mode & libc::S_ISVTX != 0;
        let last = todo.is_empty();
        if st.st_mode & 0o022 != 0 && (last || !sticky) {
            return Err(refuse(format!(
                "{} is writable by other accounts (mode {:o})",
                at.display(),
                st.st_mode & 0o7777
            )));
        }
        passed.push(Passed {
            path: at.clone(),
            stat: st,
        });
        let Some(c) = todo.pop() else {
            return Ok((fd, passed));
        };
        if c == ".." {
            if let Some((parent, path)) = stack.pop() {
                (fd, at) = (parent, path);
            }
            continue;
        }
        let cname = CString::new(c.as_bytes()).map_err(|_| {
            Error::new(
                ErrorKind::InvalidInput,
                format!("{} holds a NUL", folder.display()),
            )
        })?;
        let next = at.join(&c);
        let entry = match stat_at(&fd, &cname) {
            Ok(e) => e,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                match mkdirat(Some(fd.as_raw_fd()), cname.as_c_str(), mode(0o755)) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(context(&next, "cannot make the folder", e)),
                }
                stat_at(&fd, &cname)?
            }
            Err(e) => return Err(e),
        };
        if entry.st_mode & libc::S_IFMT == libc::S_IFLNK {
            if !trusted_owner(entry.st_uid) {
                return Err(refuse(format!(
                    "{} is a symlink of uid {}",
                    next.display(),
                    entry.st_uid
                )));
            }
            links += 1;
            if links > MAX_LINKS {
                return Err(refuse(format!(
                    "{} has too many symlinks",
                    folder.display()
                )));
            }
            let target = read_link_at(&fd, &cname)?;
            let mut more = components(&target);
            more.reverse();
            todo.extend(more);
            if target.is_absolute() {
                stack.clear();
                fd = open_dir_at(libc::AT_FDCWD, &CString::new("/").expect("no NUL"))?;
                at = PathBuf::from("/");
            }
            continue;
        }
        let child = open_dir_at(fd.as_raw_fd(), &cname)
            .map_err(|e| Error::new(e.kind(), format!("{}: {e}", next.display())))?;
        stack.push((fd, at));
        (fd, at) = (child, next);
    }
}

/// The agent account must be able to enter every folder on the path, or
/// every room-cli call would fail with "Permission denied" and nothing
/// would say why.
fn agent_may_enter(socket: &Path, passed: &[Passed], agent_uid: u32) -> io::Result<()> {
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(agent_uid))
        .ok()
        .flatten();
    let groups: Vec<u32> = match &user {
        Some(u) => {
            let name = CString::new(u.name.as_bytes()).unwrap_or_default();
            nix::unistd::getgrouplist(&name, u.gid)
                .map(|g| g.iter().map(|g| g.as_raw()).collect())
                .unwrap_or_else(|_| vec![u.gid.as_raw()])
        }
        None => Vec::new(),
    };
    for p in passed {
        let st = &p.stat;
        let bit = if st.st_uid == agent_uid {
            0o100
        } else if groups.contains(&st.st_gid) {
            0o010
        } else {
            0o001
        };
        if st.st_mode & bit == 0 {
            return Err(Error::new(
                ErrorKind::PermissionDenied,
                format!(
                    "agent socket {}: the agent account (uid {agent_uid}) cannot reach it: it may \
                     not enter {} (mode {:o}, uid {}); set agent_socket to a path whose folders it \
                     may enter and no other account may write, e.g. /run/room-core/agent.sock",
                    socket.display(),
                    p.path.display(),
                    st.st_mode & 0o7777,
                    st.st_uid
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses a socket in the state folder when the agent is another account:
/// the state folder is the service's own (0700), so the agent could never
/// reach it there. The default `<state_dir>/agent.sock` is refused so.
pub(crate) fn outside_state_dir(socket: &Path, state_dir: &Path, agent_uid: u32) -> io::Result<()> {
    let me = nix::unistd::geteuid().as_raw();
    if agent_uid == me || agent_uid == 0 {
        return Ok(());
    }
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let folder = socket.parent().map(canon).unwrap_or_default();
    if folder.starts_with(canon(state_dir)) {
        return Err(Error::new(
            ErrorKind::PermissionDenied,
            format!(
                "agent socket {}: agent_uid is {agent_uid}, another account, and the socket is in \
                 the state folder {}, which is the service's own (0700), so the agent account \
                 could never reach it; set agent_socket to a path outside it whose folders the \
                 agent may enter and no other account may write, e.g. /run/room-core/agent.sock",
                socket.display(),
                state_dir.display()
            ),
        ));
    }
    Ok(())
}

fn components(p: &Path) -> Vec<OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsStr::new("..").to_os_string()),
            _ => None,
        })
        .collect()
}

fn context(path: &Path, what: &str, e: Errno) -> Error {
    let e = Error::from(e);
    Error::new(e.kind(), format!("{}: {what}: {e}", path.display()))
}

fn mode(bits: u32) -> Mode {
    Mode::from_bits_truncate(bits)
}

fn is_socket(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFSOCK
}

fn open_dir_at(dir: RawFd, name: &CString) -> io::Result<OwnedFd> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    crate::sys::openat(dir, name, flags)
}

fn stat_at(dir: &OwnedFd, name: &CString) -> io::Result<libc::stat> {
    Ok(fstatat(
        Some(dir.as_raw_fd()),
        name.as_c_str(),
        AtFlags::AT_SYMLINK_NOFOLLOW,
    )?)
}

fn fstat(fd: &OwnedFd) -> io::Result<libc::stat> {
    Ok(nix::sys::stat::fstat(fd.as_raw_fd())?)
}

fn read_link_at(dir: &OwnedFd, name: &CString) -> io::Result<PathBuf> {
    Ok(PathBuf::from(readlinkat(
        Some(dir.as_raw_fd()),
        name.as_c_str(),
    )?))
}
