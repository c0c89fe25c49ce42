//! Snapshots of a session's folder at turn boundaries, and the diffs
//! between them (ARCHITECTURE.md §17).
//!
//! A snapshot records every regular file's bytes and permission bits,
//! symbolic links as links (their targets kept, never followed) and
//! folders (so empty ones survive), by paths relative to the folder with
//! `/`. FIFOs, sockets and devices are named in [`Taken::Tree`]'s
//! `skipped` with their kind and never opened; so are files the walk may
//! not read, names that are not UTF-8, and files that changed while they
//! were read. The `.git` folder and the rest of [`Limits::ignore`] are left
//! out without a word per file.
//!
//! The store is `<state_dir>/snapshots/`: content-addressed objects
//! (`objects/`, [`objects`]) for files' bytes and folders' listings
//! ([`tree`]), shared across turns and sessions, so a turn costs what it
//! changed; and a stat cache per folder (`cache/`, [`cache`]), so a file
//! whose stat has not moved is not read again.
//!
//! The service never reads the agent's folder itself: the walk runs in a
//! helper process, the service's own binary as `room-core
//! --snapshot-walk` ([`walker_main`]), started as the agent account
//! ([`take`]), and its answer ([`protocol`]) is hostile input, bounded and
//! checked. The same helper runs when there is no agent account, so there
//! is one code path.
//!
//! [`Snapshots::changes`] and [`Snapshots::unified`] compare two trees
//! ([`diff`], [`unified`]).

mod cache;
mod costs;
mod diff;
mod helper;
mod objects;
mod protocol;
mod reach;
mod restore;
mod restore_protocol;
mod restore_write;
mod take;
mod tree;
mod unified;
mod walk;

use std::collections::HashMap;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use costs::{Counts, Limits, Restored, Skipped};
pub use diff::{Change, FileChange, Kind, ModeChange};
pub use tree::{Entry, EntryKind, Tree, TreeId};
pub use unified::Unified;

use crate::store::DIR_MODE;
use crate::supervise::cgroup::CgroupRoot;
use cache::StatCache;
use objects::Objects;

/// What [`Snapshots::take`] gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// The folder was recorded.
    Tree {
        /// The tree's id.
        id: TreeId,
        /// What was not recorded, and why.
        skipped: Vec<Skipped>,
    },
    /// The folder is over a limit (the sentence names it): not a failure.
    TooLarge {
        /// Which limit, as a sentence.
        why: String,
    },
    /// The snapshot could not be made (the deadline, a walker that could
    /// not start or broke the protocol, a folder that cannot be opened).
    Failed {
        /// Why, as a sentence.
        why: String,
    },
}

/// The snapshot store, and how snapshots are taken.
#[derive(Debug)]
pub struct Snapshots {
    dir: PathBuf,
    objects: Objects,
    limits: Limits,
    walker: helper::Walker,
    /// The stat cache of each folder taken since the store was opened
    /// (out of it while a walk updates it).
    caches: Mutex<HashMap<PathBuf, StatCache>>,
}

