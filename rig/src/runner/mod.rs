//! The runner: one sink mode of one scenario, end to end — the subject (the
//! rig's own job) and the nemesis side by side, both writing one history.
//!
//! Jepsen's interpreter in miniature: the job runs on its own task, the
//! nemesis on this one, and they meet only at the subject boundary
//! ([`crate::subject`]). When the job has ended, the nemesis heals what is
//! still faulted, and the two reports make the mode's outcome.
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use sinkhole_workloads::model::SinkMode;
use tokio::sync::watch;

use crate::cluster::Cluster;
use crate::history::{self, ModeOutcome};
use crate::nemesis::{self, Nemesis};
use crate::scenario::Scenario;
use crate::subject::flink::{self, FlinkConfig};
use crate::subject::rig_job::{self, JobConfig, Launcher, ProcessLauncher};
use crate::subject::{JobReport, Subject};

#[cfg(test)]
mod tests;

/// One mode's run, on a cluster that is already up and a topic that exists.
pub struct ModeRun<'a> {
    pub run_id: String,
    pub mode: SinkMode,
    pub scenario: &'a Scenario,
    /// `results/<run-id>/<mode>/`: history.jsonl, checkpoints/, logs/ go here.
    pub dir: PathBuf,
    /// Either backend (local processes or containers).
    pub cluster: &'a mut dyn Cluster,
    pub topic: String,
    /// Transactional id prefix for this mode (unique per run and mode).
    pub tid_prefix: String,
    /// The `sinkhole` binary, for `sinkhole worker` processes.
    pub sinkhole_bin: PathBuf,
    pub seed: u64,
    /// Print progress lines on stderr.
    pub progress: bool,
}

/// Runs one mode of the scenario on `run.cluster` (already up, topic created)
/// until the job finishes, fails or turns out unsupported; every fault still
/// in effect is healed before it returns, so the topic can be read.
pub async fn run_mode(run: ModeRun<'_>) -> anyhow::Result<ModeOutcome> {
    if !run.mode.rig_job() {
        return run_flink(run).await;
    }
    let job = JobConfig {
        run_id: run.run_id.clone(),
        mode: run.mode,
        dir: run.dir.clone(),
        job: run.scenario.job.clone(),
        topic: run.topic.clone(),
        partitions: run.scenario.topic.partitions,
        tid_prefix: run.tid_prefix.clone(),
        progress: run.progress,
        sink_listener: run.scenario.cluster.authorizer.as_ref().and_then(|_| run.cluster.sink_listener()),
    };
    let launcher = ProcessLauncher::new(run.sinkhole_bin.clone());
    run_job(job, launcher, run.scenario.faults.clone(), run.cluster).await
}

/// The job of `cfg` with `launcher`'s workers, under `faults`, on `cluster`.
pub async fn run_job<L: Launcher + 'static, B: crate::cluster::Cluster + ?Sized>(
    cfg: JobConfig,
    launcher: L,
    faults: Vec<crate::scenario::FaultSpec>,
    cluster: &mut B,
) -> anyhow::Result<ModeOutcome> {
    std::fs::create_dir_all(&cfg.dir).with_context(|| format!("creating {}", cfg.dir.display()))?;
    let path = cfg.dir.join("history.jsonl");
    let history = history::Writer::create(&path, cfg.mode, Instant::now())
        .with_context(|| format!("creating {}", path.display()))?;
    let (bootstrap_tx, bootstrap_rx) = watch::channel(Vec::new());
    bootstrap_tx.send_replace(cluster.client_bootstrap());
    let ncfg = nemesis::Config {
        mode: cfg.mode,
        topic: cfg.topic.clone(),
        partitions: cfg.partitions,
        transaction_timeout_ms: cfg.job.transaction_timeout_ms,
        restart_delay_ms: cfg.job.restart_delay_ms,
        progress: cfg.progress,
    };
    let running = rig_job::start(cfg, launcher, history.clone(), bootstrap_rx)?;
    let started = Started { handle: running.handle, notices: running.notices, done: running.done };
    beside(started, faults, cluster, history, path, bootstrap_tx, ncfg).await
}

