//! What a turn's output worker keeps between rounds of its work: the batch
//! being built, the reports of lines not journalled as they are, whether
//! the journal met its cap (turn_output.rs does the work).

use std::sync::Arc;
use std::time::Instant;

use room_machines::session::TurnSeq;

use super::line_reports::LineReports;
use crate::journal::{Journal, NewEvent, MAX_LINE};

/// The longest stdout line journalled: 1 MiB less the room the journal's
/// own fields take, so every line read fits a journal line.
pub(crate) const LINE_CAP: usize = MAX_LINE - 1024;

/// The most harness events journalled in one append: a 64 KiB read of
/// `{}` lines is 20,000 of them, and each takes a few hundred bytes of
/// memory until it is written.
pub(super) const BATCH_MAX: usize = 1024;

/// What a turn's worker keeps between rounds.
pub(crate) struct Reading {
    pub(super) journal: Arc<Journal>,
    /// The session and turn, for log lines.
    pub(super) what: String,
    /// The turn whose session ID the session took: each turn of a process
    /// that serves several (warm follow-ups) names it again.
    pub(super) named: Option<TurnSeq>,
    /// The journal met its cap: what comes after is dropped.
    pub(super) capped: bool,
    pub(super) began: Instant,
    pub(super) reports: LineReports,
    pub(super) batch: Vec<NewEvent>,
}

impl Reading {
    /// A turn's, journalled to `journal`, starting with turn `seq`.
    pub(crate) fn new(journal: Arc<Journal>, seq: TurnSeq) -> Reading {
        Reading {
            what: format!("{} turn {seq}", journal_name(&journal)),
            journal,
            named: None,
            capped: false,
            began: Instant::now(),
            reports: LineReports::new(seq),
            batch: Vec::new(),
        }
    }
}

/// The session ID a journal belongs to, for log lines.
fn journal_name(journal: &Journal) -> String {
    journal
        .path()
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
}
