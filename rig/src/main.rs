//! The `sinkhole` command line: the commands (clap) and where each one goes —
//! one file per command under `cli/` (see [`cli`] for what they share and the
//! exit codes).
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

use cli::args;
use cli::Failure;

#[derive(Parser)]
#[command(name = "sinkhole", version = sinkhole_base::provenance::LONG_VERSION, about = "A Jepsen-style chaos and correctness rig for Kafka transactional sinks")]
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
    Setup(args::SetupArgs),
    /// A local cluster that outlives one command.
    #[command(subcommand)]
    Cluster(cli::cluster::ClusterCmd),
    /// Report what a broker supports for two-phase commit (KIP-939).
    Probe(args::ProbeArgs),
    /// Run a scenario: every mode in turn on one local cluster, then check the
    /// output and judge it against the scenario's expectations.
    Run(args::RunCmd),
    /// Run scenarios × Kafka versions × seeds (one `run` per cell) and compare:
    /// matrix.json, matrix.html, junit.xml and a table of scenario × mode
    /// (`--shard I/N`: one shard of it, for a campaign over several hosts).
    Matrix(args::MatrixCmd),
    /// Run every mutant sink (a faithful mode with one deliberate deviation)
    /// through the scenarios beside the faithful modes, each judged by its
    /// base mode's expectation: the detection matrix mutant × scenario in
    /// calibrate.json, calibrate.html and a table (exit 1 when a mutant
    /// escapes every scenario or a faithful mode is flagged).
    Calibrate(args::CalibrateCmd),
    /// Shrink a failing run's fault list (drop a fault, halve a duration,
    /// move a trigger earlier) while the same mode fails the same way, one
    /// run per candidate, bounded by --runs and --time; prints and saves the
    /// minimal scenario (RUN_DIR/shrink/minimal.yaml) with its seed.
    Shrink(args::ShrinkCmd),
    /// Explore a scenario with random fault schedules: each run draws its
    /// faults from its own seed (S, S+1, …) over every kind the scenario's
    /// cluster can host, at times and at checkpoint phases; a mode that fails
    /// its expectation is shrunk and saved as a finding (found/NN-<anomaly>.yaml,
    /// replayable with its seed), one per signature; explore.json and a table
    /// of the findings and the coverage (exit 1 when there is a finding).
    Explore(args::ExploreCmd),
    /// Replay a finding `sinkhole explore` saved (found/NN-<anomaly>.yaml): its scenario run
    /// --tries times with its seed (the file's `# seed:`), on one cluster while it stays
    /// healthy, each try judged by whether the finding's mode fails with its anomaly again;
    /// replay.json and a table (exit 0 when every try reproduced it, 1 otherwise).
    Replay(args::ReplayCmd),
    /// Merge the shards of one campaign (`matrix --shard I/N` on each host)
    /// into one matrix.json, matrix.html and junit.xml; refuses shards that
    /// do not belong together (exit 2).
    Merge(args::MergeArgs),
    /// Browse a results directory over HTTP: the runs newest first, their
    /// reports and files, the matrices, and a diff of two runs.
    Serve(args::ServeArgs),
    /// Re-run the checker offline on a stored run (a results/<run-id>
    /// directory, or one mode directory in it): rewrites verdict.json,
    /// summary.json and junit.xml and prints the table. No cluster needed.
    Check(args::CheckArgs),
    /// Render report.html again for a stored run (results/<run-id>), from
    /// its verdicts and histories: after an upgrade of the rig, or to read
    /// an old run with the current report. No cluster needed.
    Report(args::ReportArgs),
    /// The causal story of every anomaly of a stored run, in Markdown: for each lost,
    /// duplicated, torn or hanging range, the records, the transaction, the faults that
    /// touched it, the requests and answers, the coordinator's view and the brokers' own log
    /// lines, on one clock; a missing link is named. No cluster needed.
    Explain(cli::explain::ExplainArgs),
    /// A judged run as one small archive for a bug report (under 5 MB): the resolved scenario,
    /// seed, versions and broker configs (secrets redacted), each mode's story and verdict, the
    /// log excerpts the stories cite, and the command that replays it.
    Bundle(cli::bundle::BundleArgs),
    /// The first version that shows a scenario's anomaly: each released Kafka (`--kafka
    /// A..B`) or connector (`--connector A..B`) version in the range the cache can install,
    /// N seeds each (`--seed-count`, 3), skipping versions only where the search may; prints
    /// the table version × verdict and the boundary. A version whose seeds disagree is flaky,
    /// never a boundary.
    Bisect(cli::bisect::BisectCmd),
    /// Check scenario files without running them: every problem as
    /// `file:line:column: field: message` with the line (exit 0 when all are
    /// valid, 2 otherwise); `--explain` adds each mode's premises. The
    /// format: docs/SCENARIOS.md.
    Validate(args::ValidateArgs),
    /// Print a scenario's resolved fault schedule: its explicit faults, then
    /// the faults its random `schedule` generates for the seed; and each
    /// mode's premises as a run with that seed resolves them.
    Schedule(args::ScheduleArgs),
    /// Throughput of the rig's wire producer beside Kafka's own Java transactional producer
    /// (its perf test) on one cluster: rounds of each, one after another, medians and ratios
    /// (a table, and bench.json in results/bench-<timestamp>/).
    BenchProducers(args::BenchProducersArgs),
    /// Benchmark the checker on synthetic records (records/s, peak memory).
    #[command(hide = true)]
    BenchChecker(args::BenchCheckerArgs),
    /// Container images for the containers backend.
    #[command(subcommand)]
    Image(args::ImageCmd),
    /// Removes a run's containers and network once stdin closes (started by the containers
    /// backend, not by hand: it outlives a rig killed by a signal).
    #[command(hide = true)]
    ReapContainers(args::ReapContainersArgs),
    /// One subtask of a job (started by the runner, not by hand).
    #[command(hide = true)]
    Worker(args::WorkerArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // SAFETY: only this thread runs yet — the signal thread, the async runtime and every child
    // process start below. testcontainers reads the engine's address from DOCKER_HOST alone.
    #[cfg(feature = "containers")]
    unsafe {
        sinkhole_cluster::containers::export_docker_host()
    };
    cli::init_logging(cli.verbose, !matches!(cli.command, Command::Worker(_)));
    // Before any thread: a campaign's freed memory goes back to the kernel between runs. Not in
    // a worker, a process of one run whose allocations are the subject's hot path.
    if !matches!(cli.command, Command::Worker(_)) {
        sinkhole_base::memory::fix_thresholds();
    }
    if let Err(e) = sinkhole_base::procs::install_signal_teardown() {
        eprintln!("sinkhole: cannot install the signal handlers: {e}");
        return ExitCode::from(sinkhole_rig::results::exit::RIG_FAILED);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("sinkhole: cannot start the async runtime: {e}");
            return ExitCode::from(sinkhole_rig::results::exit::RIG_FAILED);
        }
    };
    cli::exit(rt.block_on(dispatch(cli.command)))
}

