//! `POST /v1/sessions/{id}/rewind` (issue 32): a session's folder put back
//! as a turn left it, byte for byte and mode for mode, whatever changed it
//! since (the turns' shells, a person between turns); the dry run lists
//! what would change and the conflicts first and changes nothing; `.git`
//! is never touched; refused while a turn runs. With the fake harness,
//! whose `run:` prompts run shell commands in the folder.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use room_kit::events::{all_events, await_turn_diff, await_turns_ended};
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// What a path holds, as a rewind must put it back.
#[derive(Debug, PartialEq, Eq)]
enum Held {
    File { mode: u32, bytes: Vec<u8> },
    Link(std::path::PathBuf),
    Dir { mode: u32 },
}

/// Every path under `folder` but `.git`, with what it holds: two equal
/// states are the same folder byte for byte and mode for mode.
fn state(folder: &Path) -> BTreeMap<String, Held> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Held>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let path = e.path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if rel == ".git" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.permissions().mode() & 0o7777;
            let held = if meta.file_type().is_symlink() {
                Held::Link(std::fs::read_link(&path).unwrap())
            } else if meta.is_dir() {
                walk(root, &path, out);
                Held::Dir { mode }
            } else {
                Held::File {
                    mode,
                    bytes: std::fs::read(&path).unwrap(),
                }
            };
            out.insert(rel, held);
        }
    }
    let mut out = BTreeMap::new();
    walk(folder, folder, &mut out);
    out
}

/// Sends `prompt` to session `id` and waits for turn `turn`'s diff.
fn turn(svc: &Service, id: &str, turn: u64, prompt: &str) -> Value {
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({ "prompt": prompt }),
    );
    assert_eq!(status, 200, "{v}");
    await_turn_diff(svc, id, turn)
}

fn rewind(svc: &Service, id: &str, body: Value) -> (u16, Value) {
    svc.post(&format!("/v1/sessions/{id}/rewind"), body)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_rewind_puts_the_folder_back_as_turn_one_left_it_after_its_dry_run_named_the_conflicts() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("rewind");
    std::fs::create_dir_all(folder.join(".git")).unwrap();
    std::fs::write(folder.join(".git/HEAD"), "ref: main\n").unwrap();
    std::fs::write(folder.join("keep.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(folder.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(folder.join("old-name.txt"), "moved content\n").unwrap();
    std::fs::write(folder.join("tool.sh"), "echo hi\n").unwrap();
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({ "prompt": "run: echo v1 > a.txt && mkdir sub && echo s > sub/f" }),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    await_turn_diff(&svc, &id, 1);
    let after_one = state(&folder);
    turn(&svc, &id, 2, "run: sed -i s/two/TWO/ keep.txt && rm gone.txt && mv old-name.txt new-name.txt && chmod +x tool.sh && ln -s keep.txt link && mkdir empty && echo x > .git/HEAD");
    turn(
        &svc,
        &id,
        3,
        "run: echo v3 > a.txt && rm -r sub && mkdir sub && ln -s /etc sub/f",
    );
    // A person's edit after the turns: the rewind would undo it.
    std::fs::write(folder.join("by-hand.txt"), "mine\n").unwrap();
    let before = state(&folder);

    let (status, dry) = rewind(
        &svc,
        &id,
        json!({"to_turn": 1, "conversation": false, "dry_run": true}),
    );
    assert_eq!(status, 200, "{dry}");
    assert_eq!(dry["dry_run"], true);
    assert_eq!(strings(&dry["conflicts"]), ["by-hand.txt"], "{dry}");
    assert_eq!(dry["conflicts_complete"], true);
    assert_eq!(dry["conversation"], "kept");
    let mut listed = strings(&Value::Array(
        dry["files"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|f| {
                [f["path"].clone()]
                    .into_iter()
                    .chain(f.get("from").cloned())
            })
            .collect(),
    ));
    listed.sort();
    assert_eq!(
        listed,
        [
            "a.txt",
            "by-hand.txt",
            "empty",
            "gone.txt",
            "keep.txt",
            "link",
            "new-name.txt",
            "old-name.txt",
            "sub/f",
            "tool.sh"
        ],
        "{dry}"
    );
    assert_eq!(state(&folder), before, "a dry run changes nothing");

    let (status, done) = rewind(&svc, &id, json!({"to_turn": 1, "conversation": false}));
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["dry_run"], false);
    assert_eq!(done["failed"], json!([]), "{done}");
    assert_eq!(done["files"], dry["files"]);
    assert_eq!(state(&folder), after_one, "the folder is as turn 1 left it");
    assert_eq!(
        std::fs::read_to_string(folder.join(".git/HEAD")).unwrap(),
        "x\n",
        ".git is never touched"
    );
    let events = all_events(&svc, &id, 1024);
    let rewound: Vec<&Value> = events.iter().filter(|e| e["kind"] == "rewound").collect();
    assert_eq!(rewound.len(), 1, "{events:?}");
    assert_eq!(rewound[0]["data"]["to_turn"], 1);
    assert_eq!(rewound[0]["data"]["tree"], done["tree"]);
    assert_ne!(done["tree"], done["before_tree"]);

    // The next turn starts from the rewound folder: its diff is its own,
    // and no folder_changed repeats the rewind.
    let four = turn(&svc, &id, 4, "run: cat a.txt > seen.txt");
    assert_eq!(four["files"][0]["path"], "seen.txt", "{four}");
    assert_eq!(four["files_total"], 1, "{four}");
    assert_eq!(
        std::fs::read_to_string(folder.join("seen.txt")).unwrap(),
        "v1\n"
    );
    let events = all_events(&svc, &id, 1024);
    assert!(
        !events.iter().any(|e| e["kind"] == "folder_changed"),
        "{events:?}"
    );
    // A second rewind sees turn 4's file as a turn's, not a conflict, and
    // the first rewind's own changes are not conflicts either.
    let (status, again) = rewind(
        &svc,
        &id,
        json!({"to_turn": 2, "conversation": false, "dry_run": true}),
    );
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["conflicts"], json!([]), "{again}");
}

