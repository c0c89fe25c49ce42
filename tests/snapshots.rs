//! The snapshot library (`room_core::snapshot`) through its public API,
//! with the real walker (`room-core --snapshot-walk`): what a snapshot
//! records, what it reads again, what its diffs say, how it meets a
//! hostile folder (each case bounded in time), and that with the agent
//! account the folder is read as that account, not as root.

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use room_core::snapshot::{Change, EntryKind, Kind, Limits, Snapshots, Taken, TreeId};
use room_kit::{agent_account, procs, skip, TempDir};
use sha2::{Digest, Sha256};

/// The service binary, which is also the walker.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// A store in `state` with `limits`, the walker as the service's account.
fn open(state: &Path, limits: Limits) -> Snapshots {
    Snapshots::open(state, limits, None, PathBuf::from(ROOM_CORE)).unwrap()
}

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The tree's id, or the test fails with what was taken instead.
fn tree_of(taken: Taken) -> (TreeId, Vec<room_core::snapshot::Skipped>) {
    match taken {
        Taken::Tree { id, skipped } => (id, skipped),
        other => panic!("not a tree: {other:?}"),
    }
}

/// Files changed less than the clock's step (100 ms, 2 s where stamps are
/// whole seconds) before a walk are read again next time (a change within
/// it could keep their stat): the tests that show the cache wait longer.
fn settle() {
    std::thread::sleep(Duration::from_millis(1100));
}

#[test]
fn files_modes_links_and_empty_folders_are_recorded_and_only_an_edited_file_is_read_again() {
    let (root, state) = (TempDir::new("snap-folder"), TempDir::new("snap-state"));
    let folder = root.path();
    for i in 0..20 {
        write(
            &folder.join(format!("src/f{i:02}.txt")),
            &format!("line {i}\n"),
        );
    }
    write(&folder.join("run.sh"), "#!/bin/sh\necho hi\n");
    chmod(&folder.join("run.sh"), 0o755);
    std::fs::create_dir_all(folder.join("empty/deeper")).unwrap();
    symlink("src/f00.txt", folder.join("link")).unwrap();
    write(&folder.join(".git/HEAD"), "ref: refs/heads/main\n");
    let snaps = open(state.path(), Limits::default());
    settle();

    let (taken, first) = snaps.take_counted(folder);
    let (id, skipped) = tree_of(taken);
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_eq!((first.files_read, first.files_cached), (21, 0));
    let tree = snaps.tree(&id).unwrap();
    let paths: Vec<&str> = tree.entries.iter().map(|e| e.path.as_str()).collect();
    assert!(paths.contains(&"empty/deeper"), "{paths:?}");
    assert!(!paths.iter().any(|p| p.starts_with(".git")), "{paths:?}");
    assert_eq!(tree.get("run.sh").unwrap().mode, 0o755);
    assert_eq!(
        tree.get("link").unwrap().kind,
        EntryKind::Symlink {
            target: "src/f00.txt".into()
        }
    );
    let EntryKind::File { sha256, size } = &tree.get("src/f03.txt").unwrap().kind else {
        panic!("not a file");
    };
    assert_eq!(snaps.file_bytes(sha256, *size).unwrap(), b"line 3\n");

    write(&folder.join("src/f07.txt"), "line 7, edited\n");
    let (taken, second) = snaps.take_counted(folder);
    let (id2, _) = tree_of(taken);
    assert_eq!(
        (second.files_read, second.bytes_read, second.files_cached),
        (1, 15, 20),
        "only the edited file is read again"
    );
    let changes = snaps.changes(&id, &id2).unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(
        (
            changes[0].path.as_str(),
            changes[0].status,
            changes[0].added,
            changes[0].removed
        ),
        ("src/f07.txt", Change::Modified, Some(1), Some(1))
    );
    // Nothing changed: the same id and no new listing; only the file
    // edited right before the last walk is read once more (it was racy
    // then), and after that nothing.
    settle();
    let (taken, third) = snaps.take_counted(folder);
    assert_eq!(tree_of(taken).0, id2);
    assert_eq!((third.files_read, third.listings_new), (1, 0));
    let (_, fourth) = snaps.take_counted(folder);
    assert_eq!((fourth.files_read, fourth.files_cached), (0, 21));
}

