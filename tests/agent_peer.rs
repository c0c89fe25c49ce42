//! The agent socket identifies the process that connected, not its pid.
//!
//! The attack, made deterministic: a helper connects and exits; once it is
//! reaped, a process registered as a session's harness is created with the
//! helper's very pid (`clone3` with `set_tid`, which needs root); then the
//! request arrives on the helper's connection. Read by pid, `/proc` would
//! show the victim's harness and the command would go out with the victim's
//! session. The agent socket runs in-process (the test is its agent account).

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::libc;
use room_core::config::Config;
use room_core::procfs::{ProcKey, Procfs};
use room_core::service::Shared;
use room_kit::{skip, FakeWebsite, TempDir};
use serde_json::{json, Value};

/// `struct clone_args` (linux/sched.h), up to `cgroup`.
#[repr(C)]
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

/// A child process that only waits to be killed, with exactly `pid`.
fn child_with_pid(pid: i32) -> std::io::Result<i32> {
    let tid = [pid];
    let args = CloneArgs {
        exit_signal: libc::SIGCHLD as u64,
        set_tid: tid.as_ptr() as u64,
        set_tid_size: 1,
        ..CloneArgs::default()
    };
    // SAFETY: clone3 without CLONE_VM is a fork; the child only calls pause.
    let r = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    match r {
        0 => loop {
            // SAFETY: async-signal-safe; SIGKILL ends it.
            unsafe { libc::pause() };
        },
        r if r < 0 => Err(std::io::Error::last_os_error()),
        r => Ok(r as i32),
    }
}

/// An unconnected Unix stream socket and the address of `path`.
fn socket_for(path: &std::path::Path) -> (OwnedFd, libc::sockaddr_un) {
    // SAFETY: plain socket(2); the fd is ours.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    assert!(fd >= 0);
    // SAFETY: a zeroed sockaddr_un is valid; the path fits (asserted).
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    assert!(bytes.len() < addr.sun_path.len());
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    (unsafe { OwnedFd::from_raw_fd(fd) }, addr)
}

/// A child that connects `fd` (shared with this process) and exits; reaped
/// here. Its pid.
fn connect_from_a_child_that_exits(fd: &OwnedFd, addr: &libc::sockaddr_un) -> i32 {
    // SAFETY: the child only calls connect and _exit (async-signal-safe).
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let r = unsafe {
            libc::connect(
                fd.as_raw_fd(),
                (addr as *const libc::sockaddr_un).cast(),
                std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
            )
        };
        unsafe { libc::_exit(if r == 0 { 0 } else { 1 }) };
    }
    assert!(pid > 0);
    let mut status = 0;
    // SAFETY: our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the helper's connect failed"
    );
    pid
}

