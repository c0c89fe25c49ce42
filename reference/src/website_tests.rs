//! The website's answers to Core's calls, without a Core: loop actions from
//! a thread and from a loop's script, the refusals, ownership, hooks and
//! reports. (Launches and runs, which need a Core, are in tests/loop_e2e.rs.)

use serde_json::{json, Value};

use super::http::Request;
use super::threads::Thread;
use super::website::Website;
use super::website_config::{SandboxConfig, WebsiteConfig};
use room_core::harness::Harness;

const SIGNIN: &str = "signin-token-of-sandbox-a";
const SIGNIN_B: &str = "signin-token-of-sandbox-b";

struct Fixture {
    w: Website,
    dir: std::path::PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn sandbox(name: &str, signin: &str) -> SandboxConfig {
    SandboxConfig {
        name: name.into(),
        core_url: "http://127.0.0.1:9".into(),
        core_token: "t".into(),
        signin_token: signin.into(),
        agent_socket: "/nonexistent.sock".into(),
        agent_account: None,
        script_path: "/usr/bin:/bin".into(),
        script_cwd: None,
        work_root: "/tmp/work".into(),
        launch_delay_ms: 0,
    }
}

fn fixture(name: &str) -> Fixture {
    let dir = std::env::temp_dir().join(format!("rc-website-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let config = WebsiteConfig {
        state_dir: dir.clone(),
        admin_token: "admin-token-for-unit-tests".into(),
        sandboxes: vec![sandbox("a", SIGNIN), sandbox("b", SIGNIN_B)],
        ..WebsiteConfig::default()
    };
    config.validate().unwrap();
    let w = Website::open(config).unwrap();
    for (id, owner, loop_id) in [("cr_ana", "ana", None), ("cr_bo", "bo", None)] {
        let t = Thread {
            id: id.into(),
            owner: owner.into(),
            project: "shop".into(),
            sandbox: "a".into(),
            agent: Harness::Claude,
            started_by_loop: loop_id,
            request_id: None,
            created_ms: 0,
        };
        w.threads.put(id, t).unwrap();
    }
    Fixture { w, dir }
}

fn call(w: &Website, signin: &str, endpoint: &str, body: Value) -> (u16, Value) {
    let req = Request {
        method: "POST".into(),
        path: format!("/api/core/{endpoint}"),
        query: String::new(),
        headers: vec![("authorization".into(), format!("Bearer {signin}"))],
        body: body.to_string().into_bytes(),
    };
    let resp = w.handle(&req);
    let v: Value = serde_json::from_slice(&resp.body).unwrap();
    // room-cli takes a top-level error field for a failure.
    assert_eq!(
        (200..300).contains(&resp.status),
        v.get("error").is_none(),
        "{} {v}",
        resp.status
    );
    (resp.status, v)
}

fn auto(w: &Website, body: Value) -> (u16, Value) {
    call(w, SIGNIN, "automation", body)
}

fn error(v: &Value) -> &str {
    v["error"].as_str().unwrap_or_default()
}

#[test]
fn a_thread_makes_and_manages_loops_and_a_script_acts_for_its_own() {
    let f = fixture("manage");
    let w = &f.w;
    // From ana's thread: a loop that re-prompts it.
    let (s, v) = auto(
        w,
        json!({"action": "create", "session": "cr_ana", "cron": "0 9 * * 1-5",
               "script": "true", "args": ["Check", "the", "build"]}),
    );
    assert_eq!(s, 201, "{v}");
    let l = &v["loop"];
    assert_eq!(
        (&l["new_thread"], &l["thread"], &l["prompt"], &l["agent"]),
        (
            &json!(false),
            &json!("cr_ana"),
            &json!("Check the build"),
            &json!("claude")
        )
    );
    let id = l["id"].as_str().unwrap().to_string();

    // Its script acts for it: list, update, pause and resume its own loop.
    let (s, v) = auto(w, json!({"action": "list", "automation": id}));
    assert_eq!((s, v["loops"][0]["id"].as_str()), (200, Some(id.as_str())));
    let (s, v) = auto(
        w,
        json!({"action": "update", "automation": id, "cron": "*/10 * * * *"}),
    );
    assert_eq!(
        (s, &v["loop"]["schedule"]),
        (200, &json!("*/10 * * * *")),
        "{v}"
    );
    let (s, v) = auto(w, json!({"action": "pause", "automation": id}));
    assert_eq!(
        (s, &v["loop"]["paused"], &v["loop"]["next_run_ms"]),
        (200, &json!(true), &Value::Null)
    );
    let (_, v) = auto(
        w,
        json!({"action": "resume", "automation": id, "args": [id]}),
    );
    assert_eq!(v["loop"]["paused"], false);
    // run without a runner queues nothing, and says so without an error field.
    let (s, v) = auto(w, json!({"action": "run", "automation": id}));
    assert_eq!((s, &v["run"]["queued"]), (202, &json!(false)), "{v}");

    // Bo (same project) sees it but may not change it.
    let (s, v) = auto(w, json!({"action": "list", "session": "cr_bo"}));
    assert_eq!(s, 200);
    assert!(v["loops"][0].get("last_output").is_none(), "{v}");
    let (s, v) = auto(
        w,
        json!({"action": "pause", "session": "cr_bo", "args": [id]}),
    );
    assert_eq!((s, error(&v)), (403, "Only the loop's owner can pause it."));
    let (s, v) = auto(
        w,
        json!({"action": "delete", "session": "cr_ana", "args": ["nope"]}),
    );
    assert_eq!((s, error(&v)), (404, "No loop nope in project shop."));
    let (s, _) = auto(
        w,
        json!({"action": "delete", "session": "cr_ana", "args": [id]}),
    );
    assert_eq!(s, 200);
    assert!(w.loops.get(&id).is_none());
}

#[test]
fn refusals_are_errors_with_sentences() {
    let f = fixture("refuse");
    let w = &f.w;
    let (_, v) = auto(
        w,
        json!({"action": "create", "session": "cr_ana", "cron": "* * * * *", "new_thread": true}),
    );
    let id = v["loop"]["id"].as_str().unwrap().to_string();
    let cases = [
        (
            json!({"action": "create", "automation": id, "cron": "* * * * *"}),
            422,
            "A loop's check script has no thread to re-prompt. Add --new-thread.",
        ),
        (
            json!({"action": "create", "automation": id, "at": "2030-01-01T00:00Z", "new_thread": "false"}),
            422,
            "A loop's check script has no thread to re-prompt. Add --new-thread.",
        ),
        (
            json!({"action": "report", "automation": id, "args": ["done"]}),
            403,
            room_machines::policy::LOOP_REPORT,
        ),
        (
            json!({"action": "create", "session": "cr_ana", "cron": "* * * * *", "script_file": "c.sh"}),
            422,
            "The website cannot read files in the sandbox: pass the script's text with --script \"$(cat FILE)\".",
        ),
        (
            json!({"action": "create", "session": "cr_ana", "cron": "* * * * *", "colour": "red"}),
            422,
            "room-cli loop create does not take --colour.",
        ),
        (
            json!({"action": "create", "session": "cr_ana", "cron": "* * *", "new_thread": true}),
            422,
            "The schedule \"* * *\" is invalid: A schedule has 5 fields (minute hour day-of-month month day-of-week); \"* * *\" has 3.",
        ),
        (json!({"action": "list"}), 400, "Send exactly one of session or automation."),
        (
            json!({"action": "list", "session": "cr_ana", "automation": id}),
            400,
            "Send exactly one of session or automation.",
        ),
        (
            json!({"action": "report", "session": "cr_ana", "args": ["x"]}),
            409,
            "This thread was not started by a loop's run, so it has no run to report to.",
        ),
        (json!({"action": "explode", "session": "cr_ana"}), 422, "Unknown loop action explode."),
    ];
    for (body, status, message) in cases {
        let (s, v) = auto(w, body.clone());
        assert_eq!((s, error(&v)), (status, message), "{body}");
    }
    // Sandbox b's Core may not act for sandbox a's loop or thread.
    let (s, v) = call(
        w,
        SIGNIN_B,
        "automation",
        json!({"action": "list", "automation": id}),
    );
    assert_eq!(
        (s, error(&v).to_string()),
        (
            403,
            format!("No loop {id} runs its check script in this sandbox.")
        )
    );
    let (s, v) = call(
        w,
        SIGNIN_B,
        "launch",
        json!({"session": "cr_ana", "request_id": "r"}),
    );
    assert_eq!(
        (s, error(&v)),
        (403, "No thread cr_ana runs in this sandbox.")
    );
    let (s, _) = call(
        w,
        "wrong-token-wrong-token",
        "automation",
        json!({"action": "list", "automation": id}),
    );
    assert_eq!(s, 401);
    let (s, v) = call(w, SIGNIN, "fork", json!({"session": "cr_ana"}));
    assert_eq!(
        (s, error(&v)),
        (
            501,
            "The reference website does not implement /api/core/fork."
        )
    );
    let (s, v) = call(
        w,
        SIGNIN,
        "launch",
        json!({"action": "spawn", "automation": id}),
    );
    assert_eq!(
        (s, error(&v)),
        (422, "A launch needs a request_id of 1 to 200 characters.")
    );
}

#[test]
fn hooks_run_a_loop_and_a_run_thread_reports_to_its_loop() {
    let f = fixture("hooks");
    let w = &f.w;
    let (_, v) = auto(
        w,
        json!({"action": "create", "session": "cr_ana", "in": "1h", "new_thread": true}),
    );
    let id = v["loop"]["id"].as_str().unwrap().to_string();
    let (s, v) = auto(
        w,
        json!({"action": "hook", "session": "cr_ana", "args": [id]}),
    );
    assert_eq!(s, 200, "{v}");
    let url = v["hook"]["url"].as_str().unwrap().to_string();
    let path = url
        .split_once("/api/")
        .map(|(_, p)| format!("/api/{p}"))
        .unwrap();
    let post = |path: &str| {
        w.handle(&Request {
            method: "POST".into(),
            path: path.into(),
            query: String::new(),
            headers: vec![],
            body: vec![],
        })
        .status
    };
    assert_eq!(post(&path), 202);
    assert_eq!(post(&format!("/api/hooks/{id}/not-the-secret")), 404);
    // The secret is never listed; --reset makes a new one.
    let (_, listed) = auto(w, json!({"action": "list", "session": "cr_ana"}));
    let secret = path.rsplit('/').next().unwrap();
    assert!(!listed.to_string().contains(secret));
    let (_, v) = auto(
        w,
        json!({"action": "hook", "session": "cr_ana", "args": [id], "reset": true}),
    );
    assert_ne!(v["hook"]["url"], url.as_str());
    assert_eq!(post(&path), 404);

    // A thread one of its runs started reports to it.
    let run_thread = Thread {
        id: "cr_run".into(),
        owner: "ana".into(),
        project: "shop".into(),
        sandbox: "a".into(),
        agent: Harness::Codex,
        started_by_loop: Some(id.clone()),
        request_id: Some("run-1".into()),
        created_ms: 0,
    };
    w.threads.put("cr_run", run_thread).unwrap();
    let (s, v) = auto(
        w,
        json!({"action": "report", "session": "cr_run", "args": ["all", "green"]}),
    );
    assert_eq!((s, &v["reported"]["loop"]), (200, &json!(id)), "{v}");
    assert_eq!(
        w.loops.get(&id).unwrap().last_report.as_deref(),
        Some("all green")
    );
}

/// A Core that answers one request with `status` and `answer`, and hands
/// back the body it got: its URL and the body's receiver.
fn one_shot_core(status: u16, answer: Value) -> (String, std::sync::mpsc::Receiver<Value>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        tx.send(serde_json::from_slice(&body).unwrap()).unwrap();
        let text = answer.to_string();
        let mut stream = stream;
        write!(
            stream,
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
            text.len()
        )
        .unwrap();
    });
    (url, rx)
}

