//! A damaged journal: what is served, skipped, reported, set aside and how
//! appends go on after it.

use std::fs::OpenOptions;
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::json;

use super::handle::lock;
use super::*;

fn temp(name: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "rc-journal-repair-{name}-{}-{n}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A journal of `n` events `k1`..`kn` (data a few dozen bytes), written by
/// the journal itself; its file's bytes.
fn written(dir: &Path, id: &str, n: u64) -> Vec<u8> {
    let j = Journal::new(dir, id);
    for i in 1..=n {
        let e = NewEvent::new(
            format!("k{i}"),
            &json!({"text": format!("event {i} of {n}")}),
        );
        j.append(vec![e], 1000 + i).unwrap();
    }
    std::fs::read(j.path()).unwrap()
}

/// Where each line starts, and the offset past the last.
fn starts(bytes: &[u8]) -> Vec<usize> {
    let mut s = vec![0];
    s.extend(
        bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1),
    );
    s
}

/// Every line served, page by page in small pages, read from the file
/// (across the damage); checked to be what the journal serves from memory.
pub(super) fn served(j: &Journal) -> Vec<Arc<Line>> {
    let mut out: Vec<Arc<Line>> = Vec::new();
    loop {
        let after = out.last().map_or(0, |l| l.seq);
        let page = j.read_file(after, 7).unwrap();
        if page.is_empty() {
            break;
        }
        assert_eq!(page, j.lines(after, 7).unwrap(), "after {after}");
        out.extend(page);
    }
    out
}

fn seqs(lines: &[Arc<Line>]) -> Vec<u64> {
    lines.iter().map(|l| l.seq).collect()
}

fn report(line: &Line) -> Repaired {
    assert_eq!(line.kind, REPAIRED, "{}", line.json);
    let e: Journalled = serde_json::from_str(&line.json).unwrap();
    serde_json::from_str(e.data.get()).unwrap()
}

/// The files beside the journal whose names start with its own.
fn copies(dir: &Path, id: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("{id}.jsonl.damaged-")))
        .collect();
    names.sort();
    names
}

