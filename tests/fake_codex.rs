//! The fake codex speaks codex's app-server protocol as its docstring says
//! (fixtures/fake_codex_selftest.py drives it: the handshake, turns, warm
//! follow-ups, resume, approvals, steers, interrupts, the end of stdin and
//! its hostile lines), so the tests that use it test the service against
//! the protocol the real CLI speaks.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The self-test's own reads all have deadlines; this bounds the whole.
const LIMIT: Duration = Duration::from_secs(120);

#[test]
fn the_fake_codex_passes_its_protocol_self_test() {
    let script = fixtures().join("fake_codex_selftest.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3");
    let began = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if began.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("the self-test ran past {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("its output");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}
