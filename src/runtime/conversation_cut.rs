//! Where a rewind or a fork cuts a harness's conversation, read from the
//! session's journal (the harness's own lines): claude's after the last
//! message it wrote in the turn (its `uuid`, for `--resume-session-at`);
//! codex's, for a rewind, before the first turn of its own that began
//! after the turn (its id, for `thread/revert`), and for a fork through
//! the last turn of its own in the turn (`thread/fork`'s `lastTurnId`);
//! an ACP agent's, only for a fork after its latest turn (`session/fork`
//! copies a whole session).
//! Only within the native session the harness runs now (a turn of an
//! earlier one, before a relaunch, cannot be cut to), and not to a turn
//! an earlier rewind cut out of the conversation (claude resumes the
//! branch it went on with; codex's thread keeps no copy).

use room_machines::session::TurnSeq;
use serde_json::Value;

use crate::harness::Harness;
use crate::journal::Journal;

/// How many journal lines are read at a time.
const PAGE: usize = 1000;

/// What the journal says about cutting the conversation after a turn.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Mark {
    /// Cut there (the harness's mark).
    At(String),
    /// The harness's conversation holds nothing after the turn.
    Nothing,
}

/// Where session `journal`'s conversation (run by `harness`, its native
/// session `native` now) is cut after turn `turn`, for a rewind or (with
/// `fork`) a fork; a sentence when it cannot be.
pub(super) fn mark(
    journal: &Journal,
    harness: Harness,
    native: Option<&str>,
    turn: TurnSeq,
    fork: bool,
) -> Result<Mark, String> {
    let mut scan = Scan::new(harness, turn, fork);
    let mut after = 0;
    loop {
        let lines = journal
            .lines(after, PAGE)
            .map_err(|e| format!("its journal cannot be read: {e}"))?;
        let Some(last) = lines.last() else { break };
        after = last.seq;
        for line in &lines {
            let Ok(event) = serde_json::from_str::<Value>(&line.json) else {
                continue;
            };
            scan.feed(&line.kind, &event["data"]);
        }
    }
    scan.finish(native)
}

/// The journal read so far.
struct Scan {
    harness: Harness,
    turn: TurnSeq,
    /// A fork's cut (codex's mark is then its last turn in `turn`).
    fork: bool,
    /// codex: its last turn begun in turn `turn`.
    last_turn: Option<String>,
    /// The turn whose lines these are.
    current: Option<TurnSeq>,
    /// The native session turn `turn` ran in.
    session: Option<String>,
    /// claude: the uuid of the last message it wrote in turn `turn`.
    last_message: Option<String>,
    /// codex: its first turn begun after turn `turn`.
    next_turn: Option<String>,
    /// The turn a later rewind cut the conversation back to, below `turn`.
    cut_away: Option<TurnSeq>,
    /// A turn began after turn `turn`.
    later: bool,
}

impl Scan {
    /// Nothing read yet.
    fn new(harness: Harness, turn: TurnSeq, fork: bool) -> Scan {
        Scan {
            harness,
            turn,
            fork,
            last_turn: None,
            current: None,
            session: None,
            last_message: None,
            next_turn: None,
            cut_away: None,
            later: false,
        }
    }

