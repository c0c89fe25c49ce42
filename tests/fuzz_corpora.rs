//! Replays every fuzz target's corpus (`fuzz/corpus/<target>/`) through the
//! target's body (`room_core::fuzzing`) on stable, so the seeds and every
//! crash the fuzzer found and was fixed stay passing in `cargo test`
//! (docs/fuzzing.md). Also checks that the targets, their corpus folders
//! and `fuzz/Cargo.toml` name the same set.

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use room_core::fuzzing::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// Runs every file of `target`'s corpus through its body; fails naming the
/// files that panicked (each panic's message is printed above).
fn replay(target: &str) {
    let (_, body) = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .unwrap_or_else(|| panic!("no fuzz target {target}"));
    let dir = fuzz_dir().join("corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a corpus entry").path())
        .collect();
    files.sort();
    assert!(files.len() >= 8, "{target}: {} seeds", files.len());
    let started = Instant::now();
    let failed: Vec<String> = files
        .iter()
        .filter(|file| {
            let data = std::fs::read(file).expect("a corpus file");
            catch_unwind(AssertUnwindSafe(|| body(&data))).is_err()
        })
        .map(|file| file.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(failed, Vec::<String>::new(), "{target}: these inputs panic");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{target}: {} inputs took {:?}",
        files.len(),
        started.elapsed()
    );
}

#[test]
fn status_mark_corpus() {
    replay("status_mark");
}

#[test]
fn cli_command_corpus() {
    replay("cli_command");
}

#[test]
fn api_bodies_corpus() {
    replay("api_bodies");
}

#[test]
fn api_query_corpus() {
    replay("api_query");
}

#[test]
fn harness_claude_corpus() {
    replay("harness_claude");
}

#[test]
fn harness_codex_corpus() {
    replay("harness_codex");
}

#[test]
fn harness_acp_corpus() {
    replay("harness_acp");
}

#[test]
fn agent_frame_corpus() {
    replay("agent_frame");
}

#[test]
fn snapshot_answer_corpus() {
    replay("snapshot_answer");
}

#[test]
fn journal_restore_corpus() {
    replay("journal_restore");
}

#[test]
fn proc_reads_corpus() {
    replay("proc_reads");
}

/// Names in a folder, without the extension given.
fn names(dir: &Path, strip: &str) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .map(|n| n.strip_suffix(strip).unwrap_or(&n).to_string())
        .collect()
}

#[test]
fn every_target_has_a_corpus_a_fuzz_target_and_a_replay() {
    let targets: BTreeSet<String> = TARGETS.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(names(&fuzz_dir().join("corpus"), ""), targets);
    assert_eq!(names(&fuzz_dir().join("fuzz_targets"), ".rs"), targets);
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    let bins: BTreeSet<String> = manifest
        .lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .filter_map(|l| l.strip_suffix('"'))
        .filter(|n| *n != "room-core-fuzz")
        .map(str::to_string)
        .collect();
    assert_eq!(bins, targets, "fuzz/Cargo.toml's [[bin]] names");
    let replays = std::fs::read_to_string(file!()).unwrap();
    for t in &targets {
        assert!(
            replays.contains(&format!("fn {t}_corpus()")),
            "no replay test for {t}"
        );
    }
    for t in &targets {
        let body =
            std::fs::read_to_string(fuzz_dir().join(format!("fuzz_targets/{t}.rs"))).unwrap();
        assert!(
            body.contains(&format!("room_core::fuzzing::{t}(data)")),
            "fuzz_targets/{t}.rs calls another body"
        );
    }
}
