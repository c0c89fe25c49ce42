//! The images a prompt carries: checked as the API takes them (check.rs),
//! kept durably until the prompt is done (store.rs), and read back for
//! the harness when the prompt's turn starts.

pub(crate) mod check;
pub(crate) mod store;
