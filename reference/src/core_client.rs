//! A client for Core's HTTP API (docs/api.md), as the website and the app
//! use it: capabilities, session starts and views, messages, workspaces.
//! The token is sent as a bearer and never shown.

use std::time::Duration;

use serde_json::{json, Value};

/// How long one call to Core may take.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// A failed call: Core's status and error sentence, or why it was not reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreError {
    /// Core's HTTP status; `None` when Core was not reached or its answer
    /// was not JSON.
    pub status: Option<u16>,
    /// Core's `error` sentence, or what went wrong.
    pub message: String,
}

impl std::fmt::Display for CoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(s) => write!(f, "Core answered {s}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for CoreError {}

/// Where a workspace's files go, as `GET /v1/workspaces/{id}` says.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Workspace {
    /// The session folder.
    pub folder: std::path::PathBuf,
    /// `<folder>.cloudroom-files`.
    pub status_file: std::path::PathBuf,
}

/// One Core's API.
#[derive(Clone)]
pub struct CoreClient {
    base: String,
    token: String,
    agent: ureq::Agent,
}

impl std::fmt::Debug for CoreClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoreClient")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl CoreClient {
    /// A client for Core at `base` (`http://127.0.0.1:7710`) with its API token.
    pub fn new(base: &str, token: &str) -> CoreClient {
        CoreClient {
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
            agent: ureq::AgentBuilder::new()
                .timeout(TIMEOUT)
                .redirects(0)
                .build(),
        }
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value), CoreError> {
        let url = format!("{}{path}", self.base);
        let req = self
            .agent
            .request(method, &url)
            .set("Authorization", &format!("Bearer {}", self.token));
        let result = match body {
            Some(b) => req
                .set("Content-Type", "application/json")
                .send_string(&b.to_string()),
            None => req.call(),
        };
        let resp = match result {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(ureq::Error::Transport(t)) => {
                return Err(CoreError {
                    status: None,
                    message: format!("Core is not reachable at {}: {t}", self.base),
                })
            }
        };
        let status = resp.status();
        let text = resp.into_string().unwrap_or_default();
        let value: Value = serde_json::from_str(&text).map_err(|_| CoreError {
            status: None,
            message: format!("Core answered {status} with something that is not JSON."),
        })?;
        if !(200..300).contains(&status) {
            let message = value["error"]
                .as_str()
                .map_or_else(|| value.to_string(), str::to_string);
            return Err(CoreError {
                status: Some(status),
                message,
            });
        }
        Ok((status, value))
    }

    /// `GET /v1/capabilities`. A Core without the route (404) has none.
    pub fn capabilities(&self) -> Result<Vec<String>, CoreError> {
        match self.call("GET", "/v1/capabilities", None) {
            Ok((_, v)) => Ok(v["capabilities"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|c| c.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()),
            Err(CoreError {
                status: Some(404), ..
            }) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// `POST /v1/sessions`: the session's view and whether it is new (201)
    /// rather than a retry of an earlier start (200).
    pub fn start(&self, body: &Value) -> Result<(Value, bool), CoreError> {
        let (status, v) = self.call("POST", "/v1/sessions", Some(body))?;
        Ok((v, status == 201))
    }

    /// `GET /v1/sessions/{id}`.
    pub fn session(&self, id: &str) -> Result<Value, CoreError> {
        Ok(self.call("GET", &format!("/v1/sessions/{id}"), None)?.1)
    }

    /// `POST /v1/sessions/{id}/messages`.
    pub fn message(&self, id: &str, prompt: &str) -> Result<Value, CoreError> {
        let body = json!({ "prompt": prompt });
        Ok(self
            .call("POST", &format!("/v1/sessions/{id}/messages"), Some(&body))?
            .1)
    }

    /// `GET /v1/workspaces/{id}`.
    pub fn workspace(&self, id: &str) -> Result<Workspace, CoreError> {
        let (_, v) = self.call("GET", &format!("/v1/workspaces/{id}"), None)?;
        serde_json::from_value(v).map_err(|e| CoreError {
            status: None,
            message: format!("Core's workspace answer is not what the app expects: {e}"),
        })
    }
}
