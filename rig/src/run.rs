//! `sinkhole run FILE`: one scenario, every mode in turn on one cluster
//! (Jepsen's `core`: the test end to end).
//!
//! [`plan`] does everything that needs no broker (load, validate, resolve
//! modes and version, name the run), [`execute`] starts the cluster and runs
//! the modes: topic, runner, checker, verdict, then the results a user and a
//! CI job read ([`crate::results`]: summary.json, junit.xml, report.html).
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};
use sinkhole_workloads::model::{Mutant, SinkMode};
use sinkhole_workloads::wire::acls::{self, AclBinding};
use sinkhole_workloads::wire::client::{Client, ClientConfig};
use sinkhole_workloads::wire::SaslPlain;

use crate::checker::{self, CheckSpec, Expected};
use crate::cluster::containers::{ContainersCluster, ContainersSpec};
use crate::cluster::local::{LocalCluster, LocalSpec};
use crate::cluster::Cluster;
use crate::history::{JobOutcome, ModeOutcome};
use crate::install;
use crate::latency;
use crate::results::exit::Policy;
use crate::results::junit;
use crate::results::summary::{self, exit_code_with, summarize, Summary};
use crate::runner::{self, ModeRun};
use crate::scenario::Backend;
use crate::scenario::{self, Scenario};
use crate::verdict::{self, VerdictInput};

