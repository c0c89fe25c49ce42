//! Section `snapshot`: the turn-end snapshot of a 10,000-file, 200 MB
//! folder in which the turn changed 10 files (`Snapshots::take`, its stat
//! cache warmed by a first snapshot, the walker being the room-core binary
//! as in the service), beside `git add -A && git commit -q` of the same
//! change in the same run; the floor any walk that stats every file stands
//! on, one `fstatat` per entry of the same folder, in-process; and how
//! much the store grows for that turn.

use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use nix::dir::Dir;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{fstatat, Mode};
use room_core::snapshot::{Limits, Snapshots, Taken};

use crate::stats::{ms, stats, Table};

/// Files in the folder, spread over [`FOLDERS`] folders.
const FILES: usize = 10_000;
/// Folders the files are in.
const FOLDERS: usize = 100;
/// Each file's size: 10,000 of them make 200 MB.
const FILE_BYTES: usize = 20_000;
/// Files one turn changes.
const CHANGED: usize = 10;
/// Turns timed.
const TURNS: usize = 15;
/// Rounds of the stat floor timed.
const FLOOR_ROUNDS: usize = 15;
/// The pause between turns: turns are seconds apart (a file changed less
/// than the clock's step before a walk is read again by the next one: the
/// cache's racy-file rule).
const TURN_GAP: Duration = Duration::from_millis(1100);

/// Text-like bytes for file `i`, version `v`, exactly [`FILE_BYTES`] long.
fn content(i: usize, v: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(FILE_BYTES + 80);
    let mut n = 0usize;
    while out.len() < FILE_BYTES {
        let line = format!(
            "    let value_{n} = compute({i}, {v}, {}); // line {n} of file {i}\n",
            (i * 7919 + n * 104_729 + v * 31) % 1_000_003
        );
        out.extend_from_slice(line.as_bytes());
        n += 1;
    }
    out.truncate(FILE_BYTES);
    out
}

fn file_path(folder: &Path, i: usize) -> std::path::PathBuf {
    folder
        .join(format!("dir{:03}", i % FOLDERS))
        .join(format!("file{i:05}.rs"))
}

/// The bytes of every file under `dir`.
fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => todo.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// Each folder's name in `dir` with the names in it, read once: the stat
/// floor times the stats, not the listings. `.git` is left out, as the
/// walk leaves it out.
fn listing(dir: &Path) -> Vec<(CString, Vec<CString>)> {
    let name = |e: &std::fs::DirEntry| CString::new(e.file_name().as_bytes()).unwrap();
    let mut out: Vec<(CString, Vec<CString>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != ".git")
        .map(|e| {
            let inside = std::fs::read_dir(e.path())
                .unwrap()
                .map(|f| name(&f.unwrap()))
                .collect();
            (name(&e), inside)
        })
        .collect();
    out.sort();
    out
}

/// One round of the stat floor over `folder`, in ms: the folder opened,
/// one `fstatat(AT_SYMLINK_NOFOLLOW)` per entry (each folder's in the
/// folder, each file's in its own folder, opened as the walk opens it).
fn stat_round(folder: &Path, names: &[(CString, Vec<CString>)]) -> f64 {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let nofollow = AtFlags::AT_SYMLINK_NOFOLLOW;
    let t = Instant::now();
    let top = Dir::open(folder, flags, Mode::empty()).unwrap();
    for (dir, files) in names {
        fstatat(Some(top.as_raw_fd()), dir.as_c_str(), nofollow).unwrap();
        let inside =
            Dir::openat(Some(top.as_raw_fd()), dir.as_c_str(), flags, Mode::empty()).unwrap();
        for f in files {
            fstatat(Some(inside.as_raw_fd()), f.as_c_str(), nofollow).unwrap();
        }
    }
    t.elapsed().as_secs_f64() * 1000.0
}

