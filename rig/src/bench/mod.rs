//! `sinkhole bench-producers`: the rig's wire producer beside the producer a user would pick
//! instead, Kafka's own Java transactional producer (its perf test), on one cluster.
//!
//! Why this shape:
//! - **One cluster, the run's own.** The first run of the rig starts the scenario's local
//!   cluster exactly as `sinkhole run` does (its broker settings, nodes, version) and keeps
//!   it ([`crate::run::execute_with`], as the matrix keeps one between cells); every later
//!   run and every Java run uses that cluster, after the same health check (every node
//!   ready, nothing under-replicated, no transaction open). Each run writes its own topic
//!   with the scenario's partitions and replication.
//! - **The same work.** The Java side runs as many perf test processes at once as the job
//!   has subtasks, each with its own transactional id and the subtask's record count, and
//!   commits every checkpoint interval (`--transaction-duration-ms`), so its transactions are
//!   as long as the rig's checkpoints; its records are sized to take the same bytes in a batch
//!   as the rig's ([`record_size`]).
//! - **The same machine state.** A warm-up run of the rig, not counted, starts the cluster,
//!   warms the broker's JIT (a fresh broker compiles for its first seconds, slowing whoever
//!   runs first) and measures the records. Then the producers run one after another, never
//!   together; the order alternates from round to round (Java first, then the rig first), so
//!   neither always gets the quieter moment; figures are medians over rounds, with their
//!   range, and the ratio is also taken round by round.
//! - **Honest figures.** The rig's figure is the run's `committed/s` (records committed per
//!   second of job wall time, checkpoints included), and the run's verdict says whether its
//!   output was exactly once. The Java figure is what the perf test prints (records per
//!   second from after `initTransactions` to after `close`), summed over its processes;
//!   the figure over the processes' whole life is kept beside it.
//!
//! Nothing outlives the bench: the cluster and the perf tests are owned processes (killed on
//! Ctrl-C, a signal or the rig's death, [`sinkhole_base::procs`]), and the cluster is torn
//! down at the end, also after a failed round.
//! - [`java`]: the perf test's command line, process and closing line;
//! - [`record_size`]: the rig's bytes per record and the perf test's `--record-size`;
//! - [`table`]: medians, ratios, the table.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};
use serde::Serialize;
use sinkhole_checker::verdict::Verdict;
use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_install::KafkaDist;
use sinkhole_model::SinkMode;
use sinkhole_scenario::{Backend, Scenario};

use crate::run::{self, Plan, RunArgs, RunError, Warm};

pub mod java;
pub mod record_size;
pub mod table;

use record_size::RecordSize;
use table::{Row, Sample, Spread};

/// The Java side's name in the table.
pub const JAVA: &str = "Kafka Java producer (perf test)";
/// The rig's mode compared when none is named.
pub const DEFAULT_MODE: SinkMode = SinkMode::TwopcInject;
/// A perf test still running after this long is killed and the bench fails.
const JAVA_TIMEOUT: Duration = Duration::from_secs(600);

/// The command line of `sinkhole bench-producers`.
#[derive(Debug, Clone)]
pub struct BenchArgs {
    /// The scenario whose job and cluster the producers share (no faults).
    pub file: PathBuf,
    /// The rig's modes to run; the first is the reference of the ratios. Empty: twopc-inject.
    pub modes: Vec<String>,
    pub rounds: u32,
    pub kafka: Option<String>,
    /// Where the bench directory (`bench-<timestamp>`) goes.
    pub results: PathBuf,
    /// The first run's seed (each next run adds one); default random.
    pub seed: Option<u64>,
}

/// `bench.json`: what was compared, every sample, and the figures.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub scenario: String,
    pub source: PathBuf,
    pub kafka: String,
    pub brokers: usize,
    pub partitions: u32,
    pub replication_factor: usize,
    pub broker_config: BTreeMap<String, String>,
    /// Producers per side at once: the job's subtasks, and as many perf tests.
    pub producers_per_side: u32,
    pub records_per_producer: u64,
    /// The rig's checkpoint interval, and the perf test's `--transaction-duration-ms`.
    pub transaction_ms: u64,
    pub rounds: u32,
    /// The producer the ratios divide by (the first mode).
    pub reference: String,
    pub record: Option<RecordSize>,
    pub rows: Vec<Row>,
    /// The reference's figure over the Java side's, round by round.
    pub reference_over_java: Option<Spread>,
    pub samples: Vec<Sample>,
    pub machine: Machine,
    pub dir: PathBuf,
    pub started: String,
    pub wall_ms: u64,
}

