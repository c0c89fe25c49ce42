use room_machines::session::Effort;
use serde_json::Value;

use super::*;
use crate::harness::jsonrpc::{read_head, WAITING_MAX};
use crate::harness::refusal::Why;
use crate::harness::speech::Answer;

/// The messages the real CLI printed in a recorded scenario
/// (fixtures/protocols/codex/), as lines.
fn from_cli(name: &str) -> Vec<String> {
    crate::harness::transcripts::printed("codex", name)
}

fn json(out: &Out) -> Value {
    serde_json::from_str(&out.line).unwrap()
}

fn opening(resume: Option<&str>) -> Opening {
    Opening {
        cwd: "<work>".into(),
        resume: resume.map(str::to_string),
        revert_before: None,
        fork_through: None,
        approval_policy: ApprovalPolicy::Untrusted,
        sandbox: SandboxMode::WorkspaceWrite,
        model: None,
        instructions: None,
        effort: None,
        config: None,
    }
}

/// A talker fed `lines`, gathering what it heard and wrote.
fn hear_all(talk: &mut CodexTalk, lines: &[String]) -> (Vec<Heard>, Vec<Out>, Vec<String>) {
    let (mut heard, mut writes, mut named) = (Vec::new(), Vec::new(), Vec::new());
    for line in lines {
        let h = talk.hear(line);
        heard.extend(h.heard);
        writes.extend(h.writes);
        named.extend(h.named);
    }
    (heard, writes, named)
}

/// A talker that has been given prompt `text` (its handshake said).
fn prompted(text: &str) -> CodexTalk {
    let mut talk = CodexTalk::new(opening(None));
    talk.say(Said::prompt(text.into()));
    talk
}

