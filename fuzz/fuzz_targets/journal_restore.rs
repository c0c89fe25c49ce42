//! A session's event journal as restore reads it (scan, pages, append, restore).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| room_core::fuzzing::journal_restore(data));
