//! The journal's sparse index (random access by seq at many sizes, its
//! memory), its caps on harness events and its page byte budget.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use proptest::prelude::*;
use serde_json::json;

use super::handle::lock;
use super::*;

fn temp(name: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("rc-journal-caps-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// An event whose data is `size` bytes of its own seq's digit, so a wrong
/// line is seen by its kind and its data both.
fn event(n: usize, size: usize) -> NewEvent {
    let digit = char::from(b'0' + (n % 10) as u8);
    NewEvent::new(format!("k{n}"), &json!(digit.to_string().repeat(size)))
}

fn marks(j: &Journal) -> usize {
    lock(&j.index).as_ref().expect("loaded").marks.len()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Any page anywhere in journals of many sizes, with events long and
    /// short (some past the window and past a mark's byte span), holds the
    /// right events: from the journal that wrote them and from one that
    /// scanned the file.
    #[test]
    fn a_page_anywhere_holds_the_right_events(
        sizes in prop::collection::vec(
            prop_oneof![60 => 0..100usize, 1 => 150_000..300_000usize],
            0..1200,
        ),
        batch in 1..300usize,
        reads in prop::collection::vec((0..1300u64, 1..1100usize), 1..12),
    ) {
        let dir = temp("pages");
        let j = Journal::new(&dir, "cr_p");
        for (c, chunk) in sizes.chunks(batch).enumerate() {
            let events = chunk
                .iter()
                .enumerate()
                .map(|(i, size)| event(c * batch + i, *size))
                .collect();
            j.append(events, 1).unwrap();
        }
        let reopened = Journal::new(&dir, "cr_p");
        let total = sizes.len() as u64;
        prop_assert_eq!(reopened.last_seq().unwrap(), total);
        for (after, limit) in reads {
            let want = (after + 1..=total).take(limit.min(MAX_PAGE));
            for journal in [&j, &reopened] {
                let got = journal.lines(after, limit).unwrap();
                let bytes: usize = got.iter().map(|l| l.json.len()).sum();
                // Cut short only by the byte budget, never to nothing.
                let want: Vec<u64> = want.clone().take(got.len()).collect();
                prop_assert!(got.len() == want.len());
                if got.len() < limit.min(MAX_PAGE) && after + (got.len() as u64) < total {
                    prop_assert!(bytes >= MAX_PAGE_BYTES && !got.is_empty());
                }
                for (line, seq) in got.iter().zip(want) {
                    let n = (seq - 1) as usize;
                    prop_assert_eq!(line.seq, seq);
                    prop_assert_eq!(&line.kind, &format!("k{n}"));
                    let e: Journalled = serde_json::from_str(&line.json).unwrap();
                    let data: String = serde_json::from_str(e.data.get()).unwrap();
                    prop_assert_eq!(data.len(), sizes[n]);
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn the_index_keeps_one_offset_in_a_stride() {
    let dir = temp("sparse");
    let j = Journal::new(&dir, "cr_s");
    let n = 100_000;
    for c in 0..10 {
        let events = (0..n / 10).map(|i| event(c * (n / 10) + i, 0)).collect();
        j.append(events, 1).unwrap();
    }
    let kept = n as u64 / STRIDE + 1;
    assert_eq!(marks(&j) as u64, kept);
    let reopened = Journal::new(&dir, "cr_s");
    assert_eq!(reopened.last_seq().unwrap(), n as u64);
    assert_eq!(marks(&reopened) as u64, kept);
    for after in [0, 1, 255, 256, 257, 51_234, 99_998] {
        let got = reopened.lines(after, 3).unwrap();
        assert_eq!(got[0].seq, after + 1);
        assert_eq!(got[0].kind, format!("k{after}"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn harness_events_stop_at_the_byte_cap_and_room_cores_own_go_on() {
    let dir = temp("bytes");
    let cap = 4096;
    let j = Journal::capped(
        &dir,
        "cr_b",
        Caps {
            bytes: cap,
            events: u64::MAX,
        },
    );
    j.append(vec![NewEvent::new("turn_started", &json!({}))], 1)
        .unwrap();
    let mut journalled = 1;
    let met = loop {
        let batch = (0..7).map(|_| NewEvent::harness("{}").unwrap()).collect();
        let a = j.append_output(batch, 2).unwrap();
        journalled += a.events.len();
        if let Some(cap) = a.capped {
            break cap;
        }
    };
    assert_eq!(met, JournalCap::Bytes(cap));
    let len = std::fs::metadata(j.path()).unwrap().len();
    assert!(len <= cap, "{len}");
    let one_more = NewEvent::harness("{}").unwrap();
    let line = serde_json::to_string(&Journalled {
        seq: journalled as u64 + 1,
        at_ms: 2,
        kind: "harness".into(),
        data: one_more.data.clone(),
    })
    .unwrap();
    assert!(len + line.len() as u64 + 1 > cap, "it stopped early");
    // Full: nothing more of the harness, however small; staged and own
    // events still go in, staged first.
    j.stage(NewEvent::new("staged", &json!({})));
    let a = j.append_output(vec![one_more], 3).unwrap();
    assert_eq!(a.capped, Some(JournalCap::Bytes(cap)));
    assert_eq!(kinds(&a.events), ["staged"]);
    let own = j
        .append(vec![NewEvent::new("turn_ended", &json!({}))], 4)
        .unwrap();
    assert_eq!(own[0].seq, journalled as u64 + 2);
    let last = j.lines(journalled as u64, 10).unwrap();
    assert_eq!(
        last.iter().map(|l| l.kind.as_str()).collect::<Vec<_>>(),
        ["staged", "turn_ended"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn harness_events_stop_at_the_event_cap() {
    let dir = temp("events");
    let j = Journal::capped(
        &dir,
        "cr_e",
        Caps {
            bytes: u64::MAX,
            events: 10,
        },
    );
    j.append(vec![NewEvent::new("turn_started", &json!({}))], 1)
        .unwrap();
    let batch = (0..20).map(|_| NewEvent::harness("{}").unwrap()).collect();
    let a = j.append_output(batch, 2).unwrap();
    assert_eq!(a.events.len(), 9);
    assert_eq!(a.capped, Some(JournalCap::Events(10)));
    assert_eq!(j.last_seq().unwrap(), 10);
    // A restart scans the full journal and knows it is full.
    let reopened = Journal::capped(
        &dir,
        "cr_e",
        Caps {
            bytes: u64::MAX,
            events: 10,
        },
    );
    let a = reopened
        .append_output(vec![NewEvent::harness("{}").unwrap()], 3)
        .unwrap();
    assert!(a.events.is_empty());
    assert_eq!(a.capped, Some(JournalCap::Events(10)));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_page_of_long_events_stops_at_the_byte_budget() {
    let dir = temp("budget");
    let j = Journal::new(&dir, "cr_l");
    let size = 900 << 10;
    let n = MAX_PAGE_BYTES / size + 3;
    for i in 0..n {
        j.append(vec![event(i, size)], 1).unwrap();
    }
    let page = j.lines(0, MAX_PAGE).unwrap();
    let bytes: usize = page.iter().map(|l| l.json.len()).sum();
    assert!(page.len() < n, "{}", page.len());
    assert!((MAX_PAGE_BYTES..MAX_PAGE_BYTES + MAX_LINE).contains(&bytes));
    // The next page goes on where it stopped.
    let rest = j.lines(page.len() as u64, MAX_PAGE).unwrap();
    assert_eq!(rest[0].seq, page.len() as u64 + 1);
    assert_eq!(page.len() + rest.len(), n);
    std::fs::remove_dir_all(&dir).unwrap();
}

fn kinds(events: &[Journalled]) -> Vec<&str> {
    events.iter().map(|e| e.kind.as_str()).collect()
}
