//! The phase's record shape: today's JSON of each turn shape reads as its
//! phase and writes back byte for byte.

use super::phase::*;
use super::record::{EndWhy, Process, Record};

/// Turns as the record wrote them before the phase existed, one of each
/// shape the machine writes, with the phase each reads as.
const TODAY: [(&str, &str); 8] = [
    (
        "asked",
        r#"{"seq":2,"prompt":{"id":3,"text":"fix the \"tests\""},"launch":true,"process":null,"delivered":false,"reported":false,"ending":null}"#,
    ),
    (
        "asked",
        r#"{"seq":2,"prompt":{"id":3,"text":"fix the \"tests\""},"launch":false,"process":null,"delivered":false,"reported":false,"ending":"stop"}"#,
    ),
    (
        "spawned",
        r#"{"seq":2,"prompt":{"id":3,"text":"fix the \"tests\""},"launch":false,"process":{"pid":41,"pgid":41,"start_time":7},"delivered":false,"reported":false,"ending":"close"}"#,
    ),
    (
        "prompted",
        r#"{"seq":2,"prompt":{"id":3,"text":"fix the \"tests\""},"launch":false,"process":{"pid":41,"pgid":41,"start_time":7},"delivered":true,"reported":false,"ending":null}"#,
    ),
    (
        "prompted",
        r#"{"seq":2,"prompt":{"id":3,"text":"fix the \"tests\""},"launch":false,"process":{"pid":41,"pgid":41,"start_time":7},"delivered":true,"reported":true,"ending":null,"usage":{"input_tokens":10,"output_tokens":2,"cache_read_tokens":0,"cache_write_tokens":1,"cost_usd":0.25},"failed":"the model is gone"}"#,
    ),
    (
        "prompted",
        r#"{"seq":2,"prompt":{"id":3,"text":"fix the \"tests\""},"launch":false,"process":{"pid":41,"pgid":41,"start_time":7},"delivered":true,"reported":true,"ending":"interrupt","usage":{"input_tokens":10,"output_tokens":2,"cache_read_tokens":0,"cache_write_tokens":1,"cost_usd":0.25}}"#,
    ),
    (
        "lingering",
        r#"{"seq":2,"prompt":{"id":3,"text":"fix the \"tests\""},"launch":false,"process":{"pid":41,"pgid":41,"start_time":7},"delivered":true,"reported":true,"ending":null,"finished":true}"#,
    ),
    (
        "lingering",
        r#"{"seq":2,"prompt":{"id":3,"text":"fix the \"tests\""},"launch":false,"process":{"pid":41,"pgid":41,"start_time":7},"delivered":true,"reported":true,"ending":"stop","finished":true}"#,
    ),
];

fn phase_name(t: &Turn) -> &'static str {
    match t.phase {
        Phase::Asked => "asked",
        Phase::Spawned(_) => "spawned",
        Phase::Prompted(_) => "prompted",
        Phase::Lingering { .. } => "lingering",
    }
}

#[test]
fn todays_turns_read_as_their_phase_and_write_back_byte_for_byte() {
    for (phase, json) in TODAY {
        let turn: Turn = serde_json::from_str(json).unwrap();
        assert_eq!(phase_name(&turn), phase, "{json}");
        assert_eq!(serde_json::to_string(&turn).unwrap(), json);
    }
}

#[test]
fn a_read_turn_says_what_its_flat_fields_said() {
    let turn: Turn = serde_json::from_str(TODAY[4].1).unwrap();
    let process = Process {
        pid: 41,
        pgid: 41,
        start_time: 7,
    };
    assert_eq!(turn.process(), Some(process));
    assert!(turn.delivered() && turn.reported() && !turn.finished());
    assert_eq!(turn.failed(), Some("the model is gone"));
    assert_eq!(turn.usage().map(|u| u.input_tokens), Some(10));
    let lingering: Turn = serde_json::from_str(TODAY[7].1).unwrap();
    assert_eq!(lingering.ending, Some(EndWhy::Stop));
    assert!(lingering.finished() && lingering.reported() && lingering.usage().is_none());
}

#[test]
fn a_record_with_a_turn_writes_back_byte_for_byte() {
    let json = r#"{"stage":"started","native_id":"n1","queue":[],"paused":false,"turn":{"seq":2,"prompt":{"id":3,"text":"fix the \"tests\""},"launch":false,"process":{"pid":41,"pgid":41,"start_time":7},"delivered":true,"reported":true,"ending":null,"usage":{"input_tokens":10,"output_tokens":2,"cache_read_tokens":0,"cache_write_tokens":1,"cost_usd":0.25}},"error":null,"next_prompt":1,"next_turn":1,"next_approval":1}"#;
    let record: Record = serde_json::from_str(json).unwrap();
    assert_eq!(serde_json::to_string(&record).unwrap(), json);
}

#[test]
fn an_old_record_without_the_newer_fields_loads() {
    // As the first machine wrote it: no launch, usage, finished or
    // failed on its turn, nor the record's later fields.
    let json = r#"{"stage":"started","native_id":"n1","queue":[{"id":2,"text":"next"}],"paused":false,"turn":{"seq":1,"prompt":{"id":1,"text":"p"},"process":{"pid":4,"pgid":4,"start_time":9},"delivered":true,"reported":true,"ending":null},"error":null,"next_prompt":3,"next_turn":2}"#;
    let record: Record = serde_json::from_str(json).unwrap();
    let turn = record.turn.as_ref().unwrap();
    assert!(!turn.launch);
    assert_eq!(phase_name(turn), "prompted");
    assert!(turn.reported() && turn.usage().is_none() && turn.failed().is_none());
    assert_eq!(record.next_approval, 1);
    // Only its number and prompt: asked for, nothing more.
    let bare: Turn = serde_json::from_str(r#"{"seq":1,"prompt":{"id":1,"text":"p"}}"#).unwrap();
    assert_eq!(bare, Turn::asked(1, bare.prompt.clone(), false));
    // A process without the flags: spawned, its prompt never handed over.
    let spawned: Turn = serde_json::from_str(
        r#"{"seq":1,"prompt":{"id":1,"text":"p"},"process":{"pid":4,"pgid":4,"start_time":9}}"#,
    )
    .unwrap();
    assert_eq!(phase_name(&spawned), "spawned");
    assert!(!spawned.reported() && spawned.ending.is_none());
}
