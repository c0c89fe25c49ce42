//! The content-addressed store: `<state>/snapshots/objects/<2 hex>/<62
//! hex>`, each object named by the sha256 of its bytes, which the service
//! computes itself from the bytes it holds (never taken from the walker),
//! written whole and durably and privately (0600 files, 0700 folders). An
//! object already there is not written again: files, folders' listings and
//! trees are shared across turns and sessions.
//!
//! One snapshot's new objects are a [`Batch`]: each written to a temp file
//! in `objects/tmp`, then all made durable before any is renamed to its
//! name, then the renames made durable. A few (a turn's) are fsync'd each
//! with their folders, all at once (one journal commit for the files, one
//! for the folders); many (a first snapshot's thousands, where
//! an fsync each would cost a journal commit each, 5 ms here) by one
//! `syncfs` before the renames and one after. So a crash leaves temp
//! files at worst, never a named object with other bytes.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use rustc_hash::FxHashSet;

use crate::store::{DIR_MODE, FILE_MODE};

/// Bytes kept in memory before an object being received goes to a temp file.
const SPILL: usize = 4 << 20;
/// The most new objects of one batch fsync'd one by one (more: `syncfs`).
const ONE_BY_ONE: usize = 32;

/// New objects not yet durable under their names: temp files in
/// `objects/tmp` (removed if the batch is dropped uncommitted).
#[derive(Debug, Default)]
pub(crate) struct Batch {
    staged: Vec<(PathBuf, String)>,
    names: FxHashSet<String>,
}

impl Drop for Batch {
    fn drop(&mut self) {
        for (tmp, _) in self.staged.drain(..) {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// A new private file (0600), never one that was there.
fn new_private(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)
}

/// The object store.
#[derive(Debug, Clone)]
pub(crate) struct Objects {
    dir: PathBuf,
}

/// The sha256 of `bytes` as 64 lowercase hex digits.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// Whether `s` is 64 lowercase hex digits.
pub(crate) fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn mkdir_private(dir: &Path) -> io::Result<bool> {
    match std::fs::DirBuilder::new().mode(DIR_MODE).create(dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// fsyncs every file or folder of `paths`, each on a thread of its own,
/// all at once: the file system commits its journal once for the lot (an
/// fsync waits for the commit that holds its inode, and concurrent ones
/// share it) where one after another they would cost a commit each.
fn all_at_once<'a>(paths: impl Iterator<Item = &'a Path>) -> io::Result<()> {
    let paths: Vec<&Path> = paths.collect();
    let sync = |p: &Path| File::open(p)?.sync_all();
    if paths.len() <= 1 {
        return paths.into_iter().try_for_each(sync);
    }
    std::thread::scope(|s| {
        let threads: Vec<_> = paths.iter().map(|p| s.spawn(move || sync(p))).collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(io::Error::other("fsync panicked")))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .collect()
    })
}

impl Objects {
    /// Opens (and makes) the store at `dir`.
    pub(crate) fn open(dir: PathBuf) -> io::Result<Objects> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir.join("tmp"))?;
        Ok(Objects { dir })
    }

    /// Where object `sha` is.
    pub(crate) fn path(&self, sha: &str) -> PathBuf {
        self.dir.join(&sha[..2]).join(&sha[2..])
    }

    /// Whether object `sha` is stored.
    pub(crate) fn has(&self, sha: &str) -> bool {
        self.path(sha).is_file()
    }

    /// Stores `bytes` alone, durably (if not there yet); their sha256.
    #[cfg(test)]
    pub(crate) fn put(&self, bytes: &[u8]) -> io::Result<String> {
        let mut batch = Batch::default();
        let sha = self.stage(&mut batch, bytes)?;
        self.commit(batch)?;
        Ok(sha)
    }

    /// Adds `bytes` to `batch` (if not stored or staged yet); their sha256.
    pub(crate) fn stage(&self, batch: &mut Batch, bytes: &[u8]) -> io::Result<String> {
        let sha = sha256_hex(bytes);
        if !self.has(&sha) && !batch.names.contains(&sha) {
            let tmp = self.temp_path();
            let mut f = new_private(&tmp)?;
            batch.staged.push((tmp, sha.clone()));
            batch.names.insert(sha.clone());
            f.write_all(bytes)?;
        }
        Ok(sha)
    }

    fn temp_path(&self) -> PathBuf {
        self.dir
            .join("tmp")
            .join(uuid::Uuid::new_v4().simple().to_string())
    }

