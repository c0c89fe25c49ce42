//! Seed 001 end to end: the real room-core (two of them, two sandboxes),
//! the real room-cli, and the reference website (`room-website`), which runs
//! each loop's check script as the agent account with `CLOUDROOM_LOOP` set.
//!
//! The schedule is `* * * * *`, but cron's finest step is a minute, so the
//! runs here are triggered with `loop run` (and one with a one-time `at_ms`
//! a second away, through the website's own ticker); that a repeating
//! schedule fires once per matching minute is proven by the cron and
//! schedule unit tests in src/{cron,runner}.rs, which take the
//! time as an argument.

mod loop_support;
mod reference_support;

use std::time::{Duration, Instant};

use loop_support::{
    agent_account, as_script, in_thread, sandbox, session_count, start_core, Shared, Website,
};
use room_kit::procs::group_members;
use room_kit::{unix_ms, wait_until};
use serde_json::{json, Value};

const SIGNIN_A: &str = "signin-token-of-core-a";
const SIGNIN_B: &str = "signin-token-of-core-b";
const OUT_MARKER: &str = "STDOUT_MARKER_5521";
const ERR_MARKER: &str = "STDERR_MARKER_8813";
const LOOP_REPORT: &str = "A loop's check script can't report: room-cli loop report is for the run's own thread. Print what the run needs instead; Cloudroom adds it to the run's prompt.";
const NO_THREAD: &str = "A loop's check script has no thread to re-prompt. Add --new-thread.";

/// The check script of the seed's repro: it lists its loops, spawns a
/// top-level thread with a stable request ID, tries to report (refused),
/// prints a marker on each stream and exits 3.
const SCRIPT: &str = r#"echo "== list"
room-cli loop list
echo "== spawn"
room-cli thread spawn --top-level --request-id nightly-1 "Look at the failing build."
echo "== report"
room-cli loop report done
echo "report exit $?"
echo STDOUT_MARKER_5521
echo STDERR_MARKER_8813 >&2
exit 3
"#;

