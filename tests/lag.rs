//! The lag from writing "ready" to the harness's spawn (the fake's
//! `started_ms` minus the write time), median of 50, with the inotify watch
//! on and off. Ignored by default; run with
//! `cargo test --release --test lag -- --ignored --nocapture`.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use serde_json::json;

const RUNS: usize = 50;

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// A harness that records its start with `date` first thing, so the lag is
/// not hidden behind an interpreter's start-up (the python fakes take
/// ~200 ms here, most of it the pyenv shim).
const SH_FAKE: &str = r#"#!/bin/sh
t=$(date +%s%3N)
d=$(pwd -P)
printf '{"started_ms": %s, "cwd": "%s", "pid": %s, "names": []}' "$t" "$d" "$$" > "$FAKE_HARNESS_RECORD/$$.json.tmp"
mv "$FAKE_HARNESS_RECORD/$$.json.tmp" "$FAKE_HARNESS_RECORD/$$.json"
echo '{"type":"system","subtype":"init","session_id":"bench-'$$'"}'
"#;

fn lags(watch: bool, fast: bool) -> Vec<u64> {
    let mut config = json!({"watch": watch});
    let root = temp_root();
    if fast {
        use std::os::unix::fs::PermissionsExt;
        let fake = root.join("fake-claude-sh");
        std::fs::write(&fake, SH_FAKE).unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        config["claude_program"] = json!(fake);
    }
    let svc = Service::start(config);
    std::fs::create_dir_all(&svc.records).unwrap();
    std::fs::create_dir_all(svc.folder("")).unwrap();
    let mut out = Vec::new();
    for n in 0..RUNS {
        let folder = svc.folder(&format!("copy-{n}"));
        let s = svc.start_session(start_body(&folder, "claude", json!({"project_copy": true})));
        let id = s["id"].as_str().unwrap();
        svc.await_session(id, "the wait", |v| !v["waiting_for"].is_null());
        land_project(&folder);
        // Land the mark at a varying phase of the poll interval.
        std::thread::sleep(Duration::from_millis((n as u64 * 37) % 250));
        let written = unix_ms();
        mark(&folder, "ready\n");
        let record = svc.await_record(&folder, 1, Duration::from_secs(5));
        out.push(
            record["started_ms"]
                .as_u64()
                .unwrap()
                .saturating_sub(written),
        );
    }
    drop(svc);
    let _ = std::fs::remove_dir_all(&root);
    out
}

/// The fake harness's own start-up (fork, exec, python) with no service in
/// between, to read the lags against.
fn fake_startup() -> Vec<u64> {
    let root = temp_root();
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fake-claude");
    let out = (0..20)
        .map(|_| {
            let before = unix_ms();
            let o = Command::new(&fake)
                .args(["-p", "hi", "--output-format", "stream-json", "--verbose"])
                .env("FAKE_HARNESS_RECORD", &root)
                .current_dir(&root)
                .output()
                .unwrap();
            let pid_line = String::from_utf8_lossy(&o.stdout).to_string();
            assert!(pid_line.contains("init"));
            let rec = std::fs::read_dir(&root)
                .unwrap()
                .flatten()
                .map(|e| {
                    serde_json::from_slice::<serde_json::Value>(&std::fs::read(e.path()).unwrap())
                        .unwrap()
                })
                .max_by_key(|r| r["started_ms"].as_u64())
                .unwrap();
            rec["started_ms"].as_u64().unwrap() - before
        })
        .collect();
    let _ = std::fs::remove_dir_all(&root);
    out
}

#[test]
#[ignore]
fn ready_to_spawn_lag() {
    let base = fake_startup();
    println!("fake harness start-up alone: median {} ms", median(base));
    for fast in [true, false] {
        for watch in [true, false] {
            let v = lags(watch, fast);
            let (min, max) = (*v.iter().min().unwrap(), *v.iter().max().unwrap());
            println!(
                "{} harness, inotify {}: median {} ms of {RUNS} (min {min}, max {max})",
                if fast { "sh    " } else { "python" },
                if watch { "on " } else { "off" },
                median(v)
            );
        }
    }
}