fn answer_of(stream: &mut UnixStream, argv: &[&str]) -> Value {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // The socket may have answered and closed already: a failed write is
    // fine, the answer is still there to read.
    let _ = stream.write_all(json!({"argv": argv, "cwd": "/"}).to_string().as_bytes());
    let _ = stream.shutdown(std::net::Shutdown::Write);
    // One line; not to EOF: the victim, a fork of this process, holds the
    // in-process server's end of the connection open too.
    let mut bytes = Vec::new();
    let mut byte = [0u8; 1];
    while !bytes.ends_with(b"\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
        bytes.push(byte[0]);
    }
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

#[test]
fn a_caller_whose_pid_went_to_another_sessions_harness_is_refused_and_nothing_is_forwarded() {
    const TEST: &str =
        "a_caller_whose_pid_went_to_another_sessions_harness_is_refused_and_nothing_is_forwarded";
    if !nix::unistd::geteuid().is_root() {
        return skip(TEST, "clone3 with set_tid (a chosen pid) needs root");
    }
    let web = FakeWebsite::start();
    let dir = TempDir::new("agent-peer");
    let socket = dir.path().join("agent.sock");
    let shared = Shared::new(Config {
        state_dir: dir.path().join("state"),
        agent_socket: Some(socket.clone()),
        website_url: Some(web.url.clone()),
        ..Config::default()
    });
    let server = room_core::agent::start(&shared).expect("agent socket");

    // The control: a live caller under the victim's harness is forwarded as
    // its session, so the refusal below is about the pid alone.
    let me = std::process::id();
    let my_key = Procfs::default().key(me).unwrap();
    shared.harness_pids.insert(my_key, "cr_control");
    let mut live = UnixStream::connect(&socket).unwrap();
    let answer = answer_of(&mut live, &["thread", "list"]);
    assert_eq!(answer["exit"], 0, "{answer}");
    assert_eq!(
        web.calls(),
        vec![(
            "/api/core/thread".to_string(),
            json!({"action": "list", "session": "cr_control"})
        )]
    );
    shared.harness_pids.remove(my_key);

    let (fd, addr) = socket_for(&socket);
    let helper = connect_from_a_child_that_exits(&fd, &addr);
    let victim = match child_with_pid(helper) {
        Ok(v) => v,
        Err(e) => return skip(TEST, &format!("clone3 with set_tid {helper}: {e}")),
    };
    assert_eq!(victim, helper, "the victim has the helper's pid");
    let key = Procfs::default().key(victim as u32).unwrap();
    shared.harness_pids.insert(
        ProcKey {
            pid: victim as u32,
            start_time: key.start_time,
        },
        "cr_victim",
    );

    let mut stream = UnixStream::from(fd);
    let answer = answer_of(&mut stream, &["thread", "list"]);
    // SAFETY: our own child, by its pid.
    unsafe {
        libc::kill(victim, libc::SIGKILL);
        libc::waitpid(victim, std::ptr::null_mut(), 0);
    }
    assert_eq!(
        answer,
        json!({"exit": 1, "stdout": "", "stderr": format!("{}\n", room_core::agent::CALLER_GONE)})
    );
    assert_eq!(web.calls().len(), 1, "nothing more reached the website");
    server.stop();
}

#[test]
fn a_peer_whose_pid_a_harness_took_before_its_ancestry_was_read_is_not_identified() {
    const TEST: &str =
        "a_peer_whose_pid_a_harness_took_before_its_ancestry_was_read_is_not_identified";
    if !nix::unistd::geteuid().is_root() {
        return skip(TEST, "clone3 with set_tid (a chosen pid) needs root");
    }
    let dir = TempDir::new("agent-peer-identify");
    let shared = Shared::new(Config {
        state_dir: dir.path().join("state"),
        ..Config::default()
    });
    let context = room_core::agent::Context::new(&shared);
    // The peer, held by a pidfd while it runs (as the acceptor holds it),
    // exits and is reaped; a harness of another session gets its pid; only
    // then is the ancestry read (the worker's turn came late).
    let mut peer = Command::new("sh")
        .args(["-c", "read x"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = peer.id();
    let pidfd = room_core::supervise::process::pidfd_open(pid).unwrap();
    let held = room_core::agent::peer::Peer::from_pidfd(pid, 0, pidfd);
    drop(peer.stdin.take());
    peer.wait().unwrap();
    let victim = match child_with_pid(pid as i32) {
        Ok(v) => v,
        Err(e) => return skip(TEST, &format!("clone3 with set_tid {pid}: {e}")),
    };
    let key = Procfs::default().key(victim as u32).unwrap();
    shared.harness_pids.insert(key, "cr_victim");
    // Read by pid alone, it would be the victim's harness.
    let ancestry = Procfs::default().ancestry(pid, |k| shared.harness_pids.session_of(k));
    let by_pid = room_machines::classify(None, &ancestry);
    let identified = context.identify(&held);
    // SAFETY: our own child, by its pid.
    unsafe {
        libc::kill(victim, libc::SIGKILL);
        libc::waitpid(victim, std::ptr::null_mut(), 0);
    }
    assert_eq!(by_pid, room_machines::Caller::Harness("cr_victim".into()));
    assert_eq!(identified, None, "the peer is gone: no identity");
}
