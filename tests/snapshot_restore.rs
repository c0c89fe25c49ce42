//! Restoring a folder to a recorded tree (`Snapshots::restore`) through the
//! snapshot library's public API, with the real restorer (`room-core
//! --snapshot-restore`): a folder a shell changed comes back to exactly
//! its tree, and what the restore says it wrote is what `changes` lists; a
//! link the agent plants is never written through; what the snapshot did
//! not record (a FIFO) is never removed or opened; as the agent account
//! the files are the agent's and what it may not write stays as it was;
//! a missed deadline leaves no restorer behind; a restorer killed while
//! it writes a file leaves no temporary file in the folder. Each case is
//! bounded in time.

use std::os::unix::fs::{symlink, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use room_core::snapshot::{Change, Limits, Restored, Snapshots, Taken, TreeId};
use room_kit::{agent_account, procs, TempDir};

/// The service binary, which is also the walker and the restorer.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// Far more than any restore here needs.
const AT_ONCE: Duration = Duration::from_secs(10);

/// A store in `state` with `limits`, the helpers as the service's account.
fn open(state: &Path, limits: Limits) -> Snapshots {
    Snapshots::open(state, limits, None, PathBuf::from(ROOM_CORE)).unwrap()
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, bytes).unwrap();
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// The tree taken of `folder` now, or the test fails with what was taken.
fn take(snaps: &Snapshots, folder: &Path) -> TreeId {
    match snaps.take(folder) {
        Taken::Tree { id, .. } => id,
        other => panic!("not a tree: {other:?}"),
    }
}

/// [`Snapshots::restore`], within [`AT_ONCE`], or the test fails.
fn restore(snaps: &Snapshots, folder: &Path, now: &TreeId, to: &TreeId) -> Restored {
    let t = Instant::now();
    let restored = snaps.restore(folder, now, to);
    assert!(t.elapsed() < AT_ONCE, "{:?}", t.elapsed());
    restored.unwrap_or_else(|e| panic!("the restore failed: {e}"))
}

/// The paths of `changes(now, to)` as a restore reports them: those of
/// `to` (a renamed file's new path among them), then those only in `now`
/// (a renamed file's old path among them); each sorted.
fn listed(snaps: &Snapshots, now: &TreeId, to: &TreeId) -> (Vec<String>, Vec<String>) {
    let (mut written, mut deleted) = (Vec::new(), Vec::new());
    for c in snaps.changes(now, to).unwrap() {
        match c.status {
            Change::Deleted => deleted.push(c.path),
            Change::Renamed => {
                written.push(c.path);
                deleted.push(c.from.expect("a rename says where from"));
            }
            _ => written.push(c.path),
        }
    }
    written.sort();
    deleted.sort();
    (written, deleted)
}

/// Every entry under `dir` (links not followed): its path, kind, bits and
/// bytes or target, sorted; what "byte-for-byte unchanged" compares.
fn listing(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.file_type().is_symlink() {
                format!("link {}", std::fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                todo.push(path.clone());
                "dir".into()
            } else {
                format!("file {:?}", std::fs::read(&path).unwrap())
            };
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            let mode = meta.permissions().mode() & 0o7777;
            out.push((rel, format!("{what} {mode:o} {}", meta.uid())));
        }
    }
    out.sort();
    out
}

