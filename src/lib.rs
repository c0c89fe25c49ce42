//! room-core: the per-sandbox service that starts and supervises coding-agent
//! harnesses for the app and answers the agents' CLI, room-cli.
//!
//! Business rules live in the pure `room-machines` crate; this crate is the
//! runtime that does their I/O.

pub mod agent;
pub mod api;
pub mod backoff;
pub mod config;
pub mod demo;
pub mod error;
pub mod files;
/// The fuzz targets' bodies, shared by `fuzz/` and `tests/fuzz_corpora.rs`.
pub mod fuzzing;
pub mod harness;
pub mod journal;
pub mod metrics;
pub mod nofollow;
pub mod notify;
pub mod procfs;
/// Reference implementations of the website and app halves (seeds 000
/// and 001); the service never uses them.
pub mod reference;
pub mod runtime;
pub mod service;
pub mod sessions;
pub mod store;
pub mod supervise;
pub mod website;
