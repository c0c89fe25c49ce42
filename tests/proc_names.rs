//! A process chooses its own name (comm: the name it was run by, or
//! `prctl(PR_SET_NAME)`), and `/proc/PID/stat` prints it as raw bytes. A
//! name that is not UTF-8 must not hide the process from the reads that
//! find a turn's processes to end them.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::process::{Command, Stdio};

use room_core::supervise::process;

#[test]
fn a_process_named_in_bytes_that_are_not_utf8_is_still_seen() {
    let dir = std::env::temp_dir().join(format!("room-core-proc-names-{}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    // The kernel names a process after the file it ran (a link included).
    let name = dir.join(OsStr::from_bytes(b"\xff\xfe)x 1 2"));
    std::os::unix::fs::symlink("/bin/sleep", &name).unwrap();
    let mut child = Command::new(&name)
        .arg("30")
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let raw = std::fs::read(format!("/proc/{pid}/stat")).unwrap();
    let seen = process::stat(pid);
    let in_snapshot = process::snapshot().iter().any(|s| s.pid == pid);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        raw.windows(2).any(|w| w == b"\xff\xfe"),
        "the kernel prints the name's bytes: {raw:?}"
    );
    let stat = seen.expect("process::stat sees the process");
    assert_eq!((stat.pid, stat.ppid), (pid, std::process::id()));
    assert!(in_snapshot, "process::snapshot lists the process");
}
