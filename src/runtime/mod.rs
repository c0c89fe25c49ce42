//! The runtime: threads, timers and the driver that steps the machines and
//! carries out their effects.

pub mod harness_pids;
