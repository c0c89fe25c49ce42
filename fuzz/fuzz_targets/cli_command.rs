//! room-cli's argv, NUL-separated (`Command::parse`, the website request).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| room_core::fuzzing::cli_command(data));