/// A subject that is running: the nemesis' handle, its notices, and its end.
struct Started<S: Subject> {
    handle: S,
    notices: tokio::sync::mpsc::UnboundedReceiver<crate::subject::Notice>,
    done: tokio::task::JoinHandle<anyhow::Result<JobReport>>,
}

/// The nemesis beside a started subject until the job has ended; the two reports make the
/// mode's outcome. The nemesis never learns which subject it faces.
async fn beside<S: Subject + Clone + 'static, B: crate::cluster::Cluster + ?Sized>(
    running: Started<S>,
    faults: Vec<crate::scenario::FaultSpec>,
    cluster: &mut B,
    history: history::Writer,
    path: PathBuf,
    bootstrap_tx: watch::Sender<Vec<String>>,
    ncfg: nemesis::Config,
) -> anyhow::Result<ModeOutcome> {
    let nemesis = Nemesis::new(faults, running.handle.clone(), cluster, history.clone(), bootstrap_tx, ncfg);
    let faults = match nemesis.run(running.notices).await {
        Ok(f) => f,
        Err(e) => {
            // Nothing may outlive the runner: the job's task owns the workers.
            running.done.abort();
            let _ = running.done.await;
            return Err(e);
        }
    };
    let report = running.done.await.context("the job's task")??;
    Ok(ModeOutcome {
        job: report.job,
        attempts: report.attempts,
        checkpoints_completed: report.checkpoints_completed,
        history: path,
        faults,
        committables_dropped: report.committables_dropped,
        wall_ms: report.wall_ms,
    })
}

/// The `flink-kafkasink` mode: Flink's own KafkaSink on a Flink cluster of the mode's own
/// (`<dir>/flink/`), its producers bootstrapping from the cluster (through the proxy when
/// there is one), under the same faults.
async fn run_flink(run: ModeRun<'_>) -> anyhow::Result<ModeOutcome> {
    let f = run.scenario.flink_spec();
    let (version, connector) = (f.version.clone(), f.connector());
    let dist = tokio::task::spawn_blocking(move || {
        crate::install::flink::ensure(&version, &connector, &mut |l| eprintln!("sinkhole: {l}"))
    })
    .await
    .context("the Flink install's task")??;
    let connector_jar = match &f.connector_jar {
        Some(p) => Some(crate::install::flink::check_connector_jar(p)?),
        None => None,
    };
    let cfg = FlinkConfig {
        run_id: run.run_id.clone(),
        mode: run.mode,
        dir: run.dir.clone(),
        job: run.scenario.job.clone(),
        flink: f,
        dist,
        connector_jar,
        topic: run.topic.clone(),
        partitions: run.scenario.topic.partitions,
        tid_prefix: run.tid_prefix.clone(),
        bootstrap: run.cluster.bootstrap_list(),
        progress: run.progress,
    };
    std::fs::create_dir_all(&cfg.dir).with_context(|| format!("creating {}", cfg.dir.display()))?;
    let path = cfg.dir.join("history.jsonl");
    let history = history::Writer::create(&path, cfg.mode, Instant::now())
        .with_context(|| format!("creating {}", path.display()))?;
    let (bootstrap_tx, _) = watch::channel(Vec::new());
    let ncfg = nemesis::Config {
        mode: cfg.mode,
        topic: cfg.topic.clone(),
        partitions: cfg.partitions,
        transaction_timeout_ms: cfg.job.transaction_timeout_ms,
        restart_delay_ms: cfg.job.restart_delay_ms,
        progress: cfg.progress,
    };
    let running = flink::start(cfg, history.clone())?;
    let started = Started { handle: running.handle, notices: running.notices, done: running.done };
    beside(started, run.scenario.faults.clone(), run.cluster, history, path, bootstrap_tx, ncfg).await
}
