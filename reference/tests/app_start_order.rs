//! Seed 000's app half end to end: the real `room-app` start order against
//! the real room-core (and against a stub Core without the capability).
//! What Core received is read back from `GET /v1/sessions/{id}`
//! (`project_copy`) or, for the stub, from the bodies it recorded.

mod reference_support;

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reference_support::start_service;
use room_kit::{land_project, names, skip, status_file, temp_root, PROJECT_NAMES, TOKEN};
use room_reference::http::{Handler, Limits, Request, Response, Server};
use serde_json::{json, Value};

/// Runs `room-app start` against `core`; exit status and its JSON.
fn room_app(core: &str, args: &[&str]) -> (i32, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_room-app"))
        .arg("start")
        .args(["--core", core])
        .args(args)
        .env("ROOM_CORE_TOKEN", TOKEN)
        .output()
        .expect("run room-app");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let value = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "room-app printed {stdout:?}, stderr {:?}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), value)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `room-app start` of workspace `ws` into `folder` with `harness`, plus
/// the plan's and other options in `more`.
fn start(core: &str, ws: &str, folder: &Path, harness: &str, more: &[&str]) -> (i32, Value) {
    let mut args = vec![
        "--workspace",
        ws,
        "--folder",
        path(folder),
        "--harness",
        harness,
    ];
    args.extend(more);
    room_app(core, &args)
}

/// A git repository holding the fixture project, or `None` (with the
/// reason printed; a failure in CI) when git is missing.
fn repo(test: &str, at: &Path) -> Option<()> {
    if room_reference::account::on_path("git").is_none() {
        skip(test, "git is not installed");
        return None;
    }
    land_project(at);
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(at)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "--quiet"]);
    git(&["add", "-A"]);
    git(&["commit", "--quiet", "-m", "fixture"]);
    Some(())
}

#[test]
fn a_child_promises_a_copy_and_starts_on_its_parents_code() {
    let core = start_service(json!({}));
    let parent_folder = core.folder("parent");
    let (code, parent) = start(&core.base, "ws-parent", &parent_folder, "claude", &[]);
    assert_eq!(code, 0, "{parent}");
    let parent_id = parent["session"]["id"].as_str().unwrap().to_string();
    land_project(&parent_folder);

    let child_folder = core.folder("child");
    let (code, child) = start(
        &core.base,
        "ws-child",
        &child_folder,
        "codex",
        &[
            "--child",
            &parent_id,
            "--from",
            path(&parent_folder),
            "--prompt",
            "What do you see?",
        ],
    );
    assert_eq!(code, 0, "{child}");
    assert_eq!(
        (&child["project_copy"], &child["copy"]),
        (&json!(true), &json!("ready"))
    );
    let id = child["session"]["id"].as_str().unwrap();
    let view = core.session(id);
    assert_eq!(view["project_copy"], true, "{view}");
    assert_eq!(
        (&view["kind"], &view["parent"]),
        (&json!("child"), &json!(parent_id))
    );
    assert_eq!(
        std::fs::read_to_string(status_file(&child_folder)).unwrap(),
        "ready\n"
    );
    // Core held the harness until the copy landed: it saw the parent's code.
    let record = core.await_record(&child_folder, 1, Duration::from_secs(30));
    assert_eq!(names(&record), PROJECT_NAMES, "{record}");
}

