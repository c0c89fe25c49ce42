//! What is made before the clone: everything the child reads (it may not
//! allocate), its pipes, and the exec-notify pipe.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicI32;
use std::sync::OnceLock;

use nix::libc::{self, c_char};

use super::error::SpawnError;
use super::raw::{ChildArgs, Frame, RawAccount};
use super::spec::SpawnSpec;

/// The service's ends of a child's pipes.
pub(super) struct ParentEnds {
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    /// EOF once the child has exec'd or exited.
    pub notify: OwnedFd,
}

/// One spawn, ready to clone: the buffers the child reads through
/// `frame.args` (whose pointers point into them), and the descriptors.
pub(super) struct Prepared {
    pub frame: Frame,
    pub parent: ParentEnds,
    /// The child's ends (it has its own copies once cloned): closed here
    /// right after the clone, the notify end above all, whose last copy
    /// must be the child's.
    pub child_ends: Vec<OwnedFd>,
    /// The cgroup directory to clone into.
    pub cgroup_dir: Option<File>,
    /// Held while `frame.args.cgroup_procs` names it.
    pub cgroup_procs: Option<File>,
    _path: CString,
    _argv: (Vec<CString>, Vec<*const c_char>),
    _envp: (Vec<CString>, Vec<*const c_char>),
    _cwd: CString,
    _groups: Vec<libc::gid_t>,
}

/// The highest capability number of this kernel, read once.
fn cap_last_cap() -> usize {
    static LAST: OnceLock<usize> = OnceLock::new();
    *LAST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .filter(|&n| n < 64)
            // Every number a capability set can hold; the child skips the
            // ones the kernel does not know.
            .unwrap_or(63)
    })
}

/// Whether a process that switches from root to another uid stays
/// traceable by that uid: the kernel then sets its memory's dumpable flag
/// to `fs.suid_dumpable`, and only 1 ("debug") lets the uid trace it. Read
/// at every spawn that switches (the setting can change).
fn traceable_after_switch() -> bool {
    std::fs::read("/proc/sys/fs/suid_dumpable").is_ok_and(|v| v.trim_ascii() == b"1")
}

/// Builds everything `spec`'s child needs.
pub(super) fn prepare(spec: &SpawnSpec) -> Result<Prepared, SpawnError> {
    let program = &spec.program;
    let err = |step: Option<&str>, e: io::Error| SpawnError::new(program, step.map(Into::into), e);

    let path_var = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str());
    let resolved = resolve_program(program, path_var).map_err(|e| err(None, e))?;
    let path = cstring(resolved.as_os_str().as_bytes(), "the program").map_err(|e| err(None, e))?;
    let mut argv_c =
        vec![cstring(program.as_os_str().as_bytes(), "the program").map_err(|e| err(None, e))?];
    for a in &spec.args {
        argv_c.push(cstring(a.as_bytes(), "an argument").map_err(|e| err(None, e))?);
    }
    let mut env_c = Vec::with_capacity(spec.env.len());
    for (k, v) in &spec.env {
        if k.is_empty() || k.as_bytes().contains(&b'=') {
            let msg = format!("invalid environment name {k:?}");
            return Err(err(None, io::Error::new(io::ErrorKind::InvalidInput, msg)));
        }
        let mut entry = k.as_bytes().to_vec();
        entry.push(b'=');
        entry.extend_from_slice(v.as_bytes());
        env_c.push(cstring(&entry, "the environment").map_err(|e| err(None, e))?);
    }
    let argv = pointers(&argv_c);
    let envp = pointers(&env_c);
    let cwd = cstring(spec.cwd.as_os_str().as_bytes(), "the folder").map_err(|e| err(None, e))?;
    let groups: Vec<libc::gid_t> = spec
        .account
        .as_ref()
        .map(|a| a.groups.clone())
        .unwrap_or_default();
    let cgroup_dir = match &spec.cgroup {
        Some(dir) => Some(File::open(dir).map_err(|e| join_error(spec, dir, e))?),
        None => None,
    };
    let pipes = || -> io::Result<_> { Ok([pipe()?, pipe()?, pipe()?, pipe()?]) };
    let [(in_r, in_w), (out_r, out_w), (err_r, err_w), (note_r, note_w)] =
        pipes().map_err(|e| err(Some("cannot make its pipes"), e))?;
    let switches = spec.account.is_some();
    if switches && traceable_after_switch() {
        let msg = "fs.suid_dumpable is 1: between its switch to the account and its \
                   exec, the child (which shares the service's memory) could be traced \
                   by that account";
        return Err(err(
            None,
            io::Error::new(io::ErrorKind::PermissionDenied, msg),
        ));
    }
    let args = ChildArgs {
        path: path.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: cwd.as_ptr(),
        stdio: [in_r.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()],
        notify: note_w.as_raw_fd(),
        cgroup_procs: -1,
        leader: spec.leader,
        account: spec.account.as_ref().map(|a| RawAccount {
            uid: a.uid,
            gid: a.gid,
            groups: groups.as_ptr(),
            ngroups: groups.len(),
        }),
        no_new_privs: !spec.may_escalate,
        drop_capabilities: switches && !spec.may_escalate,
        cap_last: cap_last_cap(),
        dies_with_spawner: spec.dies_with_spawner,
        #[cfg(test)]
        stop_before_exec: spec.test.stop_before_exec.is_some(),
        #[cfg(test)]
        close_by_listing: spec.test.close_by_listing,
        failed_step: AtomicI32::new(0),
        failed_errno: AtomicI32::new(0),
    };
    let frame = Frame::new(args).map_err(|e| err(Some("cannot map a stack"), e))?;
    Ok(Prepared {
        frame,
        parent: ParentEnds {
            stdin: in_w,
            stdout: out_r,
            stderr: err_r,
            notify: note_r,
        },
        child_ends: vec![in_r, out_w, err_w, note_w],
        cgroup_dir,
        cgroup_procs: None,
        _path: path,
        _argv: (argv_c, argv),
        _envp: (env_c, envp),
        _cwd: cwd,
        _groups: groups,
    })
}

