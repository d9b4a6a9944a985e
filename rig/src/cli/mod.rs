//! The commands of the `sinkhole` binary, one file each; `main.rs` parses the
//! command line and dispatches here. What they share: how an error becomes
//! an exit code ([`Failure`]), the log and progress lines on stderr, the
//! Kafka distribution a command runs, and printing a run's summary.
//!
//! Exit codes (README.md, "Exit codes"; [`sinkhole_rig::results::exit`]): 0
//! success, 1 an expectation failed (`run`, `check`, `matrix`, `merge`; for
//! `explore`: a finding; for `replay`: a try that did not reproduce the finding; for
//! `calibrate`: a mutant no scenario caught, or a faithful mode flagged), 2 bad
//! input (arguments, versions, ports, files, shards that do not fit), 3 the
//! rig itself failed (a broker did not start, a request failed, a mode's
//! runner errored), 128 + N after signal N.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::anyhow;
use sinkhole_cluster::config::parse_overrides;
use sinkhole_cluster::local::LocalSpec;
use sinkhole_install::KafkaDist;
use sinkhole_install::DEFAULT_KAFKA;
use sinkhole_rig::results::exit::{self, Policy};
use sinkhole_rig::results::summary::Summary;
use sinkhole_rig::run::RunError;

use args::{ClusterShape, KafkaSel};

pub mod args;
pub mod bench_checker;
pub mod bench_producers;
pub mod bisect;
pub mod bundle;
pub mod calibrate;
pub mod check;
pub mod cluster;
pub mod explain;
pub mod explore;
pub mod image;
pub mod matrix;
pub mod merge;
pub mod probe;
pub mod reap_containers;
pub mod replay;
pub mod report;
pub mod run;
pub mod schedule;
pub mod serve;
pub mod setup;
pub mod shrink;
pub mod validate;
pub mod worker;

/// An error and whose it is: the user's input (exit 2), the rig's own work
/// (exit 3), or a judgement the command reached (its exit code, 1 or 3).
pub enum Failure {
    BadInput(anyhow::Error),
    Failed(anyhow::Error),
    Judged { code: u8, message: String },
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::Failed(e.into())
    }
}

pub fn bad(e: impl Into<anyhow::Error>) -> Failure {
    Failure::BadInput(e.into())
}

/// A run's or a matrix's error, classified the same way.
pub fn run_failure(e: RunError) -> Failure {
    match e {
        RunError::BadInput(e) => bad(e),
        RunError::Failed(e) => Failure::Failed(e),
    }
}

/// A command's exit code from its verdicts (0, 1 or 3 by
/// [`sinkhole_rig::results::exit`]; `what` names the unit, "mode" or
/// "cell"), as `Ok`/`Err`.
pub fn judged(code: u8, policy: Policy, what: &str) -> Result<(), Failure> {
    if code == exit::OK {
        Ok(())
    } else {
        Err(Failure::Judged { code, message: exit::explain(code, policy, what) })
    }
}

/// A matrix's (or a merge's) exit code, explained by the matrix itself
/// (`--fail-on-flaky` has its own reason).
pub fn judged_matrix(m: &sinkhole_rig::matrix::Matrix) -> Result<(), Failure> {
    if m.exit_code == exit::OK {
        Ok(())
    } else {
        Err(Failure::Judged { code: m.exit_code, message: m.explain_exit() })
    }
}

/// Prints the error of a command, if any, and its exit code. After a
/// SIGINT/SIGTERM/SIGHUP the signal teardown ends the process instead (exit
/// 128+signal): what the command saw then is the teardown killing its children.
pub fn exit(r: Result<(), Failure>) -> ExitCode {
    sinkhole_base::procs::wait_for_teardown();
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::BadInput(e)) => {
            eprintln!("sinkhole: error: {e:#}");
            ExitCode::from(exit::BAD_INPUT)
        }
        Err(Failure::Failed(e)) => {
            eprintln!("sinkhole: error: {e:#}");
            ExitCode::from(exit::RIG_FAILED)
        }
        Err(Failure::Judged { code, message }) => {
            eprintln!("sinkhole: {message}");
            ExitCode::from(code)
        }
    }
}