#[test]
fn a_clone_planned_thread_promises_a_copy() {
    const TEST: &str = "a_clone_planned_thread_promises_a_copy";
    let core = start_service(json!({}));
    let source = core.root.join("upstream");
    if repo(TEST, &source).is_none() {
        return;
    }
    let folder = core.folder("cloned");
    let (code, out) = start(
        &core.base,
        "ws-clone",
        &folder,
        "claude",
        &["--clone", path(&source), "--prompt", "What do you see?"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        (&out["project_copy"], &out["copy"]),
        (&json!(true), &json!("ready"))
    );
    let view = core.session(out["session"]["id"].as_str().unwrap());
    assert_eq!(view["project_copy"], true, "{view}");
    let record = core.await_record(&folder, 1, Duration::from_secs(30));
    let mut want: Vec<&str> = vec![".git"];
    want.extend(PROJECT_NAMES);
    want.sort();
    assert_eq!(names(&record), want, "{record}");
}

#[test]
fn a_blank_thread_promises_nothing_and_starts_at_once() {
    let core = start_service(json!({}));
    let folder = core.folder("blank");
    let (code, out) = start(
        &core.base,
        "ws-blank",
        &folder,
        "claude",
        &["--prompt", "hi"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        (&out["project_copy"], &out["copy"]),
        (&json!(false), &Value::Null)
    );
    let view = core.session(out["session"]["id"].as_str().unwrap());
    assert_eq!(view["project_copy"], false, "{view}");
    let record = core.await_record(&folder, 1, Duration::from_secs(30));
    assert!(names(&record).is_empty(), "{record}");
    assert!(
        !status_file(&folder).exists(),
        "no status file for a blank thread"
    );
}

#[test]
fn a_failed_copy_says_why_and_the_agent_starts_anyway() {
    let core = start_service(json!({}));
    let folder = core.folder("doomed");
    let missing = core.root.join("no-such-project");
    let (code, out) = start(
        &core.base,
        "ws-doomed",
        &folder,
        "claude",
        &[
            "--upload",
            path(&missing),
            "--attempts",
            "2",
            "--prompt",
            "hi",
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["project_copy"], true);
    let mark = std::fs::read_to_string(status_file(&folder)).unwrap();
    assert!(
        mark.starts_with("failed: cannot copy ") && mark.ends_with('\n'),
        "{mark:?}"
    );
    assert_eq!(mark.lines().count(), 1);
    assert_eq!(out["copy"], mark.trim_end());
    // A failed copy starts the agent at once.
    core.await_record(&folder, 1, Duration::from_secs(30));
}

/// A Core whose capabilities list nothing: it records every start body and
/// answers the workspace route as Core does.
struct OldCore {
    server: Server,
    starts: Arc<Mutex<Vec<Value>>>,
}

impl OldCore {
    fn start() -> OldCore {
        let starts = Arc::new(Mutex::new(Vec::<Value>::new()));
        let seen = starts.clone();
        let handler: Handler = Arc::new(move |r: &Request| {
            let seg = r.segments();
            match (r.method.as_str(), seg.as_slice()) {
                ("GET", ["v1", "capabilities"]) => {
                    Response::json(200, &json!({"capabilities": []}))
                }
                ("POST", ["v1", "sessions"]) => {
                    let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
                    let mut starts = seen.lock().unwrap();
                    starts.push(body.clone());
                    let id = format!("cr_{:032x}", starts.len());
                    Response::json(
                        201,
                        &json!({"id": id, "workspace": body["workspace"], "folder": body["folder"]}),
                    )
                }
                ("GET", ["v1", "workspaces", ws]) => {
                    let starts = seen.lock().unwrap();
                    match starts.iter().find(|b| b["workspace"] == *ws) {
                        Some(b) => {
                            let folder = b["folder"].as_str().unwrap();
                            Response::json(
                                200,
                                &json!({"id": ws, "folder": folder,
                                "status_file": format!("{folder}.cloudroom-files")}),
                            )
                        }
                        None => Response::error(404, "workspace_not_found", "No workspace."),
                    }
                }
                _ => Response::error(404, "not_found", "No route."),
            }
        });
        OldCore {
            server: Server::start("127.0.0.1:0", Limits::default(), handler).unwrap(),
            starts,
        }
    }
}

#[test]
fn a_core_without_the_capability_is_never_sent_project_copy() {
    let old = OldCore::start();
    let root = temp_root();
    let source = root.join("project");
    land_project(&source);
    let url = old.server.url();
    let folder = |n: &str| root.join(n).to_string_lossy().into_owned();
    let runs: Vec<Vec<String>> = vec![
        vec![
            "--child".into(),
            "cr_parent".into(),
            "--from".into(),
            path(&source).into(),
        ],
        vec!["--upload".into(), path(&source).into()],
        vec![],
    ];
    for (n, extra) in runs.iter().enumerate() {
        let f = folder(&format!("s{n}"));
        let ws = format!("ws-{n}");
        let more: Vec<&str> = extra.iter().map(String::as_str).collect();
        let (code, out) = start(&url, &ws, Path::new(&f), "codex", &more);
        assert_eq!(code, 0, "{out}");
        assert_eq!(out["project_copy"], false, "{out}");
        // The copy and its marks happen all the same (for the two that copy).
        let marked = std::fs::read_to_string(status_file(Path::new(&f))).ok();
        assert_eq!(marked.as_deref(), (n < 2).then_some("ready\n"), "{f}");
    }
    let starts = old.starts.lock().unwrap().clone();
    assert_eq!(starts.len(), 3);
    for body in &starts {
        assert!(body.get("project_copy").is_none(), "{body}");
    }
    assert_eq!(starts[0]["kind"], "child");
    let _ = std::fs::remove_dir_all(&root);
}
