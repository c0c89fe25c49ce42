//! The client for the website API (ureq): `POST {base}/api/core/{endpoint}`
//! with a JSON body, signed with `Config::website_token` when set. The token
//! is never logged. What room-cli then shows is an [`Answer`].

use std::time::Duration;

use room_machines::Request;

/// How long one website call may take, all of it (connect, send, answer),
/// counted for each call on its own. A top-level spawn may wake a sandbox,
/// which takes a while; Core finishes the call even if room-cli is gone.
/// The call holds only its own agent-socket connection meanwhile.
pub const TIMEOUT: Duration = Duration::from_secs(180);

/// How long connecting to the website may take (within [`TIMEOUT`]).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest website answer read (what room-cli prints).
pub const MAX_ANSWER: u64 = 4 << 20;

/// What room-cli prints and exits with; the agent socket's answer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Answer {
    /// room-cli's exit status.
    pub exit: i32,
    /// What room-cli prints on stdout.
    #[serde(default)]
    pub stdout: String,
    /// What room-cli prints on stderr.
    #[serde(default)]
    pub stderr: String,
}

impl Answer {
    /// Exit 0 with `stdout`.
    pub fn ok(stdout: impl Into<String>) -> Answer {
        Answer {
            exit: 0,
            stdout: line(stdout.into()),
            stderr: String::new(),
        }
    }

    /// Exit `exit` with `stderr`.
    pub fn fail(exit: i32, stderr: impl Into<String>) -> Answer {
        Answer {
            exit,
            stdout: String::new(),
            stderr: line(stderr.into()),
        }
    }
}

fn line(mut s: String) -> String {
    if !s.is_empty() && !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// The message when Core has no website to forward to. Only the service's
/// config and environment name the website, so the caller cannot fix it.
pub const NO_WEBSITE: &str = "Core has no website configured, so it cannot forward this command. Core's operator must set one (website_url in Core's config, or CLOUDROOM_API_URL in Core's own environment); room-cli's environment does not count.";

/// The website client.
#[derive(Clone)]
pub struct Website {
    base: Option<String>,
    token: Option<String>,
    agent: ureq::Agent,
}

impl std::fmt::Debug for Website {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Website")
            .field("base", &self.base)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl Website {
    /// A client for `base` (None: no website configured), signing with
    /// `token` when set.
    pub fn new(base: Option<String>, token: Option<String>) -> Website {
        Website {
            base: base.map(|b| b.trim_end_matches('/').to_string()),
            token: token.filter(|t| !t.is_empty()),
            agent: ureq::AgentBuilder::new()
                .timeout(TIMEOUT)
                .timeout_connect(CONNECT_TIMEOUT)
                .redirects(0)
                .build(),
        }
    }

    /// Sends the request and turns the website's answer into room-cli's.
    pub fn send(&self, request: &Request) -> Answer {
        let Some(base) = &self.base else {
            return Answer::fail(1, NO_WEBSITE);
        };
        let url = format!("{base}/api/core/{}", request.endpoint);
        let body = match serde_json::to_string(&request.body) {
            Ok(b) => b,
            Err(e) => return Answer::fail(1, format!("Core could not encode the request: {e}")),
        };
        let mut call = self
            .agent
            .post(&url)
            .set("Content-Type", "application/json");
        if let Some(token) = &self.token {
            call = call.set("Authorization", &format!("Bearer {token}"));
        }
        match call.send_string(&body) {
            Ok(resp) => {
                let status = resp.status();
                match read_answer(resp) {
                    Ok(text) => interpret(status, &text),
                    Err(e) => Answer::fail(
                        1,
                        format!("Core could not read the website's answer (HTTP {status}): {e}"),
                    ),
                }
            }
            Err(ureq::Error::Status(status, resp)) => {
                let text = read_answer(resp).unwrap_or_default();
                interpret(status, &text)
            }
            Err(ureq::Error::Transport(t)) => Answer::fail(
                1,
                format!("Core could not reach the website at {base}: {t}"),
            ),
        }
    }
}

/// The answer's body, at most `MAX_ANSWER` bytes (ureq's `TIMEOUT` bounds
/// the time); a longer one is an error, not a cut JSON.
fn read_answer(resp: ureq::Response) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(resp.into_reader(), MAX_ANSWER + 1),
        &mut bytes,
    )?;
    if bytes.len() as u64 > MAX_ANSWER {
        return Err(std::io::Error::other(format!(
            "it is larger than {} MiB",
            MAX_ANSWER >> 20
        )));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::other("it is not UTF-8"))
}

/// room-cli's answer for the website's HTTP `status` and body `text`: the
/// JSON verbatim on stdout (exit 0), unless it has a top-level `error` field
/// or the status is not a success (exit 1, the error on stderr). A body that
/// is not JSON is exit 1 with a sentence saying so.
pub fn interpret(status: u16, text: &str) -> Answer {
    let value: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(_) => {
            return Answer::fail(
                1,
                format!("The website answered HTTP {status} with something that is not JSON."),
            )
        }
    };
    if let Some(error) = value.get("error") {
        let message = match error {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        return Answer::fail(1, message);
    }
    if !(200..300).contains(&status) {
        return Answer::fail(
            1,
            format!("The website answered HTTP {status}: {}", text.trim()),
        );
    }
    Answer::ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_printed_verbatim_and_a_top_level_error_fails() {
        let a = interpret(200, r#"{"loops": [], "n":1}"#);
        assert_eq!(a, Answer::ok("{\"loops\": [], \"n\":1}\n"));
        let a = interpret(
            409,
            r#"{"error":"Run cloudroom automation from a Cloudroom cloud thread"}"#,
        );
        assert_eq!(a.exit, 1);
        assert_eq!(
            a.stderr,
            "Run cloudroom automation from a Cloudroom cloud thread\n"
        );
        assert_eq!(a.stdout, "");
        // An error field in a 200 is still a failure.
        assert_eq!(interpret(200, r#"{"error":{"x":1}}"#).stderr, "{\"x\":1}\n");
        // A nested error is not top-level.
        assert_eq!(interpret(200, r#"{"a":{"error":1}}"#).exit, 0);
        assert_eq!(interpret(500, "<html>").exit, 1);
        assert_eq!(interpret(503, r#"{"busy":true}"#).exit, 1);
    }

    #[test]
    fn no_website_is_its_own_failure_and_the_token_is_not_shown() {
        let w = Website::new(None, Some("s3cret".into()));
        assert_eq!(
            w.send(&Request {
                endpoint: "automation".into(),
                body: Default::default()
            }),
            Answer::fail(1, NO_WEBSITE)
        );
        assert!(!format!("{w:?}").contains("s3cret"));
    }
}
