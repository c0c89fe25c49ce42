//! A snapshot walker's answer as the service reads it (`snapshot::take`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| room_core::fuzzing::snapshot_answer(data));
