//! The raw clone and the child side: every `unsafe` of spawning is here.
//!
//! The child is cloned with `CLONE_VM` and without `CLONE_VFORK`: it runs on
//! a stack of its own in the service's memory (nothing is copied, which
//! keeps a spawn as cheap as posix_spawn), while the spawning thread goes on
//! and waits for it with a deadline (see `exec_wait`). So nothing the agent
//! account does to the child (a SIGSTOP once it runs as that account) can
//! hold a service thread or a lock. The price is what the child may do:
//!
//! - it reads only what the parent made before the clone ([`ChildArgs`],
//!   pointing into buffers the parent keeps alive, and leaks if it cannot
//!   see the child gone) and allocates nothing;
//! - it runs at the same time as the spawning thread and shares its
//!   thread-local storage (no `CLONE_SETTLS`), errno included: it makes raw
//!   system calls only ([`sys`], returning `-errno`, never touching errno),
//!   no libc wrapper (which may set errno, take a lock or, for setuid and
//!   friends, signal every thread of the *service*);
//! - it reports a failure through [`ChildArgs`]'s atomics (the step and the
//!   errno) and exits 127;
//! - no handler of the service may run in it: every signal is blocked in
//!   the spawning thread around the clone (so the child starts with all
//!   blocked); the child resets every disposition to the default, and only
//!   then unblocks them all.
//!
//! The child's steps, in order: signal dispositions, its session (or group),
//! the cgroup fallback, stdio, closing every other descriptor, no_new_privs
//! and the capability sets, the signal mask, then the account switch, and
//! after it only `chdir` (as the account) and `execve`. Until the switch it
//! runs as the service, so the agent account can neither signal nor trace
//! it; after it, the kernel has marked the shared memory not dumpable
//! (`fs.suid_dumpable` 0 or 2; a spawn that switches refuses to run where
//! it is 1), so the account still cannot trace the child or read or write
//! its memory, only stop or kill it, which the parent notices.
//!
//! The exec-notify pipe's write end is the one descriptor the child keeps
//! besides stdio: it is close-on-exec, so the parent reads EOF once the
//! child has exec'd (the kernel has switched it to a new memory map first)
//! or exited (its memory is released before its descriptors). The child
//! closes (rather than marks) every other descriptor, before the switch, so
//! the notify pipe of another spawn it inherited at its clone is not held
//! by a process the agent account can stop.
//!
//! Into a cgroup, the child is created there: `clone3` with
//! `CLONE_INTO_CGROUP` (Linux 5.7; what glibc 2.39's
//! `posix_spawnattr_setcgroup_np` does). Writing "0" to `cgroup.procs` in the
//! child works too, but that write takes the kernel's threadgroup lock for
//! writing, which waits for an RCU grace period once the lock has been idle:
//! about 15 ms per spawn on this VM when spawns are 20 ms or more apart,
//! where `CLONE_INTO_CGROUP` takes it shared. The write stays as the
//! fallback for older kernels.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use nix::libc::{self, c_char, c_int, c_long, c_void};

use super::spec::Leader;

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("room-core spawns turns with raw system calls written for x86_64 and aarch64 only");

/// The stack the child runs on (it uses well under a page of it). A guard
/// page below it turns an overflow into a crash instead of a write into the
/// service's memory.
const STACK_BYTES: usize = 64 * 1024;

/// Linux's signal numbers run from 1 to 64.
const KERNEL_SIGNALS: c_int = 64;

/// The kernel's signal set (64 signals on x86_64 and aarch64).
type KernelSigset = u64;

/// prctl options (not all libc versions name them on every target).
const PR_CAPBSET_DROP: usize = 24;
const PR_SET_NO_NEW_PRIVS: usize = 38;
const PR_SET_PDEATHSIG: usize = 1;
const PR_CAP_AMBIENT: usize = 47;
const PR_CAP_AMBIENT_CLEAR_ALL: usize = 4;
/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// clone3's flag (a 64-bit value that libc's `c_int` constant cannot hold).
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// Whether clone3 with CLONE_INTO_CGROUP is worth trying (cleared the
/// first time the kernel says it does not know it).
pub(super) static CLONE3_WORKS: AtomicBool = AtomicBool::new(true);

