//! Who is calling room-cli: a harness's tool command, a loop's check script,
//! or something Core cannot vouch for. Pure: the runtime reads the ancestry
//! and the caller's cgroup from `/proc` and passes them in.

use serde::{Deserialize, Serialize};

use crate::id::valid_id;

/// The environment variable the website sets on a loop's check script.
pub const LOOP_MARKER: &str = "CLOUDROOM_LOOP";

/// pid 1: init, or a container's first process. Every orphaned process is
/// its child, so its environment says nothing about who is calling: a
/// container whose init sets `CLOUDROOM_LOOP` would otherwise mark every
/// orphan as that loop's script. `/proc` walks stop before it; [`classify`]
/// ignores its environment if an ancestry holds it anyway.
pub const INIT_PID: u32 = 1;

/// What Core could read of one process's environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvView {
    /// `/proc/PID/environ` was readable; the `CLOUDROOM_LOOP` value if set
    /// (an empty value counts as set).
    Readable {
        /// The marker's value, if the process sets it.
        loop_marker: Option<String>,
    },
    /// `/proc/PID/environ` gave EACCES: Core runs as another account.
    Hidden,
}

/// One process of the caller's ancestry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcView {
    /// Its process ID.
    pub pid: u32,
    /// The session whose harness this process is, if Core started it.
    pub harness: Option<String>,
    /// What could be read of its environment.
    pub env: EnvView,
}

/// The caller's identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Caller {
    /// Under this session's harness.
    Harness(String),
    /// Under a loop's check script with this (valid) loop ID.
    Loop(String),
    /// Under a process whose `CLOUDROOM_LOOP` is not a loop ID.
    Malformed(String),
    /// No harness, no readable marker, and some environment was unreadable.
    Hidden,
    /// No harness and no marker.
    Unknown,
}

