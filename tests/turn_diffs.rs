//! Each turn's changes to its session's folder (issue 32): the folder is
//! recorded before and after every turn, `turn_diff` journals what the
//! turn changed (by its own tools or its shell), `folder_changed` what
//! changed between turns by anyone else, and `GET …/turns/{n}/diff` serves
//! the unified diff. With the fake harness, whose `run:` prompts run shell
//! commands in the folder.

use std::os::unix::fs::PermissionsExt;

use room_kit::events::{all_events, await_turn_diff, await_turns_ended};
use room_kit::*;
use serde_json::{json, Value};

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// A claude session in `folder` whose first prompt is `prompt`, once its
/// first turn has ended: its ID.
fn first_turn(svc: &Service, folder: &std::path::Path, prompt: &str) -> String {
    let s = svc.start_session(start_body(folder, "claude", json!({ "prompt": prompt })));
    let id = s["id"].as_str().unwrap().to_string();
    await_turns_ended(svc, &id, 1);
    id
}

/// Each listed file as `(path, status)`.
fn statuses(diff: &Value) -> Vec<(String, String)> {
    diff["files"]
        .as_array()
        .unwrap_or_else(|| panic!("no files: {diff}"))
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(p, s)| (p.to_string(), s.to_string()))
        .collect()
}

#[test]
fn every_change_a_turns_shell_makes_is_in_its_diff_and_served_as_a_unified_diff() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("diffs");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("keep.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(folder.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(folder.join("old-name.txt"), "moved content\n").unwrap();
    std::fs::write(folder.join("tool.sh"), "echo hi\n").unwrap();
    std::fs::create_dir_all(folder.join(".git")).unwrap();
    let id = first_turn(&svc, &folder, "run: sed -i s/two/TWO/ keep.txt && rm gone.txt && mv old-name.txt new-name.txt && chmod +x tool.sh && ln -s keep.txt link && mkdir empty && echo x > .git/HEAD");
    let diff = await_turn_diff(&svc, &id, 1);
    assert_eq!(
        statuses(&diff),
        pairs(&[
            ("empty", "added"),
            ("gone.txt", "deleted"),
            ("keep.txt", "modified"),
            ("link", "added"),
            ("new-name.txt", "renamed"),
            ("tool.sh", "modified"),
        ]),
        "{diff}"
    );
    let file = |p: &str| {
        diff["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"] == p)
            .unwrap()
            .clone()
    };
    assert_eq!(file("keep.txt")["added"], 1);
    assert_eq!(file("keep.txt")["removed"], 1);
    assert_eq!(file("new-name.txt")["from"], "old-name.txt");
    assert_eq!(file("tool.sh")["mode"]["to"], "0755", "{diff}");
    assert_eq!(file("link")["kind"], "symlink");
    assert_eq!(file("empty")["kind"], "dir");
    assert_eq!(diff["files_total"], 6);

    let (status, served) = svc.get(&format!("/v1/sessions/{id}/turns/1/diff"));
    assert_eq!(status, 200, "{served}");
    assert_eq!(served["turn"], 1);
    assert_eq!(served["files"], diff["files"]);
    let text = served["diff"].as_str().unwrap();
    assert!(text.contains("--- a/keep.txt\n+++ b/keep.txt\n"), "{text}");
    assert!(text.contains("-two\n+TWO\n"), "{text}");
    assert!(text.contains("--- a/gone.txt\n+++ /dev/null\n"), "{text}");
    assert_eq!(served["truncated"], false);
    // A turn that is not there yet, and one that is not a number.
    let (status, v) = svc.get(&format!("/v1/sessions/{id}/turns/9/diff"));
    assert_eq!(
        (status, v["code"].as_str()),
        (404, Some("no_such_turn")),
        "{v}"
    );
    let (status, _) = svc.get(&format!("/v1/sessions/{id}/turns/x/diff"));
    assert_eq!(status, 404);
}