#[test]
fn renames_mode_changes_and_the_unified_text_read_as_git_would_show_them() {
    let (root, state) = (TempDir::new("snap-folder"), TempDir::new("snap-state"));
    let folder = root.path();
    write(&folder.join("old_name.txt"), "same bytes\nmoved\n");
    write(&folder.join("tool.sh"), "echo tool\n");
    chmod(&folder.join("tool.sh"), 0o644);
    write(&folder.join("notes.md"), "a\nb\nc\n");
    std::fs::write(folder.join("blob.bin"), b"\0\x01\x02").unwrap();
    let snaps = open(state.path(), Limits::default());
    let (before, _) = tree_of(snaps.take(folder));

    std::fs::rename(folder.join("old_name.txt"), folder.join("new_name.txt")).unwrap();
    chmod(&folder.join("tool.sh"), 0o755);
    write(&folder.join("notes.md"), "a\nB\nc\nd\n");
    std::fs::write(folder.join("blob.bin"), b"\0\x01\x03").unwrap();
    write(&folder.join(".git/index"), "ignored");
    let (after, _) = tree_of(snaps.take(folder));

    let changes = snaps.changes(&before, &after).unwrap();
    let summary: Vec<String> = changes
        .iter()
        .map(|c| serde_json::to_string(c).unwrap())
        .collect();
    assert_eq!(
        summary,
        [
            r#"{"path":"blob.bin","status":"modified","kind":"file","added":null,"removed":null,"binary":true}"#,
            r#"{"path":"new_name.txt","status":"renamed","from":"old_name.txt","kind":"file","added":0,"removed":0,"binary":false}"#,
            r#"{"path":"notes.md","status":"modified","kind":"file","added":2,"removed":1,"binary":false}"#,
            r#"{"path":"tool.sh","status":"modified","kind":"file","added":0,"removed":0,"binary":false,"mode":{"from":"0644","to":"0755"}}"#,
        ]
    );
    assert_eq!(changes[3].kind, Kind::File);

    let unified = snaps.unified(&before, &after, 1 << 20).unwrap();
    assert!(!unified.truncated);
    assert_eq!(
        unified.text,
        "diff --git a/blob.bin b/blob.bin\n\
         Binary files a/blob.bin and b/blob.bin differ\n\
         diff --git a/old_name.txt b/new_name.txt\n\
         rename from old_name.txt\n\
         rename to new_name.txt\n\
         diff --git a/notes.md b/notes.md\n\
         --- a/notes.md\n\
         +++ b/notes.md\n\
         @@ -1,3 +1,4 @@\n \
         a\n\
         -b\n\
         +B\n \
         c\n\
         +d\n\
         diff --git a/tool.sh b/tool.sh\n\
         old mode 0644\n\
         new mode 0755\n"
    );
    // Cut at a line: whole lines only, and it says so.
    let cut = snaps.unified(&before, &after, 150).unwrap();
    assert!(cut.truncated && cut.text.len() <= 150, "{cut:?}");
    assert!(unified.text.starts_with(&cut.text) && cut.text.ends_with('\n'));
}

