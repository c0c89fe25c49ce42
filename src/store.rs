//! The persisted state: one JSON file per session under
//! `<state_dir>/sessions/`, written atomically (temp file, fsync, rename,
//! fsync of the folder) so a kill -9 leaves either the old or the new record.
//!
//! Records hold prompts, so the state dir is private: the dir and its
//! `sessions` and `events` folders 0700, records, prompt logs, journals and
//! the token file 0600. [`secure`] repairs what it finds otherwise at start, and removes
//! the temp files a crash left between a write and its rename.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;

/// A private folder's mode.
pub const DIR_MODE: u32 = 0o700;
/// A private file's mode.
pub const FILE_MODE: u32 = 0o600;

/// The session store.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    /// Why the last write to the state dir failed, until one succeeds: the
    /// service serves on a full disk, and says so (`/v1/ready`).
    fault: Arc<Mutex<Option<String>>>,
}

impl Store {
    /// Opens (and creates) `<state_dir>/sessions` and the journals'
    /// `<state_dir>/events`, after [`secure`] has repaired the state dir.
    pub fn open(state_dir: &Path) -> std::io::Result<Store> {
        let dir = state_dir.join("sessions");
        for d in [&dir, &crate::journal::dir(state_dir)] {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(d)?;
        }
        secure(state_dir);
        let store = Store {
            dir,
            fault: Arc::default(),
        };
        // A full disk does not stop the service from starting (the restore
        // writes nothing it needs to come up); it is said at once instead.
        store.probe();
        Ok(store)
    }

    /// Notes that a write to the state dir (`what` names it) failed. Only a
    /// new file written whole (a record, the probe) clears it: an append
    /// into a journal's last page can succeed on a disk with no room left.
    pub fn failed(&self, what: &str, e: &std::io::Error) {
        *self.fault.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(format!("cannot write {what}: {e}"));
    }

    /// Notes the outcome of writing a new file whole.
    fn note(&self, what: &str, outcome: &std::io::Result<()>) {
        match outcome {
            Ok(()) => *self.fault.lock().unwrap_or_else(|e| e.into_inner()) = None,
            Err(e) => self.failed(what, e),
        }
    }

    /// Writes and removes a small file, noting whether the state dir takes
    /// a new file.
    fn probe(&self) {
        let probe = self.dir.join(".probe");
        let outcome = write_private(&probe, b"probe\n");
        let _ = std::fs::remove_file(&probe);
        self.note("the state dir", &outcome);
    }

    /// Why the state dir takes no writes, if its last write failed and a
    /// probe write fails too; `None` once writes succeed again.
    pub fn fault(&self) -> Option<String> {
        let faulty = self
            .fault
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        if faulty {
            self.probe();
        }
        self.fault.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The folder the records are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `value` as `<id>.json` (mode 0600), atomically and durably.
    pub fn save<T: Serialize>(&self, id: &str, value: &T) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(value)?;
        let path = self.dir.join(format!("{id}.json"));
        let outcome = write_private(&path, &bytes);
        self.note(&path.display().to_string(), &outcome);
        outcome
    }

    /// Every stored record as JSON, with its file; unreadable ones are
    /// logged and skipped rather than stopping the service from starting.
    pub fn load_all(&self) -> std::io::Result<Vec<(PathBuf, Value)>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let path = entry?.path();
            if !is_record(&path) {
                continue;
            }
            match std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
            {
                Ok(v) => out.push((path, v)),
                Err(e) => log::error!("skipping unreadable record {}: {e}", path.display()),
            }
        }
        Ok(out)
    }
}

/// The suffix of a spawn note: `<id>.spawning` (see [`Store::note_spawn`]).
const SPAWN_NOTE: &str = "spawning";

impl Store {
    /// Notes that `id` is about to spawn the turn keyed `key`, so a restart
    /// after a kill -9 between the spawn and the record that acknowledges it
    /// still finds (and kills) what the spawn started. Written without
    /// fsync, which keeps a disk flush off the wake path: only the death of
    /// the service has to be survived, and that leaves the page cache
    /// intact; a crash of the machine leaves no process to find.
    pub fn note_spawn(&self, id: &str, key: &str) -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(FILE_MODE)
            .open(self.spawn_note(id))?;
        f.write_all(key.as_bytes())
    }

    /// Drops `id`'s spawn note: the record acknowledges the spawn.
    pub fn drop_spawn_note(&self, id: &str) {
        match std::fs::remove_file(self.spawn_note(id)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => log::warn!("{id}: cannot remove its spawn note: {e}"),
        }
    }

    /// Every spawn note left by the last run, as (session, turn key), each
    /// removed as it is read.
    pub fn take_spawn_notes(&self) -> Vec<(String, String)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        for path in entries.flatten().map(|e| e.path()) {
            if path.extension().and_then(|e| e.to_str()) != Some(SPAWN_NOTE) {
                continue;
            }
            let id = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            let key = std::fs::read_to_string(&path).unwrap_or_default();
            let _ = std::fs::remove_file(&path);
            // A note cut short by a crash of the machine names no process.
            if let (Some(id), false) = (id, key.trim().is_empty()) {
                notes.push((id, key.trim().to_string()));
            }
        }
        notes
    }

    fn spawn_note(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.{SPAWN_NOTE}"))
    }
}

