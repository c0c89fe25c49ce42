//! Seed 001's LoopScriptTests against the real service and room-cli: a loop's
//! check script (`env CLOUDROOM_LOOP=ID sh -c 'env -i room-cli …'`) acts for
//! its loop; everything else it may not run is refused with the seed's text,
//! and nothing refused reaches the website.

use room_kit::{FakeWebsite, Out, Service, LOOP_ID};
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

fn no_thread_or_loop(x: &str) -> String {
    format!("Run cloudroom {x} from a Cloudroom cloud thread or from a loop's check script (marked by CLOUDROOM_LOOP)\n")
}

fn script_other(x: &str) -> String {
    format!("A loop's check script has no thread, so it can't run cloudroom {x}. It can run room-cli loop (except report) and room-cli thread spawn --top-level.\n")
}

/// The call was refused with exit `code` and `want` on stderr, nothing on stdout.
fn assert_refused(out: &Out, code: i32, want: &str, what: impl std::fmt::Debug) {
    assert_eq!(out.code, code, "{what:?}: {out:?}");
    assert_eq!(out.stderr, want, "{what:?}");
    assert_eq!(out.stdout, "", "{what:?}");
}

const LOOP_REPORT: &str = "A loop's check script can't report: room-cli loop report is for the run's own thread. Print what the run needs instead; Cloudroom adds it to the run's prompt.\n";
const SCRIPT_CHILD: &str = "A loop's check script has no thread to start a child under. Add --top-level to start a top-level thread in the loop's project.\n";
const SECRET: &str = "Run cloudroom secret from a Cloudroom cloud thread\n";