/// Log lines on stderr (-v info, -vv debug; RUST_LOG overrides), coloured
/// only for a terminal and without NO_COLOR ([`sinkhole_base::term`]): workers
/// run this binary too, and their stderr is a log file. RUST_LOG takes
/// `target=level` directives (`info,sinkhole_client=debug`), without span or
/// field filters: those need a regex engine the binary does not carry.
///
/// On a person's console (`console`: every command but `worker`) librdkafka's own lines stay
/// out unless -v asks: its clients in the rig's process (the live readers, the output's read)
/// report every broker a fault took down as an error ("AllBrokersDown", "Connection reset by
/// peer"), dozens a second, which is the fault doing its work, not news; the run's verdict and
/// log say what came of it. A worker's stderr is its log file, and keeps them.
pub fn init_logging(verbose: u8, console: bool) {
    use tracing_subscriber::{filter::Targets, fmt, prelude::*};
    let default = match (verbose, console) {
        (0, true) => "warn,librdkafka=off,rdkafka=off",
        (0, false) => "warn",
        (1, _) => "info,sinkhole=info",
        _ => "debug",
    };
    let from_env = std::env::var("RUST_LOG").ok().filter(|v| !v.trim().is_empty());
    let targets = match from_env.as_deref().map(str::parse::<Targets>) {
        Some(Ok(t)) => t,
        Some(Err(e)) => {
            eprintln!(
                "sinkhole: RUST_LOG ignored ({e}): give target=level directives, e.g. info,sinkhole_client=debug"
            );
            default.parse().unwrap_or_default()
        }
        None => default.parse().unwrap_or_default(),
    };
    tracing_subscriber::registry()
        .with(fmt::layer().with_writer(std::io::stderr).with_ansi(sinkhole_base::term::stderr_colour()))
        .with(targets)
        .init();
}

/// A progress line on stderr (stdout is for the result, e.g. `--json`).
pub fn progress(line: &str) {
    eprintln!("sinkhole: {line}");
}

/// Whether an installation error is the user's input (unknown version, bad
/// KAFKA_HOME) or the environment (no java, no network).
pub fn install_failure(e: sinkhole_install::InstallError) -> Failure {
    if e.is_bad_input() {
        bad(e)
    } else {
        Failure::Failed(e.into())
    }
}

/// Resolves the distribution to run: KAFKA_HOME wins, else the version
/// (installed on demand).
pub fn dist_for(sel: &KafkaSel) -> Result<KafkaDist, Failure> {
    if let Some(home) = &sel.kafka_home {
        return sinkhole_install::resolve(None, Some(home)).map_err(install_failure);
    }
    let v = sel.kafka.clone().unwrap_or_else(|| DEFAULT_KAFKA.to_string());
    let v = sinkhole_install::parse_versions(&v).map_err(bad)?;
    if v.len() != 1 {
        return Err(bad(anyhow!("--kafka takes one version here, got {}", v.join(","))));
    }
    sinkhole_install::ensure(&v[0], &mut |l| progress(l)).map_err(install_failure)
}

/// A local cluster's spec from the command line, its ports checked before
/// any JVM starts.
pub fn spec_from(shape: &ClusterShape, dist: KafkaDist, dir: PathBuf) -> Result<LocalSpec, Failure> {
    if !matches!(shape.nodes, 1 | 3 | 5) {
        return Err(bad(anyhow!("--nodes {}: use 1, 3 or 5 KRaft nodes", shape.nodes)));
    }
    let mut spec = LocalSpec::new(dist, shape.nodes, dir);
    spec.broker_config = parse_overrides(&shape.broker_config).map_err(bad)?;
    spec.base_port = shape.base_port;
    spec.heap = shape.heap.clone();
    spec.jit = shape.jit;
    spec.ready_timeout = Duration::from_secs(shape.ready_timeout);
    if let Some(p) = shape.base_port {
        // Occupied ports are the user's input: check before any JVM starts.
        sinkhole_cluster::ports::allocate(shape.nodes, Some(p)).map_err(bad)?;
    }
    Ok(spec)
}

/// A run's summary on stdout: JSON, or the table, the latency lines and
/// where the results are (`sinkhole run`, `sinkhole check`).
pub fn print_summary(s: &Summary, json: bool) -> Result<(), Failure> {
    if json {
        print!("{}", sinkhole_base::provenance::to_json(s)?);
    } else {
        print!("{}", sinkhole_rig::results::summary::render_text(s));
    }
    Ok(())
}
