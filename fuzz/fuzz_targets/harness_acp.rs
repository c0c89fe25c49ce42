//! An ACP agent's stdout lines (the line reader, the session's naming, the journal event, the talker's answers).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| room_core::fuzzing::harness_acp(data));
