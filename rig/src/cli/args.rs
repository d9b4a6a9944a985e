//! The options of each command (clap), one struct per command; the list of
//! commands and their one-line descriptions is `Command` in `main.rs`.
use std::path::PathBuf;

use clap::{Args, Subcommand};
use sinkhole_install::DEFAULT_KAFKA;
use sinkhole_rig::matrix::{self, Campaign, Seeds};

#[derive(Args)]
pub struct SetupArgs {
    /// Comma-separated Kafka versions, e.g. 4.4.0,4.0.2.
    #[arg(long, default_value = DEFAULT_KAFKA)]
    pub kafka: String,
    /// Also install this Flink release's cluster classpath and the Flink subject's job
    /// (`flink-kafkasink` mode), e.g. 2.2.1.
    #[arg(long)]
    pub flink: Option<String>,
    /// The flink-connector-kafka release for --flink (default: the one known for that Flink, e.g. 5.0.0-2.2).
    #[arg(long, requires = "flink")]
    pub connector: Option<String>,
    /// A contributor's connector jar to check (it replaces the released one in a run's
    /// cluster classpath; scenarios name it as flink.connector_jar).
    #[arg(long)]
    pub connector_jar: Option<PathBuf>,
}

#[derive(Args)]
pub struct RunCmd {
    /// The scenario (YAML).
    pub file: PathBuf,
    /// Run only these modes (repeatable); default: the scenario's.
    #[arg(long = "mode", value_name = "MODE")]
    pub modes: Vec<String>,
    /// Kafka version instead of the scenario's.
    #[arg(long)]
    pub kafka: Option<String>,
    /// Seed (default: random, printed so the run can be replayed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where runs write their results.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Where the brokers run, instead of the scenario's `cluster.backend`.
    #[arg(long, value_parser = ["local", "containers", "external"])]
    pub backend: Option<String>,
    /// Container image (containers backend), instead of the scenario's `cluster.image`.
    #[arg(long)]
    pub image: Option<String>,
    /// Count an inconclusive mode as failed (exit 1), for jobs that want every mode judged.
    #[arg(long)]
    pub fail_on_inconclusive: bool,
    /// A contributor's flink-connector-kafka jar for the flink-kafkasink mode, instead of
    /// the scenario's `flink.connector_jar` (or the released connector).
    #[arg(long)]
    pub connector_jar: Option<PathBuf>,
    /// Run the modes one after another, each alone on the cluster (default: side by side).
    #[arg(long)]
    pub sequential: bool,
    /// Use this existing cluster (host:port[,host:port...]): `backend: external`, with the
    /// scenario's `cluster.external` commands and security.
    #[arg(long, value_delimiter = ',')]
    pub bootstrap: Vec<String>,
}

/// `sinkhole calibrate`: a matrix campaign with the mutants beside the modes;
/// its campaign options reworded where they name its own files.
#[derive(Args)]
#[command(
    mut_arg("seeds", |a| a.help("Seeds, comma-separated: every scenario runs with each")),
    mut_arg("seed", |a| a.help("The first seed (default: random, printed and kept)")),
    mut_arg("out", |a| a.help("The calibration directory (default: <results>/calibrate-<timestamp>)")),
    mut_arg("json", |a| a.help("Print calibrate.json on stdout instead of the table")),
)]
pub struct CalibrateCmd {
    /// Only these mutants, comma-separated (default: every mutant).
    #[arg(long, value_delimiter = ',')]
    pub mutants: Vec<String>,
    #[command(flatten)]
    pub campaign: CampaignOpts,
}

#[derive(Args)]
pub struct ShrinkCmd {
    /// A failing run's directory (results/<run-id>).
    pub run_dir: PathBuf,
    /// The failing mode to shrink for (default: the run's first failing mode).
    #[arg(long)]
    pub mode: Option<String>,
    /// At most this many candidate runs.
    #[arg(long, default_value_t = 20)]
    pub runs: u32,
    /// At most this many seconds (a candidate under way is finished).
    #[arg(long, default_value_t = 1800)]
    pub time: u64,
    /// Keep each candidate run's Kafka log segments (cluster/node-*/data) and topics, removed by
    /// default when its cluster is torn down or handed to the next candidate (the brokers' logs
    /// stay; the shrunk run's are untouched).
    #[arg(long)]
    pub keep_data: bool,
}

