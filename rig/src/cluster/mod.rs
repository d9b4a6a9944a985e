//! Cluster backends: where the Kafka brokers under test come from.
//!
//! `local` runs brokers as JVM processes from a Kafka installation (see
//! [`crate::install`]). The `containers` and `external` backends of DESIGN.md
//! come with later issues and will sit behind the same node-lifecycle actions
//! ([`local::NodeAction`]).
pub mod config;
pub mod local;
pub mod ports;
pub mod state;
