//! The agent socket against callers that hold it: idle connections, a
//! request sent a byte at a time, slow website calls, a crowd past the cap.
//! No caller delays another; every wait here is bounded.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use room_kit::{Service, LOOP_ID};
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// A website that takes `delay` over every call, many at once (the shared
/// fake website answers one at a time), then answers `{"ok":true}`.
struct SlowWebsite {
    url: String,
    calls: Arc<AtomicUsize>,
}

impl SlowWebsite {
    fn start(delay: Duration) -> SlowWebsite {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten().take(64) {
                let counted = counted.clone();
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n")
                        && stream.read(&mut byte).is_ok_and(|n| n == 1)
                    {
                        head.push(byte[0]);
                    }
                    let len = String::from_utf8_lossy(&head)
                        .to_lowercase()
                        .lines()
                        .find_map(|l| {
                            l.strip_prefix("content-length:")
                                .map(|v| v.trim().to_string())
                        })
                        .and_then(|v| v.parse::<usize>().ok())
                        .unwrap_or(0);
                    let mut body = vec![0u8; len.min(1 << 20)];
                    let _ = stream.read_exact(&mut body);
                    counted.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(delay);
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\nConnection: close\r\n\r\n{\"ok\":true}",
                    );
                });
            }
        });
        SlowWebsite { url, calls }
    }
}

/// One request on the socket from this process; its answer and how long the
/// round trip took.
fn ask(socket: &Path, argv: &[&str]) -> (Value, Duration) {
    let t = Instant::now();
    let mut s = UnixStream::connect(socket).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = json!({"argv": argv, "cwd": "/"}).to_string();
    s.write_all(req.as_bytes()).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    (read_json(&mut s), t.elapsed())
}

fn read_json(s: &mut UnixStream) -> Value {
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

fn start(website: Option<&str>) -> Service {
    Service::start(ROOM_CORE, json!({ "website_url": website }))
}

/// Connections to an agent socket made by child processes of this one (at
/// most `per_child` each, so no one process's cap is met), which then wait
/// to be killed; this process holds the same sockets, to write on them and
/// read their answers. The children are killed (by pid) and reaped on drop.
pub struct HeldByChildren {
    /// The connected sockets, in the order they were connected.
    pub streams: Vec<std::os::unix::net::UnixStream>,
    children: Vec<i32>,
}

impl HeldByChildren {
    /// `n` connections to `socket`.
    pub fn connect(socket: &Path, n: usize, per_child: usize) -> HeldByChildren {
        use nix::libc;
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: a zeroed sockaddr_un is valid; the path fits (asserted).
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
        let bytes = socket.as_os_str().as_bytes();
        assert!(bytes.len() < addr.sun_path.len());
        for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
            *d = *s as libc::c_char;
        }
        let fds: Vec<OwnedFd> = (0..n)
            .map(|_| {
                // SAFETY: plain socket(2); the fd is ours.
                let fd = unsafe {
                    libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0)
                };
                assert!(fd >= 0);
                unsafe { OwnedFd::from_raw_fd(fd) }
            })
            .collect();
        let raw: Vec<i32> = fds.iter().map(|f| f.as_raw_fd()).collect();
        let (ready_r, ready_w) = nix::unistd::pipe().unwrap();
        let mut children = Vec::new();
        for chunk in raw.chunks(per_child.max(1)) {
            // SAFETY: the child only calls connect, write and pause
            // (async-signal-safe) on memory set up before the fork.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                unsafe {
                    for fd in chunk {
                        libc::connect(
                            *fd,
                            (&addr as *const libc::sockaddr_un).cast(),
                            std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
                        );
                    }
                    libc::write(ready_w.as_raw_fd(), b"r".as_ptr().cast(), 1);
                    loop {
                        libc::pause();
                    }
                }
            }
            assert!(pid > 0);
            children.push(pid);
        }
        drop(ready_w);
        let mut ready = vec![0u8; children.len()];
        let mut got = 0;
        while got < ready.len() {
            match nix::unistd::read(ready_r.as_raw_fd(), &mut ready[got..]) {
                Ok(0) => panic!("a child ended before it connected"),
                Ok(k) => got += k,
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => panic!("{e}"),
            }
        }
        HeldByChildren {
            streams: fds.into_iter().map(Into::into).collect(),
            children,
        }
    }
}

