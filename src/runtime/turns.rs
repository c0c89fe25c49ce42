//! Turns: one harness process per prompt, run in the session's folder. The
//! launch's `StartHarness` runs the first queued prompt; later prompts run
//! one at a time as the queue is pumped. Each turn's pid is registered in
//! `HarnessPids` while it runs.

use std::collections::VecDeque;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use room_machines::Input;

use super::Runtime;
use crate::harness::{command, Harness};
use crate::procfs::{ProcKey, Procfs};
use crate::sessions::{lock, Session, SessionState};

/// The last bytes of a turn's stderr kept for a failure message.
const STDERR_TAIL: usize = 2048;

impl Runtime {
    /// `StartHarness`: makes the folder and runs the first queued prompt. With
    /// a paused or empty queue the launch completes at once (the harness
    /// runs on the next message or resume).
    pub(super) fn start_harness(&self, s: &mut Session, inputs: &mut VecDeque<Input>) {
        if let Err(e) = std::fs::create_dir_all(&s.rec.start.folder) {
            let msg = format!("cannot create {}: {e}", s.rec.start.folder.display());
            inputs.push_back(Input::HarnessFailed(msg));
            return;
        }
        // A relaunch while a turn still runs: that harness is up already.
        if s.turn.is_some() || s.rec.paused || s.rec.queue.is_empty() {
            // Nothing starts now, so there is no harness startup to measure.
            s.permit_at = None;
            let native_id = s.rec.native_id.clone();
            inputs.push_back(Input::HarnessStarted { native_id });
            return;
        }
        let prompt = s.rec.queue.pop_front().expect("queue is not empty");
        if let Err(e) = self.spawn_turn(s, prompt, true) {
            inputs.push_back(Input::HarnessFailed(e));
        }
    }

    /// Runs the next queued prompt if the session is started, idle and unpaused.
    pub(crate) fn pump(&self, s: &mut Session) {
        if self.is_stopping()
            || s.launch.is_some()
            || s.turn.is_some()
            || s.rec.paused
            || s.rec.waiting_start
            || !matches!(s.rec.state, SessionState::Idle | SessionState::Running)
        {
            return;
        }
        let Some(prompt) = s.rec.queue.pop_front() else {
            return;
        };
        if let Err(e) = self.spawn_turn(s, prompt.clone(), false) {
            log::error!("{}: {e}", s.rec.id);
            s.rec.queue.push_front(prompt);
            self.journal_error(s, &e); // WRITE SIDE (follow.rs)
            s.rec.error = Some(e);
            self.persist(s);
        }
    }

    /// Starts one turn's process and the thread that follows it.
    fn spawn_turn(&self, s: &mut Session, prompt: String, launch_turn: bool) -> Result<(), String> {
        let harness = s.rec.start.harness;
        s.rec.in_flight = Some(prompt.clone());
        let turn = command::Turn {
            harness,
            prompt: &prompt,
            native_id: s.rec.native_id.as_deref(),
            plan_only: s.rec.start.plan_only,
            folder: &s.rec.start.folder,
        };
        let spec = command::build(&self.config, &self.programs, &turn)?;
        // `spec.command()` sets no `pre_exec` unless the turn runs as
        // another account, so std uses posix_spawn (see `TurnSpec::command`).
        // The child's signal mask is the spawning thread's, which is empty
        // (see `service::run`).
        let mut child = spec
            .command()
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so stop kills the tools it runs too.
            .process_group(0)
            .spawn()
            .map_err(|e| spec.spawn_error(&e))?;
        let stdin = child.stdin.take().expect("piped");
        if let Err(e) = command::feed_stdin(stdin, spec.stdin) {
            log::warn!("{}: cannot write the prompt: {e}", s.rec.id);
        }
        let pid = child.id();
        // Keyed with its start time, read while the child is not yet reaped
        // (so the pid is still its): a reused pid is never taken for it.
        let key = Procfs::default().key(pid);
        match key {
            Some(key) => self.harness_pids.insert(key, &s.rec.id),
            None => log::error!(
                "{}: no start time for pid {pid}; its room-cli calls will be refused",
                s.rec.id
            ),
        }
        s.turn = Some(pid);
        s.turn_killed = false;
        s.rec.state = SessionState::Running;
        s.rec.error = None;
        // A launch's first turn is not written here: what is on disk (the
        // prompt queued, the start waiting) restores exactly as this record
        // would (its in-flight prompt goes back to the queue), and the
        // launch writes the record once the harness has reported in. That
        // saves an fsync while the startup permit is held.
        // WRITE SIDE (follow.rs): after the spawn, before its lines.
        self.journal_turn_started(s);
        if !launch_turn {
            self.persist(s);
        }
        self.journal_flush(s); // WRITE SIDE: a launch's turn does not persist
        log::info!("{}: {} turn started (pid {pid})", s.rec.id, harness.name());
        let rt = self.me.upgrade().expect("runtime is alive");
        let id = s.rec.id.clone();
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        std::thread::Builder::new()
            .name(format!("turn-{pid}"))
            .spawn(move || rt.follow_turn(id, harness, (child, key), stdout, stderr, launch_turn))
            .map_err(|e| format!("cannot follow the turn: {e}"))?;
        Ok(())
    }

