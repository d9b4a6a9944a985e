//! `sinkhole run FILE`: one scenario, every mode in turn on one cluster
//! (Jepsen's `core`: the test end to end).
//!
//! [`plan`] does everything that needs no broker (load, validate, resolve
//! modes and version, name the run), [`execute`] starts the cluster and runs
//! the modes: topic, runner, checker, verdict, then the results a user and a
//! CI job read ([`crate::results`]: summary.json, junit.xml, report.html).
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};
use sinkhole_workloads::model::SinkMode;
use sinkhole_workloads::wire::acls::{self, AclBinding};
use sinkhole_workloads::wire::client::{Client, ClientConfig};
use sinkhole_workloads::wire::SaslPlain;

use crate::checker::{self, CheckSpec, Expected};
use crate::cluster::containers::{ContainersCluster, ContainersSpec};
use crate::cluster::external::ExternalCluster;
use crate::cluster::local::{LocalCluster, LocalSpec};
use crate::cluster::{Cluster, ClusterError};
use crate::history::{JobOutcome, ModeOutcome};
use crate::install;
use crate::latency;
use crate::results::exit::Policy;
use crate::results::junit;
use crate::results::summary::{self, exit_code_with, summarize, Summary, Timings};
use crate::runner::{self, ModeRun};
use crate::scenario::Backend;
use crate::scenario::{self, Scenario};
use crate::verdict::{self, VerdictInput};

/// The command line of `sinkhole run`.
#[derive(Debug, Clone, Default)]
pub struct RunArgs {
    pub file: PathBuf,
    /// Mode names; empty = the scenario's.
    pub modes: Vec<String>,
    pub kafka: Option<String>,
    pub seed: Option<u64>,
    pub results: PathBuf,
    pub json: bool,
    /// `--fail-on-inconclusive`: the summary's exit code counts inconclusive modes as failed.
    pub fail_on_inconclusive: bool,
    /// flink-kafkasink: a contributor's connector jar instead of the scenario's.
    pub connector_jar: Option<PathBuf>,
    /// `--sequential`: the modes one after another, as `sequential: true`.
    pub sequential: bool,
    /// `--bootstrap`: an existing cluster (`backend: external`), instead of the scenario's
    /// `cluster.external.bootstrap`.
    pub bootstrap: Vec<String>,
}

