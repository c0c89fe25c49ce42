use room_machines::session::{DecidedBy, Decision, EndWhy, Usage, UsageReport, Usd};
use serde_json::{json, Value};

use super::*;
use crate::harness::acp::protocol::Incoming;
use crate::harness::speech::{Answer, Carries, Heard, Said};

fn talker(resume: Option<&str>) -> AcpTalk {
    AcpTalk::new(AcpOpening {
        cwd: "/w".into(),
        resume: resume.map(str::to_string),
        mcp_servers: None,
        fork: false,
    })
}

fn hear(t: &mut AcpTalk, line: &str) -> Hearing {
    match read(line) {
        Some(incoming) => t.heard(incoming, line.len() as u64),
        None => Hearing::default(),
    }
}

fn sent(outs: &[Out]) -> Vec<Value> {
    outs.iter()
        .map(|o| serde_json::from_str(&o.line).unwrap())
        .collect()
}

/// A talker whose session `s1` is open (the agent offers `init`), with
/// its first prompt sent as request 1.
fn open(init: Value, resume: Option<&str>) -> (AcpTalk, Vec<Value>) {
    let mut t = talker(resume);
    let first = sent(&t.say(Said::prompt("hi".into())));
    assert_eq!(first[0]["method"], "initialize");
    let h = hear(
        &mut t,
        &json!({"jsonrpc":"2.0","id":1,"result":init}).to_string(),
    );
    let opened = sent(&h.writes);
    let h = hear(
        &mut t,
        &json!({"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}).to_string(),
    );
    assert_eq!(h.named.as_deref(), Some("s1"));
    let mut all = opened;
    all.extend(sent(&h.writes));
    (t, all)
}

/// The turn claude-agent-acp 0.23.1 wrote against the fake model (a Write
/// it asked about, allowed), line by line: the talker opens the session,
/// sends the prompt once it is open, hears the question, answers it with
/// the option that allows once, and hears the turn end with its usage.
#[test]
fn a_recorded_turn_is_opened_asked_answered_and_ended_with_its_usage() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/protocols/acp/claude-agent-acp-turn.jsonl");
    let lines = std::fs::read_to_string(fixture).unwrap();
    let mut t = talker(None);
    let first = sent(&t.say(Said::prompt("TOOL_WRITE x".into())));
    assert_eq!(first.len(), 1);
    assert_eq!(first[0]["method"], "initialize");
    assert_eq!(first[0]["params"]["clientCapabilities"]["terminal"], false);
    assert_eq!(
        first[0]["params"]["clientCapabilities"]["fs"],
        json!({"readTextFile": false, "writeTextFile": false})
    );
    let (mut writes, mut asked, mut ends, mut costs, mut tokens) =
        (vec![], vec![], 0, vec![], vec![]);
    let mut named = None;
    for line in lines.lines() {
        let h = hear(&mut t, line);
        writes.extend(sent(&h.writes));
        named = h.named.or(named);
        match h.heard {
            Some(Heard::Asked(a)) => asked.push(a),
            Some(Heard::Finished { failed: None }) => ends += 1,
            Some(other) => panic!("{other:?}"),
            None => {}
        }
        match h.usage {
            Some(UsageReport::Turn(u)) if u.cost_usd.is_some() => costs.push(u),
            Some(UsageReport::Turn(u)) => tokens.push(u),
            other => assert_eq!(other, None),
        }
    }
    assert_eq!(
        named.as_deref(),
        Some("3568eaa8-132b-46de-a30b-b5c600e88997")
    );
    // The session opened, then the prompt went in it.
    assert_eq!(writes[0]["method"], "session/new");
    assert_eq!(writes[0]["params"], json!({"cwd": "/w", "mcpServers": []}));
    assert_eq!(writes[1]["method"], "session/prompt");
    assert_eq!(
        writes[1]["params"]["prompt"],
        json!([{"type": "text", "text": "TOOL_WRITE x"}])
    );
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].tool, "edit");
    assert_eq!(asked[0].harness_ref, "0");
    let input: Value = serde_json::from_str(&asked[0].input).unwrap();
    assert_eq!(input["title"], "Write hello.txt");
    assert_eq!(input["rawInput"]["content"], "hi there\n");
    let answer = sent(&t.say(Said::Answer(Answer {
        harness_ref: "0".into(),
        tool: "edit".into(),
        decision: Decision::Allow,
        by: DecidedBy::App,
        message: None,
    })));
    assert_eq!(
        answer[0],
        json!({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}})
    );
    // The recording holds two prompts' ends (the second a warm follow-up
    // the talker did not send): only the one it sent is heard.
    assert_eq!(ends, 1);
    assert_eq!(tokens[0], usage(20, 10, 6, 14));
    // Each cost report is what the session's cost grew by.
    assert_eq!(costs[0].cost_usd, Usd::reported(0.0003512));
    assert_eq!(costs[1].cost_usd, Usd::reported(0.0005268 - 0.0003512));
}

