//! The Claude Agent SDK (PyPI `claude-agent-sdk`) beside room-core in the
//! startup section's follow-up figures: the same claude binary, environment
//! and loopback fake model, driven by sdk_follow_up.py through a pinned
//! venv the bench makes once and reuses. This file makes the venv and times
//! the cold follow-ups (the driver run to its end); the warm ones are timed
//! paired with room-core's (sdk_warm.rs, paired.rs). Where the venv cannot
//! be made (no python, no index) or the driver fails, the rows say skipped
//! and why; the bench never fails for the SDK.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::follow_up::{FOLLOW_UPS, PAUSE_MS};
use crate::stats::{ms, stats, Table};

/// The SDK version compared against; a new pin makes a new venv.
pub(crate) const SDK_PIN: &str = "0.2.189";
/// The file written into the venv once the pinned SDK is installed, so a
/// venv left half made by an interrupted run is made again, not used.
const READY: &str = ".room-bench-ready";
/// The longest the cold driver may take (20 cold turns take about 20 s).
const DRIVER_LIMIT: Duration = Duration::from_secs(300);
/// What the SDK's rows are.
pub(crate) const WHAT: &str = "follow-up message to its first assistant message";

/// The figures the driver printed.
struct Samples {
    /// The SDK's own `__version__`.
    version: String,
    /// Cold: a fresh client resuming the session, `connect()` -> the first
    /// AssistantMessage.
    cold: Vec<f64>,
}

/// The setup column of an SDK row in `mode`.
pub(crate) fn setup(mode: &str, version: &str) -> String {
    format!("real claude, {mode}, through the Claude Agent SDK {version}")
}

/// The notes' comparison of room-core's median `room` with the SDK's
/// `p50` (the unpaired one: their medians, each over its own samples).
pub(crate) fn against(room: Option<f64>, p50: f64) -> String {
    room.map_or_else(String::new, |r| {
        format!(
            "; room-core {} here, {:.2}x the SDK's ({:+.2} ms)",
            ms(r),
            r / p50,
            r - p50
        )
    })
}

/// Times cold follow-ups through the SDK and prints its row beside
/// room-core's (`room`: room-core's cold median to the first assistant
/// message, from [`crate::follow_up::follow_up_latency`]). `root` holds the
/// section's work folders.
pub(crate) fn cold(
    table: &mut Table,
    claude: &Path,
    cli_env: &[(String, String)],
    root: &Path,
    room: Option<f64>,
) {
    let samples = python().and_then(|python| drive(&python, claude, cli_env, root));
    let samples = match samples {
        Ok(s) if !s.cold.is_empty() => s,
        Ok(_) => {
            let why = "the driver printed no cold samples".to_string();
            return skipped(table, "cold (connect + resume)", why);
        }
        Err(why) => return skipped(table, "cold (connect + resume)", why),
    };
    let (p50, p99) = stats(&samples.cold);
    table.row(
        WHAT,
        &setup("cold (connect + resume)", &samples.version),
        ms(p50),
        ms(p99),
        format!(
            "{} messages; client.query() -> the first AssistantMessage{}",
            samples.cold.len(),
            against(room, p50)
        ),
    );
}

/// The SDK's row in `mode` as skipped, and why.
pub(crate) fn skipped(table: &mut Table, mode: &str, why: String) {
    println!("  Claude Agent SDK, {mode}: skipped: {why}");
    table.row(
        WHAT,
        &setup(mode, SDK_PIN),
        "skipped".into(),
        "-".into(),
        format!("skipped: {why}"),
    );
}

/// The venv's python, unless `ROOM_BENCH_SDK=off` leaves the SDK out, or
/// why there is none.
pub(crate) fn python() -> Result<PathBuf, String> {
    if std::env::var("ROOM_BENCH_SDK").as_deref() == Ok("off") {
        return Err("ROOM_BENCH_SDK=off".to_string());
    }
    venv()
}

/// The driver script.
pub(crate) fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches")
        .join("service")
        .join("sdk_follow_up.py")
}