#[test]
fn one_flipped_byte_in_the_middle_skips_its_line_and_serves_the_rest() {
    let dir = temp("flip");
    let mut bytes = written(&dir, "cr_a", 35);
    let path = dir.join("cr_a.jsonl");
    let at = starts(&bytes);
    // Line 18's opening brace, one bit off: not JSON any more.
    bytes[at[17]] ^= 0x04;
    let damaged_line = bytes[at[17]..at[18]].to_vec();
    std::fs::write(&path, &bytes).unwrap();

    let j = Journal::new(&dir, "cr_a");
    let lines = served(&j);
    let mut want: Vec<u64> = (1..=35).filter(|s| *s != 18).collect();
    want.push(36);
    assert_eq!(seqs(&lines), want, "34 events and the report");
    for line in &lines[..34] {
        assert_eq!(line.kind, format!("k{}", line.seq));
    }
    let r = report(lines.last().unwrap());
    assert_eq!(
        r,
        Repaired {
            skipped: vec![Run {
                offset: at[17] as u64,
                bytes: damaged_line.len() as u64,
                lines: 1,
                after_seq: 17,
            }],
            runs: 1,
            lines: 1,
            bytes: damaged_line.len() as u64,
            through: bytes.len() as u64,
            set_aside: None,
        }
    );
    // Nothing deleted: the file is the old one and the report after it.
    let now = std::fs::read(&path).unwrap();
    assert_eq!(&now[..bytes.len()], &bytes[..]);
    assert!(copies(&dir, "cr_a").is_empty());
    assert_eq!(j.last_seq().unwrap(), 36);

    // Reopened: the same served, nothing reported twice; appends go on.
    let j = Journal::new(&dir, "cr_a");
    assert_eq!(seqs(&served(&j)), want);
    let e = j
        .append(vec![NewEvent::new("after", &json!({}))], 9)
        .unwrap();
    assert_eq!(e[0].seq, 37);
    let grown = std::fs::read(&path).unwrap();
    assert_eq!(&grown[..now.len()], &now[..]);
    // A reader that had seq 17 resumes across the skipped line.
    assert_eq!(seqs(&j.read_file(17, 3).unwrap()), [19, 20, 21]);
    assert_eq!(seqs(&j.read_file(18, 1).unwrap()), [19]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_torn_last_line_is_copied_aside_then_cut_and_its_seq_is_given_again() {
    let dir = temp("torn");
    let bytes = written(&dir, "cr_t", 3);
    let path = dir.join("cr_t.jsonl");
    let torn = br#"{"seq":4,"at_ms":5,"kind":"tw"#;
    let mut with_torn = bytes.clone();
    with_torn.extend_from_slice(torn);
    std::fs::write(&path, &with_torn).unwrap();

    let j = Journal::new(&dir, "cr_t");
    assert_eq!(
        j.last_seq().unwrap(),
        3,
        "no report: nothing served was lost"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the torn bytes are cut"
    );
    let copy = dir.join("cr_t.jsonl.damaged-1");
    assert_eq!(std::fs::read(&copy).unwrap(), torn, "...and kept aside");
    assert_eq!(
        std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let e = j
        .append(vec![NewEvent::new("four", &json!({}))], 6)
        .unwrap();
    assert_eq!(e[0].seq, 4, "a torn line was never served: its seq is free");

    // A second crash's leftovers get the next name.
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut f, b"\0\0\0\0").unwrap();
    drop(f);
    let j = Journal::new(&dir, "cr_t");
    assert_eq!(j.last_seq().unwrap(), 4);
    assert_eq!(
        copies(&dir, "cr_t"),
        ["cr_t.jsonl.damaged-1", "cr_t.jsonl.damaged-2"]
    );
    assert_eq!(
        std::fs::read(dir.join("cr_t.jsonl.damaged-2")).unwrap(),
        b"\0\0\0\0"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_whole_last_event_without_its_newline_is_kept_and_given_one() {
    let dir = temp("newline");
    let mut bytes = written(&dir, "cr_n", 4);
    let path = dir.join("cr_n.jsonl");
    assert_eq!(bytes.pop(), Some(b'\n'));
    std::fs::write(&path, &bytes).unwrap();
    let j = Journal::new(&dir, "cr_n");
    assert_eq!(seqs(&served(&j)), [1, 2, 3, 4]);
    bytes.push(b'\n');
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(
        j.append(vec![NewEvent::new("five", &json!(5))], 1).unwrap()[0].seq,
        5
    );
    assert_eq!(Journal::new(&dir, "cr_n").last_seq().unwrap(), 5);
    assert!(copies(&dir, "cr_n").is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn garbage_repeats_jumps_nuls_and_long_lines_in_the_middle_are_skipped() {
    let dir = temp("kinds");
    let bytes = written(&dir, "cr_k", 20);
    let path = dir.join("cr_k.jsonl");
    let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
    let mut damaged = Vec::new();
    let mut inserted = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let seq = i + 1;
        if seq == 12 {
            // A NUL run over the middle of line 12.
            let mut l = line.to_vec();
            l[10..30].fill(0);
            inserted.push(l.len());
            damaged.extend_from_slice(&l);
            continue;
        }
        damaged.extend_from_slice(line);
        let extra: Vec<u8> = match seq {
            3 => b"not json at all\n".to_vec(),
            // An earlier event again (a duplicate seq).
            6 => lines[2].to_vec(),
            // A whole event whose seq jumps ahead.
            9 => br#"{"seq":99,"at_ms":1,"kind":"k99","data":null}"#
                .iter()
                .chain(b"\n")
                .copied()
                .collect(),
            // A line over the 1 MiB cap.
            15 => {
                let mut l = vec![b'x'; MAX_LINE + 100];
                l.push(b'\n');
                l
            }
            _ => continue,
        };
        inserted.push(extra.len());
        damaged.extend_from_slice(&extra);
    }
    std::fs::write(&path, &damaged).unwrap();

    let j = Journal::new(&dir, "cr_k");
    let got = served(&j);
    let mut want: Vec<u64> = (1..=20).filter(|s| *s != 12).collect();
    want.push(21);
    assert_eq!(seqs(&got), want);
    for line in &got[..19] {
        assert_eq!(line.kind, format!("k{}", line.seq));
    }
    let r = report(&got[19]);
    assert_eq!((r.runs, r.lines), (5, 5));
    assert_eq!(r.bytes, inserted.iter().sum::<usize>() as u64);
    assert_eq!(
        r.skipped.iter().map(|r| r.after_seq).collect::<Vec<_>>(),
        [3, 6, 9, 11, 15]
    );
    assert_eq!(
        &std::fs::read(&path).unwrap()[..damaged.len()],
        &damaged[..]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_nul_run_across_lines_loses_them_and_the_seqs_after_it_are_served() {
    let dir = temp("nul-span");
    let mut bytes = written(&dir, "cr_z", 30);
    let path = dir.join("cr_z.jsonl");
    let at = starts(&bytes);
    // From inside line 10 to inside line 13: lines 10 to 13 are one run.
    bytes[at[9] + 5..at[12] + 5].fill(0);
    std::fs::write(&path, &bytes).unwrap();
    let j = Journal::new(&dir, "cr_z");
    let got = served(&j);
    let mut want: Vec<u64> = (1..=30).filter(|s| !(10..=13).contains(s)).collect();
    want.push(31);
    assert_eq!(seqs(&got), want);
    let r = report(got.last().unwrap());
    assert_eq!(
        r.skipped,
        [Run {
            offset: at[9] as u64,
            bytes: (at[13] - at[9]) as u64,
            lines: 1,
            after_seq: 9
        }]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_seq_forged_by_a_flipped_bit_is_skipped_and_the_true_one_served() {
    let dir = temp("forged");
    let bytes = written(&dir, "cr_f", 15);
    let path = dir.join("cr_f.jsonl");
    let text = String::from_utf8(bytes).unwrap();
    // "seq":12 becomes "seq":13, then "seq":92 in another copy.
    for forged in ["13", "92", "10"] {
        let t = text.replacen(r#"{"seq":12,"#, &format!(r#"{{"seq":{forged},"#), 1);
        std::fs::write(&path, &t).unwrap();
        let j = Journal::new(&dir, "cr_f");
        let got = served(&j);
        let mut want: Vec<u64> = (1..=15).filter(|s| *s != 12).collect();
        want.push(16);
        assert_eq!(seqs(&got), want, "seq 12 read as {forged}");
        assert_eq!(got[11].kind, "k13");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn after_a_damaged_last_line_appends_jump_past_every_seq_it_could_have_held() {
    let dir = temp("tail");
    let mut bytes = written(&dir, "cr_d", 10);
    let path = dir.join("cr_d.jsonl");
    let at = starts(&bytes);
    let last = at[10] - at[9];
    bytes[at[9]] = b'#';
    std::fs::write(&path, &bytes).unwrap();

    let j = Journal::new(&dir, "cr_d");
    let got = served(&j);
    // Line 10 (seq 10, perhaps served before) is skipped; the report's
    // seq is past all it could have held, so a reader resuming after 10
    // gets the report, and one resuming after 9 does too.
    let jump = 9 + 1 + last as u64 / rule::MIN_LINE;
    assert!(jump > 10);
    assert_eq!(seqs(&got), (1..=9).chain([jump]).collect::<Vec<_>>());
    assert_eq!(report(&got[9]).skipped[0].after_seq, 9);
    assert_eq!(seqs(&j.read_file(10, 5).unwrap()), [jump]);
    assert_eq!(seqs(&j.read_file(9, 5).unwrap()), [jump]);
    let e = j
        .append(vec![NewEvent::new("next", &json!({}))], 1)
        .unwrap();
    assert_eq!(e[0].seq, jump + 1);
    // Reopened: the report's seq is allowed by the damage before it.
    let j = Journal::new(&dir, "cr_d");
    assert_eq!(
        seqs(&served(&j)),
        (1..=9).chain([jump, jump + 1]).collect::<Vec<_>>()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damage_and_a_torn_tail_together_are_reported_in_one_event() {
    let dir = temp("both");
    let mut bytes = written(&dir, "cr_b", 5);
    let path = dir.join("cr_b.jsonl");
    let at = starts(&bytes);
    bytes[at[1]..at[1] + 3].fill(b'?');
    let whole = bytes.len();
    bytes.extend_from_slice(b"\0\0\0{\"seq\"");
    std::fs::write(&path, &bytes).unwrap();
    let j = Journal::new(&dir, "cr_b");
    let got = served(&j);
    assert_eq!(seqs(&got), [1, 3, 4, 5, 6]);
    let r = report(&got[4]);
    assert_eq!(
        r.set_aside,
        Some(SetAside {
            file: "cr_b.jsonl.damaged-1".into(),
            offset: whole as u64,
            bytes: 9,
        })
    );
    assert_eq!(r.through, whole as u64);
    assert_eq!(&std::fs::read(&path).unwrap()[..whole], &bytes[..whole]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn reads_across_megabytes_of_damage_find_the_events_after_it() {
    let dir = temp("wide");
    let j = Journal::new(&dir, "cr_w");
    let filler = "f".repeat(200);
    for chunk in 0..4 {
        let events = (0..600)
            .map(|i| NewEvent::new(format!("k{}", chunk * 600 + i + 1), &json!(filler)))
            .collect();
        j.append(events, 1).unwrap();
    }
    drop(j);
    let path = dir.join("cr_w.jsonl");
    let bytes = std::fs::read(&path).unwrap();
    let at = starts(&bytes);
    // Damage lines 300 to 2299 (about 500 KiB), and 3 MiB of garbage lines
    // after them.
    let mut damaged = bytes[..at[299]].to_vec();
    for line in bytes[at[299]..at[2299]].split_inclusive(|b| *b == b'\n') {
        let mut l = line.to_vec();
        l[0] = b'~';
        damaged.extend_from_slice(&l);
    }
    for _ in 0..3 * 1024 {
        damaged.extend_from_slice(&[b'g'; 1023]);
        damaged.push(b'\n');
    }
    damaged.extend_from_slice(&bytes[at[2299]..]);
    std::fs::write(&path, &damaged).unwrap();

    let j = Journal::new(&dir, "cr_w");
    let want: Vec<u64> = (1..=299).chain(2300..=2400).chain([2401]).collect();
    assert_eq!(seqs(&served(&j)), want);
    for after in [0, 298, 299, 300, 1000, 2299, 2300, 2350] {
        let got = j.read_file(after, 2).unwrap();
        let first = want.iter().find(|s| **s > after).copied().unwrap();
        assert_eq!(got[0].seq, first, "after {after}");
        assert_eq!(got[0].kind, format!("k{first}"));
    }
    // The index stays sparse.
    let marks = lock(&j.index).as_ref().unwrap().marks.len();
    assert!(marks < 20, "{marks}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_line_damaged_after_a_report_is_reported_then_and_the_old_not_again() {
    let dir = temp("again");
    let mut bytes = written(&dir, "cr_r", 20);
    let path = dir.join("cr_r.jsonl");
    let at = starts(&bytes);
    bytes[at[4]] = b'!';
    std::fs::write(&path, &bytes).unwrap();
    let first = served(&Journal::new(&dir, "cr_r"));
    assert_eq!(report(first.last().unwrap()).skipped[0].after_seq, 4);
    // Line 10 is damaged since.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[at[9]] = b'!';
    std::fs::write(&path, &bytes).unwrap();
    let j = Journal::new(&dir, "cr_r");
    let got = served(&j);
    let reports: Vec<Repaired> = got
        .iter()
        .filter(|l| l.kind == REPAIRED)
        .map(|l| report(l))
        .collect();
    assert_eq!(reports.len(), 2);
    assert_eq!(
        reports[1]
            .skipped
            .iter()
            .map(|r| r.after_seq)
            .collect::<Vec<_>>(),
        [9],
        "only the new damage"
    );
    assert_eq!(seqs(&got).len(), 20 - 2 + 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_line_damaged_while_the_journal_is_open_is_skipped_by_reads() {
    let dir = temp("open");
    let n = RECENT_EVENTS as u64 + 100;
    let bytes = written(&dir, "cr_o", n);
    let path = dir.join("cr_o.jsonl");
    let at = starts(&bytes);
    let j = Journal::new(&dir, "cr_o");
    assert_eq!(j.last_seq().unwrap(), n);
    // Line 30, under the reader's feet (the window does not reach it).
    let f = OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all_at(b"\0\0\0", at[29] as u64).unwrap();
    drop(f);
    assert_eq!(seqs(&j.lines(28, 3).unwrap()), [29, 31, 32]);
    assert_eq!(seqs(&j.lines(29, 1).unwrap()), [31]);
    std::fs::remove_dir_all(&dir).unwrap();
}
