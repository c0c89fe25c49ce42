//! The project copy's status file (`CopyMark::parse`, `Observation::from_file`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| room_core::fuzzing::status_mark(data));
