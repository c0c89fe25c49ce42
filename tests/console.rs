//! The browser console: `GET /` and its files need no token and carry the
//! console's CSP and `nosniff` with the right content types, an unknown
//! file is a 404 as the API's, every data call still needs the token, and
//! `room-core --console-url` prints the URL with it. Then the console
//! itself in headless Chromium (console_support: one scenario a test).

mod console_support;

use std::process::Command;
use std::time::Duration;

use console_support::{scenario, ROOM_CORE};
use room_core::api::console::{CSP, FILES};
use room_core::api::routes::ROUTES;
use room_kit::{Service, TOKEN};
use serde_json::{json, Value};

/// A GET without a token: status, content type, CSP, nosniff and body.
fn get(svc: &Service, path: &str) -> (u16, String, Option<String>, Option<String>, String) {
    let r = match ureq::get(&format!("{}{path}", svc.base))
        .timeout(Duration::from_secs(10))
        .call()
    {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("GET {path}: {e}"),
    };
    let header = |n: &str| r.header(n).map(str::to_string);
    let (csp, nosniff) = (
        header("content-security-policy"),
        header("x-content-type-options"),
    );
    let content_type = header("content-type").unwrap_or_default();
    (
        r.status(),
        content_type,
        csp,
        nosniff,
        r.into_string().unwrap(),
    )
}

#[test]
fn the_page_and_its_files_need_no_token_and_carry_the_csp() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let (status, content_type, csp, nosniff, body) = get(&svc, "/");
    assert_eq!(status, 200, "{body}");
    assert_eq!(content_type, "text/html; charset=utf-8");
    assert_eq!(csp.as_deref(), Some(CSP));
    assert!(
        CSP.contains("script-src 'self'") && !CSP.contains("unsafe"),
        "{CSP}"
    );
    assert_eq!(nosniff.as_deref(), Some("nosniff"));
    assert!(
        body.contains(r#"<script type="module" src="/console/app.js">"#),
        "{body}"
    );
    // No inline script or style: the CSP would refuse it.
    assert!(!body.contains("<script>") && !body.contains("<style") && !body.contains("style="));
    for file in FILES {
        let (status, content_type, csp, nosniff, body) =
            get(&svc, &format!("/console/{}", file.name));
        assert_eq!(
            (status, content_type.as_str()),
            (200, file.content_type),
            "{}",
            file.name
        );
        assert_eq!(
            (csp.as_deref(), nosniff.as_deref()),
            (Some(CSP), Some("nosniff"))
        );
        assert_eq!(body, file.body);
        let js = file.name.ends_with(".js");
        assert_eq!(
            content_type.starts_with("text/javascript"),
            js,
            "{}",
            file.name
        );
        if js {
            // Harness output is text only: nothing parses HTML.
            for sink in [
                "innerHTML",
                "outerHTML =",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
            ] {
                assert!(!body.contains(sink), "{} uses {sink}", file.name);
            }
        }
    }
    // Every file of console/ is served, and nothing else.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("console");
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "index.html")
        .collect();
    let mut served: Vec<String> = FILES.iter().map(|f| f.name.to_string()).collect();
    on_disk.sort();
    served.sort();
    assert_eq!(on_disk, served);
    // Every module the page imports is served.
    for file in FILES.iter().filter(|f| f.name.ends_with(".js")) {
        for import in file
            .body
            .lines()
            .filter_map(|l| l.split("from \"./").nth(1))
        {
            let name = import.split('"').next().unwrap();
            assert!(
                FILES.iter().any(|f| f.name == name),
                "{} imports {name}",
                file.name
            );
        }
    }
}

#[test]
fn the_spec_names_every_console_file() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/openapi.json");
    let spec: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let op = &spec["paths"]["/console/{file}"]["get"];
    let named: Vec<&str> = op["parameters"][0]["schema"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let served: Vec<&str> = FILES.iter().map(|f| f.name).collect();
    assert_eq!(named, served);
    let types = op["responses"]["200"]["content"].as_object().unwrap();
    for file in FILES {
        assert!(types.contains_key(file.content_type), "{}", file.name);
    }
}

