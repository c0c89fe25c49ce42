//! The app's start order (seed 000's app half), as `deliverPending` does it:
//!
//! 1. `GET /v1/capabilities`;
//! 2. `POST /v1/sessions`, with `project_copy: true` only where Core lists
//!    `project_copy` and a status file will follow: always for a child in
//!    its own sandbox (its parent's code always comes), for a new sandbox
//!    thread whose plan is a clone or a full upload, never for a blank
//!    thread (nor a shared-sandbox child or a side chat, which Core refuses);
//! 3. when the plan copies anything: `GET /v1/workspaces/{id}` for the
//!    folder and its status file (404 until the start registered it), then
//!    `copying`, the copy, and `ready` or `failed: <reason>`. A copy that
//!    restarts writes `copying` again (a fresh mtime), as the app does after
//!    a restart or on "Try again".
//!
//! Against a Core without the capability the same copy and marks happen;
//! only the field is not sent. docs/app.md describes it as built.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::app_copy;
use super::core_client::{CoreClient, CoreError};
use room_core::harness::Harness;

/// The capability Core lists when it takes `project_copy`.
pub const CAPABILITY: &str = "project_copy";
/// The longest failure reason written into the status file.
pub const MAX_REASON: usize = 1000;

/// What the app plans for a start's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Nothing to copy: a blank thread.
    Blank,
    /// A new sandbox thread whose project is cloned.
    Clone {
        /// What `git clone` gets.
        url: String,
    },
    /// A new sandbox thread whose project is uploaded whole (here: a local
    /// folder copied in).
    Upload {
        /// The project's folder.
        from: PathBuf,
    },
    /// A child in its own sandbox; its parent's code is copied in.
    Child {
        /// The parent session.
        parent: String,
        /// The parent's folder.
        from: PathBuf,
    },
    /// A child in its parent's sandbox: it works in the parent's folder and
    /// nothing is copied.
    SharedChild {
        /// The parent session.
        parent: String,
    },
}

impl Plan {
    /// Whether the app copies something, so a status file will follow.
    pub fn copies(&self) -> bool {
        matches!(
            self,
            Plan::Clone { .. } | Plan::Upload { .. } | Plan::Child { .. }
        )
    }
}

/// Whether the start carries `project_copy: true`.
pub fn sends_project_copy(capabilities: &[String], plan: &Plan) -> bool {
    plan.copies() && capabilities.iter().any(|c| c == CAPABILITY)
}

/// One start, as the app has it before it is sent.
#[derive(Debug, Clone)]
pub struct StartRequest {
    /// The app's workspace ID.
    pub workspace: String,
    /// The session's folder.
    pub folder: PathBuf,
    /// Its agent.
    pub harness: Harness,
    /// The first prompt.
    pub prompt: Option<String>,
    /// The idempotency key.
    pub request_id: Option<String>,
    /// What is copied in.
    pub plan: Plan,
}

/// The `POST /v1/sessions` body.
pub fn start_body(req: &StartRequest, project_copy: bool) -> Value {
    let mut body = json!({
        "workspace": req.workspace,
        "folder": req.folder,
        "harness": req.harness,
    });
    let m = body.as_object_mut().expect("an object");
    match &req.plan {
        Plan::Child { parent, .. } => {
            m.insert("kind".into(), json!("child"));
            m.insert("parent".into(), json!(parent));
        }
        Plan::SharedChild { parent } => {
            m.insert("kind".into(), json!("child"));
            m.insert("parent".into(), json!(parent));
            m.insert("shared_sandbox".into(), json!(true));
        }
        Plan::Blank | Plan::Clone { .. } | Plan::Upload { .. } => {}
    }
    if let Some(p) = &req.prompt {
        m.insert("prompt".into(), json!(p));
    }
    if let Some(r) = &req.request_id {
        m.insert("request_id".into(), json!(r));
    }
    // Only ever `true`, and only when promised: an older Core refuses an
    // unknown field.
    if project_copy {
        m.insert("project_copy".into(), json!(true));
    }
    body
}

