//! The API's request bodies (`bodies::create`, `message`, `relaunch`, `none`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| room_core::fuzzing::api_bodies(data));
