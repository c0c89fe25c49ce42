//! Temp folders, each new and named after this process.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A new empty folder `room-core-<tag>-<pid>-<n>-<ns>` under the temp dir;
/// whoever made it removes it.
pub fn temp_dir(tag: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let dir = std::env::temp_dir().join(format!(
        "room-core-{tag}-{}-{n}-{nanos}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh temp folder for one test, which removes it itself (or keeps it
/// when it fails, for inspection).
pub fn temp_root() -> PathBuf {
    temp_dir("test")
}

/// A temp folder removed on drop, failed test or not.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new empty folder named after `name`.
    pub fn new(name: &str) -> TempDir {
        TempDir(temp_dir(name))
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
