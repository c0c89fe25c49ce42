//! The app's copies into a session folder: a git clone, or a folder copied
//! whole (a full upload, or a child's parent's code). A restarted copy
//! overwrites what an earlier attempt left.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Copies the tree at `from` into `to` (created if missing): folders, files
/// (with their modes) and symlinks as links; other kinds are skipped.
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if kind.is_symlink() {
            let target = std::fs::read_link(&src)?;
            if std::fs::symlink_metadata(&dst).is_ok() {
                std::fs::remove_file(&dst)?;
            }
            std::os::unix::fs::symlink(target, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

/// `git clone <url>` into `folder`: cloned beside it first, then moved in,
/// so a folder Core already made (empty) or an earlier attempt filled does
/// not stop it.
pub fn clone_into(url: &str, folder: &Path) -> Result<(), String> {
    let side = PathBuf::from(format!("{}.cloudroom-clone", folder.display()));
    let _ = std::fs::remove_dir_all(&side);
    let out = Command::new("git")
        .args(["clone", "--quiet", "--", url])
        .arg(&side)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&side);
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("git clone failed: {}", err.trim()));
    }
    let moved = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(folder)?;
        for entry in std::fs::read_dir(&side)? {
            let entry = entry?;
            let dst = folder.join(entry.file_name());
            match std::fs::symlink_metadata(&dst) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&dst)?,
                Ok(_) => std::fs::remove_file(&dst)?,
                Err(_) => {}
            }
            std::fs::rename(entry.path(), dst)?;
        }
        std::fs::remove_dir_all(&side)
    })();
    moved.map_err(|e| format!("cannot move the clone into {}: {e}", folder.display()))
}