/// Exit 2 (the input) or exit 3 (the rig failed: the cluster did not start, a file could not be written).
#[derive(Debug)]
pub enum RunError {
    BadInput(anyhow::Error),
    Failed(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for RunError {
    fn from(e: E) -> Self {
        RunError::Failed(e.into())
    }
}

/// A resolved run: what will run, where its results go.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The scenario with `--mode` and `--kafka` applied.
    pub scenario: Scenario,
    pub source: PathBuf,
    pub seed: u64,
    pub run_id: String,
    /// Short, for transactional ids.
    pub short_id: String,
    pub dir: PathBuf,
    /// The resolved fault list (explicit faults, then the random schedule's),
    /// already in `scenario.faults`; written to `schedule.json`.
    pub schedule: crate::scenario::schedule::Resolved,
    /// How the summary's exit code counts inconclusive modes.
    pub policy: Policy,
}

impl Plan {
    pub fn mode_dir(&self, m: SinkMode) -> PathBuf {
        self.dir.join(m.name())
    }
    pub fn topic(&self, m: SinkMode) -> String {
        format!("sinkhole-{}-{}", self.run_id, m.name())
    }
    pub fn tid_prefix(&self, m: SinkMode) -> String {
        format!("sinkhole-{}-{}", self.short_id, m.name())
    }
}

/// UTC `yyyymmddThhmmss` for a Unix time.
pub fn timestamp(unix_s: u64) -> String {
    crate::utc::Utc::from_unix(unix_s).compact()
}

/// 8 hex digits (FNV-1a of the run id): unique enough per run, short enough
/// for transactional ids (`sinkhole-<short>-<mode>-<subtask>-<checkpoint>`).
fn short_id(run_id: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in run_id.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

/// Loads and validates the scenario and applies the command line.
pub fn plan(args: &RunArgs, now_unix_s: u64) -> Result<Plan, RunError> {
    let mut s = scenario::load(&args.file).map_err(|e| RunError::BadInput(anyhow!(e.render())))?;
    if !args.modes.is_empty() {
        let mut modes = Vec::new();
        for name in &args.modes {
            let m = SinkMode::parse(name).ok_or_else(|| {
                RunError::BadInput(anyhow!(
                    "--mode {name}: unknown mode; known modes: {}",
                    SinkMode::ALL.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
                ))
            })?;
            if !modes.contains(&m) {
                modes.push(m);
            }
        }
        s.expect.retain(|m, _| modes.contains(m));
        s.modes = modes;
    }
    if let Some(k) = &args.kafka {
        let v = install::parse_versions(k).map_err(|e| RunError::BadInput(e.into()))?;
        if v.len() != 1 {
            return Err(RunError::BadInput(anyhow!("--kafka takes one version, got {}", v.join(","))));
        }
        s.cluster.kafka = v[0].clone();
    }
    if let Some(jar) = &args.connector_jar {
        let f = s.flink.get_or_insert_with(Default::default);
        f.connector_jar = Some(std::path::absolute(jar).unwrap_or_else(|_| jar.clone()));
        crate::install::flink::check_connector_jar(jar).map_err(|e| RunError::BadInput(e.into()))?;
    } else if let Some(f) = s.flink.as_mut() {
        // A jar named relative to the scenario file, as validation read it.
        f.connector_jar = f.connector_jar_in(&args.file).map(|j| std::path::absolute(&j).unwrap_or(j));
    }
    if args.sequential {
        s.sequential = true;
    }
    // A lead that `--mode` left out leads nothing: the first mode to reach an event does.
    if s.lead.is_some_and(|l| !s.modes.contains(&l)) {
        s.lead = None;
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    // The random schedule becomes plain faults here, before any mode runs:
    // every mode gets the same list, and the resolved scenario.yaml replays
    // it without the seed.
    let schedule = crate::scenario::schedule::resolve(&s, seed);
    s.faults = schedule.faults.clone();
    s.schedule = None;
    let run_id = format!("{}-{}-{seed}", s.name, timestamp(now_unix_s));
    let dir = args.results.join(&run_id);
    let policy = Policy { fail_on_inconclusive: args.fail_on_inconclusive };
    Ok(Plan {
        scenario: s,
        source: args.file.clone(),
        seed,
        short_id: short_id(&run_id),
        run_id,
        dir,
        schedule,
        policy,
    })
}

/// Where [`execute`]'s progress lines go instead of stderr.
pub type ProgressSink = Box<dyn Fn(&str) + Send + Sync>;

static PROGRESS_SINK: std::sync::RwLock<Option<ProgressSink>> = std::sync::RwLock::new(None);

/// Sends [`execute`]'s progress lines to `sink` (`None`: stderr again). The
/// matrix draws a progress bar on stderr, which stray lines would tear; while
/// a sink is set the coordinator's own per-event lines are not printed (they
/// are in each mode's history.jsonl).
pub fn set_progress_sink(sink: Option<ProgressSink>) {
    *PROGRESS_SINK.write().unwrap_or_else(|p| p.into_inner()) = sink;
}

fn progress_redirected() -> bool {
    PROGRESS_SINK.read().map(|g| g.is_some()).unwrap_or(false)
}

fn progress(line: &str) {
    if let Ok(g) = PROGRESS_SINK.read() {
        if let Some(sink) = g.as_ref() {
            sink(line);
            return;
        }
    }
    eprintln!("sinkhole: {line}");
}

/// The broker settings of the run: the scenario's, plus what the
/// two-phase-commit modes need unless the scenario set them (KIP-939:
/// `transaction.two.phase.commit.enable`, and InitProducerId v6 is an
/// unstable API version in every release so far).
pub fn broker_config(s: &Scenario) -> std::collections::BTreeMap<String, String> {
    let mut m: std::collections::BTreeMap<String, String> =
        s.cluster.broker_config.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
    for (k, v) in [("transaction.two.phase.commit.enable", "true"), ("unstable.api.versions.enable", "true")] {
        m.entry(k.to_string()).or_insert_with(|| v.to_string());
    }
    m
}

/// How long the drain waits for partitions to reach their high-water mark:
/// long enough for the broker to abort a transaction left open by a crash
/// (its timeout, then up to two abort scans), with a floor.
pub fn drain_timeout(s: &Scenario) -> Duration {
    let scan = s
        .cluster
        .broker_config
        .get("transaction.abort.timed.out.transaction.cleanup.interval.ms")
        .and_then(|v| v.to_string().parse::<u64>().ok())
        .unwrap_or(10_000);
    let ms = (s.job.transaction_timeout_ms.max(0) as u64).saturating_add(2 * scan).saturating_add(5_000);
    Duration::from_millis(ms.max(15_000))
}

/// Writes the resolved scenario, starts the cluster, runs the modes (side by
/// side, or one after another when the scenario or `--sequential` says so),
/// writes the verdicts and the summary, tears the cluster down.
pub async fn execute(plan: &Plan) -> Result<Summary, RunError> {
    let s = &plan.scenario;
    std::fs::create_dir_all(&plan.dir).with_context(|| format!("creating {}", plan.dir.display()))?;
    let yaml = serde_saphyr::to_string(s).context("rendering the resolved scenario")?;
    std::fs::write(
        plan.dir.join("scenario.yaml"),
        format!("# resolved from {} (run {}, seed {})\n{yaml}", plan.source.display(), plan.run_id, plan.seed),
    )
    .context("writing scenario.yaml")?;
    crate::scenario::schedule::write(&plan.dir, &plan.schedule).context("writing schedule.json")?;

    let started = crate::utc::Utc::from_unix(crate::utc::now_ms() / 1000).rfc3339();
    let t0 = Instant::now();
    let mut times = Timings { side_by_side: !s.sequential && s.modes.len() > 1, ..Timings::default() };
    let mut cluster = start_cluster(plan).await?;
    times.cluster_start_ms = ms(t0.elapsed());
    progress(&format!("cluster ready at {} ({} backend)", cluster.bootstrap(), cluster.backend()));

    let groups: Vec<Vec<SinkMode>> =
        if s.sequential { s.modes.iter().map(|m| vec![*m]).collect() } else { vec![s.modes.clone()] };
    if times.side_by_side {
        progress(&format!(
            "modes {} side by side; an event-triggered cluster fault fires on {}",
            s.modes.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
            lead_text(s.lead)
        ));
    }
    let mut modes = Vec::new();
    for group in groups {
        modes.extend(run_group(plan, cluster.as_mut(), &group, &mut times).await);
    }
    let t = Instant::now();
    cluster.teardown().await;
    times.teardown_ms = ms(t.elapsed());
    let mode_dirs: Vec<PathBuf> = s.modes.iter().map(|m| plan.mode_dir(*m)).collect();
    if let Err(e) = latency::write_run_log(&plan.dir, &mode_dirs) {
        progress(&format!("latency.hlog not written: {e}"));
    }

    let mut summary = Summary {
        run_id: plan.run_id.clone(),
        scenario: s.name.clone(),
        source: plan.source.clone(),
        kafka: s.cluster.kafka.clone(),
        seed: plan.seed,
        dir: plan.dir.clone(),
        exit_code: exit_code_with(&modes, plan.policy),
        modes,
        fail_on_inconclusive: plan.policy.fail_on_inconclusive,
        started: Some(started),
        wall_ms: None,
        side_by_side: times.side_by_side,
        lead: times.side_by_side.then(|| s.lead.map(|m| m.name().to_string()).unwrap_or_else(|| "first".into())),
        timings: None,
    };
    // The report reads summary.json: write it, draw the page, then write it
    // again with the page's time and the run's whole wall time.
    write_summary(plan, &summary)?;
    let t = Instant::now();
    // The page is for people; a run whose report fails is still a run.
    match crate::results::report::write_report(&plan.dir) {
        Ok(p) => progress(&format!("report: {}", p.display())),
        Err(e) => progress(&format!("report.html not written: {e:#}")),
    }
    times.report_ms = ms(t.elapsed());
    times.total_ms = ms(t0.elapsed());
    summary.wall_ms = Some(times.total_ms);
    progress(&format!("time: {}", times.line()));
    summary.timings = Some(times);
    write_summary(plan, &summary)?;
    Ok(summary)
}

fn write_summary(plan: &Plan, summary: &Summary) -> Result<(), RunError> {
    std::fs::write(plan.dir.join("summary.json"), crate::provenance::to_json(summary)?)
        .context("writing summary.json")?;
    junit::write(&plan.dir, summary).context("writing junit.xml")?;
    Ok(())
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// How a cluster fault's event is chosen side by side, in words.
pub fn lead_text(lead: Option<SinkMode>) -> String {
    match lead {
        Some(m) => format!("{m}'s events (lead: {m})"),
        None => "the first mode to reach its event".into(),
    }
}

/// Starts the scenario's cluster on its backend: local JVMs, or containers (see
/// [`crate::cluster::containers`]); the containers' logs go to `cluster/node-<id>/server.log`.
async fn start_cluster(plan: &Plan) -> Result<Box<dyn Cluster>, RunError> {
    let s = &plan.scenario;
    match s.cluster.backend {
        Backend::Local => {
            let dist = install::ensure(&s.cluster.kafka, &mut |l| progress(l)).map_err(|e| {
                if e.is_bad_input() {
                    RunError::BadInput(e.into())
                } else {
                    RunError::Failed(e.into())
                }
            })?;
            progress(&format!("starting {} broker(s) of Kafka {} …", s.cluster.brokers, s.cluster.kafka));
            let mut spec = LocalSpec::new(dist, s.cluster.brokers, plan.dir.join("cluster"));
            spec.broker_config = broker_config(s);
            spec.remove_dir_on_teardown = false;
            // Network and protocol faults act through the proxy (cluster.proxy, default: when one needs it).
            if s.needs_proxy() {
                spec.proxy = Some(plan.seed);
            }
            if s.cluster.authorizer.is_some() {
                // The sink's principal; the password only has to match the broker's JAAS line.
                spec.sink_sasl = Some(SaslPlain::new(SINK_USER, &format!("sink-{}", plan.short_id)));
            }
            let cluster = LocalCluster::start(spec).await.context("starting the cluster")?;
            if let Some(a) = &s.cluster.authorizer {
                grant_sink_acls(plan, &cluster, a.two_phase_commit_acl).await.context("creating the sink's ACLs")?;
            }
            Ok(Box::new(cluster))
        }
        Backend::External => {
            let spec = s.cluster.external.clone().unwrap_or_default();
            if spec.bootstrap.is_empty() {
                return Err(RunError::BadInput(anyhow!(
                    "backend external needs the cluster's bootstrap: cluster.external.bootstrap or --bootstrap"
                )));
            }
            if let Some(why) = s.faults.iter().find_map(|f| crate::cluster::external::unsupported_fault(f, &spec)) {
                return Err(RunError::BadInput(anyhow!(why)));
            }
            if !s.cluster.broker_config.is_empty() {
                progress("cluster.broker_config is not applied: the rig did not start this cluster");
            }
            progress(&format!("connecting to the external cluster at {} …", spec.bootstrap.join(",")));
            let seed = s.needs_proxy().then_some(plan.seed);
            let c = ExternalCluster::connect(spec, s.cluster.brokers, seed).await.map_err(|e| match e {
                ClusterError::Unsupported(_) => RunError::BadInput(e.into()),
                e => RunError::Failed(anyhow::Error::from(e).context("connecting to the external cluster")),
            })?;
            Ok(Box::new(c))
        }
        Backend::Containers => {
            if s.cluster.authorizer.is_some() {
                return Err(RunError::BadInput(anyhow!(
                    "cluster.authorizer needs the local backend (the containers backend has no SASL listener yet)"
                )));
            }
            // The proxy fronts the host-facing listeners only: refuse what needs broker↔broker traffic through it.
            if let Some(why) = s.faults.iter().find_map(crate::cluster::containers::unsupported_fault) {
                return Err(RunError::BadInput(anyhow!(why)));
            }
            progress(&format!("starting {} container(s) of Kafka {} …", s.cluster.brokers, s.cluster.kafka));
            let mut spec =
                ContainersSpec::new(&s.cluster.kafka, s.cluster.brokers, plan.dir.join("cluster"), &plan.run_id);
            spec.image = s.cluster.image.clone();
            spec.broker_config = broker_config(s);
            if s.needs_proxy() {
                spec.proxy = Some(plan.seed);
            }
            // The reaper is this binary's `reap-containers`: only when running as `sinkhole`.
            spec.reaper = std::env::current_exe().ok().filter(|p| {
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n == "sinkhole" || n.starts_with("sinkhole-"))
            });
            let c = ContainersCluster::start(spec).await.context("starting the containers cluster")?;
            progress(&format!("containers from {} on network {}", c.image, c.network));
            Ok(Box::new(c))
        }
    }
}

/// The sink workers' user in ACL scenarios (`User:sink`).
pub const SINK_USER: &str = "sink";

/// What `User:sink` may do in an ACL scenario: write and describe the run's
/// topics (`sinkhole-` prefix) and transactional ids (the run's prefix), and,
/// only when `two_phase_commit` is set, TWO_PHASE_COMMIT on those ids (KIP-939:
/// InitProducerId with Enable2Pc needs it). No IDEMPOTENT_WRITE on the
/// cluster: a transactional InitProducerId is checked against the id alone,
/// and the id-less one (at-least-once) is allowed by WRITE on any topic.
pub fn sink_acls(tid_prefix: &str, two_phase_commit: bool) -> Vec<AclBinding> {
    let p = format!("User:{SINK_USER}");
    let mut v = vec![
        AclBinding::allow_prefixed(&p, acls::resource::TOPIC, "sinkhole-", acls::op::WRITE),
        AclBinding::allow_prefixed(&p, acls::resource::TOPIC, "sinkhole-", acls::op::DESCRIBE),
        AclBinding::allow_prefixed(&p, acls::resource::TRANSACTIONAL_ID, tid_prefix, acls::op::WRITE),
        AclBinding::allow_prefixed(&p, acls::resource::TRANSACTIONAL_ID, tid_prefix, acls::op::DESCRIBE),
    ];
    if two_phase_commit {
        v.push(AclBinding::allow_prefixed(
            &p,
            acls::resource::TRANSACTIONAL_ID,
            tid_prefix,
            acls::op::TWO_PHASE_COMMIT,
        ));
    }
    v
}

/// Creates [`sink_acls`] as the rig's super user, waits until every broker
/// enforces them, and writes them to `acls.json` in the run directory.
async fn grant_sink_acls(plan: &Plan, cluster: &LocalCluster, two_phase_commit: bool) -> anyhow::Result<()> {
    // Every mode's prefix is `sinkhole-<short>-<mode>`.
    let want = sink_acls(&format!("sinkhole-{}-", plan.short_id), two_phase_commit);
    let mut client = Client::connect(&cluster.bootstrap_list(), ClientConfig::default()).await?;
    acls::create_acls(&mut client, &want).await?;
    acls::await_acls(&mut client, &want, Duration::from_secs(30)).await?;
    std::fs::write(plan.dir.join("acls.json"), serde_json::to_string_pretty(&want)? + "\n")
        .context("writing acls.json")?;
    for a in &want {
        progress(&format!("ACL: {a}"));
    }
    Ok(())
}

/// One mode of a group, ready to run: its directory, its topic, its live tail.
struct Prepared {
    mode: SinkMode,
    dir: PathBuf,
    topic: String,
    tail: Option<latency::tail::Tail>,
}

/// Creates the mode's topic and starts its live read_committed tail (for
/// `visibility`) before any of its workers.
async fn prepare(plan: &Plan, cluster: &dyn Cluster, mode: SinkMode) -> anyhow::Result<Prepared> {
    let s = &plan.scenario;
    let dir = plan.mode_dir(mode);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let topic = plan.topic(mode);
    let mut client = Client::connect(&cluster.bootstrap_list(), ClientConfig::default()).await?;
    let configs: Vec<(String, String)> = s
        .topic
        .min_insync_replicas
        .map(|m| vec![("min.insync.replicas".to_string(), m.to_string())])
        .unwrap_or_default();
    client
        .create_topic(&topic, s.topic.partitions as i32, s.topic.replication_factor as i16, &configs)
        .await
        .with_context(|| format!("creating topic {topic}"))?;
    drop(client);
    progress(&format!("{mode}: topic {topic} ready; running the job"));
    // Without the tail the run goes on, unmeasured.
    let tail = match latency::tail::Tail::start(&cluster.bootstrap(), &topic, s.topic.partitions) {
        Ok(t) => Some(t),
        Err(e) => {
            progress(&format!("{mode}: the visibility tail did not start ({e}); visibility is not measured"));
            None
        }
    };
    Ok(Prepared { mode, dir, topic, tail })
}

/// The row of a mode the rig itself failed to run: no verdict on the sink
/// (outcome `error`, exit 3); the other modes go on.
fn rig_failed(s: &Scenario, mode: SinkMode, e: &anyhow::Error) -> crate::results::summary::ModeSummary {
    let row = summary::rig_failed(mode, verdict::expectation_text(s.expect.get(&mode)), &format!("{e:#}"));
    progress(&format!("{mode}: {}", row.reason));
    row
}

/// Runs these modes at the same time on `cluster` (one mode: alone), then
/// judges each; one row per mode, in `group`'s order.
async fn run_group(
    plan: &Plan,
    cluster: &mut dyn Cluster,
    group: &[SinkMode],
    times: &mut Timings,
) -> Vec<crate::results::summary::ModeSummary> {
    let s = &plan.scenario;
    let mut rows: Vec<Option<crate::results::summary::ModeSummary>> = group.iter().map(|_| None).collect();
    let t = Instant::now();
    let mut ready = vec![];
    for (i, &mode) in group.iter().enumerate() {
        match prepare(plan, &*cluster, mode).await {
            Ok(p) => ready.push((i, p)),
            Err(e) => rows[i] = Some(rig_failed(s, mode, &e)),
        }
    }
    times.topics_ms += ms(t.elapsed());

    // /proc/self/exe names this very binary even if a rebuild replaced the
    // file on disk during a long run; current_exe() would then point at
    // "... (deleted)".
    let bin = if std::path::Path::new("/proc/self/exe").exists() {
        PathBuf::from("/proc/self/exe")
    } else {
        std::env::current_exe().unwrap_or_else(|_| PathBuf::from("sinkhole"))
    };
    let runs: Vec<ModeRun<'_>> = ready
        .iter()
        .map(|(_, p)| ModeRun {
            run_id: plan.run_id.clone(),
            mode: p.mode,
            scenario: s,
            dir: p.dir.clone(),
            topic: p.topic.clone(),
            tid_prefix: plan.tid_prefix(p.mode),
            sinkhole_bin: bin.clone(),
            seed: plan.seed,
            // Progress goes to stderr; --json keeps stdout for the summary.
            progress: !progress_redirected(),
        })
        .collect();
    let lead = s
        .lead
        .and_then(|l| ready.iter().position(|(_, p)| p.mode == l))
        .map(runner::Lead::Member)
        .unwrap_or(runner::Lead::First);
    let t = Instant::now();
    let outcomes = runner::run_modes(runs, s.faults.clone(), lead, cluster).await;
    times.jobs_ms += ms(t.elapsed());

    // Every mode's drain and check at once: a drain that waits for the
    // broker to abort a transaction holds up no other mode.
    let t = Instant::now();
    let mut judging = tokio::task::JoinSet::new();
    for ((i, p), outcome) in ready.into_iter().zip(outcomes) {
        let mode = p.mode;
        match outcome.with_context(|| format!("running mode {mode}")) {
            Ok(o) => {
                let (plan, bootstrap) = (plan.clone(), cluster.bootstrap());
                judging.spawn(async move { (i, mode, judge(&plan, bootstrap, p, o).await) });
            }
            Err(e) => {
                if let Some(t) = p.tail {
                    let _ = t.stop().await;
                }
                rows[i] = Some(rig_failed(s, mode, &e));
            }
        }
    }
    while let Some(r) = judging.join_next().await {
        match r {
            Ok((i, mode, Ok((row, first)))) => {
                rows[i] = Some(row);
                times.first_transaction_ms.push((mode, first));
            }
            Ok((i, mode, Err(e))) => rows[i] = Some(rig_failed(s, mode, &e)),
            Err(e) => progress(&format!("a mode's check panicked: {e}")),
        }
    }
    times.check_ms += ms(t.elapsed());
    times.first_transaction_ms.sort_by_key(|(m, _)| group.iter().position(|g| g == m));
    rows.into_iter()
        .zip(group)
        .map(|(r, &mode)| r.unwrap_or_else(|| rig_failed(s, mode, &anyhow!("the mode's check did not finish"))))
        .collect()
}

/// Drains and checks one mode's topic, builds its verdict and latency, and
/// writes verdict.json; with the job's start-to-first-transaction time.
async fn judge(
    plan: &Plan,
    bootstrap: String,
    p: Prepared,
    outcome: ModeOutcome,
) -> anyhow::Result<(crate::results::summary::ModeSummary, Option<u64>)> {
    let s = &plan.scenario;
    let Prepared { mode, dir, topic, tail } = p;
    let seen = match tail {
        Some(t) => t.stop().await.map_err(|e| progress(&format!("{mode}: visibility tail: {e:#}"))).ok(),
        None => None,
    };
    // A mode the broker cannot run wrote nothing worth checking.
    let report = if matches!(outcome.job, JobOutcome::Unsupported { .. }) {
        None
    } else {
        progress(&format!("{mode}: job {:?}; draining {topic}", outcome.job));
        let spec = CheckSpec {
            bootstrap,
            topic: topic.clone(),
            expected: Expected {
                run_id: plan.run_id.clone(),
                parallelism: s.job.parallelism,
                records_per_subtask: s.job.records_per_subtask,
            },
            history: Some(outcome.history.clone()),
            dir: dir.clone(),
            timeout: drain_timeout(s),
        };
        Some(checker::check_mode(&spec).await.with_context(|| format!("checking mode {mode}"))?)
    };
    let mut v = verdict::build(VerdictInput {
        scenario: &s.name,
        run_id: &plan.run_id,
        mode,
        expectation: s.expect.get(&mode),
        outcome: &outcome,
        report: report.as_ref(),
        kafka: &s.cluster.kafka,
        seed: plan.seed,
        drained: dir.join(checker::store::FILE_NAME),
    });
    // Unchecked (unsupported): still say how many records the job was for.
    v.counts.expected = u64::from(s.job.parallelism) * s.job.records_per_subtask;
    match latency::finish_mode(mode, &dir, &outcome.history, seen.as_ref()) {
        Ok(l) => v.latency = l,
        Err(e) => progress(&format!("{mode}: latency not recorded: {e}")),
    }
    let path = verdict::write(&dir, &v).context("writing verdict.json")?;
    progress(&format!("{mode}: {} — {}", v.outcome.name(), v.reason));
    let first =
        crate::history::read(&outcome.history).ok().and_then(|h| first_transaction_ms(&h.events, s.job.parallelism));
    Ok((summarize(&v, Some(path)), first))
}

/// From the job's first start to the moment every subtask had opened its
/// first transaction (the workers' start-up: process, connection,
/// InitProducerId); None if some subtask never opened one.
pub fn first_transaction_ms(events: &[sinkhole_workloads::model::Event], parallelism: u32) -> Option<u64> {
    use sinkhole_workloads::model::{EventKind, Source};
    let start = events.iter().find(|e| matches!(e.kind, EventKind::JobStarted { .. }))?.mono_us;
    let mut first = vec![None; parallelism as usize];
    for e in events {
        if let (EventKind::TxnOpened { .. }, Source::Worker { subtask }) = (&e.kind, &e.source) {
            if let Some(slot) = first.get_mut(*subtask as usize) {
                slot.get_or_insert(e.mono_us);
            }
        }
    }
    let last = first.into_iter().collect::<Option<Vec<u64>>>()?.into_iter().max()?;
    Some(last.saturating_sub(start) / 1000)
}

/// `sinkhole run`: plans the run, says where its results go, and executes
/// it; the cluster's backend and image may be chosen on the command line
/// (`--backend`, `--image`) instead of the scenario's. The caller prints the
/// summary (`args.json` says how).
pub async fn run_on(args: &RunArgs, backend: Option<Backend>, image: Option<String>) -> Result<Summary, RunError> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let mut plan = plan(args, now)?;
    if let Some(b) = backend {
        plan.scenario.cluster.backend = b;
    }
    if image.is_some() {
        plan.scenario.cluster.image = image;
    }
    if !args.bootstrap.is_empty() {
        plan.scenario.cluster.backend = Backend::External;
        plan.scenario.cluster.external.get_or_insert_with(Default::default).bootstrap = args.bootstrap.clone();
    }
    if let Some(e) = &plan.scenario.cluster.external {
        // The command line's bootstrap is checked as the file's would be.
        if let Some((path, why)) = crate::scenario::external::problems(e, plan.scenario.cluster.brokers).first() {
            return Err(RunError::BadInput(anyhow!("{path}: {why}")));
        }
    }
    progress(&format!(
        "run {} (seed {}; replay with --seed {}), results in {}",
        plan.run_id,
        plan.seed,
        plan.seed,
        plan.dir.display()
    ));
    execute(&plan).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenarios() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
    }

    fn args(file: &str) -> RunArgs {
        RunArgs { file: scenarios().join(file), results: "/tmp/r".into(), seed: Some(7), ..RunArgs::default() }
    }

    #[test]
    fn timestamps_are_utc() {
        assert_eq!(timestamp(0), "19700101T000000");
        assert_eq!(timestamp(951_782_400), "20000229T000000");
        assert_eq!(timestamp(1_787_400_000 + 3_723), "20260822T130203");
    }

    #[test]
    fn plan_names_the_run_and_applies_the_command_line() {
        let p = plan(&args("flip319-long-outage.yaml"), 1_787_400_000).unwrap();
        assert_eq!(p.run_id, "flip319-long-outage-20260822T120000-7");
        assert_eq!(p.dir, PathBuf::from("/tmp/r/flip319-long-outage-20260822T120000-7"));
        assert_eq!(p.topic(SinkMode::Legacy), "sinkhole-flip319-long-outage-20260822T120000-7-legacy");
        assert!(p.tid_prefix(SinkMode::Kip939).starts_with("sinkhole-") && p.tid_prefix(SinkMode::Kip939).len() <= 30);
        assert_eq!(p.scenario.modes.len(), 3);

        let mut a = args("flip319-long-outage.yaml");
        a.modes = vec!["legacy".into(), "legacy".into()];
        a.kafka = Some("4.0.2".into());
        let p = plan(&a, 0).unwrap();
        assert_eq!(p.scenario.modes, vec![SinkMode::Legacy]);
        assert_eq!(p.scenario.expect.keys().copied().collect::<Vec<_>>(), vec![SinkMode::Legacy]);
        assert_eq!(p.scenario.cluster.kafka, "4.0.2");

        a.modes = vec!["flink".into()];
        let Err(RunError::BadInput(e)) = plan(&a, 0) else { panic!("unknown mode accepted") };
        assert!(e.to_string().contains("--mode flink: unknown mode"), "{e}");
        let mut a = args("flip319-long-outage.yaml");
        a.kafka = Some("four".into());
        assert!(matches!(plan(&a, 0), Err(RunError::BadInput(_))));
        let Err(RunError::BadInput(e)) = plan(&args("no-such.yaml"), 0) else { panic!("missing file accepted") };
        assert!(e.to_string().contains("no-such.yaml"), "{e}");
    }

    #[test]
    fn resolved_scenario_round_trips() {
        let p = plan(&args("kill-restore.yaml"), 0).unwrap();
        let yaml = serde_saphyr::to_string(&p.scenario).unwrap();
        let back = scenario::from_str(&yaml, "resolved.yaml").unwrap();
        assert_eq!(back, p.scenario);
    }

    #[test]
    fn broker_config_adds_2pc_unless_set() {
        let mut p = plan(&args("flip319-long-outage.yaml"), 0).unwrap();
        let m = broker_config(&p.scenario);
        assert_eq!(m["transaction.two.phase.commit.enable"], "true");
        assert_eq!(m["unstable.api.versions.enable"], "true");
        assert_eq!(m["transaction.abort.timed.out.transaction.cleanup.interval.ms"], "500");
        p.scenario
            .cluster
            .broker_config
            .insert("transaction.two.phase.commit.enable".into(), scenario::ConfigValue::Bool(false));
        assert_eq!(broker_config(&p.scenario)["transaction.two.phase.commit.enable"], "false");
        // 5000 ms timeout + 2 × 500 ms scans + 5 s
        assert_eq!(drain_timeout(&p.scenario), Duration::from_millis(15_000));
    }
}