impl Prepared {
    /// The fallback to clone3's CLONE_INTO_CGROUP: the child writes "0" to
    /// the cgroup's `cgroup.procs` before anything else can run in it.
    /// Only before the clone.
    pub(super) fn move_by_procs(&mut self, spec: &SpawnSpec) -> Result<(), SpawnError> {
        if let Some(dir) = &spec.cgroup {
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .map_err(|e| join_error(spec, dir, e))?;
            self.frame.args.cgroup_procs = f.as_raw_fd();
            self.cgroup_procs = Some(f);
        }
        Ok(())
    }
}

/// `cannot run <program>: cannot join the cgroup <dir>: <e>`.
pub(super) fn join_error(spec: &SpawnSpec, dir: &Path, e: io::Error) -> SpawnError {
    let step = format!("cannot join the cgroup {}", dir.display());
    SpawnError::new(&spec.program, Some(step), e)
}

/// The NULL-terminated array of `strings`' pointers.
fn pointers(strings: &[CString]) -> Vec<*const c_char> {
    strings
        .iter()
        .map(|c| c.as_ptr())
        .chain([std::ptr::null()])
        .collect()
}

fn cstring(bytes: &[u8], what: &str) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} holds a NUL byte"),
        )
    })
}

/// The program to exec: as given when it holds a `/`, else the first
/// executable file of that name in `path_var` (the `PATH` of the spec's
/// environment, the service's otherwise).
pub fn resolve_program(program: &Path, path_var: Option<&OsStr>) -> io::Result<PathBuf> {
    if program.as_os_str().as_bytes().contains(&b'/') {
        return Ok(program.to_path_buf());
    }
    if program.as_os_str().is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    let fallback = std::env::var_os("PATH");
    let search = path_var
        .or(fallback.as_deref())
        .unwrap_or(OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    std::env::split_paths(search)
        .map(|dir| dir.join(program))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
}

/// A pipe whose ends are close-on-exec and at least 3 (so that moving the
/// child's end onto 0, 1 or 2 never overwrites another of them).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    Ok((above_stdio(r)?, above_stdio(w)?))
}

fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() >= 3 {
        return Ok(fd);
    }
    // std duplicates with F_DUPFD_CLOEXEC from 3 up.
    let copy = fd.try_clone()?;
    debug_assert!(copy.as_raw_fd() >= 3);
    Ok(copy)
}
