//! A harness's program: where it is (a bare name on a `PATH`, a path as
//! written) and the words for one that is not there. No fake stands in for
//! a missing CLI: its launches fail with [`not_installed`], which names the
//! CLI and the config field that sets its program.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Whether `program` is a bare name (looked up on `PATH`), not a path.
pub(crate) fn is_bare(program: &Path) -> bool {
    !program.as_os_str().is_empty() && program.components().count() == 1 && !program.is_absolute()
}

/// The first executable file named `name` in the folders of `path`.
pub(crate) fn on_path(name: &Path, path: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Whether `program`, as the spawn will take it, is there: a bare name
/// (one no `PATH` lookup turned into a path) is not; an absolute path is
/// unless nothing exists at it. A relative path with a folder in it is
/// taken from the turn's folder, so it is left to the spawn to judge.
pub(crate) fn is_there(program: &Path) -> bool {
    if is_bare(program) || program.as_os_str().is_empty() {
        return false;
    }
    if !program.is_absolute() {
        return true;
    }
    !matches!(program.metadata(), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// Why harness `cli`'s `configured` program cannot run: a sentence that
/// names the CLI and the config field (`<cli>_program`).
pub(crate) fn not_installed(cli: &str, configured: &Path) -> String {
    missing(cli, &format!("{cli}_program"), configured)
}

/// Why `cli` (a CLI, or "the ACP agent <name>") cannot run: its
/// `configured` program, from the config's `field`, is not there.
pub(crate) fn missing(cli: &str, field: &str, configured: &Path) -> String {
    if is_bare(configured) {
        format!(
            "{cli} is not installed: no `{}` on PATH (set {field} in the config)",
            configured.display()
        )
    } else {
        format!(
            "{cli} is not installed: {field} in the config names {}, which does not exist",
            configured.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_is_named_with_its_config_field() {
        assert_eq!(
            not_installed("claude", Path::new("claude")),
            "claude is not installed: no `claude` on PATH (set claude_program in the config)"
        );
        assert_eq!(
            not_installed("codex", Path::new("/opt/codex")),
            "codex is not installed: codex_program in the config names /opt/codex, which does not exist"
        );
    }

    #[test]
    fn bare_names_are_looked_up_and_paths_are_taken_as_written() {
        assert!(is_bare(Path::new("claude")));
        assert!(!is_bare(Path::new("./claude")) && !is_bare(Path::new("/bin/sh")));
        assert!(!is_there(Path::new("claude")));
        assert!(is_there(Path::new("/bin/sh")));
        assert!(!is_there(Path::new("/nonexistent/claude")));
        assert!(is_there(Path::new("./claude")));
        assert!(!is_there(Path::new("")));
        let sh = on_path(Path::new("sh"), OsStr::new("/nonexistent:/bin")).unwrap();
        assert_eq!(sh, Path::new("/bin/sh"));
        assert_eq!(on_path(Path::new("sh"), OsStr::new("/nonexistent")), None);
    }
}
