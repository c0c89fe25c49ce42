//! Session folders: the start body, the status file, and the fixture
//! project seed 000 copies in.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::json::merge;

/// The names the fixture project puts in a folder.
pub const PROJECT_NAMES: [&str; 4] = [".agents", ".claude", "AGENTS.md", "CLAUDE.md"];

/// The repository's `fixtures/` folder (the fake harnesses, the fake model
/// server, recorded timelines).
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the kit sits at tests/kit in the repository")
        .join("fixtures")
}

/// The status file of `folder`: `<folder>.cloudroom-files`.
pub fn status_file(folder: &Path) -> PathBuf {
    PathBuf::from(format!("{}.cloudroom-files", folder.display()))
}

/// Writes `text` into `folder`'s status file, creating its parent.
pub fn mark(folder: &Path, text: &str) {
    let file = status_file(folder);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
}

/// Lands the fixture project (seed 000's) in `folder`: a real skill folder,
/// a symlinked one, CLAUDE.md and AGENTS.md with their markers. Each
/// SKILL.md has the name and description front matter the real CLIs need
/// to list a skill.
pub fn land_project(folder: &Path) {
    let skill = |name: &str, from: &str| {
        format!("---\nname: {name}\ndescription: The seed-000 probe skill from {from}.\n---\nSay {name}.\n")
    };
    let real = folder.join(".agents/skills/probe-agents-real");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::write(
        real.join("SKILL.md"),
        skill("probe-agents-real", ".agents/skills"),
    )
    .unwrap();
    let claude_real = folder.join(".claude/skills/probe-claude-real");
    std::fs::create_dir_all(&claude_real).unwrap();
    std::fs::write(
        claude_real.join("SKILL.md"),
        skill("probe-claude-real", ".claude/skills"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        "../../.agents/skills/probe-agents-real",
        folder.join(".claude/skills/probe-agents-linked"),
    )
    .unwrap();
    std::fs::write(folder.join("CLAUDE.md"), "CLAUDE_MD_MARKER_7731\n").unwrap();
    std::fs::write(folder.join("AGENTS.md"), "AGENTS_MD_MARKER_4412\n").unwrap();
}

/// The names a fake harness's record says it saw.
pub fn names(record: &Value) -> Vec<String> {
    record["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

/// A start body for `folder` with `harness`, plus the fields in `extra`.
pub fn start_body(folder: &Path, harness: &str, extra: Value) -> Value {
    let mut body = json!({
        "workspace": format!("ws-{}", folder.file_name().unwrap().to_string_lossy()),
        "folder": folder,
        "harness": harness,
        "prompt": "Which skills and instructions do you see?",
    });
    merge(&mut body, extra);
    body
}
