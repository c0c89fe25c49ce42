//! The agent socket's caps per process and per session: one process holding
//! many connections, or one session's processes holding many, are told Core
//! is busy (naming the cap) at once, and another session's room-cli still
//! gets its answer. The socket runs in-process (the test is its agent
//! account); sessions are processes registered in `HarnessPids`.

mod in_process;

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use in_process::InProcess;
use nix::libc;
use room_core::agent::{Caps, MAX_PER_PROCESS, MAX_PER_SESSION};
use room_core::procfs::Procfs;
use room_kit::FakeWebsite;
use serde_json::json;

/// How many connections the crowd opens.
const CROWD: usize = 300;
/// The most a room-cli call of another session may take meanwhile.
const BOUND: Duration = Duration::from_secs(2);

/// The busy answer for `what` at `cap`.
fn busy(cap: usize, what: &str) -> String {
    format!("room-cli: Core is busy ({cap} {what} at once); try again in a moment.\n")
}

/// Waits until `stream` has its answer (or `limit` passes); the answer's
/// stderr, `None` if there is none by then.
fn answer_within(stream: &mut UnixStream, limit: Duration) -> Option<String> {
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                bytes.extend_from_slice(&chunk[..n]);
                if bytes.ends_with(b"\n") {
                    break;
                }
            }
            Err(_) => return None,
        }
    }
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    v["stderr"].as_str().map(str::to_string)
}

#[test]
fn one_process_holding_300_connections_leaves_another_sessions_room_cli_its_answer() {
    let web = FakeWebsite::start();
    let core = InProcess::start(&web);
    let t = Instant::now();
    let mut crowd: Vec<UnixStream> = (0..CROWD)
        .map(|_| UnixStream::connect(&core.socket).unwrap())
        .collect();
    // The first MAX_PER_PROCESS are held (they send nothing); every other
    // one is told at once which cap it hit.
    let want = busy(MAX_PER_PROCESS, "connections from one process");
    for (i, s) in crowd.iter_mut().enumerate().skip(MAX_PER_PROCESS) {
        let got = answer_within(s, Duration::from_secs(2));
        assert_eq!(got.as_deref(), Some(want.as_str()), "connection {i}");
    }
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());

    // Another session's call is answered as usual, within the bound.
    let (out, took) = core.harness_runs(Some("cr_other"), "room-cli thread list");
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "{\"ok\":true}\n"),
        "{out:?}"
    );
    assert!(took < BOUND, "{took:?}");
    assert_eq!(
        web.calls(),
        vec![(
            "/api/core/thread".to_string(),
            json!({"action": "list", "session": "cr_other"})
        )]
    );
    // The held ones are still held: nothing was answered to them yet.
    for s in &mut crowd[..MAX_PER_PROCESS] {
        assert_eq!(answer_within(s, Duration::from_millis(1)), None);
    }
}

/// Unconnected Unix stream sockets, and the address of `path`.
fn sockets(n: usize, path: &std::path::Path) -> (Vec<OwnedFd>, libc::sockaddr_un) {
    // SAFETY: a zeroed sockaddr_un is valid; the path fits (asserted).
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    assert!(bytes.len() < addr.sun_path.len());
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let fds = (0..n)
        .map(|_| {
            // SAFETY: plain socket(2); the fd is ours.
            let fd =
                unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
            assert!(fd >= 0);
            unsafe { OwnedFd::from_raw_fd(fd) }
        })
        .collect();
    (fds, addr)
}

#[test]
fn one_sessions_processes_past_its_cap_leave_another_session_its_answer() {
    let web = FakeWebsite::start();
    let core = InProcess::start(&web);
    // A "harness" of session cr_greedy (its own process group, so it and
    // its children end by their group's id) starts 3 children once it is
    // registered; each connects MAX_PER_PROCESS sockets made here (shared
    // with this process, which reads their answers) and waits to be killed.
    let per_child = MAX_PER_PROCESS;
    let children = 3;
    let (fds, addr) = sockets(per_child * children, &core.socket);
    let raw: Vec<i32> = fds.iter().map(|f| f.as_raw_fd()).collect();
    let (go_r, go_w) = nix::unistd::pipe().unwrap();
    // SAFETY: the child only makes async-signal-safe calls (setpgid, read,
    // fork, connect, pause, _exit) on memory set up before the fork.
    let harness = unsafe { libc::fork() };
    if harness == 0 {
        unsafe {
            libc::setpgid(0, 0);
            let mut b = 0u8;
            libc::read(go_r.as_raw_fd(), (&mut b as *mut u8).cast(), 1);
            for c in 0..children {
                if libc::fork() == 0 {
                    for fd in &raw[c * per_child..(c + 1) * per_child] {
                        libc::connect(
                            *fd,
                            (&addr as *const libc::sockaddr_un).cast(),
                            std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
                        );
                    }
                    loop {
                        libc::pause();
                    }
                }
            }
            loop {
                libc::pause();
            }
        }
    }
    assert!(harness > 0);
    // SAFETY: our own child's group, set before it runs anything else too.
    unsafe { libc::setpgid(harness, harness) };
    let key = Procfs::default().key(harness as u32).unwrap();
    core.shared.harness_pids.insert(key, "cr_greedy");
    nix::unistd::write(&go_w, b"g").unwrap();

    // Exactly the connections past the session's cap are told so, at once.
    let mut streams: Vec<UnixStream> = fds.into_iter().map(UnixStream::from).collect();
    let want = busy(MAX_PER_SESSION, "connections of one session");
    let over = per_child * children - MAX_PER_SESSION;
    // Wait (poll, bounded) until `over` of them have an answer to read.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut fds: Vec<libc::pollfd> = streams
            .iter()
            .map(|s| libc::pollfd {
                fd: s.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let left = deadline.saturating_duration_since(Instant::now());
        // (An unconnected socket polls as hung up: only POLLIN counts.)
        // SAFETY: valid pollfds.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 50) };
        let ready = fds.iter().filter(|f| f.revents & libc::POLLIN != 0).count();
        if ready >= over || left.is_zero() {
            break;
        }
    }
    let mut answers = Vec::new();
    for s in &mut streams {
        if let Some(a) = answer_within(s, Duration::from_millis(1)) {
            answers.push(a);
        }
    }
    let (out, took) = core.harness_runs(Some("cr_other"), "room-cli thread list");
    // SAFETY: the group of the process this test forked.
    unsafe { libc::kill(-harness, libc::SIGKILL) };
    let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(harness), None);
    assert_eq!(answers, vec![want; over], "{:?}", core.shared.harness_pids);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "{\"ok\":true}\n"),
        "{out:?}"
    );
    assert!(took < BOUND, "{took:?}");
}

#[test]
fn past_the_cap_on_all_connections_a_caller_is_told_core_is_busy_at_once() {
    let web = FakeWebsite::start();
    let caps = Caps {
        connections: 4,
        ..Caps::default()
    };
    let core = InProcess::start_with(&web, Some(caps));
    let _held: Vec<UnixStream> = (0..4)
        .map(|_| UnixStream::connect(&core.socket).unwrap())
        .collect();
    let t = Instant::now();
    let mut next = UnixStream::connect(&core.socket).unwrap();
    assert_eq!(
        answer_within(&mut next, Duration::from_secs(2)).as_deref(),
        Some(busy(4, "connections").as_str())
    );
    assert!(
        t.elapsed() < Duration::from_millis(100),
        "{:?}",
        t.elapsed()
    );
}
