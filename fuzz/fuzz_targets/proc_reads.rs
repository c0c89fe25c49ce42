//! What a process shows of itself in /proc (its name in stat, its environment).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| room_core::fuzzing::proc_reads(data));