#[test]
fn an_unknown_file_is_a_404_as_the_api_answers_it() {
    let svc = Service::start(ROOM_CORE, json!({}));
    for path in [
        "/console/nope.js",
        "/console/index.html",
        "/console/..%2Fsrc%2Flib.rs",
    ] {
        let (status, content_type, csp, _, body) = get(&svc, path);
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(content_type, "application/json");
        assert_eq!(csp.as_deref(), Some(CSP));
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["code"], "not_found", "{v}");
    }
    // Its query is held to the route's parameters, as the API's are.
    let (status, _, _, _, body) = get(&svc, "/?token=x");
    assert_eq!(status, 422, "{body}");
    // Another method is the API's, behind the token.
    let (status, v) = svc.call_with("POST", "/", None, None);
    assert_eq!(status, 401, "{v}");
    let (status, v) = svc.call("POST", "/", None);
    assert_eq!(
        (status, v["code"].as_str()),
        (405, Some("method_not_allowed"))
    );
}

#[test]
fn every_data_route_still_needs_the_token() {
    let svc = Service::start(ROOM_CORE, json!({}));
    let public: Vec<&str> = ROUTES.iter().filter(|r| r.public).map(|r| r.path).collect();
    assert_eq!(public, ["/", "/console/{file}"]);
    for r in ROUTES.iter().filter(|r| !r.public) {
        let path = r
            .path
            .replace("{id}", "cr_00000000000000000000000000000001");
        for token in [None, Some("wrong")] {
            let (status, v) = svc.call_with(r.method, &path, None, token);
            assert_eq!(status, 401, "{} {path} with {token:?}: {v}", r.method);
        }
    }
    let (status, _) = svc.call_with("GET", "/v1/sessions", None, Some(TOKEN));
    assert_eq!(status, 200);
}