#[test]
fn a_change_made_between_turns_is_its_own_entry_not_the_next_turns() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let folder = svc.folder("between");
    let id = first_turn(&svc, &folder, "run: echo 1 > a.txt");
    assert_eq!(
        statuses(&await_turn_diff(&svc, &id, 1)),
        pairs(&[("a.txt", "added")])
    );
    // Someone else edits the folder, then the next turn changes another file.
    std::fs::write(folder.join("by-hand.txt"), "mine\n").unwrap();
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "run: echo 2 > b.txt"}),
    );
    assert_eq!(status, 200, "{v}");
    await_turns_ended(&svc, &id, 2);
    let turn2 = await_turn_diff(&svc, &id, 2);
    assert_eq!(statuses(&turn2), pairs(&[("b.txt", "added")]), "{turn2}");
    let events = all_events(&svc, &id, 1024);
    let between: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "folder_changed")
        .collect();
    assert_eq!(between.len(), 1, "{events:?}");
    assert_eq!(between[0]["data"]["before_turn"], 2);
    assert_eq!(
        statuses(&between[0]["data"]),
        pairs(&[("by-hand.txt", "added")])
    );
    // It is journalled before the turn it came before starts.
    let at = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).unwrap();
    assert!(
        at(&|e| e["kind"] == "folder_changed")
            < at(&|e| e["kind"] == "turn_started" && e["data"]["turn"] == 2)
    );
    // And the turn's own diff comes after its end.
    assert!(
        at(&|e| e["kind"] == "turn_diff" && e["data"]["turn"] == 1)
            > at(&|e| e["kind"] == "turn_ended" && e["data"]["turn"] == 1)
    );
}

#[test]
fn a_folder_over_the_limits_is_too_large_to_snapshot_and_its_turn_still_runs() {
    let svc = Service::start(ROOM_CORE, json!({"snapshot_max_entries": 5}));
    let folder = svc.folder("large");
    std::fs::create_dir_all(&folder).unwrap();
    for n in 0..10 {
        std::fs::write(folder.join(format!("f{n}")), "x").unwrap();
    }
    let id = first_turn(&svc, &folder, "run: echo done > out.txt");
    assert!(folder.join("out.txt").exists(), "the turn ran");
    let diff = await_turn_diff(&svc, &id, 1);
    let missing = diff["missing"].as_str().unwrap_or_else(|| panic!("{diff}"));
    assert!(missing.starts_with("too large to snapshot: "), "{missing}");
    assert!(diff.get("files").is_none(), "{diff}");
    let (status, v) = svc.get(&format!("/v1/sessions/{id}/turns/1/diff"));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["missing"], missing);
}

#[test]
fn with_snapshots_off_no_diff_is_journalled_and_the_route_says_why() {
    let svc = Service::start(ROOM_CORE, json!({"snapshots": false}));
    let folder = svc.folder("off");
    let id = first_turn(&svc, &folder, "run: echo 1 > a.txt");
    let events = all_events(&svc, &id, 1024);
    assert!(
        !events.iter().any(|e| e["kind"] == "turn_diff"),
        "{events:?}"
    );
    let (status, v) = svc.get(&format!("/v1/sessions/{id}/turns/1/diff"));
    assert_eq!(
        (status, v["code"].as_str()),
        (409, Some("snapshots_off")),
        "{v}"
    );
}