/// The venv's python with the pinned SDK in it, made on first use under
/// the user's cache (shared by every worktree and build), or why not.
fn venv() -> Result<PathBuf, String> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
        .ok_or("neither XDG_CACHE_HOME nor HOME is set")?;
    let dir = cache
        .join("room-core-bench")
        .join(format!("claude-agent-sdk-{SDK_PIN}"));
    let python = dir.join("bin").join("python");
    if dir.join(READY).is_file() {
        return Ok(python);
    }
    println!(
        "  making the Claude Agent SDK's venv ({SDK_PIN}) in {}",
        dir.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
    run(Command::new("python3").arg("-m").arg("venv").arg(&dir))
        .map_err(|e| format!("python3 -m venv: {e}"))?;
    // A short timeout and one retry: an index that cannot be reached
    // skips the rows in seconds rather than pip's minutes.
    run(Command::new(&python).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--timeout",
        "30",
        "--retries",
        "1",
        &format!("claude-agent-sdk=={SDK_PIN}"),
    ]))
    .map_err(|e| format!("pip install claude-agent-sdk=={SDK_PIN}: {e}"))?;
    std::fs::write(dir.join(READY), SDK_PIN).map_err(|e| e.to_string())?;
    Ok(python)
}

/// Runs `cmd` to its end; its last line of stderr where it fails.
fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        return Ok(());
    }
    Err(last_line(&out.stderr, &out.status.to_string()))
}

/// The last non-empty line of `bytes`, or `otherwise`.
pub(crate) fn last_line(bytes: &[u8], otherwise: &str) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map_or_else(|| otherwise.to_string(), |l| l.trim().to_string())
}

/// Runs the driver to its end on `claude` in a fresh folder, with the
/// section's CLI environment (the fake model) and the permission mode the
/// service gives claude's turns: its cold follow-ups alone (its warm ones
/// are paired.rs's, in its driven mode).
fn drive(
    python: &Path,
    claude: &Path,
    cli_env: &[(String, String)],
    root: &Path,
) -> Result<Samples, String> {
    let folder = root.join("work").join("sdk-follow-ups");
    std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
    let mut child = Command::new(python)
        .arg(script())
        .arg("--cli")
        .arg(claude)
        .arg("--cwd")
        .arg(&folder)
        .args(["--permission-mode", &permission_mode(root, claude)])
        .args(["--follow-ups", "0"])
        .args(["--pause-ms", &PAUSE_MS.to_string()])
        .args(["--cold", &FOLLOW_UPS.to_string()])
        .envs(cli_env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("start the driver: {e}"))?;
    // Read both pipes on threads: a chatty stderr must not block the driver.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut b);
        b
    });
    let err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stderr, &mut b);
        b
    });
    let began = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if began.elapsed() > DRIVER_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("the driver took over {} s", DRIVER_LIMIT.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (out, err) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    if !status.success() {
        return Err(format!(
            "the driver failed: {}",
            last_line(&err, &status.to_string())
        ));
    }
    let text = String::from_utf8_lossy(&out);
    let v: Value = serde_json::from_str(text.trim())
        .map_err(|e| format!("the driver's output: {e}: {}", text.trim()))?;
    let samples = |k: &str| -> Vec<f64> {
        v[k].as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default()
    };
    Ok(Samples {
        version: v["sdk"].as_str().unwrap_or(SDK_PIN).to_string(),
        cold: samples("cold"),
    })
}

/// The `--permission-mode` the service gives a claude turn (an `auto`
/// approvals turn, as the follow-ups through room-core run), so both sides
/// run claude alike.
pub(crate) fn permission_mode(root: &Path, claude: &Path) -> String {
    crate::service::claude_turn_spec(root, claude, &root.join("work"))
        .ok()
        .and_then(|spec| {
            let at = spec.args.iter().position(|a| a == "--permission-mode")?;
            spec.args.get(at + 1).cloned()
        })
        .unwrap_or_else(|| "default".into())
}
