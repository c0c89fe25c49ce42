//! The Claude Agent SDK's side of the paired warm follow-ups (paired.rs):
//! sdk_follow_up.py in its driven mode, one `ClaudeSDKClient` kept open
//! and sent a follow-up per line the bench writes, each answered with its
//! time (`client.query()` -> the first AssistantMessage, taken in python).

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::lines::Lines;
use crate::paired::{Sample, LIMIT};
use crate::sdk::{last_line, permission_mode, python, script, SDK_PIN};

/// The longest the driver may take to its first result: python's start
/// and the SDK's import, claude's start, the first turn.
const START_LIMIT: Duration = Duration::from_secs(120);

/// The driver, its client's first turn done.
pub(crate) struct SdkWarm {
    /// The python process, ended when this is dropped.
    child: Child,
    /// Where each follow-up's line is written; none once closed.
    stdin: Option<ChildStdin>,
    /// Its answers, one JSON line each.
    stdout: Lines,
    /// All it wrote on stderr, for the reason it failed.
    stderr: Arc<Mutex<Vec<u8>>>,
    /// The SDK's own `__version__`.
    pub(crate) version: String,
}

impl SdkWarm {
    /// Starts the driver on `claude` in a folder of its own under `root`,
    /// with the section's CLI environment and the permission mode the
    /// service gives claude's turns, and waits for its first turn; or why
    /// not (no venv, `ROOM_BENCH_SDK=off`, a driver that fails or hangs).
    pub(crate) fn start(
        claude: &Path,
        cli_env: &[(String, String)],
        root: &Path,
    ) -> Result<SdkWarm, String> {
        let python = python()?;
        let folder = root.join("work").join("sdk-paired");
        std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
        let mut child = Command::new(python)
            .arg(script())
            .arg("--driven")
            .arg("--cli")
            .arg(claude)
            .arg("--cwd")
            .arg(&folder)
            .args(["--permission-mode", &permission_mode(root, claude)])
            .envs(cli_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("start the driver: {e}"))?;
        // stderr is drained on a thread: a chatty one must not block it.
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut pipe = child.stderr.take().ok_or("the driver has no stderr")?;
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                sink.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        let mut sdk = SdkWarm {
            stdin: child.stdin.take(),
            stdout: Lines::new(
                "the SDK driver",
                child.stdout.take().ok_or("the driver has no stdout")?,
            ),
            child,
            stderr,
            version: SDK_PIN.into(),
        };
        let (_, line) = sdk
            .stdout
            .until("{", Instant::now() + START_LIMIT)
            .map_err(|e| sdk.why(e))?;
        let v: Value = serde_json::from_str(&line).map_err(|e| format!("its first line: {e}"))?;
        if let Some(version) = v["sdk"].as_str() {
            sdk.version = version.into();
        }
        Ok(sdk)
    }

    /// Follow-up `n`: its line to the driver, and the time it answers
    /// with, once its response has ended.
    pub(crate) fn follow_up(&mut self, n: usize) -> Result<Sample, String> {
        let deadline = Instant::now() + LIMIT;
        let written = self
            .stdin
            .as_mut()
            .ok_or_else(|| "the driver's stdin is closed".to_string())
            .and_then(|p| {
                p.write_all(format!("follow-up {n}\n").as_bytes())
                    .and_then(|_| p.flush())
                    .map_err(|e| format!("write to the driver: {e}"))
            });
        written.map_err(|e| self.why(e))?;
        let (_, line) = self
            .stdout
            .until(r#""ms""#, deadline)
            .map_err(|e| self.why(e))?;
        let v: Value = serde_json::from_str(&line).map_err(|e| format!("its answer: {e}"))?;
        let ms = v["ms"].as_f64().ok_or("an answer without ms")?;
        Ok(Sample {
            first_event: None,
            assistant: ms,
        })
    }

    /// `e`, with the last line the driver wrote on stderr if any.
    fn why(&self, e: String) -> String {
        let err = self.stderr.lock().map(|b| b.clone()).unwrap_or_default();
        match last_line(&err, "") {
            l if l.is_empty() => e,
            l => format!("{e}: {l}"),
        }
    }
}

impl Drop for SdkWarm {
    /// Ends the driver: the end of its stdin ends its loop and its client
    /// (and with it claude); one that has not gone in a few seconds is
    /// killed.
    fn drop(&mut self) {
        self.stdin = None;
        if room_kit::procs::exited_within(self.child.id(), Duration::from_secs(5)).is_none() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
