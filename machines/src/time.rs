//! Time as the machines see it.

/// Milliseconds since an epoch the runtime picks; machines only compare and
/// subtract them.
pub type Millis = u64;
