//! The real claude and codex CLIs, where they are installed, and handing a
//! test's files to the agent account they run as.

use std::path::{Path, PathBuf};

use crate::ci::absent;

/// The executable `name` on PATH.
pub fn find_cli(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| {
                p.metadata()
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    })
}

/// The real CLI `name` (`claude` or `codex`) on PATH.
pub fn real_cli(test: &str, name: &str) -> Option<PathBuf> {
    match find_cli(name) {
        Some(p) => Some(p),
        None => absent(
            test,
            &format!("no `{name}` on PATH (.ci/run installs it from npm)"),
        ),
    }
}

/// Hands `path` and everything under it to `uid`:`gid`.
pub fn chown_tree(path: &Path, uid: u32, gid: u32) {
    let (u, g) = (
        Some(nix::unistd::Uid::from_raw(uid)),
        Some(nix::unistd::Gid::from_raw(gid)),
    );
    nix::unistd::chown(path, u, g).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for e in std::fs::read_dir(path).unwrap() {
            chown_tree(&e.unwrap().path(), uid, gid);
        }
    }
}