/// The steps the child takes, for its failure report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub(super) enum Step {
    Session = 1,
    Cgroup,
    Stdio,
    Descriptors,
    Privileges,
    Account,
    Chdir,
    Exec,
}

impl Step {
    pub(super) fn from_raw(n: i32) -> Option<Step> {
        [
            Step::Session,
            Step::Cgroup,
            Step::Stdio,
            Step::Descriptors,
            Step::Privileges,
            Step::Account,
            Step::Chdir,
            Step::Exec,
        ]
        .into_iter()
        .find(|s| *s as i32 == n)
    }
}

/// The account to switch to, as raw ids.
#[derive(Clone, Copy)]
pub(super) struct RawAccount {
    pub uid: libc::uid_t,
    pub gid: libc::gid_t,
    pub groups: *const libc::gid_t,
    pub ngroups: usize,
}

/// What the child reads: raw pointers into buffers the parent keeps alive
/// and unchanged until the child has exec'd or exited.
pub(super) struct ChildArgs {
    pub path: *const c_char,
    pub argv: *const *const c_char,
    pub envp: *const *const c_char,
    pub cwd: *const c_char,
    /// The child's ends of the stdin, stdout and stderr pipes (all >= 3).
    pub stdio: [c_int; 3],
    /// The write end of the exec-notify pipe (>= 3, close-on-exec).
    pub notify: c_int,
    /// An open `cgroup.procs` to write "0" to (the fallback to
    /// `CLONE_INTO_CGROUP`), or -1.
    pub cgroup_procs: c_int,
    pub leader: Leader,
    pub account: Option<RawAccount>,
    /// PR_SET_NO_NEW_PRIVS.
    pub no_new_privs: bool,
    /// Empty the bounding, inheritable and ambient capability sets.
    pub drop_capabilities: bool,
    /// The highest capability number (`/proc/sys/kernel/cap_last_cap`).
    pub cap_last: usize,
    /// PR_SET_PDEATHSIG to SIGKILL, after the account switch.
    pub dies_with_spawner: bool,
    /// Tests only: the child stops itself right before execve.
    #[cfg(test)]
    pub stop_before_exec: bool,
    /// Tests only: close descriptors as where close_range is unknown.
    #[cfg(test)]
    pub close_by_listing: bool,
    /// Written by the child on failure, read by the parent after EOF.
    pub failed_step: AtomicI32,
    pub failed_errno: AtomicI32,
}

/// A raw system call: the result, or `-errno`. It never touches errno
/// (the child shares it with the spawning thread, which runs meanwhile).
/// The asm clobbers what the kernel clobbers (rcx and r11 on x86_64) and
/// may touch memory.
///
/// # Safety
/// `a` holds integers, or pointers to memory valid for what call `nr`
/// does with it; the call must not break what the caller relies on.
#[inline(always)]
unsafe fn sys(nr: c_long, a: [usize; 6]) -> isize {
    // SAFETY: the caller upholds this function's contract (`a` as call
    // `nr` needs it), which is all the system call below relies on.
    unsafe {
        let ret: isize;
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::asm!(
                "syscall",
                inlateout("rax") nr as isize => ret,
                in("rdi") a[0],
                in("rsi") a[1],
                in("rdx") a[2],
                in("r10") a[3],
                in("r8") a[4],
                in("r9") a[5],
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        // aarch64: `svc 0`, the number in x8, the result in x0.
        #[cfg(target_arch = "aarch64")]
        {
            std::arch::asm!(
                "svc 0",
                in("x8") nr,
                inlateout("x0") a[0] => ret,
                in("x1") a[1],
                in("x2") a[2],
                in("x3") a[3],
                in("x4") a[4],
                in("x5") a[5],
                options(nostack),
            );
        }
        ret
    }
}

/// `-r` as an errno (`r` is a failed call's result).
fn errno_of(r: isize) -> i32 {
    r.wrapping_neg() as i32
}

/// Sets this thread's signal mask to `set`; returns the old one.
fn sigmask(set: KernelSigset) -> KernelSigset {
    let mut old: KernelSigset = 0;
    // SAFETY: pointers to two live KernelSigsets of the size passed; a
    // mask is this thread's own business.
    unsafe {
        sys(
            libc::SYS_rt_sigprocmask,
            [
                libc::SIG_SETMASK as usize,
                &set as *const KernelSigset as usize,
                &mut old as *mut KernelSigset as usize,
                std::mem::size_of::<KernelSigset>(),
                0,
                0,
            ],
        )
    };
    old
}

/// The child: runs on its own stack in the parent's memory, at the same
/// time as the spawning thread (see the module doc). Returns only on
/// failure, with the exit code; the trampoline then exits.
extern "C" fn child_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `ChildArgs` the parent passed to clone; the
    // parent keeps it alive and unchanged until it has seen this child exec
    // or exit (or leaks it), and only the atomics are written.
    let a = unsafe { &*(arg as *const ChildArgs) };
    // SAFETY: this is the cloned child, and `a` is valid (above).
    let (step, errno) = unsafe { child_steps(a) };
    a.failed_errno.store(errno, Ordering::SeqCst);
    a.failed_step.store(step as i32, Ordering::SeqCst);
    127
}

