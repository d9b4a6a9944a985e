//! sinkhole: a Jepsen-style chaos and correctness rig for Kafka transactional sinks.
//!
//! The library behind the `sinkhole` binary (`main.rs` parses the command
//! line; `cli/` holds one file per command). Its modules, bottom to top — a
//! layer uses the ones below it, never one above:
//! - foundation: [`utc`] (UTC times), [`procs`] (spawning processes that
//!   never outlive the rig) and [`term`] (whether output may be coloured);
//! - [`install`]: Kafka distributions from Maven Central, cached per version;
//! - [`scenario`]: the YAML scenario format (with [`kafka_names`], the Kafka
//!   API and error names it accepts) and [`schedule`], its seeded random faults;
//! - [`cluster`]: cluster backends and node lifecycle; [`image`]: the
//!   containers backend's image; [`probe`]: what a broker can do for
//!   two-phase commit;
//! - [`runner`]: one mode of a scenario — workers, checkpoint coordinator,
//!   faults, history;
//! - [`checker`]: drains the output and counts anomalies (again offline, from
//!   a stored drain); [`latency`]: latency histograms (history, live tail) and
//!   the interval log;
//! - [`verdict`]: the counts judged against the scenario's expectation;
//! - [`results`]: what a run leaves — summary.json and the table, junit.xml,
//!   report.html — and the offline re-check that rewrites them from a stored
//!   run directory (`sinkhole check`);
//! - [`run`]: one scenario end to end, every mode on one cluster;
//! - [`matrix`]: `sinkhole matrix`, scenarios × Kafka versions × seeds, compared.
pub mod checker;
pub mod cluster;
pub mod image;
pub mod install;
pub mod kafka_names;
pub mod latency;
pub mod matrix;
pub mod probe;
pub mod procs;
pub mod results;
pub mod run;
pub mod runner;
pub mod scenario;
pub mod schedule;
pub mod term;
pub mod utc;
pub mod verdict;

/// The Kafka release the rig uses when none is named.
pub const DEFAULT_KAFKA: &str = "4.4.0";