/// What a start did.
#[derive(Debug, Clone)]
pub struct Started {
    /// Core's view of the session, as the start answered.
    pub session: Value,
    /// Whether the start carried `project_copy: true`.
    pub project_copy: bool,
    /// The copy's outcome, when the plan copies: `Ok` (`ready`) or the
    /// reason written after `failed: `.
    pub copy: Option<Result<(), String>>,
}

/// Writes `text` and a newline into the status file atomically (a temp
/// file beside it, renamed over it), so Core never reads half a mark.
pub fn write_mark(status_file: &Path, text: &str) -> std::io::Result<()> {
    let name = status_file
        .file_name()
        .map_or_else(Default::default, |n| n.to_string_lossy());
    let tmp = status_file.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    if let Some(dir) = status_file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&tmp, format!("{text}\n"))?;
    std::fs::rename(&tmp, status_file).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// `failed: <reason>` on one line, at most [`MAX_REASON`] bytes of reason.
pub fn failed_mark(reason: &str) -> String {
    let mut one_line: String = reason.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.len() > MAX_REASON {
        let mut cut = MAX_REASON;
        while !one_line.is_char_boundary(cut) {
            cut -= 1;
        }
        one_line.truncate(cut);
    }
    format!("failed: {one_line}")
}

/// Runs a copy between its marks: `copying` before each attempt (up to
/// `attempts`), then `ready`, or `failed: <reason>` once the last attempt
/// failed. A mark that cannot be written fails the copy.
pub fn copy_with_marks(
    mut mark: impl FnMut(&str) -> std::io::Result<()>,
    attempts: u32,
    mut copy: impl FnMut(u32) -> Result<(), String>,
) -> Result<(), String> {
    let unwritable = |e: std::io::Error| format!("cannot write the status file: {e}");
    let mut last = String::from("no attempt was made");
    for attempt in 1..=attempts.max(1) {
        mark("copying").map_err(unwritable)?;
        match copy(attempt) {
            Ok(()) => return mark("ready").map_err(unwritable),
            Err(e) => {
                log::warn!("copy attempt {attempt} failed: {e}");
                last = e;
            }
        }
    }
    mark(&failed_mark(&last)).map_err(unwritable)?;
    Err(last)
}

/// The copy a plan makes into `folder`.
pub fn copy(plan: &Plan, folder: &Path) -> Result<(), String> {
    match plan {
        Plan::Clone { url } => app_copy::clone_into(url, folder),
        Plan::Upload { from } | Plan::Child { from, .. } => app_copy::copy_tree(from, folder)
            .map_err(|e| {
                format!(
                    "cannot copy {} into {}: {e}",
                    from.display(),
                    folder.display()
                )
            }),
        Plan::Blank | Plan::SharedChild { .. } => Ok(()),
    }
}

