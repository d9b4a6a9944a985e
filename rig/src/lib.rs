//! sinkhole: a Jepsen-style chaos and correctness rig for Kafka transactional sinks.
//!
//! The library behind the `sinkhole` binary. Data flows left to right
//! (see docs/ARCHITECTURE.md): installation → cluster backend → probes and workloads →
//! faults → history → checker → verdict. This crate holds the rig side:
//! - [`install`]: Kafka distributions from Maven Central, cached per version;
//! - [`cluster`]: cluster backends and node lifecycle;
//! - [`procs`]: spawning processes that never outlive the rig;
//! - [`probe`]: what a broker can do for two-phase commit;
//! - [`scenario`]: the YAML scenario format;
//! - [`runner`]: one mode of a scenario — workers, checkpoint coordinator, faults, history;
//! - [`checker`]: drains the output and counts anomalies;
//! - [`latency`]: latency histograms (history, live tail) and the interval log.
//! - [`matrix`]: `sinkhole matrix`, scenarios × Kafka versions × seeds, compared;
//! - [`report`]: `report.html`, the run in a browser (inline SVG plots, no script).
pub mod checker;
pub mod cluster;
pub mod image;
pub mod install;
pub mod junit;
pub mod kafka_names;
pub mod latency;
pub mod matrix;
pub mod probe;
pub mod procs;
pub mod report;
pub mod run;
pub mod runner;
pub mod scenario;
pub mod schedule;
pub mod utc;
pub mod verdict;

/// The Kafka release the rig uses when none is named.
pub const DEFAULT_KAFKA: &str = "4.4.0";
