//! A room-core service run from its binary as a child process: start, stop
//! (SIGTERM), kill -9, restart, and where it keeps its things.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::setup::{Output, Setup};
use crate::shell::quote;
use crate::time::{poll_until, wait_until};

/// How long a start may take to listen.
const START: Duration = Duration::from_secs(30);
/// How long a start that is to be refused may take to exit.
const REFUSE: Duration = Duration::from_secs(20);
/// How long a dropped service may take over its SIGTERM before SIGKILL:
/// longer than any `kill_grace_ms` a test sets, so that its turns end
/// before it does.
const DROP_GRACE: Duration = Duration::from_secs(120);

/// A room-core with a folder of its own (config, state, records, log, the
/// sessions' `work/`): stopped with SIGTERM on drop (SIGKILL after two
/// minutes), its folder removed unless the test failed.
pub struct Service {
    child: Option<Child>,
    setup: Setup,
    /// How much of the log there was when the running start began.
    logged_before: usize,
    /// Its folder.
    pub root: PathBuf,
    /// Its state dir.
    pub state: PathBuf,
    /// Where the fake harnesses record what they saw.
    pub records: PathBuf,
    /// `http://127.0.0.1:port`, once it listens.
    pub base: String,
}

impl Service {
    pub(crate) fn prepared(setup: Setup) -> Service {
        Service {
            child: None,
            logged_before: 0,
            root: setup.root.clone(),
            state: setup.state.clone(),
            records: setup.records.clone(),
            base: String::new(),
            setup,
        }
    }