async fn dispatch(cmd: Command) -> Result<(), Failure> {
    match cmd {
        Command::Setup(a) => cli::setup::run(a).await,
        Command::Cluster(c) => cli::cluster::run(c).await,
        Command::Probe(a) => cli::probe::run(a).await,
        Command::Run(a) => cli::run::run(a).await,
        Command::Matrix(a) => cli::matrix::run(a).await,
        Command::Calibrate(a) => cli::calibrate::run(a).await,
        Command::Shrink(a) => cli::shrink::run(a).await,
        Command::Explore(a) => cli::explore::run(a).await,
        Command::Replay(a) => cli::replay::run(a).await,
        Command::Merge(a) => cli::merge::run(a),
        Command::Serve(a) => cli::serve::run(a).await,
        Command::Check(a) => cli::check::run(a),
        Command::Report(a) => cli::report::run(a),
        Command::Explain(a) => cli::explain::run(a),
        Command::Bundle(a) => cli::bundle::run(a),
        Command::Bisect(a) => cli::bisect::run(a).await,
        Command::Validate(a) => cli::validate::run(a),
        Command::Schedule(a) => cli::schedule::run(a),
        Command::BenchProducers(a) => cli::bench_producers::run(a).await,
        Command::BenchChecker(a) => cli::bench_checker::run(a),
        Command::Image(c) => cli::image::run(c),
        Command::ReapContainers(a) => cli::reap_containers::run(a).await,
        Command::Worker(a) => cli::worker::run(a).await,
    }
}
