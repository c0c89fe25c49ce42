//! What a scan learns of a journal and appends keep up to date: where some
//! served lines start, where the file ends, the recent lines, the last
//! started turn, and a repair not done yet.

use std::collections::VecDeque;
use std::sync::Arc;

use room_machines::session::TurnTail;

use super::event::Line;
use super::limits::{MARK_BYTES, RECENT_BYTES, RECENT_EVENTS, STRIDE};
use super::repair::TailFix;
use super::report::{Damage, SetAside};
use super::rule::Sequence;

/// Where some served lines start, where the file ends, and the recent
/// lines.
#[derive(Debug, Default)]
pub(super) struct Index {
    /// The first served line, every [`STRIDE`]th after the last kept one
    /// and the first that starts [`MARK_BYTES`] or more after it; ascending.
    /// So no served line starts `MARK_BYTES` or more past a mark before the
    /// next mark.
    pub(super) marks: Vec<Mark>,
    /// Where the sequence stands: the last seq served, and the bytes since
    /// the last sure line (which set the next seq).
    pub(super) seq: Sequence,
    /// Where the last line (served or damaged) ends: where appends go.
    pub(super) end: u64,
    /// The last lines, oldest first.
    pub(super) recent: VecDeque<Arc<Line>>,
    /// Their bytes.
    pub(super) recent_bytes: usize,
    /// The last event's time (0: none).
    pub(super) last_at: u64,
    /// The last started turn that did not end, and whether anything its
    /// harness printed came after its start.
    pub(super) turn: Option<TurnTail>,
    /// What the file's end needs and what is to be reported, until done.
    pub(super) pending: Option<Pending>,
    /// Whether the scan passed over a damaged line: if not, every line
    /// from the first served one on is served, one seq after another.
    pub(super) damaged: bool,
}

/// A served line the index keeps: a read can start there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mark {
    /// Its seq.
    pub(super) seq: u64,
    /// Its offset.
    pub(super) at: u64,
    /// The sequence's slack just after it (see [`rule`](super::rule)), so a read from it
    /// judges the lines after it as the scan did.
    pub(super) slack: u64,
}

/// A repair not done yet: the file's end to mend, then the damage to
/// report in a `journal_repaired` event.
#[derive(Debug)]
pub(super) struct Pending {
    pub(super) fix: TailFix,
    pub(super) damage: Damage,
    pub(super) set_aside: Option<SetAside>,
}

impl Index {
    pub(super) fn last_seq(&self) -> u64 {
        self.seq.last()
    }

    pub(super) fn end(&self) -> u64 {
        self.end
    }

    /// Adds the next served line (which ends at `end`) to the index and the
    /// recent window; `appended` when room-core has just written it.
    pub(super) fn push(&mut self, line: Line, end: u64, appended: bool) {
        let start = self.end;
        if appended {
            self.seq.appended(line.seq);
        } else {
            self.seq.served(&line, end - start);
        }
        let keep = self.marks.last().map_or(true, |m| {
            line.seq - m.seq >= STRIDE || start - m.at >= MARK_BYTES
        });
        if keep {
            self.marks.push(Mark {
                seq: line.seq,
                at: start,
                slack: self.seq.slack(),
            });
        }
        self.end = end;
        self.last_at = line.at_ms;
        super::turn_tail::follow(&mut self.turn, &line);
        self.remember(line);
    }

    /// Passes over a damaged line of `len` bytes.
    pub(super) fn skip(&mut self, len: u64) {
        self.seq.skipped(len);
        self.end += len;
        self.damaged = true;
    }

    /// The kept line nearest at or before seq `seq` (else the first).
    /// There is one once a line has been served.
    pub(super) fn mark_before(&self, seq: u64) -> Mark {
        let i = self.marks.partition_point(|m| m.seq <= seq);
        self.marks[i.saturating_sub(1)]
    }

    /// For a damaged line from `start` to `end`: when it reaches
    /// [`MARK_BYTES`] past the kept line before it, no served line comes
    /// between it and the next kept one, so a read goes there: `Some` of
    /// that line (`Some(None)`: there is none).
    pub(super) fn past_span(&self, start: u64, end: u64) -> Option<Option<Mark>> {
        let i = self.marks.partition_point(|m| m.at <= start);
        let before = self.marks.get(i.checked_sub(1)?)?;
        (end >= before.at + MARK_BYTES).then(|| self.marks.get(i).copied())
    }

    /// Keeps `line` in the recent window, dropping the oldest past its
    /// bounds. A line too long for the window empties it: the window always
    /// ends at the last seq, or holds nothing.
    pub(super) fn remember(&mut self, line: Line) {
        let len = line.json.len();
        if len > RECENT_BYTES {
            self.recent.clear();
            self.recent_bytes = 0;
            return;
        }
        self.recent_bytes += len;
        self.recent.push_back(Arc::new(line));
        while self.recent.len() > RECENT_EVENTS || self.recent_bytes > RECENT_BYTES {
            let old = self.recent.pop_front().expect("not empty");
            self.recent_bytes -= old.json.len();
        }
    }

    /// Up to `limit` lines after `after` from the recent window; `None` when
    /// the window does not reach back to `after + 1`.
    pub(super) fn recent_after(&self, after: u64, limit: usize) -> Option<Vec<Arc<Line>>> {
        if after >= self.last_seq() {
            return Some(Vec::new());
        }
        // The window holds every served line from its first on (seqs may
        // have gaps where lines were damaged).
        let first = self.recent.front()?.seq;
        if after + 1 < first {
            return None;
        }
        let skip = self.recent.partition_point(|l| l.seq <= after);
        Some(self.recent.iter().skip(skip).take(limit).cloned().collect())
    }
}