/// The whole start order against one Core.
pub fn start(core: &CoreClient, req: &StartRequest, attempts: u32) -> Result<Started, CoreError> {
    let capabilities = core.capabilities()?;
    let project_copy = sends_project_copy(&capabilities, &req.plan);
    let (session, _) = core.start(&start_body(req, project_copy))?;
    if !req.plan.copies() {
        return Ok(Started {
            session,
            project_copy,
            copy: None,
        });
    }
    let workspace = core.workspace(&req.workspace)?;
    let outcome = copy_with_marks(
        |text| write_mark(&workspace.status_file, text),
        attempts,
        |_| copy(&req.plan, &workspace.folder),
    );
    Ok(Started {
        session,
        project_copy,
        copy: Some(outcome),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use room_machines::CopyMark;

    fn caps(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn project_copy_only_where_core_lists_it_and_a_copy_follows() {
        let with = caps(&["project_copy"]);
        let child = Plan::Child {
            parent: "cr_p".into(),
            from: "/p".into(),
        };
        let clone = Plan::Clone { url: "u".into() };
        let upload = Plan::Upload { from: "/x".into() };
        let shared = Plan::SharedChild {
            parent: "cr_p".into(),
        };
        assert!(sends_project_copy(&with, &child));
        assert!(sends_project_copy(&with, &clone));
        assert!(sends_project_copy(&with, &upload));
        assert!(!sends_project_copy(&with, &Plan::Blank));
        assert!(!sends_project_copy(&with, &shared));
        for plan in [&child, &clone, &upload, &Plan::Blank, &shared] {
            assert!(!sends_project_copy(&caps(&[]), plan));
            assert!(!sends_project_copy(&caps(&["other"]), plan));
        }
    }

    #[test]
    fn the_body_carries_the_field_only_when_it_is_sent() {
        let req = StartRequest {
            workspace: "ws".into(),
            folder: "/code".into(),
            harness: Harness::Codex,
            prompt: None,
            request_id: None,
            plan: Plan::Child {
                parent: "cr_p".into(),
                from: "/p".into(),
            },
        };
        let b = start_body(&req, true);
        assert_eq!(b["project_copy"], true);
        assert_eq!(
            (b["kind"].as_str(), b["parent"].as_str()),
            (Some("child"), Some("cr_p"))
        );
        assert!(start_body(&req, false).get("project_copy").is_none());
    }

    #[test]
    fn a_restarted_copy_rewrites_copying_and_the_last_failure_is_the_mark() {
        let mut marks = Vec::new();
        let r = copy_with_marks(
            |m| {
                marks.push(m.to_string());
                Ok(())
            },
            3,
            |attempt| {
                if attempt < 2 {
                    Err("network\nreset".into())
                } else {
                    Ok(())
                }
            },
        );
        assert_eq!(r, Ok(()));
        assert_eq!(marks, ["copying", "copying", "ready"]);

        let mut marks = Vec::new();
        let r = copy_with_marks(
            |m| {
                marks.push(m.to_string());
                Ok(())
            },
            2,
            |_| Err("disk\nfull".into()),
        );
        assert_eq!(r, Err("disk\nfull".into()));
        assert_eq!(marks, ["copying", "copying", "failed: disk full"]);
        // What Core reads back.
        assert_eq!(
            CopyMark::parse(marks[2].as_bytes()),
            Ok(CopyMark::Failed("disk full".into()))
        );
        assert!(failed_mark(&"é".repeat(MAX_REASON)).len() <= MAX_REASON + "failed: ".len());
    }

    #[test]
    fn marks_are_written_whole_and_trees_are_copied_with_their_links() {
        let dir = std::env::temp_dir().join(format!("rc-app-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let file = dir.join("code.cloudroom-files");
        write_mark(&file, "copying").unwrap();
        write_mark(&file, "ready").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "ready\n");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["code.cloudroom-files"], "no temp file left");

        let src = dir.join("src");
        std::fs::create_dir_all(src.join(".agents/skills/x")).unwrap();
        std::fs::write(src.join(".agents/skills/x/SKILL.md"), "x").unwrap();
        std::fs::create_dir_all(src.join(".claude/skills")).unwrap();
        std::os::unix::fs::symlink("../../.agents/skills/x", src.join(".claude/skills/linked"))
            .unwrap();
        let dst = dir.join("dst");
        copy(&Plan::Upload { from: src.clone() }, &dst).unwrap();
        // Again, over the first copy (a restart).
        copy(&Plan::Upload { from: src }, &dst).unwrap();
        assert_eq!(
            std::fs::read_link(dst.join(".claude/skills/linked")).unwrap(),
            Path::new("../../.agents/skills/x")
        );
        assert_eq!(
            std::fs::read_to_string(dst.join(".claude/skills/linked/SKILL.md")).unwrap(),
            "x"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
