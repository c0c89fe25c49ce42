use room_machines::session::DecidedBy;
use serde_json::{json, Value};

use super::*;
use crate::harness::speech::{Answer, INPUT_MAX};

/// What `line` means to `talk`.
fn hear(talk: &mut ClaudeTalk, line: &str) -> Hearing {
    read(line).map_or_else(Hearing::default, |i| talk.heard(i, line.len() as u64))
}

fn ask(id: &str, input: &str) -> String {
    format!(
        r#"{{"type":"control_request","request_id":"{id}","request":{{"subtype":"can_use_tool","tool_name":"Write","input":{input}}}}}"#
    )
}

fn json(out: &Out) -> Value {
    serde_json::from_str(&out.line).unwrap()
}

#[test]
fn requests_results_and_inits_are_heard_and_the_rest_is_not_parsed() {
    let talk = &mut ClaudeTalk::default();
    let ask = r#"{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"touch x"},"decision_reason":"Path is outside allowed working directories"}}"#;
    assert_eq!(
        hear(talk, ask).heard,
        Some(Heard::Asked(ApprovalRequest {
            harness_ref: "r1".into(),
            tool: "Bash".into(),
            input: r#"{"command":"touch x"}"#.into(),
            reason: Some("Path is outside allowed working directories".into()),
        }))
    );
    let result = r#"{"type":"result","subtype":"success","is_error":false}"#;
    assert_eq!(
        hear(talk, result).heard,
        Some(Heard::Finished { failed: None })
    );
    let failed = r#"{"type":"result","subtype":"error_during_execution","is_error":true,"result":"API Error: 500"}"#;
    let why = Some("API Error: 500".to_string());
    assert_eq!(
        hear(talk, failed).heard,
        Some(Heard::Finished { failed: why })
    );
    let init = r#"{"type":"system","subtype":"init","session_id":"s1"}"#;
    assert_eq!(hear(talk, init).named.as_deref(), Some("s1"));
    let hook =
        r#"{"type":"control_request","request_id":"h1","request":{"subtype":"hook_callback"}}"#;
    let h = hear(talk, hook);
    assert_eq!(h.heard, None);
    let v = json(&h.writes[0]);
    assert_eq!(v["response"]["request_id"], "h1");
    assert_eq!(v["response"]["subtype"], "error");
    assert_eq!(
        v["response"]["error"],
        "room-core does not serve hook_callback requests"
    );
    let refused = h.refused.unwrap();
    assert_eq!((refused.why, refused.answered), (Why::NotServed, true));
    for quiet in [
        r#"{"type":"assistant","message":{"content":"the word \"result\" in text"}}"#,
        "not json \"result\"",
    ] {
        assert_eq!(hear(talk, quiet), Hearing::default(), "{quiet}");
    }
    // A request of no known kind is answered, not heard.
    let odd = hear(talk, r#"{"type":"control_request","request_id":"r1"}"#);
    assert_eq!((odd.heard, odd.writes.len()), (None, 1));
}

fn answer(talk: &mut ClaudeTalk, decision: Decision, message: Option<&str>) -> Value {
    let said = Said::Answer(Answer {
        harness_ref: "r1".into(),
        tool: "Write".into(),
        decision,
        by: DecidedBy::App,
        message: message.map(str::to_string),
    });
    json(&talk.say(said).remove(0))
}

#[test]
fn an_allow_sends_back_exactly_the_input_claude_asked_about() {
    // As printed: spaces, key order, escapes, digits kept.
    let input = r#"{"z": 1.50, "a":"\u00e9\n", "n": [1e2, {}]}"#;
    for (decision, rule) in [(Decision::Allow, false), (Decision::AllowForSession, true)] {
        let talk = &mut ClaudeTalk::default();
        assert!(hear(talk, &ask("r1", input)).heard.is_some());
        let said = talk.say(Said::Answer(Answer {
            harness_ref: "r1".into(),
            tool: "Write".into(),
            decision,
            by: DecidedBy::App,
            message: None,
        }));
        let line = &said[0].line;
        assert!(
            line.contains(&format!(r#""behavior":"allow","updatedInput":{input}"#)),
            "{line}"
        );
        assert_eq!(line.contains("updatedPermissions"), rule, "{line}");
        // Answered: nothing is held for it any more, and a second
        // allow is an error, never an allow of something else.
        assert_eq!((talk.waiting.len(), talk.bytes), (0, 0));
        let v = answer(talk, Decision::Allow, None);
        assert_eq!(v["response"]["subtype"], "error", "{v}");
    }
}

#[test]
fn an_input_the_app_sees_cut_is_allowed_whole() {
    let talk = &mut ClaudeTalk::default();
    let input = json!({"file_path": "/w/big", "content": "x".repeat(INPUT_MAX * 2)}).to_string();
    let Some(Heard::Asked(req)) = hear(talk, &ask("r1", &input)).heard else {
        panic!("heard")
    };
    assert!(req.input.len() <= INPUT_MAX);
    let v = answer(talk, Decision::Allow, None);
    assert_eq!(v["response"]["response"]["updatedInput"].to_string(), input);
}

#[test]
fn a_denial_without_a_message_says_why() {
    let talk = &mut ClaudeTalk::default();
    let said = talk.say(Said::Answer(Answer {
        harness_ref: "r1".into(),
        tool: "Bash".into(),
        decision: Decision::Deny,
        by: DecidedBy::Timeout,
        message: None,
    }));
    assert_eq!(
        json(&said[0])["response"]["response"],
        json!({"behavior": "deny",
            "message": "Denied: nobody answered the approval request in time."})
    );
    assert_eq!(
        answer(talk, Decision::Deny, Some("use make"))["response"]["response"]["message"],
        "use make"
    );
}

/// The denial `h` wrote for request `id`, and its refusal's reason.
fn denied(h: &Hearing, id: &str) -> (String, &'static str) {
    assert_eq!(h.heard, None);
    let v = json(&h.writes[0]);
    assert_eq!(v["response"]["request_id"], id, "{v}");
    assert_eq!(v["response"]["response"]["behavior"], "deny", "{v}");
    let refused = h.refused.as_ref().unwrap();
    assert!(refused.answered);
    let message = v["response"]["response"]["message"].as_str().unwrap();
    assert_eq!(message, refused.message);
    (message.to_string(), refused.why.code())
}

#[test]
fn what_is_held_is_bounded_and_past_it_a_request_is_denied_at_once() {
    let talk = &mut ClaudeTalk::default();
    for i in 0..MAX_PENDING {
        assert!(hear(talk, &ask(&format!("q{i}"), "{}")).heard.is_some());
    }
    let h = hear(talk, &ask("q64", "{}"));
    assert_eq!(
        denied(&h, "q64"),
        (
            "Denied: too many approval requests are waiting in this session.".into(),
            "too_many_waiting"
        )
    );
    // The turn's end lets go of all of them.
    hear(talk, r#"{"type":"result","subtype":"success"}"#);
    assert_eq!((talk.waiting.len(), talk.bytes), (0, 0));
    // 8 MiB of inputs: the ninth of 1000 KiB does not fit.
    let big = json!({"content": "x".repeat(1000 << 10)}).to_string();
    for i in 0..8 {
        assert!(hear(talk, &ask(&format!("b{i}"), &big)).heard.is_some());
    }
    let h = hear(talk, &ask("b8", &big));
    assert_eq!(denied(&h, "b8").1, "inputs_over_budget");
    // An answer frees its room; claude's cancel too.
    answer(talk, Decision::Deny, None);
    hear(
        talk,
        r#"{"type":"control_cancel_request","request_id":"b0"}"#,
    );
    assert_eq!(talk.waiting.len(), 7);
    assert_eq!(talk.bytes, 7 * big.len());
    assert!(hear(talk, &ask("b9", &big)).heard.is_some());
}

#[test]
fn a_request_room_core_cannot_take_is_denied_at_once_saying_why() {
    let talk = &mut ClaudeTalk::default();
    let no_tool = r#"{"type":"control_request","request_id":"t","request":{"subtype":"can_use_tool","input":{}}}"#;
    assert_eq!(
        denied(&hear(talk, no_tool), "t"),
        ("Denied: the request names no tool.".into(), "no_tool")
    );
    let not_object = r#"{"type":"control_request","request_id":"o","request":{"subtype":"can_use_tool","tool_name":"Bash","input":"ls"}}"#;
    assert_eq!(denied(&hear(talk, not_object), "o").1, "input_not_object");
    let long_id = "i".repeat(REF_MAX + 1);
    let h = hear(talk, &ask(&long_id, "{}"));
    assert_eq!(denied(&h, &long_id).1, "id_too_long");
    // No ID: nothing can be answered; the app is told.
    let h = hear(
        talk,
        r#"{"type":"control_request","request":{"subtype":"can_use_tool","tool_name":"Write"}}"#,
    );
    assert_eq!(h.writes, vec![]);
    let refused = h.refused.unwrap();
    assert_eq!(
        (refused.why, refused.answered, refused.tool.as_deref()),
        (Why::NoId, false, Some("Write"))
    );
    assert_eq!(talk.waiting.len(), 0);
}

#[test]
fn a_request_not_read_whole_is_answered_from_its_start() {
    let talk = &mut ClaudeTalk::default();
    let head = br#"{"type":"control_request","request_id":"big","request":{"subtype":"can_use_tool","tool_name":"Write","input":{"content":"xxx"#;
    let over = Unreadable::OverCap { cap: 1 << 20 };
    let h = talk.unread(read_head(head).unwrap(), over, 10 << 20);
    let (message, code) = denied(&h, "big");
    assert_eq!(code, "over_cap");
    assert_eq!(
        message,
        "Denied: room-core cannot read this request: its line is 10485760 bytes, over \
         the 1048576 bytes a line of a harness's output may take."
    );
    assert_eq!(h.refused.unwrap().tool.as_deref(), Some("Write"));
    // Another kind: an error. No ID, or cut inside it: not answered.
    let head = br#"{"type":"control_request","request_id":"h","request":{"subtype":"mcp_message","#;
    let h = talk.unread(read_head(head).unwrap(), Unreadable::NotUtf8, 5);
    assert_eq!(json(&h.writes[0])["response"]["subtype"], "error");
    for head in [
        &br#"{"type":"control_request","request":{"#[..],
        br#"{"type":"control_request","request_id":"cut-her"#,
    ] {
        let h = talk.unread(read_head(head).unwrap(), Unreadable::NotUtf8, 5);
        assert_eq!(
            (h.writes.len(), h.refused.map(|r| r.answered)),
            (0, Some(false))
        );
    }
    // Not a request: nothing to refuse.
    assert_eq!(read_head(br#"{"type":"user","message":{"#), None);
    assert_eq!(read_head(b"xxxxxxxx"), None);
}

fn switching(model: &str, text: &str) -> Said {
    Said::Prompt {
        text: text.into(),
        images: Vec::new(),
        switch: ModelChoice {
            model: Some(model.into()),
            effort: None,
        },
    }
}

fn claude_answered(id: &str, error: Option<&str>) -> String {
    match error {
        None => format!(
            r#"{{"type":"control_response","response":{{"subtype":"success","request_id":"{id}","response":{{"model":"opus"}}}}}}"#
        ),
        Some(e) => format!(
            r#"{{"type":"control_response","response":{{"subtype":"error","request_id":"{id}","error":"{e}"}}}}"#
        ),
    }
}

#[test]
fn a_prompt_that_switches_the_model_goes_once_claude_has_switched() {
    let talk = &mut ClaudeTalk::default();
    let said = talk.say(switching("opus", "next"));
    assert_eq!(said.len(), 1, "only the switch goes first: {said:?}");
    assert_eq!(said[0].carries, Carries::Prompt);
    let v = json(&said[0]);
    assert_eq!(v["type"], "control_request");
    assert_eq!(
        v["request"],
        json!({"subtype": "set_model", "model": "opus"})
    );
    let id = v["request_id"].as_str().unwrap().to_string();
    // Another request's answer changes nothing.
    assert!(hear(talk, &claude_answered("room-core-interrupt", None))
        .writes
        .is_empty());
    let h = hear(talk, &claude_answered(&id, None));
    assert_eq!(h.writes.len(), 1);
    assert_eq!(h.writes[0].carries, Carries::Prompt);
    assert_eq!(
        json(&h.writes[0]),
        json!({"type": "user", "message": {"role": "user", "content": "next"}})
    );
    // Answered once: a second answer sends nothing.
    assert!(hear(talk, &claude_answered(&id, None)).writes.is_empty());
}

#[test]
fn a_refused_switch_refuses_the_prompt_and_an_interrupt_withdraws_it() {
    let talk = &mut ClaudeTalk::default();
    let said = talk.say(switching("nope", "next"));
    let id = json(&said[0])["request_id"].as_str().unwrap().to_string();
    let h = hear(talk, &claude_answered(&id, Some("Invalid model")));
    assert!(h.writes.is_empty());
    assert_eq!(
        h.heard,
        Some(Heard::PromptRefused(
            "claude did not switch to the model \"nope\": Invalid model".into()
        ))
    );

    let said = talk.say(switching("opus", "next"));
    let id = json(&said[0])["request_id"].as_str().unwrap().to_string();
    talk.say(Said::Interrupt);
    let h = hear(talk, &claude_answered(&id, None));
    assert!(h.writes.is_empty(), "{h:?}");
    assert_eq!(h.heard, None);
}

#[test]
fn a_prompt_that_switches_nothing_goes_at_once() {
    let talk = &mut ClaudeTalk::default();
    let said = talk.say(Said::prompt("hi".into()));
    assert_eq!(json(&said[0])["type"], "user");
}
