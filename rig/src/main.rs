//! The `sinkhole` command line.
//!
//! Exit codes: 0 success, 1 the work failed (a broker did not start, a
//! request failed), 2 bad input (arguments, versions, ports, files).
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, Context};
use clap::{Args, Parser, Subcommand};
use sinkhole_rig::cli::{self, cluster::ClusterCmd, cluster::ClusterShape, cluster::KafkaSel};
use sinkhole_rig::cluster::local::LocalCluster;
use sinkhole_rig::cluster::state;
use sinkhole_rig::cluster::Cluster;
use sinkhole_rig::install::{self, InstallOutcome};
use sinkhole_rig::{probe, DEFAULT_KAFKA};

#[derive(Parser)]
#[command(name = "sinkhole", version, about = "A Jepsen-style chaos and correctness rig for Kafka transactional sinks")]
struct Cli {
    /// More log output on stderr (-v info, -vv debug). RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Install Kafka versions from Maven Central into the cache (idempotent).
    Setup {
        /// Comma-separated Kafka versions, e.g. 4.4.0,4.0.2.
        #[arg(long, default_value = DEFAULT_KAFKA)]
        kafka: String,
    },
    /// A local cluster that outlives one command.
    #[command(subcommand)]
    Cluster(ClusterCmd),
    /// Report what a broker supports for two-phase commit (KIP-939).
    Probe(ProbeArgs),
    /// Run a scenario: every mode in turn on one local cluster, then check the
    /// output and judge it against the scenario's expectations.
    Run {
        /// The scenario (YAML).
        file: PathBuf,
        /// Run only these modes (repeatable); default: the scenario's.
        #[arg(long = "mode", value_name = "MODE")]
        modes: Vec<String>,
        /// Kafka version instead of the scenario's.
        #[arg(long)]
        kafka: Option<String>,
        /// Seed (default: random, printed so the run can be replayed).
        #[arg(long)]
        seed: Option<u64>,
        /// Where runs write their results.
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
        /// Where the brokers run, instead of the scenario's `cluster.backend`.
        #[arg(long, value_parser = ["local", "containers"])]
        backend: Option<String>,
        /// Container image (containers backend), instead of the scenario's `cluster.image`.
        #[arg(long)]
        image: Option<String>,
    },
    /// Run scenarios × Kafka versions × seeds (one `run` per cell) and compare:
    /// matrix.json, matrix.html, junit.xml and a table of scenario × mode.
    Matrix {
        /// Scenario files or directories (a directory: its *.yaml minus the
        /// names in its matrix-exclude.txt). Default: scenarios/.
        inputs: Vec<PathBuf>,
        /// Only these modes, comma-separated (default: each scenario's).
        #[arg(long, value_delimiter = ',')]
        modes: Vec<String>,
        /// Kafka versions, comma-separated (default: each scenario's).
        #[arg(long, value_delimiter = ',')]
        kafka: Vec<String>,
        /// Seeds, comma-separated: every scenario and version runs with each.
        #[arg(long, value_delimiter = ',', conflicts_with_all = ["seed_count", "seed"])]
        seeds: Vec<u64>,
        /// Run N seeds: --seed, --seed + 1, … (default 1).
        #[arg(long)]
        seed_count: Option<u32>,
        /// The first seed (default: random, printed and kept in matrix.json).
        #[arg(long)]
        seed: Option<u64>,
        /// Where the runs write their results.
        #[arg(long, default_value = "results")]
        results: PathBuf,
        /// The matrix directory (default: <results>/matrix-<timestamp>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print matrix.json on stdout instead of the table.
        #[arg(long)]
        json: bool,
        /// Stop after the first cell with a failure.
        #[arg(long)]
        fail_fast: bool,
    },
    /// Re-run the checker offline on a stored run (a results/<run-id>
    /// directory, or one mode directory in it): rewrites verdict.json,
    /// summary.json and junit.xml and prints the table. No cluster needed.
    Check {
        /// The run's results directory.
        dir: PathBuf,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Render report.html again for a stored run (results/<run-id>), from
    /// its verdicts and histories: after an upgrade of the rig, or to read
    /// an old run with the current report. No cluster needed.
    Report {
        /// The run's results directory.
        dir: PathBuf,
    },
    /// Check scenario files without running them: every problem as
    /// `file:line:column: field: message` with the line (exit 0 when all are
    /// valid, 2 otherwise). The format: docs/SCENARIOS.md.
    Validate {
        /// Scenario files (YAML).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print one JSON report per file.
        #[arg(long)]
        json: bool,
    },
    /// Print a scenario's resolved fault schedule: its explicit faults, then
    /// the faults its random `schedule` generates for the seed.
    Schedule {
        /// The scenario (YAML).
        file: PathBuf,
        /// Seed (default: the schedule's own seed, else random and printed).
        #[arg(long)]
        seed: Option<u64>,
        /// Print the schedule as JSON (what `schedule.json` in a run holds).
        #[arg(long)]
        json: bool,
    },
    /// Benchmark the checker on synthetic records (records/s, peak memory).
    #[command(hide = true)]
    BenchChecker {
        #[arg(long, default_value_t = 10_000_000)]
        records: u64,
        #[arg(long, default_value_t = 4)]
        subtasks: u32,
        #[arg(long)]
        json: bool,
    },
    /// Container images for the containers backend.
    #[command(subcommand)]
    Image(ImageCmd),
    /// Removes a run's containers and network once stdin closes (started by the containers
    /// backend, not by hand: it outlives a rig killed by a signal).
    #[command(hide = true)]
    ReapContainers {
        #[arg(long)]
        run: String,
    },
    /// One subtask of a job (started by the runner, not by hand).
    #[command(hide = true)]
    Worker {
        /// The worker's configuration (JSON, a `WorkerConfig`).
        #[arg(long)]
        config: PathBuf,
        /// The coordinator's control socket.
        #[arg(long)]
        control: PathBuf,
    },
}

#[derive(Subcommand)]
enum ImageCmd {
    /// Build a Kafka image with no registry: the cached Kafka jars, the host's Java runtime
    /// (jlinked when possible) and its shared libraries, imported into the engine as
    /// `localhost/sinkhole-kafka:<version>` (the containers backend's default image).
    Build {
        /// Kafka version (installed into the cache if missing).
        #[arg(long, default_value = DEFAULT_KAFKA)]
        kafka: String,
        /// Tag instead of localhost/sinkhole-kafka:<version>.
        #[arg(long)]
        tag: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct ProbeArgs {
    /// Start a throwaway local cluster of this Kafka version (with 2PC and unstable APIs enabled).
    #[arg(long, conflicts_with = "bootstrap")]
    kafka: Option<String>,
    #[arg(long, env = "KAFKA_HOME", conflicts_with = "bootstrap")]
    kafka_home: Option<PathBuf>,
    /// Probe a running cluster instead (host:port[,host:port...]).
    #[arg(long)]
    bootstrap: Option<String>,
    /// Nodes of the throwaway cluster.
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// Extra broker settings for the throwaway cluster.
    #[arg(long = "broker-config", value_name = "KEY=VALUE")]
    broker_config: Vec<String>,
    /// Client transaction timeout (ms) for the timeout-survival check.
    #[arg(long, default_value_t = 1000)]
    short_timeout_ms: i32,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// An error and whether it was the user's input (exit 2) or the work (exit 1).
enum Failure {
    BadInput(anyhow::Error),
    Failed(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::Failed(e.into())
    }
}

fn bad(e: impl Into<anyhow::Error>) -> Failure {
    Failure::BadInput(e.into())
}

/// A library command's error as this binary's exit code.
fn run_failure(e: sinkhole_rig::run::RunError) -> Failure {
    match e {
        sinkhole_rig::run::RunError::BadInput(e) => Failure::BadInput(e),
        sinkhole_rig::run::RunError::Failed(e) => Failure::Failed(e),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // SAFETY: only this thread runs yet — the signal thread, the async runtime and every child
    // process start below. testcontainers reads the engine's address from DOCKER_HOST alone.
    unsafe { sinkhole_rig::cluster::containers::export_docker_host() };
    let filter = match cli.verbose {
        0 => "warn",
        1 => "info,sinkhole=info",
        _ => "debug",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter)),
        )
        .with_writer(std::io::stderr)
        // Workers log into files: colour codes only for a terminal.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    if let Err(e) = sinkhole_rig::procs::install_signal_teardown() {
        eprintln!("sinkhole: cannot install the signal handlers: {e}");
        return ExitCode::from(1);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sinkhole: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(dispatch(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::BadInput(e)) => {
            eprintln!("sinkhole: error: {e:#}");
            ExitCode::from(2)
        }
        Err(Failure::Failed(e)) => {
            eprintln!("sinkhole: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

async fn dispatch(cmd: Command) -> Result<(), Failure> {
    match cmd {
        Command::Setup { kafka } => setup(&kafka),
        Command::Cluster(c) => cli::cluster::run(c).await.map_err(run_failure),
        Command::Probe(p) => probe_cmd(p).await,
        Command::Run { file, modes, kafka, seed, results, json, backend, image } => {
            let args = sinkhole_rig::run::RunArgs { file, modes, kafka, seed, results, json };
            let backend = backend.map(|b| match b.as_str() {
                "containers" => sinkhole_rig::scenario::Backend::Containers,
                _ => sinkhole_rig::scenario::Backend::Local,
            });
            match sinkhole_rig::run::run_on(args, backend, image).await {
                Ok(0) => Ok(()),
                Ok(_) => Err(Failure::Failed(anyhow!("at least one mode did not meet its expectation"))),
                Err(sinkhole_rig::run::RunError::BadInput(e)) => Err(bad(e)),
                Err(sinkhole_rig::run::RunError::Failed(e)) => Err(Failure::Failed(e)),
            }
        }
        Command::Matrix { inputs, modes, kafka, seeds, seed_count, seed, results, out, json, fail_fast } => {
            use sinkhole_rig::matrix::{MatrixArgs, Seeds};
            let seeds = if seeds.is_empty() {
                Seeds::Count { n: seed_count.unwrap_or(1), base: seed }
            } else {
                Seeds::List(seeds)
            };
            let args = MatrixArgs { inputs, modes, kafka, seeds, results, out, json, fail_fast };
            match sinkhole_rig::matrix::run(args).await {
                Ok(0) => Ok(()),
                Ok(_) => Err(Failure::Failed(anyhow!("at least one cell failed (see the table)"))),
                Err(sinkhole_rig::run::RunError::BadInput(e)) => Err(bad(e)),
                Err(sinkhole_rig::run::RunError::Failed(e)) => Err(Failure::Failed(e)),
            }
        }
        Command::Check { dir, json } => match sinkhole_rig::checker::offline::run(&dir, json) {
            Ok(0) => Ok(()),
            Ok(_) => Err(Failure::Failed(anyhow!("at least one mode did not meet its expectation"))),
            Err(sinkhole_rig::run::RunError::BadInput(e)) => Err(bad(e)),
            Err(sinkhole_rig::run::RunError::Failed(e)) => Err(Failure::Failed(e)),
        },
        Command::Report { dir } => {
            if !dir.join("summary.json").exists() {
                return Err(bad(anyhow!("{}: not a run directory (no summary.json)", dir.display())));
            }
            let path = sinkhole_rig::report::write_report(&dir).map_err(Failure::Failed)?;
            println!("{}", path.display());
            Ok(())
        }
        Command::Validate { files, json } => {
            let (out, ok) = sinkhole_rig::schedule::validate_files(&files, json);
            print!("{out}");
            if ok {
                Ok(())
            } else {
                Err(bad(anyhow!("invalid scenario file(s)")))
            }
        }
        Command::Schedule { file, seed, json } => {
            print!("{}", sinkhole_rig::schedule::schedule_file(&file, seed, json).map_err(|e| bad(anyhow!(e)))?);
            Ok(())
        }
        Command::BenchChecker { records, subtasks, json } => {
            let r = sinkhole_rig::checker::bench::run(records, subtasks);
            if json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                let mem = match (r.peak_bytes, r.bytes_per_record) {
                    (Some(b), Some(per)) => format!("{:.1} MiB peak ({per:.2} bytes/record)", b as f64 / 1048576.0),
                    _ => "peak memory unknown (no /proc)".to_string(),
                };
                println!(
                    "checker: {} records ({} subtasks, {} transactions) in {:.3} s: {:.2} M records/s, {mem}",
                    r.records,
                    r.subtasks,
                    r.transactions,
                    r.check_seconds,
                    r.records_per_sec / 1e6
                );
                println!(
                    "found: {} lost, {} duplicated, {} nonmonotonic (injected: one lost and one replayed transaction)",
                    r.counts.lost, r.counts.duplicated, r.counts.nonmonotonic
                );
            }
            Ok(())
        }
        Command::Image(ImageCmd::Build { kafka, tag, json }) => image_build(&kafka, tag, json),
        Command::ReapContainers { run } => {
            let (c, n) = sinkhole_rig::cluster::containers::reap_when_stdin_closes(&run).await?;
            eprintln!("sinkhole reaper: run {run}: removed {c} container(s), {n} network(s)");
            Ok(())
        }
        Command::Worker { config, control } => {
            let text = std::fs::read_to_string(&config).with_context(|| format!("reading {}", config.display()))?;
            let cfg: sinkhole_workloads::model::WorkerConfig =
                serde_json::from_str(&text).with_context(|| format!("parsing {}", config.display()))?;
            sinkhole_workloads::worker::run(cfg, &control).await?;
            Ok(())
        }
    }
}

fn progress(line: &str) {
    eprintln!("sinkhole: {line}");
}

fn image_build(kafka: &str, tag: Option<String>, json: bool) -> Result<(), Failure> {
    let v = install::parse_versions(kafka).map_err(bad)?;
    if v.len() != 1 {
        return Err(bad(anyhow!("--kafka takes one version here, got {}", v.join(","))));
    }
    let dist = install::ensure(&v[0], &mut |l| progress(l)).map_err(install_failure)?;
    let tag = tag.unwrap_or_else(|| sinkhole_rig::cluster::containers::image::default_tag(&v[0]));
    let work = std::env::temp_dir().join(format!("sinkhole-image-{}", std::process::id()));
    let host = sinkhole_rig::cluster::containers::docker_host();
    let r = sinkhole_rig::cluster::containers::image::build(&dist, &tag, &work, host.as_deref(), &mut |l| progress(l))
        .context("building the image")?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        println!(
            "image {}: Kafka {}, JRE by {}, {:.0} MiB root filesystem, built and imported ({}) in {:.1} s",
            r.tag,
            r.kafka,
            r.jre,
            r.rootfs_bytes as f64 / 1048576.0,
            r.imported_with,
            r.elapsed_ms as f64 / 1000.0
        );
    }
    Ok(())
}

fn setup(list: &str) -> Result<(), Failure> {
    let versions = install::parse_versions(list).map_err(bad)?;
    for v in versions {
        match install::install(&v, &mut |l| progress(l)) {
            Ok(InstallOutcome::Installed { dist, jars, elapsed }) => println!(
                "Kafka {v}: installed {jars} jars in {:.1} s at {}",
                elapsed.as_secs_f64(),
                dist.home.display()
            ),
            Ok(InstallOutcome::AlreadyInstalled { dist }) => {
                println!("Kafka {v}: already installed at {} (nothing to do)", dist.home.display())
            }
            Err(e) => return Err(install_failure(e)),
        }
    }
    Ok(())
}

/// Whether an installation error is the user's input (unknown version, bad
/// KAFKA_HOME) or the environment (no java, no network).
fn install_failure(e: install::InstallError) -> Failure {
    if e.is_bad_input() {
        bad(e)
    } else {
        Failure::Failed(e.into())
    }
}

/// A probe killed by a signal cannot remove its throwaway cluster's directory
/// (its brokers die with it; their data stays). The next probe removes the
/// directories of probes whose process is gone.
fn sweep_dead_probe_dirs() {
    let Ok(entries) = std::fs::read_dir(state::clusters_root()) else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("probe-")).and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        if sinkhole_faults::process::ProcessId::of(pid).is_none() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

async fn probe_cmd(p: ProbeArgs) -> Result<(), Failure> {
    let mut opts = probe::ProbeOptions { short_timeout_ms: p.short_timeout_ms, progress: true, ..Default::default() };
    // The throwaway cluster lives until the end of this function (Drop kills it).
    let mut _cluster = None;
    if let Some(b) = &p.bootstrap {
        opts.bootstrap = b.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
        if opts.bootstrap.is_empty() || opts.bootstrap.iter().any(|s| !s.contains(':')) {
            return Err(bad(anyhow!("--bootstrap '{b}': expected host:port[,host:port...]")));
        }
    } else {
        let dist = cli::cluster::dist_for(&KafkaSel { kafka: p.kafka.clone(), kafka_home: p.kafka_home.clone() })
            .map_err(run_failure)?;
        sweep_dead_probe_dirs();
        let dir = state::clusters_root().join(format!("probe-{}", std::process::id()));
        let shape = ClusterShape {
            nodes: p.nodes,
            broker_config: p.broker_config.clone(),
            base_port: None,
            heap: "512m".into(),
            ready_timeout: 120,
        };
        let mut spec = cli::cluster::local_spec(&shape, dist, dir).map_err(run_failure)?;
        // What KIP-939 needs, and a quick timeout-abort scan so the check is short.
        for (k, v) in [
            ("transaction.two.phase.commit.enable", "true"),
            ("unstable.api.versions.enable", "true"),
            ("transaction.abort.timed.out.transaction.cleanup.interval.ms", "500"),
        ] {
            spec.broker_config.entry(k.to_string()).or_insert_with(|| v.to_string());
        }
        spec.remove_dir_on_teardown = true;
        let t0 = Instant::now();
        progress(&format!("starting a throwaway {}-node Kafka {} cluster …", spec.nodes, spec.dist.version));
        opts.release = Some(spec.dist.version.clone());
        let c = LocalCluster::start(spec).await.context("starting the probe cluster")?;
        progress(&format!("ready in {:.1} s at {}", t0.elapsed().as_secs_f64(), c.bootstrap()));
        opts.bootstrap = c.bootstrap_list();
        _cluster = Some(c);
    }
    let report = probe::run(opts).await.context("probing the broker")?;
    if p.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", probe::render_table(&report));
    }
    Ok(())
}
