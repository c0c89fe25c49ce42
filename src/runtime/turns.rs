//! A turn's effects, carried out with the supervisor: spawn (its own
//! process group, and cgroup where there is one, the key on record first)
//! and hand the process to the poller (harness_io: its pipes, its exit, the
//! end of what it left), hand the prompt over on stdin, signal the whole
//! tree, kill a survivor of the last run. A turn costs no thread of its
//! own: the poller watches it, and its work (turn_output.rs) runs on the
//! event pool.

use std::path::Path;

use nix::sys::signal::Signal as Sig;
use room_machines::session::{Input, ModelChoice, Process, Signal, TurnSeq};

use super::driver::Pass;
use super::harness_io::{self, stdin::undelivered};
use super::job::Job;
use super::spawn_order::SpawnOrder;
use super::Runtime;
use crate::agent::turn_files::TurnFile;
use crate::harness::options::Options as HarnessOptions;
use crate::harness::speech::Said;
use crate::harness::{account, command};
use crate::nofollow;
use crate::procfs::ProcKey;
use crate::sessions::live_turn::LiveTurn;
use crate::sessions::turn_now::TurnNow;
use crate::sessions::{self, turn_key, Hosted};
use crate::supervise::{TurnKey, TurnRecord};

impl Runtime {
    /// `SpawnTurn`: makes the folder, puts the turn's key on record, starts
    /// the harness through the supervisor and answers `TurnSpawned` (or
    /// `SpawnFailed` with why).
    pub(super) fn spawn_turn(
        &self,
        s: &mut Hosted,
        pass: &mut Pass,
        seq: TurnSeq,
        order: SpawnOrder,
    ) {
        match self.try_spawn(s, seq, order) {
            Ok(process) => pass.inputs.push_back(Input::TurnSpawned { seq, process }),
            Err(reason) => {
                s.supervised = None;
                pass.inputs.push_back(Input::SpawnFailed { seq, reason });
            }
        }
    }

    /// claude's MCP config for the process of turn `key`, written where
    /// only the agent account reads it; none for a session without MCP
    /// servers, or for codex (its thread's config holds them).
    fn mcp_file(&self, s: &Hosted, key: &TurnKey) -> Result<Option<TurnFile>, String> {
        let Some(servers) = &s.start.mcp_servers else {
            return Ok(None);
        };
        if s.start.harness != crate::harness::Harness::Claude {
            return Ok(None);
        }
        let files = self.turn_files.files().map_err(|e| {
            format!("its MCP servers cannot be given to claude: no folder for their config ({e})")
        })?;
        let bytes = crate::harness::mcp::claude_config(servers).to_string();
        let name = format!("{}.mcp.json", key.as_str());
        TurnFile::write(&files, &name, bytes.as_bytes())
            .map(Some)
            .map_err(|e| format!("cannot write its MCP servers' config: {e}"))
    }