/// Classifies a caller from the turn whose cgroup holds it and its ancestry,
/// nearest process first.
///
/// `turn_cgroup` is the session whose turn's cgroup holds the caller (the
/// runtime maps `/proc/PID/cgroup` to the turn that owns that cgroup; `None`
/// outside every turn's cgroup, and always in process-group mode). A process
/// in a turn's cgroup is that turn's harness whatever its ancestry or
/// environment: only Core moves processes between those cgroups, so a double
/// fork or a `setsid` leaves the caller in it, where its ancestry and its
/// `CLOUDROOM_LOOP` are the agent's to shape. It wins over everything else.
///
/// Else a harness anywhere in the ancestry wins; else the nearest `CLOUDROOM_LOOP` decides
/// (valid or malformed); else an unreadable environment of the caller itself
/// (the nearest process, which runs as the agent account) makes it `Hidden`.
///
/// Only the caller's own environment counts for `Hidden`: ancestors of other
/// accounts (root's `sudo`, pid 1) are unreadable even where Core runs as the
/// agent account, and the website sets the marker after `sudo`, on agent
/// processes. If Core can read the caller it can read the agent account's
/// processes, so nothing it could not see would have carried a marker.
///
/// The environment of pid 1 ([`INIT_PID`]) never counts, neither as a marker
/// nor as a hidden caller.
pub fn classify(turn_cgroup: Option<&str>, ancestry: &[ProcView]) -> Caller {
    if let Some(session) = turn_cgroup {
        return Caller::Harness(session.to_string());
    }
    if let Some(session) = ancestry.iter().find_map(|p| p.harness.clone()) {
        return Caller::Harness(session);
    }
    let counts = |p: &&ProcView| p.pid != INIT_PID;
    let marker = ancestry.iter().filter(counts).find_map(|p| match &p.env {
        EnvView::Readable { loop_marker } => loop_marker.clone(),
        EnvView::Hidden => None,
    });
    let caller_hidden = ancestry
        .first()
        .filter(counts)
        .is_some_and(|p| p.env == EnvView::Hidden);
    match marker {
        Some(id) if valid_id(&id) => Caller::Loop(id),
        Some(value) => Caller::Malformed(value),
        None if caller_hidden => Caller::Hidden,
        None => Caller::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

    fn plain(pid: u32) -> ProcView {
        ProcView {
            pid,
            harness: None,
            env: EnvView::Readable { loop_marker: None },
        }
    }

    fn marked(pid: u32, value: &str) -> ProcView {
        ProcView {
            env: EnvView::Readable {
                loop_marker: Some(value.into()),
            },
            ..plain(pid)
        }
    }

    #[test]
    fn a_marker_on_an_ancestor_counts_even_if_the_caller_cleared_its_env() {
        let a = [plain(30), marked(20, ID), plain(1)];
        assert_eq!(classify(None, &a), Caller::Loop(ID.into()));
    }

    #[test]
    fn the_nearest_marker_decides() {
        let a = [marked(30, "nope"), marked(20, ID)];
        assert_eq!(classify(None, &a), Caller::Malformed("nope".into()));
    }

    #[test]
    fn a_harness_wins_over_a_nearer_marker() {
        let mut h = plain(10);
        h.harness = Some("cr_seed".into());
        let a = [marked(30, ID), h];
        assert_eq!(classify(None, &a), Caller::Harness("cr_seed".into()));
    }

    #[test]
    fn an_unreadable_caller_environment_gets_its_own_refusal() {
        let hidden = |pid| ProcView {
            env: EnvView::Hidden,
            ..plain(pid)
        };
        // A readable caller with no marker is Unknown (the usual refusal),
        // even when root's ancestors (sudo, pid 1) are unreadable...
        assert_eq!(classify(None, &[plain(30), plain(1)]), Caller::Unknown);
        assert_eq!(classify(None, &[plain(30), hidden(1)]), Caller::Unknown);
        // ...an unreadable caller is Hidden (the protected-machine refusal).
        assert_eq!(classify(None, &[hidden(30), hidden(1)]), Caller::Hidden);
        assert_eq!(classify(None, &[hidden(31)]), Caller::Hidden);
        // A readable marker further up still counts.
        assert_eq!(
            classify(None, &[hidden(30), marked(20, ID)]),
            Caller::Loop(ID.into())
        );
    }

    #[test]
    fn pid_1s_environment_never_marks_a_caller() {
        // A container whose init sets CLOUDROOM_LOOP: its orphans are not
        // that loop's script, whatever the value.
        assert_eq!(classify(None, &[plain(30), marked(1, ID)]), Caller::Unknown);
        assert_eq!(
            classify(None, &[plain(30), marked(1, "nope")]),
            Caller::Unknown
        );
        assert_eq!(classify(None, &[marked(1, ID)]), Caller::Unknown);
        // Nor is an unreadable pid 1 a hidden caller.
        let hidden_init = ProcView {
            env: EnvView::Hidden,
            ..plain(1)
        };
        assert_eq!(classify(None, &[hidden_init]), Caller::Unknown);
        // A marker below it still counts.
        assert_eq!(
            classify(None, &[plain(30), marked(20, ID), marked(1, "nope")]),
            Caller::Loop(ID.into())
        );
    }

    #[test]
    fn a_caller_in_a_turns_cgroup_is_that_sessions_harness_whatever_its_ancestry() {
        // A double-forked tool: no harness above it, a valid marker on it.
        let orphan = [marked(30, ID), plain(1)];
        assert_eq!(classify(None, &orphan), Caller::Loop(ID.into()));
        assert_eq!(
            classify(Some("cr_a"), &orphan),
            Caller::Harness("cr_a".into())
        );
        // A malformed marker, a hidden environment or no ancestry at all
        // change nothing; the cgroup wins over another harness above it too.
        let hidden = ProcView {
            env: EnvView::Hidden,
            ..plain(31)
        };
        let mut other = plain(10);
        other.harness = Some("cr_b".into());
        for a in [
            vec![marked(30, "nope")],
            vec![hidden],
            vec![],
            vec![plain(30), other],
        ] {
            assert_eq!(classify(Some("cr_a"), &a), Caller::Harness("cr_a".into()));
        }
    }

    #[test]
    fn empty_ancestry_is_unknown() {
        assert_eq!(classify(None, &[]), Caller::Unknown);
    }
}
