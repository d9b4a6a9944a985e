//! Helpers for the tests of more than one crate, kept in one place so the tests agree on them.
//! Only ever a `[dev-dependencies]` entry: nothing here is part of the rig. Helpers for the rig's
//! own test binaries alone live in `rig/tests/integration/common`.
//!
//! [`tls`]: a certificate authority and certificates signed by it, made by `openssl` for a test
//! (the wire client's TLS test against a local listener, the rig's against a real broker).
pub mod tls;
