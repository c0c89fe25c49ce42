//! A fake website: a tiny_http server on 127.0.0.1 (port 0) that records every
//! request's path, JSON body and Authorization header, and answers with a
//! configurable status and body (`{"ok":true}` by default).

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// One request the fake website got.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The request path, e.g. `/api/core/automation`.
    pub path: String,
    /// The method, e.g. `POST`.
    pub method: String,
    /// The body parsed as JSON (`Null` if it was not JSON).
    pub body: serde_json::Value,
    /// The Authorization header, if any.
    pub authorization: Option<String>,
}

/// The running fake website; stops on drop.
pub struct FakeWebsite {
    /// Its base URL, `http://127.0.0.1:PORT`.
    pub url: String,
    server: Arc<tiny_http::Server>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    answer: Arc<Mutex<(u16, String)>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeWebsite {
    /// Starts a fake website answering 200 `{"ok":true}`.
    pub fn start() -> FakeWebsite {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind fake website"));
        let port = server.server_addr().to_ip().expect("an IP address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(Mutex::new((200u16, r#"{"ok":true}"#.to_string())));
        let thread = {
            let (server, requests, answer) = (server.clone(), requests.clone(), answer.clone());
            std::thread::spawn(move || {
                for mut req in server.incoming_requests() {
                    let mut text = String::new();
                    let _ = req.as_reader().read_to_string(&mut text);
                    let authorization = req
                        .headers()
                        .iter()
                        .find(|h| h.field.equiv("Authorization"))
                        .map(|h| h.value.as_str().to_string());
                    requests.lock().unwrap().push(Recorded {
                        path: req.url().to_string(),
                        method: req.method().as_str().to_string(),
                        body: serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
                        authorization,
                    });
                    let (status, body) = answer.lock().unwrap().clone();
                    let header = tiny_http::Header::from_bytes(
                        &b"Content-Type"[..],
                        &b"application/json"[..],
                    )
                    .unwrap();
                    let _ = req.respond(
                        tiny_http::Response::from_string(body)
                            .with_status_code(status)
                            .with_header(header),
                    );
                }
            })
        };
        FakeWebsite {
            url: format!("http://127.0.0.1:{port}"),
            server,
            requests,
            answer,
            thread: Some(thread),
        }
    }

    /// Answers every later request with `status` and `body`.
    pub fn answer(&self, status: u16, body: &str) {
        *self.answer.lock().unwrap() = (status, body.to_string());
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Every request so far, as (path, body).
    pub fn calls(&self) -> Vec<(String, serde_json::Value)> {
        self.requests()
            .into_iter()
            .map(|r| (r.path, r.body))
            .collect()
    }
}

impl Drop for FakeWebsite {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
