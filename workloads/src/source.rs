//! The deterministic source. STUB.