#[test]
fn a_rewind_is_refused_while_a_turn_runs_and_for_a_turn_that_has_not_ended() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("refused");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({ "prompt": "run: echo 1 > a.txt" }),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    await_turn_diff(&svc, &id, 1);
    let code = |(status, v): (u16, Value)| (status, v["code"].as_str().unwrap_or("").to_string());
    assert_eq!(
        code(rewind(&svc, &id, json!({"to_turn": 2}))),
        (409, "no_such_turn".into())
    );
    assert_eq!(
        code(rewind(&svc, &id, json!({"to_turn": 0}))),
        (422, "invalid_field".into())
    );
    assert_eq!(
        code(rewind(&svc, &id, json!({"to_turn": 1, "also": true}))),
        (422, "unknown_field".into())
    );
    assert_eq!(
        code(rewind(
            &svc,
            &id,
            json!({"to_turn": 1, "files": false, "conversation": false})
        )),
        (422, "invalid_body".into())
    );
    // The fake harness writes no message to cut its conversation at: a
    // dry run says why, the rewind itself is refused and changes nothing.
    let (status, v) = rewind(&svc, &id, json!({"to_turn": 1, "dry_run": true}));
    assert_eq!(
        (status, v["conversation"].as_str()),
        (200, Some("unchanged")),
        "{v}"
    );
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({ "prompt": "run: echo 2 > a.txt" }),
    );
    assert_eq!(status, 200, "{v}");
    await_turn_diff(&svc, &id, 2);
    let (status, v) = rewind(&svc, &id, json!({"to_turn": 1, "dry_run": true}));
    assert_eq!(
        (status, v["conversation"].as_str()),
        (200, Some("uncut")),
        "{v}"
    );
    assert!(
        v["conversation_why"]
            .as_str()
            .unwrap()
            .ends_with("cannot be cut after turn 1: claude wrote no message in turn 1 to cut after. Nothing was changed."),
        "{v}"
    );
    let (status, v) = rewind(&svc, &id, json!({"to_turn": 1}));
    assert_eq!(
        (status, v["code"].as_str()),
        (409, Some("conversation_uncut")),
        "{v}"
    );
    assert_eq!(
        std::fs::read_to_string(folder.join("a.txt")).unwrap(),
        "2\n"
    );
    assert_eq!(
        code(rewind(
            &svc,
            "cr_nope",
            json!({"to_turn": 1, "conversation": false})
        )),
        (404, "session_not_found".into())
    );
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({ "prompt": "run: echo started > started.txt && sleep 30" }),
    );
    assert_eq!(status, 200, "{v}");
    wait_until("turn 2 runs", std::time::Duration::from_secs(10), || {
        folder.join("started.txt").exists().then_some(())
    });
    let (status, v) = rewind(
        &svc,
        &id,
        json!({"to_turn": 1, "conversation": false, "dry_run": true}),
    );
    assert_eq!(
        (status, v["code"].as_str()),
        (409, Some("turn_running")),
        "{v}"
    );
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("has a turn running or about to start"),
        "{v}"
    );
    let (status, _) = svc.post(&format!("/v1/sessions/{id}/interrupt"), json!({}));
    assert_eq!(status, 200);
    await_turn_diff(&svc, &id, 3);
    let (status, v) = rewind(&svc, &id, json!({"to_turn": 1, "conversation": false}));
    assert_eq!(status, 200, "{v}");
    assert!(!folder.join("started.txt").exists());
    assert_eq!(
        std::fs::read_to_string(folder.join("a.txt")).unwrap(),
        "1\n"
    );
}

#[test]
fn with_snapshots_off_a_rewind_says_why_it_cannot_be() {
    let svc = Service::start(ROOM_CORE, json!({"snapshots": false}));
    let folder = svc.folder("off");
    let s = svc.start_session(start_body(
        &folder,
        "claude",
        json!({ "prompt": "run: echo 1 > a.txt" }),
    ));
    let id = s["id"].as_str().unwrap().to_string();
    await_turns_ended(&svc, &id, 1);
    let (status, v) = rewind(&svc, &id, json!({"to_turn": 1, "conversation": false}));
    assert_eq!(
        (status, v["code"].as_str()),
        (409, Some("snapshots_off")),
        "{v}"
    );
}
