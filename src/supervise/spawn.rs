//! Starts one turn's process as cheaply as posix_spawn, with what posix_spawn
//! cannot do: join a cgroup and switch account before exec.
//!
//! std's `pre_exec` would force a `fork`, and copying the service's page
//! tables (and the copy-on-write faults after) costs about a millisecond per
//! spawn on this kind of VM. So this does what glibc's posix_spawn does
//! (sysdeps/unix/sysv/linux/spawni.c): `clone(CLONE_VM | CLONE_VFORK)` onto
//! a stack of its own. The child shares the service's memory and the
//! parent's thread is suspended until the child has called execve or
//! exited, so nothing is copied. The price is what such a child may do:
//!
//! - everything it reads (paths, argv, envp, the groups, the fds) is made
//!   in the parent before the clone: the child allocates nothing;
//! - it makes raw system calls only (`libc::syscall`): glibc's wrappers may
//!   take locks or, for setuid and friends, signal every thread of the
//!   *service* to change their ids too;
//! - no handler of the service may run in it: all signals are blocked in
//!   the parent around the clone (so the child starts with all blocked),
//!   the child resets every disposition to the default, and only then sets
//!   its mask to empty, right before execve. As std does, the turn starts
//!   with no signal blocked and SIGPIPE at its default;
//! - a failure is reported through memory both share (glibc's `args.err`):
//!   the step and errno are stored and the child exits 127; the parent
//!   reads them when it resumes, reaps the child and returns the error.
//!
//! Into a cgroup, the child is created there: `clone3` with
//! `CLONE_INTO_CGROUP` (Linux 5.7; what glibc 2.39's
//! `posix_spawnattr_setcgroup_np` does). Moving it by writing "0" to
//! `cgroup.procs` in the child would work too, but a write to `cgroup.procs`
//! takes the kernel's threadgroup lock for writing, which waits for an RCU
//! grace period once the lock has been idle: about 15 ms per spawn on this
//! VM when spawns are 20 ms or more apart (and turns are seconds apart),
//! where `CLONE_INTO_CGROUP` takes it shared. That write stays as the
//! fallback for older kernels and architectures without the trampoline
//! below.

use std::ffi::{CString, OsStr, OsString};
use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStderr, ChildStdin, ChildStdout, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use nix::libc::{self, c_char, c_int, c_void};
use nix::sys::signal::Signal;

use super::{process, reap};

/// The account a turn runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// The user ID (real, effective and saved).
    pub uid: u32,
    /// The primary group ID.
    pub gid: u32,
    /// The supplementary groups (empty: none).
    pub groups: Vec<u32>,
}

/// What the new process leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leader {
    /// A process group of its own (`setpgid(0, 0)`), in the service's
    /// session: the default, and what turns use. About 6 µs.
    ProcessGroup,
    /// A session of its own (`setsid`; also a group of its own, and no
    /// controlling terminal). Where the kernel's scheduler autogroups are
    /// on (`/proc/sys/kernel/sched_autogroup_enabled`, as on this VM) a new
    /// session makes a new scheduler task group, which costs 0.4 to 0.7 ms
    /// here, more than the rest of the spawn.
    Session,
}

/// Everything one spawn needs, as plain data.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    /// The program: a path, or a bare name looked up in the `PATH` of
    /// `env` (the service's `PATH` when `env` has none).
    pub program: PathBuf,
    /// The arguments after argv\[0\] (which is `program` as given).
    pub args: Vec<OsString>,
    /// The whole environment: nothing of the service's is inherited.
    pub env: Vec<(OsString, OsString)>,
    /// The working directory, entered as `account`.
    pub cwd: PathBuf,
    /// The account to switch to before exec; `None` keeps the service's.
    pub account: Option<Account>,
    /// A process group (the default) or a session of its own.
    pub leader: Leader,
    /// A cgroup v2 directory to start in (joined before anything else can
    /// run in the child, so even its first fork is inside).
    pub cgroup: Option<PathBuf>,
}

