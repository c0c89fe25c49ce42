//! Supervision: a turn is everything its harness started, and nothing of it
//! outlives its owner.
//!
//! - [`Supervisor::start`] spawns a turn's process (as cheaply as
//!   posix_spawn, see [`spawn`]) leading a session of its own (no
//!   controlling terminal), marked with `ROOM_CORE_TURN=<key>`, and in
//!   cgroup mode in a cgroup of its own.
//! - [`Supervisor::signal`] sends a signal to the whole tree at once and
//!   returns: the service's turns are ended by the session machine's
//!   signals, its grace between them.
//! - The [`watcher`] watches the trees of harnesses that have exited,
//!   without a signal or a clock: it tells what its first look found left
//!   behind and when nothing is left (removing the cgroup), or gives a tree
//!   up when told.
//! - `Supervisor::terminate` (and `terminate_all`, one grace for all),
//!   built only for the tests (`ending.rs`), is the same with a grace of
//!   the supervisor's own: SIGTERM to the whole tree, SIGKILL to what is
//!   left after `kill_grace_ms`, and it returns when nothing of it is left.
//! - [`Supervisor::kill_survivor`] kills, after a restart, what a persisted
//!   [`TurnRecord`] still names (a pid only if its start time matches).
//!
//! The tree is a cgroup v2 per turn where the service can make one
//! ([`cgroup`]), else a session, process group and marker search under
//! PR_SET_CHILD_SUBREAPER ([`group`]). Reaping: [`reap`]. Output: [`output`].

pub mod cgroup;
// Ending a tree on a clock of the supervisor's own: the service's turns are
// ended by the session machine's signals and grace, so only the tests (of
// the supervision modes themselves) step trees to their end this way.
#[cfg(any(test, feature = "_internal_test_exports"))]
pub mod ending;
pub(crate) mod group;
mod members;
pub mod output;
pub mod process;
pub(crate) mod reap;
mod signalling;
pub mod spawn;
pub mod watcher;
mod watching;

use std::collections::HashMap;
use std::fmt;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

pub use crate::config::Supervision;
pub use process::KILL_WAIT;
pub use spawn::{spawn, Account, Child, Leader, SpawnError, SpawnSpec};

use cgroup::CgroupRoot;
use group::{Ids, Numbers, Orphans};
use process::Stat;

/// The environment variable that marks every process of a turn.
pub const TURN_MARKER: &str = "ROOM_CORE_TURN";

/// The longest pause between two looks at a tree being ended, killed or
/// watched.
const MAX_POLL: Duration = Duration::from_millis(20);

/// A turn's name: it names its cgroup (`room-core/<key>`) and marks its
/// processes, so a restarted service finds them from the persisted record.
/// 1 to 200 characters of `A-Z a-z 0-9 . _ -`, not starting with `.`; the
/// runtime uses `<session>-<seq>`. Unique per turn, never reused.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TurnKey(String);

impl TurnKey {
    /// Checks `key`'s shape.
    pub fn new(key: impl Into<String>) -> Result<TurnKey, String> {
        let key = key.into();
        let ok = !key.is_empty()
            && key.len() <= 200
            && !key.starts_with('.')
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(TurnKey(key))
        } else {
            Err(format!(
                "turn key {key:?} is not 1 to 200 of A-Z a-z 0-9 . _ - (not starting with .)"
            ))
        }
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `ROOM_CORE_TURN=<key>`, as it appears in /proc/PID/environ.
    fn marker(&self) -> Vec<u8> {
        format!("{TURN_MARKER}={}", self.0).into_bytes()
    }
}

impl fmt::Display for TurnKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a turn's tree is found by, chosen once at start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// A cgroup v2 per turn, below this root.
    Cgroup(CgroupRoot),
    /// Sessions, process groups and markers; why there is no cgroup.
    ProcessGroups {
        /// The reason, for the log line.
        why: String,
    },
}

/// What to persist of a turn, before it is acknowledged, so that a restart
/// after kill -9 can kill what survives ([`Supervisor::kill_survivor`]).
/// Persist [`TurnRecord::planned`] before the spawn and the full record
/// after it: a crash in between still finds the turn by its key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// The turn's key.
    pub key: String,
    /// The turn's process.
    #[serde(default)]
    pub pid: Option<u32>,
    /// Its process group.
    #[serde(default)]
    pub pgid: Option<u32>,
    /// Its start time, `/proc/PID/stat` field 22.
    #[serde(default)]
    pub start_time: Option<u64>,
    /// The boot it ran in (`/proc/sys/kernel/random/boot_id`).
    #[serde(default)]
    pub boot_id: Option<String>,
    /// Its cgroup, in cgroup mode.
    #[serde(default)]
    pub cgroup: Option<PathBuf>,
}