    /// Reads a turn's events until it exits: the first event that names the
    /// native session is recorded (and completes a launch's first turn).
    /// `child` comes with its `HarnessPids` key, removed once it is done.
    fn follow_turn(
        &self,
        id: String,
        harness: Harness,
        (mut child, key): (Child, Option<ProcKey>),
        stdout: std::process::ChildStdout,
        stderr: std::process::ChildStderr,
        launch_turn: bool,
    ) {
        let pid = child.id();
        let err_thread = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = stderr.take(1 << 20).read_to_end(&mut buf);
            let start = buf.len().saturating_sub(STDERR_TAIL);
            String::from_utf8_lossy(&buf[start..]).trim().to_string()
        });
        // WRITE SIDE (follow.rs): reads the events, journals each as printed.
        let reported = self.read_harness(&id, harness, stdout, |native_id| {
            self.turn_named(&id, native_id, launch_turn)
        });
        let status = child.wait();
        let err_tail = err_thread.join().unwrap_or_default();
        if let Some(key) = key {
            self.harness_pids.remove(key);
        }
        if self.is_stopping() {
            return;
        }
        let Some(s) = self.session(&id) else { return };
        let mut s = lock(&s);
        let killed = s.turn_killed;
        if s.turn == Some(pid) {
            s.turn = None;
            s.rec.in_flight = None;
        }
        self.journal_turn_ended(&s, &status); // WRITE SIDE (follow.rs)
        let ok = status.as_ref().is_ok_and(|st| st.success());
        log::info!("{id}: turn (pid {pid}) ended: {status:?}");
        if launch_turn && !reported {
            let input = if ok || killed {
                Input::HarnessStarted {
                    native_id: s.rec.native_id.clone(),
                }
            } else {
                let st = status.map_or_else(|e| e.to_string(), |st| st.to_string());
                Input::HarnessFailed(format!("{} exited ({st}): {err_tail}", harness.name()))
            };
            if s.launch.is_some() {
                self.drive(&mut s, Some(input));
            }
        }
        if s.rec.state == SessionState::Running && s.turn.is_none() {
            s.rec.state = SessionState::Idle;
        }
        if !ok && !killed && s.rec.state == SessionState::Idle {
            let error = format!("the last turn failed: {err_tail}");
            self.journal_error(&s, &error); // WRITE SIDE (follow.rs)
            s.rec.error = Some(error);
        }
        self.persist(&s);
        self.pump(&mut s);
    }

    /// Records the native ID the turn's first event gave.
    fn turn_named(&self, id: &str, native_id: String, launch_turn: bool) {
        let Some(s) = self.session(id) else { return };
        let mut s = lock(&s);
        self.journal_native_id(&s, &native_id); // WRITE SIDE (follow.rs)
        s.rec.native_id = Some(native_id.clone());
        if launch_turn && s.launch.is_some() {
            // The launch settles as started and persists the record then
            // (one write, not two, on the path that holds a startup permit).
            let native_id = Some(native_id);
            self.drive(&mut s, Some(Input::HarnessStarted { native_id }));
            if s.launch.is_none() {
                return;
            }
        }
        self.persist(&s);
    }

    /// Kills the running turn's process group, if any.
    pub(crate) fn kill_turn(&self, s: &mut Session) {
        if let Some(pid) = s.turn {
            s.turn_killed = true;
            if let Err(e) = killpg(Pid::from_raw(pid as i32), Signal::SIGTERM) {
                log::warn!("{}: cannot kill turn {pid}: {e}", s.rec.id);
            }
        }
    }
}
