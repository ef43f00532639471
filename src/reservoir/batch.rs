//! Many independent reservoirs stepped together.

/// Placeholder.
pub struct ReservoirBatch;