/// A talker whose thread `t` is open and whose turn `u` runs.
fn in_turn() -> CodexTalk {
    let mut talk = prompted("p");
    talk.hear(r#"{"id":2,"result":{"thread":{"id":"t"}}}"#);
    talk.hear(r#"{"id":3,"result":{"turn":{"id":"u"}}}"#);
    talk
}

/// The first approval request heard in recorded scenario `name`.
fn first_asked(name: &str) -> ApprovalRequest {
    let (heard, _, _) = hear_all(&mut prompted("p"), &from_cli(name));
    match heard.into_iter().next() {
        Some(Heard::Asked(req)) => req,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_prompt_opens_the_thread_first_and_goes_once_codex_names_it() {
    let mut talk = CodexTalk::new(opening(None));
    let said = talk.say(Said::prompt("hello".into()));
    let methods: Vec<Value> = said.iter().map(|o| json(o)["method"].clone()).collect();
    assert_eq!(methods, ["initialize", "initialized", "thread/start"]);
    assert!(said.iter().all(|o| o.carries == Carries::Prompt));
    assert_eq!(
        json(&said[2])["params"],
        serde_json::json!({"cwd": "<work>", "approvalPolicy": "untrusted",
                           "sandbox": "workspace-write"})
    );
    let lines = from_cli("turn");
    let done = lines
        .iter()
        .position(|l| l.contains("turn/completed"))
        .unwrap();
    let (heard, writes, named) = hear_all(&mut talk, &lines[..=done]);
    let start = json(&writes[0]);
    assert_eq!(start["method"], "turn/start");
    assert_eq!(start["id"], 3);
    assert_eq!(start["params"]["input"][0]["text"], "hello");
    assert_eq!(writes.len(), 1, "{writes:?}");
    // The turn is named once its ID is known, and `turn/completed` ends it.
    assert_eq!(named, ["01a23bbb-f7ce-7fe1-84a4-9a72904c9226"]);
    assert_eq!(heard, [Heard::Finished { failed: None }]);
    // A warm follow-up goes at once.
    let next = talk.say(Said::prompt("again".into()));
    assert_eq!(json(&next[0])["method"], "turn/start");
    assert_eq!(
        json(&next[0])["params"]["threadId"],
        start["params"]["threadId"]
    );
}

#[test]
fn a_resumed_thread_is_resumed_and_an_unknown_one_refuses_the_prompt() {
    let mut talk = CodexTalk::new(opening(Some("t-1")));
    let said = talk.say(Said::prompt("hi".into()));
    assert_eq!(json(&said[2])["method"], "thread/resume");
    assert_eq!(json(&said[2])["params"]["threadId"], "t-1");
    let refused =
        r#"{"error":{"code":-32600,"message":"no rollout found for thread id t-1"},"id":2}"#;
    assert_eq!(
        talk.hear(refused).heard,
        Some(Heard::PromptRefused(
            "codex refused the turn: no rollout found for thread id t-1".into()
        ))
    );
}

#[test]
fn a_rewound_thread_is_reverted_before_its_prompt_and_a_refused_revert_refuses_it() {
    let mut o = opening(Some("t-1"));
    o.revert_before = Some("turn-2".into());
    let mut talk = CodexTalk::new(o.clone());
    let said = talk.say(Said::prompt("hi".into()));
    assert_eq!(json(&said[2])["method"], "thread/resume");
    let resumed = r#"{"id":2,"result":{"thread":{"id":"t-1"}}}"#;
    let writes = talk.hear(resumed).writes;
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(json(&writes[0])["method"], "thread/revert");
    assert_eq!(
        json(&writes[0])["params"],
        serde_json::json!({"threadId": "t-1", "beforeTurnId": "turn-2"})
    );
    let id = json(&writes[0])["id"].clone();
    let writes = talk
        .hear(&format!(
            r#"{{"id":{id},"result":{{"thread":{{"id":"t-1"}}}}}}"#
        ))
        .writes;
    assert_eq!(
        json(&writes[0])["method"],
        "turn/start",
        "the prompt goes now"
    );
    assert_eq!(json(&writes[0])["params"]["input"][0]["text"], "hi");

    let mut talk = CodexTalk::new(o);
    talk.say(Said::prompt("hi".into()));
    let writes = talk.hear(resumed).writes;
    let id = json(&writes[0])["id"].clone();
    let refused =
        format!(r#"{{"id":{id},"error":{{"code":-32600,"message":"unknown turn turn-2"}}}}"#);
    assert_eq!(
        talk.hear(&refused).heard,
        Some(Heard::PromptRefused(
            "codex could not cut the conversation where the rewind asked: unknown turn turn-2"
                .into()
        ))
    );
}

#[test]
fn a_steer_and_an_interrupt_wait_for_the_turns_id_and_name_it() {
    let mut talk = prompted("hello");
    let lines = from_cli("turn");
    // Up to the thread's answer: turn/start is out, its answer is not in.
    let answer_of = |key: &str| {
        let is = |l: &String| serde_json::from_str::<Value>(l).unwrap()["result"][key].is_object();
        lines.iter().position(is).unwrap()
    };
    let open = answer_of("thread");
    let (_, writes, _) = hear_all(&mut talk, &lines[..=open]);
    assert_eq!(json(&writes[0])["method"], "turn/start");
    let steer = Said::Steer {
        prompt: 7,
        text: "use the other file".into(),
    };
    assert_eq!(talk.say(steer), []);
    assert_eq!(talk.say(Said::Interrupt), []);
    let answer = answer_of("turn");
    let (_, writes, _) = hear_all(&mut talk, &lines[open + 1..=answer]);
    let steer = json(&writes[0]);
    assert_eq!(steer["method"], "turn/steer");
    assert_eq!(
        steer["params"]["expectedTurnId"],
        "01a23bbb-f7e8-75b0-8db1-527e047ffffc"
    );
    assert_eq!(
        writes[0].carries,
        Carries::Steer {
            prompt: 7,
            text: "use the other file".into()
        }
    );
    assert_eq!(json(&writes[1])["method"], "turn/interrupt");
    // Refused (the turn had ended): the steer goes back to the queue.
    let refused = format!(
        r#"{{"error":{{"code":-32600,"message":"no active turn to steer"}},"id":{}}}"#,
        steer["id"]
    );
    assert_eq!(
        talk.hear(&refused).heard,
        Some(Heard::SteerRefused {
            prompt: 7,
            text: "use the other file".into()
        })
    );
    // With no turn running, a steer goes as one codex refuses; an
    // interrupt is not sent at all.
    let done = lines
        .iter()
        .position(|l| l.contains("turn/completed"))
        .unwrap();
    hear_all(&mut talk, &lines[answer + 1..=done]);
    let late = talk.say(Said::Steer {
        prompt: 8,
        text: "late".into(),
    });
    assert_eq!(json(&late[0])["params"]["expectedTurnId"], "");
    assert_eq!(talk.say(Said::Interrupt), []);
}

fn answered(
    talk: &mut CodexTalk,
    harness_ref: &str,
    decision: Decision,
    by: DecidedBy,
) -> Vec<Value> {
    let said = talk.say(Said::Answer(Answer {
        harness_ref: harness_ref.into(),
        tool: "command".into(),
        decision,
        by,
        message: None,
    }));
    said.iter().map(json).collect()
}

#[test]
fn a_command_approval_is_heard_and_each_decision_answers_it() {
    let req = first_asked("approval_accept");
    assert_eq!(
        (req.harness_ref.as_str(), req.tool.as_str()),
        ("0", "command")
    );
    let input: Value = serde_json::from_str(&req.input).unwrap();
    assert!(
        input["command"].as_str().unwrap().contains("accepted.txt"),
        "{input}"
    );
    assert_eq!(input["cwd"], "<work>");

    // The turn is still running for these answers.
    let mut talk = prompted("p");
    let lines = from_cli("approval_accept");
    let asked = lines
        .iter()
        .position(|l| l.contains("requestApproval"))
        .unwrap();
    hear_all(&mut talk, &lines[..=asked]);
    let allow = answered(&mut talk, "0", Decision::Allow, DecidedBy::App);
    assert_eq!(
        allow,
        [serde_json::json!({"jsonrpc": "2.0", "id": 0,
                                          "result": {"decision": "accept"}})]
    );
    let session = answered(&mut talk, "0", Decision::AllowForSession, DecidedBy::App);
    assert_eq!(session[0]["result"]["decision"], "acceptForSession");
    // A denial declines, and says why in a steer of the same turn.
    let deny = answered(&mut talk, "\"q1\"", Decision::Deny, DecidedBy::Timeout);
    assert_eq!(deny[0]["id"], "q1");
    assert_eq!(deny[0]["result"]["decision"], "decline");
    assert_eq!(deny[1]["method"], "turn/steer");
    assert_eq!(
        deny[1]["params"]["input"][0]["text"],
        "Denied: nobody answered the approval request in time."
    );
    // A turn being ended gets no message; a ref that is not an ID, nothing.
    let ending = answered(&mut talk, "0", Decision::Deny, DecidedBy::TurnGone);
    assert_eq!(ending.len(), 1);
    assert!(answered(&mut talk, "not json", Decision::Allow, DecidedBy::App).is_empty());
}

#[test]
fn a_file_change_approval_names_the_files_of_its_item() {
    let req = first_asked("file_change_approval");
    assert_eq!(req.tool, "fileChange");
    let input: Value = serde_json::from_str(&req.input).unwrap();
    assert_eq!(
        input["files"],
        serde_json::json!(["/nonexistent-room-proto/bd9665b1.txt"])
    );
}

#[test]
fn what_codex_must_not_wait_for_is_answered_and_odd_lines_mean_nothing() {
    let mut talk = prompted("p");
    let h = talk.hear(r#"{"id":"h1","method":"item/tool/requestUserInput","params":{}}"#);
    assert_eq!(h.heard, None);
    let answer = json(&h.writes[0]);
    assert_eq!(answer["id"], "h1");
    assert_eq!(answer["error"]["code"], -32601);
    let long = format!(
        r#"{{"id":"{}","method":"item/commandExecution/requestApproval","params":{{}}}}"#,
        "x".repeat(300)
    );
    let h = talk.hear(&long);
    assert_eq!(
        (h.heard, json(&h.writes[0])["result"]["decision"].clone()),
        (None, "decline".into())
    );
    assert_eq!(h.refused.unwrap().why, Why::IdTooLong);
    for quiet in [
        "not json",
        r#"{"id":99,"result":{"thread":{"id":"t"}}}"#,
        r#"{"id":"nobody-asked","result":{}}"#,
        r#"{"method":"turn/completed","params":{"turn":{"id":"other"}}}"#,
        r#"{"method":"item/completed","params":{"item":{"type":"agentMessage"}}}"#,
    ] {
        let h = talk.hear(quiet);
        assert_eq!(h, Hearing::default(), "{quiet}");
    }
}

#[test]
fn an_approval_room_core_cannot_take_is_declined_at_once_with_why_as_a_steer() {
    let mut talk = in_turn();
    // Not read whole: its start names it.
    let head =
        br#"{"id":7,"method":"item/commandExecution/requestApproval","params":{"command":"xxxx"#;
    let named = read_head(head).unwrap();
    let h = talk.unread(named, Unreadable::OverCap { cap: 1 << 20 }, 10 << 20);
    let (decline, steer) = (json(&h.writes[0]), json(&h.writes[1]));
    assert_eq!(decline["id"], 7);
    assert_eq!(decline["result"]["decision"], "decline");
    assert_eq!(steer["method"], "turn/steer");
    assert_eq!(steer["params"]["expectedTurnId"], "u");
    let refused = h.refused.unwrap();
    assert_eq!(
        steer["params"]["input"][0]["text"],
        serde_json::json!(refused.message)
    );
    assert_eq!(
        (refused.why.code(), refused.tool.as_deref(), refused.bytes),
        ("over_cap", Some("command"), 10 << 20)
    );
    // Its params not an object.
    let h = talk.hear(r#"{"id":8,"method":"item/fileChange/requestApproval","params":"x"}"#);
    assert_eq!(json(&h.writes[0])["result"]["decision"], "decline");
    assert_eq!(h.refused.unwrap().why, Why::ParamsNotObject);
    // Another request not read whole: an error.
    let named =
        read_head(br#"{"id":"m","method":"mcpServer/elicitation/request","params":{"#).unwrap();
    let h = talk.unread(named, Unreadable::NotUtf8, 9);
    assert_eq!(json(&h.writes[0])["error"]["code"], -32600);
    // An ID that cannot be echoed, or none (a notification): no answer.
    let h = talk.hear(r#"{"id":1.5,"method":"item/commandExecution/requestApproval","params":{}}"#);
    let refused = h.refused.unwrap();
    assert_eq!(
        (h.writes.len(), refused.why, refused.answered),
        (0, Why::NoId, false)
    );
    let named = read_head(br#"{"id":1.5,"method":"m","params":{"#).unwrap();
    let h = talk.unread(named, Unreadable::NotUtf8, 9);
    assert_eq!((h.writes.len(), h.refused.unwrap().answered), (0, false));
    assert_eq!(read_head(br#"{"method":"item/completed","params":{"#), None);
}

#[test]
fn a_codex_that_never_answers_cannot_grow_what_is_remembered() {
    let mut talk = in_turn();
    for n in 0..5000 {
        talk.say(Said::Steer {
            prompt: n,
            text: "x".into(),
        });
    }
    assert!(talk.requests.len() <= WAITING_MAX);
}

#[test]
fn a_failed_turn_is_heard_with_codexs_words() {
    let mut talk = in_turn();
    let failed = r#"{"method":"turn/completed","params":{"threadId":"t","turn":{"id":"u","status":"failed","error":{"message":"stream disconnected"}}}}"#;
    assert_eq!(
        talk.hear(failed).heard,
        Some(Heard::Finished {
            failed: Some("stream disconnected".into())
        })
    );
}

#[test]
fn a_warm_turn_that_switches_names_its_model_and_the_effort_stays_for_the_next() {
    let mut talk = CodexTalk::new(opening(None));
    talk.say(Said::prompt("hello".into()));
    let lines = from_cli("turn");
    let done = lines
        .iter()
        .position(|l| l.contains("turn/completed"))
        .unwrap();
    hear_all(&mut talk, &lines[..=done]);
    let next = talk.say(Said::Prompt {
        text: "again".into(),
        images: Vec::new(),
        switch: ModelChoice {
            model: Some("gpt-5.1-codex-mini".into()),
            effort: Some(Effort::High),
        },
    });
    let params = &json(&next[0])["params"];
    assert_eq!(params["model"], "gpt-5.1-codex-mini");
    assert_eq!(params["effort"], "high");
    // codex keeps the model; the effort is said with every turn.
    talk.hear(r#"{"id":4,"result":{"turn":{"id":"t2","items":[],"status":"inProgress"}}}"#);
    talk.hear(r#"{"method":"turn/completed","params":{"threadId":"x","turn":{"id":"t2","items":[],"status":"completed"}}}"#);
    let third = talk.say(Said::prompt("third".into()));
    let params = &json(&third[0])["params"];
    assert_eq!(params.get("model"), None);
    assert_eq!(params["effort"], "high");
}
