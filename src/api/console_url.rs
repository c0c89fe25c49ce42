//! `room-core --console-url`: the console's address with the token in its
//! fragment (`http://127.0.0.1:7710/#token=…`), which a browser never sends.
//! The service's own log names the address without the token.

use super::auth;
use crate::config::Config;

/// The console's URL for the service `config` describes: its `listen`
/// address (or, for port 0, the one a running service wrote to
/// `<state_dir>/listen`) and its token (the config's, or
/// `<state_dir>/token`). Nothing is written; a sentence says what is
/// missing.
pub fn console_url(config: &Config) -> Result<String, String> {
    let listen_file = config.state_dir.join("listen");
    let port_zero = config
        .listen
        .parse::<std::net::SocketAddr>()
        .is_ok_and(|a| a.port() == 0);
    let addr = if port_zero {
        let written = std::fs::read_to_string(&listen_file).unwrap_or_default();
        let written = written.trim();
        if written.is_empty() {
            return Err(format!(
                "the service listens on port 0 and {} names no address yet: start it first",
                listen_file.display()
            ));
        }
        written.to_string()
    } else {
        config.listen.clone()
    };
    let token = auth::saved(config).ok_or_else(|| {
        format!(
            "no token yet: the config has none and {} is not there (the service generates it on its first start)",
            config.state_dir.join("token").display()
        )
    })?;
    Ok(format!("http://{addr}/#token={}", fragment(&token)))
}

/// `token` escaped for a URL fragment: every byte outside the unreserved
/// set as `%XX`, so the page reads it back with `decodeURIComponent`.
fn fragment(token: &str) -> String {
    let mut out = String::new();
    for b in token.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fragment_escapes_all_but_unreserved_bytes() {
        assert_eq!(fragment("ab-9_.~"), "ab-9_.~");
        assert_eq!(fragment("a b&c=#é"), "a%20b%26c%3D%23%C3%A9");
    }
}