/// A record's file: `<id>.json`, not a hidden temp file.
fn is_record(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()) == Some("json")
        && !path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'))
}

/// A temp file [`write_atomic`] leaves when the process dies between its
/// creation and its rename: `.<name>.<32 hex>.tmp`.
fn is_leftover(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

/// Makes the state dir private and removes crash leftovers: the dir and its
/// `sessions` and `events` folders 0700; records, prompt logs, journals and
/// `token` 0600; `.*.tmp` files in `sessions` removed. Each repair is logged; one that
/// fails (a folder the service does not own) is logged and skipped.
pub fn secure(state_dir: &Path) {
    set_mode(state_dir, DIR_MODE);
    let token = state_dir.join("token");
    if token.exists() {
        set_mode(&token, FILE_MODE);
    }
    for (folder, ext) in [("sessions", "json"), ("events", "jsonl")] {
        let dir = state_dir.join(folder);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        set_mode(&dir, DIR_MODE);
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if folder == "sessions" && is_leftover(&name) {
                match std::fs::remove_file(&path) {
                    Ok(()) => log::info!("removed the crash leftover {}", path.display()),
                    Err(e) => log::warn!("cannot remove {}: {e}", path.display()),
                }
            } else if path.extension().and_then(|e| e.to_str()) == Some(ext)
                || (folder == "sessions" && name.ends_with(".prompts"))
            {
                set_mode(&path, FILE_MODE);
            }
        }
    }
}

/// Sets `path`'s permission bits to `mode` if they differ.
fn set_mode(path: &Path, mode: u32) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.file_type().is_symlink() || meta.permissions().mode() & 0o7777 == mode {
        return;
    }
    let was = meta.permissions().mode() & 0o7777;
    match std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
        Ok(()) => log::info!("{} was {was:o}; made it {mode:o}", path.display()),
        Err(e) => log::warn!("cannot make {} {mode:o}: {e}", path.display()),
    }
}

/// [`write_atomic`] for a file only the service may read (0600).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with_mode(path, bytes, FILE_MODE)
}

/// Writes `bytes` to `path` through a temp file in the same folder: write,
/// fsync, rename over `path`, and fsync the folder when `path` is new, so its
/// creation is durable. Replacing an existing file needs no folder fsync:
/// until the rename is on disk the folder still names the old, complete file,
/// so a crash leaves the old or the new record, never neither. (Each fsync
/// is a journal commit; on the bench machine it is most of a start's cost.)
/// The file is created 0644 (less the umask); see [`write_private`].
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_with_mode(path, bytes, 0o644)
}

fn write_with_mode(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        let replaces = path.exists();
        std::fs::rename(&tmp, path)?;
        if replaces {
            return Ok(());
        }
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rc-store-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn saves_and_loads_records_privately() {
        let dir = temp("save");
        let store = Store::open(&dir).unwrap();
        store.save("a", &serde_json::json!({"x": 1})).unwrap();
        store.save("a", &serde_json::json!({"x": 2})).unwrap();
        let all: Vec<Value> = store.load_all().unwrap().into_iter().map(|r| r.1).collect();
        assert_eq!(all, vec![serde_json::json!({"x": 2})]);
        assert_eq!(mode(&dir.join("sessions/a.json")), FILE_MODE);
        assert_eq!(mode(&dir), DIR_MODE);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn spawn_notes_are_private_and_read_once() {
        let dir = temp("notes");
        let store = Store::open(&dir).unwrap();
        store.note_spawn("cr_a", "cr_a-1").unwrap();
        store.note_spawn("cr_b", "cr_b-3").unwrap();
        store.note_spawn("cr_c", "cr_c-2").unwrap();
        store.drop_spawn_note("cr_c");
        assert_eq!(mode(&dir.join("sessions/cr_a.spawning")), FILE_MODE);
        let mut notes = store.take_spawn_notes();
        notes.sort();
        assert_eq!(
            notes,
            [
                ("cr_a".into(), "cr_a-1".into()),
                ("cr_b".into(), "cr_b-3".into())
            ]
        );
        assert!(store.take_spawn_notes().is_empty());
        assert!(
            store.load_all().unwrap().is_empty(),
            "a note is not a record"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn opening_repairs_modes_and_removes_crash_leftovers() {
        let dir = temp("repair");
        std::fs::create_dir_all(dir.join("sessions")).unwrap();
        std::fs::create_dir_all(dir.join("events")).unwrap();
        let record = dir.join("sessions/cr_a.json");
        let leftover = dir.join("sessions/.cr_a.json.0123abcd.tmp");
        let journal = dir.join("events/cr_a.jsonl");
        let token = dir.join("token");
        for f in [&record, &leftover, &journal, &token] {
            std::fs::write(f, "{}").unwrap();
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        for d in [&dir, &dir.join("sessions"), &dir.join("events")] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let store = Store::open(&dir).unwrap();
        assert!(!leftover.exists());
        for f in [&record, &journal, &token] {
            assert_eq!(mode(f), FILE_MODE, "{}", f.display());
        }
        for d in [&dir, &dir.join("sessions"), &dir.join("events")] {
            assert_eq!(mode(d), DIR_MODE, "{}", d.display());
        }
        assert_eq!(store.load_all().unwrap().len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
