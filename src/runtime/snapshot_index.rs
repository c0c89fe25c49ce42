//! Which tree each turn boundary of a session recorded: one JSON line per
//! snapshot in `<state_dir>/snapshots/sessions/<id>.jsonl`, appended by the
//! snapshot lane that took it (the only writer of its session's file), so
//! a turn's diff can be served after a restart. The service's own file,
//! under the state dir the agent cannot write.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use room_machines::session::{Boundary, TurnSeq};
use serde::{Deserialize, Serialize};

use crate::snapshot::TreeId;

/// The most bytes of an index read back: about 100,000 snapshots' lines.
const MAX_INDEX: u64 = 16 << 20;

/// One snapshot of a session's folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Shot {
    /// The turn.
    pub turn: TurnSeq,
    /// Which side of it.
    pub at: Boundary,
    /// The tree recorded, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<TreeId>,
    /// Why no tree was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// A rewind's line (after the turn `turn`, the last that ran): the
    /// turn it put the folder back to; `tree` is the folder after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewound_to: Option<TurnSeq>,
    /// A rewind's line: the folder just before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_rewind: Option<TreeId>,
}

impl Shot {
    /// A turn boundary's line.
    pub(crate) fn boundary(
        turn: TurnSeq,
        at: Boundary,
        tree: Option<TreeId>,
        missing: Option<String>,
    ) -> Shot {
        Shot {
            turn,
            at,
            tree,
            missing,
            rewound_to: None,
            before_rewind: None,
        }
    }
}

/// A session's index file.
#[derive(Debug, Clone)]
pub(crate) struct SnapshotIndex {
    path: PathBuf,
}

impl SnapshotIndex {
    /// The index of session `id` under `state_dir`.
    pub(crate) fn of(state_dir: &Path, id: &str) -> SnapshotIndex {
        SnapshotIndex {
            path: state_dir
                .join("snapshots")
                .join("sessions")
                .join(format!("{id}.jsonl")),
        }
    }

    /// Appends `shot` (made private, its folder made first), durable
    /// before it returns unless it is a turn's `Before`: that one stands
    /// on a warm follow-up's way, and the turn's `After` (an fdatasync of
    /// the same file) makes it durable with itself. A crash between the
    /// two loses only the line, and the turn's diff then says no snapshot
    /// was taken before it.
    pub(crate) fn append(&self, shot: &Shot) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut line = serde_json::to_vec(shot)?;
        line.push(b'\n');
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)?;
        f.write_all(&line)?;
        if shot.at == Boundary::Before && shot.rewound_to.is_none() {
            return Ok(());
        }
        f.sync_data()
    }

    /// Every snapshot recorded, oldest first (a torn or foreign line is
    /// skipped; none when the file is not there).
    pub(crate) fn read(&self) -> std::io::Result<Vec<Shot>> {
        let f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut text = String::new();
        f.take(MAX_INDEX).read_to_string(&mut text)?;
        Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect())
    }

    /// The last snapshot of turn `turn` at `at`, read from the index.
    pub(crate) fn find(&self, turn: TurnSeq, at: Boundary) -> std::io::Result<Option<Shot>> {
        Ok(last_of(&self.read()?, turn, at).cloned())
    }

    /// The last tree recorded after a turn (or a rewind after it), before
    /// turn `before`.
    pub(crate) fn last_after(&self, before: TurnSeq) -> std::io::Result<Option<Shot>> {
        Ok(self
            .read()?
            .into_iter()
            .rev()
            .find(|s| s.at == Boundary::After && s.turn < before))
    }
}

/// The last snapshot of turn `turn` at `at` among `shots` (an index read
/// once for several lookups), not a rewind's.
pub(crate) fn last_of(shots: &[Shot], turn: TurnSeq, at: Boundary) -> Option<&Shot> {
    last_at(shots, turn, at).map(|i| &shots[i])
}

/// Where [`last_of`]'s snapshot is in `shots`.
pub(crate) fn last_at(shots: &[Shot], turn: TurnSeq, at: Boundary) -> Option<usize> {
    shots
        .iter()
        .rposition(|s| s.turn == turn && s.at == at && s.rewound_to.is_none())
}
