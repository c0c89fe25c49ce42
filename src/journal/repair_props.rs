//! Random damage to a valid journal (bits flipped, bytes overwritten with
//! NULs or noise, lines inserted: garbage, repeats, forged seqs, over-long
//! lines, an unfinished end): every intact line is served unless a line
//! served before it already took its seq, nothing is deleted, and the
//! damage is reported once.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use proptest::prelude::*;
use proptest::sample::Index as Pick;
use serde_json::json;

use super::repair_tests::served;
use super::*;

/// A line put in between two of the journal's.
#[derive(Debug, Clone)]
enum Insert {
    /// Bytes with no newline in them, then one.
    Garbage(Vec<u8>),
    /// One of the journal's lines again.
    Repeat(Pick),
    /// A whole event with any seq.
    Forged(u64),
    /// A line over the line cap.
    Long,
}

/// Bytes changed in place, anywhere in the file.
#[derive(Debug, Clone)]
enum Overwrite {
    /// One bit.
    Flip(Pick, u8),
    /// A run of NULs.
    Nuls(Pick, usize),
    /// A few random bytes.
    Noise(Pick, Vec<u8>),
}

/// The file's end, past its last newline.
#[derive(Debug, Clone)]
enum End {
    /// The start of one of its lines (an append a crash cut short).
    Torn(Pick, Pick),
    /// NULs (an append whose data never reached the disk).
    Nuls(usize),
}

fn insert() -> impl Strategy<Value = Insert> {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..90)
            .prop_map(Insert::Garbage),
        3 => any::<Pick>().prop_map(Insert::Repeat),
        3 => (0..90u64).prop_map(Insert::Forged),
        1 => Just(Insert::Long),
    ]
}

fn overwrite() -> impl Strategy<Value = Overwrite> {
    prop_oneof![
        any::<(Pick, u8)>().prop_map(|(at, bit)| Overwrite::Flip(at, bit % 8)),
        (any::<Pick>(), 1..300usize).prop_map(|(at, n)| Overwrite::Nuls(at, n)),
        (any::<Pick>(), prop::collection::vec(any::<u8>(), 1..12))
            .prop_map(|(at, b)| Overwrite::Noise(at, b)),
    ]
}

fn end() -> impl Strategy<Value = Option<End>> {
    prop::option::of(prop_oneof![
        any::<(Pick, Pick)>().prop_map(|(l, c)| End::Torn(l, c)),
        (1..5000usize).prop_map(End::Nuls),
    ])
}

fn temp() -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("rc-journal-props-{}-{n}", std::process::id()))
}

/// The lines of `bytes` that end with a newline (without it).
fn whole_lines(bytes: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    lines.pop();
    lines
}