#[test]
fn a_top_level_spawn_passes_its_model_and_effort_to_core_and_a_refusal_back() {
    for (status, answer) in [
        (201, json!({"id": "cr_0123456789abcdef0123456789abcdef"})),
        (
            422,
            json!({"error": "codex takes effort minimal, low, medium, high or xhigh, not max.", "code": "invalid_field"}),
        ),
    ] {
        let (url, got) = one_shot_core(status, answer);
        let dir = std::env::temp_dir().join(format!(
            "rc-website-options-{status}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let config = WebsiteConfig {
            state_dir: dir.clone(),
            admin_token: "admin-token-for-unit-tests".into(),
            sandboxes: vec![SandboxConfig {
                core_url: url,
                ..sandbox("a", SIGNIN)
            }],
            ..WebsiteConfig::default()
        };
        let w = Website::open(config).unwrap();
        let t = Thread {
            id: "cr_ana".into(),
            owner: "ana".into(),
            project: "shop".into(),
            sandbox: "a".into(),
            agent: Harness::Codex,
            started_by_loop: None,
            request_id: None,
            created_ms: 0,
        };
        w.threads.put("cr_ana", t).unwrap();
        let (s, v) = call(
            &w,
            SIGNIN,
            "launch",
            json!({"session": "cr_ana", "action": "spawn", "request_id": "r1",
                   "model": "gpt-5.5", "effort": if status == 201 { "low" } else { "max" },
                   "args": ["do", "it"]}),
        );
        let body = got.recv().unwrap();
        assert_eq!(body["model"], "gpt-5.5", "{body}");
        assert_eq!(body["harness"], "codex");
        assert_eq!(body["prompt"], "do it");
        if status == 201 {
            assert_eq!((s, &body["effort"]), (201, &json!("low")), "{v}");
        } else {
            assert_eq!(
                (s, error(&v)),
                (502, "The thread could not start: Core answered 422: codex takes effort minimal, low, medium, high or xhigh, not max.")
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