impl SpawnSpec {
    /// A spec with no arguments, an empty environment, the service's
    /// account, a process group of its own and no cgroup.
    pub fn new(program: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> SpawnSpec {
        SpawnSpec {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: cwd.into(),
            account: None,
            leader: Leader::ProcessGroup,
            cgroup: None,
        }
    }

    /// Sets `key` in the environment, replacing any earlier value.
    pub fn set_env(&mut self, key: impl Into<OsString>, value: impl Into<OsString>) {
        let key = key.into();
        self.env.retain(|(k, _)| *k != key);
        self.env.push((key, value.into()));
    }
}

/// Why a spawn failed: `cannot run <program>: [<step>: ]<error>`.
#[derive(Debug)]
pub struct SpawnError {
    /// The program as the spec named it.
    pub program: PathBuf,
    /// The step that failed, when it was not the exec itself.
    pub step: Option<String>,
    /// The system's error.
    pub source: io::Error,
}

impl SpawnError {
    pub(crate) fn new(program: &Path, step: Option<String>, source: io::Error) -> SpawnError {
        SpawnError {
            program: program.to_path_buf(),
            step,
            source,
        }
    }
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot run {}: ", self.program.display())?;
        if let Some(step) = &self.step {
            write!(f, "{step}: ")?;
        }
        write!(f, "{}", self.source)
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// A started process: its ids, its pipes, and the wait for its status.
#[derive(Debug)]
pub struct Child {
    pid: u32,
    pgid: u32,
    start_time: u64,
    pidfd: Option<Arc<OwnedFd>>,
    status: Option<ExitStatus>,
    /// The write end of its stdin (drop it to send EOF).
    pub stdin: Option<ChildStdin>,
    /// The read end of its stdout.
    pub stdout: Option<ChildStdout>,
    /// The read end of its stderr.
    pub stderr: Option<ChildStderr>,
}

impl Child {
    /// The process ID.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Its process group (its own: equal to the pid).
    pub fn pgid(&self) -> u32 {
        self.pgid
    }

    /// Its start time, `/proc/PID/stat` field 22 (clock ticks since boot).
    pub fn start_time(&self) -> u64 {
        self.start_time
    }

    /// A pidfd for it (None on a kernel before 5.2): signals through it can
    /// never reach a process that later got the same pid.
    pub fn pidfd(&self) -> Option<Arc<OwnedFd>> {
        self.pidfd.clone()
    }

    /// Waits for it to exit (closing its stdin first, so a harness reading
    /// it to the end does not wait for us) and returns its status. Only
    /// this reaps the pid; a second call returns the same status.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        drop(self.stdin.take());
        self.wait_flags(0)
            .map(|s| s.expect("a blocking wait returns a status"))
    }

    /// Its status if it has exited, without blocking.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.wait_flags(libc::WNOHANG)
    }

    fn wait_flags(&mut self, flags: c_int) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let mut raw = 0;
        loop {
            // SAFETY: waits for our own child, claimed in `spawn`: nothing
            // else reaps it (see reap.rs), so the pid is still this process.
            let r = unsafe { libc::waitpid(self.pid as libc::pid_t, &mut raw, flags) };
            if r == 0 {
                return Ok(None);
            }
            if r > 0 {
                break;
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        let status = ExitStatus::from_raw(raw);
        self.status = Some(status);
        reap::release(self.pid);
        Ok(Some(status))
    }

    /// Sends `signal` to this process only (through its pidfd: a no-op once
    /// it has exited).
    pub fn signal(&self, signal: Signal) -> io::Result<()> {
        match &self.pidfd {
            Some(fd) => process::pidfd_signal(fd.as_fd(), signal),
            None if self.status.is_none() => {
                // Unreaped, so the pid cannot have been recycled.
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid as i32), signal)
                    .map_err(io::Error::from)
            }
            None => Ok(()),
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.status.is_none() && !matches!(self.try_wait(), Ok(Some(_))) {
            // Nobody will wait for it: the sweep reaps it once it exits.
            reap::abandon(self.pid);
        }
    }
}

