//! Which lines of a journal are served: the rule a scan and every read
//! apply alike, so both see the same events.
//!
//! A line is served when it is a whole event whose seq comes after the last
//! served one and is no further on than the bytes since the last sure line
//! could explain. A served line is sure when its seq is one more than the
//! last served one's with nothing damaged between them (what every line of
//! an undamaged journal is); the bytes since a sure line (damaged lines, and
//! served lines that are not sure) could have held one event each
//! [`MIN_LINE`] bytes, and only that many seqs may be missing. Any other
//! line (not JSON, not an event, not UTF-8, a seq that repeats or jumps
//! further, longer than the line cap) is damaged: skipped, its bytes
//! counted.
//!
//! A `journal_repaired` event is sure wherever it is: its seq was chosen
//! past every seq the damage before it could have held.

use super::event::Line;
use super::report::REPAIRED;

/// The fewest bytes room-core's line for an event takes:
/// `{"seq":1,"at_ms":0,"kind":"","data":0}` and its newline. A damaged
/// stretch of `n` bytes can have held at most `n / MIN_LINE` events.
pub(super) const MIN_LINE: u64 = 39;

/// Where a journal's sequence stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sequence {
    /// The last seq served (0: none).
    last: u64,
    /// Bytes since the last sure line.
    slack: u64,
    /// Nothing damaged since the last served line.
    clean: bool,
}

impl Default for Sequence {
    fn default() -> Self {
        Sequence::after(0, 0)
    }
}

impl Sequence {
    /// Just after seq `last` was served, `slack` bytes after the last sure
    /// line (0: it was sure).
    pub(super) fn after(last: u64, slack: u64) -> Sequence {
        Sequence {
            last,
            slack,
            clean: true,
        }
    }

    /// The last seq served (0: none).
    pub(super) fn last(&self) -> u64 {
        self.last
    }

    /// Bytes since the last sure line.
    pub(super) fn slack(&self) -> u64 {
        self.slack
    }

    /// The furthest seq the next served line may have. Appends take the
    /// seq after the last served one and past every seq the bytes since
    /// the last sure line could have held, so no seq a reader may have been
    /// served is given again.
    pub(super) fn next(&self) -> u64 {
        self.last + 1 + self.slack / MIN_LINE
    }

    /// Whether a line with `seq` may be served next.
    pub(super) fn allows(&self, seq: u64) -> bool {
        seq > self.last && seq <= self.next()
    }

    /// The event `bytes` hold when they are one that may be served next.
    pub(super) fn check(&self, bytes: &[u8]) -> Option<Line> {
        Line::parse(bytes).filter(|l| self.allows(l.seq))
    }

    /// Notes that `line` was served, from `len` bytes (newline included).
    pub(super) fn served(&mut self, line: &Line, len: u64) {
        debug_assert!(self.allows(line.seq));
        let sure = (self.clean && line.seq == self.last + 1) || line.kind == REPAIRED;
        self.slack = if sure { 0 } else { self.slack + len };
        self.last = line.seq;
        self.clean = true;
    }

    /// Notes that room-core appended seq `seq` (at [`Sequence::next`] or
    /// after it): sure, as everything it writes.
    pub(super) fn appended(&mut self, seq: u64) {
        debug_assert!(self.allows(seq));
        *self = Sequence::after(seq, 0);
    }

    /// Notes a damaged line of `len` bytes (newline included).
    pub(super) fn skipped(&mut self, len: u64) {
        self.slack = self.slack.saturating_add(len);
        self.clean = false;
    }
}

#[cfg(test)]
mod tests {
    use super::super::event::Journalled;
    use super::*;

    #[test]
    fn min_line_is_the_shortest_line_room_core_writes() {
        let raw = serde_json::value::RawValue::from_string("0".into()).unwrap();
        let e = Journalled {
            seq: 1,
            at_ms: 0,
            kind: String::new(),
            data: raw,
        };
        let line = serde_json::to_string(&e).unwrap();
        assert_eq!(line.len() as u64 + 1, MIN_LINE, "{line}");
    }

    fn line(seq: u64, kind: &str) -> Line {
        Line {
            seq,
            at_ms: 0,
            kind: kind.into(),
            json: String::new(),
        }
    }

    #[test]
    fn a_gap_is_allowed_only_as_far_as_the_bytes_since_a_sure_line_explain() {
        let mut s = Sequence::after(11, 0);
        assert!(s.allows(12));
        assert!(!s.allows(11), "a repeat");
        assert!(!s.allows(13), "a gap with no damage before it");
        s.skipped(MIN_LINE - 1);
        assert!(!s.allows(13), "too few damaged bytes for a whole event");
        s.skipped(1);
        assert!(s.allows(13) && !s.allows(14));
        assert_eq!(s.next(), 13);
        // 13 after damage is served but not sure: its bytes add up.
        s.served(&line(13, "x"), 70);
        assert_eq!((s.last(), s.slack(), s.next()), (13, 109, 16));
        // 14 right after it is sure.
        s.served(&line(14, "x"), 70);
        assert_eq!((s.last(), s.slack(), s.next()), (14, 0, 15));
        // So is a report after damage, and what room-core appends.
        s.skipped(100);
        s.served(&line(16, REPAIRED), 200);
        assert_eq!((s.last(), s.slack()), (16, 0));
        s.skipped(100);
        s.appended(19);
        assert_eq!((s.last(), s.slack(), s.next()), (19, 0, 20));
    }

    #[test]
    fn a_seq_forged_low_after_damage_does_not_cost_the_lines_after_it() {
        // 10 served; line 11 damaged; line 12 reads as seq 11.
        let mut s = Sequence::after(10, 0);
        s.skipped(70);
        assert!(s.allows(11));
        s.served(&line(11, "x"), 70);
        // The true 13 and 14 are still served.
        assert!(s.allows(13));
        s.served(&line(13, "x"), 70);
        assert!(s.allows(14));
        s.served(&line(14, "x"), 70);
        assert_eq!(s.slack(), 0, "14 is sure");
    }
}