#[test]
fn a_folder_a_shell_changed_is_restored_to_exactly_its_tree_and_the_restore_lists_what_changes_lists(
) {
    let (root, state) = (
        TempDir::new("restore-folder"),
        TempDir::new("restore-state"),
    );
    let (folder, outside) = (root.path().join("work"), root.path().join("outside"));
    write(&outside.join("secret.txt"), "outside the folder\n");
    write(&folder.join("README.md"), "hello\n");
    write(&folder.join("src/main.rs"), "fn main() {}\n");
    write(&folder.join("src/lib/deep/mod.rs"), "pub mod x;\n");
    write(&folder.join("run.sh"), "#!/bin/sh\necho hi\n");
    chmod(&folder.join("run.sh"), 0o755);
    write(&folder.join("notes.txt"), "a\nb\nc\n");
    write(&folder.join("data.bin"), b"\0\x01\x02binary");
    write(&folder.join("becomes_a_folder"), "a file, for now\n");
    write(&folder.join("moved.txt"), "the same bytes, moved\n");
    // Over one chunk each way (the service sends 256 KiB, the protocol
    // allows 1 MiB).
    let big: Vec<u8> = (0..3u32 << 20).map(|i| (i % 251) as u8).collect();
    write(&folder.join("big.bin"), &big);
    symlink(outside.join("secret.txt"), folder.join("out_link")).unwrap();
    symlink("nowhere/at/all", folder.join("dangling")).unwrap();
    std::fs::create_dir_all(folder.join("empty")).unwrap();
    write(&folder.join(".git/HEAD"), "ref: refs/heads/main\n");
    let snaps = open(state.path(), Limits::default());
    let a = take(&snaps, &folder);

    // What an agent's shell does: `sed -i` (a new file renamed over), `rm`,
    // `mv`, `chmod +x`, `ln -s`, `mkdir`, a file replaced by a folder, a
    // subtree removed, a link retargeted, a folder's bits changed.
    write(&folder.join(".notes.txt.sed"), "a\nB\nc\n");
    std::fs::rename(folder.join(".notes.txt.sed"), folder.join("notes.txt")).unwrap();
    std::fs::remove_file(folder.join("README.md")).unwrap();
    std::fs::rename(folder.join("moved.txt"), folder.join("src/moved.txt")).unwrap();
    chmod(&folder.join("src/main.rs"), 0o755);
    symlink("src/main.rs", folder.join("new_link")).unwrap();
    std::fs::create_dir(folder.join("new_empty")).unwrap();
    std::fs::remove_file(folder.join("becomes_a_folder")).unwrap();
    write(&folder.join("becomes_a_folder/inside.txt"), "inside\n");
    std::fs::remove_dir_all(folder.join("src/lib")).unwrap();
    std::fs::remove_file(folder.join("dangling")).unwrap();
    std::fs::remove_file(folder.join("out_link")).unwrap();
    symlink("/elsewhere", folder.join("out_link")).unwrap();
    let mut edited = big.clone();
    edited[2 << 20] ^= 0xff;
    write(&folder.join("big.bin"), &edited);
    chmod(&folder.join("empty"), 0o700);
    write(&folder.join(".git/index"), "not recorded");
    let b = take(&snaps, &folder);
    assert_ne!(a, b);

    let restored = restore(&snaps, &folder, &b, &a);
    assert_eq!(restored.failed, [], "nothing failed");
    let (written, deleted) = listed(&snaps, &b, &a);
    assert_eq!(restored.written, written);
    assert_eq!(restored.deleted, deleted);
    assert!(
        written.contains(&"becomes_a_folder".to_string())
            && deleted.contains(&"becomes_a_folder/inside.txt".to_string())
            && written.contains(&"moved.txt".to_string())
            && deleted.contains(&"src/moved.txt".to_string()),
        "{written:?} {deleted:?}"
    );
    assert_eq!(take(&snaps, &folder), a, "the folder is its tree again");
    assert_eq!(read(&folder.join("notes.txt")), "a\nb\nc\n");
    assert_eq!(std::fs::read(folder.join("big.bin")).unwrap(), big);
    let mode = |p: &str| {
        std::fs::metadata(folder.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(
        (mode("run.sh"), mode("src/main.rs"), mode("empty")),
        (0o755, 0o644, 0o755)
    );
    assert_eq!(
        std::fs::read_link(folder.join("dangling")).unwrap(),
        Path::new("nowhere/at/all")
    );
    // What the snapshots leave out is left alone; nothing was written
    // outside.
    assert_eq!(read(&folder.join(".git/index")), "not recorded");
    assert_eq!(read(&outside.join("secret.txt")), "outside the folder\n");
    // Restored already: nothing to do, and no restorer is started.
    assert_eq!(restore(&snaps, &folder, &a, &a), Restored::default());
}

#[test]
fn a_link_planted_where_a_folder_was_is_never_written_through() {
    let (root, state) = (
        TempDir::new("restore-folder"),
        TempDir::new("restore-state"),
    );
    let (folder, outside) = (root.path().join("work"), root.path().join("outside"));
    write(&folder.join("dir/a.txt"), "recorded\n");
    write(&folder.join("dir/sub/b.txt"), "recorded too\n");
    write(&folder.join("top.txt"), "top\n");
    write(&outside.join("a.txt"), "outside's own\n");
    write(&outside.join("sub/keep.txt"), "outside's own too\n");
    let snaps = open(state.path(), Limits::default());
    let a = take(&snaps, &folder);
    write(&folder.join("dir/a.txt"), "changed\n");
    write(&folder.join("dir/new.txt"), "new\n");
    std::fs::remove_file(folder.join("dir/sub/b.txt")).unwrap();
    write(&folder.join("top.txt"), "top, changed\n");
    let b = take(&snaps, &folder);

    // Between the snapshot and the restore, the agent swaps the folder
    // for a link to another one.
    std::fs::rename(folder.join("dir"), root.path().join("dir.away")).unwrap();
    symlink(&outside, folder.join("dir")).unwrap();
    let before = listing(&outside);
    let restored = restore(&snaps, &folder, &b, &a);
    assert_eq!(
        listing(&outside),
        before,
        "nothing written through the link"
    );
    let failed: Vec<&str> = restored.failed.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(failed, ["dir/a.txt", "dir/new.txt", "dir/sub/b.txt"]);
    for s in &restored.failed {
        assert!(
            s.why
                == "cannot be reached: dir is a symbolic link or not a folder, and the restore follows no link",
            "{s:?}"
        );
    }
    assert_eq!(restored.written, ["top.txt"], "the rest is restored");
    assert_eq!(read(&folder.join("top.txt")), "top\n");
    assert_eq!(std::fs::read_link(folder.join("dir")).unwrap(), outside);

    // The folder itself a link: the restore does not start.
    let alias = root.path().join("alias");
    symlink(&folder, &alias).unwrap();
    let e = snaps.restore(&alias, &b, &a).unwrap_err();
    assert!(
        e.starts_with(&format!("cannot restore {}: ", alias.display()))
            && e.contains("is a symbolic link"),
        "{e}"
    );
    assert_eq!(listing(&outside), before);
}

#[test]
fn a_fifo_the_snapshot_did_not_record_is_left_and_its_folder_is_reported_not_removed() {
    let (root, state) = (
        TempDir::new("restore-folder"),
        TempDir::new("restore-state"),
    );
    let folder = root.path();
    write(&folder.join("keep/x.txt"), "one\n");
    let snaps = open(state.path(), Limits::default());
    let a = take(&snaps, folder);
    write(&folder.join("gone/f.txt"), "made after\n");
    let fifo = folder.join("gone/fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    write(&folder.join("keep/x.txt"), "two\n");
    let b = take(&snaps, folder);

    let restored = restore(&snaps, folder, &b, &a);
    assert_eq!(restored.written, ["keep/x.txt"]);
    assert_eq!(restored.deleted, ["gone/f.txt"]);
    let failed: Vec<(&str, &str)> = restored
        .failed
        .iter()
        .map(|s| (s.path.as_str(), s.why.as_str()))
        .collect();
    assert_eq!(
        failed,
        [(
            "gone",
            "cannot be removed: Directory not empty (it holds what the snapshot did not record, or what could not be removed)"
        )]
    );
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(read(&folder.join("keep/x.txt")), "one\n");
}

#[test]
fn setuid_and_setgid_bits_are_never_restored() {
    let (root, state) = (
        TempDir::new("restore-folder"),
        TempDir::new("restore-state"),
    );
    let folder = root.path();
    write(&folder.join("tool"), "#!/bin/sh\n");
    chmod(&folder.join("tool"), 0o4755);
    std::fs::create_dir(folder.join("shared")).unwrap();
    chmod(&folder.join("shared"), 0o2775);
    let snaps = open(state.path(), Limits::default());
    let a = take(&snaps, folder);
    write(&folder.join("tool"), "#!/bin/sh\necho changed\n");
    chmod(&folder.join("shared"), 0o755);
    let b = take(&snaps, folder);

    let restored = restore(&snaps, folder, &b, &a);
    assert_eq!(
        (restored.written, restored.failed),
        (vec!["shared".to_string(), "tool".into()], vec![])
    );
    let mode = |p: &str| {
        std::fs::metadata(folder.join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!((mode("tool"), mode("shared")), (0o755, 0o775));
    assert_eq!(read(&folder.join("tool")), "#!/bin/sh\n");
}

#[test]
fn as_the_agent_account_the_files_are_the_agents_and_what_it_may_not_write_is_left_as_it_was() {
    let test =
        "as_the_agent_account_the_files_are_the_agents_and_what_it_may_not_write_is_left_as_it_was";
    let Some(agent) = agent_account(test) else {
        return;
    };
    let (root, state) = (
        TempDir::new("restore-folder"),
        TempDir::new("restore-state"),
    );
    chmod(root.path(), 0o755);
    let folder = root.path().join("agent");
    write(&folder.join("mine.txt"), "the agent's\n");
    write(&folder.join("made/inner.txt"), "made again\n");
    write(&folder.join("roots/locked.txt"), "root's\n");
    let (uid, gid) = (agent.uid, agent.gid);
    for p in ["", "mine.txt", "made", "made/inner.txt"] {
        nix::unistd::chown(&folder.join(p), Some(uid), Some(gid)).unwrap();
    }
    chmod(&folder.join("roots"), 0o755);
    chmod(&folder.join("roots/locked.txt"), 0o644);
    // Closed to its owner too: filled before its bits are set.
    chmod(&folder.join("made"), 0o555);
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
    let a = take(&snaps, &folder);
    write(&folder.join("mine.txt"), "changed\n");
    std::fs::remove_dir_all(folder.join("made")).unwrap();
    write(
        &folder.join("new.txt"),
        "root's new file, in the agent's folder\n",
    );
    write(&folder.join("roots/locked.txt"), "root's, changed\n");
    let b = take(&snaps, &folder);

    let restored = restore(&snaps, &folder, &b, &a);
    assert_eq!(restored.written, ["made", "made/inner.txt", "mine.txt"]);
    assert_eq!(restored.deleted, ["new.txt"]);
    let failed: Vec<(&str, &str)> = restored
        .failed
        .iter()
        .map(|s| (s.path.as_str(), s.why.as_str()))
        .collect();
    assert_eq!(
        failed,
        [("roots/locked.txt", "cannot be written: Permission denied")]
    );
    for p in ["mine.txt", "made", "made/inner.txt"] {
        let meta = std::fs::symlink_metadata(folder.join(p)).unwrap();
        assert_eq!(
            (meta.uid(), meta.gid()),
            (uid.as_raw(), gid.as_raw()),
            "{p}"
        );
    }
    assert_eq!(read(&folder.join("mine.txt")), "the agent's\n");
    assert_eq!(read(&folder.join("made/inner.txt")), "made again\n");
    let made = std::fs::metadata(folder.join("made")).unwrap();
    assert_eq!(made.permissions().mode() & 0o7777, 0o555);
    assert_eq!(read(&folder.join("roots/locked.txt")), "root's, changed\n");
    assert_eq!(
        std::fs::metadata(folder.join("roots/locked.txt"))
            .unwrap()
            .uid(),
        0
    );
    // No temporary file was left where the write failed.
    assert_eq!(
        std::fs::read_dir(folder.join("roots")).unwrap().count(),
        1,
        "only locked.txt"
    );
}

#[test]
fn a_deadline_hit_fails_in_bounded_time_and_leaves_no_restorer() {
    let (root, state) = (
        TempDir::new("restore-folder"),
        TempDir::new("restore-state"),
    );
    for d in 0..30 {
        for i in 0..100 {
            write(&root.path().join(format!("d{d}/f{i}")), "some bytes\n");
        }
    }
    let a = take(&open(state.path(), Limits::default()), root.path());
    for d in 0..30 {
        std::fs::remove_dir_all(root.path().join(format!("d{d}"))).unwrap();
    }
    let b = take(&open(state.path(), Limits::default()), root.path());
    let bin = TempDir::new("restore-helper");
    let helper = procs::named_copy(ROOM_CORE, bin.path(), "restorer-of-this-test");
    let limits = Limits {
        deadline: Duration::from_millis(5),
        ..Limits::default()
    };
    let snaps = Snapshots::open(state.path(), limits, None, helper.clone()).unwrap();
    let t = Instant::now();
    let e = snaps.restore(root.path(), &b, &a).unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(
        e,
        format!(
            "the restore of {} did not finish within 0.005 s (its deadline)",
            root.path().display()
        )
    );
    assert_eq!(procs::running(&helper), Vec::<u32>::new(), "restorers left");
}

/// The bytes process `pid` has passed to `write` and its kin
/// (`/proc/<pid>/io`'s `wchar`); 0 once it is gone.
fn written(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|l| l.strip_prefix("wchar: "))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

#[test]
fn a_restorer_killed_while_it_writes_a_file_leaves_no_temporary_file() {
    let (root, state) = (
        TempDir::new("restore-folder"),
        TempDir::new("restore-state"),
    );
    let folder = root.path();
    // Large enough that the restorer is still writing it when it is seen
    // to have started.
    write(&folder.join("big.bin"), vec![0x5a; 200 << 20]);
    let a = take(&open(state.path(), Limits::default()), folder);
    write(&folder.join("big.bin"), "small now\n");
    let b = take(&open(state.path(), Limits::default()), folder);
    let bin = TempDir::new("restore-helper");
    let helper = procs::named_copy(ROOM_CORE, bin.path(), "restorer-killed-mid-file");
    let snaps = Snapshots::open(state.path(), Limits::default(), None, helper.clone()).unwrap();

    let restored = std::thread::scope(|s| {
        let restoring = s.spawn(|| snaps.restore(folder, &b, &a));
        // Its answer stays in its buffer until the end, so every byte it
        // has written is the file's: a MiB of them is the file begun.
        let t = Instant::now();
        let pid = loop {
            assert!(
                !restoring.is_finished(),
                "the restore ended before its restorer was seen writing"
            );
            assert!(t.elapsed() < AT_ONCE, "no restorer wrote a MiB");
            let started = procs::running(&helper)
                .into_iter()
                .find(|pid| written(*pid) >= 1 << 20);
            if let Some(pid) = started {
                break pid;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        // As the service's deadline or the agent account would kill it.
        let pid = nix::unistd::Pid::from_raw(pid as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
        restoring.join().unwrap()
    });
    assert!(restored.is_err(), "killed mid-file: {restored:?}");
    let names: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["big.bin"], "no temporary file is left");
    assert_eq!(read(&folder.join("big.bin")), "small now\n");
    assert_eq!(procs::running(&helper), Vec::<u32>::new(), "restorers left");
}

#[test]
fn a_restorer_that_breaks_the_protocol_is_refused_and_ended_with_what_it_started() {
    let (root, state) = (
        TempDir::new("restore-folder"),
        TempDir::new("restore-state"),
    );
    let folder = root.path();
    write(&folder.join("a.txt"), "one\n");
    let a = take(&open(state.path(), Limits::default()), folder);
    write(&folder.join("a.txt"), "two\n");
    write(&folder.join("b.txt"), "new\n");
    let b = take(&open(state.path(), Limits::default()), folder);
    let bin = TempDir::new("restore-helper");
    // A restorer that starts a child of its own that would outlive the
    // test (as a hostile one would), and once it runs says what it likes
    // and waits.
    let fake = |name: &str, answer: &str| {
        let path = bin.path().join(name);
        write(
            &path,
            format!(
                "#!/bin/sh\nsleep 3600.{n} &\n\
                 until grep -q '3600[.]{n}' /proc/$!/cmdline; do :; done\n\
                 {answer}\nwait\n",
                n = name.len()
            ),
        );
        chmod(&path, 0o755);
        let snaps = Snapshots::open(state.path(), Limits::default(), None, path).unwrap();
        let t = Instant::now();
        let e = snaps.restore(folder, &b, &a).unwrap_err();
        assert!(t.elapsed() < AT_ONCE, "{:?}", t.elapsed());
        // SIGKILLed with its group, the child may take a moment to go (a
        // zombie's cmdline is empty).
        let sleep = format!("3600.{}", name.len());
        let running = || -> Vec<u32> {
            std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter(|p| {
                    std::fs::read(p.path().join("cmdline"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&sleep))
                })
                .filter_map(|p| p.file_name().to_str()?.parse().ok())
                .collect()
        };
        let t = Instant::now();
        while !running().is_empty() && t.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            running(),
            Vec::<u32>::new(),
            "{name}: what it started is ended"
        );
        e
    };
    // Two operations (a.txt written, b.txt removed): three results.
    let e = fake("three", "printf 'RCRESTA1OOO'");
    assert_eq!(
        e,
        "the restore helper's answer was refused: it answered more operations than the 2 it was sent"
    );
    let e = fake("wrong-magic", "printf 'RCSNAPA1E'");
    assert_eq!(
        e,
        "the restore helper's answer was refused: it does not start as a restore's answer"
    );
    let e = fake("long-why", "printf 'RCRESTA1X\\000\\001\\000\\000'");
    assert_eq!(
        e,
        "the restore helper's answer was refused: a string of 65536 bytes (at most 1024)"
    );
    assert_eq!(
        read(&folder.join("a.txt")),
        "two\n",
        "the fakes wrote nothing"
    );

    // No folder there: the restore does not start.
    let gone = folder.join("not-there");
    let e = open(state.path(), Limits::default())
        .restore(&gone, &b, &a)
        .unwrap_err();
    assert_eq!(
        e,
        format!("cannot restore {0}: {0} is not there", gone.display())
    );
}
