//! `POST /v1/sessions/{id}/rewind`: the session's folder put back as turn
//! `to_turn` left it, from the tree recorded after that turn.
//!
//! The machine holds the queue first (no turn running or about to start,
//! the last turn's folder recorded: `RewindBegin`), so no turn runs while
//! the folder changes, and lets it go after (`RewindOver`). The folder is
//! recorded first, so nothing in it is lost: what it was is named in the
//! journal's `rewound` and in the index, and the next turn's diff starts
//! from the folder the rewind left. A dry run changes nothing: it lists
//! what would change and, of that, what changed since the turn by anyone
//! but a turn (the conflicts: someone's work the rewind would overwrite).

use std::collections::BTreeSet;

use room_machines::session::{Boundary, Cut, Input, TurnSeq};
use serde_json::{json, Value};

use super::conversation_cut::{self, Mark};
use super::driver::Pass;
use super::snapshot_index::{last_at, Shot, SnapshotIndex};
use super::snapshotting::summarize;
use super::undo_asks::Rewind;
use super::Runtime;
use crate::error::Refusal;
use crate::harness::Harness;
use crate::journal::NewEvent;
use crate::sessions::{lock, SessionRef};
use crate::snapshot::{Snapshots, Taken, TreeId};

/// The most conflicting paths an answer lists; the rest are counted.
const MAX_CONFLICTS: usize = 1000;

/// The folder's half of a rewind, once planned.
struct FilesPlan {
    folder: std::path::PathBuf,
    now: TreeId,
    target: TreeId,
}

impl Runtime {
    /// Rewinds session `id` to how turn `to_turn` left it (its folder, its
    /// conversation, or both), or with `dry_run` says what that would do.
    pub(crate) fn rewind(&self, id: &str, ask: Rewind) -> Result<Value, Refusal> {
        let to_turn = ask.to_turn;
        let s = self.session(id).ok_or_else(|| Refusal::no_session(id))?;
        let snapshots = match (ask.files, self.snapshots.as_ref()) {
            (false, _) => None,
            (true, Some(snapshots)) => Some(snapshots),
            (true, None) => {
                return Err(Refusal::new(
                    409,
                    "snapshots_off",
                    "This service records no snapshots (the config's snapshots is false), so no turn's folder can be put back.",
                ))
            }
        };
        let (folder, ran, harness, native) = {
            let mut h = lock(&s);
            self.command(&mut h, Input::RewindBegin { to_turn }).map_err(|r| {
                if r.code == "session_starting" {
                    Refusal::new(
                        409,
                        "session_starting",
                        format!("Session {id} is still starting; rewind it once its harness has started."),
                    )
                } else {
                    r
                }
            })?;
            let r = h.machine.record();
            let ran = r.next_turn.saturating_sub(1);
            (
                h.start.folder.clone(),
                ran,
                h.start.harness,
                r.native_id.clone(),
            )
        };
        let mut hold = Hold {
            rt: self,
            s: &s,
            event: None,
            cut: None,
        };
        let mut data =
            json!({ "to_turn": to_turn, "dry_run": ask.dry_run, "conversation": "kept" });
        let cut = match ask.conversation {
            false => None,
            true => match self.conversation_cut(id, harness, native.as_deref(), to_turn, ran) {
                Ok(cut) => cut,
                // A dry run says so; the rewind itself changes nothing.
                Err(refusal) if ask.dry_run => {
                    data["conversation_why"] = json!(refusal.message);
                    data["conversation"] = json!("uncut");
                    None
                }
                Err(refusal) => return Err(refusal),
            },
        };
        if ask.conversation && data["conversation"] == "kept" {
            data["conversation"] = json!(if cut.is_some() { "cut" } else { "unchanged" });
        }
        let plan = match snapshots {
            Some(snapshots) => Some(self.plan_files(id, snapshots, folder, to_turn, &mut data)?),
            None => None,
        };
        if ask.dry_run {
            return Ok(data);
        }
        let failure = match (snapshots, plan) {
            (Some(snapshots), Some(plan)) => {
                self.restore_files(id, snapshots, plan, ran, to_turn, &mut data)
            }
            _ => None,
        };
        hold.cut = cut;
        hold.event = Some(NewEvent::new("rewound", &data));
        drop(hold);
        match failure {
            None => Ok(data),
            Some(why) => Err(Refusal::new(
                500,
                "rewind_failed",
                format!("The rewind of session {id} to turn {to_turn} stopped part way: {why}. Its rewound event says what the folder holds now."),
            )),
        }
    }

