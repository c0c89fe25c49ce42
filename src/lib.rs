//! room-core: the per-sandbox service that starts and supervises coding-agent
//! harnesses for the app and answers the agents' CLI, room-cli.
//!
//! Business rules live in the pure `room-machines` crate; this crate is the
//! runtime that does their I/O. The reference website and app halves and the
//! demo are the `room-reference` crate, which depends on this one.
//!
//! `unsafe` is confined to `sys` (the system calls nix has no safe call
//! for) and `supervise::spawn::raw` (the clone and the child's side of a
//! spawn); every block says why it is sound.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs, unreachable_pub)]

pub mod agent;
pub mod api;
pub(crate) mod attachments;
pub(crate) mod backoff;
pub mod clock;
pub mod config;
pub(crate) mod error;
pub mod files;
/// The fuzz targets' bodies, shared by `fuzz/` and `tests/fuzz_corpora.rs`;
/// neither the library nor the binaries ship them.
#[cfg(feature = "_internal_test_exports")]
pub mod fuzzing;
pub mod harness;
pub mod journal;
pub(crate) mod metrics;
pub(crate) mod nofollow;
pub(crate) mod notify;
pub mod procfs;
pub(crate) mod runtime;
pub mod service;
pub(crate) mod sessions;
pub mod snapshot;
pub mod store;
pub mod supervise;
mod sys;
pub mod website;
