//! The machine's `Snapshot`: a session's folder recorded at a turn
//! boundary, on lanes of their own (a snapshot may take up to its
//! deadline, so it never runs on the event pool or under a session's
//! lock). A session's snapshots all go to one lane, in order, so the one
//! after a turn is taken before the one before the next. The lane then
//! journals what the turn changed (`turn_diff`) or what changed between
//! turns (`folder_changed`), and answers `Snapshotted`.

use room_machines::session::{Boundary, Input, TurnSeq};
use serde_json::{json, Value};

use super::driver::Pass;
use super::snapshot_index::{Shot, SnapshotIndex};
use super::snapshot_lanes::Job;
use super::Runtime;
use crate::journal::NewEvent;
use crate::sessions::{lock, Hosted};
use crate::snapshot::{FileChange, Skipped, Taken, TreeId};

/// The most files a diff lists (journalled or served); the rest are
/// counted.
const MAX_LISTED: usize = 1000;
/// The most skipped entries a journalled diff lists.
const MAX_SKIPPED: usize = 50;

impl Runtime {
    /// Carries out `Snapshot`: the session's lane takes it. A full lane
    /// (or none) answers at once, and the turn's diff says why.
    pub(super) fn ask_snapshot(&self, s: &Hosted, pass: &mut Pass, turn: TurnSeq, at: Boundary) {
        let job = Job {
            session: s.me.clone(),
            id: s.id.clone(),
            folder: s.start.folder.clone(),
            turn,
            at,
        };
        let refused = match self.lanes.get() {
            Some(lanes) => lanes.ask(job).err(),
            None => Some(job),
        };
        if refused.is_some() {
            log::warn!(
                "{}: turn {turn}'s snapshot is not taken: too many are waiting",
                s.id
            );
            let why = "not taken: too many snapshots were waiting";
            let shot = Shot::boundary(turn, at, None, Some(why.into()));
            let _ = SnapshotIndex::of(&self.config.state_dir, &s.id).append(&shot);
            if at == Boundary::After {
                let data = json!({ "turn": turn, "missing": why });
                pass.events.push(NewEvent::new("turn_diff", &data));
            }
            pass.inputs.push_back(Input::Snapshotted { turn, at });
        }
    }

    /// Takes one snapshot, records it in the session's index, journals
    /// what changed and answers the machine (on a snapshot lane).
    pub(super) fn snapshot(&self, job: Job) {
        let Some(snapshots) = self.snapshots.as_ref() else {
            return;
        };
        let began = std::time::Instant::now();
        let taken = snapshots.take(&job.folder);
        log::debug!(
            "{}: turn {}'s snapshot ({:?}) took {:?}",
            job.id,
            job.turn,
            job.at,
            began.elapsed()
        );
        let (tree, skipped, missing) = match taken {
            Taken::Tree { id, skipped } => (Some(id), skipped, None),
            Taken::TooLarge { why } => (
                None,
                Vec::new(),
                Some(format!("too large to snapshot: {why}")),
            ),
            Taken::Failed { why } => (None, Vec::new(), Some(format!("snapshot failed: {why}"))),
        };
        let index = SnapshotIndex::of(&self.config.state_dir, &job.id);
        let shot = Shot::boundary(job.turn, job.at, tree.clone(), missing.clone());
        if let Err(e) = index.append(&shot) {
            log::error!(
                "{}: cannot record turn {}'s snapshot: {e}",
                job.id,
                job.turn
            );
        }
        let event = match job.at {
            Boundary::After => {
                let before = index.find(job.turn, Boundary::Before).ok().flatten();
                Some(self.diff_event(&job, before.as_ref(), &shot, &skipped))
            }
            Boundary::Before => {
                let last = index.last_after(job.turn).ok().flatten();
                self.between_event(&job, last.as_ref(), &shot)
            }
        };
        self.answer_snapshot(&job, event);
    }

    /// The `turn_diff` of turn `job.turn`, from the tree before it to the
    /// one after it.
    fn diff_event(
        &self,
        job: &Job,
        before: Option<&Shot>,
        after: &Shot,
        skipped: &[Skipped],
    ) -> NewEvent {
        let mut data = json!({ "turn": job.turn });
        match (before.and_then(|b| b.tree.as_ref()), after.tree.as_ref()) {
            (Some(b), Some(a)) => self.describe(&mut data, b, a),
            _ => data["missing"] = json!(missing(before, after)),
        }
        if !skipped.is_empty() {
            data["skipped"] = json!(&skipped[..skipped.len().min(MAX_SKIPPED)]);
            data["skipped_total"] = json!(skipped.len());
        }
        NewEvent::new("turn_diff", &data)
    }

    /// The `folder_changed` before turn `job.turn`: what changed since the
    /// tree after the turn before, by anyone but a turn. None when nothing
    /// did, or when either side is not recorded.
    fn between_event(&self, job: &Job, last: Option<&Shot>, now: &Shot) -> Option<NewEvent> {
        let (a, b) = (last?.tree.as_ref()?, now.tree.as_ref()?);
        if a == b {
            return None;
        }
        let mut data = json!({ "before_turn": job.turn });
        self.describe(&mut data, a, b);
        Some(NewEvent::new("folder_changed", &data))
    }

    /// Puts the changes from `before` to `after` into `data`: the files
    /// (at most [`MAX_LISTED`]), their count and line totals.
    fn describe(&self, data: &mut Value, before: &TreeId, after: &TreeId) {
        let Some(snapshots) = self.snapshots.as_ref() else {
            return;
        };
        match snapshots.changes(before, after) {
            Ok(files) => summarize(data, &files),
            Err(e) => data["missing"] = json!(format!("the diff could not be read: {e}")),
        }
    }

    /// Journals `event` (if any) and answers the machine, under the
    /// session's lock, in one pass.
    fn answer_snapshot(&self, job: &Job, event: Option<NewEvent>) {
        let Some(s) = job.session.upgrade() else {
            return;
        };
        let mut s = lock(&s);
        let mut pass = Pass::default();
        pass.events.extend(event);
        self.step(
            &mut s,
            Input::Snapshotted {
                turn: job.turn,
                at: job.at,
            },
        );
        self.pass(&mut s, pass);
    }
}

/// Puts `files` into `data` as a diff lists them: the first
/// [`MAX_LISTED`], their count and their line totals.
pub(super) fn summarize(data: &mut Value, files: &[FileChange]) {
    let added: u64 = files.iter().filter_map(|f| f.added).sum();
    let removed: u64 = files.iter().filter_map(|f| f.removed).sum();
    data["files"] = json!(&files[..files.len().min(MAX_LISTED)]);
    data["files_total"] = json!(files.len());
    data["added"] = json!(added);
    data["removed"] = json!(removed);
}

/// Why a turn has no diff, from its snapshots before and after.
pub(super) fn missing(before: Option<&Shot>, after: &Shot) -> String {
    after
        .missing
        .clone()
        .or_else(|| {
            before
                .and_then(|b| b.missing.clone())
                .map(|w| format!("before the turn: {w}"))
        })
        .unwrap_or_else(|| "no snapshot was taken before this turn".to_string())
}
