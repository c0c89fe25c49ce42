//! One JSON file per record in a folder, each written atomically (temp
//! file, fsync, rename: `room_core::store::write_atomic`), with the records kept
//! in memory. Every change goes through one lock, so a read-modify-write of
//! a record never loses another's change.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Whether `key` is safe as a file name: 1 to 128 of `[A-Za-z0-9_-]`.
pub fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 128
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A folder of records of type `T`, keyed by a file-safe string.
pub struct Records<T> {
    dir: PathBuf,
    map: Mutex<BTreeMap<String, T>>,
}

impl<T: Serialize + DeserializeOwned + Clone> Records<T> {
    /// Opens (creating) `dir` and loads every `<key>.json` in it; a record
    /// that does not parse is logged and skipped.
    pub fn open(dir: &Path) -> std::io::Result<Records<T>> {
        std::fs::create_dir_all(dir)?;
        let mut map = BTreeMap::new();
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let Some(key) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".json"))
                .filter(|k| valid_key(k))
            else {
                continue;
            };
            match std::fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<T>(&b).map_err(|e| e.to_string()))
            {
                Ok(v) => {
                    map.insert(key.to_string(), v);
                }
                Err(e) => log::error!("skipping unreadable record {}: {e}", path.display()),
            }
        }
        Ok(Records {
            dir: dir.to_path_buf(),
            map: Mutex::new(map),
        })
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<String, T>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self, key: &str, value: &T) -> std::io::Result<()> {
        if !valid_key(key) {
            return Err(std::io::Error::other(format!(
                "{key:?} is not a record key"
            )));
        }
        let bytes = serde_json::to_vec_pretty(value)?;
        room_core::store::write_atomic(&self.dir.join(format!("{key}.json")), &bytes)
    }

    /// One record.
    pub fn get(&self, key: &str) -> Option<T> {
        self.lock().get(key).cloned()
    }

    /// Every record, in key order.
    pub fn all(&self) -> Vec<T> {
        self.lock().values().cloned().collect()
    }

    /// Stores `value` under `key` (which must be [`valid_key`]).
    pub fn put(&self, key: &str, value: T) -> std::io::Result<()> {
        let mut map = self.lock();
        self.write(key, &value)?;
        map.insert(key.to_string(), value);
        Ok(())
    }

    /// Changes the record under `key` with `f` and writes it; `None` when
    /// there is none. On a failed write the record stays as it was.
    pub fn update<R>(&self, key: &str, f: impl FnOnce(&mut T) -> R) -> std::io::Result<Option<R>> {
        let mut map = self.lock();
        let Some(current) = map.get(key) else {
            return Ok(None);
        };
        let mut next = current.clone();
        let r = f(&mut next);
        self.write(key, &next)?;
        map.insert(key.to_string(), next);
        Ok(Some(r))
    }

    /// Changes the record under `key` with `f`, starting from `T::default()`
    /// when there is none, and writes it.
    pub fn upsert<R>(&self, key: &str, f: impl FnOnce(&mut T) -> R) -> std::io::Result<R>
    where
        T: Default,
    {
        let mut map = self.lock();
        let mut next = map.get(key).cloned().unwrap_or_default();
        let r = f(&mut next);
        self.write(key, &next)?;
        map.insert(key.to_string(), next);
        Ok(r)
    }

    /// Removes the record; whether there was one.
    pub fn remove(&self, key: &str) -> std::io::Result<bool> {
        let mut map = self.lock();
        if map.remove(key).is_none() {
            return Ok(false);
        }
        match std::fs::remove_file(self.dir.join(format!("{key}.json"))) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_a_reopen_and_bad_keys_are_refused() {
        let dir = std::env::temp_dir().join(format!("rc-records-{}", std::process::id()));
        let r: Records<serde_json::Value> = Records::open(&dir).unwrap();
        r.put("a", serde_json::json!({"n": 1})).unwrap();
        r.put("b", serde_json::json!({"n": 2})).unwrap();
        assert_eq!(r.update("a", |v| v["n"] = 3.into()).unwrap(), Some(()));
        assert_eq!(r.update("zz", |_| ()).unwrap(), None);
        assert!(r.remove("b").unwrap());
        assert!(r.put("../x", serde_json::json!(1)).is_err());
        std::fs::write(dir.join("junk.json"), "not json").unwrap();
        let again: Records<serde_json::Value> = Records::open(&dir).unwrap();
        assert_eq!(again.all(), vec![serde_json::json!({"n": 3})]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
