//! What one spawn is asked to do, as plain data: the program, its
//! arguments and environment, the account, what it leads and its cgroup.

use std::ffi::OsString;
use std::path::PathBuf;
#[cfg(test)]
use std::sync::Arc;

/// The account a turn runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// The user ID (real, effective and saved).
    pub uid: u32,
    /// The primary group ID.
    pub gid: u32,
    /// The supplementary groups (empty: none).
    pub groups: Vec<u32>,
}

/// What the new process leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leader {
    /// A process group of its own (`setpgid(0, 0)`), in the service's
    /// session and so on its controlling terminal: for children of the
    /// service's own. About 6 µs.
    ProcessGroup,
    /// A session of its own (`setsid`; also a group of its own, and no
    /// controlling terminal): what every turn is (`Supervisor::start`).
    /// Where the kernel's scheduler autogroups are on
    /// (`/proc/sys/kernel/sched_autogroup_enabled`, as on this VM) a new
    /// session makes a new scheduler task group, which costs 0.4 to 0.7 ms
    /// here, more than the rest of the spawn.
    Session,
}

/// Everything one spawn needs, as plain data.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    /// The program: a path, or a bare name looked up in the `PATH` of
    /// `env` (the service's `PATH` when `env` has none).
    pub program: PathBuf,
    /// The arguments after argv\[0\] (which is `program` as given).
    pub args: Vec<OsString>,
    /// The whole environment: nothing of the service's is inherited.
    pub env: Vec<(OsString, OsString)>,
    /// The working directory, entered as `account`.
    pub cwd: PathBuf,
    /// The account to switch to before exec; `None` keeps the service's.
    pub account: Option<Account>,
    /// A process group (the default) or a session of its own.
    pub leader: Leader,
    /// A cgroup v2 directory to start in (joined before anything else can
    /// run in the child, so even its first fork is inside).
    pub cgroup: Option<PathBuf>,
    /// Whether the process may gain privileges (a sandbox that gives the
    /// agent sudo). When false, the default, it runs with
    /// `PR_SET_NO_NEW_PRIVS` (setuid programs and file capabilities grant
    /// nothing), and when it switches `account`, with empty capability
    /// bounding, inheritable and ambient sets.
    pub may_escalate: bool,
    /// Whether the process is killed (SIGKILL) when the thread that spawned
    /// it ends (`PR_SET_PDEATHSIG`, set after the account switch, which
    /// would clear it): for a short check the service runs for itself on a
    /// thread that waits for it, so the check never outlives the service.
    /// Never for a turn: its spawning thread is a pool worker, and a turn
    /// survives its service on purpose (the restart finds and ends it).
    pub dies_with_spawner: bool,
    /// Tests only: ways to make the child misbehave.
    #[cfg(test)]
    pub(crate) test: TestKnobs,
}

/// Tests only: ways to make the child misbehave.
#[cfg(test)]
#[derive(Debug, Clone, Default)]
pub(crate) struct TestKnobs {
    /// The child stops itself (SIGSTOP) right before execve; the spawning
    /// thread does not act on the stop while this is true.
    pub stop_before_exec: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// The child closes descriptors as it does where close_range is
    /// unknown.
    pub close_by_listing: bool,
}

impl SpawnSpec {
    /// A spec with no arguments, an empty environment, the service's
    /// account, a process group of its own, no cgroup, no way to gain
    /// privileges and no parent-death signal.
    pub fn new(program: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> SpawnSpec {
        SpawnSpec {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: cwd.into(),
            account: None,
            leader: Leader::ProcessGroup,
            cgroup: None,
            may_escalate: false,
            dies_with_spawner: false,
            #[cfg(test)]
            test: TestKnobs::default(),
        }
    }

    /// Sets `key` in the environment, replacing any earlier value.
    pub fn set_env(&mut self, key: impl Into<OsString>, value: impl Into<OsString>) {
        let key = key.into();
        self.env.retain(|(k, _)| *k != key);
        self.env.push((key, value.into()));
    }
}