/// The machine's state: cores and load averages (1, 5, 15 minutes) around the bench.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpus: usize,
    pub load_before: Option<[f64; 3]>,
    pub load_after: Option<[f64; 3]>,
}

impl BenchReport {
    /// Every rig run was judged `pass` (exactly once, as the scenario expects).
    pub fn all_clean(&self) -> bool {
        self.samples.iter().all(|s| s.outcome.as_deref().is_none_or(|o| o == "pass"))
    }
}

/// The table's name of a rig mode: the wire producer's modes, or librdkafka's.
pub fn producer_name(mode: SinkMode) -> String {
    match mode.base() {
        SinkMode::RdkafkaTxn | SinkMode::AtLeastOnce => format!("librdkafka ({mode})"),
        _ => format!("wire producer ({mode})"),
    }
}

/// One turn of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    Rig(SinkMode),
    Java,
}

/// The turns of round `round` (from 1; the warm-up run of the rig came before round 1):
/// Java then the modes in odd rounds, the modes then Java in even ones.
pub fn order(modes: &[SinkMode], round: u32) -> Vec<Turn> {
    let mut turns: Vec<Turn> = modes.iter().map(|m| Turn::Rig(*m)).chain([Turn::Java]).collect();
    if round % 2 == 1 {
        turns.reverse();
    }
    turns
}

/// The 1, 5 and 15-minute load averages (`/proc/loadavg`).
pub fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = text.split_whitespace().map(|x| x.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn progress(line: &str) {
    eprintln!("sinkhole: bench: {line}");
}

/// The rig's modes, refused when they do not run on the rig's own job.
fn parse_modes(names: &[String]) -> Result<Vec<SinkMode>, RunError> {
    let mut modes = Vec::new();
    for name in names {
        let m = SinkMode::parse(name).ok_or_else(|| RunError::BadInput(anyhow!(run::unknown_mode("--mode", name))))?;
        if !m.rig_job() {
            return Err(RunError::BadInput(anyhow!("--mode {name}: the bench runs the rig's own job's modes only")));
        }
        if !modes.contains(&m) {
            modes.push(m);
        }
    }
    if modes.is_empty() {
        modes.push(DEFAULT_MODE);
    }
    Ok(modes)
}

/// Why the scenario cannot be benched, if it cannot: the Java side runs no fault, needs a
/// cluster the bench starts and keeps, and speaks PLAINTEXT.
fn unfit(plan: &Plan) -> Option<String> {
    let s = &plan.scenario;
    if !s.faults.is_empty() {
        return Some(format!("{} fault(s): the bench compares producers without faults", s.faults.len()));
    }
    if s.cluster.backend == Backend::External {
        return Some("backend external: the bench starts its own cluster, to know its settings".into());
    }
    if run::reuse::cluster_key(plan).is_none() {
        return Some("cluster.authorizer: its cluster cannot be shared with the Java producer".into());
    }
    None
}

/// The plan of `mode`'s run `k` (its seed is the first seed plus `k`).
fn plan_run(args: &BenchArgs, dir: &Path, mode: SinkMode, seed: u64, k: u64) -> Result<Plan, RunError> {
    let ra = RunArgs {
        file: args.file.clone(),
        modes: vec![mode.name().to_string()],
        kafka: args.kafka.clone(),
        seed: Some(seed.wrapping_add(k)),
        results: dir.to_path_buf(),
        ..RunArgs::default()
    };
    run::plan(&ra, unix_now())
}

/// Runs the bench and writes `bench.json` in its directory.
pub async fn run(args: &BenchArgs) -> Result<BenchReport, RunError> {
    if args.rounds == 0 {
        return Err(RunError::BadInput(anyhow!("--rounds must be at least 1")));
    }
    let modes = parse_modes(&args.modes)?;
    let seed = args.seed.unwrap_or_else(rand::random);
    let started = unix_now();
    let dir = args.results.join(format!("bench-{}", run::timestamp(started)));
    let first = plan_run(args, &dir, modes[0], seed, 0)?;
    if let Some(why) = unfit(&first) {
        return Err(RunError::BadInput(anyhow!("{}: {why}", args.file.display())));
    }
    let s = &first.scenario;
    let dist = sinkhole_install::ensure(&s.cluster.kafka, &mut |l| progress(l)).map_err(|e| {
        if e.is_bad_input() {
            RunError::BadInput(e.into())
        } else {
            RunError::Failed(e.into())
        }
    })?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut report = BenchReport {
        scenario: s.name.clone(),
        source: args.file.clone(),
        kafka: s.cluster.kafka.clone(),
        brokers: s.cluster.brokers,
        partitions: s.topic.partitions,
        replication_factor: s.topic.replication_factor,
        broker_config: run::broker_config(s),
        producers_per_side: s.job.parallelism,
        records_per_producer: s.job.records_per_subtask,
        transaction_ms: s.job.checkpoint_interval_ms,
        rounds: args.rounds,
        reference: producer_name(modes[0]),
        record: None,
        rows: vec![],
        reference_over_java: None,
        samples: vec![],
        machine: Machine {
            cpus: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            load_before: load_average(),
            load_after: None,
        },
        dir: dir.clone(),
        started: sinkhole_base::utc::Utc::from_unix(started).rfc3339(),
        wall_ms: 0,
    };
    progress(&format!(
        "{} round(s) of {} and {JAVA} on one cluster of Kafka {}; files in {}",
        args.rounds,
        modes.iter().map(|m| producer_name(*m)).collect::<Vec<_>>().join(", "),
        report.kafka,
        dir.display()
    ));
    let t0 = Instant::now();
    let mut warm: Option<Warm> = None;
    let scenario = first.scenario.clone();
    let mut bench = Bench {
        args,
        scenario: &scenario,
        dir: &dir,
        dist: &dist,
        seed,
        runs: 0,
        warm: &mut warm,
        report: &mut report,
    };
    let outcome = bench.rounds(&modes).await;
    if let Some(mut w) = warm.take() {
        w.cluster.teardown().await;
    }
    outcome?;
    let mut names: Vec<String> = modes.iter().map(|m| producer_name(*m)).collect();
    names.push(JAVA.to_string());
    report.rows = table::rows(&names, &report.reference, &report.samples);
    report.reference_over_java = table::ratios_by_round(&report.reference, JAVA, &report.samples);
    report.machine.load_after = load_average();
    report.wall_ms = t0.elapsed().as_millis() as u64;
    std::fs::write(dir.join("bench.json"), sinkhole_base::provenance::to_json(&report)?)
        .context("writing bench.json")?;
    Ok(report)
}

/// A bench under way: its cluster, kept between turns, and what it has measured.
struct Bench<'a> {
    args: &'a BenchArgs,
    /// The scenario as planned (its job, topic and cluster are every run's).
    scenario: &'a Scenario,
    dir: &'a Path,
    dist: &'a KafkaDist,
    seed: u64,
    /// Rig runs so far (each one's seed is the first plus this).
    runs: u64,
    warm: &'a mut Option<Warm>,
    report: &'a mut BenchReport,
}

