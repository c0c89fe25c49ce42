//! The journal's last started turn, followed line by line as the scan and
//! appends index them: what a restore completes a record with
//! ([`TurnTail`], room_machines::session::tail).

use room_machines::session::TurnTail;
use serde::Deserialize;

use super::event::{Journalled, Line};

/// Kinds that say the harness printed something: its own lines, and the
/// reports of lines that could not be journalled as they were.
const PRINTED: [&str; 4] = [
    "harness",
    "harness_line_rejected",
    "output_dropped",
    "request_refused",
];

/// What `turn_started` and `turn_ended` say of their turn.
#[derive(Deserialize)]
struct TurnData {
    turn: u64,
    #[serde(default)]
    prompt: u64,
}

/// The turn a line of kind `turn_started` or `turn_ended` is about.
fn turn_of(line: &Line) -> Option<TurnData> {
    let event: Journalled = serde_json::from_str(&line.json).ok()?;
    serde_json::from_str(event.data.get()).ok()
}

/// Moves `tail` past `line`: a started turn becomes the tail, its end
/// clears it, and anything printed after its start marks it.
pub(super) fn follow(tail: &mut Option<TurnTail>, line: &Line) {
    match line.kind.as_str() {
        "turn_started" => {
            *tail = turn_of(line).map(|d| TurnTail {
                turn: d.turn,
                prompt: d.prompt,
                printed: false,
            });
        }
        "turn_ended" if turn_of(line).is_some_and(|d| tail.is_some_and(|t| t.turn == d.turn)) => {
            *tail = None;
        }
        kind if PRINTED.contains(&kind) => {
            if let Some(t) = tail.as_mut() {
                t.printed = true;
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seq: u64, kind: &str, data: &str) -> Line {
        let json = format!(r#"{{"seq":{seq},"at_ms":0,"kind":"{kind}","data":{data}}}"#);
        Line::parse(json.as_bytes()).expect("an event")
    }

    fn followed(lines: &[Line]) -> Option<TurnTail> {
        let mut tail = None;
        for l in lines {
            follow(&mut tail, l);
        }
        tail
    }

    #[test]
    fn the_last_started_turn_is_the_tail_until_it_ends() {
        let started = line(1, "turn_started", r#"{"turn":3,"prompt":5,"resume":"n"}"#);
        let want = |printed| {
            Some(TurnTail {
                turn: 3,
                prompt: 5,
                printed,
            })
        };
        assert_eq!(followed(std::slice::from_ref(&started)), want(false));
        let state = line(2, "state", r#"{"state":"running"}"#);
        assert_eq!(followed(&[started.clone(), state]), want(false));
        for kind in PRINTED {
            let printed = line(2, kind, "{}");
            assert_eq!(followed(&[started.clone(), printed]), want(true), "{kind}");
        }
        let other_end = line(3, "turn_ended", r#"{"turn":2,"prompt":4}"#);
        assert_eq!(followed(&[started.clone(), other_end]), want(false));
        let end = line(3, "turn_ended", r#"{"turn":3,"prompt":5}"#);
        assert_eq!(followed(&[started.clone(), end]), None);
        // Printed before the turn started says nothing of it.
        let before = line(0, "harness", "{}");
        assert_eq!(followed(&[before, started]), want(false));
    }

    #[test]
    fn a_turn_start_that_says_no_turn_leaves_no_tail() {
        let odd = line(1, "turn_started", r#"{"turn":"three"}"#);
        let mut tail = Some(TurnTail {
            turn: 1,
            prompt: 1,
            printed: true,
        });
        follow(&mut tail, &odd);
        assert_eq!(tail, None);
    }
}
