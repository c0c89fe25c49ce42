//! Starts the service's parts, waits for SIGTERM or SIGINT, and stops them.

use std::sync::Arc;

use nix::sys::signal::{SigSet, Signal};

use crate::config::Config;
use crate::runtime::harness_pids::HarnessPids;

/// What the service's parts share.
#[derive(Clone)]
pub struct Shared {
    /// The loaded configuration.
    pub config: Arc<Config>,
    /// Which pids are harnesses Core started, for caller classification.
    pub harness_pids: HarnessPids,
}

/// Runs the service until SIGTERM or SIGINT.
pub fn run(config: Config) -> Result<(), Box<dyn std::error::Error>> {
    // Block the stop signals before any thread starts, so every thread
    // inherits the mask and only `wait` below receives them.
    let mut stop_signals = SigSet::empty();
    stop_signals.add(Signal::SIGTERM);
    stop_signals.add(Signal::SIGINT);
    stop_signals.thread_block()?;

    std::fs::create_dir_all(&config.state_dir)?;
    let shared = Shared {
        config: Arc::new(config),
        harness_pids: HarnessPids::default(),
    };
    let agent = crate::agent::start(&shared)?;
    let api = crate::api::start(&shared)?;

    let signal = stop_signals.wait()?;
    log::info!("{signal:?}: stopping");
    api.stop();
    agent.stop();
    Ok(())
}
