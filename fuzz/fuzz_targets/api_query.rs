//! The API's query strings (`Query::parse` with each route's parameters).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| room_core::fuzzing::api_query(data));
