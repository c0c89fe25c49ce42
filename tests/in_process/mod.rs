//! The agent socket started in-process (`agent::start` with a `Shared`
//! built here) for tests that register their own processes as a session's
//! harness in `HarnessPids`, and run tools through the real room-cli under
//! them.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use room_core::agent::Caps;
use room_core::config::Config;
use room_core::procfs::{ProcKey, Procfs};
use room_core::service::Shared;
use room_kit::{quote, FakeWebsite, Out, TempDir};

/// room-cli, built beside the service.
pub const ROOM_CLI: &str = env!("CARGO_BIN_EXE_room-cli");

/// An agent socket serving in this process, with its own state folder.
pub struct InProcess {
    /// What the socket's connections share (its `harness_pids` above all).
    pub shared: Shared,
    /// The socket's path.
    pub socket: std::path::PathBuf,
    /// The server, until a test stops it.
    pub server: Option<room_core::agent::Server>,
    _dir: TempDir,
}

impl InProcess {
    /// A socket with the service's caps, forwarding to `web`.
    pub fn start(web: &FakeWebsite) -> InProcess {
        InProcess::start_with(web, None)
    }

    /// A socket forwarding to `web`, with `caps` instead of the service's.
    pub fn start_with(web: &FakeWebsite, caps: Option<Caps>) -> InProcess {
        let dir = TempDir::new("agent-in-process");
        let socket = dir.path().join("agent.sock");
        let shared = Shared::new(Config {
            state_dir: dir.path().join("state"),
            agent_socket: Some(socket.clone()),
            website_url: Some(web.url.clone()),
            ..Config::default()
        });
        let server = match caps {
            None => room_core::agent::start(&shared),
            Some(caps) => room_core::agent::start_with(
                socket.clone(),
                room_core::agent::Context::with_caps(&shared, caps),
            ),
        }
        .expect("agent socket");
        InProcess {
            shared,
            socket,
            server: Some(server),
            _dir: dir,
        }
    }

    /// Runs `tool` under a `sh` that acts as `session`'s harness (registered
    /// before it runs anything), the way a harness runs a tool command;
    /// what it printed and how long it took.
    pub fn harness_runs(&self, session: Option<&str>, tool: &str) -> (Out, Duration) {
        self.runs_under(tool, |key| session.map(|s| (key, s.to_string())))
    }

    /// Runs `tool` under a `sh`; `register` gets the shell's own key (pid and
    /// start time) and says what to register in `HarnessPids` before it runs.
    pub fn runs_under(
        &self,
        tool: &str,
        register: impl FnOnce(ProcKey) -> Option<(ProcKey, String)>,
    ) -> (Out, Duration) {
        let cli_dir = std::path::Path::new(ROOM_CLI).parent().unwrap();
        let script = format!(
            "read go; export ROOM_CORE_SOCKET={}; export PATH={}:$PATH; {tool}",
            quote(&self.socket.to_string_lossy()),
            quote(&cli_dir.to_string_lossy()),
        );
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .env_remove("CLOUDROOM_LOOP")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let key = Procfs::default()
            .key(child.id())
            .expect("the shell's start time");
        let registered = register(key);
        if let Some((k, s)) = &registered {
            self.shared.harness_pids.insert(*k, s);
        }
        let t = Instant::now();
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
        let out = child.wait_with_output().unwrap();
        let took = t.elapsed();
        if let Some((k, _)) = registered {
            self.shared.harness_pids.remove(k);
        }
        (out.into(), took)
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop();
        }
    }
}
