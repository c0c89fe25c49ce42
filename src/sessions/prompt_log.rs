//! A session's prompt log: `<state_dir>/sessions/<id>.prompts`, one JSON
//! line per accepted prompt (`{"id":N,"text":"…"}`), appended and
//! fdatasync'd before the message that brought it is answered.
//!
//! A queued message changes nothing else on disk, so its durable write is
//! one append whatever the queue holds; the session's record, written when
//! anything else changes, names its waiting prompts by number only
//! ([`queued_ranges`]) and their texts stay here. Reading a session back
//! joins the two: the record's waiting prompts, then every logged prompt
//! accepted after the record was written (`Record::with_logged`).
//!
//! The log only grows between record writes: once a written record names
//! no waiting prompt it is emptied, and one that holds mostly prompts that
//! no longer wait is rewritten (a temp file and a rename) with the waiting
//! ones only. A line a crash cut short is a prompt whose message was never
//! answered: it is dropped when the log is read.

use std::io::{BufRead, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use room_machines::session::{Prompt, PromptId};
use serde_json::Value;

use crate::store::{write_private, FILE_MODE};

/// How large a log grows before it is worth rewriting: below this, prompts
/// that no longer wait cost less than the rewrite.
const COMPACT_FROM: u64 = 4 << 20;

/// One session's prompt log.
#[derive(Debug)]
pub(crate) struct PromptLog {
    path: PathBuf,
    /// Its size in bytes as this service last wrote it.
    len: u64,
    /// Every waiting prompt's text is in the log, so a record may name them
    /// by number only. Not so for a record written before the log existed
    /// until its queue is appended here ([`PromptLog::adopt`]).
    pub complete: bool,
}

impl PromptLog {
    /// The log of session `id` in the records' folder `dir`.
    pub(crate) fn open(dir: &Path, id: &str) -> PromptLog {
        let path = dir.join(format!("{id}.prompts"));
        let len = std::fs::metadata(&path).map_or(0, |m| m.len());
        PromptLog {
            path,
            len,
            complete: true,
        }
    }

    /// Appends the waiting prompts of a record written before the log
    /// existed (its queue held whole) that the log lacks, so later records
    /// can name them by number; until that succeeds the record keeps them
    /// whole.
    pub(crate) fn adopt(&mut self, queue: &[Prompt], logged: &[Prompt]) {
        self.complete = queue
            .iter()
            .filter(|p| !logged.iter().any(|l| l.id == p.id))
            .all(|p| match self.append(p) {
                Ok(_) => true,
                Err(e) => {
                    log::error!("cannot log prompt {} in {}: {e}", p.id, self.path.display());
                    false
                }
            });
    }

    /// Its file (the tests reopen it).
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `prompt` durably: its line is written and fdatasync'd, and
    /// the folder too when the append created the file. The log's size
    /// before it, for [`PromptLog::truncate`].
    pub(crate) fn append(&mut self, prompt: &Prompt) -> std::io::Result<u64> {
        let mut line = serde_json::to_vec(prompt)?;
        line.push(b'\n');
        let created = !self.path.exists();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(FILE_MODE)
            .open(&self.path)?;
        let before = f.metadata()?.len();
        let written = f.write_all(&line).and_then(|()| f.sync_data());
        if let Err(e) = written {
            // Nothing half written stays behind to be read as a prompt.
            let _ = f.set_len(before);
            return Err(e);
        }
        if created {
            if let Some(dir) = self.path.parent() {
                std::fs::File::open(dir)?.sync_all()?;
            }
        }
        self.len = before + line.len() as u64;
        Ok(before)
    }

    /// Cuts the log back to `len` bytes: an append whose command was undone.
    pub(crate) fn truncate(&mut self, len: u64) -> std::io::Result<()> {
        let f = std::fs::OpenOptions::new().write(true).open(&self.path)?;
        f.set_len(len)?;
        f.sync_data()?;
        self.len = len;
        Ok(())
    }

    /// After the session's record was written with `waiting` in its queue:
    /// a log none of whose prompts wait any more is emptied, and a large
    /// one that mostly holds prompts that no longer wait is rewritten with
    /// the waiting ones. Either is safe to lose in a crash: the record
    /// names what waits, and a logged prompt it does not name and numbered
    /// below its `next_prompt` is never read back.
    pub(crate) fn compact<'a>(
        &mut self,
        waiting: impl ExactSizeIterator<Item = &'a Prompt> + Clone,
    ) {
        if self.len == 0 {
            return;
        }
        let outcome = if waiting.len() == 0 {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&self.path)
                .and_then(|f| f.set_len(0))
        } else {
            let live: u64 = waiting.clone().map(|p| p.text.len() as u64 + 32).sum();
            if self.len < COMPACT_FROM || self.len < 2 * live {
                return;
            }
            let mut bytes = Vec::new();
            for p in waiting {
                serde_json::to_writer(&mut bytes, p).expect("a prompt serialises");
                bytes.push(b'\n');
            }
            write_private(&self.path, &bytes)
        };
        match outcome {
            Ok(()) => self.len = std::fs::metadata(&self.path).map_or(0, |m| m.len()),
            Err(e) => log::warn!("cannot compact {}: {e}", self.path.display()),
        }
    }

    /// Removes the log (a start that could not be recorded).
    pub(crate) fn remove(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        self.len = 0;
    }

    /// Every whole prompt in the log, in order; a line cut short by a
    /// crash, or one that is not a prompt, is skipped (the latter logged).
    /// A number logged twice (an append whose undoing failed, then the
    /// number given again) is the later prompt's.
    pub(crate) fn read(&self) -> Vec<Prompt> {
        let mut prompts = self.read_lines();
        let mut seen = std::collections::HashSet::new();
        prompts.reverse();
        prompts.retain(|p| seen.insert(p.id));
        prompts.reverse();
        prompts
    }

    fn read_lines(&self) -> Vec<Prompt> {
        let Ok(f) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        let mut prompts = Vec::new();
        let mut reader = std::io::BufReader::new(f);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) if line.last() != Some(&b'\n') => break,
                Ok(_) => match serde_json::from_slice::<Prompt>(&line) {
                    Ok(p) => prompts.push(p),
                    Err(e) => log::error!("{}: skipping a line: {e}", self.path.display()),
                },
                Err(e) => {
                    log::error!("cannot read {}: {e}", self.path.display());
                    break;
                }
            }
        }
        prompts
    }
}