    /// The service's command line, ready to spawn: its binary with
    /// `--config`, its environment (`CLOUDROOM_API_URL` and
    /// `CLOUDROOM_LOOP` removed), stdin from /dev/null and its output to
    /// the log. What the kit runs, for a test that runs it its own way.
    pub fn command(&self) -> Command {
        let s = &self.setup;
        let mut cmd = Command::new(&s.program);
        cmd.arg("--config")
            .arg(&s.config)
            .env_remove("CLOUDROOM_API_URL")
            .env_remove("CLOUDROOM_LOOP")
            .env("FAKE_HARNESS_RECORD", &s.records)
            .env("RUST_LOG", &s.log_filter)
            .envs(s.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        if s.output == Output::LogFile {
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.log_path())
                .unwrap();
            cmd.stdout(log.try_clone().unwrap()).stderr(log);
        }
        if let Some(uid) = s.run_as {
            cmd.current_dir(&s.root);
            // SAFETY: only async-signal-safe calls (setgroups, setgid,
            // setuid) between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    nix::unistd::setgroups(&[])?;
                    nix::unistd::setgid(nix::unistd::Gid::from_raw(uid))?;
                    nix::unistd::setuid(nix::unistd::Uid::from_raw(uid))?;
                    Ok(())
                });
            }
        }
        cmd
    }

    /// [`Service::command`] as one line for sh (`env -u … NAME=value …
    /// room-core --config …`), without the redirections: for a test that
    /// starts it from a shell (on a pty, in a pid namespace).
    pub fn shell_command(&self) -> String {
        let cmd = self.command();
        // `env` takes its `-u` options before the first assignment.
        let (removed, set): (Vec<_>, Vec<_>) = cmd.get_envs().partition(|(_, v)| v.is_none());
        let mut words = vec!["env".to_string()];
        for (name, _) in removed {
            words.extend(["-u".to_string(), quote(&name.to_string_lossy())]);
        }
        for (name, value) in set {
            let value = value.unwrap_or_default().to_string_lossy();
            words.push(quote(&format!("{}={value}", name.to_string_lossy())));
        }
        words.push(quote(&cmd.get_program().to_string_lossy()));
        words.extend(cmd.get_args().map(|a| quote(&a.to_string_lossy())));
        words.join(" ")
    }

    /// Starts the service (again, after [`Service::kill9`] or
    /// [`Service::stop`], or for the first time after
    /// [`Builder::prepare`]) on the same state dir and config.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "the service is running");
        let _ = std::fs::remove_file(self.state.join("listen"));
        self.logged_before = self.log().len();
        self.child = Some(self.command().spawn().expect("start room-core"));
        self.await_listen();
    }

    /// Starts the service expecting it to refuse: waits (20 s at most) for
    /// it to exit by itself; its exit status and what this start logged.
    /// Panics, with the log, if it is still running by then.
    pub fn start_refused(&mut self) -> (ExitStatus, String) {
        assert!(self.child.is_none(), "the service is running");
        let logged_before = self.log().len();
        let mut child = self.command().spawn().expect("start room-core");
        let status = poll_until(REFUSE, || child.try_wait().unwrap());
        let log = self
            .log()
            .get(logged_before..)
            .unwrap_or_default()
            .to_string();
        match status {
            Some(status) => (status, log),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the service started:\n{log}");
            }
        }
    }

    /// Waits until the service listens (started here, or by the test from
    /// [`Service::command`]) and sets `base`. The address is in
    /// `<state>/listen`, or in the log where the state dir has no room for
    /// that file.
    pub fn await_listen(&mut self) {
        let listen = self.state.join("listen");
        let log_path = self.log_path();
        let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
        let logged_before = self.logged_before;
        let child = &mut self.child;
        let addr = wait_until("the service listens", START, || {
            if let Some(status) = child.as_mut().and_then(|c| c.try_wait().unwrap()) {
                panic!("room-core exited with {status}:\n{}", log());
            }
            let written = std::fs::read_to_string(&listen)
                .ok()
                .filter(|s| s.ends_with('\n'));
            written.or_else(|| {
                let log = log();
                let this_run = log.get(logged_before..)?;
                let rest = this_run.split("HTTP API on http://").nth(1)?;
                Some(rest.split_whitespace().next()?.to_string())
            })
        });
        self.base = format!("http://{}", addr.trim());
    }

    /// SIGKILLs the service (no chance to clean up).
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// SIGTERMs the service and waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let pid = nix::unistd::Pid::from_raw(c.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            c.wait().unwrap();
        }
    }

    /// Stops the service (SIGTERM) and starts it again.
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    /// Sets one config field; it applies from the next start.
    pub fn set_config(&mut self, key: &str, value: Value) {
        self.setup.config_value[key] = value;
        std::fs::write(&self.setup.config, self.setup.config_value.to_string()).unwrap();
    }

    /// The config as written.
    pub fn config(&self) -> &Value {
        &self.setup.config_value
    }

    /// The config file.
    pub fn config_path(&self) -> &Path {
        &self.setup.config
    }

    /// The API's bearer token: the config's, else the one the service
    /// generated into `<state>/token`.
    pub fn token(&self) -> String {
        match self.config()["token"].as_str() {
            Some(token) => token.to_string(),
            None => std::fs::read_to_string(self.state.join("token"))
                .expect("the generated token")
                .trim()
                .to_string(),
        }
    }

    /// The agent socket: the config's, else `<state>/agent.sock`.
    pub fn socket(&self) -> PathBuf {
        match self.config()["agent_socket"].as_str() {
            Some(path) => PathBuf::from(path),
            None => self.state.join("agent.sock"),
        }
    }

    /// room-cli, which cargo builds beside room-core.
    pub fn room_cli(&self) -> PathBuf {
        self.setup.binary.with_file_name("room-cli")
    }

    /// A folder under the service's `work/` (not created).
    pub fn folder(&self, name: &str) -> PathBuf {
        self.root.join("work").join(name)
    }

    /// The running service's pid (`None` once stopped).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The log file (every start's output).
    pub fn log_path(&self) -> PathBuf {
        self.root.join("service.log")
    }

    /// The service's log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let pid = nix::unistd::Pid::from_raw(c.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let deadline = Instant::now() + DROP_GRACE;
            while c.try_wait().unwrap().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        if self.setup.keep || std::thread::panicking() {
            eprintln!("kept {} for inspection", self.root.display());
            return;
        }
        let _ = std::fs::remove_dir_all(&self.root);
        // A state dir elsewhere (a tmpfs) goes with it.
        if !self.state.starts_with(&self.root) {
            let _ = std::fs::remove_dir_all(&self.state);
        }
    }
}
