//! Sink modes. STUB.
