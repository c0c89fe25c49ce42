//! The persisted state: one JSON file per session under
//! `<state_dir>/sessions/`, written atomically (temp file, fsync, rename,
//! fsync of the folder) so a kill -9 leaves either the old or the new record.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The session store.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// Opens (and creates) `<state_dir>/sessions`.
    pub fn open(state_dir: &Path) -> std::io::Result<Store> {
        let dir = state_dir.join("sessions");
        std::fs::create_dir_all(&dir)?;
        Ok(Store { dir })
    }

    /// Writes `value` as `<id>.json`, atomically.
    pub fn save<T: Serialize>(&self, id: &str, value: &T) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(value)?;
        write_atomic(&self.dir.join(format!("{id}.json")), &bytes)
    }

    /// Every stored record; unreadable ones are logged and skipped rather
    /// than stopping the service from starting.
    pub fn load_all<T: DeserializeOwned>(&self) -> std::io::Result<Vec<T>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let path = entry?.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            match std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
            {
                Ok(v) => out.push(v),
                Err(e) => log::error!("skipping unreadable record {}: {e}", path.display()),
            }
        }
        Ok(out)
    }
}

/// Writes `bytes` to `path` through a temp file in the same folder: write,
/// fsync, rename over `path`, and fsync the folder when `path` is new, so its
/// creation is durable. Replacing an existing file needs no folder fsync:
/// until the rename is on disk the folder still names the old, complete file,
/// so a crash leaves the old or the new record, never neither. (Each fsync
/// is a journal commit; on the bench machine it is most of a start's cost.)
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
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

    #[test]
    fn saves_and_loads_records() {
        let dir = std::env::temp_dir().join(format!("rc-store-{}", std::process::id()));
        let store = Store::open(&dir).unwrap();
        store.save("a", &serde_json::json!({"x": 1})).unwrap();
        store.save("a", &serde_json::json!({"x": 2})).unwrap();
        let all: Vec<serde_json::Value> = store.load_all().unwrap();
        assert_eq!(all, vec![serde_json::json!({"x": 2})]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
