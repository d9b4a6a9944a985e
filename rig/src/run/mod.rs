//! `sinkhole run FILE`: one scenario, its modes side by side on one cluster
//! (or one after another), end to end (Jepsen's `core`: the test).
//!
//! [`plan`] does everything that needs no broker (load, validate, resolve
//! modes and version, name the run), [`execute`] starts the cluster and runs
//! the modes: topics, runner, checker, verdicts, then the results a user and
//! a CI job read ([`crate::results`]: summary.json, junit.xml, report.html).
//! - [`cluster`]: starting the scenario's cluster on its backend;
//! - [`group`]: the modes that run at once, from their topics to their verdicts;
//! - [`reuse`]: a cluster kept for the next run with the same spec, and its health check;
//! - [`tidy`]: the transactions a run left open, aborted when its cluster outlives it.
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};
use sinkhole_model::{Mutant, SinkMode};

use crate::results::exit::Policy;
use crate::results::junit;
use crate::results::summary::{exit_code_with, Summary, Timings};
use sinkhole_base::rundir::{ModeDir, RunDir};
use sinkhole_checker::latency;
use sinkhole_cluster::Cluster;
use sinkhole_scenario::Backend;
use sinkhole_scenario::{Scenario, Timing};

mod cluster;
mod group;
mod readers;
pub mod reuse;
pub mod share;
mod tidy;

use cluster::start_cluster;
pub use cluster::{sink_acls, CONTAINERS_NOT_BUILT, SINK_USER};
pub use group::first_transaction_ms;
use group::run_group;
pub use reuse::{ClusterKey, ClusterUse, Warm};

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
    /// flink-kafkasink: a contributor's connector jar instead of the scenario's.
    pub connector_jar: Option<PathBuf>,
    /// flink-kafkasink: this flink-connector-kafka release instead of the scenario's
    /// (`sinkhole bisect --connector`).
    pub connector: Option<String>,
    /// `--sequential`: the modes one after another, as `sequential: true`.
    pub sequential: bool,
    /// `--bootstrap`: an existing cluster (`backend: external`), instead of the scenario's
    /// `cluster.external.bootstrap`.
    pub bootstrap: Vec<String>,
    /// A campaign's run (matrix, calibration, exploration, a shrink's try): the local brokers'
    /// log segments are removed when the cluster is torn down; their logs stay. A single run
    /// keeps them.
    pub drop_data: bool,
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
    /// `results/<run-id>/`: every file of the run is named by it.
    pub dir: RunDir,
    /// The resolved fault list (explicit faults, then the random schedule's),
    /// already in `scenario.faults`; written to `schedule.json`.
    pub schedule: sinkhole_scenario::schedule::Resolved,
    /// How the summary's exit code counts inconclusive modes.
    pub policy: Policy,
    /// [`RunArgs::drop_data`].
    pub drop_data: bool,
    /// The derived timeouts, from the resolved scenario: the observer's and the nemesis' looks
    /// past the transaction timeout, the drain's wait.
    pub timing: Timing,
}

impl Plan {
    pub fn mode_dir(&self, m: SinkMode) -> ModeDir {
        self.dir.mode(m.name())
    }
    /// A mutant's `~` is not legal in a topic name: [`SinkMode::slug`].
    pub fn topic(&self, m: SinkMode) -> String {
        sinkhole_base::rundir::topic_of(&self.run_id, &m.slug())
    }
    pub fn tid_prefix(&self, m: SinkMode) -> String {
        format!("sinkhole-{}-{}", self.short_id, m.slug())
    }
}

