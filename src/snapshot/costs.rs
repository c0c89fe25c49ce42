//! What a snapshot may cost and what it reports beside its tree, and what
//! a restore reports: the values the store ([`super::Snapshots`]) and the
//! helpers' service sides ([`super::take`], [`super::restore`]) share.

use std::time::Duration;

use serde::Serialize;

/// What one snapshot may cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes of regular files (their sizes added before anything
    /// is read); 1 GiB by default.
    pub max_bytes: u64,
    /// The most entries (files, links, folders and the rest); 200,000 by
    /// default.
    pub max_entries: u64,
    /// What is left out: a name without `/` at any depth, a path with `/`
    /// from the top of the folder; `[".git"]` by default.
    pub ignore: Vec<String>,
    /// How long one snapshot may take, from the walker's start to its last
    /// byte; 60 s by default.
    pub deadline: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_bytes: 1 << 30,
            max_entries: 200_000,
            ignore: vec![".git".into()],
            deadline: Duration::from_secs(60),
        }
    }
}

/// An entry a snapshot did not record, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// Its path from the folder (a name that is not UTF-8 shown lossily).
    pub path: String,
    /// Why, as a phrase: "a FIFO (named pipe), not opened", "cannot be
    /// read: Permission denied", "changed while it was read", ….
    pub why: String,
}

/// What one snapshot did, beside its result: what shows the cache at work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Entries recorded.
    pub entries: u64,
    /// Regular files whose bytes the walker sent (their stat had moved).
    pub files_read: u64,
    /// Bytes of those files.
    pub bytes_read: u64,
    /// Regular files taken from the stat cache, not read.
    pub files_cached: u64,
    /// Folder listings that were new to the store.
    pub listings_new: u64,
}

/// What [`super::Snapshots::restore`] did to the folder. Paths are relative
/// to the folder, sorted; each path is in one list at most.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Restored {
    /// Paths of the target tree made or changed (bytes, link target, kind
    /// or permission bits): with `deleted`, the paths of
    /// [`super::Snapshots::changes`] from the tree taken before to the
    /// target (a renamed file's path here, where it was in `deleted`).
    pub written: Vec<String>,
    /// Paths removed (in the tree taken before, not in the target).
    pub deleted: Vec<String>,
    /// Paths that could not be restored, each with a sentence ("cannot be
    /// removed: Permission denied", …): left as they were, or as far as
    /// the restore got.
    pub failed: Vec<Skipped>,
}