#[test]
fn hostile_entries_are_named_not_opened_and_links_are_not_followed() {
    let (root, state) = (TempDir::new("snap-folder"), TempDir::new("snap-state"));
    let (folder, outside) = (root.path().join("work"), root.path().join("outside"));
    write(&folder.join("ok.txt"), "fine\n");
    write(&outside.join("secret.txt"), "SECRET NOT TO BE READ\n");
    nix::unistd::mkfifo(
        &folder.join("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(folder.join("sock")).unwrap();
    symlink("loop", folder.join("loop")).unwrap();
    symlink("ping", folder.join("pong")).unwrap();
    symlink("pong", folder.join("ping")).unwrap();
    symlink(outside.join("secret.txt"), folder.join("escape")).unwrap();
    symlink(&outside, folder.join("escape_dir")).unwrap();
    let device = nix::sys::stat::mknod(
        &folder.join("null"),
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        nix::sys::stat::makedev(1, 3),
    );
    if let Err(e) = &device {
        skip(
            "hostile_entries_are_named_not_opened_and_links_are_not_followed (its device node)",
            &format!("mknod needs root: {e}"),
        );
    }
    let snaps = open(state.path(), Limits::default());

    let t = Instant::now();
    let (id, skipped) = tree_of(snaps.take(&folder));
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let why = |p: &str| {
        skipped
            .iter()
            .find(|s| s.path == p)
            .map(|s| s.why.clone())
            .unwrap_or_else(|| panic!("{p} not reported: {skipped:?}"))
    };
    assert_eq!(why("fifo"), "a FIFO (named pipe), not opened");
    assert_eq!(why("sock"), "a socket, not opened");
    if device.is_ok() {
        assert_eq!(why("null"), "a character device, not opened");
    }
    let tree = snaps.tree(&id).unwrap();
    for (link, target) in [
        ("loop", "loop".to_string()),
        ("ping", "pong".into()),
        ("escape", outside.join("secret.txt").display().to_string()),
        ("escape_dir", outside.display().to_string()),
    ] {
        assert_eq!(
            tree.get(link).map(|e| e.kind.clone()),
            Some(EntryKind::Symlink { target }),
            "{link}"
        );
    }
    assert!(tree.get("escape_dir/secret.txt").is_none());
    // The outside file's bytes are in no object.
    let secret = format!("{:x}", Sha256::digest(b"SECRET NOT TO BE READ\n"));
    assert!(!objects(state.path())
        .iter()
        .any(|(name, _)| *name == secret));
}

#[test]
fn a_sparse_10_gb_file_is_too_large_at_once_without_being_read() {
    let (root, state) = (TempDir::new("snap-folder"), TempDir::new("snap-state"));
    let f = std::fs::File::create(root.path().join("huge.img")).unwrap();
    f.set_len(10 << 30).unwrap();
    let snaps = open(state.path(), Limits::default());
    let t = Instant::now();
    let taken = snaps.take(root.path());
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(
        taken,
        Taken::TooLarge {
            why: "the folder's files hold more than 1073741824 bytes (max_bytes)".into()
        }
    );
}

#[test]
fn a_million_small_files_are_too_large_at_once_and_cost_only_the_entries_cap() {
    // 1,000 folders of 1,000 names each: hard links to one file per
    // folder (a link is a dentry, not an inode: fast to make, and the
    // walker sees each as the regular file it is).
    let (root, state) = (TempDir::new("snap-million"), TempDir::new("snap-state"));
    for d in 0..1000 {
        let dir = root.path().join(format!("d{d:04}"));
        std::fs::create_dir(&dir).unwrap();
        let seed = dir.join("f0000");
        std::fs::write(&seed, b"x").unwrap();
        for i in 1..1000 {
            std::fs::hard_link(&seed, dir.join(format!("f{i:04}"))).unwrap();
        }
    }
    let t = Instant::now();
    let taken = open(state.path(), Limits::default()).take(root.path());
    let took = t.elapsed();
    assert_eq!(
        taken,
        Taken::TooLarge {
            why: "the folder has more than 200000 entries (max_entries)".into()
        }
    );
    // The walk stops at the cap: the 800,000 names after it are never read.
    assert!(took < Duration::from_secs(30), "{took:?}");
    eprintln!("a million entries: too large after {took:?}");
}

#[test]
fn more_entries_than_max_entries_is_too_large() {
    let (root, state) = (TempDir::new("snap-folder"), TempDir::new("snap-state"));
    for i in 0..300 {
        std::fs::write(root.path().join(format!("f{i}")), b"x").unwrap();
    }
    let limits = Limits {
        max_entries: 100,
        ..Limits::default()
    };
    let taken = open(state.path(), limits).take(root.path());
    assert_eq!(
        taken,
        Taken::TooLarge {
            why: "the folder has more than 100 entries (max_entries)".into()
        }
    );
}

#[test]
fn a_deadline_hit_fails_in_bounded_time_and_leaves_no_walker() {
    let (root, state) = (TempDir::new("snap-folder"), TempDir::new("snap-state"));
    for d in 0..30 {
        for i in 0..100 {
            write(&root.path().join(format!("d{d}/f{i}")), "some bytes\n");
        }
    }
    let bin = TempDir::new("snap-walker");
    let walker = procs::named_copy(ROOM_CORE, bin.path(), "walker-of-this-test");
    let limits = Limits {
        deadline: Duration::from_millis(5),
        ..Limits::default()
    };
    let snaps = Snapshots::open(state.path(), limits, None, walker.clone()).unwrap();
    let t = Instant::now();
    let taken = snaps.take(root.path());
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let Taken::Failed { why } = taken else {
        panic!("not a failure: {taken:?}");
    };
    assert!(
        why.ends_with("did not finish within 0.005 s (its deadline)"),
        "{why}"
    );
    assert_eq!(procs::running(&walker), Vec::<u32>::new(), "walkers left");
}

#[test]
fn one_walker_answers_snapshot_after_snapshot_and_one_killed_between_them_is_replaced() {
    let (root, state) = (TempDir::new("snap-folder"), TempDir::new("snap-state"));
    write(&root.path().join("a.txt"), "one\n");
    let bin = TempDir::new("snap-walker");
    let walker = procs::named_copy(ROOM_CORE, bin.path(), "walker-of-this-test");
    let snaps = Snapshots::open(state.path(), Limits::default(), None, walker.clone()).unwrap();
    let (first, _) = tree_of(snaps.take(root.path()));
    let kept = procs::running(&walker);
    assert_eq!(
        kept.len(),
        1,
        "one walker waits for the next snapshot: {kept:?}"
    );
    write(&root.path().join("a.txt"), "two\n");
    let (second, _) = tree_of(snaps.take(root.path()));
    assert_ne!(first, second);
    assert_eq!(
        procs::running(&walker),
        kept,
        "the same walker answered again"
    );
    // The agent account may kill its own processes, the walker among them.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(kept[0] as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    write(&root.path().join("a.txt"), "three\n");
    let (third, _) = tree_of(snaps.take(root.path()));
    assert_ne!(third, second);
    let now = procs::running(&walker);
    assert!(
        now.len() == 1 && now != kept,
        "a new walker, the old one reaped: {now:?} (was {kept:?})"
    );
    drop(snaps);
    assert_eq!(
        procs::running(&walker),
        Vec::<u32>::new(),
        "the store's end ends its walker"
    );
}

#[test]
fn as_the_agent_account_the_walk_reads_only_what_that_account_may() {
    let test = "as_the_agent_account_the_walk_reads_only_what_that_account_may";
    let Some(agent) = agent_account(test) else {
        return;
    };
    let (root, state) = (TempDir::new("snap-folder"), TempDir::new("snap-state"));
    chmod(root.path(), 0o755);
    let folder = root.path().join("agent");
    write(&folder.join("mine.txt"), "the agent's\n");
    write(&folder.join("root_only.txt"), "root's 0600\n");
    write(&folder.join("locked.txt"), "root's 000\n");
    let (uid, gid) = (agent.uid, agent.gid);
    for p in [&folder, &folder.join("mine.txt")] {
        nix::unistd::chown(p, Some(uid), Some(gid)).unwrap();
    }
    chmod(&folder.join("root_only.txt"), 0o600);
    chmod(&folder.join("locked.txt"), 0o000);
    let account = room_core::supervise::Account {
        uid: uid.as_raw(),
        gid: gid.as_raw(),
        groups: vec![],
    };
    let snaps = Snapshots::open(
        state.path(),
        Limits::default(),
        Some(account),
        PathBuf::from(ROOM_CORE),
    )
    .unwrap();
    let (id, skipped) = tree_of(snaps.take(&folder));
    let mut said: Vec<(String, String)> = skipped.into_iter().map(|s| (s.path, s.why)).collect();
    said.sort();
    assert_eq!(
        said,
        [
            (
                "locked.txt".into(),
                "cannot be read: Permission denied".into()
            ),
            (
                "root_only.txt".into(),
                "cannot be read: Permission denied".into()
            ),
        ]
    );
    let tree = snaps.tree(&id).unwrap();
    assert!(matches!(
        tree.get("mine.txt").unwrap().kind,
        EntryKind::File { size: 12, .. }
    ));
    assert!(tree.get("root_only.txt").is_none());
    // The store stays the service's: 0700 folders, 0600 files.
    for (_, path) in objects(state.path()) {
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
    }
}

#[test]
fn every_object_in_the_store_holds_the_bytes_it_is_named_by() {
    let (root, state) = (TempDir::new("snap-folder"), TempDir::new("snap-state"));
    for i in 0..10 {
        write(
            &root.path().join(format!("d{}/f{i}", i % 3)),
            &"x".repeat(i * 1000),
        );
    }
    std::fs::write(root.path().join("big"), vec![3u8; 5 << 20]).unwrap();
    let snaps = open(state.path(), Limits::default());
    tree_of(snaps.take(root.path()));
    let all = objects(state.path());
    assert!(all.len() >= 12, "{}", all.len());
    for (name, path) in all {
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(format!("{:x}", Sha256::digest(&bytes)), name);
    }
    let dir_mode = std::fs::metadata(state.path().join("snapshots/objects"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
}

/// Every object in the store under `state`: its name (the sha256) and path.
fn objects(state: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let dir = state.join("snapshots/objects");
    for fan in std::fs::read_dir(dir).unwrap().flatten() {
        let prefix = fan.file_name().to_string_lossy().into_owned();
        if prefix == "tmp" {
            continue;
        }
        for obj in std::fs::read_dir(fan.path()).unwrap().flatten() {
            let name = format!("{prefix}{}", obj.file_name().to_string_lossy());
            if name.len() == 64 {
                out.push((name, obj.path()));
            }
        }
    }
    out
}
