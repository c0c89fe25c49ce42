//! What a turn's output worker journals of the lines it cannot journal as
//! they are, so that the app sees every one of them and a flood of them
//! costs nothing: `output_dropped` for a line never read whole (over the
//! cap, not UTF-8), `harness_line_rejected` for one read and not servable
//! (too deep, not JSON, not portable; journal/servable.rs), with the start
//! of the first as text. Each is counted per turn and reason and reported
//! at once, then at most once a [`REPORT_EVERY_MS`] with the counts since
//! the last report, and what is left when the turn's output ends. Pure:
//! the time is passed in. A request room-core refused is journalled as
//! `request_refused`, one event each (its line is a request's, at least).

use room_machines::session::TurnSeq;
use serde::Serialize;

use crate::harness::bounds::cut;
use crate::harness::refusal::Refused;
use crate::journal::{NewEvent, Unservable};

/// The shortest time between two reports of one turn and reason.
pub(crate) const REPORT_EVERY_MS: u64 = 1000;

/// The most bytes of a rejected line's start an event shows.
pub(crate) const PREFIX_MAX: usize = 256;

/// The lines of one turn and reason since the last report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    /// How many.
    pub lines: u64,
    /// Their bytes, newlines excluded.
    pub bytes: u64,
    /// The start of the first of them, where it is shown.
    pub first: Option<String>,
}

/// Counts lines of one kind and says when to report them: the first at
/// once, then at most once a [`REPORT_EVERY_MS`], each report with what
/// came since the last; [`DropReport::flush`] gives what is left.
#[derive(Debug, Default)]
pub(crate) struct DropReport {
    /// When the last report went.
    last: Option<u64>,
    /// What came since.
    pending: Option<Tally>,
}

impl DropReport {
    /// One more line of `bytes` at `now_ms`, whose start `first` gives if
    /// it is the first since the last report: the tally to report now, if
    /// one is due.
    pub(crate) fn add(
        &mut self,
        now_ms: u64,
        bytes: u64,
        first: impl FnOnce() -> Option<String>,
    ) -> Option<Tally> {
        let tally = self.pending.get_or_insert_with(|| Tally {
            first: first(),
            ..Tally::default()
        });
        tally.lines += 1;
        tally.bytes = tally.bytes.saturating_add(bytes);
        self.due(now_ms)
    }

    /// What came since the last report, if a report is due at `now_ms`.
    pub(crate) fn due(&mut self, now_ms: u64) -> Option<Tally> {
        self.pending.as_ref()?;
        if self
            .last
            .is_some_and(|last| now_ms.saturating_sub(last) < REPORT_EVERY_MS)
        {
            return None;
        }
        self.last = Some(now_ms);
        self.pending.take()
    }

    /// What came since the last report, due or not: the output is over.
    pub(crate) fn flush(&mut self) -> Option<Tally> {
        self.pending.take()
    }
}

/// Why a line was dropped unread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dropped {
    /// It was longer than the cap.
    OverCap,
    /// It was not UTF-8.
    NotUtf8,
}

impl Dropped {
    fn code(self) -> &'static str {
        match self {
            Dropped::OverCap => "over_cap",
            Dropped::NotUtf8 => "not_utf8",
        }
    }
}

/// The reasons a line is reported for, in the order their reports flush.
const REASONS: [Reason; 5] = [
    Reason::Dropped(Dropped::OverCap),
    Reason::Dropped(Dropped::NotUtf8),
    Reason::Rejected(Unservable::TooDeep),
    Reason::Rejected(Unservable::NotJson),
    Reason::Rejected(Unservable::NotPortable),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    Dropped(Dropped),
    Rejected(Unservable),
}

/// A turn's reports, one [`DropReport`] per reason.
#[derive(Debug)]
pub(crate) struct LineReports {
    turn: TurnSeq,
    reports: [DropReport; REASONS.len()],
}

impl LineReports {
    /// Nothing reported yet, for turn `turn`.
    pub(crate) fn new(turn: TurnSeq) -> LineReports {
        LineReports {
            turn,
            reports: Default::default(),
        }
    }

    /// The reader serves turn `turn` now (a warm process serves several):
    /// what is left of the turn before goes to `out` first.
    pub(crate) fn serve(&mut self, turn: TurnSeq, out: &mut Vec<NewEvent>) {
        if turn != self.turn {
            self.flush(out);
            *self = LineReports::new(turn);
        }
    }

