//! Skipping what cannot run here, except in CI, which must run everything.

/// Whether this run is CI's (`.ci/run` exports `ROOM_CORE_CI=1`).
pub fn in_ci() -> bool {
    std::env::var_os("ROOM_CORE_CI").is_some_and(|v| v == "1")
}

/// Something `test` needs is missing here: outside CI it says why on stderr
/// (and the test returns, passed); in CI it fails.
pub fn skip(test: &str, why: &str) {
    assert!(!in_ci(), "{test}: cannot run in CI: {why}");
    eprintln!("SKIPPED {test}: {why}");
}

/// [`skip`] for a helper that would have given the test what it needs.
pub fn absent<T>(test: &str, why: &str) -> Option<T> {
    skip(test, why);
    None
}
