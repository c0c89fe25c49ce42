//! Reference implementations of the seeds' other halves, so both features
//! run end to end in this repository, and the demo that shows them:
//!
//! - seed 001's website half: a loop store, a script runner that runs each
//!   loop's check script as the agent account with `CLOUDROOM_LOOP` set,
//!   and the `POST /api/core/automation` and `/api/core/launch` routes that
//!   Core forwards room-cli calls to (binary `room-website`,
//!   docs/website.md);
//! - seed 000's app half: when a start sends `project_copy`, and the status
//!   file the app writes around its copy (binary `room-app`, docs/app.md);
//! - the demo (binary `room-demo`), which starts the service's own binaries.
//!
//! **The boundary.** This crate depends on `room-core` and `room-machines`,
//! never the other way, so the compiler keeps the service from using it. It
//! uses the service's crates only for small shared pieces (the atomic file
//! write, the clock, the harness names, the status file's path, the
//! policy's texts) and talks to Core only through its HTTP API and agent
//! socket, as the real website and app do.

pub mod account;
pub mod app;
pub mod app_copy;
pub mod app_routes;
pub mod automation;
pub mod core_client;
pub mod cron;
pub mod demo;
pub mod http;
pub mod launch;
pub mod loops;
pub mod records;
pub mod routes;
pub mod run;
pub mod runner;
pub mod script;
pub mod threads;
pub mod website;
pub mod website_config;
pub mod workspace;

#[cfg(test)]
mod website_tests;
