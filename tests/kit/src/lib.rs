//! room-kit: the one way the tests, the bench and the demo start room-core
//! as a child process and talk to it.
//!
//! A [`Service`] runs the room-core binary it is given (a test's
//! `env!("CARGO_BIN_EXE_room-core")`, or one found beside the running
//! program) on a temp folder of its own, with the fake harnesses in
//! `fixtures/`, and waits until it listens; its methods call the HTTP API,
//! read what the fake harnesses recorded and run room-cli as a loop's
//! script. Around it: deadlines instead of sleeps ([`wait_until`]), temp
//! folders, skipping what cannot run here (but never in CI), the agent
//! account, the session folder's status file and fixture project, a
//! session's journal and event stream, raw HTTP for hostile clients,
//! /proc reads, the fake website and the fake model server.
//!
//! The kit depends on no crate of the workspace: what it knows of the
//! service is its public face (the binary, the config's JSON, the API).

mod account;
mod builder;
mod calls;
mod ci;
mod cli;
pub mod events;
pub mod fake_model;
mod fake_website;
mod json;
mod net;
pub mod procs;
mod project;
mod records;
mod room_cli;
mod service;
mod sessions;
mod setup;
mod shell;
pub mod sse;
mod temp;
mod time;
pub mod wire;

pub use account::{agent_account, is_root, AGENT};
pub use builder::{Builder, TOKEN};
pub use calls::call;
pub use ci::{absent, in_ci, skip};
pub use cli::{chown_tree, find_cli, real_cli};
pub use fake_model::Model;
pub use fake_website::{FakeWebsite, Recorded};
pub use json::merge;
pub use net::free_port;
pub use project::{
    fixtures_dir, land_project, mark, names, start_body, status_file, PROJECT_NAMES,
};
pub use room_cli::LOOP_ID;
pub use service::Service;
pub use shell::{quote, Out};
pub use temp::{temp_dir, temp_root, TempDir};
pub use time::{now_ns, poll_until, unix_ms, wait_until};