/// The stack the child runs on (glibc uses 32 KiB plus the argv size; the
/// child here uses well under a page of it). A guard page below it turns an
/// overflow into a crash instead of a write into the service's memory.
const STACK_BYTES: usize = 64 * 1024;

/// The steps the child takes, for its failure report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
enum Step {
    Session = 1,
    Cgroup,
    Account,
    Chdir,
    Stdio,
    Exec,
}

impl Step {
    fn from_raw(n: i32) -> Option<Step> {
        [
            Step::Session,
            Step::Cgroup,
            Step::Account,
            Step::Chdir,
            Step::Stdio,
            Step::Exec,
        ]
        .into_iter()
        .find(|s| *s as i32 == n)
    }
}

/// What the child reads: raw pointers into memory the parent owns and keeps
/// alive (and unchanged) until the clone returns.
struct ChildArgs {
    path: *const c_char,
    argv: *const *const c_char,
    envp: *const *const c_char,
    cwd: *const c_char,
    /// The child's ends of the stdin, stdout and stderr pipes (all >= 3).
    stdio: [c_int; 3],
    /// An open `cgroup.procs` to write "0" to (the fallback to
    /// `CLONE_INTO_CGROUP`), or -1.
    cgroup_procs: c_int,
    leader: Leader,
    account: Option<RawAccount>,
    /// Written by the child on failure, read by the parent after it resumes.
    failed_step: AtomicI32,
    failed_errno: AtomicI32,
}

#[derive(Clone, Copy)]
struct RawAccount {
    uid: libc::uid_t,
    gid: libc::gid_t,
    groups: *const libc::gid_t,
    ngroups: usize,
}

/// Linux's signal numbers run from 1 to 64.
const KERNEL_SIGNALS: c_int = 64;

/// The kernel's signal set (64 signals on the architectures Linux runs
/// this on: x86_64, aarch64, riscv64).
type KernelSigset = u64;

/// `rt_sigprocmask(how, set, old)` as a raw system call (glibc's
/// `pthread_sigmask` silently keeps its two internal signals unblocked).
///
/// # Safety
/// `set` and `old` must be null or point to a valid `KernelSigset`.
unsafe fn raw_sigmask(how: c_int, set: *const KernelSigset, old: *mut KernelSigset) -> c_int {
    libc::syscall(
        libc::SYS_rt_sigprocmask,
        how,
        set,
        old,
        std::mem::size_of::<KernelSigset>(),
    ) as c_int
}