    /// Takes one event.
    fn feed(&mut self, kind: &str, data: &Value) {
        match kind {
            "turn_started" => {
                self.current = data["turn"].as_u64();
                self.later |= self.current.is_some_and(|t| t > self.turn);
                if self.current == Some(self.turn) {
                    self.session = data["resume"].as_str().map(str::to_string);
                }
            }
            "native_id" if self.current == Some(self.turn) => {
                self.session = data["native_id"].as_str().map(str::to_string);
            }
            "rewound" if data["conversation"] == "cut" => match data["to_turn"].as_u64() {
                // What followed turn `to` is gone: below `turn`, the
                // turn itself; at it, what a later cut would start from.
                Some(to) if to < self.turn => self.cut_away = Some(to),
                Some(to) if to == self.turn => self.next_turn = None,
                _ => {}
            },
            "harness" => match (self.harness, self.current) {
                (Harness::Claude, Some(t)) if t == self.turn && data["type"] == "assistant" => {
                    if let Some(uuid) = data["uuid"].as_str() {
                        self.last_message = Some(uuid.to_string());
                    }
                }
                (Harness::Codex, Some(t)) if t >= self.turn => {
                    let id = data["params"]["turn"]["id"].as_str();
                    if let Some(id) = id.filter(|_| data["method"] == "turn/started") {
                        if t == self.turn {
                            self.last_turn = Some(id.to_string());
                        } else if self.next_turn.is_none() {
                            self.next_turn = Some(id.to_string());
                        }
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }

    fn finish(self, native: Option<&str>) -> Result<Mark, String> {
        if let Some(to) = self.cut_away {
            return Err(format!(
                "an earlier rewind, to turn {to}, cut turn {} out of the conversation",
                self.turn
            ));
        }
        if self.session.is_none() || self.session.as_deref() != native {
            return Err(format!(
                "turn {} ran in another native session than the harness's now (a relaunch began a new one), or never named one",
                self.turn
            ));
        }
        match self.harness {
            Harness::Claude => self.last_message.map(Mark::At).ok_or_else(|| {
                format!("claude wrote no message in turn {} to cut after", self.turn)
            }),
            Harness::Codex if self.fork => self
                .last_turn
                .map(Mark::At)
                .ok_or_else(|| format!("codex began no turn of its own in turn {}", self.turn)),
            Harness::Codex => Ok(self.next_turn.map_or(Mark::Nothing, Mark::At)),
            // ACP (v1) cuts no session's history, but an agent may fork a
            // whole one (`session/fork`): its mark is the session.
            Harness::Acp if self.fork && !self.later => self
                .session
                .map(Mark::At)
                .ok_or_else(|| "it has no native session".into()),
            Harness::Acp if self.fork => Err(format!(
                "an ACP agent forks a whole session, so only after its latest turn, and turn {} is not",
                self.turn
            )),
            Harness::Acp => {
                Err("an ACP agent's conversation cannot be cut: the protocol has no way to".into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scan(harness: Harness, events: &[(&str, Value)], native: &str) -> Result<Mark, String> {
        scan_for(harness, false, events, native)
    }

    fn scan_for(
        harness: Harness,
        fork: bool,
        events: &[(&str, Value)],
        native: &str,
    ) -> Result<Mark, String> {
        let mut s = Scan::new(harness, 1, fork);
        for (kind, data) in events {
            s.feed(kind, data);
        }
        s.finish(Some(native))
    }

    #[test]
    fn an_acp_agents_whole_session_is_forked_after_its_latest_turn_only() {
        let events = [
            ("turn_started", json!({"turn": 1, "resume": null})),
            ("native_id", json!({"native_id": "s1"})),
            ("harness", json!({"method": "session/update"})),
        ];
        assert_eq!(
            scan_for(Harness::Acp, true, &events, "s1"),
            Ok(Mark::At("s1".into()))
        );
        let mut later = events.to_vec();
        later.push(("turn_started", json!({"turn": 2, "resume": "s1"})));
        assert_eq!(
            scan_for(Harness::Acp, true, &later, "s1"),
            Err("an ACP agent forks a whole session, so only after its latest turn, and turn 1 is not".into())
        );
        assert!(scan(Harness::Acp, &events, "s1").is_err(), "no rewind cut");
    }

    #[test]
    fn claude_is_cut_after_its_last_message_of_the_turn() {
        let events = [
            ("turn_started", json!({"turn": 1, "resume": null})),
            ("native_id", json!({"native_id": "s1"})),
            ("harness", json!({"type": "assistant", "uuid": "u1"})),
            ("harness", json!({"type": "user", "uuid": "u2"})),
            ("harness", json!({"type": "assistant", "uuid": "u3"})),
            ("turn_started", json!({"turn": 2, "resume": "s1"})),
            ("harness", json!({"type": "assistant", "uuid": "u4"})),
        ];
        assert_eq!(
            scan(Harness::Claude, &events, "s1"),
            Ok(Mark::At("u3".into()))
        );
        let e = scan(Harness::Claude, &events, "s2").unwrap_err();
        assert!(e.contains("another native session"), "{e}");
        let e = scan(Harness::Claude, &events[..2], "s1").unwrap_err();
        assert_eq!(e, "claude wrote no message in turn 1 to cut after");
    }

    #[test]
    fn codex_is_cut_before_its_first_turn_after_the_turn() {
        let started = |id: &str| json!({"method": "turn/started", "params": {"turn": {"id": id}}});
        let events = [
            ("turn_started", json!({"turn": 1, "resume": "t1"})),
            ("harness", started("a")),
            ("turn_started", json!({"turn": 2, "resume": "t1"})),
            ("harness", json!({"method": "item/started", "params": {}})),
            ("harness", started("b")),
            ("harness", started("c")),
        ];
        assert_eq!(
            scan(Harness::Codex, &events, "t1"),
            Ok(Mark::At("b".into()))
        );
        assert_eq!(scan(Harness::Codex, &events[..2], "t1"), Ok(Mark::Nothing));
        // A fork holds turn 1: through codex's last turn in it.
        assert_eq!(
            scan_for(Harness::Codex, true, &events, "t1"),
            Ok(Mark::At("a".into()))
        );
        let e = scan_for(Harness::Codex, true, &events[..1], "t1").unwrap_err();
        assert_eq!(e, "codex began no turn of its own in turn 1");
    }

    #[test]
    fn a_turn_an_earlier_rewind_cut_away_cannot_be_cut_to_and_what_it_dropped_is_not_a_mark() {
        let started = |id: &str| json!({"method": "turn/started", "params": {"turn": {"id": id}}});
        let turn = |n: u64| ("turn_started", json!({"turn": n, "resume": "t1"}));
        let events = [
            turn(1),
            ("harness", started("a")),
            turn(2),
            ("harness", started("b")),
            turn(3),
            ("harness", started("c")),
            ("rewound", json!({"to_turn": 1, "conversation": "cut"})),
            turn(4),
            ("harness", started("d")),
        ];
        let at = |turn: TurnSeq| {
            let mut s = Scan::new(Harness::Codex, turn, false);
            for (kind, data) in &events {
                s.feed(kind, data);
            }
            s.finish(Some("t1"))
        };
        assert_eq!(
            at(2),
            Err("an earlier rewind, to turn 1, cut turn 2 out of the conversation".into())
        );
        // Turn 1 is still there: a cut after it now drops turn 4 only.
        assert_eq!(at(1), Ok(Mark::At("d".into())));
    }
}