#[derive(Args)]
pub struct ExploreCmd {
    /// The scenario to explore: its cluster, job, modes and expectations (its own
    /// faults are not run; its `schedule:` window, if any, is kept).
    pub scenario: PathBuf,
    /// At most this many runs.
    #[arg(long, default_value_t = 20)]
    pub runs: u32,
    /// At most this long, shrinking included (a run under way is finished): 90s, 30m, 8h.
    #[arg(long, default_value = "1h", value_parser = duration)]
    pub time: std::time::Duration,
    /// The first run's seed: run 1 has seed S, run 2 S+1, … (default: random, printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where explore-<timestamp>/ is written.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Only these modes (repeatable; a mutant when the scenario runs its base mode).
    #[arg(long = "mode", value_name = "MODE")]
    pub modes: Vec<String>,
    /// At most this many shrink runs per new finding (0: save the failing run's faults unshrunk).
    #[arg(long, default_value_t = 5)]
    pub shrink_runs: u32,
    /// Stop once every mutant judged has a finding (without a mutant, every mode): how long each
    /// mutant takes to be found.
    #[arg(long)]
    pub until_found: bool,
    /// Keep every run's Kafka log segments (cluster/node-*/data) and topics, removed by default
    /// when its cluster is torn down or handed to the next run (the brokers' logs stay).
    #[arg(long)]
    pub keep_data: bool,
    /// Replay each new finding this many times (its saved file with its seed; 0: not at all),
    /// counting the tries that fail the same way; under --until-found, once the search stops.
    #[arg(long, default_value_t = 3)]
    pub replay: u32,
    /// This host's share of a campaign across hosts: shard I of N makes the runs with seeds
    /// S+I-1, S+I-1+N, … (needs --seed); `sinkhole merge` joins the shards' directories.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
}

#[derive(Args)]
pub struct ReplayCmd {
    /// A finding saved by `sinkhole explore` (found/NN-<anomaly>.yaml): its header names the
    /// seed and the signature a try must show.
    pub file: PathBuf,
    /// How many times to run it.
    #[arg(long, default_value_t = 10)]
    pub tries: u32,
    /// The seed (default: the file's `# seed:` line).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where replay-<timestamp>/ is written.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Keep every try's Kafka log segments (cluster/node-*/data), removed by default.
    #[arg(long)]
    pub keep_data: bool,
}

/// A duration on the command line: a number with a unit (`ms`, `s`, `m`, `h`; seconds without one).
pub fn duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("{s:?}: a number and a unit, e.g. 90s, 30m, 8h"))?;
    let ms = match unit {
        "ms" => 1,
        "" | "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (ms, s, m or h)")),
    };
    n.checked_mul(ms).map(std::time::Duration::from_millis).ok_or_else(|| format!("{s:?}: too long"))
}

/// The options of a campaign of runs that `sinkhole matrix` and `sinkhole
/// calibrate` share (the library's [`Campaign`]); the help is `matrix`'s.
#[derive(Args)]
pub struct CampaignOpts {
    /// Scenario files or directories (a directory: its *.yaml minus the
    /// names in its matrix-exclude.txt). Default: scenarios/.
    pub inputs: Vec<PathBuf>,
    /// Kafka versions, comma-separated (default: each scenario's).
    #[arg(long, value_delimiter = ',')]
    pub kafka: Vec<String>,
    /// Seeds, comma-separated: every scenario and version runs with each.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["seed_count", "seed"], value_parser = seed,
          allow_negative_numbers = true)]
    pub seeds: Vec<u64>,
    /// Run N seeds: --seed, --seed + 1, … (default 1; at most 1000).
    #[arg(long, value_name = "N", value_parser = seed_count, allow_negative_numbers = true)]
    pub seed_count: Option<u32>,
    /// The first seed (default: random, printed and kept in matrix.json).
    #[arg(long, value_parser = seed, allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// Where the runs write their results.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// The matrix directory (default: <results>/matrix-<timestamp>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print matrix.json on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Keep every run's Kafka log segments (cluster/node-*/data). By default a campaign removes
    /// them when each cluster is torn down (a cluster kept for the next cell: the run's topics),
    /// keeping the brokers' logs: the verdicts rest on what was drained, and the segments of a
    /// night's runs would fill the disk.
    #[arg(long)]
    pub keep_data: bool,
}

