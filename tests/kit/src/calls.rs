//! Requests to the service's HTTP API: status and JSON body.

use std::time::Duration;

use serde_json::Value;

use crate::service::Service;

/// A request to `base` with an optional bearer token and JSON body; the
/// status and the body as JSON (as a string when it is not JSON). Each
/// request has a connection of its own and 10 s.
pub fn call(
    base: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
    token: Option<&str>,
) -> (u16, Value) {
    let mut req = ureq::request(method, &format!("{base}{path}")).timeout(Duration::from_secs(10));
    if let Some(t) = token {
        req = req.set("Authorization", &format!("Bearer {t}"));
    }
    let result = match body {
        Some(b) => req.set("Content-Type", "application/json").send_string(b),
        None => req.call(),
    };
    let resp = match result {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    };
    let status = resp.status();
    let text = resp.into_string().unwrap();
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, value)
}

impl Service {
    /// A request with the service's token; status and JSON body.
    pub fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        self.call_with(method, path, body, Some(&self.token()))
    }

    /// A request with an optional token.
    pub fn call_with(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        token: Option<&str>,
    ) -> (u16, Value) {
        call(&self.base, method, path, body, token)
    }

    /// POST with a JSON body.
    pub fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.call("POST", path, Some(&body.to_string()))
    }

    /// GET.
    pub fn get(&self, path: &str) -> (u16, Value) {
        self.call("GET", path, None)
    }
}
