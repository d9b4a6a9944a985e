//! The checker. STUB.
