//! The stat cache: per recorded folder, each regular file's path, stat key
//! (device, inode, size, mtime and ctime in ns) and the sha256 of its
//! bytes when it was last read, so a file whose key has not moved is not
//! read again. Kept in memory and in `<state>/snapshots/cache/<sha256 of
//! the folder's path>` (0600, written whole when a walk changed it, not
//! fsync'd, its sha256 at its end), for the next start.
//!
//! A file changed twice within the clock's granularity could keep its key
//! (git's "racy" files): a file read is kept only if its ctime and mtime
//! are more than the clock's step before the walk began ([`settled`]), so
//! any change after it was read moves its ctime; one changed later than
//! that is read again next time (and kept then).
//! Only the cache's own writes are trusted: a cached answer from the walker
//! must name a key held here, and the sha256 comes from here.

use rustc_hash::FxHashMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::objects::{is_sha256, sha256_hex};
use super::protocol::{get_str, StatKey, MAX_PATH};
use sha2::{Digest, Sha256};

use crate::store::FILE_MODE;

/// Writes `bytes` to a temp file beside `path` (0600) and renames it over
/// `path`: a reader sees the old file or the new one, never a mix; no fsync.
fn write_unsynced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let name = path
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

const MAGIC: &[u8; 8] = b"RCSNAPC1";

/// How far a file's timestamps may lag the clock the walk's start is read
/// from, where they have sub-second parts: the kernel stamps files from a
/// clock that steps once a tick (at most 10 ms), so 100 ms is ample.
pub(crate) const RACY: Duration = Duration::from_millis(100);
/// The same where they have none (file systems that keep whole seconds,
/// FAT's two).
pub(crate) const RACY_COARSE: Duration = Duration::from_secs(2);

/// Whether a file read with `key` in a walk begun at `began_ns` (the
/// service's clock, read before the walker started) may be cached: its
/// last change was a clock step or more before the walk, so any later
/// change stamps it with a ctime other than the one in `key`.
pub(crate) fn settled(key: &StatKey, began_ns: i64) -> bool {
    const S: i64 = 1_000_000_000;
    let coarse = key.mtime_ns.rem_euclid(S) == 0 || key.ctime_ns.rem_euclid(S) == 0;
    let step = if coarse { RACY_COARSE } else { RACY };
    let from = began_ns.saturating_sub(step.as_nanos() as i64);
    key.ctime_ns < from && key.mtime_ns < from
}

/// One file the cache knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Known {
    /// Its stat key when it was read.
    pub(crate) key: StatKey,
    /// The sha256 of the bytes read then.
    pub(crate) sha256: String,
    /// The last walk ([`StatCache::walk`]) that saw it (not kept on disk).
    pub(crate) seen: u64,
}

/// One folder's cache. A walk updates it in place: every entry is a fact
/// (a file with this key held these bytes), true whether or not the walk
/// ends well, so a failed walk leaves it valid; a finished one drops
/// the files it did not see ([`StatCache::prune`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StatCache {
    /// Path from the folder -> what was read.
    pub(crate) files: FxHashMap<String, Known>,
    /// The walk under way (its entries' `seen`).
    pub(crate) walk: u64,
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

    /// Starts a walk: what it sees is marked with it.
    pub(crate) fn start_walk(&mut self) {
        self.walk += 1;
    }

    /// After a finished walk: drops the files it did not see; whether any
    /// was dropped.
    pub(crate) fn prune(&mut self) -> bool {
        let (before, walk) = (self.files.len(), self.walk);
        self.files.retain(|_, k| k.seen == walk);
        self.files.len() != before
    }

    /// Keeps the cache in `file`, through a temp file and a rename but
    /// with no fsync: it only saves reads, and a file a crash left torn
    /// fails its checksum and is read as empty.
    pub(crate) fn save(&self, file: &Path) -> io::Result<()> {
        write_unsynced(file, &self.encode())
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(48 + self.files.len() * 120);
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
        let sum = Sha256::digest(&out);
        out.extend_from_slice(&sum);
        out
    }

    fn decode(bytes: &[u8]) -> io::Result<StatCache> {
        let body = bytes
            .len()
            .checked_sub(32)
            .map(|n| bytes.split_at(n))
            .filter(|(body, sum)| Sha256::digest(body).as_slice() == *sum)
            .ok_or_else(|| io::Error::other("a torn stat cache"))?
            .0;
        let mut r = body;
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
            files.insert(
                path,
                Known {
                    key,
                    sha256,
                    seen: 0,
                },
            );
        }
        if !r.is_empty() {
            return Err(io::Error::other("bytes after the stat cache"));
        }
        Ok(StatCache { files, walk: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_changed_within_the_clock_step_is_not_settled() {
        let s = 1_000_000_000i64;
        let key = |ns: i64| StatKey {
            mtime_ns: ns,
            ctime_ns: ns,
            ..StatKey::default()
        };
        let began = 100 * s;
        assert!(settled(&key(began - s / 2 + 7), began));
        assert!(!settled(&key(began - 50_000_000 + 7), began));
        // Whole seconds: the coarse step.
        assert!(!settled(&key(began - s), began));
        assert!(settled(&key(began - 3 * s), began));
    }

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
                seen: 0,
            },
        );
        cache.save(&file).unwrap();
        assert_eq!(StatCache::load(&file), cache);
        std::fs::write(&file, b"RCSNAPC1\0\0\0\x09").unwrap();
        assert_eq!(StatCache::load(&file), StatCache::default());
        // A torn one (its checksum fails) is empty too.
        let mut torn = cache.encode();
        torn[20] ^= 1;
        std::fs::write(&file, torn).unwrap();
        assert_eq!(StatCache::load(&file), StatCache::default());
        let _ = std::fs::remove_dir_all(dir);
    }
}