#[test]
fn the_walk_runs_as_the_agent_account_never_as_root() {
    let Some(agent) = agent_account("the_walk_runs_as_the_agent_account_never_as_root") else {
        return;
    };
    let root = temp_root();
    let svc = Service::start(
        ROOM_CORE,
        json!({"agent_uid": agent.uid.as_raw(), "agent_socket": root.join("agent.sock")}),
    );
    let folder = svc.folder("as-agent");
    std::fs::create_dir_all(&folder).unwrap();
    // A file only root may read, inside the agent's folder.
    std::fs::write(folder.join("root-only"), "secret\n").unwrap();
    std::fs::set_permissions(folder.join("root-only"), PermissionsExt::from_mode(0o600)).unwrap();
    chown_tree(&folder, agent.uid.as_raw(), agent.gid.as_raw());
    nix::unistd::chown(
        &folder.join("root-only"),
        Some(nix::unistd::Uid::from_raw(0)),
        None,
    )
    .unwrap();
    let id = first_turn(&svc, &folder, "run: echo 1 > mine.txt");
    let diff = await_turn_diff(&svc, &id, 1);
    assert_eq!(statuses(&diff), pairs(&[("mine.txt", "added")]), "{diff}");
    let skipped = diff["skipped"]
        .as_array()
        .unwrap_or_else(|| panic!("{diff}"));
    assert_eq!(skipped[0]["path"], "root-only", "{diff}");
    assert!(
        skipped[0]["why"]
            .as_str()
            .unwrap()
            .contains("Permission denied"),
        "{diff}"
    );
    // The walker that answered lingers for the next snapshot: the
    // service's child, as the agent account, with no capabilities and
    // no_new_privs, and where turns get cgroups, in one of its own.
    let service = svc.pid().unwrap();
    let walkers: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains("--snapshot-walk")
                && status.contains(&format!("PPid:\t{service}\n"))
        })
        .collect();
    assert_eq!(walkers.len(), 1, "one walker lingers: {walkers:?}");
    let status = std::fs::read_to_string(format!("/proc/{}/status", walkers[0])).unwrap();
    let uid = format!("Uid:\t{0}\t{0}\t{0}\t{0}\n", agent.uid.as_raw());
    assert!(status.contains(&uid), "{status}");
    assert!(status.contains("NoNewPrivs:\t1\n"), "{status}");
    assert!(status.contains("CapEff:\t0000000000000000\n"), "{status}");
    let cgroup = std::fs::read_to_string(format!("/proc/{}/cgroup", walkers[0])).unwrap();
    let own = std::fs::read_to_string(format!("/proc/{service}/cgroup")).unwrap();
    if let Some(path) = cgroup.lines().find_map(|l| l.strip_prefix("0::")) {
        if path.contains("/room-core/snapshot-") {
            // cgroup2 alone, or beside v1 (a hybrid hierarchy).
            let procs = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
                .iter()
                .find_map(|m| std::fs::read_to_string(format!("{m}{path}/cgroup.procs")).ok())
                .unwrap();
            assert_eq!(procs.trim(), walkers[0].to_string(), "a cgroup of its own");
        } else {
            assert_eq!(cgroup, own, "no cgroups here: the service's own");
            eprintln!("the walker's cgroup is the service's: turns get none on this machine");
        }
    }
    // The store holds no object of the root-only file's bytes.
    let store = svc.state.join("snapshots").join("objects");
    let mut stack = vec![store];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                assert_ne!(std::fs::read(e.path()).unwrap(), b"secret\n");
            }
        }
    }
}

#[test]
fn a_file_written_all_through_its_snapshots_ends_them_in_bounded_time_and_other_sessions_are_answered(
) {
    let svc = Service::start(ROOM_CORE, json!({}));
    let busy = svc.folder("busy");
    let id = first_turn(&svc, &busy, "run: echo 1 > a.txt");
    // Someone appends to a file in the folder for the rest of the test
    // (at most 20 s), through the next turn's snapshots.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, path) = (stop.clone(), busy.join("grow.txt"));
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::File::create(&path).unwrap();
            let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
            while !stop.load(std::sync::atomic::Ordering::Relaxed)
                && std::time::Instant::now() < until
            {
                f.write_all(&[b'x'; 4096]).unwrap();
                // 4 MB/s: a log a build writes, not a disk filler (the
                // caps cover that).
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
    };
    let began = std::time::Instant::now();
    let (status, v) = svc.post(
        &format!("/v1/sessions/{id}/messages"),
        json!({"prompt": "run: echo 2 > b.txt"}),
    );
    assert_eq!(status, 200, "{v}");
    // Another session is started and answered meanwhile.
    let quiet = svc.folder("quiet");
    let other = first_turn(&svc, &quiet, "run: echo 3 > c.txt");
    for _ in 0..20 {
        let asked = std::time::Instant::now();
        let (status, _) = svc.get(&format!("/v1/sessions/{other}"));
        assert_eq!(status, 200);
        assert!(asked.elapsed() < std::time::Duration::from_secs(1));
    }
    let turn2 = await_turn_diff(&svc, &id, 2);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert!(began.elapsed() < std::time::Duration::from_secs(15));
    let files = statuses(&turn2);
    assert!(files.contains(&("b.txt".into(), "added".into())), "{turn2}");
    // The file being written is recorded as it was read, or said to have
    // changed while it was read: never a blocked snapshot.
    let grow_listed = files.iter().any(|(p, _)| p == "grow.txt");
    let grow_skipped = turn2["skipped"]
        .as_array()
        .is_some_and(|s| s.iter().any(|e| e["path"] == "grow.txt"));
    let between = all_events(&svc, &id, 1024)
        .into_iter()
        .find(|e| e["kind"] == "folder_changed")
        .map(|e| e["data"].clone())
        .unwrap_or_default();
    assert!(
        grow_listed || grow_skipped || between.to_string().contains("grow.txt"),
        "turn 2: {turn2}\nbetween: {between}"
    );
}
