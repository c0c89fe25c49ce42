//! A codex turn's stdout lines (the line reader, the native ID, the journal event).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| room_core::fuzzing::harness_codex(data));