/// The child's steps; returns the one that failed and its errno. Every
/// `sys` here passes integers, or pointers into `a`'s buffers or to locals
/// of this frame. Nothing here may panic or allocate: no indexing that can
/// fail, no arithmetic that can overflow.
///
/// # Safety
/// Only in the child `clone_child` started, with its `ChildArgs`.
unsafe fn child_steps(a: &ChildArgs) -> (Step, i32) {
    // SAFETY: this runs only in the child `clone_child` started, with its
    // `ChildArgs` (this function's contract); every `sys` below passes
    // integers, or pointers into `a`'s buffers or to locals of this frame.
    unsafe {
        macro_rules! check {
            ($step:expr, $r:expr) => {{
                let r = $r;
                if r < 0 {
                    return ($step, errno_of(r));
                }
                r
            }};
        }
        // No handler of the service may run here (it would run on the
        // service's memory), and the turn starts with every default, the
        // ignored ones too (Rust ignores SIGPIPE). An all-zero kernel sigaction
        // is SIG_DFL, no flags, an empty mask, whatever the field order.
        let dfl = [0u64; 4];
        for sig in 1..=KERNEL_SIGNALS {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                let args = [sig as usize, dfl.as_ptr() as usize, 0, 8, 0, 0];
                sys(libc::SYS_rt_sigaction, args);
            }
        }
        match a.leader {
            Leader::Session => check!(Step::Session, sys(libc::SYS_setsid, [0; 6])),
            Leader::ProcessGroup => check!(Step::Session, sys(libc::SYS_setpgid, [0; 6])),
        };
        if a.cgroup_procs >= 0 {
            let args = [a.cgroup_procs as usize, b"0".as_ptr() as usize, 1, 0, 0, 0];
            let r = sys(libc::SYS_write, args);
            if r != 1 {
                return (Step::Cgroup, if r < 0 { errno_of(r) } else { libc::EIO });
            }
        }
        for (target, fd) in a.stdio.iter().enumerate() {
            // dup3 (aarch64 has no dup2); the source is >= 3, so never equal
            // to the target, and the copy is not close-on-exec.
            let args = [*fd as usize, target, 0, 0, 0, 0];
            check!(Step::Stdio, sys(libc::SYS_dup3, args));
        }
        #[cfg(test)]
        let closed = if a.close_by_listing {
            close_listed(a.notify as usize)
        } else {
            close_all_but(a.notify)
        };
        #[cfg(not(test))]
        let closed = close_all_but(a.notify);
        check!(Step::Descriptors, closed);
        if a.no_new_privs {
            let args = [PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0];
            check!(Step::Privileges, sys(libc::SYS_prctl, args));
        }
        if a.drop_capabilities {
            check!(Step::Privileges, drop_capabilities(a.cap_last));
        }
        sigmask(0);
        if let Some(acc) = a.account {
            // Groups first, the uid last: each needs the privilege the next
            // one drops. After this, only chdir and execve.
            let groups = [acc.ngroups, acc.groups as usize, 0, 0, 0, 0];
            check!(Step::Account, sys(libc::SYS_setgroups, groups));
            let gid = acc.gid as usize;
            check!(
                Step::Account,
                sys(libc::SYS_setresgid, [gid, gid, gid, 0, 0, 0])
            );
            let uid = acc.uid as usize;
            check!(
                Step::Account,
                sys(libc::SYS_setresuid, [uid, uid, uid, 0, 0, 0])
            );
        }
        // After the switch, which clears it.
        if a.dies_with_spawner {
            let args = [PR_SET_PDEATHSIG, libc::SIGKILL as usize, 0, 0, 0, 0];
            check!(Step::Privileges, sys(libc::SYS_prctl, args));
        }
        // After the switch: the folder must be reachable by the account.
        check!(
            Step::Chdir,
            sys(libc::SYS_chdir, [a.cwd as usize, 0, 0, 0, 0, 0])
        );
        #[cfg(test)]
        if a.stop_before_exec {
            let me = sys(libc::SYS_getpid, [0; 6]);
            sys(
                libc::SYS_kill,
                [me as usize, libc::SIGSTOP as usize, 0, 0, 0, 0],
            );
        }
        let exec = [a.path as usize, a.argv as usize, a.envp as usize, 0, 0, 0];
        (Step::Exec, errno_of(sys(libc::SYS_execve, exec)))
    }
}