/// The child: runs on its own stack in the parent's memory (see the module
/// doc). Returns the exit code only on failure (glibc's clone then exits).
extern "C" fn child_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `ChildArgs` the parent passed to clone; it lives
    // on the parent's stack, and the parent is suspended (CLONE_VFORK)
    // until this child has exec'd or exited, so it is valid and unchanged.
    let a = unsafe { &*(arg as *const ChildArgs) };
    let fail = |step: Step| -> c_int {
        // errno is the parent thread's (no CLONE_SETTLS), which is
        // suspended: as glibc notes, nothing reads it concurrently.
        a.failed_errno
            .store(nix::errno::Errno::last_raw(), Ordering::SeqCst);
        a.failed_step.store(step as i32, Ordering::SeqCst);
        127
    };
    // SAFETY (for every block below): raw system calls with integer
    // arguments or pointers into `a`'s buffers, which the parent keeps
    // alive; none allocates, takes a lock or touches the parent's state.
    unsafe {
        // No handler of the service may run here (it would run on the
        // service's memory), and the turn starts with every default, the
        // ignored ones too (glibc's posix_spawn leaves its internal signals
        // ignored in every child, and Rust ignores SIGPIPE). An all-zero
        // kernel sigaction is SIG_DFL, no flags, an empty mask, whatever
        // the architecture's field order; glibc's wrapper would refuse
        // its internal signals 32 and 33.
        let dfl = [0u64; 4];
        for sig in 1..=KERNEL_SIGNALS {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    sig,
                    dfl.as_ptr(),
                    std::ptr::null_mut::<c_void>(),
                    std::mem::size_of::<KernelSigset>(),
                );
            }
        }
        let r = match a.leader {
            Leader::Session => libc::syscall(libc::SYS_setsid),
            Leader::ProcessGroup => libc::syscall(libc::SYS_setpgid, 0, 0),
        };
        if r < 0 {
            return fail(Step::Session);
        }
        if a.cgroup_procs >= 0
            && libc::syscall(libc::SYS_write, a.cgroup_procs, b"0".as_ptr(), 1) != 1
        {
            return fail(Step::Cgroup);
        }
        if let Some(acc) = a.account {
            // Groups first, the uid last: each needs the privilege the
            // next one drops.
            if libc::syscall(libc::SYS_setgroups, acc.ngroups, acc.groups) < 0
                || libc::syscall(libc::SYS_setresgid, acc.gid, acc.gid, acc.gid) < 0
                || libc::syscall(libc::SYS_setresuid, acc.uid, acc.uid, acc.uid) < 0
            {
                return fail(Step::Account);
            }
        }
        // After the switch: the folder must be reachable by the account.
        if libc::syscall(libc::SYS_chdir, a.cwd) < 0 {
            return fail(Step::Chdir);
        }
        for (target, fd) in a.stdio.iter().enumerate() {
            // dup3 (aarch64 has no dup2); the source is >= 3, so never
            // equal to the target, and the copy is not close-on-exec.
            if libc::syscall(libc::SYS_dup3, *fd, target as c_int, 0) < 0 {
                return fail(Step::Stdio);
            }
        }
        let empty: KernelSigset = 0;
        raw_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        libc::syscall(libc::SYS_execve, a.path, a.argv, a.envp);
        fail(Step::Exec)
    }
}

/// `struct clone_args` of clone3(2), up to `cgroup` (version 2, 88 bytes).
#[repr(C, align(8))]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// clone3 has no libc wrapper, and a raw `syscall` cannot be used with
/// CLONE_VM and a new stack: the child would return from the wrapper on a
/// stack that holds no frame. So, as glibc's clone3.S does, the child side
/// is written out: it calls `child_main(arg)` on its new stack and exits
/// with its result, never returning into Rust code of the parent.
/// Returns the child's pid, or -errno.
///
/// # Safety
/// `cl` must describe a valid stack that nothing else uses, and `arg` must
/// stay valid until the call returns (CLONE_VFORK guarantees the child is
/// done with it by then).
#[cfg(target_arch = "x86_64")]
unsafe fn clone3_vm(cl: &mut CloneArgs, arg: *const ChildArgs) -> i64 {
    let ret: i64;
    // The kernel starts the child at the next instruction with rax = 0 and
    // rsp = stack + stack_size (16-byte aligned, so `call` leaves the
    // callee the alignment the ABI wants); r12 and r13 are as they were.
    std::arch::asm!(
        "syscall",
        "test rax, rax",
        "jnz 2f",
        "mov rdi, r12",
        "call r13",
        "mov edi, eax",
        "mov eax, {exit}",
        "syscall",
        "ud2",
        "2:",
        exit = const libc::SYS_exit,
        inlateout("rax") libc::SYS_clone3 => ret,
        in("rdi") cl as *mut CloneArgs,
        in("rsi") std::mem::size_of::<CloneArgs>(),
        in("r12") arg,
        in("r13") child_main as extern "C" fn(*mut c_void) -> c_int,
        lateout("rcx") _,
        lateout("r11") _,
        options(nostack),
    );
    ret
}

/// See the x86_64 version.
///
/// # Safety
/// As for the x86_64 version.
#[cfg(target_arch = "aarch64")]
unsafe fn clone3_vm(cl: &mut CloneArgs, arg: *const ChildArgs) -> i64 {
    let ret: i64;
    // The child starts at the next instruction with x0 = 0 and sp = stack
    // + stack_size; x9 and x10 are as they were.
    std::arch::asm!(
        "svc 0",
        "cbnz x0, 2f",
        "mov x0, x9",
        "blr x10",
        "mov x8, {exit}",
        "svc 0",
        "brk #1",
        "2:",
        exit = const libc::SYS_exit,
        inlateout("x0") cl as *mut CloneArgs => ret,
        in("x1") std::mem::size_of::<CloneArgs>(),
        in("x8") libc::SYS_clone3,
        in("x9") arg,
        in("x10") child_main as extern "C" fn(*mut c_void) -> c_int,
        options(nostack),
    );
    ret
}