fn git(folder: &Path, script: &str) -> bool {
    Command::new("sh")
        .args(["-c", script])
        .current_dir(folder)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs the section.
pub(crate) fn snapshot(table: &mut Table) {
    println!("\nsnapshot: the turn-end snapshot of a 10,000-file, 200 MB folder, 10 files changed");
    let root =
        std::env::temp_dir().join(format!("room-core-bench-snapshot-{}", std::process::id()));
    let (folder, state) = (root.join("folder"), root.join("state"));
    for i in 0..FILES {
        let p = file_path(&folder, i);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content(i, 0)).unwrap();
    }
    let has_git = Command::new("git")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if has_git {
        assert!(git(
            &folder,
            "git init -q && git add -A && git commit -q -m start"
        ));
    }
    let helper = std::path::PathBuf::from(env!("CARGO_BIN_EXE_room-core"));
    let snaps = Snapshots::open(&state, Limits::default(), None, helper).unwrap();
    std::thread::sleep(TURN_GAP);
    let t = Instant::now();
    let (first, counts) = snaps.take_counted(&folder);
    let first_ms = t.elapsed().as_secs_f64() * 1000.0;
    assert!(matches!(first, Taken::Tree { .. }), "{first:?}");
    table.row(
        "snapshot, first (nothing cached)",
        "10,000 files, 200 MB",
        ms(first_ms),
        "-".into(),
        format!(
            "{} files read, {} MB",
            counts.files_read,
            counts.bytes_read >> 20
        ),
    );
    let (mut takes, mut gits, mut growth, mut read) = (vec![], vec![], vec![], vec![]);
    let objects = state.join("snapshots/objects");
    for turn in 1..=TURNS {
        std::thread::sleep(TURN_GAP);
        for k in 0..CHANGED {
            let i = (turn * 613 + k * 997) % FILES;
            std::fs::write(file_path(&folder, i), content(i, turn)).unwrap();
        }
        let before = size_of(&objects);
        let t = Instant::now();
        let (taken, counts) = snaps.take_counted(&folder);
        takes.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(matches!(taken, Taken::Tree { .. }), "{taken:?}");
        growth.push((size_of(&objects) - before) as f64);
        read.push(counts.files_read as f64);
        if has_git {
            let t = Instant::now();
            assert!(git(&folder, "git add -A && git commit -q -m turn"));
            gits.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    let names = listing(&folder);
    let stat_calls = names.len() + names.iter().map(|(_, f)| f.len()).sum::<usize>();
    let floor: Vec<f64> = (0..FLOOR_ROUNDS)
        .map(|_| stat_round(&folder, &names))
        .collect();
    let (p50, p99) = stats(&takes);
    let (read50, _) = stats(&read);
    table.row(
        "snapshot at turn end (cache warm)",
        "10,000 files, 200 MB, 10 changed",
        ms(p50),
        ms(p99),
        format!("{read50:.0} files read; {TURNS} turns"),
    );
    let fifth_of_git = if has_git {
        let (g50, g99) = stats(&gits);
        table.row(
            "git add -A && git commit -q (same change)",
            "10,000 files, 200 MB, 10 changed",
            ms(g50),
            ms(g99),
            format!("snapshot is {:.1}x faster", g50 / p50),
        );
        format!("git's median / 5 = {}; ", ms(g50 / 5.0))
    } else {
        table.row(
            "git add -A && git commit -q (same change)",
            "10,000 files, 200 MB, 10 changed",
            "-".into(),
            "-".into(),
            "skipped: no git on this machine".into(),
        );
        String::new()
    };
    let (f50, f99) = stats(&floor);
    table.row(
        "stat floor: one fstatat per entry, in-process",
        "10,000 files, 100 folders",
        ms(f50),
        ms(f99),
        format!(
            "{stat_calls} calls, {FLOOR_ROUNDS} rounds; {fifth_of_git}any walk that stats every file costs at least this"
        ),
    );
    let (g50, g99) = stats(&growth);
    table.row(
        "snapshot store growth per turn",
        "10 files of 20,000 bytes changed",
        format!("{:.0} KB", g50 / 1000.0),
        format!("{:.0} KB", g99 / 1000.0),
        format!(
            "changed bytes: {} KB; the rest is the new folder listings",
            CHANGED * FILE_BYTES / 1000
        ),
    );
    if std::env::var_os("ROOM_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&root);
    }
}
