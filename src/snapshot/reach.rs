//! Reaching the agent's folder without following a link, for both helpers
//! (the walker, [`super::walk`], and the restorer,
//! [`super::restore_write`]): from `/`, one component at a time, each
//! opened relative to its parent's descriptor with `O_NOFOLLOW`, so a link
//! the agent planted anywhere on the path stops the helper instead of
//! leading it elsewhere.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use nix::dir::Dir;
use nix::fcntl::OFlag;
use nix::libc;

/// An I/O error as `strerror` says it, without Rust's "(os error N)".
pub(crate) fn errno_text(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => nix::errno::Errno::from_raw(n).desc().to_string(),
        None => e.to_string(),
    }
}

/// Why `upto` could not be opened as a folder with `O_NOFOLLOW`, as a
/// sentence; `who` ("the snapshot", "the restore") is what follows no link.
pub(crate) fn refused(upto: &str, e: &io::Error, who: &str) -> String {
    match e.raw_os_error() {
        // Without `O_PATH` a link at the last component is ELOOP; with it
        // (or `O_DIRECTORY` on what is no folder) ENOTDIR.
        Some(libc::ELOOP) => format!("{upto} is a symbolic link, and {who} follows none"),
        Some(libc::ENOTDIR) => {
            format!("{upto} is a symbolic link or not a folder, and {who} follows no link")
        }
        _ => format!("cannot open {upto}: {}", errno_text(e)),
    }
}

/// The folder `root` (absolute, no `.` or `..`) for the walker: [`reach`]
/// on behalf of "the snapshot".
pub(crate) fn open_root(root: &str) -> Result<Option<Dir>, String> {
    reach(root, "the snapshot")
}

/// The folder `root` (absolute, no `.` or `..`), reached from `/` without
/// following a link: `O_PATH` for the folders above it (they need only
/// search permission), `O_RDONLY` for it. `None` when it (or a folder above
/// it) is not there. `who` names the helper in the sentence of a refusal.
pub(crate) fn reach(root: &str, who: &str) -> Result<Option<Dir>, String> {
    let bytes = root.as_bytes();
    if !root.starts_with('/') || bytes.split(|b| *b == b'/').any(|s| s == b"." || s == b"..") {
        return Err(format!(
            "{root} is not an absolute path without . or .. components"
        ));
    }
    let names: Vec<&[u8]> = bytes
        .split(|b| *b == b'/')
        .filter(|s| !s.is_empty())
        .collect();
    let slash = CString::new("/").expect("no NUL");
    let path_flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let read_flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
    let last = names.len();
    let mut fd: OwnedFd = crate::sys::openat(
        libc::AT_FDCWD,
        &slash,
        if last == 0 { read_flags } else { path_flags },
    )
    .map_err(|e| format!("cannot open /: {}", errno_text(&e)))?;
    for (i, name) in names.iter().enumerate() {
        let c = CString::new(*name).map_err(|_| format!("{root} holds a NUL byte"))?;
        let flags = (if i + 1 == last {
            read_flags
        } else {
            path_flags
        }) | OFlag::O_NOFOLLOW;
        let opened = crate::sys::openat(fd.as_raw_fd(), &c, flags);
        if opened
            .as_ref()
            .is_err_and(|e| e.raw_os_error() == Some(libc::ENOENT))
        {
            return Ok(None);
        }
        fd = opened.map_err(|e| {
            let upto: Vec<&str> = names[..=i]
                .iter()
                .map(|n| OsStr::from_bytes(n).to_str().unwrap_or("?"))
                .collect();
            refused(&format!("/{}", upto.join("/")), &e, who)
        })?;
    }
    // `Dir` takes the descriptor over (and closes it, also on failure).
    Dir::from(fd)
        .map(Some)
        .map_err(|e| format!("cannot list {root}: {}", e.desc()))
}
