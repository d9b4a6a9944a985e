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
use tokio::sync::{mpsc, watch};

use crate::cluster::Cluster;
use crate::history::{self, ModeOutcome};
use crate::nemesis::{self, Nemesis};
use crate::observer;
use crate::scenario::premise::Premises;
use crate::scenario::Scenario;
use crate::subject::rig_job::{self, JobConfig, Launcher, ProcessLauncher};
use crate::subject::{JobEvent, Notice};

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
    let premises = run.scenario.premise.get(&run.mode).cloned().unwrap_or_default();
    let looks = Looks { premises, abort_scan_ms: crate::scenario::abort_scan_ms(run.scenario) };
    run_job_observed(job, launcher, run.scenario.faults.clone(), run.cluster, looks).await
}

/// What the observer looks at besides lingering transactions.
#[derive(Debug, Clone, Default)]
pub struct Looks {
    pub premises: Premises,
    pub abort_scan_ms: u64,
}

/// Every notice to the nemesis, and a copy of its event to the observer.
fn tee(
    mut notices: mpsc::UnboundedReceiver<Notice>,
) -> (mpsc::UnboundedReceiver<Notice>, mpsc::UnboundedReceiver<(Instant, JobEvent)>) {
    let (to_nemesis, nemesis_rx) = mpsc::unbounded_channel();
    let (to_observer, observer_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(n) = notices.recv().await {
            let _ = to_observer.send((n.at, n.event.clone()));
            if to_nemesis.send(n).is_err() {
                break;
            }
        }
    });
    (nemesis_rx, observer_rx)
}

/// The job of `cfg` with `launcher`'s workers, under `faults`, on `cluster`.
pub async fn run_job<L: Launcher + 'static, B: crate::cluster::Cluster + ?Sized>(
    cfg: JobConfig,
    launcher: L,
    faults: Vec<crate::scenario::FaultSpec>,
    cluster: &mut B,
) -> anyhow::Result<ModeOutcome> {
    run_job_observed(cfg, launcher, faults, cluster, Looks::default()).await
}

/// [`run_job`], with the observer looking at `looks` too.
pub async fn run_job_observed<L: Launcher + 'static, B: crate::cluster::Cluster + ?Sized>(
    cfg: JobConfig,
    launcher: L,
    faults: Vec<crate::scenario::FaultSpec>,
    cluster: &mut B,
    looks: Looks,
) -> anyhow::Result<ModeOutcome> {
    let Looks { premises, abort_scan_ms } = looks;
    std::fs::create_dir_all(&cfg.dir).with_context(|| format!("creating {}", cfg.dir.display()))?;
    let path = cfg.dir.join("history.jsonl");
    let history = history::Writer::create(&path, cfg.mode, Instant::now())
        .with_context(|| format!("creating {}", path.display()))?;
    let (bootstrap_tx, bootstrap_rx) = watch::channel(Vec::new());
    bootstrap_tx.send_replace(cluster.client_bootstrap());
    let ocfg = observer::Config {
        mode: cfg.mode,
        checkpoints: premises.checkpoints(),
        transaction_timeout_ms: u64::try_from(cfg.job.transaction_timeout_ms).unwrap_or(0),
        abort_scan_ms,
        bootstrap: vec![],
    };
    let ncfg = nemesis::Config {
        mode: cfg.mode,
        topic: cfg.topic.clone(),
        partitions: cfg.partitions,
        transaction_timeout_ms: cfg.job.transaction_timeout_ms,
        restart_delay_ms: cfg.job.restart_delay_ms,
        progress: cfg.progress,
    };
    let running = rig_job::start(cfg, launcher, history.clone(), bootstrap_rx)?;
    // The observer reads a copy of every notice; the nemesis gets the notices themselves (their holds).
    let (notices, copies) = tee(running.notices);
    let ocfg = observer::Config { bootstrap: cluster.bootstrap_list(), ..ocfg };
    let observer = tokio::spawn(observer::run(ocfg, running.handle.clone(), history.clone(), copies));
    let nemesis = Nemesis::new(faults, running.handle.clone(), cluster, history.clone(), bootstrap_tx, ncfg);
    let faults = match nemesis.run(notices).await {
        Ok(f) => f,
        Err(e) => {
            // Nothing may outlive the runner: the job's task owns the workers.
            running.done.abort();
            observer.abort();
            let _ = running.done.await;
            return Err(e);
        }
    };
    let report = running.done.await.context("the job's task")??;
    // Its last look is due at most a transaction timeout and a scan after the last checkpoint.
    observer.await.context("the observer's task")?;
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