    /// Where the conversation is cut after turn `to_turn` (none when
    /// nothing follows it), from the journal.
    fn conversation_cut(
        &self,
        id: &str,
        harness: Harness,
        native: Option<&str>,
        to_turn: TurnSeq,
        ran: TurnSeq,
    ) -> Result<Option<Cut>, Refusal> {
        if to_turn == ran {
            return Ok(None);
        }
        let journal = self.journal(id).ok_or_else(|| Refusal::no_session(id))?;
        match conversation_cut::mark(&journal, harness, native, to_turn, false) {
            Ok(Mark::At(at)) => Ok(Some(Cut {
                after_turn: to_turn,
                at,
                carried_by: None,
                fork: false,
            })),
            Ok(Mark::Nothing) => Ok(None),
            Err(why) => Err(Refusal::new(
                409,
                "conversation_uncut",
                format!("The conversation of session {id} cannot be cut after turn {to_turn}: {why}. Nothing was changed."),
            )),
        }
    }

    /// The folder's half: what would change and the conflicts, into
    /// `data`; the trees to restore between.
    fn plan_files(
        &self,
        id: &str,
        snapshots: &Snapshots,
        folder: std::path::PathBuf,
        to_turn: TurnSeq,
        data: &mut Value,
    ) -> Result<FilesPlan, Refusal> {
        let index = SnapshotIndex::of(&self.config.state_dir, id);
        let shots = index.read().map_err(|e| unreadable(id, to_turn, e))?;
        let not_recorded = |why: &str| {
            Refusal::new(
                409,
                "not_recorded",
                format!("Turn {to_turn} of session {id} has no record of its folder after it ({why}), so the folder cannot be put back as it left it."),
            )
        };
        let Some(at) = last_at(&shots, to_turn, Boundary::After) else {
            return Err(not_recorded(
                "its harness never had its prompt, or snapshots were off then",
            ));
        };
        let Some(target) = shots[at].tree.clone() else {
            let why = shots[at].missing.clone().unwrap_or_default();
            return Err(not_recorded(&why));
        };
        let (now, skipped) = match snapshots.take(&folder) {
            Taken::Tree { id, skipped } => (id, skipped),
            Taken::TooLarge { why } | Taken::Failed { why } => {
                return Err(Refusal::new(
                    409,
                    "folder_unrecorded",
                    format!("The folder of session {id} cannot be recorded now ({why}); a rewind could lose what is in it, so nothing was changed."),
                ));
            }
        };
        let files = snapshots
            .changes(&now, &target)
            .map_err(|e| unreadable(id, to_turn, e))?;
        let (mut conflicts, complete) = conflicts(snapshots, &shots[at + 1..], &target, &now);
        // Only what the rewind would change: work of someone's that it
        // overwrites or removes.
        let touched: BTreeSet<&str> = files
            .iter()
            .flat_map(|f| std::iter::once(f.path.as_str()).chain(f.from.as_deref()))
            .collect();
        conflicts.retain(|p| touched.contains(p.as_str()));
        data["conflicts"] = json!(conflicts.iter().take(MAX_CONFLICTS).collect::<Vec<_>>());
        data["conflicts_total"] = json!(conflicts.len());
        data["conflicts_complete"] = json!(complete);
        summarize(data, &files);
        if !skipped.is_empty() {
            // Entries a snapshot cannot record (a FIFO, an unreadable
            // file) are neither saved nor removed: a rewind leaves them.
            data["left"] = json!(&skipped[..skipped.len().min(MAX_CONFLICTS)]);
        }
        Ok(FilesPlan {
            folder,
            now,
            target,
        })
    }

