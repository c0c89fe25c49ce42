//! Part of section 8, `follow`: appends to one journal, one event per
//! append and in batches, each a write and an fdatasync.

use std::time::Instant;

use crate::stats::{ms, stats, Table};

/// Appends to one journal in the bench's temp dir (the same disk as the
/// services' state dirs): one event per append, then batches.
pub(crate) fn journal_throughput(table: &mut Table) {
    use room_core::journal::{Journal, NewEvent};
    let dir = std::env::temp_dir().join(format!("room-core-bench-journal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let event = || {
        NewEvent::harness(
            r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"I read the file and will now run the tests."}]},"session_id":"5b7e3a1c-8c1d-4f0e-9a57-2d6c1f0e9b21"}"#,
        )
        .unwrap()
    };
    let mut single = 0.0;
    for (batch, total) in [(1usize, 2000usize), (16, 16_000), (256, 64_000)] {
        let journal = Journal::new(&dir, &format!("cr_batch_{batch}"));
        let mut per_append = Vec::new();
        let began = Instant::now();
        for _ in 0..total / batch {
            let events: Vec<NewEvent> = (0..batch).map(|_| event()).collect();
            let t = Instant::now();
            journal.append(events, 1).expect("append");
            per_append.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let rate = total as f64 / began.elapsed().as_secs_f64();
        if batch == 1 {
            single = rate;
        }
        let (p50, p99) = stats(&per_append);
        table.row(
            "journal append",
            &format!(
                "{batch} event(s) per append (one write + fdatasync), ~210-byte harness events"
            ),
            ms(p50),
            ms(p99),
            format!(
                "{rate:.0} events/s ({total} events){}; times are per append",
                if batch > 1 {
                    format!(", {:.0}x one per append", rate / single)
                } else {
                    String::new()
                }
            ),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