/// UTC `yyyymmddThhmmss` for a Unix time.
pub fn timestamp(unix_s: u64) -> String {
    sinkhole_base::utc::Utc::from_unix(unix_s).compact()
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
    let mut s = sinkhole_scenario::load(&args.file).map_err(|e| RunError::BadInput(anyhow!(e.render())))?;
    if let Some(k) = &args.kafka {
        let v = sinkhole_install::parse_versions(k).map_err(|e| RunError::BadInput(e.into()))?;
        if v.len() != 1 {
            return Err(RunError::BadInput(anyhow!("--kafka takes one version, got {}", v.join(","))));
        }
        s.cluster.kafka = v[0].clone();
        // Validation saw the file's version; a share-group source on one without share groups is refused here.
        if let Some(why) = s.share_source().and_then(|_| sinkhole_scenario::source::no_share_groups(&s.cluster.kafka)) {
            return Err(RunError::BadInput(anyhow!("--kafka {}: {why}", s.cluster.kafka)));
        }
    }
    // The expectations of this version and protocol (known Kafka bugs), once
    // the version is known; the resolved scenario.yaml has plain ones.
    for note in sinkhole_scenario::expect_by::resolve(&mut s) {
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
    if let Some(c) = &args.connector {
        if !s.modes.contains(&SinkMode::FlinkKafkasink) {
            return Err(RunError::BadInput(anyhow!("--connector {c}: the scenario runs no flink-kafkasink mode")));
        }
        let f = s.flink.get_or_insert_with(Default::default);
        sinkhole_install::flink::check_versions(&f.version, c).map_err(|e| RunError::BadInput(e.into()))?;
        f.connector = Some(c.clone());
    }
    if let Some(jar) = &args.connector_jar {
        let f = s.flink.get_or_insert_with(Default::default);
        f.connector_jar = Some(std::path::absolute(jar).unwrap_or_else(|_| jar.clone()));
        sinkhole_install::flink::check_connector_jar(jar).map_err(|e| RunError::BadInput(e.into()))?;
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
    let schedule = sinkhole_scenario::schedule::resolve(&s, seed);
    s.faults = schedule.faults.clone();
    s.schedule = None;
    // The premises each mode's expectation rests on, for the modes that state none: resolved
    // once the expectations and the faults are final, and written into scenario.yaml with them.
    for m in sinkhole_scenario::premise::defaults::resolve(&mut s) {
        if m.source == sinkhole_scenario::premise::defaults::Source::Defaults {
            for p in &m.premises {
                progress(&format!("{}: premise {} by default ({})", m.mode, p.premise, p.why));
            }
        }
    }
    let run_id = format!("{}-{}-{seed}", s.name, timestamp(now_unix_s));
    let dir = RunDir::at(args.results.join(&run_id));
    let policy = Policy { fail_on_inconclusive: args.fail_on_inconclusive };
    let timing = Timing::of(&s);
    Ok(Plan {
        timing,
        scenario: s,
        source: args.file.clone(),
        seed,
        short_id: short_id(&run_id),
        run_id,
        dir,
        schedule,
        policy,
        drop_data: args.drop_data,
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

pub fn progress(line: &str) {
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
    // A share-group source's lock, delivery limit, heartbeat and session, unless set.
    for (k, v) in sinkhole_scenario::source::broker_settings(s) {
        m.entry(k).or_insert(v);
    }
    m
}

/// Writes the resolved scenario, starts the cluster, runs the modes (side by
/// side, or one after another when the scenario or `--sequential` says so),
/// writes the verdicts and the summary, tears the cluster down.
pub async fn execute(plan: &Plan) -> Result<Summary, RunError> {
    execute_with(plan, None, false).await.0
}

/// [`execute`] on `warm`'s cluster when it has the same spec and is healthy
/// (else on a fresh one, the summary saying why); with `keep`, the cluster
/// is handed back instead of torn down, for the next run with that spec.
pub async fn execute_with(plan: &Plan, warm: Option<Warm>, keep: bool) -> (Result<Summary, RunError>, Option<Warm>) {
    // What the run is, on disk before any cluster: a run whose cluster never
    // starts still says which scenario and schedule it was.
    if let Err(e) = write_plan(plan) {
        return (Err(RunError::Failed(e)), warm);
    }
    let key = reuse::cluster_key(plan);
    let t0 = Instant::now();
    let (warm, mut used) = match take_warm(warm, key.as_ref()).await {
        Ok(w) => (Some(w), ClusterUse::default()),
        Err((why, None)) => (None, ClusterUse { fresh_because: why, ..ClusterUse::default() }),
        Err((why, Some(mut w))) => {
            w.cluster.teardown().await;
            (None, ClusterUse { fresh_because: why, ..ClusterUse::default() })
        }
    };
    let (cluster, started_by) = match warm {
        Some(w) => {
            used.reused_from = Some(w.started_by.clone());
            (w.cluster, w.started_by)
        }
        None => match start_cluster(plan).await {
            Ok(c) => (c, plan.run_id.clone()),
            Err(e) => return (Err(e), None),
        },
    };
    let start_ms = ms(t0.elapsed());
    let mut cluster = cluster;
    let result = execute_on(plan, cluster.as_mut(), start_ms, used).await;
    let kept = keep && key.is_some() && result.is_ok();
    // What the run left open would outlive it there: the next run's, or the owners'.
    if kept || plan.scenario.cluster.backend == Backend::External {
        let prefixes: Vec<String> = plan.scenario.modes.iter().map(|m| plan.tid_prefix(*m)).collect();
        let timeout = plan.scenario.job.transaction_timeout_ms;
        if let Some(line) = tidy::abort_left_open(&cluster.client_bootstrap(), &prefixes, timeout).await.line() {
            progress(&line);
        }
    }
    // A campaign's run drops its data with its cluster; a kept cluster the rig started drops the
    // run's topics (on an external cluster, as its segments, they are left to its owners).
    if kept && plan.drop_data && plan.scenario.cluster.backend != Backend::External {
        let topics = reuse::run_topics(plan);
        match reuse::drop_topics(&cluster.bootstrap_list(), &topics).await {
            Ok(()) => {
                progress(&format!("the run's {} topic(s) deleted; the cluster is kept for the next run", topics.len()))
            }
            Err(e) => progress(&format!("the run's topics were not deleted from the kept cluster: {e}")),
        }
    }
    let next = match (kept, key) {
        (true, Some(key)) => Some(Warm { cluster, key, started_by }),
        _ => {
            cluster.teardown().await;
            None
        }
    };
    // The page drawn again, last: with the run's time in its header, as `sinkhole check` draws it
    // from summary.json, and, once the brokers are stopped, with their logs complete (a broker's
    // log4j writes behind), which each anomaly's story cites.
    if result.is_ok() {
        if let Err(e) = crate::results::report::write_report(&plan.dir) {
            progress(&format!("report.html not rewritten: {e:#}"));
        }
    }
    (result, next)
}

/// `scenario.yaml` (resolved: the faults the seed drew, no schedule) and `schedule.json`.
fn write_plan(plan: &Plan) -> anyhow::Result<()> {
    std::fs::create_dir_all(&plan.dir).with_context(|| format!("creating {}", plan.dir.path().display()))?;
    let yaml = serde_saphyr::to_string(&plan.scenario).context("rendering the resolved scenario")?;
    std::fs::write(
        plan.dir.scenario(),
        format!("# resolved from {} (run {}, seed {})\n{yaml}", plan.source.display(), plan.run_id, plan.seed),
    )
    .context("writing scenario.yaml")?;
    sinkhole_scenario::schedule::write(&plan.dir, &plan.schedule).context("writing schedule.json")?;
    Ok(())
}

/// The offered cluster if it fits this run, or why not (and the cluster to tear down).
async fn take_warm(warm: Option<Warm>, key: Option<&ClusterKey>) -> Result<Warm, (Option<String>, Option<Warm>)> {
    let Some(mut w) = warm else { return Err((None, None)) };
    if key != Some(&w.key) {
        let why = match key {
            None => "this scenario's cluster is its own (an authorizer)".to_string(),
            Some(_) => "the cluster spec differs from the previous run's".to_string(),
        };
        return Err((Some(why), Some(w)));
    }
    match reuse::health(w.cluster.as_mut()).await {
        Ok(()) => {
            progress(&format!(
                "reusing the cluster of run {} (every node ready, no partition under-replicated, no open transaction)",
                w.started_by
            ));
            Ok(w)
        }
        Err(why) => {
            let why = format!("the cluster of run {} was unhealthy: {why}", w.started_by);
            progress(&format!("{why}; starting a fresh one"));
            Err((Some(why), Some(w)))
        }
    }
}

/// Everything of a run but starting and stopping its cluster.
async fn execute_on(
    plan: &Plan,
    cluster: &mut dyn Cluster,
    start_ms: u64,
    used: ClusterUse,
) -> Result<Summary, RunError> {
    let s = &plan.scenario;

    let started =
        sinkhole_base::utc::Utc::from_unix(sinkhole_base::utc::now_ms().saturating_sub(start_ms) / 1000).rfc3339();
    let t0 = Instant::now() - Duration::from_millis(start_ms);
    let mut times = Timings { side_by_side: !s.sequential && s.modes.len() > 1, ..Timings::default() };
    times.cluster_start_ms = start_ms;
    if let Some(p) = cluster.proxy() {
        // A kept proxy draws from this run's seed, as a fresh one would.
        p.reseed(plan.seed);
    }
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
    // Each mode's premises as held, for the mutants judged beside their base.
    let mut held = std::collections::BTreeMap::new();
    for group in groups {
        modes.extend(run_group(plan, &mut *cluster, &group, &mut times, &mut held).await);
    }
    let mode_dirs: Vec<ModeDir> = s.modes.iter().map(|m| plan.mode_dir(*m)).collect();
    if let Err(e) = latency::write_run_log(&plan.dir, &mode_dirs) {
        progress(&format!("latency.hlog not written: {e}"));
    }

    let mut summary = Summary {
        run_id: plan.run_id.clone(),
        scenario: s.name.clone(),
        source: plan.source.clone(),
        kafka: s.cluster.kafka.clone(),
        seed: plan.seed,
        dir: plan.dir.path().to_path_buf(),
        exit_code: exit_code_with(&modes, plan.policy),
        modes,
        fail_on_inconclusive: plan.policy.fail_on_inconclusive,
        started: Some(started),
        wall_ms: None,
        side_by_side: times.side_by_side,
        lead: times.side_by_side.then(|| s.lead.map(|m| m.name().to_string()).unwrap_or_else(|| "first".into())),
        timings: None,
        cluster_reused_from: used.reused_from,
        cluster_fresh_because: used.fresh_because,
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
    // Drawn again by `execute_with`, with the run's time in its header.
    Ok(summary)
}

fn write_summary(plan: &Plan, summary: &Summary) -> Result<(), RunError> {
    std::fs::write(plan.dir.summary(), sinkhole_base::provenance::to_json(summary)?).context("writing summary.json")?;
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

/// `sinkhole run`: plans the run, says where its results go, and executes
/// it; the cluster's backend and image may be chosen on the command line
/// (`--backend`, `--image`) instead of the scenario's. The caller prints the
/// summary (`args.json` says how).
pub async fn run_on(args: &RunArgs, backend: Option<Backend>, image: Option<String>) -> Result<Summary, RunError> {
    execute(&planned(args, backend, image)?).await
}

/// [`run_on`] for a campaign's run (an exploration's, a shrink's try, a replay): it takes the
/// cluster in `kept` when that has the same spec and is healthy ([`reuse::health`]; else it
/// starts its own, its summary saying why) and leaves its own cluster there for the next run.
/// What is left in `kept` is the caller's to tear down when the campaign ends, however it ends
/// (dropped, a local cluster's nodes are killed; a signal kills them with every process of the rig).
pub async fn run_keeping(args: &RunArgs, kept: &mut Option<Warm>) -> Result<Summary, RunError> {
    let plan = planned(args, None, None)?;
    let (result, next) = execute_with(&plan, kept.take(), true).await;
    *kept = next;
    result
}

/// [`plan`] with the command line's cluster choices, its run named on stderr.
fn planned(args: &RunArgs, backend: Option<Backend>, image: Option<String>) -> Result<Plan, RunError> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let mut plan = plan_unique(args, now)?;
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
        if let Some((path, why)) = sinkhole_scenario::external::problems(e, plan.scenario.cluster.brokers).first() {
            return Err(RunError::BadInput(anyhow!("{path}: {why}")));
        }
    }
    progress(&format!(
        "run {} (seed {}; replay with --seed {}), results in {}",
        plan.run_id,
        plan.seed,
        plan.seed,
        plan.dir.path().display()
    ));
    Ok(plan)
}

/// [`plan`] with a run directory of its own: two runs of the same scenario and seed started
/// within one second (a matrix's cells, a replay's tries) would share a run id (its timestamp
/// has seconds), so the later one takes the next second.
pub fn plan_unique(args: &RunArgs, now: u64) -> Result<Plan, RunError> {
    let mut t = now;
    loop {
        let p = plan(args, t)?;
        if !p.dir.path().exists() || t >= now + 3600 {
            return Ok(p);
        }
        t += 1;
    }
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
        assert_eq!(p.dir.path(), std::path::Path::new("/tmp/r/flip319-long-outage-20260822T120000-7"));
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
    fn plan_gives_each_mode_its_default_premises_and_writes_them_for_the_replay() {
        use sinkhole_scenario::premise::Premises;
        let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let mut a = args("x");
        a.file = data.join("flip319-no-premise.yaml");
        a.mutants = vec![Mutant::RestoreOffByOne];
        let p = plan(&a, 0).unwrap();
        let legacy = &p.scenario.premise[&SinkMode::Legacy];
        assert_eq!(legacy.timeout_abort.as_ref().and_then(|o| o.checkpoint), Some(3), "{legacy:?}");
        // The mutant rests on what its base rests on, so the faithful run's premise can vouch for it.
        assert_eq!(p.scenario.premise.get(&SinkMode::Mutant(Mutant::RestoreOffByOne)), Some(legacy));
        // The resolved scenario.yaml replays with the same premises, now its own.
        let back = sinkhole_scenario::from_str(&serde_saphyr::to_string(&p.scenario).unwrap(), "r.yaml").unwrap();
        assert_eq!(back.premise, p.scenario.premise);

        // An empty entry turns them off, for the mutant too.
        let dir = std::env::temp_dir().join(format!("sinkhole-plan-premise-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = std::fs::read_to_string(data.join("flip319-no-premise.yaml")).unwrap() + "premise:\n  legacy: {}\n";
        std::fs::write(dir.join("s.yaml"), text).unwrap();
        a.file = dir.join("s.yaml");
        let p = plan(&a, 0).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(p.scenario.premise.get(&SinkMode::Legacy), Some(&Premises::default()));
        assert_eq!(p.scenario.premise.get(&SinkMode::Mutant(Mutant::RestoreOffByOne)), Some(&Premises::default()));
    }

    #[test]
    fn a_share_group_source_on_a_release_without_share_groups_is_bad_input() {
        let mut a = args("share-clean.yaml");
        a.kafka = Some("4.0.2".into());
        let Err(RunError::BadInput(e)) = plan(&a, 0) else { panic!("4.0.2 accepted for a share-group source") };
        assert!(e.to_string().contains("--kafka 4.0.2: Kafka 4.0.2 has no usable share groups"), "{e}");
        a.kafka = Some("4.2.0".into());
        assert!(plan(&a, 0).is_ok());
    }

    #[test]
    fn resolved_scenario_round_trips() {
        let p = plan(&args("kill-restore.yaml"), 0).unwrap();
        let yaml = serde_saphyr::to_string(&p.scenario).unwrap();
        let back = sinkhole_scenario::from_str(&yaml, "resolved.yaml").unwrap();
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
            .insert("transaction.two.phase.commit.enable".into(), sinkhole_scenario::ConfigValue::Bool(false));
        assert_eq!(broker_config(&p.scenario)["transaction.two.phase.commit.enable"], "false");
        // 5000 ms timeout + 2 × 500 ms scans + 5 s is under the drain's floor; the look is one scan past the timeout.
        assert_eq!(p.timing.drain_timeout(), Duration::from_millis(15_000));
        assert_eq!(p.timing.look_after_ms(), 5_000 + 500 + 1_000);
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
            Some(&sinkhole_scenario::Expectation::Counts(
                [(sinkhole_scenario::CountName::Lost, sinkhole_scenario::Condition::Expr(">0".into()))].into()
            ))
        );
        assert_eq!(p.topic(m), "sinkhole-flip319-long-outage-20260822T120000-7-legacy.restore-off-by-one");
        assert!(!p.tid_prefix(m).contains('~'));
        assert_eq!(p.mode_dir(m).path().file_name().unwrap(), "legacy~restore-off-by-one");

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
}
