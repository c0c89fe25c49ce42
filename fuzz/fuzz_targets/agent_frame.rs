//! The agent socket's request frame (`conn::read_request` over a socket pair).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| room_core::fuzzing::agent_frame(data));