/// The command line of `sinkhole run`.
#[derive(Debug, Clone, Default)]
pub struct RunArgs {
    pub file: PathBuf,
    /// Mode names; empty = the scenario's. A mutant's name runs it.
    pub modes: Vec<String>,
    /// Mutants to run besides the modes, each in a scenario that runs its
    /// base mode (`sinkhole calibrate`).
    pub mutants: Vec<Mutant>,
    pub kafka: Option<String>,
    pub seed: Option<u64>,
    pub results: PathBuf,
    pub json: bool,
    /// `--fail-on-inconclusive`: the summary's exit code counts inconclusive modes as failed.
    pub fail_on_inconclusive: bool,
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
    /// A mutant's `~` is not legal in a topic name: [`SinkMode::slug`].
    pub fn topic(&self, m: SinkMode) -> String {
        format!("sinkhole-{}-{}", self.run_id, m.slug())
    }
    pub fn tid_prefix(&self, m: SinkMode) -> String {
        format!("sinkhole-{}-{}", self.short_id, m.slug())
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
    if let Some(k) = &args.kafka {
        let v = install::parse_versions(k).map_err(|e| RunError::BadInput(e.into()))?;
        if v.len() != 1 {
            return Err(RunError::BadInput(anyhow!("--kafka takes one version, got {}", v.join(","))));
        }
        s.cluster.kafka = v[0].clone();
    }
    // The expectations of this version and protocol (known Kafka bugs), once
    // the version is known; the resolved scenario.yaml has plain ones.
    for note in crate::scenario::expect_by::resolve(&mut s) {
        progress(&note);
    }
    let written = s.expect.clone();
    if !args.modes.is_empty() {
        let mut modes = Vec::new();
        for name in &args.modes {
            let m = SinkMode::parse(name).ok_or_else(|| RunError::BadInput(anyhow!(unknown_mode("--mode", name))))?;
            if !modes.contains(&m) {
                modes.push(m);
            }
        }
        s.expect.retain(|m, _| modes.contains(m));
        s.modes = modes;
    }
    add_mutants(&mut s, &args.mutants);
    // A mutant is judged against the expectation of the mode it mutates,
    // resting on the same premises (unless the scenario states its own).
    let premises = s.premise.clone();
    s.premise.retain(|m, _| s.modes.contains(m));
    for m in s.modes.clone() {
        if let Some(base) = m.mutant().map(|x| x.base()) {
            if let (false, Some(e)) = (s.expect.contains_key(&m), written.get(&base).cloned()) {
                s.expect.insert(m, e);
            }
            if let (false, Some(p)) = (s.premise.contains_key(&m), premises.get(&base).cloned()) {
                s.premise.insert(m, p);
            }
        }
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

/// The error for a mode name that is neither a mode nor a mutant.
pub fn unknown_mode(flag: &str, name: &str) -> String {
    format!(
        "{flag} {name}: unknown mode; known modes: {}; mutants: {}",
        SinkMode::ALL.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
        Mutant::ALL.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
    )
}

/// Adds each of `mutants` whose base mode the scenario runs, after the
/// scenario's own modes (the mutant runs on the same cluster, under the
/// same faults, with its base's expectation).
pub fn add_mutants(s: &mut Scenario, mutants: &[Mutant]) {
    for m in mutants {
        let mode = SinkMode::Mutant(*m);
        if s.modes.contains(&m.base()) && !s.modes.contains(&mode) {
            s.modes.push(mode);
        }
    }
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

/// Writes the resolved scenario, starts the cluster, runs every mode, writes
/// the verdicts and the summary, tears the cluster down.
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
    let t0 = std::time::Instant::now();
    let mut cluster = start_cluster(plan).await?;
    progress(&format!("cluster ready at {} ({} backend)", cluster.bootstrap(), cluster.backend()));

    let mut modes = Vec::new();
    // Each mode's premises as held, for the mutants that run after their base.
    let mut held = std::collections::BTreeMap::new();
    for &mode in &s.modes {
        let row = run_one(plan, cluster.as_mut(), mode, &mut held).await;
        let row = match row {
            Ok(r) => r,
            Err(e) => {
                // The rig itself failed for this mode: no verdict on the sink
                // (outcome `error`, exit 3); go on with the other modes.
                let row = summary::rig_failed(mode, verdict::expectation_text(s.expect.get(&mode)), &format!("{e:#}"));
                progress(&format!("{mode}: {}", row.reason));
                row
            }
        };
        modes.push(row);
    }
    cluster.teardown().await;
    let mode_dirs: Vec<PathBuf> = s.modes.iter().map(|m| plan.mode_dir(*m)).collect();
    if let Err(e) = latency::write_run_log(&plan.dir, &mode_dirs) {
        progress(&format!("latency.hlog not written: {e}"));
    }

    let summary = Summary {
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
        wall_ms: Some(t0.elapsed().as_millis() as u64),
    };
    std::fs::write(plan.dir.join("summary.json"), crate::provenance::to_json(&summary)?)
        .context("writing summary.json")?;
    junit::write(&plan.dir, &summary).context("writing junit.xml")?;
    // The page is for people; a run whose report fails is still a run.
    match crate::results::report::write_report(&plan.dir) {
        Ok(p) => progress(&format!("report: {}", p.display())),
        Err(e) => progress(&format!("report.html not written: {e:#}")),
    }
    Ok(summary)
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

/// `held`: the premises of the modes run before, as held (a mutant's are
/// read beside its base's: [`crate::premise::with_base`]); this mode's are added.
async fn run_one(
    plan: &Plan,
    cluster: &mut dyn Cluster,
    mode: SinkMode,
    held: &mut std::collections::BTreeMap<SinkMode, Vec<crate::premise::PremiseRecord>>,
) -> anyhow::Result<crate::results::summary::ModeSummary> {
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
    // The live read_committed tail for `visibility`, started before any
    // worker; without it the run goes on, unmeasured.
    let tail = match latency::tail::Tail::start(&cluster.bootstrap(), &topic, s.topic.partitions) {
        Ok(t) => Some(t),
        Err(e) => {
            progress(&format!("{mode}: the visibility tail did not start ({e}); visibility is not measured"));
            None
        }
    };

    let outcome: ModeOutcome = runner::run_mode(ModeRun {
        run_id: plan.run_id.clone(),
        mode,
        scenario: s,
        dir: dir.clone(),
        cluster: &mut *cluster,
        topic: topic.clone(),
        tid_prefix: plan.tid_prefix(mode),
        // /proc/self/exe names this very binary even if a rebuild replaced
        // the file on disk during a long run; current_exe() would then point
        // at "... (deleted)".
        sinkhole_bin: if std::path::Path::new("/proc/self/exe").exists() {
            std::path::PathBuf::from("/proc/self/exe")
        } else {
            std::env::current_exe().context("locating the sinkhole binary")?
        },
        seed: plan.seed,
        // Progress goes to stderr; --json keeps stdout for the summary.
        progress: !progress_redirected(),
    })
    .await
    .with_context(|| format!("running mode {mode}"))?;
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
            bootstrap: cluster.bootstrap(),
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
    // The premises, from what the run observed (the observer's looks are in the history).
    let premises = match s.premise.get(&mode) {
        Some(p) => {
            let events = crate::history::read(&outcome.history).map(|h| h.events).unwrap_or_default();
            crate::premise::evaluate(p, &outcome.faults, &events)
        }
        None => vec![],
    };
    let premises = match (mode.mutant(), held.get(&mode.base())) {
        (Some(_), Some(base)) => crate::premise::with_base(premises, mode.base().name(), base),
        _ => premises,
    };
    held.insert(mode, premises.clone());
    let mut v = verdict::build(VerdictInput {
        scenario: &s.name,
        run_id: &plan.run_id,
        mode,
        expectation: s.expect.get(&mode),
        premises,
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
    Ok(summarize(&v, Some(path)))
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
    fn a_named_mutant_runs_with_its_base_expectation() {
        let mut a = args("flip319-long-outage.yaml");
        a.modes = vec!["twopc-inject".into(), "legacy~restore-off-by-one".into()];
        let p = plan(&a, 1_787_400_000).unwrap();
        let m = SinkMode::Mutant(Mutant::RestoreOffByOne);
        assert_eq!(p.scenario.modes, vec![SinkMode::TwopcInject, m]);
        // Its base (legacy) is not run, but its expectation is the mutant's.
        assert_eq!(
            p.scenario.expect.get(&m),
            Some(&scenario::Expectation::Counts(
                [(scenario::CountName::Lost, scenario::Condition::Expr(">0".into()))].into()
            ))
        );
        assert_eq!(p.topic(m), "sinkhole-flip319-long-outage-20260822T120000-7-legacy.restore-off-by-one");
        assert!(!p.tid_prefix(m).contains('~'));
        assert_eq!(p.mode_dir(m).file_name().unwrap(), "legacy~restore-off-by-one");

        // --mutants adds every mutant whose base the scenario runs, after its own modes.
        let mut a = args("kafka-6119.yaml");
        a.mutants = Mutant::ALL.to_vec();
        let p = plan(&a, 0).unwrap();
        assert_eq!(&p.scenario.modes[..2], &[SinkMode::Legacy, SinkMode::TwopcInject]);
        assert_eq!(p.scenario.modes.len(), 2 + Mutant::ALL.len(), "{:?}", p.scenario.modes);
        for m in &p.scenario.modes[2..] {
            assert_eq!(p.scenario.expect.get(m), p.scenario.expect.get(&m.base()), "{m}");
        }
        let mut a = args("kill-restore.yaml");
        a.modes = vec!["at-least-once".into()];
        a.mutants = Mutant::ALL.to_vec();
        assert_eq!(plan(&a, 0).unwrap().scenario.modes, vec![SinkMode::AtLeastOnce], "no base, no mutant");
        a.modes = vec!["legacy~flink".into()];
        let Err(RunError::BadInput(e)) = plan(&a, 0) else { panic!("unknown mutant accepted") };
        assert!(e.to_string().contains("mutants: legacy~assume-committed"), "{e}");
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
