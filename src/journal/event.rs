//! A journal's events: one to append ([`NewEvent`]), one journalled
//! ([`Event`]), and one as its line in the file ([`Line`]).

use serde_json::value::RawValue;

use super::servable::{servable, Unservable};

/// One event to append: its kind and its data, already JSON.
#[derive(Debug, Clone)]
pub struct NewEvent {
    /// `harness` for what a harness printed, else room-core's own kind.
    pub kind: String,
    /// The data: a harness event as printed, or room-core's own object.
    pub data: Box<RawValue>,
}

impl NewEvent {
    /// An event whose data is serialised from `data`.
    pub fn new(kind: impl Into<String>, data: &impl serde::Serialize) -> NewEvent {
        let text = serde_json::to_string(data).unwrap_or_else(|_| "null".into());
        NewEvent {
            kind: kind.into(),
            data: RawValue::from_string(text).unwrap_or_else(|_| null()),
        }
    }

    /// One of room-core's own events, a `#[serde(tag = "kind", content =
    /// "data")]` enum such as the session machine's `Event`: its `kind` and
    /// `data` become the line's (`null` data for a variant without fields).
    pub fn tagged(event: &impl serde::Serialize) -> NewEvent {
        #[derive(serde::Deserialize)]
        struct Tagged {
            kind: String,
            data: Option<Box<RawValue>>,
        }
        // Through the text, not a `Value`, so the data's fields keep their
        // order.
        let text = serde_json::to_string(event).unwrap_or_default();
        match serde_json::from_str::<Tagged>(&text) {
            Ok(t) => NewEvent {
                kind: t.kind,
                data: t.data.unwrap_or_else(null),
            },
            Err(_) => NewEvent::new("unknown", &()),
        }
    }

    /// A harness's own event, kept byte for byte as it printed it (without
    /// the whitespace around it); why not when the line is not one JSON
    /// value that every page can serve (servable.rs).
    pub fn harness(line: &str) -> Result<NewEvent, Unservable> {
        Ok(NewEvent {
            kind: "harness".into(),
            data: servable(line.trim())?,
        })
    }
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".into()).expect("null is JSON")
}

/// One journalled event, as stored and served.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Journalled {
    /// Its place in the session's journal, from 1, no gaps.
    pub seq: u64,
    /// Unix ms when it was journalled.
    pub at_ms: u64,
    /// What kind of event.
    pub kind: String,
    /// Its data.
    pub data: Box<RawValue>,
}

/// One journalled event as its line (without the newline): what pages and
/// streams serve, byte for byte as the file holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its seq.
    pub seq: u64,
    /// Its time.
    pub at_ms: u64,
    /// Its kind.
    pub kind: String,
    /// The whole event, `{"seq":…,"at_ms":…,"kind":…,"data":…}`.
    pub json: String,
}

impl Line {
    /// Parses a journal line; `None` when it is not a whole event.
    pub(super) fn parse(bytes: &[u8]) -> Option<Line> {
        let event: Journalled = serde_json::from_slice(bytes).ok()?;
        Some(Line {
            seq: event.seq,
            at_ms: event.at_ms,
            kind: event.kind,
            json: String::from_utf8(bytes.to_vec()).ok()?,
        })
    }
}
