//! What the service's parts share: a file of its own, so the front ends
//! that take it need not name the module that starts them.

use std::sync::Arc;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::runtime::harness_pids::HarnessPids;

/// What the service's parts share.
#[derive(Clone)]
pub struct Shared {
    /// The loaded configuration.
    pub config: Arc<Config>,
    /// Which pids are harnesses Core started, for caller classification.
    pub harness_pids: HarnessPids,
    /// The service's metrics (the runtime's and the agent socket's).
    pub metrics: Arc<Metrics>,
}

impl Shared {
    /// What the parts of a service on `config` share, nothing running yet.
    pub fn new(config: Config) -> Shared {
        Shared {
            config: Arc::new(config),
            harness_pids: HarnessPids::default(),
            metrics: Arc::default(),
        }
    }
}