fn json_of(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The JSON line that follows `header` in a script's output.
fn line_after(output: &str, header: &str) -> Value {
    let mut lines = output.lines().skip_while(|l| *l != header);
    lines.next();
    json_of(
        lines
            .next()
            .unwrap_or_else(|| panic!("nothing after {header}: {output}")),
    )
}

#[test]
fn a_loop_script_lists_spawns_and_leaves_its_output_for_its_owner() {
    const TEST: &str = "a_loop_script_lists_spawns_and_leaves_its_output_for_its_owner";
    let Some(agent) = agent_account(TEST) else {
        return;
    };
    let shared = Shared::new(&agent);
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let core_a = start_core(&shared, &agent, "a", &url, SIGNIN_A);
    let core_b = start_core(&shared, &agent, "b", &url, SIGNIN_B);
    let web = Website::start(
        held,
        json!({"sandboxes": [
            sandbox(&core_a, &shared, "a", SIGNIN_A),
            sandbox(&core_b, &shared, "b", SIGNIN_B),
        ]}),
    );

    // Ana's thread in sandbox a makes the loop: every minute, a new thread
    // per run, with codex (the thread itself runs claude).
    let thread = web.thread("ana", "shop", "a");
    let script_file = shared.drop().join("check.sh");
    std::fs::write(&script_file, SCRIPT).unwrap();
    let create = format!(
        "--cron '* * * * *' --new-thread --agent codex --name nightly --script \"$(cat {})\"",
        script_file.display()
    );
    let tool = in_thread(
        &core_a,
        &thread,
        &shared.cli("a", &format!("loop create {create}")),
    );
    assert_eq!(tool["exit"], 0, "{tool}\n{}", web.log());
    let made = json_of(tool["stdout"].as_str().unwrap());
    let id = made["loop"]["id"].as_str().unwrap().to_string();
    assert!(room_machines::valid_id(&id), "{made}");
    assert_eq!(made["loop"]["schedule"], "* * * * *");
    assert_eq!(made["loop"]["agent"], "codex");

    // Run it now, from the thread.
    let tool = in_thread(
        &core_a,
        &thread,
        &shared.cli("a", &format!("loop run {id}")),
    );
    assert_eq!(tool["exit"], 0, "{tool}");
    assert_eq!(
        json_of(tool["stdout"].as_str().unwrap())["run"]["queued"],
        true
    );
    web.await_runs("ana", &id, 1, Duration::from_secs(60));

    // What `room-cli loop list` shows the thread afterwards.
    let tool = in_thread(&core_a, &thread, &shared.cli("a", "loop list"));
    assert_eq!(tool["exit"], 0, "{tool}");
    let listed = json_of(tool["stdout"].as_str().unwrap());
    let mine = listed["loops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == id.as_str())
        .unwrap()
        .clone();
    assert_eq!(mine["last_error"], "The script failed (exit 3).", "{mine}");
    let output = mine["last_output"].as_str().unwrap().to_string();
    // Both markers, in the order the script printed them.
    let (o, e) = (output.find(OUT_MARKER), output.find(ERR_MARKER));
    assert!(o.is_some() && e.is_some() && o < e, "{output}");
    // The script's own loop list worked and showed its loop.
    let seen = line_after(&output, "== list");
    assert!(
        seen["loops"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["id"] == id.as_str()),
        "{output}"
    );
    // report was refused with the seed's text (exit 1).
    assert!(
        output.contains(&format!("{LOOP_REPORT}\nreport exit 1\n")),
        "{output}"
    );

    // The top-level spawn started a thread in Core with the loop's agent.
    let spawned = line_after(&output, "== spawn");
    assert_eq!(spawned["thread"]["created"], true, "{output}");
    assert_eq!(spawned["thread"]["loop"], id.as_str());
    let sid = spawned["thread"]["id"].as_str().unwrap().to_string();
    let session = core_a.session(&sid);
    assert_eq!(session["harness"], "codex", "{session}");
    assert_eq!(session["kind"], "thread");
    assert_eq!(
        session_count(&core_a),
        2,
        "ana's thread and the spawned one"
    );

    // The next run's spawn, with the same request ID, starts no second thread.
    let (status, v) = web.app("POST", &format!("/loops/{id}/run"), None);
    assert_eq!((status, &v["run"]["queued"]), (202, &json!(true)), "{v}");
    let second = web.await_runs("ana", &id, 2, Duration::from_secs(60));
    let again = line_after(second["last_output"].as_str().unwrap(), "== spawn");
    assert_eq!(again["thread"]["id"], sid.as_str(), "{second}");
    assert_eq!(again["thread"]["created"], false);
    assert_eq!(session_count(&core_a), 2, "no second thread in Core");
    let spawns: Vec<Value> = web
        .threads("ana")
        .into_iter()
        .filter(|t| t["request_id"] == "nightly-1")
        .collect();
    assert_eq!(spawns.len(), 1, "{spawns:?}");

    // Another user in the project sees the loop, not its output.
    let bo = web.thread("bo", "shop", "a");
    let (status, v) = web.as_core(
        SIGNIN_A,
        "automation",
        json!({"action": "list", "session": bo}),
    );
    assert_eq!(status, 200, "{v}");
    let theirs = v["loops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == id.as_str())
        .unwrap();
    assert!(
        theirs.get("last_output").is_none() && theirs.get("last_error").is_none(),
        "{theirs}"
    );
    assert!(!v.to_string().contains(OUT_MARKER));

    // A script's create that would re-prompt "this thread" is refused.
    for when in [
        &["--cron", "* * * * *"][..],
        &["--in", "10m"],
        &["--at", "2030-01-01T00:00Z"],
    ] {
        let args: Vec<&str> = ["loop", "create"]
            .iter()
            .copied()
            .chain(when.iter().copied())
            .collect();
        let out = as_script(&shared, &agent, "a", &id, &args);
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (1, &*format!("{NO_THREAD}\n")),
            "{when:?}: {out:?}"
        );
    }
    let out = as_script(
        &shared,
        &agent,
        "a",
        &id,
        &["loop", "create", "--in", "10m", "--new-thread"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let made = json_of(&out.stdout);
    assert_eq!(
        (&made["loop"]["owner"], &made["loop"]["agent"]),
        (&json!("ana"), &json!("codex"))
    );

    // A loop of another sandbox's Core: 403, through room-cli and on the wire.
    let (status, v) = web.app(
        "POST",
        "/loops",
        Some(json!({"owner": "ana", "project": "shop", "sandbox": "b",
                    "schedule": "0 * * * *", "script": "true"})),
    );
    assert_eq!(status, 201, "{v}");
    let other = v["loop"]["id"].as_str().unwrap().to_string();
    let out = as_script(&shared, &agent, "a", &other, &["loop", "list"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr,
        format!("No loop {other} runs its check script in this sandbox.\n")
    );
    let out = as_script(
        &shared,
        &agent,
        "a",
        &other,
        &["thread", "spawn", "--top-level", "x"],
    );
    assert_eq!(out.code, 1, "{out:?}");
    let (status, v) = web.as_core(
        SIGNIN_A,
        "automation",
        json!({"action": "list", "automation": other}),
    );
    assert_eq!(status, 403);
    assert_eq!(
        v["error"],
        format!("No loop {other} runs its check script in this sandbox.")
    );
    // Its own sandbox's Core is served.
    let out = as_script(&shared, &agent, "b", &other, &["loop", "list"]);
    assert_eq!(out.code, 0, "{out:?}");
    // Exactly one of session and automation; a Core the website does not know.
    for body in [
        json!({"action": "list"}),
        json!({"action": "list", "automation": id, "session": thread}),
    ] {
        let (status, v) = web.as_core(SIGNIN_A, "automation", body);
        assert_eq!(
            (status, v["error"].as_str()),
            (400, Some("Send exactly one of session or automation."))
        );
    }
    let (status, _) = web.as_core(
        "not-a-signin-token",
        "automation",
        json!({"action": "list", "automation": id}),
    );
    assert_eq!(status, 401);
    // report with automation is refused by the website too.
    let (status, v) = web.as_core(
        SIGNIN_A,
        "automation",
        json!({"action": "report", "automation": id}),
    );
    assert_eq!((status, v["error"].as_str()), (403, Some(LOOP_REPORT)));

    // The website's own ticker: a one-time loop due in a second runs unasked.
    let at = unix_ms() + 1000;
    let (status, v) = web.app(
        "POST",
        "/loops",
        Some(json!({"owner": "ana", "project": "shop", "sandbox": "a",
                    "at_ms": at, "script": "echo \"ran as $(id -un) for $CLOUDROOM_LOOP\""})),
    );
    assert_eq!(status, 201, "{v}");
    let once = v["loop"]["id"].as_str().unwrap().to_string();
    let ran = web.await_runs("ana", &once, 1, Duration::from_secs(30));
    assert!(ran["last_run_ms"].as_u64().unwrap() >= at, "{ran}");
    assert_eq!(ran["last_error"], Value::Null);
    assert_eq!(
        ran["last_output"],
        format!("ran as room-agent for {once}\n")
    );
    assert_eq!(ran["next_run_ms"], Value::Null, "it runs once");

    // Nothing of the output reaches the website's log.
    assert!(!web.log().contains(OUT_MARKER) && !web.log().contains(ERR_MARKER));
    drop(core_b);
}

#[test]
fn a_script_past_its_limit_is_killed_while_its_spawn_completes() {
    const TEST: &str = "a_script_past_its_limit_is_killed_while_its_spawn_completes";
    let Some(agent) = agent_account(TEST) else {
        return;
    };
    let shared = Shared::new(&agent);
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let core = start_core(
        &shared,
        &agent,
        "a",
        &format!("http://127.0.0.1:{port}"),
        SIGNIN_A,
    );
    // Launches take 4 s to reach Core (waking a sandbox); scripts get 1.5 s.
    let mut sb = sandbox(&core, &shared, "a", SIGNIN_A);
    sb["launch_delay_ms"] = json!(4000);
    let web = Website::start(
        held,
        json!({"sandboxes": [sb], "script_limit_ms": 1500, "kill_grace_ms": 500}),
    );
    let pgid_file = shared.drop().join("pgid");
    let script = format!(
        "cut -d' ' -f5 /proc/$$/stat > {pgid}\n\
         room-cli thread spawn --top-level --request-id slow-1 \"Slow start.\"\n\
         echo \"spawn exit $?\"\n\
         sleep 60\n",
        pgid = pgid_file.display()
    );
    let (status, v) = web.app(
        "POST",
        "/loops",
        Some(json!({"owner": "ana", "project": "shop", "sandbox": "a",
                    "schedule": "0 0 1 1 *", "agent": "codex", "script": script})),
    );
    assert_eq!(status, 201, "{v}");
    let id = v["loop"]["id"].as_str().unwrap().to_string();
    let started = Instant::now();
    let (status, _) = web.app("POST", &format!("/loops/{id}/run"), None);
    assert_eq!(status, 202);

    // The script is running, in a process group of its own, blocked on its spawn.
    let pgid: i32 = wait_until("the script's pgid", Duration::from_secs(30), || {
        std::fs::read_to_string(&pgid_file)
            .ok()?
            .trim()
            .parse()
            .ok()
    });
    assert!(!group_members(pgid).is_empty(), "group {pgid} is running");

    let run = web.await_runs("ana", &id, 1, Duration::from_secs(30));
    assert_eq!(
        run["last_error"], "The script ran longer than its limit of 1.5 s and was stopped.",
        "{run}"
    );
    assert_eq!(
        run["last_output"], "",
        "killed before room-cli printed anything"
    );
    let members = wait_until("the group to be gone", Duration::from_secs(10), || {
        let m = group_members(pgid);
        m.is_empty().then_some(m)
    });
    assert!(members.is_empty());
    // Killed within the limit plus the grace (and some slack for a loaded machine).
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );

    // Core carries the forwarded call to its end: the thread starts anyway.
    let thread = wait_until("the spawned thread", Duration::from_secs(30), || {
        web.threads("ana")
            .into_iter()
            .find(|t| t["request_id"] == "slow-1")
    });
    // ...after the run had ended: the spawn was still in flight when the script died.
    assert!(
        thread["created_ms"].as_u64() > run["last_run_ms"].as_u64(),
        "{thread} {run}"
    );
    let session = core.session(thread["id"].as_str().unwrap());
    assert_eq!(session["harness"], "codex");
}

#[test]
fn the_demo_runs_a_loop_and_shows_what_loop_list_shows() {
    // Built before the clock starts; the demo finds them beside itself.
    reference_support::service_binaries();
    let out = std::env::temp_dir().join(format!("room-core-demo-test-{}.txt", std::process::id()));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_room-demo"))
        .env_remove("CLOUDROOM_API_URL")
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "the demo ran past 120 s: {}",
                std::fs::read_to_string(&out).unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    assert!(status.success(), "{text}");
    for want in [
        "Done: the session waited for its project copy, then started.",
        "== part two: a loop's check script (seed 001)",
        "   last_error: null",
        "   | my loops:",
        "   | checked",
        "harness=\"codex\"",
        "Done: the loop's script ran as its loop",
        "   --model \"claude-haiku-4-5\"",
        "   --effort \"low\"",
        "   --append-system-prompt \"Answer in one short line.\"",
        "== the harness answered: ok (I see 1 image: image/png of 70 bytes)",
        "   each turn_started names its model: [\"claude-haiku-4-5\",\"opus\"]",
        "Done: the session ran with the model, effort, instructions and image the app chose, \
         and a message switched its model.",
        "   turn 1 changed: draft.txt (added), notes.txt (added)",
        "   turn 2 changed: draft.txt (deleted), notes.txt (modified)",
        "   changed between the turns (folder_changed): by-hand.txt (added)",
        "   -two\n   +TWO\n",
        "Done: each turn's diff holds what that turn changed, and the edit between them is its own.",
        "   would change: by-hand.txt (deleted), draft.txt (added), notes.txt (modified)",
        "   conflicts (changed since turn 1 by someone other than a turn): [\"by-hand.txt\"]",
        "   written: [\"draft.txt\",\"notes.txt\"], deleted: [\"by-hand.txt\"], failed: []",
        "   notes.txt now: \"one\\ntwo\\n\"; by-hand.txt there: false",
        "Done: the folder is as turn 1 left it, and the dry run named the edit it undid.",
    ] {
        assert!(text.contains(want), "{want:?} missing from:\n{text}");
    }
}
