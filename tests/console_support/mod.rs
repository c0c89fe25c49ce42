//! Runs the console's browser scenarios (tests/browser/scenarios/) in
//! headless Chromium through Playwright, one at a time, each against a
//! service of its own and bounded in time. Without Chromium, node or the
//! browser tests' `node_modules`, a scenario is skipped with the reason
//! (and fails in CI, where `.ci/run` installs them). A scenario asks for a
//! restart of its service by making the file `restart` in
//! `CONSOLE_CONTROL`, which is removed once the service is back.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use room_kit::{poll_until, skip, Service};
use serde_json::json;

/// The service under test.
pub const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

/// How long one scenario may take, browser start included.
const LIMIT: Duration = Duration::from_secs(120);

/// One browser at a time: the scenarios time what they see (a 10,000-event
/// session opens within a second), and two Chromiums on a small machine
/// would time each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn browser_tests() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

/// The Chromium to run: `CONSOLE_CHROMIUM`, else Debian's.
fn chromium() -> PathBuf {
    std::env::var_os("CONSOLE_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// Why the scenarios cannot run here, if they cannot.
fn missing() -> Option<String> {
    if !chromium().exists() {
        return Some(format!(
            "no Chromium at {} (apt-get install chromium)",
            chromium().display()
        ));
    }
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status();
    if !node.is_ok_and(|s| s.success()) {
        return Some("no node on PATH".into());
    }
    if !browser_tests()
        .join("node_modules/playwright-core")
        .exists()
    {
        return Some("no tests/browser/node_modules (npm ci in tests/browser)".into());
    }
    None
}

/// Where the scenarios' screenshots go: `target/console-shots/`.
pub fn shots() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/console-shots")
}

/// Runs scenario `name` against a new service (config `extra` over the
/// test defaults); its output, once it passed. Panics with the output and
/// the service's log when it fails or outlasts [`LIMIT`].
pub fn scenario(name: &str, extra: serde_json::Value) -> Option<String> {
    scenario_with(name, extra, Vec::new())
}

/// [`scenario`], the service's environment holding `env` too (a real
/// CLI's, pointed at the fake model).
pub fn scenario_with(
    name: &str,
    extra: serde_json::Value,
    env: Vec<(String, String)>,
) -> Option<String> {
    let test = format!("console scenario {name}");
    if let Some(why) = missing() {
        skip(&test, &why);
        return None;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Stop and interrupt end a fake turn at once; 1 s bounds one that lingers.
    let mut config = json!({"kill_grace_ms": 1000});
    room_kit::merge(&mut config, extra);
    let mut svc = Service::builder(ROOM_CORE).config(config).envs(env).start();
    let control = svc.root.join("control");
    std::fs::create_dir_all(&control).unwrap();
    let work = svc.folder("");
    std::fs::create_dir_all(&work).unwrap();
    let out_path = svc.root.join(format!("{name}.out"));
    let out = std::fs::File::create(&out_path).unwrap();
    let mut child = Command::new("node")
        .arg(browser_tests().join("run.mjs"))
        .arg(name)
        .current_dir(browser_tests())
        .env("CONSOLE_URL", &svc.base)
        .env("CONSOLE_TOKEN", svc.token())
        .env("CONSOLE_WORK", &work)
        .env("CONSOLE_SHOTS", shots())
        .env("CONSOLE_CONTROL", &control)
        .env("CONSOLE_RECORDS", &svc.records)
        .env("CONSOLE_CHROMIUM", chromium())
        .env("CONSOLE_LIMIT_MS", (LIMIT.as_millis() - 5000).to_string())
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .expect("run node");
    let status = poll_until(LIMIT, || {
        if control.join("restart").exists() {
            svc.restart();
            std::fs::remove_file(control.join("restart")).unwrap();
        }
        child.try_wait().unwrap()
    });
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let output = std::fs::read_to_string(&out_path).unwrap_or_default();
    eprintln!("{output}");
    match status {
        Some(s) if s.success() && output.contains(&format!("{name}: ok")) => Some(output),
        Some(s) => panic!(
            "{test} failed ({s}):\n{output}\n--- service log ---\n{}",
            svc.log()
        ),
        None => panic!(
            "{test} ran past {LIMIT:?}:\n{output}\n--- service log ---\n{}",
            svc.log()
        ),
    }
}
