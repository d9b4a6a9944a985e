//! sinkhole: a Jepsen-style chaos and correctness rig for Kafka transactional sinks.
//!
//! The library behind the `sinkhole` binary (`main.rs` parses the command line; `cli/` holds
//! one file per command): the upper layers, which put the crates below together. Bottom to
//! top — a layer uses the ones below it, never one above (`scripts/shape.py` holds the order
//! inside this crate and between crates; `docs/ARCHITECTURE.md` draws both):
//! - [`subject`]: the system under test behind the boundary the nemesis crosses: the rig's
//!   own job (coordinator, workers, checkpoint store) or Flink's `KafkaSink` on a real Flink
//!   cluster;
//! - [`nemesis`]: fault injection, on its own task; [`observer`]: the rig's own looks at the
//!   broker's transactions (premises, lingering transactions);
//! - [`runner`]: the modes of a run — one subject per mode, one nemesis for all;
//! - [`story`]: the causal story of each anomaly of a judged run, from its directory alone
//!   (`sinkhole explain`, the report's first screen);
//! - [`bundle`]: a judged run as one small archive a bug report attaches (`sinkhole bundle`);
//! - [`results`]: summary.json and the table, junit.xml, report.html, and the offline
//!   re-check that rewrites them (`sinkhole check`);
//! - [`run`]: one scenario end to end, every mode on one cluster;
//! - [`matrix`] (scenarios × Kafka versions × seeds, sharded and merged), [`probe`] (what a
//!   broker can do for two-phase commit) and [`bench`] (the wire producer beside Kafka's Java
//!   producer on one cluster);
//! - [`bisect`]: the first Kafka or connector version that shows a scenario's anomaly, seeds
//!   per version, flaky versions named (`sinkhole bisect`);
//! - [`calibrate`]: mutants through the library, the detection matrix (`sinkhole calibrate`);
//!   [`shrink`]: a failing run's schedule made smaller while it fails the same way;
//! - [`explore`]: random schedules over one scenario, run after run, the failures shrunk
//!   and kept as findings (`sinkhole explore`);
//! - [`serve`]: the results browser over HTTP (`sinkhole serve`).
//!
//! Below this crate: `sinkhole-base` (foundation), `sinkhole-install`, `sinkhole-scenario`,
//! `sinkhole-cluster`, `sinkhole-history`, `sinkhole-checker` (counts, latency, premises,
//! verdict), and the worker's side: `sinkhole-model` (the shared vocabulary),
//! `sinkhole-kafka`, `sinkhole-client`, `sinkhole-faults`, `sinkhole-workloads`.
#[cfg(test)]
mod anomaly_tests;
pub mod bench;
pub mod bisect;
pub mod bundle;
pub mod calibrate;
pub mod explore;
pub mod matrix;
pub mod nemesis;
pub mod observer;
pub mod probe;
pub mod results;
pub mod run;
pub mod runner;
pub mod serve;
pub mod shrink;
pub mod story;
pub mod subject;