    /// A line of `bytes` dropped unread at `now_ms`; its report goes to
    /// `out` if one is due.
    pub(crate) fn dropped(
        &mut self,
        now_ms: u64,
        why: Dropped,
        bytes: u64,
        out: &mut Vec<NewEvent>,
    ) {
        let reason = Reason::Dropped(why);
        let due = self.report(reason).add(now_ms, bytes, || None);
        self.put(reason, due, out);
    }

    /// `line`, read at `now_ms` and not servable for `why` (never
    /// [`Unservable::Blank`], which is not reported); its report goes to
    /// `out` if one is due.
    pub(crate) fn rejected(
        &mut self,
        now_ms: u64,
        why: Unservable,
        line: &str,
        out: &mut Vec<NewEvent>,
    ) {
        let reason = Reason::Rejected(why);
        let bytes = line.len() as u64;
        let due = self
            .report(reason)
            .add(now_ms, bytes, || Some(cut(line, PREFIX_MAX)));
        self.put(reason, due, out);
    }

    /// The reports due at `now_ms`, to `out`.
    pub(crate) fn due(&mut self, now_ms: u64, out: &mut Vec<NewEvent>) {
        for (i, reason) in REASONS.into_iter().enumerate() {
            let due = self.reports[i].due(now_ms);
            self.put(reason, due, out);
        }
    }

    /// Every report left, due or not, to `out`: the turn's output is over.
    pub(crate) fn flush(&mut self, out: &mut Vec<NewEvent>) {
        for (i, reason) in REASONS.into_iter().enumerate() {
            let left = self.reports[i].flush();
            self.put(reason, left, out);
        }
    }

    fn report(&mut self, reason: Reason) -> &mut DropReport {
        let i = REASONS.iter().position(|r| *r == reason).unwrap_or(0);
        &mut self.reports[i]
    }

    fn put(&self, reason: Reason, tally: Option<Tally>, out: &mut Vec<NewEvent>) {
        let Some(t) = tally else { return };
        out.push(match reason {
            Reason::Dropped(why) => NewEvent::new(
                "output_dropped",
                &OutputDropped {
                    turn: self.turn,
                    why: why.code(),
                    lines: t.lines,
                    bytes: t.bytes,
                },
            ),
            Reason::Rejected(why) => NewEvent::new(
                "harness_line_rejected",
                &LineRejected {
                    turn: self.turn,
                    why: why.code(),
                    lines: t.lines,
                    bytes: t.bytes,
                    prefix: t.first.unwrap_or_default(),
                },
            ),
        });
    }
}

/// The `request_refused` event for a request of turn `turn`'s harness that
/// room-core answered itself (harness/refusal.rs).
pub(crate) fn request_refused(turn: TurnSeq, r: &Refused) -> NewEvent {
    NewEvent::new(
        "request_refused",
        &RequestRefused {
            turn,
            request: r.request.as_deref(),
            tool: r.tool.as_deref(),
            bytes: r.bytes,
            reason: r.why.code(),
            message: &r.message,
            answered: r.answered,
        },
    )
}

/// `request_refused`'s data.
#[derive(Serialize)]
struct RequestRefused<'a> {
    turn: TurnSeq,
    request: Option<&'a str>,
    tool: Option<&'a str>,
    bytes: u64,
    reason: &'static str,
    message: &'a str,
    answered: bool,
}

/// `output_dropped`'s data.
#[derive(Serialize)]
struct OutputDropped {
    turn: TurnSeq,
    why: &'static str,
    lines: u64,
    bytes: u64,
}

/// `harness_line_rejected`'s data.
#[derive(Serialize)]
struct LineRejected {
    turn: TurnSeq,
    why: &'static str,
    lines: u64,
    bytes: u64,
    prefix: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn tally(lines: u64, bytes: u64) -> Option<Tally> {
        Some(Tally {
            lines,
            bytes,
            first: None,
        })
    }

