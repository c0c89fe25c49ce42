//! A turn's effects, carried out with the supervisor: spawn (its own
//! process group, and cgroup where there is one, the key on record first),
//! hand the prompt over on stdin, signal the whole tree, kill a survivor of
//! the last run; and the threads that follow a turn:
//!
//! - the exit watcher waits for the harness to exit, ends what it left
//!   behind (`Supervisor::terminate`), waits a moment for the output
//!   readers and feeds `TurnEnded`. It never waits for stdout's end first:
//!   a daemon the harness left could hold it open;
//! - the stdout reader (stdout_reader.rs, started once the turn's start is
//!   journalled) journals what the harness prints and feeds what it says;
//! - the stderr drain reads to the end, keeping a tail for the error;
//! - the stdin writer (sessions/turn_input.rs) writes what the talker
//!   words, so no prompt meets an argv limit and a big one blocks no
//!   shared thread.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal as Sig;
use room_machines::session::{Exit, Input, Process, Signal, TurnSeq};

use super::driver::Pass;
use super::job::Job;
use super::Runtime;
use crate::harness::speech::Said;
use crate::harness::{account, command};
use crate::nofollow;
use crate::procfs::ProcKey;
use crate::sessions::live_turn::LiveTurn;
use crate::sessions::turn_input::{undelivered, TurnInput};
use crate::sessions::turn_now::TurnNow;
use crate::sessions::SessionHandle;
use crate::sessions::{self, lock, turn_key, Hosted};
use crate::supervise::output::{self, Tail};
use crate::supervise::{Child, Tree, TurnKey, TurnRecord};

/// How long, once a turn's whole tree is gone, its output readers get to
/// reach the end of their pipes (at once, unless something escaped the tree).
const OUTPUT_WAIT: Duration = Duration::from_secs(2);

impl Runtime {
    /// `SpawnTurn`: makes the folder, puts the turn's key on record, starts
    /// the harness through the supervisor and answers `TurnSpawned` (or
    /// `SpawnFailed` with why).
    pub(super) fn spawn_turn(
        &self,
        s: &mut Hosted,
        pass: &mut Pass,
        seq: TurnSeq,
        prompt: String,
        resume: Option<String>,
        plan_only: bool,
    ) {
        match self.try_spawn(s, seq, prompt, resume, plan_only) {
            Ok(process) => pass.inputs.push_back(Input::TurnSpawned { seq, process }),
            Err(reason) => {
                s.supervised = None;
                pass.inputs.push_back(Input::SpawnFailed { seq, reason });
            }
        }
    }

    fn try_spawn(
        &self,
        s: &mut Hosted,
        seq: TurnSeq,
        prompt: String,
        resume: Option<String>,
        plan_only: bool,
    ) -> Result<Process, String> {
        let key = TurnKey::new(turn_key(&s.id, seq))?;
        let folder = s.start.folder.clone();
        make_folder(&folder, self.config.agent_uid)
            .map_err(|e| format!("cannot use the folder {}: {e}", folder.display()))?;
        // The key is on record before anything runs (the `Persist` before
        // this, or the machine's `NoteSpawn`), so a restart after a kill -9
        // in between finds the turn by it.
        s.supervised = Some((seq, TurnRecord::planned(&key)));
        let harness = s.start.harness;
        let turn = command::Turn {
            harness,
            native_id: resume.as_deref(),
            plan_only,
            approvals: sessions::options(&s.start).approvals,
            folder: &folder,
        };
        let spec = command::build(&self.config, &self.programs, &self.secrets, &turn)?;
        let (spec, talker) = spec.into_spawn();
        let mut started = self
            .supervisor
            .start(&key, spec)
            .map_err(|e| e.to_string())?;
        let (pid, start_time) = (started.child.pid(), started.child.start_time());
        let pgid = started.child.pgid();
        let proc_key = ProcKey { pid, start_time };
        let stderr = started.child.stderr.take().expect("piped");
        let stdin = started.child.stdin.take().expect("piped");
        let stdout = started.child.stdout.take();
        let tail = output::spawn_tail(stderr, format!("turn-{pid}-err")).ok();
        // Known as a harness before anything of it can call room-cli.
        self.harness_pids.insert(proc_key, &s.id);
        let rt = self.me.upgrade().expect("the runtime is alive");
        let (writer_rt, writer_handle) = (rt.clone(), s.me.clone());
        let now = TurnNow::new(seq);
        let input = TurnInput::start(stdin, talker, now.clone(), move |input| {
            writer_rt.feed(&writer_handle, input)
        });
        let (handle, tree, child) = (s.me.clone(), started.tree.clone(), started.child);
        let watched = now.clone();
        let followed = input.and_then(|input| {
            let written = input.clone();
            std::thread::Builder::new()
                .name(format!("turn-{pid}"))
                .spawn(move || {
                    let outputs = (written, tail);
                    rt.follow_exit(handle, watched, child, tree, proc_key, outputs)
                })
                .map(|_| input)
        });
        let input = match followed {
            Ok(input) => input,
            Err(e) => {
                // Nobody would follow it or write to it: it must not run.
                self.supervisor.signal(&started.tree, Sig::SIGKILL);
                self.harness_pids.remove(proc_key);
                return Err(format!("cannot follow the turn: {e}"));
            }
        };
        s.supervised = Some((seq, started.tree.record()));
        s.live = Some(Box::new(LiveTurn {
            seq,
            now,
            tree: started.tree,
            input,
            stdout,
            prompt: Some(prompt),
            reader: None,
        }));
        log::info!(
            "{}: {} turn {seq} started (pid {pid})",
            s.id,
            harness.name()
        );
        Ok(Process {
            pid,
            pgid,
            start_time,
        })
    }

