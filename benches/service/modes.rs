//! The two parts the bench binary plays for its own sections, chosen by
//! the environment in `main`: the service's harness (a fake codex on its
//! app server that stamps when it runs) and an agent-socket client at the
//! bottom of a chain of shells. Both are this binary so that what a section
//! times is the service, not a fake's interpreter (a python fake takes
//! about 150 ms just to start).

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use room_core::procfs::Procfs;
use room_machines::classify;
use serde_json::{json, Value};

use crate::stats::realtime_us;
use crate::CLIENT_RUNS_ENV;
/// The fake codex on its app server: the stamp as it starts, then the
/// least of the protocol that names the session (the answers to
/// `initialize`, `thread/start` and `turn/start`), the prompt's stamps,
/// `turn/completed`, and exit 0 at the end of stdin.
pub(crate) fn harness_mode(dir: &Path) -> ! {
    use std::io::BufRead;
    let at = realtime_us();
    let cwd = std::env::current_dir().unwrap_or_default();
    let name = cwd.file_name().map_or_else(
        || std::process::id().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let tmp = dir.join(format!(".{name}.tmp"));
    let _ =
        std::fs::write(&tmp, at.to_string()).and_then(|()| std::fs::rename(&tmp, dir.join(&name)));
    let thread = uuid::Uuid::new_v4().to_string();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(m) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = &m["id"];
        match m["method"].as_str() {
            Some("initialize") => println!("{}", json!({"id": id, "result": {}})),
            Some("thread/start" | "thread/resume") => {
                println!(
                    "{}",
                    json!({"id": id, "result": {"thread": {"id": thread}}})
                )
            }
            Some("turn/start") => {
                println!("{}", json!({"id": id, "result": {"turn": {"id": "u1"}}}));
                let prompt = m["params"]["input"][0]["text"].as_str().unwrap_or_default();
                stamps(prompt);
                println!(
                    "{}",
                    json!({"method": "turn/completed",
                           "params": {"turn": {"id": "u1", "status": "completed"}}})
                );
            }
            _ => {}
        }
    }
    std::process::exit(0);
}

/// A `stamps: <n> <gap ms>` prompt's events, `gap` apart, each with the
/// realtime clock as it is printed.
fn stamps(prompt: &str) {
    let Some(rest) = prompt.trim().strip_prefix("stamps: ") else {
        return;
    };
    let mut words = rest
        .split_whitespace()
        .map(|w| w.parse::<u64>().unwrap_or(0));
    let (n, gap) = (words.next().unwrap_or(0), words.next().unwrap_or(0));
    for i in 0..n {
        if i > 0 {
            std::thread::sleep(Duration::from_millis(gap));
        }
        // stdout is line-buffered: each line goes out as printed.
        println!(r#"{{"type":"stamp","n":{i},"us":{}}}"#, realtime_us());
    }
}

/// The agent-socket client at depth 10: times the /proc walk plus classify
/// on itself, a refused and a forwarded request; prints one JSON line.
pub(crate) fn client_mode(socket: &Path) {
    let runs: usize = std::env::var(CLIENT_RUNS_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let me = std::process::id();
    let procfs = Procfs::default();
    let depth = procfs.ancestry(me, |_| None).len();
    let walk: Vec<u64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let a = procfs.ancestry(me, |_| None);
            std::hint::black_box(classify(None, &a));
            t.elapsed().as_nanos() as u64
        })
        .collect();
    let ask = |argv: &[&str]| -> (u64, Value) {
        let t = Instant::now();
        let mut s = UnixStream::connect(socket).expect("connect the agent socket");
        let req = json!({"argv": argv, "cwd": "/"}).to_string();
        s.write_all(req.as_bytes()).expect("send");
        s.shutdown(std::net::Shutdown::Write).expect("shutdown");
        let mut bytes = Vec::new();
        s.read_to_end(&mut bytes).expect("answer");
        let took = t.elapsed().as_nanos() as u64;
        (took, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    };
    let mut refused = Vec::new();
    let mut forwarded = Vec::new();
    for _ in 0..runs {
        let (t, a) = ask(&["thread", "list"]);
        assert_eq!(a["exit"], 1, "thread list is refused to a loop: {a}");
        refused.push(t);
        let (t, a) = ask(&["loop", "list"]);
        assert_eq!(a["exit"], 0, "loop list is forwarded: {a}");
        forwarded.push(t);
    }
    println!(
        "{}",
        json!({"depth": depth, "walk": walk, "refused": refused, "forwarded": forwarded})
    );
}