#[test]
fn console_url_prints_the_address_with_the_token_and_the_log_has_it_without() {
    // A generated token, which the service keeps in <state_dir>/token.
    let svc = Service::start(ROOM_CORE, json!({"token": null}));
    let token = svc.token();
    let out = Command::new(ROOM_CORE)
        .args(["--console-url", "--config"])
        .arg(svc.config_path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let url = String::from_utf8(out.stdout).unwrap();
    assert_eq!(url.trim(), format!("{}/#token={token}", svc.base));
    let log = svc.log();
    let line = log
        .lines()
        .find(|l| l.contains("console on"))
        .expect("a console line");
    assert!(
        line.contains(&format!("console on {}/ ", svc.base)),
        "{line}"
    );
    assert!(line.contains("room-core --console-url"), "{line}");
    assert!(!log.contains(&token), "the log holds the token");
    // Without a token anywhere it says so, and writes nothing.
    let dir = room_kit::TempDir::new("console-url");
    let empty = dir.path();
    let config = empty.join("config.json");
    std::fs::write(
        &config,
        json!({"state_dir": empty.join("state")}).to_string(),
    )
    .unwrap();
    let out = Command::new(ROOM_CORE)
        .args(["--console-url", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no token yet"),
        "{out:?}"
    );
    assert!(!empty.join("state/token").exists());
    // `--help` names it; anything after it but a config is a usage error.
    let help = Command::new(ROOM_CORE).arg("--help").output().unwrap();
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("room-core --console-url [--config FILE]")
    );
    let out = Command::new(ROOM_CORE)
        .args(["--console-url", "--bogus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("Usage: room-core"));
}

#[test]
fn browser_the_token_url_opens_the_live_list() {
    scenario("list", json!({}));
}

#[test]
fn browser_the_list_keeps_one_loop_and_asks_no_sessions_view() {
    scenario("list_requests", json!({}));
}

#[test]
fn browser_thousands_of_events_with_nothing_to_show_leave_a_bounded_page() {
    scenario("chatter", json!({}));
}

#[test]
fn browser_a_wrong_token_says_so() {
    scenario("wrong_token", json!({}));
}

#[test]
fn browser_a_copy_wait_then_its_turn_live() {
    scenario("copy_wait", json!({}));
}

#[test]
fn browser_start_a_session_from_the_new_session_form() {
    scenario("new_session", json!({}));
}

#[test]
fn browser_start_an_acp_agents_session_and_read_its_message_whole() {
    let agent = room_kit::fixtures_dir().join("fake_acp.py");
    scenario(
        "new_acp_session",
        json!({"acp_agents": {"fake": {"command": agent}}}),
    );
}

#[test]
fn browser_send_a_prompt_from_the_keyboard() {
    scenario("send", json!({}));
}

#[test]
fn browser_choose_the_model_and_effort_beside_send() {
    scenario("switch_model", json!({}));
}

#[test]
fn browser_send_images_picked_and_pasted() {
    scenario("images", json!({}));
}

#[test]
fn browser_each_turn_lists_its_files_and_shows_its_diff_as_text() {
    scenario("diffs", json!({}));
}

#[test]
fn browser_rewind_a_folder_after_its_dry_run() {
    scenario("rewind", json!({}));
}

#[test]
fn browser_steer_a_running_turn() {
    scenario("steer", json!({}));
}

#[test]
fn browser_answer_an_approval_and_see_the_tool_run() {
    let test = "browser_answer_an_approval_and_see_the_tool_run";
    let Some(agent) = room_kit::agent_account(test) else {
        return;
    };
    // The agent socket outside the state dir (the service's, 0700).
    let sockets = room_kit::temp_root();
    scenario(
        "approve",
        json!({"agent_uid": agent.uid.as_raw(), "agent_socket": sockets.join("agent.sock")}),
    );
}

#[test]
fn browser_answer_a_real_claudes_approval_and_see_its_write() {
    let test = "browser_answer_a_real_claudes_approval_and_see_its_write";
    let (Some(agent), Some(claude)) = (
        room_kit::agent_account(test),
        room_kit::real_cli(test, "claude"),
    ) else {
        return;
    };
    // The fake model and the CLI's homes, the agent's as the app makes them.
    let dir = room_kit::temp_root();
    let model = room_kit::Model::start(&dir);
    let env = model.cli_env(&dir);
    room_kit::chown_tree(&dir, agent.uid.as_raw(), agent.gid.as_raw());
    let sockets = room_kit::temp_root();
    console_support::scenario_with(
        "approve_real",
        json!({
            "agent_uid": agent.uid.as_raw(),
            "agent_socket": sockets.join("agent.sock"),
            "claude_program": claude,
        }),
        env,
    );
}

#[test]
fn browser_fork_a_real_claude_session_from_a_turn() {
    let test = "browser_fork_a_real_claude_session_from_a_turn";
    let Some(claude) = room_kit::real_cli(test, "claude") else {
        return;
    };
    let dir = room_kit::temp_root();
    let model = room_kit::Model::start(&dir);
    let env = model.cli_env(&dir);
    console_support::scenario_with("fork_real", json!({ "claude_program": claude }), env);
}

#[test]
fn browser_interrupt_a_long_turn() {
    scenario("interrupt", json!({}));
}

#[test]
fn browser_stop_pauses_the_queue_and_resume_runs_it() {
    scenario("stop", json!({}));
}

#[test]
fn browser_a_reload_mid_stream_misses_and_doubles_nothing() {
    scenario("reload", json!({}));
}

#[test]
fn browser_a_service_restart_mid_stream_resumes_with_last_event_id() {
    // A fixed port, so the page finds the service again after its restart.
    let listen = format!("127.0.0.1:{}", room_kit::free_port());
    scenario("restart", json!({ "listen": listen }));
}

#[test]
fn browser_a_session_of_10000_events_opens_within_a_second() {
    scenario("large", json!({}));
}

#[test]
fn browser_real_transcripts_read_as_a_conversation_and_harness_markup_stays_text() {
    let harness = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/harness");
    scenario(
        "transcript",
        json!({
            "claude_program": harness.join("replay-claude"),
            "codex_program": harness.join("replay-codex"),
        }),
    );
}