fn usage(i: u64, o: u64, r: u64, w: u64) -> Usage {
    Usage {
        input_tokens: i,
        output_tokens: o,
        cache_read_tokens: r,
        cache_write_tokens: w,
        cost_usd: None,
    }
}

#[test]
fn a_follow_up_goes_at_once_in_the_open_session_and_an_interrupt_cancels_it() {
    let (mut t, _) = open(json!({}), None);
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}"#,
    );
    assert_eq!(h.heard, Some(Heard::Finished { failed: None }));
    let next = sent(&t.say(Said::prompt("again".into())));
    assert_eq!(next.len(), 1);
    assert_eq!(next[0]["method"], "session/prompt");
    assert_eq!(next[0]["params"]["sessionId"], "s1");
    // Its first sign of progress says it has begun, in the session; once.
    let chunk = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk"}}}"#;
    assert_eq!(hear(&mut t, chunk).named.as_deref(), Some("s1"));
    assert_eq!(hear(&mut t, chunk).named, None);
    let cancel = sent(&t.say(Said::Interrupt));
    assert_eq!(
        cancel,
        vec![json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})]
    );
    // A permission request still waiting is answered `cancelled`, as ACP
    // asks of a client that cancels.
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":"p","method":"session/request_permission","params":{"toolCall":{"kind":"execute"},"options":[{"optionId":"no","kind":"reject_once"}]}}"#,
    );
    let Some(Heard::Asked(a)) = h.heard else {
        panic!("{h:?}")
    };
    let out = sent(&t.say(Said::Answer(Answer {
        harness_ref: a.harness_ref,
        tool: a.tool,
        decision: Decision::Deny,
        by: DecidedBy::TurnEnding(EndWhy::Interrupt),
        message: None,
    })));
    assert_eq!(out[0]["id"], "p");
    assert_eq!(out[0]["result"]["outcome"], json!({"outcome": "cancelled"}));
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":4,"result":{"stopReason":"cancelled"}}"#,
    );
    assert_eq!(h.heard, Some(Heard::Finished { failed: None }));
}

/// An agent that offers the steering extension (top-level
/// `_meta.steering.supported`) takes a steer as `_session/steering`; one
/// it says it did not inject (`promptRequired`, an error, anything else)
/// is handed back. One that offers none takes no steer.
#[test]
fn a_steer_goes_as_the_steering_extension_where_the_agent_offers_it() {
    let (t, _) = open(json!({}), None);
    assert!(!t.takes_steers());
    let steering = json!({"agentCapabilities": {}, "_meta": {"steering": {"supported": true}}});
    let mut t = talker(None);
    t.say(Said::prompt("hi".into()));
    hear(
        &mut t,
        &json!({"jsonrpc":"2.0","id":1,"result":steering}).to_string(),
    );
    hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}"#,
    );
    assert!(t.takes_steers());
    let steer = |t: &mut AcpTalk, prompt, text: &str| {
        let outs = t.say(Said::Steer {
            prompt,
            text: text.into(),
        });
        assert_eq!(
            outs[0].carries,
            Carries::Steer {
                prompt,
                text: text.into()
            }
        );
        sent(&outs).remove(0)
    };
    let line = steer(&mut t, 4, "use the other file");
    assert_eq!(
        line,
        json!({"jsonrpc": "2.0", "id": 4, "method": "_session/steering", "params": {
            "sessionId": "s1",
            "prompt": [{"type": "text", "text": "use the other file"}],
            "_meta": {"steering": {"idleBehavior": "promptRequired"}},
        }})
    );
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":4,"result":{"outcome":"injected"}}"#,
    );
    assert_eq!(h.heard, None);
    for answer in [
        r#"{"outcome":"promptRequired","reason":"noRunningTurn"}"#,
        r#"{}"#,
    ] {
        let line = steer(&mut t, 5, "late");
        let id = &line["id"];
        let h = hear(
            &mut t,
            &format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{answer}}}"#),
        );
        assert_eq!(
            h.heard,
            Some(Heard::SteerRefused {
                prompt: 5,
                text: "late".into()
            }),
            "{answer}"
        );
    }
    let line = steer(&mut t, 6, "refused");
    let h = hear(
        &mut t,
        &format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32601,"message":"Method not found"}}}}"#,
            line["id"]
        ),
    );
    assert_eq!(
        h.heard,
        Some(Heard::SteerRefused {
            prompt: 6,
            text: "refused".into()
        })
    );
}