#[test]
fn a_loop_script_runs_loop_commands_and_top_level_spawns_as_its_loop() {
    let web = FakeWebsite::start();
    web.answer(200, r#"{"loops": [{"id": "x", "last_error": null}]}"#);
    let core = Service::start(ROOM_CORE, json!({"website_url": web.url}));

    let out = core.script(Some(LOOP_ID), &["loop", "list"]);
    assert_eq!(out.code, 0, "{out:?}\n{}", core.log());
    // The website's JSON, verbatim.
    assert_eq!(
        out.stdout,
        "{\"loops\": [{\"id\": \"x\", \"last_error\": null}]}\n"
    );
    assert_eq!(out.stderr, "");
    assert_eq!(
        web.calls(),
        vec![(
            "/api/core/automation".to_string(),
            json!({"action": "list", "automation": LOOP_ID})
        )]
    );

    web.answer(200, r#"{"thread":"t1"}"#);
    let out = core.script(
        Some(LOOP_ID),
        &["thread", "spawn", "--top-level", "check the build"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout, "{\"thread\":\"t1\"}\n");
    let launches: Vec<_> = web
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/core/launch")
        .collect();
    assert_eq!(launches.len(), 1, "{:?}", web.calls());
    let body = launches[0].body.as_object().unwrap();
    assert_eq!(body["automation"], LOOP_ID);
    assert!(!body.contains_key("session"), "{body:?}");
    assert!(!body.contains_key("top_level"), "{body:?}");
    assert_eq!(body["args"], json!(["check the build"]));
    // Core gave it a fresh request ID (a UUID v4).
    let rid = body["request_id"].as_str().unwrap();
    assert!(uuid::Uuid::parse_str(rid).is_ok(), "{rid}");

    // A stable --request-id is passed through, so a retried script starts one thread.
    let out = core.script(
        Some(LOOP_ID),
        &[
            "thread",
            "spawn",
            "--top-level",
            "--request-id",
            "run-42",
            "go",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let last = web.calls().pop().unwrap();
    assert_eq!(
        last,
        (
            "/api/core/launch".to_string(),
            json!({"action": "spawn", "automation": LOOP_ID, "request_id": "run-42", "args": ["go"]})
        )
    );

    // Other loop commands go through too; the website decides (contract point 3).
    let out = core.script(Some(LOOP_ID), &["loop", "pause", LOOP_ID]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        web.calls().pop().unwrap().1,
        json!({"action": "pause", "automation": LOOP_ID, "args": [LOOP_ID]})
    );
}

#[test]
fn a_process_without_a_loop_marker_is_still_refused() {
    let web = FakeWebsite::start();
    let core = Service::start(ROOM_CORE, json!({"website_url": web.url}));
    let out = core.script(None, &["loop", "list"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stderr, no_thread_or_loop("loop"));
    assert_eq!(out.stdout, "");
    let out = core.script(None, &["thread", "spawn", "--top-level", "go"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stderr, no_thread_or_loop("thread spawn --top-level"));
    let out = core.script(None, &["thread", "list"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "Run cloudroom thread list from a Cloudroom cloud thread\n"
    );
    assert_eq!(web.calls(), vec![], "nothing reaches the website");
}

#[test]
fn unknown_callers_are_told_what_a_loop_script_may_run() {
    let web = FakeWebsite::start();
    let core = Service::start(ROOM_CORE, json!({"website_url": web.url}));
    let child = "Run cloudroom thread spawn from a Cloudroom cloud thread. A loop's check script (marked by CLOUDROOM_LOOP) can only start a top-level thread, with --top-level.\n";
    let cases: [(&[&str], &str); 3] = [
        (&["thread", "spawn", "go"], child),
        (&["thread", "spawn", "--shared-sandbox", "go"], child),
        (
            &["loop", "report", "done"],
            "Run cloudroom loop report from a Cloudroom cloud thread: it reports for the run's own thread, so a loop's check script can't run it.\n",
        ),
    ];
    for (args, want) in cases {
        let out = core.script(None, args);
        assert_refused(&out, 1, want, args);
    }
    assert_eq!(web.calls(), vec![], "nothing reaches the website");
}

#[test]
fn secret_keeps_its_own_session_check_and_message() {
    let web = FakeWebsite::start();
    let core = Service::start(ROOM_CORE, json!({"website_url": web.url}));
    // No marker, a loop's marker, a malformed marker: secret's own check
    // and message, never the marker's.
    for marker in [None, Some(LOOP_ID), Some("nope")] {
        let out = core.script(marker, &["secret", "API_KEY"]);
        assert_refused(&out, 1, SECRET, marker);
    }
    assert_eq!(web.calls(), vec![], "nothing reaches the website");
}

#[test]
fn a_malformed_loop_marker_is_refused() {
    let web = FakeWebsite::start();
    let core = Service::start(ROOM_CORE, json!({"website_url": web.url}));
    let markers = [
        "",                                      // empty
        "0f8e2c1a",                              // short
        "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5g",  // non-hex
        "../../../../../../../../etc/passwd-x",  // path-like
        "0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b0", // 37 characters
    ];
    for marker in markers {
        for args in [
            &["loop", "list"][..],
            &["thread", "spawn", "--top-level", "go"],
        ] {
            let out = core.script(Some(marker), args);
            assert_eq!(out.code, 1, "{marker:?} {args:?}: {out:?}");
            assert!(
                out.stderr.starts_with("CLOUDROOM_LOOP is set to "),
                "{out:?}"
            );
            assert_eq!(
                out.stderr,
                format!(
                    "CLOUDROOM_LOOP is set to {marker:?}, which is not a loop ID (a 36-character UUID such as 0f8e2c1a-3b4d-4e5f-8a9b-0c1d2e3f4a5b). Cloudroom sets it on a loop's check script; leave it alone.\n"
                )
            );
        }
    }
    assert_eq!(web.calls(), vec![], "nothing reaches the website");
}

#[test]
fn session_only_commands_refuse_a_loop_script_clearly() {
    let web = FakeWebsite::start();
    let core = Service::start(ROOM_CORE, json!({"website_url": web.url}));
    let cases: Vec<(&[&str], String)> = vec![
        (&["thread", "list"], script_other("thread list")),
        (
            &["thread", "update", "--title", "x"],
            script_other("thread update"),
        ),
        (
            &["thread", "archive", "--self"],
            script_other("thread archive"),
        ),
        (&["thread", "output", "t1"], script_other("thread output")),
        (&["thread", "tell", "t1", "hi"], script_other("thread tell")),
        (&["thread", "stop", "t1"], script_other("thread stop")),
        (&["thread", "move", "t1", "p2"], script_other("thread move")),
        (&["fork"], script_other("fork")),
        (&["feedback", "nice"], script_other("feedback")),
        (&["gpu"], script_other("gpu")),
        (&["computer-use"], script_other("computer-use")),
        (&["thread", "spawn", "do it"], SCRIPT_CHILD.to_string()),
        (
            &["thread", "spawn", "--shared-sandbox", "do it"],
            SCRIPT_CHILD.to_string(),
        ),
        (&["loop", "report", "done"], LOOP_REPORT.to_string()),
        (&["secret", "API_KEY"], SECRET.to_string()),
    ];
    for (args, want) in cases {
        let out = core.script(Some(LOOP_ID), args);
        assert_refused(&out, 1, &want, args);
    }
    assert_eq!(web.calls(), vec![], "nothing reaches the website");
}

#[test]
fn unknown_commands_exit_2_with_the_list_of_commands_in_a_script_too() {
    let web = FakeWebsite::start();
    let core = Service::start(ROOM_CORE, json!({"website_url": web.url}));
    for marker in [Some(LOOP_ID), None] {
        let out = core.script(marker, &["status"]);
        assert_eq!(out.code, 2, "{out:?}");
        assert_eq!(
            out.stderr,
            "Unknown command status. Commands: room-cli thread, fork, loop, files, feedback, gpu, computer-use, secret.\n"
        );
    }
    // A caller cannot name the scope itself.
    let out = core.script(Some(LOOP_ID), &["loop", "list", "--session", "cr_other"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(web.calls(), vec![]);
}

/// Sends `argv` to Core's socket directly, as a client that is not room-cli
/// (which would refuse a bad argv before asking), and returns Core's answer.
fn ask_core_directly(socket: &std::path::Path, argv: &[&str]) -> serde_json::Value {
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(socket).unwrap();
    s.write_all(json!({"argv": argv, "cwd": "/"}).to_string().as_bytes())
        .unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap()
}

#[test]
fn a_valued_or_contradictory_top_level_is_a_usage_error() {
    let web = FakeWebsite::start();
    web.answer(200, r#"{"thread":"t1"}"#);
    let core = Service::start(ROOM_CORE, json!({"website_url": web.url}));
    let cases: [(&[&str], &str); 3] = [
        (
            &["thread", "spawn", "--top-level=false", "go"],
            "--top-level takes no value: give --top-level alone to turn it on, or leave it out.\n",
        ),
        (
            &["thread", "spawn", "--top-level", "--shared-sandbox", "go"],
            "thread spawn takes --top-level or --shared-sandbox, not both: a top-level thread is not a child, so it has no sandbox to share.\n",
        ),
        (
            &["thread", "spawn", "--shared-sandbox", "--top-level", "go"],
            "thread spawn takes --top-level or --shared-sandbox, not both: a top-level thread is not a child, so it has no sandbox to share.\n",
        ),
    ];
    for (args, want) in cases {
        for marker in [Some(LOOP_ID), None] {
            let out = core.script(marker, args);
            assert_refused(&out, 2, want, args);
        }
        // Core's own grammar refuses it too, whoever sends it.
        assert_eq!(
            ask_core_directly(&core.socket(), args),
            json!({"exit": 2, "stdout": "", "stderr": want}),
            "{args:?}"
        );
    }
    assert_eq!(web.calls(), vec![], "nothing reaches the website");
}
