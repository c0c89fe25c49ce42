//! Each turn's diff with the real `claude` and `codex` against the loopback
//! fake model (issue 32): a turn that writes with the CLI's own tool, and
//! one whose shell edits, removes, renames, makes executable, links and
//! makes a folder; each `turn_diff` lists exactly what that turn changed.
//! Ignored with why where the CLI is missing; fails instead in CI.

// The shared support's model-request readers are other checks'.
#[allow(dead_code)]
mod real_support;

use libtest_mimic::Arguments;
use real_support::{trial, Real};
use room_kit::events::await_turn_diff;
use room_kit::start_body;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// Turn `turn`'s `turn_diff` as `(path, status)` pairs, with the diff.
fn diff(real: &Real, id: &str, turn: u64) -> (Vec<(String, String)>, Value) {
    let d = await_turn_diff(&real.svc, id, turn);
    let files = d["files"]
        .as_array()
        .unwrap_or_else(|| panic!("turn {turn}: {d}"))
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (files, d)
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(p, s)| (p.to_string(), s.to_string()))
        .collect()
}

/// Turn 1 writes `a.txt` with the CLI's own write (claude's Write, codex's
/// shell); turn 2's shell edits it, makes it executable, renames `b.txt`,
/// removes `c.txt`, links and makes an empty folder.
fn each_turns_diff_is_what_it_changed(test: &str, harness: &str) {
    let Some(real) = Real::start(test, harness, json!({}), vec![]) else {
        return;
    };
    let folder = real.svc.folder("diffs");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("b.txt"), "to be moved\n").unwrap();
    std::fs::write(folder.join("c.txt"), "to be removed\n").unwrap();
    let a = folder.join("a.txt");
    let s = real.svc.start_session(start_body(
        &folder,
        harness,
        json!({"prompt": format!("TOOL_WRITE {} hello", a.display())}),
    ));
    let id = id_of(&s);
    real.await_idle(&id);
    let (files, d) = diff(&real, &id, 1);
    // codex may leave files of its own only outside the folder.
    assert_eq!(files, pairs(&[("a.txt", "added")]), "{d}");
    assert_eq!(d["files"][0]["added"], 1, "{d}");

    let f = folder.display();
    let (status, v) = real.svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": format!(
            "TOOL_RUN cd {f} && sed -i s/hello/bye/ a.txt && chmod +x a.txt && mv b.txt moved.txt && rm c.txt && ln -s a.txt link && mkdir empty"
        )}),
    );
    assert_eq!(status, 200, "{v}");
    real.await_idle(&id);
    let (files, d) = diff(&real, &id, 2);
    assert_eq!(
        files,
        pairs(&[
            ("a.txt", "modified"),
            ("c.txt", "deleted"),
            ("empty", "added"),
            ("link", "added"),
            ("moved.txt", "renamed"),
        ]),
        "{d}"
    );
    let a_change = &d["files"][0];
    assert_eq!(
        (a_change["added"].as_u64(), a_change["removed"].as_u64()),
        (Some(1), Some(1)),
        "{d}"
    );
    assert_eq!(a_change["mode"]["to"], "0755", "{d}");
    let (status, served) = real.svc.get(&format!("/v1/sessions/{id}/turns/2/diff"));
    assert_eq!(status, 200, "{served}");
    let text = served["diff"].as_str().unwrap();
    assert!(text.contains("-hello\n+bye\n"), "{text}");
}

fn claude_each_turns_diff_is_what_it_changed() {
    each_turns_diff_is_what_it_changed("claude_each_turns_diff_is_what_it_changed", "claude");
}

fn codex_each_turns_diff_is_what_it_changed() {
    each_turns_diff_is_what_it_changed("codex_each_turns_diff_is_what_it_changed", "codex");
}

fn main() -> std::process::ExitCode {
    let args = Arguments::from_args();
    let trials = vec![
        trial(
            "claude_each_turns_diff_is_what_it_changed",
            Some("claude"),
            false,
            claude_each_turns_diff_is_what_it_changed,
        ),
        trial(
            "codex_each_turns_diff_is_what_it_changed",
            Some("codex"),
            false,
            codex_each_turns_diff_is_what_it_changed,
        ),
    ];
    libtest_mimic::run(&args, trials).exit_code()
}
