//! The recorded protocol transcripts of the real CLIs
//! (`fixtures/protocols/<cli>/*.jsonl`, docs/protocols.md), for the
//! protocol modules' tests.

use std::path::PathBuf;

use serde_json::Value;

/// Every transcript of `cli` (`claude`, `codex`) by name, each a list of
/// `{"dir", "ms", "msg"}` lines, sorted by name.
pub(crate) fn transcripts(cli: &str) -> Vec<(String, Vec<Value>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/protocols")
        .join(cli);
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let lines = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        out.push((name, lines));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 10, "the {cli} transcripts are missing");
    out
}

/// What `cli` printed in transcript `name`, line by line.
pub(crate) fn printed(cli: &str, name: &str) -> Vec<String> {
    let all = transcripts(cli);
    let (_, lines) = all.iter().find(|(n, _)| n == name).unwrap();
    lines
        .iter()
        .filter(|e| e["dir"] == "from_cli")
        .map(|e| e["msg"].to_string())
        .collect()
}

/// Every line `cli` printed in its transcripts.
pub(crate) fn recorded_lines(cli: &str) -> Vec<String> {
    transcripts(cli)
        .into_iter()
        .flat_map(|(_, l)| l)
        .filter(|e| e["dir"] == "from_cli")
        .map(|e| e["msg"].to_string())
        .collect()
}

/// Property tests that `$decode` never panics: on any short line, and on
/// each line `$cli` printed with junk put in anywhere.
macro_rules! decode_never_panics {
    ($decode:path, $cli:literal) => {
        mod props {
            use proptest::prelude::*;

            fn lines() -> &'static [String] {
                static LINES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
                LINES.get_or_init(|| $crate::harness::transcripts::recorded_lines($cli))
            }

            proptest! {
                #[test]
                fn decode_never_panics(line in ".{0,400}") {
                    let _ = $decode(&line);
                }

                #[test]
                fn decode_never_panics_on_mutated_recorded_lines(
                    pick in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>(),
                    junk in ".{0,8}"
                ) {
                    let line = pick.get(lines());
                    let mut at = cut.index(line.len() + 1);
                    while !line.is_char_boundary(at) {
                        at -= 1;
                    }
                    let _ = $decode(&format!("{}{}{}", &line[..at], junk, &line[at..]));
                }
            }
        }
    };
}
pub(crate) use decode_never_panics;
