//! Sessions through the API: start one, read its view, await a state.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::project::start_body;
use crate::service::Service;
use crate::time::wait_until;

impl Service {
    /// Starts a session and returns its view (asserting 201).
    pub fn start_session(&self, body: Value) -> Value {
        let (status, v) = self.post("/v1/sessions", body);
        assert_eq!(status, 201, "{v}");
        v
    }

    /// A session's view (asserting 200).
    pub fn session(&self, id: &str) -> Value {
        let (status, v) = self.get(&format!("/v1/sessions/{id}"));
        assert_eq!(status, 200, "{v}");
        v
    }

    /// Waits (10 s at most) until the session's view satisfies `f`.
    pub fn await_session(&self, id: &str, what: &str, f: impl Fn(&Value) -> bool) -> Value {
        wait_until(what, Duration::from_secs(10), || {
            let v = self.session(id);
            f(&v).then_some(v)
        })
    }

    /// A session in `name`'s folder whose first turn (claude) runs for
    /// 30 s: its id, folder and the harness's record, once its state is
    /// `running`.
    pub fn running_session(&self, name: &str) -> (String, PathBuf, Value) {
        let folder = self.folder(name);
        let body = start_body(&folder, "claude", json!({"prompt": "sleep: 30"}));
        let s = self.start_session(body);
        let id = s["id"].as_str().unwrap().to_string();
        let record = self.await_record(&folder, 1, Duration::from_secs(10));
        self.await_session(&id, "running", |v| v["state"] == "running");
        (id, folder, record)
    }
}