/// Closes every descriptor above 2 except `keep` (>= 3): close_range
/// (Linux 5.9), else each one listed in /proc/self/fd. Closed, not marked
/// close-on-exec: see the module doc.
///
/// # Safety
/// Only in the child: the descriptors are the child's copies.
unsafe fn close_all_but(keep: c_int) -> isize {
    // SAFETY: this runs only in the child (this function's contract), so
    // the descriptors closed below are the child's copies.
    unsafe {
        let keep = keep as usize;
        let mut r = 0;
        if keep > 3 {
            r = sys(libc::SYS_close_range, [3, keep - 1, 0, 0, 0, 0]);
        }
        if r == 0 {
            r = sys(
                libc::SYS_close_range,
                [keep + 1, u32::MAX as usize, 0, 0, 0, 0],
            );
        }
        if r == -(libc::ENOSYS as isize) {
            return close_listed(keep);
        }
        r
    }
}

/// The fallback of [`close_all_but`]: reads /proc/self/fd (the child's own
/// table) with getdents64 into a buffer on this stack.
///
/// # Safety
/// As for [`close_all_but`].
unsafe fn close_listed(keep: usize) -> isize {
    // SAFETY: this runs only in the child (this function's contract); the
    // paths and buffers passed below are locals of this frame.
    unsafe {
        let path = b"/proc/self/fd\0";
        let flags = (libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) as usize;
        let at = libc::AT_FDCWD as usize;
        let dir = sys(
            libc::SYS_openat,
            [at, path.as_ptr() as usize, flags, 0, 0, 0],
        );
        if dir < 0 {
            return dir;
        }
        let mut buf = [0u64; 256];
        let len = std::mem::size_of_val(&buf);
        loop {
            let n = sys(
                libc::SYS_getdents64,
                [dir as usize, buf.as_mut_ptr() as usize, len, 0, 0, 0],
            );
            if n <= 0 {
                sys(libc::SYS_close, [dir as usize, 0, 0, 0, 0, 0]);
                return n.min(0);
            }
            let bytes = buf.as_ptr() as *const u8;
            let mut off = 0usize;
            // struct linux_dirent64: ino (8), off (8), reclen (2), type (1),
            // then the NUL-terminated name.
            while off.wrapping_add(19) < n as usize {
                // `off + 19 < n <= len`: inside what the kernel wrote.
                let reclen = std::ptr::read_unaligned(bytes.add(off + 16) as *const u16);
                let reclen = reclen as usize;
                if reclen == 0 {
                    break;
                }
                let mut fd = 0usize;
                let mut digits = 0;
                let mut i = off + 19;
                while i < off.wrapping_add(reclen).min(n as usize) && digits <= 10 {
                    // `i < n`: inside what the kernel wrote.
                    let c = *bytes.add(i);
                    if !c.is_ascii_digit() {
                        break;
                    }
                    fd = fd.wrapping_mul(10).wrapping_add((c - b'0') as usize);
                    digits += 1;
                    i += 1;
                }
                if digits > 0 && digits <= 10 && fd >= 3 && fd != keep && fd != dir as usize {
                    sys(libc::SYS_close, [fd, 0, 0, 0, 0, 0]);
                }
                off = off.wrapping_add(reclen);
            }
        }
    }
}