impl TurnRecord {
    /// The record of a turn about to be spawned: its key only.
    pub fn planned(key: &TurnKey) -> TurnRecord {
        TurnRecord {
            key: key.0.clone(),
            pid: None,
            pgid: None,
            start_time: None,
            boot_id: Some(process::boot_id().to_string()),
            cgroup: None,
        }
    }
}

/// A running turn's tree: what `terminate` needs. Cheap to clone; share it
/// with whoever may stop the turn.
#[derive(Debug, Clone)]
pub struct Tree {
    key: TurnKey,
    pid: u32,
    start_time: u64,
    cgroup: Option<PathBuf>,
    pidfd: Option<Arc<OwnedFd>>,
}

impl Tree {
    /// The turn's key.
    pub fn key(&self) -> &TurnKey {
        &self.key
    }

    /// The turn's process (the harness); also its process group ID.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The turn's cgroup, in cgroup mode.
    pub fn cgroup(&self) -> Option<&std::path::Path> {
        self.cgroup.as_deref()
    }

    /// What to persist.
    pub fn record(&self) -> TurnRecord {
        TurnRecord {
            key: self.key.0.clone(),
            pid: Some(self.pid),
            pgid: Some(self.pid),
            start_time: Some(self.start_time),
            boot_id: Some(process::boot_id().to_string()),
            cgroup: self.cgroup.clone(),
        }
    }

    fn signal_leader(&self, signal: Signal) {
        if let Some(fd) = &self.pidfd {
            let _ = process::pidfd_signal(fd.as_fd(), signal);
        } else {
            process::signal_exact(self.pid, self.start_time, signal);
        }
    }
}

/// A started turn: its tree (for `terminate` and the record) and its
/// process (pipes and exit status, for whoever follows the turn).
#[derive(Debug)]
pub struct Turn {
    /// The tree.
    pub tree: Tree,
    /// The harness process.
    pub child: Child,
}

/// How a tree ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ended {
    /// SIGKILL was needed (the grace ran out, or a survivor was killed).
    pub forced: bool,
    /// Pids still running at the bound (empty when all is gone).
    pub left: Vec<u32>,
    /// What went wrong, if anything (a cgroup that could not be removed).
    pub problem: Option<String>,
}

impl Ended {
    /// Nothing of the tree is left and nothing went wrong.
    pub fn is_clean(&self) -> bool {
        self.left.is_empty() && self.problem.is_none()
    }
}

/// Starts turns and ends them whole. One per service; `Send + Sync`.
#[derive(Debug)]
pub struct Supervisor {
    mode: Mode,
    grace: Duration,
    may_escalate: bool,
}

/// Why the service must not start with `mode` and this agent account:
/// with `agent_uid` another account than the service's, process groups
/// cannot hold the boundary (a tool that leaves its session, clears
/// `ROOM_CORE_TURN` and double-forks outlives stop), unless the operator
/// accepts that (`allow_process_group_with_agent_uid`). `None`: it may.
pub fn boundary_refusal(config: &crate::config::Config, mode: &Mode) -> Option<String> {
    match mode {
        Mode::ProcessGroups { why } => config.process_group_refusal(why),
        Mode::Cgroup(_) => None,
    }
}

impl Supervisor {
    /// Chooses the mode (`auto`: a cgroup where one can be made), becomes a
    /// subreaper in process-group mode, starts the reaper and logs the
    /// choice once. Fails only when `cgroup` is asked for and impossible.
    pub fn new(setting: Supervision, grace: Duration) -> Result<Supervisor, String> {
        Supervisor::with_mode(Supervisor::choose(setting)?, grace)
    }

    /// The mode `setting` gives on this machine (`auto`: a cgroup where one
    /// can be made); an error only when `cgroup` is asked for and
    /// impossible.
    pub fn choose(setting: Supervision) -> Result<Mode, String> {
        Ok(match setting {
            Supervision::ProcessGroup => Mode::ProcessGroups {
                why: "supervision is \"process_group\" in the config".into(),
            },
            Supervision::Cgroup => Mode::Cgroup(CgroupRoot::find().map_err(|why| {
                format!("supervision is \"cgroup\" in the config, but no cgroup can be made: {why}")
            })?),
            Supervision::Auto => match CgroupRoot::find() {
                Ok(root) => Mode::Cgroup(root),
                Err(why) => Mode::ProcessGroups { why },
            },
        })
    }