impl Bench<'_> {
    async fn rounds(&mut self, modes: &[SinkMode]) -> Result<(), RunError> {
        let load_before = load_average().map(|l| l[0]);
        let mut warmup = self.rig(modes[0], 0, true).await?;
        warmup.warmup = true;
        warmup.load_before = load_before;
        progress(&format!(
            "warm-up: {}: {:.0} records/s (not counted: it started the cluster and warmed the broker)",
            warmup.producer, warmup.records_per_sec
        ));
        self.report.samples.push(warmup);
        for round in 1..=self.args.rounds {
            for (position, turn) in order(modes, round).into_iter().enumerate() {
                let load_before = load_average().map(|l| l[0]);
                let mut sample = match turn {
                    Turn::Rig(mode) => self.rig(mode, round, modes[0] == mode).await?,
                    Turn::Java => self.java(round).await?,
                };
                sample.position = position;
                sample.load_before = load_before;
                progress(&format!(
                    "round {round}/{}: {}: {:.0} records/s{}",
                    self.args.rounds,
                    sample.producer,
                    sample.records_per_sec,
                    sample.outcome.as_ref().map(|o| format!(" ({o})")).unwrap_or_default()
                ));
                self.report.samples.push(sample);
            }
        }
        Ok(())
    }

    /// One run of the scenario with `mode` alone, on the kept cluster (the first starts it).
    /// The reference's first run also measures the records.
    async fn rig(&mut self, mode: SinkMode, round: u32, reference: bool) -> Result<Sample, RunError> {
        let plan = plan_run(self.args, self.dir, mode, self.seed, self.runs)?;
        self.runs += 1;
        let (result, kept) = run::execute_with(&plan, self.warm.take(), true).await;
        *self.warm = kept;
        let summary = result?;
        let m = summary
            .modes
            .first()
            .ok_or_else(|| RunError::Failed(anyhow!("run {} has no mode in its summary", plan.run_id)))?;
        if reference && self.report.record.is_none() {
            let checkpoints = m
                .verdict
                .as_ref()
                .and_then(|p| std::fs::read_to_string(p).ok())
                .and_then(|t| serde_json::from_str::<Verdict>(&t).ok())
                .map_or(1, |v| v.checkpoints_completed);
            let s = &plan.scenario;
            let shape = record_size::RunShape {
                run_id: &plan.run_id,
                mode,
                tid_prefix: &plan.tid_prefix(mode),
                parallelism: s.job.parallelism,
                records_per_subtask: s.job.records_per_subtask,
                partitions: s.topic.partitions,
                partitioning: s.job.partitioning,
                checkpoints,
            };
            self.report.record = Some(record_size::measure(&shape));
        }
        Ok(Sample {
            round,
            position: 0,
            warmup: false,
            producer: producer_name(mode),
            records: m.counts.committed,
            records_per_sec: if m.wall_ms > 0 { m.counts.committed as f64 * 1000.0 / m.wall_ms as f64 } else { 0.0 },
            wall_ms: m.wall_ms,
            process_records_per_sec: None,
            outcome: Some(m.outcome.name().to_string()),
            run_dir: Some(plan.dir.path().to_path_buf()),
            java: vec![],
            load_before: None,
        })
    }

    /// The perf tests, one per subtask, at once, on their own topic of the kept cluster.
    async fn java(&mut self, round: u32) -> Result<Sample, RunError> {
        let record = self.report.record.clone().ok_or_else(|| {
            RunError::Failed(anyhow!("the Java producer's turn came before the rig's records were measured"))
        })?;
        let w = self.warm.as_mut().ok_or_else(|| {
            RunError::Failed(anyhow!("no cluster for the Java producer: the rig's run before it kept none"))
        })?;
        run::reuse::health(w.cluster.as_mut())
            .await
            .map_err(|e| RunError::Failed(anyhow!("the cluster is not fit for the Java producer: {e}")))?;
        let s = self.scenario;
        let name = self.dir.file_name().and_then(|n| n.to_str()).unwrap_or("bench").to_string();
        let topic = format!("sinkhole-{name}-java-{round}");
        // The topic settings of the rig's runs (`run::group`).
        let configs: Vec<(String, String)> = s
            .topic
            .min_insync_replicas
            .map(|m| vec![("min.insync.replicas".to_string(), m.to_string())])
            .unwrap_or_default();
        let mut client = Client::connect(&w.cluster.client_bootstrap(), ClientConfig::default()).await?;
        client
            .create_topic(&topic, s.topic.partitions as i32, s.topic.replication_factor as i16, &configs)
            .await
            .with_context(|| format!("creating topic {topic}"))?;
        drop(client);
        let rate = s.job.rate_per_subtask;
        let runs: Vec<java::PerfRun> = (0..s.job.parallelism)
            .map(|i| java::PerfRun {
                bootstrap: w.cluster.client_bootstrap().join(","),
                topic: topic.clone(),
                records: s.job.records_per_subtask,
                record_size: record.java_record_size,
                transactional_id: format!("{topic}-{i}"),
                transaction_ms: s.job.checkpoint_interval_ms,
                throughput: (rate > 0).then_some(rate),
            })
            .collect();
        let results = java::run_all(self.dist, &runs, &self.dir.join("java"), JAVA_TIMEOUT).await?;
        let records: u64 = results.iter().map(|r| r.total.records).sum();
        let rate: f64 = results.iter().map(|r| r.total.records_per_sec).sum();
        // The longest perf test's own timed span, from its figure.
        let timed_ms = results
            .iter()
            .map(|r| {
                if r.total.records_per_sec > 0.0 {
                    r.total.records as f64 * 1000.0 / r.total.records_per_sec
                } else {
                    0.0
                }
            })
            .fold(0.0, f64::max);
        let process_ms = results.iter().map(|r| r.process_ms).max().unwrap_or(0);
        Ok(Sample {
            round,
            position: 0,
            warmup: false,
            producer: JAVA.to_string(),
            records,
            records_per_sec: rate,
            wall_ms: timed_ms.round() as u64,
            process_records_per_sec: (process_ms > 0).then(|| records as f64 * 1000.0 / process_ms as f64),
            outcome: None,
            run_dir: None,
            java: results,
            load_before: None,
        })
    }
}