/// Empties the bounding set (0..=`cap_last`), the ambient set and the
/// inheritable set; the permitted and effective sets go with the switch to
/// a non-root uid. Returns 0 or -errno.
///
/// # Safety
/// Only in the child (the sets are the calling process's).
unsafe fn drop_capabilities(cap_last: usize) -> isize {
    // SAFETY: this runs only in the child (this function's contract), so
    // the capability sets changed below are the child's own.
    unsafe {
        for cap in 0..=cap_last {
            let r = sys(libc::SYS_prctl, [PR_CAPBSET_DROP, cap, 0, 0, 0, 0]);
            // EINVAL: a number this kernel does not know.
            if r < 0 && r != -(libc::EINVAL as isize) {
                return r;
            }
        }
        let clear = [PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0];
        let r = sys(libc::SYS_prctl, clear);
        // EINVAL: a kernel before 4.3, which has no ambient set.
        if r < 0 && r != -(libc::EINVAL as isize) {
            return r;
        }
        // Inheritable capabilities would pass through a file's inheritable
        // set at exec whatever the bounding set says.
        let header = [CAPABILITY_VERSION_3, 0];
        // (effective, permitted, inheritable) for capabilities 0-31, then 32-63.
        let mut data = [0u32; 6];
        let r = sys(
            libc::SYS_capget,
            [
                header.as_ptr() as usize,
                data.as_mut_ptr() as usize,
                0,
                0,
                0,
                0,
            ],
        );
        if r < 0 {
            return r;
        }
        data[2] = 0;
        data[5] = 0;
        sys(
            libc::SYS_capset,
            [header.as_ptr() as usize, data.as_ptr() as usize, 0, 0, 0, 0],
        )
    }
}