    fn with_mode(mode: Mode, grace: Duration) -> Result<Supervisor, String> {
        if matches!(mode, Mode::ProcessGroups { .. }) {
            if let Err(e) = group::become_subreaper() {
                log::warn!("cannot become a child subreaper ({e}): orphans of turns go to init");
            }
        }
        reap::start_sweeper();
        let sup = Supervisor {
            mode,
            grace,
            may_escalate: false,
        };
        log::info!("supervision: {}", sup.describe());
        Ok(sup)
    }

    /// From the config's `supervision`, `kill_grace_ms` and
    /// `agent_may_escalate`; refuses process groups with another agent
    /// account ([`boundary_refusal`]).
    pub fn from_config(config: &crate::config::Config) -> Result<Supervisor, String> {
        let mode = Supervisor::choose(config.supervision)?;
        if let Some(why) = boundary_refusal(config, &mode) {
            return Err(why);
        }
        let grace = Duration::from_millis(config.kill_grace_ms);
        let sup = Supervisor::with_mode(mode, grace)?;
        Ok(sup.escalation(config.agent_may_escalate))
    }

    /// Lets turns gain privileges (see [`SpawnSpec::may_escalate`]): for
    /// sandboxes that give the agent sudo. Off by default.
    pub fn escalation(mut self, may_escalate: bool) -> Supervisor {
        self.may_escalate = may_escalate;
        self
    }

    /// `cgroup v2 at <path>` or `process groups (<why no cgroup>)`.
    pub fn describe(&self) -> String {
        match &self.mode {
            Mode::Cgroup(root) => format!("cgroup v2 at {}", root.base.display()),
            Mode::ProcessGroups { why } => format!("process groups ({why})"),
        }
    }

    /// The mode chosen.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// The grace [`terminate`](Self::terminate) keeps between SIGTERM and
    /// SIGKILL (the service's turns have the session machine's).
    pub fn grace(&self) -> Duration {
        self.grace
    }

    /// Starts turn `key`: `spec` leading a session of its own (whatever
    /// its `leader` says: no controlling terminal, and no process of it can
    /// join the service's process group), plus the marker in its
    /// environment, the supervisor's escalation setting and, in cgroup
    /// mode, a new cgroup `room-core/<key>` (which must not exist yet).
    pub fn start(&self, key: &TurnKey, mut spec: SpawnSpec) -> Result<Turn, SpawnError> {
        spec.set_env(TURN_MARKER, key.as_str());
        spec.leader = Leader::Session;
        spec.may_escalate |= self.may_escalate;
        spec.cgroup = match &self.mode {
            Mode::Cgroup(root) => Some(root.create(key.as_str()).map_err(|e| {
                let step = format!(
                    "cannot create the cgroup {}",
                    root.dir(key.as_str()).display()
                );
                SpawnError::new(&spec.program, Some(step), e)
            })?),
            Mode::ProcessGroups { .. } => None,
        };
        let child = spawn::spawn(&spec).inspect_err(|_| {
            if let Some(dir) = &spec.cgroup {
                let _ = cgroup::remove(dir, Instant::now());
            }
        })?;
        let tree = Tree {
            key: key.clone(),
            pid: child.pid(),
            start_time: child.start_time(),
            cgroup: spec.cgroup,
            pidfd: child.pidfd(),
        };
        Ok(Turn { tree, child })
    }