proptest! {
    // Failures are kept beside this file, not in a top-level folder.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("regressions"),
        )),
        ..ProptestConfig::with_cases(64)
    })]

    #[test]
    fn damage_loses_no_intact_line_and_deletes_nothing(
        sizes in prop::collection::vec(0..120usize, 1..70),
        inserts in prop::collection::vec((any::<Pick>(), insert()), 0..5),
        overwrites in prop::collection::vec(overwrite(), 0..4),
        tail in end(),
    ) {
        let dir = temp();
        let j = Journal::new(&dir, "cr_p");
        let events = sizes
            .iter()
            .enumerate()
            .map(|(i, size)| NewEvent::new(format!("k{}", i + 1), &json!("d".repeat(*size))))
            .collect();
        j.append(events, 1).unwrap();
        let path = j.path().to_path_buf();
        drop(j);
        let good = std::fs::read(&path).unwrap();
        let originals = whole_lines(&good);
        let n = originals.len();

        // Lines inserted (before line `at`), then bytes overwritten, then
        // the end.
        let mut extra: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n + 1];
        for (at, what) in &inserts {
            let line = match what {
                Insert::Garbage(b) => b.clone(),
                Insert::Repeat(i) => originals[i.index(n)].to_vec(),
                Insert::Forged(seq) => format!(
                    r#"{{"seq":{seq},"at_ms":0,"kind":"forged","data":null}}"#
                )
                .into_bytes(),
                Insert::Long => vec![b'{'; MAX_LINE + 1],
            };
            extra[at.index(n + 1)].push(line);
        }
        let mut bytes = Vec::new();
        // Where each of the journal's lines is put.
        let mut placed = Vec::new();
        for (i, lines) in extra.iter().enumerate() {
            for line in lines {
                bytes.extend_from_slice(line);
                bytes.push(b'\n');
            }
            if let Some(line) = originals.get(i) {
                placed.push(bytes.len());
                bytes.extend_from_slice(line);
                bytes.push(b'\n');
            }
        }
        for o in &overwrites {
            let len = bytes.len();
            match o {
                Overwrite::Flip(at, bit) => bytes[at.index(len)] ^= 1 << bit,
                Overwrite::Nuls(at, n) => {
                    let at = at.index(len);
                    let to = (at + n).min(len);
                    bytes[at..to].fill(0);
                }
                Overwrite::Noise(at, noise) => {
                    let at = at.index(len);
                    let to = (at + noise.len()).min(len);
                    bytes[at..to].copy_from_slice(&noise[..to - at]);
                }
            }
        }
        match &tail {
            Some(End::Torn(l, c)) => {
                let line = originals[l.index(n)];
                bytes.extend_from_slice(&line[..c.index(line.len())]);
            }
            Some(End::Nuls(k)) => bytes.extend(std::iter::repeat(0).take(*k)),
            None => {}
        }
        std::fs::write(&path, &bytes).unwrap();
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let (terminated, rest) = bytes.split_at(whole);

        let j = Journal::new(&dir, "cr_p");
        let got = served(&j);
        let now = std::fs::read(&path).unwrap();

        // Nothing deleted: every terminated line is still there; the rest
        // is kept (a whole event, given its newline) or copied aside.
        prop_assert_eq!(&now[..whole], terminated);
        let copy = dir.join("cr_p.jsonl.damaged-1");
        let kept_rest = !rest.is_empty() && !copy.exists();
        if kept_rest {
            prop_assert_eq!(&now[whole..whole + rest.len()], rest);
            prop_assert_eq!(now[whole + rest.len()], b'\n');
        } else if !rest.is_empty() {
            prop_assert_eq!(std::fs::read(&copy).unwrap(), rest);
        }

        // Served: seqs ascending, each line a line of the file, in order.
        let (report, lines) = match got.last() {
            Some(l) if l.kind == REPAIRED => (Some(l.clone()), &got[..got.len() - 1]),
            _ => (None, &got[..]),
        };
        prop_assert!(got.windows(2).all(|w| w[0].seq < w[1].seq));
        let mut candidates = whole_lines(terminated);
        if kept_rest {
            candidates.push(rest);
        }
        let mut at = Vec::new();
        let mut next = 0;
        for line in lines {
            let i = (next..candidates.len())
                .find(|&i| candidates[i] == line.json.as_bytes());
            prop_assert!(i.is_some(), "served but not in the file: {}", line.json);
            at.push(i.unwrap());
            next = i.unwrap() + 1;
        }

        // Every intact line (its bytes and the newline before it as they
        // were) is served, unless a line served before it has its seq or a
        // later one.
        for (k, original) in originals.iter().enumerate() {
            let seq = k as u64 + 1;
            let start = placed[k];
            let end = start + original.len() + 1;
            let intact = end <= whole
                && &bytes[start..end - 1] == *original
                && bytes[end - 1] == b'\n'
                && (start == 0 || bytes[start - 1] == b'\n');
            if !intact {
                continue;
            }
            let p = bytes[..start].iter().filter(|b| **b == b'\n').count();
            let shown = at.contains(&p);
            let shadowed = lines.iter().zip(&at).any(|(l, &i)| i < p && l.seq >= seq);
            prop_assert!(
                shown || shadowed,
                "line {} (seq {}) is intact but not served: served {:?} of\n{}",
                p,
                seq,
                lines.iter().map(|l| l.seq).collect::<Vec<_>>(),
                candidates
                    .iter()
                    .map(|c| String::from_utf8_lossy(c))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }

        // What was skipped is reported, once.
        let skipped = whole_lines(terminated).len() - (lines.len() - usize::from(kept_rest));
        match &report {
            Some(r) => {
                let e: Journalled = serde_json::from_str(&r.json).unwrap();
                let r: Repaired = serde_json::from_str(e.data.get()).unwrap();
                prop_assert_eq!(r.lines, skipped as u64);
                prop_assert_eq!(r.set_aside.is_some(), !rest.is_empty() && !kept_rest);
            }
            None => prop_assert_eq!(skipped, 0),
        }
        // A read after any seq, in a gap too, starts at the next served.
        let last = got.last().map_or(0, |l| l.seq);
        for after in 0..=last {
            let want: Vec<_> = got.iter().filter(|l| l.seq > after).take(3).cloned().collect();
            prop_assert_eq!(j.read_file(after, 3).unwrap(), want, "after {}", after);
        }
        let reopened = Journal::new(&dir, "cr_p");
        prop_assert_eq!(served(&reopened), got.clone());
        // Appends go on past every seq served.
        let e = reopened.append(vec![NewEvent::new("after", &json!({}))], 1).unwrap();
        prop_assert!(e[0].seq > got.last().map_or(0, |l| l.seq));
        let reopened = Journal::new(&dir, "cr_p");
        prop_assert_eq!(reopened.last_seq().unwrap(), e[0].seq);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