/// `--seeds` and `--seed`: a seed is any whole number a u64 holds.
fn seed(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| format!("not a seed: a seed is a whole number from 0 to {}", u64::MAX))
}

/// `--seed-count`: a whole number within [`matrix::seed_count_problem`]'s
/// bounds (the library checks the same for its own callers).
fn seed_count(s: &str) -> Result<u32, String> {
    let n = match s.parse::<u64>() {
        Ok(n) => n,
        // Digits only, too many for a u64: too large.
        Err(_) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => u64::MAX,
        Err(_) => return Err(format!("not a count: a whole number of seeds from 1 to {}", matrix::MAX_SEEDS)),
    };
    match matrix::seed_count_problem(n) {
        Some(p) => Err(p),
        None => u32::try_from(n).map_err(|e| e.to_string()),
    }
}

impl CampaignOpts {
    /// The campaign: `--seeds` when given, else `--seed-count` seeds from `--seed`.
    pub fn campaign(self) -> Campaign {
        let CampaignOpts { inputs, kafka, seeds, seed_count, seed, results, out, json, keep_data } = self;
        let seeds =
            if seeds.is_empty() { Seeds::Count { n: seed_count.unwrap_or(1), base: seed } } else { Seeds::List(seeds) };
        Campaign { inputs, kafka, seeds, results, out, json, keep_data }
    }
}

#[derive(Args)]
pub struct MatrixCmd {
    /// Only these modes, comma-separated (default: each scenario's).
    #[arg(long, value_delimiter = ',')]
    pub modes: Vec<String>,
    #[command(flatten)]
    pub campaign: CampaignOpts,
    /// Stop after the first cell with a failure.
    #[arg(long)]
    pub fail_fast: bool,
    /// Count an inconclusive mode as failed (exit 1).
    #[arg(long)]
    pub fail_on_inconclusive: bool,
    /// Exit 1 when a scenario × mode × version is flaky: its seeds gave different outcomes.
    #[arg(long)]
    pub fail_on_flaky: bool,
    /// Run only shard I of N (1-based): cell k of the whole list (0-based) runs
    /// in shard (k mod N) + 1. Needs fixed seeds; `sinkhole merge` joins the shards.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Run each cell's modes one after another (default: side by side).
    #[arg(long)]
    pub sequential: bool,
    /// Start a fresh cluster for every cell (default: consecutive cells with the same
    /// cluster spec share a healthy one).
    #[arg(long)]
    pub fresh_clusters: bool,
}

#[derive(Args)]
pub struct MergeArgs {
    /// The shards' directories: each a matrix's (the matrix.json of `matrix --shard I/N`) or each
    /// an exploration's (the explore.json of `explore --seed S --shard I/N`).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where the merged matrix.json, matrix.html and junit.xml go (default: results/matrix-<timestamp>-merged),
    /// or an exploration's explore.json and explore.html (default: results/explore-<timestamp>-merged).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the merged matrix.json on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Count an inconclusive mode as failed (exit 1), whatever the shards said.
    #[arg(long)]
    pub fail_on_inconclusive: bool,
    /// Exit 1 when a scenario × mode × version is flaky over the merged seeds.
    #[arg(long)]
    pub fail_on_flaky: bool,
}

#[derive(Args)]
pub struct ServeArgs {
    /// The results directory to browse.
    #[arg(default_value = "results")]
    pub dir: PathBuf,
    /// TCP port (0: any free one, printed).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Address to listen on. Only loopback by default: the results name hosts,
    /// paths and seeds; listen elsewhere only on a network you trust.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
}

#[derive(Args)]
pub struct CheckArgs {
    /// The run's results directory.
    pub dir: PathBuf,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Count an inconclusive mode as failed (exit 1).
    #[arg(long)]
    pub fail_on_inconclusive: bool,
}

#[derive(Args)]
pub struct ReportArgs {
    /// The run's results directory.
    pub dir: PathBuf,
}

#[derive(Args)]
pub struct ValidateArgs {
    /// Scenario files (YAML).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print one JSON report per file.
    #[arg(long)]
    pub json: bool,
    /// Also say what each mode's expectation rests on: its premises once resolved, the scenario's
    /// own or the rig's defaults, one line each with why.
    #[arg(long)]
    pub explain: bool,
}