#[test]
fn an_interrupt_before_the_session_is_open_cancels_the_prompt_once_it_goes() {
    let mut t = talker(None);
    t.say(Said::prompt("hi".into()));
    assert!(t.say(Said::Interrupt).is_empty());
    hear(&mut t, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s1"}}"#,
    );
    let out = sent(&h.writes);
    assert_eq!(out[0]["method"], "session/prompt");
    assert_eq!(out[1]["method"], "session/cancel");
}

#[test]
fn a_session_is_carried_on_the_way_the_agent_offers_else_begun_anew() {
    let method = |init: Value| {
        let (_, writes) = open(init, Some("old"));
        (writes[0]["method"].clone(), writes[0]["params"].clone())
    };
    let (m, p) = method(json!({"agentCapabilities": {"loadSession": true}}));
    assert_eq!(m, "session/load");
    assert_eq!(p["sessionId"], "old");
    let (m, _) = method(
        json!({"agentCapabilities": {"loadSession": true, "sessionCapabilities": {"resume": {}}}}),
    );
    assert_eq!(m, "session/resume");
    let (m, p) = method(json!({"agentCapabilities": {}}));
    assert_eq!(m, "session/new");
    assert_eq!(p.get("sessionId"), None);
}

#[test]
fn each_decision_is_answered_with_the_option_that_means_it() {
    let options = json!([
        {"optionId": "a1", "kind": "allow_once"},
        {"optionId": "aa", "kind": "allow_always"},
        {"optionId": "r1", "kind": "reject_once"},
    ]);
    for (decision, by, chosen) in [
        (
            Decision::Allow,
            DecidedBy::App,
            json!({"outcome": "selected", "optionId": "a1"}),
        ),
        (
            Decision::AllowForSession,
            DecidedBy::App,
            json!({"outcome": "selected", "optionId": "aa"}),
        ),
        (
            Decision::Deny,
            DecidedBy::Timeout,
            json!({"outcome": "selected", "optionId": "r1"}),
        ),
    ] {
        let (mut t, _) = open(json!({}), None);
        let ask = json!({"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"toolCall":{},"options":options}});
        let h = hear(&mut t, &ask.to_string());
        let Some(Heard::Asked(a)) = h.heard else {
            panic!("{h:?}")
        };
        assert_eq!(a.tool, "other");
        let out = sent(&t.say(Said::Answer(Answer {
            harness_ref: a.harness_ref,
            tool: a.tool,
            decision,
            by,
            message: None,
        })));
        assert_eq!(out[0]["result"]["outcome"], chosen, "{decision:?}");
    }
    // No option that allows once: an allow is not widened to always.
    let (mut t, _) = open(json!({}), None);
    let ask = json!({"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"options":[{"optionId":"aa","kind":"allow_always"}]}});
    hear(&mut t, &ask.to_string());
    let out = sent(&t.say(Said::Answer(Answer {
        harness_ref: "9".into(),
        tool: "other".into(),
        decision: Decision::Allow,
        by: DecidedBy::App,
        message: None,
    })));
    assert_eq!(out[0]["result"]["outcome"], json!({"outcome": "cancelled"}));
}

#[test]
fn what_room_core_does_not_serve_is_answered_at_once() {
    let (mut t, _) = open(json!({}), None);
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":4,"method":"fs/read_text_file","params":{"path":"/etc/shadow"}}"#,
    );
    let out = sent(&h.writes);
    assert_eq!(out[0]["id"], 4);
    assert_eq!(out[0]["error"]["code"], -32601);
    assert!(h.refused.is_some());
    // A permission request whose params are no object: cancelled at once.
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":[1]}"#,
    );
    let out = sent(&h.writes);
    assert_eq!(out[0]["result"]["outcome"], json!({"outcome": "cancelled"}));
    assert_eq!(h.heard, None);
    // More permission requests waiting than the talker holds: the rest are
    // cancelled at once.
    for n in 0..ASKING_MAX + 3 {
        let ask = json!({"jsonrpc":"2.0","id":100 + n,"method":"session/request_permission","params":{"options":[]}});
        let h = hear(&mut t, &ask.to_string());
        assert_eq!(h.heard.is_some(), n < ASKING_MAX, "{n}");
    }
    // An answer to nothing, and a line of chatter, mean nothing.
    assert_eq!(
        hear(&mut t, r#"{"jsonrpc":"2.0","id":77,"result":{}}"#),
        Hearing::default()
    );
    assert!(matches!(
        read(
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk"}}}"#
        ),
        Some(Incoming::Progress)
    ));
}

/// The session's MCP servers, in ACP's shape: a stdio one and an HTTP one.
fn two_servers() -> Value {
    json!([
        {"name": "probe", "command": "python3", "args": ["p.py"], "env": [{"name": "K", "value": "v"}]},
        {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": []},
    ])
}

#[test]
fn the_sessions_mcp_servers_go_in_the_request_that_opens_it() {
    for (resume, offers, method) in [
        (None, json!({}), "session/new"),
        (Some("s0"), json!({"loadSession": true}), "session/load"),
        (
            Some("s0"),
            json!({"sessionCapabilities": {"resume": {}}}),
            "session/resume",
        ),
    ] {
        let mut t = AcpTalk::new(AcpOpening {
            cwd: "/w".into(),
            resume: resume.map(str::to_string),
            mcp_servers: Some(two_servers()),
            fork: false,
        });
        t.say(Said::prompt("hi".into()));
        let mut init = offers;
        init["mcpCapabilities"] = json!({"http": true});
        let h = hear(
            &mut t,
            &json!({"jsonrpc":"2.0","id":1,"result":{"agentCapabilities": init}}).to_string(),
        );
        let opened = sent(&h.writes);
        assert_eq!(opened[0]["method"], method);
        assert_eq!(opened[0]["params"]["mcpServers"], two_servers(), "{method}");
    }
}

#[test]
fn an_http_mcp_server_for_an_agent_that_takes_none_refuses_the_turn_before_the_session() {
    let mut t = AcpTalk::new(AcpOpening {
        cwd: "/w".into(),
        resume: None,
        mcp_servers: Some(two_servers()),
        fork: false,
    });
    t.say(Said::prompt("hi".into()));
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":1,"result":{"agentCapabilities":{"mcpCapabilities":{"http":false}}}}"#,
    );
    assert!(h.writes.is_empty(), "{:?}", h.writes);
    assert_eq!(
        h.heard,
        Some(Heard::PromptRefused(
            "the agent takes no HTTP MCP servers (its initialize said no mcpCapabilities.http), and the session gives it web".into()
        ))
    );
}

/// A fork's first process forks the parent's session into a new one
/// (`session/fork`), where the agent offers it; where it does not, the
/// turn is refused before any session opens.
#[test]
fn a_forks_first_process_forks_the_session_where_the_agent_can() {
    let forking = || {
        let mut t = AcpTalk::new(AcpOpening {
            cwd: "/w".into(),
            resume: Some("p1".into()),
            mcp_servers: None,
            fork: true,
        });
        t.say(Said::prompt("hi".into()));
        t
    };
    let mut t = forking();
    let init = json!({"agentCapabilities": {"loadSession": true, "sessionCapabilities": {"fork": {}, "resume": {}}}});
    let h = hear(
        &mut t,
        &json!({"jsonrpc":"2.0","id":1,"result":init}).to_string(),
    );
    assert_eq!(
        sent(&h.writes),
        vec![json!({"jsonrpc": "2.0", "id": 2, "method": "session/fork",
                    "params": {"sessionId": "p1", "cwd": "/w", "mcpServers": []}})]
    );
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":2,"result":{"sessionId":"f1"}}"#,
    );
    assert_eq!(h.named.as_deref(), Some("f1"));
    assert_eq!(sent(&h.writes)[0]["params"]["sessionId"], "f1");

    let mut t = forking();
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":1,"result":{"agentCapabilities":{"loadSession":true}}}"#,
    );
    assert!(h.writes.is_empty());
    assert_eq!(
        h.heard,
        Some(Heard::PromptRefused(
            "the agent cannot fork a session (its initialize offered no sessionCapabilities.fork)"
                .into()
        ))
    );
}

#[test]
fn a_refused_session_or_prompt_is_heard_as_such() {
    let mut t = talker(None);
    t.say(Said::prompt("hi".into()));
    hear(&mut t, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error"}}"#,
    );
    assert_eq!(
        h.heard,
        Some(Heard::PromptRefused(
            "the agent refused the session: Internal error".into()
        ))
    );
    let (mut t, _) = open(json!({}), None);
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"model down"}}"#,
    );
    assert_eq!(
        h.heard,
        Some(Heard::Finished {
            failed: Some("model down".into())
        })
    );
    let (mut t, _) = open(json!({}), None);
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"refusal"}}"#,
    );
    assert!(matches!(h.heard, Some(Heard::Finished { failed: Some(_) })));
}

#[test]
fn a_turns_thought_tokens_are_output_as_room_core_counts_them() {
    let (mut t, _) = open(json!({}), None);
    let h = hear(
        &mut t,
        r#"{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn","usage":{"inputTokens":0,"outputTokens":3,"thoughtTokens":2,"cachedReadTokens":3,"cachedWriteTokens":7,"totalTokens":15}}}"#,
    );
    assert_eq!(h.usage, Some(UsageReport::Turn(usage(0, 5, 3, 7))));
}
