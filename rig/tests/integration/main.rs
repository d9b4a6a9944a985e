//! The rig's integration tests, one test crate with a module per subject (`cli`, `readers_live`,
//! `scenarios_live`, …).
//!
//! One crate, not one per file: each test crate compiles and links the rig's generic code again;
//! 37 crates took 156 CPU-seconds to build, this one takes 70 (2-core machine, debug, no
//! incremental; docs/ARCHITECTURE.md). `make test` (scripts/test-run.py) still runs each module
//! as a process of its own, by its test names, so a module is scheduled, timed and reported as
//! the separate binaries were: the ones whose verdicts judge timing alone on the machine, the
//! others side by side.
//!
//! To run one module by hand: `cargo test -p sinkhole --test integration -- readers_live::`.
//! Run as one process (`cargo test` with no filter), the modules' tests share it: the tests that
//! need the machine to themselves take [`common::serial`], which then holds across modules.
mod common;

mod acl_live;
mod bench_live;
mod calibrate_live;
mod check_offline;
mod checker;
mod cli;
#[cfg(feature = "containers")]
mod containers_faults;
#[cfg(feature = "containers")]
mod containers_live;
#[cfg(feature = "containers")]
mod containers_scenario;
mod exit_codes;
mod explore_live;
mod external_live;
mod external_tls_live;
mod flink_live;
mod install;
mod kafka17754_live;
mod latency_live;
mod local_cluster;
mod matrix;
mod old_results;
mod premises_live;
mod probe;
mod producer_live;
mod proxy_live;
mod readers_live;
mod report;
mod reuse_live;
mod robustness;
mod runner;
mod scenario;
mod scenarios_live;
mod schedule;
mod scram_live;
mod serve;
mod share_live;
mod share_source_live;
mod wire_live;
mod worker_live;