/// clone3's flag (a 64-bit value that libc's `c_int` constant cannot hold).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// Whether clone3 with CLONE_INTO_CGROUP is worth trying (cleared the
/// first time the kernel says it does not know it).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
static CLONE3_WORKS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Starts the child in the cgroup open at `cgroup` with clone3: its pid
/// and pidfd, or `None` where clone3 or CLONE_INTO_CGROUP is unknown (the
/// caller falls back).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
fn clone_into(stack: &Stack, args: &ChildArgs, cgroup: RawFd) -> Option<io::Result<(i32, c_int)>> {
    if !CLONE3_WORKS.load(Ordering::Relaxed) {
        return None;
    }
    let mut pidfd: c_int = -1;
    let mut cl = CloneArgs {
        flags: (libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD) as u64 | CLONE_INTO_CGROUP,
        pidfd: &mut pidfd as *mut c_int as u64,
        exit_signal: libc::SIGCHLD as u64,
        stack: stack.low() as u64,
        stack_size: stack.size() as u64,
        cgroup: cgroup as u64,
        ..CloneArgs::default()
    };
    // SAFETY: the stack is ours and unused; `args` outlives the call (it is
    // borrowed for it, and CLONE_VFORK holds this thread until the child
    // has exec'd or exited). See `clone3_vm`.
    let r = unsafe { clone3_vm(&mut cl, args) };
    if r >= 0 {
        return Some(Ok((r as i32, pidfd)));
    }
    let errno = (-r) as i32;
    if matches!(errno, libc::ENOSYS | libc::E2BIG | libc::EINVAL) {
        // Before Linux 5.3 (no clone3) or 5.7 (no CLONE_INTO_CGROUP).
        CLONE3_WORKS.store(false, Ordering::Relaxed);
        return None;
    }
    Some(Err(io::Error::from_raw_os_error(errno)))
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn clone_into(_: &Stack, _: &ChildArgs, _: RawFd) -> Option<io::Result<(i32, c_int)>> {
    None
}

/// An mmap'd stack with a guard page, unmapped on drop.
struct Stack {
    base: *mut c_void,
    len: usize,
    guard: usize,
}

impl Stack {
    fn new(usable: usize) -> io::Result<Stack> {
        let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
            .ok()
            .flatten()
            .unwrap_or(4096) as usize;
        let len = usable + page;
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Stack {
            base,
            len,
            guard: page,
        };
        // SAFETY: the lowest page of the mapping made above.
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The top (stacks grow down), 16-byte aligned.
    fn top(&self) -> *mut c_void {
        let end = self.base as usize + self.len;
        (end & !15) as *mut c_void
    }

    /// The lowest usable address (above the guard page), for clone3.
    fn low(&self) -> *mut c_void {
        (self.base as usize + self.guard) as *mut c_void
    }

    /// The usable size, for clone3 (a multiple of the page size, so
    /// `low() + size()` is the 16-byte aligned top).
    fn size(&self) -> usize {
        self.len - self.guard
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; the child no longer runs on it
        // (it has exec'd or exited before clone returned).
        unsafe { libc::munmap(self.base, self.len) };
    }
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
    let new = nix::fcntl::fcntl(fd.as_raw_fd(), nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(3))?;
    // SAFETY: F_DUPFD_CLOEXEC returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// Starts `spec`'s program with stdin, stdout and stderr as pipes. Returns
/// once the child has exec'd (or with the reason it could not).
pub fn spawn(spec: &SpawnSpec) -> Result<Child, SpawnError> {
    let program = &spec.program;
    let err = |step: Option<&str>, e: io::Error| SpawnError::new(program, step.map(Into::into), e);

    // Everything the child reads, made now: it may not allocate.
    let path_var = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_os_str());
    let resolved = resolve_program(program, path_var).map_err(|e| err(None, e))?;
    let path = cstring(resolved.as_os_str().as_bytes(), "the program").map_err(|e| err(None, e))?;
    let mut argv_c = vec![path_arg(program).map_err(|e| err(None, e))?];
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
    let argv: Vec<*const c_char> = argv_c
        .iter()
        .map(|c| c.as_ptr())
        .chain([std::ptr::null()])
        .collect();
    let envp: Vec<*const c_char> = env_c
        .iter()
        .map(|c| c.as_ptr())
        .chain([std::ptr::null()])
        .collect();
    let cwd = cstring(spec.cwd.as_os_str().as_bytes(), "the folder").map_err(|e| err(None, e))?;
    let groups: Vec<libc::gid_t> = spec
        .account
        .as_ref()
        .map(|a| a.groups.clone())
        .unwrap_or_default();
    let join_err = |dir: &Path, e| {
        err(
            Some(&format!("cannot join the cgroup {}", dir.display())),
            e,
        )
    };
    let cgroup_dir = match &spec.cgroup {
        Some(dir) => Some(std::fs::File::open(dir).map_err(|e| join_err(dir, e))?),
        None => None,
    };
    let pipes = || -> io::Result<_> { Ok([pipe()?, pipe()?, pipe()?]) };
    let [(in_r, in_w), (out_r, out_w), (err_r, err_w)] =
        pipes().map_err(|e| err(Some("cannot make its pipes"), e))?;
    let stack = Stack::new(STACK_BYTES).map_err(|e| err(Some("cannot map a stack"), e))?;
    let mut args = ChildArgs {
        path: path.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        cwd: cwd.as_ptr(),
        stdio: [in_r.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()],
        cgroup_procs: -1,
        leader: spec.leader,
        account: spec.account.as_ref().map(|a| RawAccount {
            uid: a.uid,
            gid: a.gid,
            groups: groups.as_ptr(),
            ngroups: groups.len(),
        }),
        failed_step: AtomicI32::new(0),
        failed_errno: AtomicI32::new(0),
    };

    let spawning = reap::spawning();
    let all: KernelSigset = !0;
    let mut old: KernelSigset = 0;
    // SAFETY: both pointers are to live KernelSigsets.
    unsafe { raw_sigmask(libc::SIG_SETMASK, &all, &mut old) };
    let into = cgroup_dir
        .as_ref()
        .and_then(|d| clone_into(&stack, &args, d.as_raw_fd()));
    let mut procs = None;
    if into.is_none() {
        if let Some(dir) = &spec.cgroup {
            // The fallback: the child moves itself before anything else.
            let opened = std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"));
            match opened {
                Ok(f) => {
                    args.cgroup_procs = f.as_raw_fd();
                    procs = Some(f);
                }
                Err(e) => {
                    // SAFETY: restores this thread's mask saved above.
                    unsafe { raw_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
                    return Err(join_err(dir, e));
                }
            }
        }
    }
    let mut pidfd: c_int = -1;
    let clone = |flags: c_int, pidfd: &mut c_int| -> libc::pid_t {
        // SAFETY: `child_main` only reads `args` (alive on this frame until
        // clone returns: CLONE_VFORK suspends this thread until the child
        // has exec'd or exited) and runs on `stack`, which nothing else
        // uses. CLONE_VM without CLONE_SETTLS is safe for that reason too
        // (see child_main). With CLONE_PIDFD the kernel writes the pidfd to
        // `pidfd` (clone's parent-tid argument).
        unsafe {
            libc::clone(
                child_main,
                stack.top(),
                flags,
                &args as *const ChildArgs as *mut c_void,
                pidfd as *mut c_int,
            )
        }
    };
    let via_clone3 = into.is_some();
    let (pid, clone_error) = match into {
        Some(Ok((pid, fd))) => {
            pidfd = fd;
            (pid, None)
        }
        Some(Err(e)) => (-1, Some(e)),
        None => {
            let base = libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
            let mut pid = clone(base | libc::CLONE_PIDFD, &mut pidfd);
            if pid < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                // A kernel before 5.2: no pidfd, signals go by pid.
                pidfd = -1;
                pid = clone(base, &mut pidfd);
            }
            (pid, (pid < 0).then(io::Error::last_os_error))
        }
    };
    // SAFETY: restores this thread's mask saved above.
    unsafe { raw_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    if let Some(e) = clone_error {
        return match &spec.cgroup {
            Some(dir) if via_clone3 => Err(join_err(dir, e)),
            _ => Err(err(Some("cannot clone"), e)),
        };
    }
    let pidfd = (pidfd >= 0).then(|| {
        // SAFETY: the kernel wrote a new fd for the child; we own it.
        Arc::new(unsafe { OwnedFd::from_raw_fd(pidfd) })
    });
    // Our ends stay, the child's ends close (the child has its copies).
    drop((in_r, out_w, err_w, procs, cgroup_dir));
    let step = args.failed_step.load(Ordering::SeqCst);
    if step != 0 {
        let errno = args.failed_errno.load(Ordering::SeqCst);
        let mut raw = 0;
        // SAFETY: our child, which has exited (it failed before exec); not
        // claimed, and the sweep waits for `spawning`, so it is still ours.
        while unsafe { libc::waitpid(pid, &mut raw, 0) } < 0
            && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
        {}
        drop(spawning);
        let e = io::Error::from_raw_os_error(errno);
        return Err(match Step::from_raw(step) {
            Some(Step::Exec) | None => err(None, e),
            Some(Step::Session) => err(Some("cannot start a session"), e),
            Some(Step::Cgroup) => {
                let dir = spec.cgroup.as_deref().unwrap_or(Path::new("?"));
                err(
                    Some(&format!("cannot join the cgroup {}", dir.display())),
                    e,
                )
            }
            Some(Step::Account) => {
                let a = spec.account.as_ref();
                let (uid, gid) = a.map_or((0, 0), |a| (a.uid, a.gid));
                err(Some(&format!("cannot switch to uid {uid} gid {gid}")), e)
            }
            Some(Step::Chdir) => err(Some(&format!("cannot enter {}", spec.cwd.display())), e),
            Some(Step::Stdio) => err(Some("cannot set up its stdin, stdout and stderr"), e),
        });
    }
    let pid = pid as u32;
    reap::claim(pid);
    drop(spawning);
    let mut child = Child {
        pid,
        pgid: pid,
        start_time: 0,
        pidfd,
        status: None,
        stdin: Some(ChildStdin::from(in_w)),
        stdout: Some(ChildStdout::from(out_r)),
        stderr: Some(ChildStderr::from(err_r)),
    };
    // Unreaped, so /proc/PID is this process, even if it has exited.
    match process::start_time(pid) {
        Some(t) => child.start_time = t,
        None => {
            let _ = child.signal(Signal::SIGKILL);
            let _ = child.wait();
            let e = io::Error::other("its /proc/PID/stat cannot be read");
            return Err(err(None, e));
        }
    }
    Ok(child)
}

fn path_arg(program: &Path) -> io::Result<CString> {
    cstring(program.as_os_str().as_bytes(), "the program")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn bare_names_are_looked_up_in_the_given_path() {
        let sh = resolve_program(Path::new("sh"), Some(OsStr::new("/nonexistent:/bin"))).unwrap();
        assert_eq!(sh, Path::new("/bin/sh"));
        assert_eq!(
            resolve_program(Path::new("./x"), None).unwrap(),
            Path::new("./x"),
            "a path is used as it is"
        );
        let e = resolve_program(Path::new("no-such-program-here"), Some(OsStr::new("/bin")));
        assert_eq!(e.unwrap_err().kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn a_child_gets_its_arguments_environment_folder_and_session() {
        let mut spec = SpawnSpec::new("sh", "/tmp");
        spec.args = vec![
            "-c".into(),
            "echo \"$0|$1|$ROOM_X|$(pwd)|$HOME\"; cat /proc/$$/stat".into(),
            "zero".into(),
            "a b".into(),
        ];
        spec.env = vec![
            ("ROOM_X".into(), "x=1".into()),
            ("PATH".into(), "/bin:/usr/bin".into()),
        ];
        let mut child = spawn(&spec).unwrap();
        assert!(child.stdout.as_ref().unwrap().as_raw_fd() >= 3);
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        assert!(child.wait().unwrap().success());
        let mut lines = out.lines();
        assert_eq!(
            lines.next(),
            Some("zero|a b|x=1|/tmp|"),
            "no HOME: nothing inherited"
        );
        let stat = process::parse_stat(lines.next().unwrap()).unwrap();
        assert_eq!(stat.pgid, child.pid(), "a process group of its own");
        // SAFETY: getsid(0) only reads this process's session.
        let own_sid = unsafe { libc::getsid(0) } as u32;
        assert_eq!(stat.sid, own_sid, "in the service's session");
        assert_eq!(stat.start_time, child.start_time());
        assert!(!reap::is_claimed(child.pid()), "reaped and released");
    }

    #[test]
    fn a_session_leader_leads_its_session() {
        let mut spec = SpawnSpec::new("/bin/sh", "/");
        spec.args = vec!["-c".into(), "cat /proc/$$/stat".into()];
        spec.leader = Leader::Session;
        let mut child = spawn(&spec).unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        child.wait().unwrap();
        let stat = process::parse_stat(&out).unwrap();
        assert_eq!((stat.sid, stat.pgid), (child.pid(), child.pid()));
    }

    #[test]
    fn signals_start_at_their_defaults_and_unblocked() {
        let mut spec = SpawnSpec::new("/bin/sh", "/");
        spec.args = vec![
            "-c".into(),
            "grep -E '^Sig(Blk|Ign)' /proc/self/status".into(),
        ];
        let mut child = spawn(&spec).unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        child.wait().unwrap();
        // The test harness ignores SIGPIPE (Rust's runtime does): the child
        // does not; grep's own status shows what it inherited.
        assert!(out.contains("SigBlk:\t0000000000000000"), "{out}");
        assert!(out.contains("SigIgn:\t0000000000000000"), "{out}");
    }

    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn clone3_and_its_fallback_both_start_the_child_inside_the_cgroup() {
        let root = match crate::supervise::cgroup::CgroupRoot::find() {
            Ok(root) => root,
            Err(why) => return eprintln!("skipped: {why}"),
        };
        for clone3 in [true, false] {
            let key = format!("unit-{}-{clone3}", std::process::id());
            let dir = root.create(&key).unwrap();
            CLONE3_WORKS.store(clone3, Ordering::Relaxed);
            let mut spec = SpawnSpec::new("/bin/cat", "/");
            spec.args = vec!["/proc/self/cgroup".into()];
            spec.cgroup = Some(dir.clone());
            let spawned = spawn(&spec);
            CLONE3_WORKS.store(true, Ordering::Relaxed);
            let mut child = spawned.unwrap();
            let mut out = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            assert!(child.wait().unwrap().success());
            assert_eq!(
                process::parse_cgroup_v2(&out),
                root.path_of(&dir).as_deref()
            );
            std::fs::remove_dir(&dir).unwrap();
        }
    }

    #[test]
    fn failures_name_the_program_and_the_step() {
        let e = spawn(&SpawnSpec::new("/nonexistent/prog", "/")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot run /nonexistent/prog: No such file or directory (os error 2)"
        );
        let e = spawn(&SpawnSpec::new("/bin/true", "/nonexistent/dir")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot run /bin/true: cannot enter /nonexistent/dir: No such file or directory (os error 2)"
        );
        let mut spec = SpawnSpec::new("/bin/true", "/");
        spec.args = vec!["a\0b".into()];
        let e = spawn(&spec).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cannot run /bin/true: an argument holds a NUL byte"
        );
    }
}
