//! `room-cli files wait`: runs in room-cli itself (no Core), reads
//! `<folder>.cloudroom-files` of the nearest ancestor of its cwd that has one.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use room_kit::{status_file, Out, TempDir};

/// room-cli, built beside the service.
const ROOM_CLI: &str = env!("CARGO_BIN_EXE_room-cli");

fn wait_in(cwd: &Path, grace_ms: u64, limit_ms: u64) -> Out {
    Command::new(ROOM_CLI)
        .args(["files", "wait"])
        .current_dir(cwd)
        .env("ROOM_CORE_SOCKET", "/nonexistent/no-core-needed.sock")
        .env("ROOM_CLI_FILES_GRACE_MS", grace_ms.to_string())
        .env("ROOM_CLI_FILES_LIMIT_MS", limit_ms.to_string())
        .output()
        .unwrap()
        .into()
}

/// Writes `text` to `path` after `ms`: a copy that lands while room-cli waits.
fn write_after(
    ms: u64,
    path: std::path::PathBuf,
    text: &'static str,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(ms));
        std::fs::write(path, text).unwrap();
    })
}

/// room-cli said the files are ready in `folder`, exit 0.
fn assert_ready_in(out: &Out, folder: &Path) {
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        format!("Project files are ready in {}.\n", folder.display())
    );
}

#[test]
fn ready_failed_and_missing_status_files() {
    let tmp = TempDir::new("files-wait");
    let code = tmp.path().join("code");
    let src = code.join("src");
    std::fs::create_dir_all(&src).unwrap();

    // No status file anywhere: ready in cwd once the grace is over.
    let t = Instant::now();
    let out = wait_in(&src, 300, 60_000);
    assert_ready_in(&out, &src);
    assert!(t.elapsed() >= Duration::from_millis(300));

    // The nearest ancestor with a status file is the folder.
    std::fs::write(status_file(&code), "ready\n").unwrap();
    let out = wait_in(&src, 60_000, 60_000);
    assert_ready_in(&out, &code);

    std::fs::write(status_file(&code), "failed: disk full\n").unwrap();
    let out = wait_in(&code, 60_000, 60_000);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        format!(
            "The project copy into {} failed: disk full\n",
            code.display()
        )
    );
}

#[test]
fn a_copy_in_progress_is_waited_for_until_it_lands_or_the_limit() {
    let tmp = TempDir::new("files-wait");
    let code = tmp.path().join("code");
    std::fs::create_dir_all(&code).unwrap();
    std::fs::write(status_file(&code), "copying").unwrap();

    let t = Instant::now();
    let out = wait_in(&code, 100, 600);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        format!(
            "The project copy into {} did not finish within 600 ms.\n",
            code.display()
        )
    );
    assert!(t.elapsed() >= Duration::from_millis(600));

    // It lands while room-cli waits.
    let writer = write_after(500, status_file(&code), "ready");
    let t = Instant::now();
    let out = wait_in(&code, 100, 30_000);
    writer.join().unwrap();
    assert_ready_in(&out, &code);
    assert!(t.elapsed() >= Duration::from_millis(500));
    assert!(t.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_folder_with_files_and_no_status_file_is_ready_at_once() {
    let tmp = TempDir::new("files-wait");
    let code = tmp.path().join("code");
    std::fs::create_dir_all(code.join(".git")).unwrap();
    std::fs::write(code.join("README.md"), "hi").unwrap();

    // A grace of a minute that is never waited: the folder has files.
    let t = Instant::now();
    let out = wait_in(&code, 60_000, 600_000);
    assert_ready_in(&out, &code);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[test]
fn the_grace_applies_only_while_the_folder_looks_empty() {
    let tmp = TempDir::new("files-wait");
    let code = tmp.path().join("code");
    // Cloudroom's own entry alone: the folder still looks empty.
    std::fs::create_dir_all(code.join(".cloudroom")).unwrap();
    let t = Instant::now();
    let out = wait_in(&code, 300, 600_000);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(t.elapsed() >= Duration::from_millis(300));

    // Files land during a long grace, with no status file: the wait ends
    // once they are there.
    let writer = write_after(500, code.join("main.rs"), "fn main() {}");
    let t = Instant::now();
    let out = wait_in(&code, 60_000, 600_000);
    writer.join().unwrap();
    assert_ready_in(&out, &code);
    assert!(t.elapsed() >= Duration::from_millis(500));
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}