    #[test]
    fn the_first_line_is_reported_at_once_then_at_most_once_a_second() {
        let mut r = DropReport::default();
        assert_eq!(r.add(5_000, 10, || None), tally(1, 10));
        // Within the second: counted, not reported.
        for at in [5_001, 5_500, 5_999] {
            assert_eq!(r.add(at, 10, || None), None);
        }
        assert_eq!(r.due(5_999), None);
        // The second is over: what came since, once.
        assert_eq!(r.due(6_000), tally(3, 30));
        assert_eq!(r.due(9_000), None);
        // A line after a quiet spell goes at once.
        assert_eq!(r.add(9_000, 7, || None), tally(1, 7));
        assert_eq!(r.add(9_100, 7, || None), None);
        // The end flushes what is left; nothing after that.
        assert_eq!(r.flush(), tally(1, 7));
        assert_eq!(r.flush(), None);
    }

    #[test]
    fn a_flood_costs_one_report_a_second_and_loses_no_count() {
        let mut r = DropReport::default();
        let (mut reports, mut lines, mut bytes) = (0, 0, 0);
        // 100,000 lines over 10 s.
        for i in 0..100_000u64 {
            if let Some(t) = r.add(i / 10, 3, || None) {
                reports += 1;
                (lines, bytes) = (lines + t.lines, bytes + t.bytes);
            }
        }
        if let Some(t) = r.flush() {
            reports += 1;
            (lines, bytes) = (lines + t.lines, bytes + t.bytes);
        }
        assert_eq!((lines, bytes), (100_000, 300_000));
        assert!(reports <= 12, "{reports} reports");
    }

    fn data(events: &[NewEvent]) -> Vec<(String, Value)> {
        events
            .iter()
            .map(|e| (e.kind.clone(), serde_json::from_str(e.data.get()).unwrap()))
            .collect()
    }

    #[test]
    fn each_reason_is_reported_with_its_counts_and_a_new_turn_flushes_the_last() {
        let mut r = LineReports::new(3);
        let mut out = Vec::new();
        let deep = "[".repeat(300);
        r.rejected(0, Unservable::TooDeep, &deep, &mut out);
        r.rejected(10, Unservable::TooDeep, "[[", &mut out);
        r.dropped(20, Dropped::OverCap, 2 << 20, &mut out);
        r.dropped(30, Dropped::NotUtf8, 4, &mut out);
        r.dropped(40, Dropped::NotUtf8, 6, &mut out);
        r.rejected(50, Unservable::NotJson, "oops é", &mut out);
        assert_eq!(
            data(&out),
            [
                (
                    "harness_line_rejected".into(),
                    json!({"turn": 3, "why": "too_deep", "lines": 1, "bytes": 300,
                           "prefix": "[".repeat(PREFIX_MAX)})
                ),
                (
                    "output_dropped".into(),
                    json!({"turn": 3, "why": "over_cap", "lines": 1, "bytes": 2 << 20})
                ),
                (
                    "output_dropped".into(),
                    json!({"turn": 3, "why": "not_utf8", "lines": 1, "bytes": 4})
                ),
                (
                    "harness_line_rejected".into(),
                    json!({"turn": 3, "why": "not_json", "lines": 1, "bytes": 7,
                           "prefix": "oops é"})
                ),
            ]
        );
        out.clear();
        r.due(999, &mut out);
        assert!(out.is_empty());
        // The next turn: the last one's counts go first.
        r.serve(4, &mut out);
        r.dropped(1_000, Dropped::OverCap, 5, &mut out);
        assert_eq!(
            data(&out),
            [
                (
                    "output_dropped".into(),
                    json!({"turn": 3, "why": "not_utf8", "lines": 1, "bytes": 6})
                ),
                (
                    "harness_line_rejected".into(),
                    json!({"turn": 3, "why": "too_deep", "lines": 1, "bytes": 2, "prefix": "[["})
                ),
                (
                    "output_dropped".into(),
                    json!({"turn": 4, "why": "over_cap", "lines": 1, "bytes": 5})
                ),
            ]
        );
    }

    #[test]
    fn a_prefix_is_cut_at_a_character_boundary() {
        let mut r = LineReports::new(1);
        let mut out = Vec::new();
        let line = format!("x{}", "é".repeat(200));
        r.rejected(0, Unservable::NotJson, &line, &mut out);
        let (_, v) = &data(&out)[0];
        let prefix = v["prefix"].as_str().unwrap();
        assert_eq!(prefix.len(), 255);
        assert!(line.starts_with(prefix));
    }
}