/// The waiting prompts' numbers as the record keeps them: ascending runs
/// `[first, last]`, so a long queue of consecutive prompts costs one pair.
pub(crate) fn queued_ranges<'a>(queue: impl IntoIterator<Item = &'a Prompt>) -> Vec<[PromptId; 2]> {
    let mut ranges: Vec<[PromptId; 2]> = Vec::new();
    for p in queue {
        match ranges.last_mut() {
            Some(r) if r[1].checked_add(1) == Some(p.id) => r[1] = p.id,
            _ => ranges.push([p.id, p.id]),
        }
    }
    ranges
}

/// A record as written: its queue's texts out (in the log), its waiting
/// prompts by number in `queued`.
pub(crate) fn strip_queue(record: &mut Value) {
    let Some(fields) = record.as_object_mut() else {
        return;
    };
    let queue: Vec<Prompt> = fields
        .remove("queue")
        .and_then(|q| serde_json::from_value(q).ok())
        .unwrap_or_default();
    fields.insert("queued".into(), serde_json::json!(queued_ranges(&queue)));
}

/// A record as read back: the waiting prompts it names by number, with
/// their texts from `logged`, put back as its queue (a record from before
/// the log holds its queue whole and is left as it is). A named prompt the
/// log lacks is logged and left out: its text is gone.
pub(crate) fn restore_queue(id: &str, record: &mut Value, logged: &[Prompt]) {
    let Some(fields) = record.as_object_mut() else {
        return;
    };
    let Some(ranges) = fields.remove("queued") else {
        return;
    };
    let ranges: Vec<[PromptId; 2]> = serde_json::from_value(ranges).unwrap_or_default();
    let wanted = |id: PromptId| ranges.iter().any(|[a, b]| (*a..=*b).contains(&id));
    let queue: Vec<&Prompt> = logged.iter().filter(|p| wanted(p.id)).collect();
    let named: u64 = ranges.iter().map(|[a, b]| b.saturating_sub(*a) + 1).sum();
    if (queue.len() as u64) < named {
        log::error!(
            "{id}: its record names {named} waiting prompts and its prompt log holds {}; the others are lost",
            queue.len()
        );
    }
    fields.insert("queue".into(), serde_json::json!(queue));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(id: PromptId, text: &str) -> Prompt {
        Prompt {
            id,
            text: text.into(),
            choice: Default::default(),
            attachments: Vec::new(),
        }
    }

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rc-prompts-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn appended_prompts_read_back_and_a_cut_line_is_dropped() {
        let dir = temp("append");
        let mut log = PromptLog::open(&dir, "cr_a");
        let before = log.append(&prompt(1, "one\nline")).unwrap();
        assert_eq!(before, 0);
        let at = log.append(&prompt(2, "two")).unwrap();
        log.append(&prompt(3, "three")).unwrap();
        assert_eq!(
            log.read(),
            [prompt(1, "one\nline"), prompt(2, "two"), prompt(3, "three")]
        );
        // An undone append goes; a torn last line is never a prompt.
        log.truncate(at).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(log.path())
            .unwrap();
        f.write_all(b"{\"id\":2,\"te").unwrap();
        assert_eq!(
            PromptLog::open(&dir, "cr_a").read(),
            [prompt(1, "one\nline")]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_record_keeps_its_waiting_prompts_by_number_and_reads_back_whole() {
        let queue = [
            prompt(4, "a"),
            prompt(5, "b"),
            prompt(6, "c"),
            prompt(9, "d"),
        ];
        assert_eq!(queued_ranges(&queue), [[4, 6], [9, 9]]);
        let mut record = serde_json::json!({"id": "cr_a", "queue": queue, "next_prompt": 10});
        strip_queue(&mut record);
        assert_eq!(
            record,
            serde_json::json!({"id": "cr_a", "queued": [[4, 6], [9, 9]], "next_prompt": 10})
        );
        let logged = [
            prompt(1, "gone"),
            prompt(4, "a"),
            prompt(5, "b"),
            prompt(6, "c"),
            prompt(9, "d"),
            prompt(10, "later"),
        ];
        restore_queue("cr_a", &mut record, &logged);
        assert_eq!(record["queue"], serde_json::json!(queue));
        // A record from before the log keeps its queue as it is.
        let mut old = serde_json::json!({"queue": [prompt(1, "x")]});
        restore_queue("cr_a", &mut old, &[]);
        assert_eq!(old["queue"][0]["text"], "x");
    }

    #[test]
    fn a_log_with_nothing_waiting_is_emptied_and_a_mostly_dead_one_rewritten() {
        let dir = temp("compact");
        let mut log = PromptLog::open(&dir, "cr_a");
        log.append(&prompt(1, "x")).unwrap();
        log.compact([].iter());
        assert_eq!(std::fs::metadata(log.path()).unwrap().len(), 0);
        let big = "y".repeat(1 << 20);
        for id in 1..=5 {
            log.append(&prompt(id, &big)).unwrap();
        }
        let waiting = [prompt(5, &big)];
        log.compact(waiting.iter());
        assert_eq!(log.read(), waiting);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