/// clone (`nr` SYS_clone or SYS_clone3, with its first three arguments)
/// so that the child runs `child_main(arg)` on the stack the arguments give
/// and exits with its result, never returning into Rust code of the
/// parent: a raw `syscall` would return in the child on a stack that holds
/// no frame. Returns the child's pid, or -errno.
///
/// # Safety
/// The arguments must describe a stack that nothing else uses, and `arg`
/// must stay valid until the child has exec'd or exited.
unsafe fn clone_raw(nr: c_long, a0: usize, a1: usize, a2: usize, arg: *const ChildArgs) -> isize {
    // SAFETY: the caller gives a stack nothing else uses and keeps `arg`
    // valid until the child has exec'd or exited (this function's
    // contract), which is what the clone below needs.
    unsafe {
        let ret: isize;
        // x86_64: the child starts at the next instruction with rax = 0 and
        // rsp = the new stack's top (16-byte aligned, so `call` leaves the
        // callee the alignment the ABI wants); r12 and r13 are as they were.
        // clone's own arguments: flags, stack, parent tid (where CLONE_PIDFD
        // puts the pidfd), child tid, tls; clone3's: args, size.
        #[cfg(target_arch = "x86_64")]
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
            inlateout("rax") nr as isize => ret,
            in("rdi") a0,
            in("rsi") a1,
            in("rdx") a2,
            in("r10") 0usize,
            in("r8") 0usize,
            in("r12") arg,
            in("r13") child_main as extern "C" fn(*mut c_void) -> c_int,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
        // aarch64: the child starts at the next instruction with x0 = 0 and sp
        // = the new stack's top; x9 and x10 are as they were. clone's
        // arguments: flags, stack, parent tid, tls, child tid.
        #[cfg(target_arch = "aarch64")]
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
            inlateout("x0") a0 => ret,
            in("x1") a1,
            in("x2") a2,
            in("x3") 0usize,
            in("x4") 0usize,
            in("x8") nr,
            in("x9") arg,
            in("x10") child_main as extern "C" fn(*mut c_void) -> c_int,
            options(nostack),
        );
        ret
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

/// What the child runs with: its arguments and its stack. Kept alive until
/// the child has exec'd or exited; leaked (`std::mem::forget`) when that
/// cannot be seen.
pub(super) struct Frame {
    pub args: Box<ChildArgs>,
    stack: Stack,
}

impl Frame {
    pub(super) fn new(args: ChildArgs) -> io::Result<Frame> {
        Ok(Frame {
            args: Box::new(args),
            stack: Stack::new(STACK_BYTES)?,
        })
    }
}

/// A started child.
pub(super) struct Cloned {
    pub pid: u32,
    /// None on a kernel before 5.2.
    pub pidfd: Option<OwnedFd>,
}

/// Why the clone did not happen.
pub(super) enum CloneError {
    /// clone3 or CLONE_INTO_CGROUP is unknown here: move the child by its
    /// `cgroup.procs` instead.
    Unsupported,
    /// The kernel refused.
    Failed(io::Error),
}

/// Starts the child of `frame`, inside the cgroup open at `cgroup` when
/// given. Every signal is blocked in this thread across the clone, so the
/// child starts with all of them blocked. The child then runs on its own;
/// the caller must keep `frame` alive until it has exec'd or exited.
pub(super) fn clone_child(frame: &Frame, cgroup: Option<RawFd>) -> Result<Cloned, CloneError> {
    if cgroup.is_some() && !CLONE3_WORKS.load(Ordering::Relaxed) {
        return Err(CloneError::Unsupported);
    }
    let arg: *const ChildArgs = &*frame.args;
    let mut pidfd: c_int = -1;
    let old = sigmask(!0);
    let r = match cgroup {
        Some(dir) => {
            let mut cl = CloneArgs {
                flags: (libc::CLONE_VM | libc::CLONE_PIDFD) as u64 | CLONE_INTO_CGROUP,
                pidfd: &mut pidfd as *mut c_int as u64,
                exit_signal: libc::SIGCHLD as u64,
                stack: frame.stack.low() as u64,
                stack_size: frame.stack.size() as u64,
                cgroup: dir as u64,
                ..CloneArgs::default()
            };
            let size = std::mem::size_of::<CloneArgs>();
            // SAFETY: the stack is the frame's and unused; the caller keeps
            // `frame` (and so `arg`) alive until the child is done with it.
            unsafe { clone_raw(libc::SYS_clone3, &mut cl as *mut _ as usize, size, 0, arg) }
        }
        None => {
            let base = (libc::CLONE_VM | libc::SIGCHLD) as usize;
            let top = frame.stack.top() as usize;
            let out = &mut pidfd as *mut c_int as usize;
            // SAFETY: as above; with CLONE_PIDFD the kernel writes the pidfd
            // to `pidfd` (clone's parent-tid argument).
            let mut r = unsafe {
                clone_raw(
                    libc::SYS_clone,
                    base | libc::CLONE_PIDFD as usize,
                    top,
                    out,
                    arg,
                )
            };
            if r == -(libc::EINVAL as isize) {
                // A kernel before 5.2: no pidfd, signals go by pid.
                pidfd = -1;
                // SAFETY: as above.
                r = unsafe { clone_raw(libc::SYS_clone, base, top, 0, arg) };
            }
            r
        }
    };
    sigmask(old);
    if r < 0 {
        let errno = errno_of(r);
        if cgroup.is_some() && matches!(errno, libc::ENOSYS | libc::E2BIG | libc::EINVAL) {
            // Before Linux 5.3 (no clone3) or 5.7 (no CLONE_INTO_CGROUP).
            CLONE3_WORKS.store(false, Ordering::Relaxed);
            return Err(CloneError::Unsupported);
        }
        return Err(CloneError::Failed(io::Error::from_raw_os_error(errno)));
    }
    Ok(Cloned {
        pid: r as u32,
        // SAFETY: the kernel made this descriptor for us; nothing else owns it.
        pidfd: (pidfd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(pidfd) }),
    })
}

/// `waitpid(pid, flags)` for a child of ours that only the caller reaps:
/// its raw status, or `None` (with WNOHANG) while it runs. EINTR is
/// retried.
pub(super) fn wait_pid(pid: u32, flags: c_int) -> io::Result<Option<c_int>> {
    let mut raw = 0;
    loop {
        // SAFETY: waitpid writes only `raw`, a live local.
        let r = unsafe { libc::waitpid(pid as libc::pid_t, &mut raw, flags) };
        if r == 0 {
            return Ok(None);
        }
        if r > 0 {
            return Ok(Some(raw));
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
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
        // SAFETY: the mapping made in `new`; the frame that owns it is
        // dropped only once the child has exec'd or exited.
        unsafe { libc::munmap(self.base, self.len) };
    }
}