    /// Puts the folder back, records it after and indexes the rewind; what
    /// it did goes into `data`. Why it stopped part way, if it did.
    fn restore_files(
        &self,
        id: &str,
        snapshots: &Snapshots,
        plan: FilesPlan,
        ran: TurnSeq,
        to_turn: TurnSeq,
        data: &mut Value,
    ) -> Option<String> {
        let FilesPlan {
            folder,
            now,
            target,
        } = plan;
        data["before_tree"] = json!(now);
        let restored = snapshots.restore(&folder, &now, &target);
        let after = match snapshots.take(&folder) {
            Taken::Tree { id, .. } => Some(id),
            _ => None,
        };
        let mut line = Shot::boundary(ran, Boundary::After, after.clone(), None);
        line.rewound_to = Some(to_turn);
        line.before_rewind = Some(now);
        if after.is_none() {
            line.missing = Some("the folder could not be recorded after the rewind".into());
        }
        let index = SnapshotIndex::of(&self.config.state_dir, id);
        if let Err(e) = index.append(&line) {
            log::error!("{id}: cannot record its rewind to turn {to_turn}: {e}");
        }
        data["tree"] = json!(after);
        match restored {
            Ok(r) => {
                data["written"] = json!(r.written);
                data["deleted"] = json!(r.deleted);
                data["failed"] = json!(r.failed);
                None
            }
            Err(why) => {
                data["error"] = json!(why);
                Some(why)
            }
        }
    }
}

fn unreadable(id: &str, turn: TurnSeq, e: std::io::Error) -> Refusal {
    Refusal::new(
        500,
        "snapshot_unreadable",
        format!("Turn {turn} of session {id}: its snapshots cannot be read: {e}."),
    )
}

/// The machine's hold on the queue for one rewind: dropped, it journals
/// the rewind's event (if any) and lets the queue go (from the cut, if
/// the conversation was cut), in one pass under the session's lock, on
/// every way out.
struct Hold<'a> {
    rt: &'a Runtime,
    s: &'a SessionRef,
    event: Option<NewEvent>,
    /// Where the conversation is cut, once the rewind is done.
    cut: Option<Cut>,
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        let mut h = lock(self.s);
        let mut pass = Pass::default();
        pass.events.extend(self.event.take());
        let cut = self.cut.take();
        self.rt.step(&mut h, Input::RewindOver { cut });
        self.rt.pass(&mut h, pass);
    }
}

/// The paths changed since the tree `target` by anyone but a turn: between
/// turns (from the tree after one to the tree before the next), before a
/// rewind, and from the last of those to `now`; from the index's `shots`
/// after `target`'s. A turn whose folder was not recorded before it has
/// all of its changes counted (they cannot be told apart). Whether every
/// gap could be compared (a snapshot not taken leaves one unknown).
fn conflicts(
    snapshots: &Snapshots,
    shots: &[Shot],
    target: &TreeId,
    now: &TreeId,
) -> (BTreeSet<String>, bool) {
    let mut paths = BTreeSet::new();
    let mut complete = true;
    let mut gap = |a: Option<&TreeId>, b: Option<&TreeId>| match (a, b) {
        (Some(a), Some(b)) if a == b => {}
        (Some(a), Some(b)) => match snapshots.changes(a, b) {
            Ok(files) => {
                for f in files {
                    paths.extend(f.from);
                    paths.insert(f.path);
                }
            }
            Err(_) => complete = false,
        },
        _ => complete = false,
    };
    let mut last_after = Some(target.clone());
    let mut before: Option<(TurnSeq, Option<TreeId>)> = None;
    for shot in shots {
        if let Some(pre) = &shot.before_rewind {
            gap(last_after.as_ref(), Some(pre));
            last_after = shot.tree.clone();
            continue;
        }
        match shot.at {
            Boundary::Before => {
                gap(last_after.as_ref(), shot.tree.as_ref());
                before = Some((shot.turn, shot.tree.clone()));
            }
            Boundary::After => {
                let recorded_before = before
                    .as_ref()
                    .is_some_and(|(t, tree)| *t == shot.turn && tree.is_some());
                if !recorded_before {
                    gap(last_after.as_ref(), shot.tree.as_ref());
                }
                last_after = shot.tree.clone();
            }
        }
    }
    gap(last_after.as_ref(), Some(now));
    (paths, complete)
}