    /// `DeliverPrompt`: says the prompt on the turn's stdin, then journals
    /// what the pass has emitted (the turn's start) and only then starts
    /// reading the turn's output, so the start comes before anything the
    /// harness prints.
    pub(super) fn deliver(&self, s: &mut Hosted, pass: &mut Pass, seq: TurnSeq) {
        let rt = self.me.upgrade().expect("the runtime is alive");
        let (id, handle) = (s.id.clone(), s.me.clone());
        let Some(live) = s.live.as_mut().filter(|l| l.seq == seq) else {
            pass.inputs.push_back(Input::PromptUndelivered {
                seq,
                error: "its process is not there".into(),
            });
            return;
        };
        if let Some(prompt) = live.prompt.take() {
            if let Err(lost) = live.input.say(Said::Prompt(prompt)) {
                for carries in lost {
                    undelivered(seq, carries, "its stdin's writer is gone", |input| {
                        pass.inputs.push_back(input)
                    });
                }
            }
        }
        self.flush_events(s, pass);
        let journal = s.journal.clone();
        let Some(live) = s.live.as_mut().filter(|l| l.seq == seq) else {
            return;
        };
        if let Some(stdout) = live.stdout.take() {
            let (input, now) = (live.input.clone(), live.now.clone());
            let reader = std::thread::Builder::new()
                .name(format!("turn-{seq}-out"))
                .spawn(move || rt.read_output(handle, now, journal, stdout, input));
            match reader {
                Ok(r) => live.reader = Some(r),
                Err(e) => log::error!("{id}: cannot read turn {seq}'s output: {e}"),
            }
        }
    }

    /// `Signal`: the signal to everything the turn started, at once; the
    /// grace before SIGKILL is the machine's timer.
    pub(super) fn signal_turn(&self, s: &Hosted, seq: TurnSeq, signal: Signal) {
        let sig = match signal {
            Signal::Term => Sig::SIGTERM,
            Signal::Kill => Sig::SIGKILL,
        };
        match s.live.as_ref().filter(|l| l.seq == seq) {
            Some(l) => {
                let pids = self.supervisor.signal(&l.tree, sig);
                log::info!("{}: {sig} to turn {seq}: {pids:?}", s.id);
            }
            None => log::debug!("{}: {sig} for turn {seq}, which has no process", s.id),
        }
    }

    /// `KillSurvivor`: on the pool, SIGKILL to what the turn's record still
    /// names (its cgroup, or its pid if the start time matches, and its
    /// marked processes), then `SurvivorGone`.
    pub(super) fn kill_survivor(&self, s: &Hosted, seq: TurnSeq, process: Process) {
        let record = s
            .supervised
            .as_ref()
            .filter(|(q, _)| *q == seq)
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| TurnRecord {
                // A record without the supervisor's part: the machine's.
                key: turn_key(&s.id, seq),
                pid: Some(process.pid),
                pgid: Some(process.pgid),
                start_time: Some(process.start_time),
                boot_id: None,
                cgroup: None,
            });
        self.send(Job::Survivor(s.me.clone(), seq, record));
    }

    /// A turn's exit watcher: the harness's exit, the end of what it left
    /// behind, a bounded wait for its output and for its stdin's writer to
    /// report what it could not write, then `TurnEnded`.
    fn follow_exit(
        &self,
        handle: SessionHandle,
        now: TurnNow,
        mut child: Child,
        tree: Tree,
        key: ProcKey,
        (input, tail): (TurnInput, Option<JoinHandle<Tail>>),
    ) {
        let status = child.wait();
        let ended = self.supervisor.terminate(&tree);
        self.harness_pids.remove(key);
        // Taken under the session's lock, so after the pass that spawned
        // the turn (and started its reader, if it got its prompt).
        let reader = handle.upgrade().and_then(|s| {
            let seq = now.get();
            lock(&s)
                .live
                .as_mut()
                .filter(|l| l.seq == seq)?
                .reader
                .take()
        });
        let until = Instant::now() + OUTPUT_WAIT;
        if let Some(r) = reader {
            if join_by(r, until).is_none() {
                log::warn!(
                    "turn {}: its stdout is still open; not waiting for it",
                    tree.key()
                );
            }
        }
        if !input.flush(until) {
            log::warn!(
                "turn {}: its stdin's writer is still writing; not waiting for it",
                tree.key()
            );
        }
        drop(input);
        let detail = tail
            .and_then(|t| join_by(t, until))
            .map(|t| t.text())
            .unwrap_or_default();
        let exit = match status {
            Ok(st) => st
                .code()
                .map(Exit::Code)
                .or_else(|| st.signal().map(Exit::Signal))
                .unwrap_or(Exit::Code(-1)),
            Err(e) => {
                log::error!("turn {}: cannot wait for its harness: {e}", tree.key());
                Exit::Code(-1)
            }
        };
        log::info!("turn {} ended: {exit} ({ended:?})", tree.key());
        let seq = now.get();
        self.feed(&handle, Input::TurnEnded { seq, exit, detail });
    }
}

/// Waits for `thread` until `until`; `None` if it has not finished by then
/// (it is left to finish on its own).
fn join_by<T>(thread: JoinHandle<T>, until: Instant) -> Option<T> {
    while !thread.is_finished() {
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    thread.join().ok()
}

/// Creates `folder` and the folders above it that are missing, never
/// through a symbolic link (see `nofollow`). With a separate agent account
/// (`agent_uid`), each folder created here is handed to that account, so its
/// harness can write in it.
fn make_folder(folder: &Path, agent_uid: Option<u32>) -> Result<(), String> {
    let account = account::for_agent(agent_uid)?;
    nofollow::make_folders(folder, account.map(|a| (a.uid, a.gid)))
        .map(drop)
        .map_err(|e| e.to_string())
}
