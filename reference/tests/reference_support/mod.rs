//! What both end-to-end tests of the reference halves share: the service's
//! binaries, which cargo names to no test of this crate, and a Core started
//! from them through room-kit.

use std::path::PathBuf;
use std::sync::OnceLock;

use room_kit::Service;
use serde_json::Value;

/// The service's binaries, room-core and room-cli. They are another
/// package's, so cargo names neither to these tests: they are built beside
/// them once (`room_reference::workspace`).
pub fn service_binaries() -> &'static [PathBuf; 2] {
    static BINARIES: OnceLock<[PathBuf; 2]> = OnceLock::new();
    BINARIES.get_or_init(|| {
        room_reference::workspace::binaries(["room-core", "room-cli"])
            .unwrap_or_else(|e| panic!("the service's binaries: {e}"))
    })
}

/// Starts a Core with the test defaults plus `extra`.
pub fn start_service(extra: Value) -> Service {
    Service::start(&service_binaries()[0], extra)
}
