//! A session's event stream (`/v1/sessions/{id}/stream`) read as it
//! arrives, each event stamped with the realtime clock as it is read.

use std::io::{BufRead, BufReader, Read};
use std::time::Duration;

use serde_json::Value;

use crate::service::Service;
use crate::time::now_ns;

/// One SSE event as read.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    /// `id:` (none for the `end` event).
    pub id: Option<u64>,
    /// `event:`.
    pub event: String,
    /// The `data:` lines joined with LF, parsed.
    pub data: Value,
    /// The realtime clock in ns when its blank line was read.
    pub read_ns: u128,
}

/// What a stream gave: an event, a comment, or the end of the body.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An event.
    Event(SseEvent),
    /// A `:` comment line (without the colon).
    Comment(String),
    /// The response body ended.
    End,
}

/// A session's event stream, read as it arrives.
pub struct Stream {
    reader: BufReader<Box<dyn Read + Send + Sync>>,
    /// The response status.
    pub status: u16,
    /// The response's content type.
    pub content_type: String,
}

impl Stream {
    /// Opens `/v1/sessions/{id}/stream{query}` with an optional
    /// Last-Event-ID; each read waits at most 20 s.
    pub fn open(svc: &Service, id: &str, last_event_id: Option<u64>, query: &str) -> Stream {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(5))
            .timeout_read(Duration::from_secs(20))
            .build();
        let mut req = agent
            .get(&format!("{}/v1/sessions/{id}/stream{query}", svc.base))
            .set("Authorization", &format!("Bearer {}", svc.token()));
        if let Some(n) = last_event_id {
            req = req.set("Last-Event-ID", &n.to_string());
        }
        let resp = match req.call() {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("stream {id}: {e}"),
        };
        let status = resp.status();
        let content_type = resp.content_type().to_string();
        Stream {
            reader: BufReader::new(resp.into_reader()),
            status,
            content_type,
        }
    }

    /// The next event or comment, or the end.
    pub fn next_item(&mut self) -> Item {
        let (mut id, mut event, mut data): (Option<u64>, String, Vec<String>) =
            (None, String::new(), Vec::new());
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => return Item::End,
                Ok(_) => {}
                Err(e) => panic!("reading the stream: {e}"),
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if event.is_empty() && data.is_empty() {
                    continue;
                }
                let data = serde_json::from_str(&data.join("\n")).expect("data is JSON");
                return Item::Event(SseEvent {
                    id,
                    event,
                    data,
                    read_ns: now_ns(),
                });
            }
            if let Some(c) = line.strip_prefix(':') {
                return Item::Comment(c.trim().to_string());
            }
            let (field, value) = line.split_once(": ").unwrap_or((line, ""));
            match field {
                "id" => id = Some(value.parse().expect("a numeric id")),
                "event" => event = value.to_string(),
                "data" => data.push(value.to_string()),
                other => panic!("unexpected SSE field {other:?}"),
            }
        }
    }

    /// The next event (comments skipped); `None` at the end.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        loop {
            match self.next_item() {
                Item::Event(e) => return Some(e),
                Item::Comment(_) => {}
                Item::End => return None,
            }
        }
    }

    /// Every event up to and including `end`, then checks the body ends.
    pub fn until_end(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        while let Some(e) = self.next_event() {
            let end = e.event == "end";
            out.push(e);
            if end {
                assert_eq!(self.next_item(), Item::End, "the body ends after `end`");
                break;
            }
        }
        out
    }

    /// Events until one satisfies `f` (which is returned last).
    pub fn until(&mut self, f: impl Fn(&SseEvent) -> bool) -> Vec<SseEvent> {
        let mut out = Vec::new();
        loop {
            let e = self.next_event().expect("the stream ended first");
            let done = f(&e);
            out.push(e);
            if done {
                return out;
            }
        }
    }
}
