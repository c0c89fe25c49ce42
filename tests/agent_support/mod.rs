//! Helpers for the agent-socket and room-cli integration tests: temp
//! folders, the real service started from its binary with a temp config, and
//! room-cli run the way a loop script or a harness runs it. (The session
//! tests' helpers are in tests/common; the fake website is shared there.)
#![allow(dead_code)]

#[path = "../common/fake_website.rs"]
pub mod fake_website;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use fake_website::FakeWebsite;

/// A loop ID of the right shape.
pub const ID: &str = "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

/// The room-cli binary.
pub fn room_cli() -> &'static str {
    env!("CARGO_BIN_EXE_room-cli")
}

/// The service binary.
pub fn room_core() -> &'static str {
    env!("CARGO_BIN_EXE_room-core")
}

/// A folder under the temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new empty folder named after `name`.
    pub fn new(name: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "room-core-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A free loopback port (for the HTTP API's `listen`).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Single-quotes `s` for sh.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// What a process printed and its exit status.
#[derive(Debug, Clone)]
pub struct Out {
    /// Exit status (-1 if killed by a signal).
    pub code: i32,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
}

impl From<std::process::Output> for Out {
    fn from(o: std::process::Output) -> Out {
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// How to start the service.
#[derive(Default)]
pub struct Options {
    /// `website_url` in the config.
    pub website_url: Option<String>,
    /// `website_token` in the config.
    pub website_token: Option<String>,
    /// `agent_uid` in the config.
    pub agent_uid: Option<u32>,
    /// `agent_socket` in the config (default: `agent.sock` in the service's
    /// folder).
    pub agent_socket: Option<PathBuf>,
    /// Run the service as this uid (and gid), dropping root.
    pub run_as: Option<u32>,
    /// More config fields.
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// More environment variables for the service (and what it starts).
    pub env: Vec<(String, String)>,
}

/// The real service, started from its binary; stopped (SIGTERM) on drop.
pub struct Service {
    child: Child,
    /// The agent socket.
    pub socket: PathBuf,
    /// The HTTP API's address.
    pub listen: String,
    /// The config's bearer token for the HTTP API.
    pub token: String,
    /// Its log (stderr).
    pub log: PathBuf,
    /// Its folder (config, state, log).
    pub dir: TempDir,
}

impl Service {
    /// Starts the service with `website` as its website.
    pub fn start(website: &FakeWebsite) -> Service {
        Service::start_with(Options {
            website_url: Some(website.url.clone()),
            ..Options::default()
        })
    }

    /// Starts the service with these options and waits for its socket.
    pub fn start_with(opts: Options) -> Service {
        let dir = TempDir::new("service");
        let state = dir.path().join("state");
        std::fs::create_dir_all(&state).unwrap();
        // Outside the state folder, which is the service's own (0700): an
        // agent account of its own could never reach it there.
        let socket = opts
            .agent_socket
            .clone()
            .unwrap_or_else(|| dir.path().join("agent.sock"));
        let listen = format!("127.0.0.1:{}", free_port());
        let token = "test-token-not-a-secret".to_string();
        let mut config = serde_json::json!({
            "listen": listen,
            "token": token,
            "state_dir": state,
            "agent_socket": socket,
        });
        let map = config.as_object_mut().unwrap();
        if let Some(url) = &opts.website_url {
            map.insert("website_url".into(), url.clone().into());
        }
        if let Some(t) = &opts.website_token {
            map.insert("website_token".into(), t.clone().into());
        }
        if let Some(uid) = opts.agent_uid {
            map.insert("agent_uid".into(), uid.into());
        }
        // What the test gives the service is meant for what it starts too:
        // the harness environment is an allowlist, so the names go in it.
        let names: Vec<&str> = opts.env.iter().map(|(k, _)| k.as_str()).collect();
        map.insert("harness_env".into(), names.into());
        map.extend(opts.extra.clone());
        let config_path = dir.path().join("config.json");
        std::fs::write(&config_path, config.to_string()).unwrap();
        let log = dir.path().join("service.log");
        if let Some(uid) = opts.run_as {
            let id = nix::unistd::Uid::from_raw(uid);
            let gid = nix::unistd::Gid::from_raw(uid);
            for p in [dir.path(), &state, &config_path] {
                nix::unistd::chown(p, Some(id), Some(gid)).unwrap();
            }
        }
        // Another account may not reach the build folder (a checkout under
        // a 0700 home): it runs a copy of the binary from its own folder.
        let program = match opts.run_as {
            Some(_) => {
                let copy = dir.path().join("room-core");
                std::fs::copy(room_core(), &copy).unwrap();
                copy
            }
            None => PathBuf::from(room_core()),
        };
        let mut cmd = Command::new(program);
        cmd.current_dir(dir.path())
            .arg("--config")
            .arg(&config_path)
            .env_remove("CLOUDROOM_API_URL")
            .env_remove("CLOUDROOM_LOOP")
            .env("RUST_LOG", "info")
            // What the service starts (harnesses and their tool commands)
            // inherits it, so their room-cli finds this socket.
            .env("ROOM_CORE_SOCKET", &socket)
            .envs(opts.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        if let Some(uid) = opts.run_as {
            // SAFETY: only async-signal-safe calls (setgroups, setgid,
            // setuid) between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    let gid = nix::unistd::Gid::from_raw(uid);
                    nix::unistd::setgroups(&[])?;
                    nix::unistd::setgid(gid)?;
                    nix::unistd::setuid(nix::unistd::Uid::from_raw(uid))?;
                    Ok(())
                });
            }
        }
        let child = cmd.spawn().expect("start room-core");
        let mut service = Service {
            child,
            socket,
            listen,
            token,
            log,
            dir,
        };
        service.wait_for_socket();
        service
    }

    fn wait_for_socket(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if std::os::unix::net::UnixStream::connect(&self.socket).is_ok() {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("room-core exited with {status}: {}", self.log_text());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("room-core's socket never came up: {}", self.log_text());
    }

    /// The service's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The service's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Runs room-cli the way a loop's check script does:
    /// `env CLOUDROOM_LOOP=<marker> sh -c 'env -i ROOM_CORE_SOCKET=… room-cli …'`,
    /// so the marker is only on the parent shell. `None`: no marker anywhere.
    pub fn script(&self, marker: Option<&str>, args: &[&str]) -> Out {
        let inner = format!(
            "env -i ROOM_CORE_SOCKET={} {} {}",
            quote(&self.socket.to_string_lossy()),
            quote(room_cli()),
            args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
        );
        let mut cmd = match marker {
            Some(m) => {
                let mut c = Command::new("env");
                c.arg(format!("CLOUDROOM_LOOP={m}")).arg("sh");
                c
            }
            None => Command::new("sh"),
        };
        cmd.arg("-c")
            .arg(inner)
            .env_remove("CLOUDROOM_LOOP")
            .stdin(Stdio::null());
        cmd.output().expect("run sh").into()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether the tests run as root (needed to start the service as another
/// account).
pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
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
