//! `POST /v1/sessions/{id}/fork`: a new session that goes on from another
//! after one of its turns: its own folder holds what the parent's held
//! after that turn (the snapshot, written as the agent account), and its
//! conversation is the parent's through that turn (its first process
//! resumes the parent's native session at the cut as a session of its
//! own: claude `--fork-session --resume-session-at`, codex `thread/fork`
//! with `lastTurnId`, an ACP agent `session/fork`, after its latest turn
//! only). The parent does not change. Its options are the
//! parent's unless the body chooses others.

use std::path::Path;

use room_machines::session::{Boundary, Cut, Input, TurnSeq};
use serde_json::Value;

use super::conversation_cut::{self, Mark};
use super::driver::refusal;
use super::snapshot_index::{last_at, SnapshotIndex};
use super::undo_asks::Fork;
use super::Runtime;
use crate::error::Refusal;
use crate::sessions::{lock, Kind};
use crate::snapshot::{Taken, TreeId};

impl Runtime {
    /// Forks session `id` after turn `f.at_turn` into a new session in
    /// `f.folder`: its view, and whether it was made (as a start's).
    pub(crate) fn fork(&self, id: &str, f: Fork) -> Result<(Value, bool), Refusal> {
        let s = self.session(id).ok_or_else(|| Refusal::no_session(id))?;
        if self.snapshots.is_none() {
            return Err(Refusal::new(
                409,
                "snapshots_off",
                "This service records no snapshots (the config's snapshots is false), so no turn's folder can be forked.",
            ));
        }
        let at = f.at_turn;
        // The parent's options as they are now: the model and effort in
        // force (its messages may have chosen others) and its budget.
        let (parent, native, choice, budget) = {
            let h = lock(&s);
            if let Some(why) = h.machine.ended_turn(at) {
                let waiting = h.machine.record().queue.len();
                return Err(refusal(id, why, waiting));
            }
            let r = h.machine.record();
            let choice = h.machine.choice_in_force();
            (h.start.clone(), r.native_id.clone(), choice, r.budget)
        };
        if f.folder.starts_with(&parent.folder) || parent.folder.starts_with(&f.folder) {
            return Err(Refusal::new(
                409,
                "folder_taken",
                format!(
                    "The fork needs a folder of its own, apart from {}'s ({}).",
                    id,
                    parent.folder.display()
                ),
            ));
        }
        let empty = self.empty_folder(&f.folder, at)?;
        let target = self.tree_after(id, at)?;
        let journal = self.journal(id).ok_or_else(|| Refusal::no_session(id))?;
        let uncut = |why: String| {
            Refusal::new(
                409,
                "conversation_uncut",
                format!("The conversation of session {id} cannot be forked after turn {at}: {why}. Nothing was made."),
            )
        };
        if let Some(agent) = parent.agent.as_deref() {
            // What the agent said at start; not known yet, its turn decides.
            if self.installed.agent_offers(agent)["fork"] == false {
                return Err(uncut(format!(
                    "the ACP agent {agent} forks no session (its initialize offered no sessionCapabilities.fork)"
                )));
            }
        }
        let found = conversation_cut::mark(&journal, parent.harness, native.as_deref(), at, true);
        let (native, mark) = match (native, found) {
            (Some(native), Ok(Mark::At(mark))) => (native, mark),
            (_, Err(why)) => return Err(uncut(why)),
            _ => return Err(uncut("it has no native session".into())),
        };
        let mut start = parent.clone();
        start.folder = f.folder.clone();
        start.workspace = f.workspace;
        start.kind = Kind::Thread;
        start.parent = None;
        start.shared_sandbox = false;
        start.request_id = None;
        start.project_copy = false;
        start.prompt = f.prompt;
        start.attachments = Vec::new();
        start.model = f.model.or(choice.model);
        start.effort = f.effort.or(choice.effort);
        start.approvals = f.approvals.unwrap_or(parent.approvals);
        (start.max_cost_usd, start.max_tokens) = match (f.max_cost_usd, f.max_tokens) {
            (None, None) => (budget.max_cost_usd.map(|c| c.usd()), budget.max_tokens),
            chosen => chosen,
        };
        if let Some(Err(why)) = start.effort.map(|e| start.harness.check_effort(e)) {
            return Err(Refusal::new(422, "invalid_field", why));
        }
        self.write_fork_folder(&f.folder, &empty, &target)?;
        let seed = Input::Fork {
            parent: id.to_string(),
            native_id: native,
            cut: Cut {
                after_turn: at,
                at: mark,
                carried_by: None,
                fork: true,
            },
        };
        self.create_seeded(start, Vec::new(), Some(seed))
    }

