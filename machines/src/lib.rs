//! Pure state machines of room-core.
//!
//! Nothing in this crate reads a clock, a file, an environment variable or a
//! process table, and nothing spawns a thread. Time (`Millis`) and
//! observations come in as inputs; what the machine wants done comes out as
//! effects, and the next deadline it cares about comes out of `poll_timeout`.
//! The runtime in `room-core` does the I/O: it feeds inputs with `handle`,
//! drains `poll_effect` after every call, and re-arms its timer from
//! `poll_timeout`. Because states, inputs and effects are plain serialisable
//! enums, a run can be recorded as JSON and replayed (see `fixtures/timelines`).

#![forbid(unsafe_code)]

pub mod body_keys;
pub mod caller;
pub mod command;
pub mod copy;
pub mod files_wait;
pub mod id;
pub mod launch;
pub mod policy;
pub mod request;
pub mod session;
pub mod time;
pub mod timeline;

pub use time::Millis;

pub use caller::{classify, Caller, EnvView, ProcView};
pub use command::{Command, ParseError, Parsed};
pub use copy::{CopyMark, MarkError, Observation};
pub use id::valid_id;
pub use launch::Launch;
pub use policy::{decide, Decision, Scope};
pub use request::{build as website_request, Body, Request};
pub use session::Session;