    fn try_spawn(
        &self,
        s: &mut Hosted,
        seq: TurnSeq,
        order: SpawnOrder,
    ) -> Result<Process, String> {
        let SpawnOrder {
            prompt,
            attachments,
            resume,
            cut,
            plan_only,
            choice,
        } = order;
        let key = TurnKey::new(turn_key(&s.id, seq))?;
        let folder = s.start.folder.clone();
        make_folder(&folder, self.config.agent_uid)
            .map_err(|e| format!("cannot use the folder {}: {e}", folder.display()))?;
        // The key is on record before anything runs (the `Persist` before
        // this, or the machine's `NoteSpawn`), so a restart after a kill -9
        // in between finds the turn by it.
        s.supervised = Some((seq, TurnRecord::planned(&key)));
        let harness = s.start.harness;
        let file = self.mcp_file(s, &key)?;
        let turn = command::Turn {
            harness,
            agent: s.start.agent.as_deref(),
            native_id: resume.as_deref(),
            cut: cut.as_ref().map(|c| c.at.as_str()),
            fork: cut.as_ref().is_some_and(|c| c.fork),
            plan_only,
            approvals: sessions::options(&s.start).approvals,
            folder: &folder,
            options: HarnessOptions {
                model: choice.model.as_deref(),
                effort: choice.effort,
                instructions: s.start.instructions.as_deref(),
            },
            mcp: s
                .start
                .mcp_servers
                .as_ref()
                .map(|servers| (servers, file.as_ref().map(TurnFile::path))),
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
        let pipes = (
            started.child.stdin.take().expect("piped"),
            started.child.stdout.take().expect("piped"),
            started.child.stderr.take().expect("piped"),
        );
        // Known as a harness before anything of it can call room-cli.
        self.harness_pids.insert(proc_key, &s.id);
        let now = TurnNow::new(seq);
        let watched = self.io.watch(harness_io::Turn {
            child: started.child,
            tree: started.tree.clone(),
            pipes,
            talker,
            now: now.clone(),
            key: proc_key,
            handle: s.me.clone(),
            journal: s.journal.clone(),
            schedule: {
                let jobs = self.events.clone();
                Box::new(move |work| jobs.send(Job::Turn(work)).is_ok())
            },
        });
        let (input, work) = match watched {
            Ok(parts) => parts,
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
            id: work.id,
            now,
            tree: started.tree,
            input,
            held: Some(work),
            prompt: Some((prompt, attachments)),
            file,
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
    /// what the pass has emitted (the turn's start) and only then lets the
    /// turn's output be read, so the start comes before anything the
    /// harness prints. The harness may answer the prompt and exit while
    /// the start is being journalled: its output's work is told before
    /// the prompt is said, so that its end waits for the release with its
    /// lines instead of dropping them.
    pub(super) fn deliver(&self, s: &mut Hosted, pass: &mut Pass, seq: TurnSeq) {
        let Some(live) = s.live.as_mut().filter(|l| l.seq == seq) else {
            pass.inputs.push_back(Input::PromptUndelivered {
                seq,
                error: "its process is not there".into(),
            });
            return;
        };
        let held = live.held.take();
        if let Some(work) = &held {
            work.handing_over();
        }
        if let Some((text, attachments)) = live.prompt.take() {
            let said = self.images(&s.id, &attachments).map(|images| Said::Prompt {
                text,
                images,
                switch: ModelChoice::default(),
            });
            let live = s.live.as_mut().expect("checked above");
            match said.map(|said| live.input.say(said)) {
                Ok(Ok(())) => {}
                Ok(Err(lost)) => {
                    for carries in lost {
                        undelivered(seq, carries, "its stdin takes no more lines", |input| {
                            pass.inputs.push_back(input)
                        });
                    }
                }
                // The turn ends; its output is still let go below.
                Err(error) => pass
                    .inputs
                    .push_back(Input::PromptUndelivered { seq, error }),
            }
        }
        self.flush_events(s, pass);
        if let Some(work) = held {
            work.release();
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

    /// `AbandonTree`: SIGKILL did not end the turn's tree in time; the
    /// watcher stops waiting for what is left (the poller logs it), and
    /// the turn ends once its harness has exited and its pipes are read.
    pub(super) fn abandon_tree(&self, s: &Hosted, seq: TurnSeq) {
        match s.live.as_ref().filter(|l| l.seq == seq) {
            Some(l) => {
                log::warn!(
                    "{}: turn {seq} is still there after SIGKILL; giving it up",
                    s.id
                );
                self.io.give_up(l.id);
            }
            None => log::debug!("{}: turn {seq}, given up, has no process", s.id),
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
}

/// Creates `folder` and the folders above it that are missing, never
/// through a symbolic link (see `nofollow`). With a separate agent account
/// (`agent_uid`), each folder created here is handed to that account, so its
/// harness can write in it.
pub(super) fn make_folder(folder: &Path, agent_uid: Option<u32>) -> Result<(), String> {
    let account = account::for_agent(agent_uid)?;
    nofollow::make_folders(folder, account.map(|a| (a.uid, a.gid)))
        .map(drop)
        .map_err(|e| e.to_string())
}