#[derive(Args)]
pub struct ScheduleArgs {
    /// The scenario (YAML).
    pub file: PathBuf,
    /// Seed (default: the schedule's own seed, else random and printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the schedule as JSON (what `schedule.json` in a run holds).
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct BenchProducersArgs {
    /// The scenario whose cluster and job the producers share (no faults).
    #[arg(default_value = "scenarios/throughput.yaml")]
    pub file: PathBuf,
    /// The rig's mode to run (repeatable); the first is what the ratios divide by. Default: twopc-inject.
    #[arg(long = "mode")]
    pub modes: Vec<String>,
    /// Rounds: each runs every producer once, one after another, the order alternating.
    #[arg(long, default_value_t = 5)]
    pub rounds: u32,
    /// Kafka version instead of the scenario's.
    #[arg(long)]
    pub kafka: Option<String>,
    /// The first run's seed (default: random).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where the bench directory (bench-<timestamp>) goes.
    #[arg(long, default_value = "results")]
    pub results: PathBuf,
    /// Print bench.json on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct BenchCheckerArgs {
    #[arg(long, default_value_t = 10_000_000)]
    pub records: u64,
    #[arg(long, default_value_t = 4)]
    pub subtasks: u32,
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum ImageCmd {
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
pub struct ReapContainersArgs {
    #[arg(long)]
    pub run: String,
}

#[derive(Args)]
pub struct WorkerArgs {
    /// The worker's configuration (JSON, a `WorkerConfig`).
    #[arg(long)]
    pub config: PathBuf,
    /// The coordinator's control socket.
    #[arg(long)]
    pub control: PathBuf,
}

/// Which Kafka to run (`cluster up`, `probe`).
#[derive(Args, Clone)]
pub struct KafkaSel {
    /// Kafka version (installed from Maven Central if missing).
    #[arg(long)]
    pub kafka: Option<String>,
    /// Use an existing Kafka distribution (a directory with libs/*.jar) instead of the cache.
    #[arg(long, env = "KAFKA_HOME")]
    pub kafka_home: Option<PathBuf>,
}

/// The shape of a local cluster (`cluster up`; `probe` fills one in).
#[derive(Args, Clone)]
pub struct ClusterShape {
    /// Number of KRaft nodes (combined broker+controller): 1, 3 or 5.
    #[arg(long, default_value_t = 1)]
    pub nodes: usize,
    /// Broker setting key=value (repeatable); applied to every node.
    #[arg(long = "broker-config", value_name = "KEY=VALUE")]
    pub broker_config: Vec<String>,
    /// First port: node i listens on BASE+2(i-1) (broker) and the next (controller). Default: free ports.
    #[arg(long)]
    pub base_port: Option<u16>,
    /// JVM max heap per broker.
    #[arg(long, default_value = "512m")]
    pub heap: String,
    /// The brokers' JIT compilers: c1 (the first tier only: a quarter less CPU in a run of a
    /// minute) or tiered (the JVM's default, for long runs measuring the broker's speed).
    #[arg(long, default_value = "c1")]
    pub jit: sinkhole_scenario::Jit,
    /// Seconds to wait for the cluster to be ready.
    #[arg(long, default_value_t = 120)]
    pub ready_timeout: u64,
}

#[derive(Args)]
pub struct ProbeArgs {
    /// Start a throwaway local cluster of this Kafka version (with 2PC and unstable APIs enabled).
    #[arg(long, conflicts_with = "bootstrap")]
    pub kafka: Option<String>,
    #[arg(long, env = "KAFKA_HOME", conflicts_with = "bootstrap")]
    pub kafka_home: Option<PathBuf>,
    /// Probe a running cluster instead (host:port[,host:port...]).
    #[arg(long)]
    pub bootstrap: Option<String>,
    /// Nodes of the throwaway cluster.
    #[arg(long, default_value_t = 1)]
    pub nodes: usize,
    /// Extra broker settings for the throwaway cluster.
    #[arg(long = "broker-config", value_name = "KEY=VALUE")]
    pub broker_config: Vec<String>,
    /// Client transaction timeout (ms) for the timeout-survival check.
    #[arg(long, default_value_t = 1000)]
    pub short_timeout_ms: i32,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}