    /// After a restart: kills whatever of `record`'s turn still runs, with
    /// SIGKILL (its owner is gone; nothing waits for it to wind down), and
    /// returns when it is gone (bounded by [`KILL_WAIT`]). The cgroup is
    /// killed whole and removed; the pid (with its session and group) only
    /// if its start time matches; marked processes anywhere. Nothing from
    /// an earlier boot is looked for (nothing of it can run).
    pub fn kill_survivor(&self, record: &TurnRecord) -> Ended {
        let mut ended = Ended::default();
        let Ok(key) = TurnKey::new(record.key.clone()) else {
            ended.problem = Some(format!("the record's key {:?} is invalid", record.key));
            return ended;
        };
        if record
            .boot_id
            .as_deref()
            .is_some_and(|b| b != process::boot_id())
        {
            return ended;
        }
        let give_up = Instant::now() + KILL_WAIT;
        let dir = record
            .cgroup
            .clone()
            .filter(|d| cgroup::is_turn_dir(d, key.as_str()))
            .or_else(|| match &self.mode {
                Mode::Cgroup(root) => Some(root.dir(key.as_str())),
                Mode::ProcessGroups { .. } => None,
            })
            .filter(|d| d.exists());
        if let Some(dir) = dir {
            self.kill_cgroup(&dir, give_up, &mut ended);
        }
        let (leader, leader_start) = match (record.pid, record.start_time) {
            (Some(pid), Some(start)) => (pid, start),
            _ => (0, 0),
        };
        let numbers = match process::stat(leader) {
            _ if leader == 0 => Numbers::Ignored,
            Some(s) if s.start_time == leader_start => Numbers::Trusted,
            Some(_) => Numbers::Ignored,
            None => Numbers::WithMarker,
        };
        let marker = key.marker();
        let ids = Ids {
            leader,
            leader_start,
            numbers,
            orphans: Orphans::Anywhere,
        };
        let mut known = HashMap::new();
        let mut pause = Duration::from_millis(1);
        loop {
            let table = process::snapshot();
            let mut has_marker = |pid| process::environ_has(pid, &marker) == Some(true);
            let alive: Vec<Stat> = group::members(&table, &ids, &mut known, &mut has_marker)
                .into_iter()
                .filter(|p| !p.is_gone())
                .collect();
            if alive.is_empty() {
                break;
            }
            ended.forced = true;
            for p in &alive {
                process::signal_exact(p.pid, p.start_time, Signal::SIGKILL);
            }
            if Instant::now() >= give_up {
                ended.left = alive.iter().map(|p| p.pid).collect();
                break;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(MAX_POLL);
        }
        if ended.forced {
            log::info!("turn {key}: killed what survived the last run: {ended:?}");
        }
        ended
    }

    fn kill_cgroup(&self, dir: &std::path::Path, give_up: Instant, ended: &mut Ended) {
        let mut pause = Duration::from_millis(1);
        while cgroup::populated(dir).unwrap_or(false) {
            ended.forced = true;
            if let Err(e) = cgroup::kill(dir) {
                ended.problem = Some(format!("cannot kill {}: {e}", dir.display()));
            }
            if Instant::now() >= give_up {
                ended.left = cgroup::procs(dir);
                return;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(MAX_POLL);
        }
        if let Err(e) = cgroup::remove(dir, give_up) {
            ended.problem = Some(format!("cannot remove {}: {e}", dir.display()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_keys_are_cgroup_names() {
        assert!(TurnKey::new("0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b-7").is_ok());
        for bad in ["", ".x", "..", "a/b", "a b", "a\nb", &"x".repeat(201)] {
            assert!(TurnKey::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn supervision_reads_as_the_config_spells_it() {
        let v: Vec<Supervision> =
            serde_json::from_str(r#"["auto", "cgroup", "process_group"]"#).unwrap();
        assert_eq!(
            v,
            vec![
                Supervision::Auto,
                Supervision::Cgroup,
                Supervision::ProcessGroup
            ]
        );
        assert!(serde_json::from_str::<Supervision>(r#""cgroups""#).is_err());
    }

    #[test]
    fn a_record_round_trips_and_a_planned_one_has_only_its_key() {
        let key = TurnKey::new("s-1").unwrap();
        let planned = TurnRecord::planned(&key);
        assert_eq!((planned.pid, planned.cgroup.as_ref()), (None, None));
        let json = serde_json::to_string(&planned).unwrap();
        assert_eq!(serde_json::from_str::<TurnRecord>(&json).unwrap(), planned);
        let old: TurnRecord = serde_json::from_str(r#"{"key": "s-1", "pid": 5}"#).unwrap();
        assert_eq!(old.pid, Some(5));
    }

    #[test]
    fn process_groups_with_another_agent_account_are_refused_unless_accepted() {
        use crate::config::Config;
        let me = nix::unistd::geteuid().as_raw();
        let other = if me == 65534 { 65533 } else { 65534 };
        let fallback = Mode::ProcessGroups {
            why: "no cgroup2 file system is mounted".into(),
        };
        let mut config = Config {
            agent_uid: Some(other),
            ..Config::default()
        };
        let why = boundary_refusal(&config, &fallback).expect("refused");
        assert!(
            why.starts_with(&format!(
                "agent_uid {other} is another account than the service's, but turns would \
                 be supervised by process groups (no cgroup2 file system is mounted)"
            )),
            "{why}"
        );
        let cgroup = Mode::Cgroup(CgroupRoot {
            mount: "/sys/fs/cgroup".into(),
            mount_root: "/".into(),
            base: "/sys/fs/cgroup/room-core".into(),
        });
        assert_eq!(
            boundary_refusal(&config, &cgroup),
            None,
            "a cgroup holds it"
        );
        config.allow_process_group_with_agent_uid = true;
        assert_eq!(boundary_refusal(&config, &fallback), None, "accepted");
        config.allow_process_group_with_agent_uid = false;
        config.agent_uid = Some(me);
        assert_eq!(boundary_refusal(&config, &fallback), None, "no switch");
        config.agent_uid = None;
        assert_eq!(
            boundary_refusal(&config, &fallback),
            None,
            "no agent account"
        );
    }
}