    /// The tree recorded after turn `turn` of session `id`.
    fn tree_after(&self, id: &str, turn: TurnSeq) -> Result<TreeId, Refusal> {
        let shots = SnapshotIndex::of(&self.config.state_dir, id)
            .read()
            .map_err(|e| {
                Refusal::new(
                    500,
                    "snapshot_unreadable",
                    format!("Turn {turn} of session {id}: its snapshots cannot be read: {e}."),
                )
            })?;
        let shot = last_at(&shots, turn, Boundary::After).map(|i| &shots[i]);
        shot.and_then(|s| s.tree.clone()).ok_or_else(|| {
            let why = shot
                .and_then(|s| s.missing.clone())
                .unwrap_or_else(|| "its harness never had its prompt, or snapshots were off then".into());
            Refusal::new(
                409,
                "not_recorded",
                format!("Turn {turn} of session {id} has no record of its folder after it ({why}), so it cannot be forked."),
            )
        })
    }

    /// `folder`, recorded as the agent account sees it (a folder not there
    /// is empty): its tree, when it holds nothing; the fork writes turn
    /// `at`'s folder there, so it must not hold anyone's work.
    fn empty_folder(&self, folder: &Path, at: TurnSeq) -> Result<TreeId, Refusal> {
        let snapshots = self.snapshots.as_ref().expect("checked by fork");
        let not_empty = || {
            Refusal::new(
                409,
                "folder_not_empty",
                format!(
                    "{} is not empty; the fork writes turn {at}'s folder there, so it takes an empty or new one.",
                    folder.display()
                ),
            )
        };
        match snapshots.take(folder) {
            Taken::Tree { id, skipped } => {
                let entries = snapshots.tree(&id).map(|t| t.entries.len()).unwrap_or(1);
                if entries > 0 || !skipped.is_empty() {
                    return Err(not_empty());
                }
                Ok(id)
            }
            Taken::TooLarge { .. } => Err(not_empty()),
            Taken::Failed { why } => Err(Refusal::new(
                409,
                "folder_unrecorded",
                format!(
                    "{} cannot be looked at ({why}), so the fork cannot be written there.",
                    folder.display()
                ),
            )),
        }
    }

    /// Makes `folder` (as the agent account, no link followed) and writes
    /// tree `target` into it over `empty`, its tree now, as the agent
    /// account.
    fn write_fork_folder(
        &self,
        folder: &Path,
        empty: &TreeId,
        target: &TreeId,
    ) -> Result<(), Refusal> {
        let snapshots = self.snapshots.as_ref().expect("checked by fork");
        let failed = |why: String| {
            Refusal::new(
                500,
                "fork_failed",
                format!(
                    "The fork's folder {} could not be written: {why}.",
                    folder.display()
                ),
            )
        };
        super::turns::make_folder(folder, self.config.agent_uid).map_err(failed)?;
        let restored = snapshots.restore(folder, empty, target).map_err(failed)?;
        if let Some(first) = restored.failed.first() {
            let more = restored.failed.len() - 1;
            return Err(failed(format!(
                "{} ({}){}",
                first.path,
                first.why,
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            )));
        }
        Ok(())
    }
}
