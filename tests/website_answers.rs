//! How room-cli shows the website's answers: JSON verbatim on success, a
//! top-level "error" field as a failure, and clear sentences when the website
//! is unreachable, answers non-JSON or is not configured.

use room_kit::{free_port, FakeWebsite, Out, Service, LOOP_ID};
use serde_json::json;

/// The service under test.
const ROOM_CORE: &str = env!("CARGO_BIN_EXE_room-core");

#[test]
fn a_top_level_error_field_is_a_failure_with_the_error_on_stderr() {
    let web = FakeWebsite::start();
    let core = Service::start(ROOM_CORE, json!({"website_url": web.url}));
    web.answer(
        403,
        r#"{"error":"This loop's script does not run in this sandbox."}"#,
    );
    let out = core.script(Some(LOOP_ID), &["loop", "list"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "This loop's script does not run in this sandbox.\n"
    );
    // Even with a 200.
    web.answer(200, r#"{"error":"nope","loops":[]}"#);
    let out = core.script(Some(LOOP_ID), &["loop", "list"]);
    assert_eq!((out.code, out.stderr.as_str()), (1, "nope\n"), "{out:?}");
    // A nested error is not top-level: printed verbatim.
    web.answer(
        200,
        r#"{"loops":[{"last_error":"The script failed (exit 3)."}]}"#,
    );
    let out = core.script(Some(LOOP_ID), &["loop", "list"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        "{\"loops\":[{\"last_error\":\"The script failed (exit 3).\"}]}\n"
    );
    // Not JSON.
    web.answer(502, "<html>bad gateway</html>");
    let out = core.script(Some(LOOP_ID), &["loop", "list"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        "The website answered HTTP 502 with something that is not JSON.\n"
    );
    assert_eq!(web.calls().len(), 4);
}

#[test]
fn the_website_token_is_sent_as_a_bearer() {
    let web = FakeWebsite::start();
    let core = Service::start(
        ROOM_CORE,
        json!({"website_url": web.url, "website_token": "fake-website-token"}),
    );
    let out = core.script(Some(LOOP_ID), &["loop", "list"]);
    assert_eq!(out.code, 0, "{out:?}");
    let r = &web.requests()[0];
    assert_eq!(r.method, "POST");
    assert_eq!(
        r.authorization.as_deref(),
        Some("Bearer fake-website-token")
    );
    assert!(
        !core.log().contains("fake-website-token"),
        "the token is never logged"
    );
}

const NO_WEBSITE: &str = "Core has no website configured, so it cannot forward this command. Core's operator must set one (website_url in Core's config, or CLOUDROOM_API_URL in Core's own environment); room-cli's environment does not count.\n";

#[test]
fn only_the_services_environment_names_the_website() {
    let web = FakeWebsite::start();
    let room_cli_with_url = |core: &Service| -> Out {
        std::process::Command::new(core.room_cli())
            .args(["loop", "list"])
            .env("ROOM_CORE_SOCKET", core.socket())
            .env("CLOUDROOM_LOOP", LOOP_ID)
            .env("CLOUDROOM_API_URL", &web.url)
            .output()
            .unwrap()
            .into()
    };
    // room-cli's CLOUDROOM_API_URL changes nothing: Core has no website.
    let core = Service::start(ROOM_CORE, json!({}));
    let out = room_cli_with_url(&core);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stderr, NO_WEBSITE);
    assert_eq!(web.calls(), vec![], "nothing reaches the website");
    drop(core);

    // The service's own CLOUDROOM_API_URL is where Core forwards.
    let core = Service::builder(ROOM_CORE)
        .harness_envs([("CLOUDROOM_API_URL".into(), web.url.clone())])
        .start();
    let out = core.script(Some(LOOP_ID), &["loop", "list"]);
    assert_eq!(out.code, 0, "{out:?}\n{}", core.log());
    assert_eq!(web.calls().len(), 1, "{:?}", web.calls());
}

#[test]
fn no_website_or_an_unreachable_one_is_a_clear_failure() {
    let core = Service::start(ROOM_CORE, json!({}));
    let out = core.script(Some(LOOP_ID), &["loop", "list"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.stderr, NO_WEBSITE);
    drop(core);

    // A port nothing listens on.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let core = Service::start(ROOM_CORE, json!({"website_url": url}));
    let out = core.script(Some(LOOP_ID), &["loop", "list"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .starts_with(&format!("Core could not reach the website at {url}: ")),
        "{out:?}"
    );
}

#[test]
fn many_scripts_at_once_each_get_their_answer() {
    let web = FakeWebsite::start();
    let core = std::sync::Arc::new(Service::start(ROOM_CORE, json!({"website_url": web.url})));
    let threads: Vec<_> = (0..12)
        .map(|i| {
            let core = core.clone();
            std::thread::spawn(move || {
                let args = ["loop", "run", &format!("x{i}")].map(String::from);
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                core.script(Some(LOOP_ID), &args)
            })
        })
        .collect();
    for t in threads {
        let out = t.join().unwrap();
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (0, "{\"ok\":true}\n"),
            "{out:?}"
        );
    }
    let mut args: Vec<String> = web
        .calls()
        .into_iter()
        .map(|(_, b)| b["args"][0].as_str().unwrap().to_string())
        .collect();
    args.sort();
    let mut want: Vec<String> = (0..12).map(|i| format!("x{i}")).collect();
    want.sort();
    assert_eq!(args, want);
}