    /// Makes every object of `batch` durable under its name.
    pub(crate) fn commit(&self, mut batch: Batch) -> io::Result<()> {
        let staged = std::mem::take(&mut batch.staged);
        if staged.is_empty() {
            return Ok(());
        }
        let one_by_one = staged.len() <= ONE_BY_ONE;
        if one_by_one {
            all_at_once(staged.iter().map(|(tmp, _)| tmp.as_path()))?;
        } else {
            self.syncfs()?;
        }
        let mut dirs: Vec<PathBuf> = Vec::new();
        let mut new_fan_out = false;
        let mut left = staged.into_iter();
        let renamed = left.by_ref().try_for_each(|(tmp, sha)| {
            let to = self.path(&sha);
            // The fan-out folder is made only when the rename finds it
            // missing: a turn's objects mostly go to folders there already.
            match std::fs::rename(&tmp, &to) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    new_fan_out |= mkdir_private(&self.dir.join(&sha[..2]))?;
                    std::fs::rename(&tmp, &to)?;
                }
                renamed => renamed?,
            }
            dirs.push(to.parent().expect("in a fan-out folder").to_path_buf());
            Ok::<(), io::Error>(())
        });
        for (tmp, _) in left {
            let _ = std::fs::remove_file(tmp);
        }
        renamed?;
        if one_by_one {
            dirs.sort();
            dirs.dedup();
            if new_fan_out {
                dirs.push(self.dir.clone());
            }
            all_at_once(dirs.iter().map(PathBuf::as_path))
        } else {
            self.syncfs()
        }
    }

    /// `syncfs` of the store's file system.
    fn syncfs(&self) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let dir = File::open(self.dir.join("tmp"))?;
        nix::unistd::syncfs(dir.as_raw_fd()).map_err(io::Error::from)
    }

    /// The bytes of object `sha`, checked against its name; at most `max`.
    pub(crate) fn get(&self, sha: &str, max: u64) -> io::Result<Vec<u8>> {
        if !is_sha256(sha) {
            return Err(io::Error::other(format!("{sha:.80} is not a sha256")));
        }
        let mut bytes = Vec::new();
        File::open(self.path(sha))?
            .take(max.saturating_add(1))
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Err(io::Error::other(format!(
                "object {sha} is larger than {max} bytes"
            )));
        }
        if sha256_hex(&bytes) != sha {
            return Err(io::Error::other(format!(
                "object {sha} does not hold the bytes it is named by"
            )));
        }
        Ok(bytes)
    }

    /// A writer for an object received in pieces.
    pub(crate) fn writer(&self) -> ObjectWriter<'_> {
        ObjectWriter {
            objects: self,
            hasher: Sha256::new(),
            buf: Vec::new(),
            spilled: None,
            len: 0,
        }
    }
}

/// An object received in pieces: kept in memory up to 4 MiB, then in a
/// temp file in `objects/tmp`; hashed as it comes.
pub(crate) struct ObjectWriter<'a> {
    objects: &'a Objects,
    hasher: Sha256,
    buf: Vec<u8>,
    spilled: Option<(File, PathBuf)>,
    len: u64,
}

impl ObjectWriter<'_> {
    /// Adds `bytes`.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.hasher.update(bytes);
        self.len += bytes.len() as u64;
        if self.spilled.is_none() && self.buf.len() + bytes.len() > SPILL {
            let tmp = self.objects.temp_path();
            let mut f = new_private(&tmp)?;
            f.write_all(&std::mem::take(&mut self.buf))?;
            self.spilled = Some((f, tmp));
        }
        match &mut self.spilled {
            Some((f, _)) => f.write_all(bytes),
            None => {
                self.buf.extend_from_slice(bytes);
                Ok(())
            }
        }
    }

    /// How many bytes came so far.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Adds the object to `batch` (if not stored or staged yet); its
    /// sha256 and size.
    pub(crate) fn finish(mut self, batch: &mut Batch) -> io::Result<(String, u64)> {
        let sha = format!("{:x}", self.hasher.clone().finalize());
        let objects = self.objects;
        match self.spilled.take() {
            None => {
                objects.stage(batch, &self.buf)?;
            }
            Some((_, tmp)) if objects.has(&sha) || batch.names.contains(&sha) => {
                let _ = std::fs::remove_file(tmp);
            }
            Some((_, tmp)) => {
                batch.staged.push((tmp, sha.clone()));
                batch.names.insert(sha.clone());
            }
        }
        Ok((sha, self.len))
    }
}

impl Drop for ObjectWriter<'_> {
    fn drop(&mut self) {
        if let Some((_, tmp)) = self.spilled.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_named_by_their_bytes_and_checked_when_read() {
        let dir = std::env::temp_dir().join(format!("room-core-objects-{}", uuid::Uuid::new_v4()));
        let objects = Objects::open(dir.clone()).unwrap();
        let sha = objects.put(b"abc").unwrap();
        assert_eq!(
            sha,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(objects.get(&sha, 10).unwrap(), b"abc");
        let mut w = objects.writer();
        let big = vec![7u8; SPILL + 10];
        w.write(&big[..SPILL]).unwrap();
        w.write(&big[SPILL..]).unwrap();
        let mut batch = Batch::default();
        let (big_sha, len) = w.finish(&mut batch).unwrap();
        assert!(
            objects.get(&big_sha, len).is_err(),
            "not there before the commit"
        );
        objects.commit(batch).unwrap();
        assert_eq!(len, big.len() as u64);
        assert_eq!(objects.get(&big_sha, len).unwrap(), big);
        std::fs::write(objects.path(&sha), b"abd").unwrap();
        let e = objects.get(&sha, 10).unwrap_err().to_string();
        assert!(e.contains("does not hold the bytes it is named by"), "{e}");
        assert!(std::fs::read_dir(dir.join("tmp")).unwrap().next().is_none());
        let _ = std::fs::remove_dir_all(dir);
    }
}