impl Snapshots {
    /// Opens (and makes) the store under `<state_dir>/snapshots` (0700).
    /// `account` is the agent account the walker runs as (`None`: the
    /// service's own); `helper` is the program run as the walker, with
    /// `--snapshot-walk` (the service passes `std::env::current_exe()`).
    pub fn open(
        state_dir: &Path,
        limits: Limits,
        account: Option<crate::supervise::Account>,
        helper: PathBuf,
    ) -> io::Result<Snapshots> {
        let dir = state_dir.join("snapshots");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir.join("cache"))?;
        let objects = Objects::open(dir.join("objects"))?;
        Ok(Snapshots {
            dir,
            objects,
            limits,
            walker: helper::Walker {
                account,
                helper,
                cgroups: None,
                idle: Mutex::default(),
            },
            caches: Mutex::default(),
        })
    }

    /// Runs each walker in a cgroup of its own below `root` (as a turn
    /// runs in `room-core/<key>`), `room-core/snapshot-<uuid>`, killed
    /// whole with `cgroup.kill` and removed after: whatever the walker
    /// started, however it detached, ends with it.
    pub fn in_cgroups(mut self, root: CgroupRoot) -> Snapshots {
        self.walker.cgroups = Some(root);
        self
    }

    fn put_cache(&self, folder: &Path, cache: StatCache) {
        let mut caches = self.caches.lock().unwrap_or_else(|e| e.into_inner());
        caches.insert(folder.to_path_buf(), cache);
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Records `folder` (absolute) now. Blocking, bounded by
    /// [`Limits::deadline`]; call it on a thread of its own, never a
    /// shared one.
    pub fn take(&self, folder: &Path) -> Taken {
        self.take_counted(folder).0
    }

    /// [`Snapshots::take`], and what it read and what it took from the
    /// stat cache.
    pub fn take_counted(&self, folder: &Path) -> (Taken, Counts) {
        let cache_file = cache::file_of(&self.dir.join("cache"), folder);
        // Taken out while the walk updates it: a second snapshot of the
        // same folder at once starts from the file (each entry is a fact,
        // whichever copy is put back last).
        let taken = {
            let mut caches = self.caches.lock().unwrap_or_else(|e| e.into_inner());
            caches.remove(folder)
        };
        let mut cache = taken.unwrap_or_else(|| StatCache::load(&cache_file));
        let walked = take::walk(
            &self.walker,
            &self.objects,
            &self.limits,
            folder,
            &mut cache,
        );
        // Whatever happens next, the cache is put back as it was but for
        // its marks: it gains the files read only once their objects are
        // durable.
        let (got, ended) = match walked {
            Ok(x) => x,
            Err(why) => {
                self.put_cache(folder, cache);
                return (Taken::Failed { why }, Counts::default());
            }
        };
        let mut counts = got.counts;
        match ended {
            take::Ended::TooLarge(why) => {
                self.put_cache(folder, cache);
                return (Taken::TooLarge { why }, counts);
            }
            take::Ended::Failed(why) => {
                self.put_cache(folder, cache);
                return (Taken::Failed { why }, counts);
            }
            take::Ended::Done => {}
        }
        let mut batch = got.batch;
        let stored = tree::store(&self.objects, &mut batch, &got.entries)
            .and_then(|x| self.objects.commit(batch).map(|()| x));
        let (id, new) = match stored {
            Ok(x) => x,
            Err(e) => {
                self.put_cache(folder, cache);
                let why = format!("cannot store the snapshot: {e}");
                return (Taken::Failed { why }, counts);
            }
        };
        counts.listings_new = new;
        let walk = cache.walk;
        let fresh = !got.fresh.is_empty();
        cache
            .files
            .extend(got.fresh.into_iter().map(|(path, mut known)| {
                known.seen = walk;
                (path, known)
            }));
        if cache.prune() || fresh {
            // The cache only saves reads: a failed write costs the next
            // snapshot its reads, nothing else.
            if let Err(e) = cache.save(&cache_file) {
                log::warn!(
                    "cannot keep the snapshot cache of {}: {e}",
                    folder.display()
                );
            }
        }
        self.put_cache(folder, cache);
        let skipped = got.skipped;
        (Taken::Tree { id, skipped }, counts)
    }

    /// What changed from tree `before` to tree `after` (both ids from
    /// [`Snapshots::take`]), sorted by path.
    pub fn changes(&self, before: &TreeId, after: &TreeId) -> io::Result<Vec<FileChange>> {
        let (a, b) = (self.tree(before)?, self.tree(after)?);
        Ok(diff::changes(&self.objects, &a, &b)?
            .into_iter()
            .map(|c| c.change)
            .collect())
    }

    /// The unified diff text of those changes (git's form), at most `cap`
    /// bytes, cut at a hunk or line boundary; binary files are named, not
    /// shown.
    pub fn unified(&self, before: &TreeId, after: &TreeId, cap: usize) -> io::Result<Unified> {
        let (a, b) = (self.tree(before)?, self.tree(after)?);
        let changes = diff::changes(&self.objects, &a, &b)?;
        unified::render(&self.objects, &changes, cap)
    }

    /// Tree `id` itself, read back from the store (every object checked
    /// against its name).
    pub fn tree(&self, id: &TreeId) -> io::Result<Tree> {
        tree::load(&self.objects, id)
    }

    /// Restores `folder` (absolute) to tree `to`, as the agent account (the
    /// service's own when there is none, as for a snapshot): `now` is a tree the caller has just taken of it ([`Snapshots::take`]),
    /// from which the changes are computed, so what is written is what
    /// [`Snapshots::changes`] lists from `now` to `to`. A restorer
    /// (`room-core --snapshot-restore`, [`restorer_main`]) makes them
    /// without following a link; a folder goes only when empty; setuid and
    /// setgid bits are never set. What could not be done is in
    /// [`Restored::failed`]; an `Err` says why the restore could not run or
    /// finish (the deadline of [`Limits::deadline`] included). Blocking;
    /// call it on a thread of its own.
    pub fn restore(&self, folder: &Path, now: &TreeId, to: &TreeId) -> Result<Restored, String> {
        restore::run(&self.walker, &self.objects, &self.limits, folder, now, to)
    }

    /// The bytes of file object `sha256` (a [`EntryKind::File`]'s), checked
    /// against its name.
    pub fn file_bytes(&self, sha256: &str, size: u64) -> io::Result<Vec<u8>> {
        self.objects.get(sha256, size)
    }
}

/// Reads `data` as a walker's answer into a store at `dir` (the fuzz
/// target `snapshot_answer`); an error for a broken answer.
#[cfg(feature = "_internal_test_exports")]
pub fn read_answer(data: &[u8], dir: &Path) -> io::Result<()> {
    take::read_answer(data, dir)
}

/// The walker's whole run: `room-core --snapshot-walk` calls this and
/// exits with what it returns. It reads its request on stdin and answers on
/// stdout; nothing else calls it.
#[doc(hidden)]
pub fn walker_main() -> i32 {
    walk::main()
}

/// The restorer's whole run: `room-core --snapshot-restore` calls this and
/// exits with what it returns. It reads one request on stdin, answers on
/// stdout and returns; nothing else calls it.
#[doc(hidden)]
pub fn restorer_main() -> i32 {
    restore_write::main()
}
