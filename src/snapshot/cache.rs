//! The stat cache: per recorded folder, each regular file's path, stat key
//! (device, inode, size, mtime and ctime in ns) and the sha256 of its
//! bytes when it was last read, so a file whose key has not moved is not
//! read again. Kept in memory and in `<state>/snapshots/cache/<sha256 of
//! the folder's path>` (0600, written whole), for the next start.
//!
//! A file changed twice within the clock's granularity could keep its key
//! (git's "racy" files): an entry whose ctime is less than [`RACY`] before
//! the walk began is not kept, so such a file is read again next time.
//! Only the cache's own writes are trusted: a cached answer from the walker
//! must name a key held here, and the sha256 comes from here.

use rustc_hash::FxHashMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::objects::{is_sha256, sha256_hex};
use super::protocol::{get_str, StatKey, MAX_PATH};
use crate::store::write_private;

const MAGIC: &[u8; 8] = b"RCSNAPC1";

/// How long before the walk a file must have last changed to be cached.
pub(crate) const RACY: Duration = Duration::from_secs(1);

/// One file the cache knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Known {
    /// Its stat key when it was read.
    pub(crate) key: StatKey,
    /// The sha256 of the bytes read then.
    pub(crate) sha256: String,
}

/// One folder's cache.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StatCache {
    /// Path from the folder -> what was read.
    pub(crate) files: FxHashMap<String, Known>,
}

/// The file that keeps `folder`'s cache, in `dir`.
pub(crate) fn file_of(dir: &Path, folder: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    dir.join(sha256_hex(folder.as_os_str().as_bytes()))
}

impl StatCache {
    /// The cache kept in `file`; an empty one when there is none or it
    /// cannot be read (everything is then read again, nothing is wrong).
    pub(crate) fn load(file: &Path) -> StatCache {
        std::fs::read(file)
            .ok()
            .and_then(|b| Self::decode(&b).ok())
            .unwrap_or_default()
    }

    /// Keeps the cache in `file`.
    pub(crate) fn save(&self, file: &Path) -> io::Result<()> {
        write_private(file, &self.encode())
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.files.len() * 120);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.files.len() as u32).to_be_bytes());
        for (path, known) in &self.files {
            out.extend_from_slice(&(path.len() as u32).to_be_bytes());
            out.extend_from_slice(path.as_bytes());
            let k = known.key;
            for n in [k.dev, k.ino, k.size, k.mtime_ns as u64, k.ctime_ns as u64] {
                out.extend_from_slice(&n.to_be_bytes());
            }
            out.extend_from_slice(known.sha256.as_bytes());
        }
        out
    }

    fn decode(mut r: &[u8]) -> io::Result<StatCache> {
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)?;
        if &magic != MAGIC {
            return Err(io::Error::other("not a stat cache"));
        }
        let mut n = [0u8; 4];
        r.read_exact(&mut n)?;
        let mut files = FxHashMap::default();
        for _ in 0..u32::from_be_bytes(n) {
            let path = get_str(&mut r, MAX_PATH)?;
            let mut nums = [0u64; 5];
            for x in nums.iter_mut() {
                let mut b = [0u8; 8];
                r.read_exact(&mut b)?;
                *x = u64::from_be_bytes(b);
            }
            let mut sha = [0u8; 64];
            r.read_exact(&mut sha)?;
            let sha256 = String::from_utf8(sha.to_vec()).map_err(io::Error::other)?;
            if !is_sha256(&sha256) {
                return Err(io::Error::other("not a sha256"));
            }
            let key = StatKey {
                dev: nums[0],
                ino: nums[1],
                size: nums[2],
                mtime_ns: nums[3] as i64,
                ctime_ns: nums[4] as i64,
            };
            files.insert(path, Known { key, sha256 });
        }
        Ok(StatCache { files })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_reads_back_as_saved_and_a_bad_one_is_empty() {
        let dir = std::env::temp_dir().join(format!("room-core-cache-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = file_of(&dir, Path::new("/w/project"));
        let mut cache = StatCache::default();
        cache.files.insert(
            "src/a.rs".into(),
            Known {
                key: StatKey {
                    dev: 1,
                    ino: 2,
                    size: 3,
                    mtime_ns: 4,
                    ctime_ns: 5,
                },
                sha256: sha256_hex(b"x"),
            },
        );
        cache.save(&file).unwrap();
        assert_eq!(StatCache::load(&file), cache);
        std::fs::write(&file, b"RCSNAPC1\0\0\0\x09").unwrap();
        assert_eq!(StatCache::load(&file), StatCache::default());
        let _ = std::fs::remove_dir_all(dir);
    }
}
