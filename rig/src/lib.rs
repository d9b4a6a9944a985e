//! sinkhole: a Jepsen-style chaos and correctness rig for Kafka transactional sinks.
//!
//! The library behind the `sinkhole` binary (`main.rs` parses the command
//! line; `cli/` holds one file per command). Its modules, bottom to top — a
//! layer uses the ones below it, never one above (`scripts/check-layers.sh`
//! holds the order; `docs/ARCHITECTURE.md` draws it):
//! - foundation: [`utc`] (UTC times), [`procs`] (spawning processes that
//!   never outlive the rig), [`term`] (whether output may be coloured) and
//!   [`provenance`] (the schema version, rig version and commit every JSON
//!   output carries);
//! - [`install`]: Kafka distributions from Maven Central, cached per version;
//! - [`scenario`]: the YAML scenario format, its fault kinds and seeded schedules;
//! - [`cluster`]: the backend trait and its node types; local JVMs, containers;
//! - [`history`]: `history.jsonl` (one writer, one reader) and the typed
//!   records of what faults did and how the job ended;
//! - [`subject`]: the system under test behind the boundary the nemesis
//!   crosses; today the rig's own job (coordinator, workers, checkpoint store);
//! - [`nemesis`]: fault injection, on its own task; [`observer`]: the rig's
//!   own looks at the broker's transactions (premises, lingering transactions);
//! - [`runner`]: one mode — the subject and the nemesis side by side;
//! - [`latency`], [`checker`]: latency histograms; the output drained and
//!   counted against what the source wrote;
//! - [`premise`]: whether the effects an expectation rests on happened;
//! - [`verdict`]: the counts judged against the scenario's expectation;
//! - [`results`]: summary.json and the table, junit.xml, report.html, and
//!   the offline re-check that rewrites them (`sinkhole check`);
//! - [`run`]: one scenario end to end, every mode on one cluster;
//! - [`matrix`] (scenarios × Kafka versions × seeds, sharded and merged)
//!   and [`probe`] (what a broker can do for two-phase commit);
//! - [`calibrate`]: mutants through the library, the detection matrix (`sinkhole calibrate`);
//! - [`shrink`]: a failing run's schedule made smaller while it fails the same way (`sinkhole shrink`);
//! - [`serve`]: the results browser over HTTP (`sinkhole serve`).
pub mod calibrate;
pub mod checker;
pub mod cluster;
pub mod history;
pub mod install;
pub mod latency;
pub mod matrix;
pub mod nemesis;
pub mod observer;
pub mod premise;
pub mod probe;
pub mod procs;
pub mod provenance;
pub mod results;
pub mod run;
pub mod runner;
pub mod scenario;
pub mod serve;
pub mod shrink;
pub mod subject;
pub mod term;
pub mod utc;
pub mod verdict;

/// The Kafka release the rig uses when none is named.
pub const DEFAULT_KAFKA: &str = "4.4.0";