impl Drop for HeldByChildren {
    fn drop(&mut self) {
        for pid in &self.children {
            let pid = nix::unistd::Pid::from_raw(*pid);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = nix::sys::wait::waitpid(pid, None);
        }
    }
}

#[test]
fn idle_connections_and_slow_website_calls_leave_a_refusal_answering_within_100_ms() {
    let web = SlowWebsite::start(Duration::from_secs(8));
    let svc = start(Some(&web.url));
    // Fifty idle callers, ten to a process (under the per-process cap).
    let mut held = HeldByChildren::connect(&svc.socket(), 50, 10);
    let idle = &mut held.streams;
    let opened = Instant::now();
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..5)
            .map(|_| scope.spawn(|| svc.script(Some(LOOP_ID), &["loop", "list"])))
            .collect();
        let t = Instant::now();
        while web.calls.load(Ordering::SeqCst) < 5 {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "the calls never reached the website"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // The five are at the website for 8 s, fifty callers sit idle: a
        // command that needs no website is still answered at once.
        for _ in 0..5 {
            let (answer, took) = ask(&svc.socket(), &["thread", "list"]);
            assert_eq!(answer["exit"], 1, "{answer}");
            assert!(took < Duration::from_millis(100), "a refusal took {took:?}");
        }
        for call in calls {
            let out = call.join().unwrap();
            assert_eq!(
                (out.code, out.stdout.as_str()),
                (0, "{\"ok\":true}\n"),
                "{out:?}"
            );
        }
    });
    // An idle caller is answered at its deadline, 5 s after it connected.
    idle[0]
        .set_read_timeout(Some(Duration::from_secs(8)))
        .unwrap();
    let answer = read_json(&mut idle[0]);
    assert_eq!(answer["exit"], 2, "{answer}");
    assert_eq!(
        answer["stderr"],
        "room-cli: Core could not read the request: it did not arrive within 5 s\n"
    );
    assert!(opened.elapsed() < Duration::from_secs(12));
}

#[test]
fn a_request_sent_a_byte_at_a_time_is_cut_off_at_one_deadline() {
    let svc = start(None);
    let mut s = UnixStream::connect(svc.socket()).unwrap();
    let t = Instant::now();
    // Each byte comes well within any per-read timeout; the deadline is for
    // the whole request.
    s.write_all(b"{\"argv\": ").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    while t.elapsed() < Duration::from_secs(8) {
        let _ = s.write_all(b" ");
        if let Ok(n) = s.read(&mut chunk) {
            bytes.extend_from_slice(&chunk[..n]);
            break;
        }
    }
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = s.read_to_end(&mut bytes);
    let answer: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    assert_eq!(answer["exit"], 2, "{answer}");
    assert!(
        answer["stderr"]
            .as_str()
            .unwrap()
            .contains("did not arrive within 5 s"),
        "{answer}"
    );
    assert!(t.elapsed() < Duration::from_secs(7), "{:?}", t.elapsed());
}

#[test]
fn past_its_cap_one_process_is_told_core_is_busy_at_once_and_others_are_not() {
    let svc = start(None);
    let cap = room_core::agent::MAX_PER_PROCESS;
    let _mine: Vec<UnixStream> = (0..cap)
        .map(|_| UnixStream::connect(svc.socket()).unwrap())
        .collect();
    // The next connection of this process is turned away at once, naming
    // the cap; another process's is served.
    let (answer, took) = ask(&svc.socket(), &["thread", "list"]);
    assert_eq!(
        answer["stderr"],
        format!(
            "room-cli: Core is busy ({cap} connections from one process at once); try again in a moment.\n"
        )
    );
    assert!(took < Duration::from_millis(100), "{took:?}");
    let out = svc.script(None, &["thread", "list"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "Run cloudroom thread list from a Cloudroom cloud thread\n"
        ),
        "{out:?}"
    );
}
