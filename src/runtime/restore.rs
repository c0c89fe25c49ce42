//! The restore at start: every record goes through `Session::restore` (a
//! turn on record is killed first if it survived, a start that had not
//! started waits again, a started session runs its queue), and a record in
//! the format before the session machine is read once and written back in
//! the new one.

use room_machines::session as machine;
use room_machines::timeline::Begin;

use super::driver::Pass;
use super::Runtime;
use crate::sessions::prompt_log::{self, PromptLog};
use crate::sessions::{self, lock, old, Hosted, RecordFile};
use crate::supervise::{TurnKey, TurnRecord};

/// How many unacknowledged spawns are looked for at once at start.
const KILLS_AT_ONCE: usize = 16;

impl Runtime {
    /// Rebuilds every session from the store and carries out what each
    /// restore asks for.
    pub(super) fn restore(&self) -> std::io::Result<()> {
        let mut records = Vec::new();
        for (path, mut value) in self.store.load_all()? {
            let upgraded = old::is_old(&value);
            let id = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            let mut prompts = PromptLog::open(self.store.dir(), id.as_deref().unwrap_or_default());
            let logged = prompts.read();
            // A record from before the prompt log holds its queue whole.
            let whole = value.get("queue").is_some();
            prompt_log::restore_queue(&id.unwrap_or_default(), &mut value, &logged);
            let read = if upgraded {
                old::upgrade(value)
            } else {
                serde_json::from_value::<RecordFile>(value)
            };
            let read = read.map(|mut r| {
                if whole {
                    prompts.adopt(r.core.queue.make_contiguous(), &logged);
                }
                r.core = r.core.with_logged(logged);
                self.complete_from_journal(&mut r);
                (r, prompts)
            });
            match read {
                // The store writes a session's record as `<id>.json` only:
                // another file naming it (a copy, a stray) would be a
                // second, older session with the same ID.
                Ok((r, _)) if path.file_stem() != Some(std::ffi::OsStr::new(&r.id)) => log::error!(
                    "skipping {}: it holds session {}, whose record is {}.json",
                    path.display(),
                    r.id,
                    r.id
                ),
                Ok((r, prompts)) => records.push((r, prompts, upgraded)),
                Err(e) => log::error!("skipping unreadable record {}: {e}", path.display()),
            }
        }
        self.kill_unacknowledged(&records);
        self.remove_orphan_logs(&records);
        let mut restored = Vec::new();
        {
            let mut reg = self.registry();
            for (record, prompts, upgraded) in records {
                let now = self.clock.now();
                let core = record.core.clone();
                let m = machine::Session::restore(
                    self.machine_config(),
                    sessions::options(&record.start),
                    core.clone(),
                    now,
                );
                let shared = Hosted::shared(
                    record.id.clone(),
                    record.start.clone(),
                    m,
                    record.extras.clone(),
                    self.journal_for(&record.id),
                    prompts,
                );
                {
                    let mut s = lock(&shared);
                    let seq = core.turn.as_ref().map(|t| t.seq);
                    s.supervised = seq.zip(record.turn_process.clone());
                    s.recording = self.recording(
                        &s,
                        Begin::Restore {
                            at: now,
                            record: Box::new(core),
                        },
                    );
                }
                reg.insert(&record.id, &record.start, shared.clone());
                restored.push((shared, upgraded));
            }
        }
        for (shared, upgraded) in restored {
            let mut s = lock(&shared);
            if upgraded {
                match self.write(&mut s) {
                    Ok(()) => {
                        log::info!("{}: record rewritten in the session machine's format", s.id)
                    }
                    Err(e) => log::error!("{}: cannot rewrite its record: {e}", s.id),
                }
            }
            self.pass(&mut s, Pass::default());
        }
        Ok(())
    }

    /// Completes `r` from its journal's tail where the journal can know
    /// more than the record (a warm follow-up writes no record, and a warm
    /// turn's first line none either): the turn the crash found, and
    /// whether its harness began its prompt. An unreadable journal leaves
    /// the record as it is.
    fn complete_from_journal(&self, r: &mut RecordFile) {
        if !r.core.reads_journal_tail() {
            return;
        }
        let tail = match self.journal_for(&r.id).turn_tail() {
            Ok(tail) => tail,
            Err(e) => {
                log::error!("{}: cannot read its journal's last turn: {e}", r.id);
                return;
            }
        };
        let before = r.core.turn.as_ref().map(|t| (t.seq, t.reported()));
        r.core = std::mem::take(&mut r.core).with_journal_tail(tail);
        let after = r.core.turn.as_ref().map(|t| (t.seq, t.reported()));
        if after != before {
            log::info!(
                "{}: its journal completes its record: turn {:?} (its harness began it: {:?})",
                r.id,
                after.map(|a| a.0),
                after.map(|a| a.1)
            );
        }
    }

    /// A prompt log whose session has no record belongs to a start that
    /// was never recorded (refused, or cut by a crash before its record):
    /// its prompts were never acknowledged, and they are private.
    fn remove_orphan_logs(&self, records: &[(RecordFile, PromptLog, bool)]) {
        let Ok(entries) = std::fs::read_dir(self.store.dir()) else {
            return;
        };
        for path in entries.flatten().map(|e| e.path()) {
            let orphan = path.extension().is_some_and(|e| e == "prompts")
                && !records
                    .iter()
                    .any(|(r, _, _)| path.file_stem() == Some(std::ffi::OsStr::new(&r.id)));
            if orphan {
                match std::fs::remove_file(&path) {
                    Ok(()) => log::info!("removed {}, which no record names", path.display()),
                    Err(e) => log::warn!("cannot remove {}: {e}", path.display()),
                }
            }
        }
    }

    /// A record whose turn has only its key on record (`TurnRecord::planned`),
    /// or a spawn note (a launch's first turn, `Store::note_spawn`), names a
    /// spawn the machine never heard of: the service died between the spawn
    /// and the record that would have acknowledged it. Such a process never
    /// got its prompt, but it (or what it started) may still run: it is
    /// killed before its session is restored, so nothing of it runs beside
    /// the session's next turn.
    fn kill_unacknowledged(&self, records: &[(RecordFile, PromptLog, bool)]) {
        let noted: Vec<TurnRecord> = self
            .store
            .take_spawn_notes()
            .into_iter()
            .filter_map(|(id, key)| match TurnKey::new(key) {
                Ok(key) => Some(TurnRecord::planned(&key)),
                Err(e) => {
                    log::warn!("{id}: ignoring its spawn note: {e}");
                    None
                }
            })
            .collect();
        let planned: Vec<&TurnRecord> = records
            .iter()
            .filter_map(|(r, _, _)| r.turn_process.as_ref().filter(|t| t.pid.is_none()))
            .chain(&noted)
            .collect();
        for chunk in planned.chunks(KILLS_AT_ONCE) {
            std::thread::scope(|scope| {
                for t in chunk {
                    scope.spawn(|| {
                        let ended = self.supervisor.kill_survivor(t);
                        if ended.forced || !ended.is_clean() {
                            log::warn!(
                                "turn {}: an unacknowledged spawn survived: {ended:?}",
                                t.key
                            );
                        }
                    });
                }
            });
        }
    }
}
