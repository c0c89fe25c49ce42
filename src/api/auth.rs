//! The bearer token: from the config, or generated once and kept in
//! `<state_dir>/token` (mode 0600). It is never logged.

use std::os::unix::fs::OpenOptionsExt;

use crate::config::Config;

/// The token the app must send as `Authorization: Bearer <token>`.
pub(super) fn token(config: &Config) -> std::io::Result<String> {
    if let Some(t) = saved(config) {
        return Ok(t);
    }
    let path = config.state_dir.join("token");
    let t = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)?;
    std::io::Write::write_all(&mut f, t.as_bytes())?;
    eprintln!("room-core: generated an API token in {}", path.display());
    Ok(t)
}

/// The token as the config or `<state_dir>/token` has it, if either does
/// (nothing is generated).
pub(super) fn saved(config: &Config) -> Option<String> {
    if let Some(t) = config.token.as_ref().filter(|t| !t.is_empty()) {
        return Some(t.clone());
    }
    let t = std::fs::read_to_string(config.state_dir.join("token")).ok()?;
    Some(t.trim().to_string()).filter(|t| !t.is_empty())
}

/// Whether the request's headers carry the token (compared in constant
/// time). It is checked before anything of the body is read.
pub(super) fn allowed(headers: &hyper::HeaderMap, token: &str) -> bool {
    let Some(value) = headers.get(hyper::header::AUTHORIZATION) else {
        return false;
    };
    let Some(given) = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")) else {
        return false;
    };
    let (a, b) = (given.trim().as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