/// What `sinkhole bench-producers` prints: the setting, the table, the ratio round by
/// round, the records, how each figure was taken, and where the files are.
pub fn render_text(r: &BenchReport) -> String {
    let mut out = format!(
        "{} on Kafka {}: {} broker(s), {} partition(s), replication {}; {} producer(s) per side × {} records, \
         transactions of {} ms; a warm-up run of the rig (not counted), then {} round(s), order alternating\n",
        r.source.display(),
        r.kafka,
        r.brokers,
        r.partitions,
        r.replication_factor,
        r.producers_per_side,
        r.records_per_producer,
        r.transaction_ms,
        r.rounds
    );
    out.push_str(&table::render(&r.rows, &r.reference));
    if let Some(by_round) = &r.reference_over_java {
        out.push_str(&table::goal_line(&r.reference, JAVA, by_round));
        out.push('\n');
    }
    if let Some(rec) = &r.record {
        out.push_str(&table::record_line(rec));
        out.push('\n');
    }
    out.push_str(&format!(
        "how: the rig's figure is its run's committed/s (records committed per second of job wall time, worker start \
         to last commit, {} ms checkpoints included; output read back read_committed and judged); the Java figure is \
         the perf test's records/sec (after initTransactions to after close, a commit every {} ms), summed over {} \
         process(es)",
        r.transaction_ms, r.transaction_ms, r.producers_per_side
    ));
    if let Some(p) = r.rows.iter().find(|x| x.producer == JAVA).and_then(|x| x.process_records_per_sec.as_ref()) {
        out.push_str(&format!("; over the processes' whole life (JVM start included): median {:.0}", p.median));
    }
    out.push('\n');
    if !r.all_clean() {
        out.push_str(
            "NOT CLEAN: a rig run was not judged pass; its figure is not an exactly-once figure (see bench.json)\n",
        );
    }
    let load = |l: &Option<[f64; 3]>| l.map_or("?".to_string(), |l| format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2]));
    out.push_str(&format!(
        "machine: {} cpu(s), load average {} before, {} after; {:.0} s\n",
        r.machine.cpus,
        load(&r.machine.load_before),
        load(&r.machine.load_after),
        r.wall_ms as f64 / 1000.0
    ));
    out.push_str(&format!("results: {}\n", r.dir.join("bench.json").display()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_alternate_the_order() {
        let modes = [SinkMode::TwopcInject, SinkMode::RdkafkaTxn];
        // Round 1 follows the rig's warm-up run: Java first.
        assert_eq!(order(&modes, 1), vec![Turn::Java, Turn::Rig(modes[1]), Turn::Rig(modes[0])]);
        assert_eq!(order(&modes, 2), vec![Turn::Rig(modes[0]), Turn::Rig(modes[1]), Turn::Java]);
        assert_eq!(order(&modes, 3), order(&modes, 1));
    }

    #[test]
    fn modes_default_to_twopc_inject_and_must_run_on_the_rig_s_job() {
        assert_eq!(parse_modes(&[]).unwrap(), vec![SinkMode::TwopcInject]);
        let two = parse_modes(&["legacy".into(), "rdkafka-txn".into(), "legacy".into()]).unwrap();
        assert_eq!(two, vec![SinkMode::Legacy, SinkMode::RdkafkaTxn]);
        assert!(matches!(parse_modes(&["flink-kafkasink".into()]), Err(RunError::BadInput(_))));
        assert!(matches!(parse_modes(&["nope".into()]), Err(RunError::BadInput(_))));
        assert_eq!(producer_name(SinkMode::TwopcInject), "wire producer (twopc-inject)");
        assert_eq!(producer_name(SinkMode::RdkafkaTxn), "librdkafka (rdkafka-txn)");
    }

    fn scenarios() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
    }

    #[test]
    fn the_throughput_scenario_fits_and_a_faulted_one_does_not() {
        let args = |f: &str| BenchArgs {
            file: scenarios().join(f),
            modes: vec![],
            rounds: 1,
            kafka: None,
            results: "/tmp/r".into(),
            seed: Some(1),
        };
        let p = plan_run(&args("throughput.yaml"), Path::new("/tmp/r"), DEFAULT_MODE, 1, 0).unwrap();
        assert_eq!(unfit(&p), None);
        assert_eq!(p.scenario.modes, vec![DEFAULT_MODE]);
        let faulted = plan_run(&args("flip319-long-outage.yaml"), Path::new("/tmp/r"), DEFAULT_MODE, 1, 0).unwrap();
        assert!(unfit(&faulted).unwrap().contains("fault"), "{:?}", unfit(&faulted));
    }
}
