//! The runner: the modes of one scenario, end to end — their subjects (the
//! rig's own job, or Flink's KafkaSink on a Flink cluster) and one nemesis
//! beside them, each mode writing its own history.
//!
//! Jepsen's interpreter in miniature: every job runs on its own task, the
//! nemesis on this one, and they meet only at the subject boundary
//! ([`crate::subject`]). Several modes may run at once on one cluster
//! ([`run_modes`]): the nemesis then fires a job's faults per mode and the
//! cluster's once for all ([`crate::nemesis::members`]). When every job has
//! ended, the nemesis heals what is still faulted, and each job's report and
//! its fault records make that mode's outcome.
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{anyhow, Context};
use sinkhole_model::{ShareInput, SinkMode};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

pub use crate::nemesis::Lead;
use crate::nemesis::{self, Member, Nemesis};
use crate::observer;
use crate::subject::any::AnySubject;
use crate::subject::flink::{self, FlinkConfig};
use crate::subject::rig_job::{self, JobConfig, Launcher, ProcessLauncher};
use crate::subject::{JobEvent, JobReport, Notice};
use sinkhole_base::rundir::ModeDir;
use sinkhole_cluster::Cluster;
use sinkhole_history::observation::Observation;
use sinkhole_history::ModeOutcome;
use sinkhole_scenario::premise::Premises;
use sinkhole_scenario::{FaultSpec, Scenario, Timing};

#[cfg(test)]
mod tests;

/// One mode's run, on a cluster that is already up and a topic that exists.
pub struct ModeRun<'a> {
    pub run_id: String,
    pub mode: SinkMode,
    pub scenario: &'a Scenario,
    /// `results/<run-id>/<mode>/`: history.jsonl, checkpoints/, logs/ go here.
    pub dir: ModeDir,
    pub topic: String,
    /// Transactional id prefix for this mode (unique per run and mode).
    pub tid_prefix: String,
    /// The `sinkhole` binary, for `sinkhole worker` processes.
    pub sinkhole_bin: PathBuf,
    pub seed: u64,
    /// Print progress lines on stderr.
    pub progress: bool,
    /// The run's derived timeouts (when the observer and the nemesis look past the transaction timeout).
    pub timing: Timing,
    /// The mode's live readers, already polling (`readers:`): the reader faults act on them.
    pub readers: Option<nemesis::readers::ReaderControl>,
}

/// Runs one mode of the scenario on `cluster` (already up, topic created)
/// until the job finishes, fails or turns out unsupported; every fault still
/// in effect is healed before it returns, so the topic can be read.
pub async fn run_mode(run: ModeRun<'_>, cluster: &mut dyn Cluster) -> anyhow::Result<ModeOutcome> {
    let faults = run.scenario.faults.clone();
    run_modes(vec![run], faults, Lead::First, cluster).await.pop().expect("one mode, one outcome")
}

/// Runs these modes at the same time on `cluster`, under one nemesis for
/// `faults`; `lead` says whose events set off an event-triggered cluster
/// fault (an index into `runs`). One outcome per mode, in `runs`' order: a
/// mode whose subject did not start is an error while the others run on.
pub async fn run_modes(
    runs: Vec<ModeRun<'_>>,
    faults: Vec<FaultSpec>,
    lead: Lead,
    cluster: &mut dyn Cluster,
) -> Vec<anyhow::Result<ModeOutcome>> {
    let (bootstrap_tx, _) = watch::channel(cluster.client_bootstrap());
    let mut started = Vec::with_capacity(runs.len());
    for run in &runs {
        let s = if run.mode.rig_job() {
            start_rig(run, &*cluster, &bootstrap_tx)
        } else {
            let bootstrap = cluster.bootstrap_list();
            start_flink(run, bootstrap).await
        };
        let s = s.map(|mut s| {
            s.member.readers = run.readers.clone();
            s
        });
        started.push(s.with_context(|| format!("starting mode {}", run.mode)));
    }
    side_by_side(started, faults, lead, cluster, bootstrap_tx).await
}

/// The jobs of `jobs` (each with its launcher's workers) side by side under
/// `faults` on `cluster`: what [`run_modes`] does, with the workers a test chooses.
pub async fn run_jobs<L: Launcher + 'static, B: Cluster + ?Sized>(
    jobs: Vec<(JobConfig, L)>,
    faults: Vec<FaultSpec>,
    lead: Lead,
    cluster: &mut B,
) -> Vec<anyhow::Result<ModeOutcome>> {
    let (bootstrap_tx, _) = watch::channel(cluster.client_bootstrap());
    let brokers = cluster.bootstrap_list();
    let started = jobs
        .into_iter()
        .map(|(cfg, launcher)| {
            // No scenario here: no premises, and Kafka's default abort scan.
            let looks =
                Looks { premises: Premises::default(), timing: Timing::new(cfg.job.transaction_timeout_ms, None) };
            start_job(cfg, launcher, &bootstrap_tx, looks, brokers.clone())
        })
        .collect();
    side_by_side(started, faults, lead, cluster, bootstrap_tx).await
}

/// The job of `cfg` with `launcher`'s workers, under `faults`, on `cluster`.
pub async fn run_job<L: Launcher + 'static, B: Cluster + ?Sized>(
    cfg: JobConfig,
    launcher: L,
    faults: Vec<FaultSpec>,
    cluster: &mut B,
) -> anyhow::Result<ModeOutcome> {
    run_jobs(vec![(cfg, launcher)], faults, Lead::First, cluster).await.pop().expect("one job, one outcome")
}

/// A subject that is running: the nemesis' handle on it, its notices, its
/// end, the history it writes, and the observer beside it (rig jobs).
struct Started {
    member: Member<AnySubject>,
    notices: mpsc::UnboundedReceiver<Notice>,
    done: JoinHandle<anyhow::Result<JobReport>>,
    path: PathBuf,
    observer: Option<JoinHandle<Vec<Observation>>>,
}

/// What the observer looks at besides lingering transactions, and when.
#[derive(Debug, Clone)]
pub struct Looks {
    pub premises: Premises,
    pub timing: Timing,
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

fn history_in(dir: &ModeDir, mode: SinkMode) -> anyhow::Result<(sinkhole_history::Writer, PathBuf)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.path().display()))?;
    let path = dir.history();
    let w = sinkhole_history::Writer::create(&path, mode, Instant::now())
        .with_context(|| format!("creating {}", path.display()))?;
    Ok((w, path))
}

fn nemesis_config(
    mode: SinkMode,
    topic: &str,
    partitions: u32,
    job: &sinkhole_scenario::JobSpec,
    timing: Timing,
    progress: bool,
    share_group: Option<String>,
) -> nemesis::Config {
    nemesis::Config {
        share_group,
        mode,
        topic: topic.to_string(),
        partitions,
        timing,
        restart_delay_ms: job.restart_delay_ms,
        progress,
    }
}

/// A mode's share-group input, named from its output topic
/// ([`sinkhole_scenario::source::input_topic`]), if the scenario reads one.
pub fn share_input(s: &Scenario, topic: &str) -> Option<ShareInput> {
    use sinkhole_scenario::source;
    s.share_source().map(|sh| ShareInput {
        group_id: source::share_group(topic),
        input_topic: source::input_topic(topic),
        ack: sh.ack,
        batch: sh.batch,
    })
}

fn start_rig(
    run: &ModeRun<'_>,
    cluster: &dyn Cluster,
    bootstrap: &watch::Sender<Vec<String>>,
) -> anyhow::Result<Started> {
    let job = JobConfig {
        run_id: run.run_id.clone(),
        mode: run.mode,
        dir: run.dir.clone(),
        job: run.scenario.job.clone(),
        topic: run.topic.clone(),
        partitions: run.scenario.topic.partitions,
        tid_prefix: run.tid_prefix.clone(),
        progress: run.progress,
        sink_listener: run.scenario.cluster.authorizer.as_ref().and_then(|_| cluster.sink_listener()),
        share: share_input(run.scenario, &run.topic),
        security: cluster.security(),
    };
    let premises = run.scenario.premise.get(&run.mode).cloned().unwrap_or_default();
    let looks = Looks { premises, timing: run.timing };
    start_job(job, ProcessLauncher::new(run.sinkhole_bin.clone()), bootstrap, looks, cluster.bootstrap_list())
}

/// The rig's job of `cfg`, with the observer (`looks`, asking `brokers`) beside it.
fn start_job<L: Launcher + 'static>(
    cfg: JobConfig,
    launcher: L,
    bootstrap: &watch::Sender<Vec<String>>,
    looks: Looks,
    brokers: Vec<String>,
) -> anyhow::Result<Started> {
    let (history, path) = history_in(&cfg.dir, cfg.mode)?;
    let group = cfg.share.as_ref().map(|s| s.group_id.clone());
    let ncfg = nemesis_config(cfg.mode, &cfg.topic, cfg.partitions, &cfg.job, looks.timing, cfg.progress, group);
    let ocfg = observer::Config {
        mode: cfg.mode,
        checkpoints: looks.premises.checkpoints(),
        timing: looks.timing,
        bootstrap: brokers,
    };
    let running = rig_job::start(cfg, launcher, history.clone(), bootstrap.subscribe())?;
    // The observer reads a copy of every notice; the nemesis gets the notices themselves (their holds).
    let (notices, copies) = tee(running.notices);
    let observer = tokio::spawn(observer::run(ocfg, running.handle.clone(), history.clone(), copies));
    Ok(Started {
        member: Member { subject: AnySubject::Rig(running.handle), history, cfg: ncfg, readers: None },
        notices,
        done: running.done,
        path,
        observer: Some(observer),
    })
}

/// The `flink-kafkasink` mode: Flink's own KafkaSink on a Flink cluster of the mode's own
/// (`<dir>/flink/`), its producers bootstrapping from the cluster (through the proxy when
/// there is one), under the same faults.
async fn start_flink(run: &ModeRun<'_>, bootstrap: Vec<String>) -> anyhow::Result<Started> {
    let f = run.scenario.flink_spec();
    let (version, connector) = (f.version.clone(), f.connector());
    let dist = tokio::task::spawn_blocking(move || {
        sinkhole_install::flink::ensure(&version, &connector, &mut |l| eprintln!("sinkhole: {l}"))
    })
    .await
    .context("the Flink install's task")??;
    let connector_jar = match &f.connector_jar {
        Some(p) => Some(sinkhole_install::flink::check_connector_jar(p)?),
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
        bootstrap,
        progress: run.progress,
        superseded_look: run.scenario.premise.get(&run.mode).and_then(|p| p.superseded.as_ref()?.checkpoint),
    };
    let (history, path) = history_in(&cfg.dir, cfg.mode)?;
    let ncfg = nemesis_config(cfg.mode, &cfg.topic, cfg.partitions, &cfg.job, run.timing, cfg.progress, None);
    let running = flink::start(cfg, history.clone())?;
    Ok(Started {
        member: Member { subject: AnySubject::Flink(running.handle), history, cfg: ncfg, readers: None },
        notices: running.notices,
        done: running.done,
        path,
        observer: None,
    })
}

/// The nemesis beside every started subject until each job has ended; each
/// job's report and its fault records make its mode's outcome. The nemesis
/// never learns which subjects it faces.
async fn side_by_side<B: Cluster + ?Sized>(
    started: Vec<anyhow::Result<Started>>,
    faults: Vec<FaultSpec>,
    lead: Lead,
    cluster: &mut B,
    bootstrap: watch::Sender<Vec<String>>,
) -> Vec<anyhow::Result<ModeOutcome>> {
    let mut out: Vec<Option<anyhow::Result<ModeOutcome>>> = Vec::with_capacity(started.len());
    // Of the ones that started: their index in `out`, and their parts.
    let (mut slots, mut members, mut dones, mut paths, mut observers) = (vec![], vec![], vec![], vec![], vec![]);
    let (notice_tx, notices) = mpsc::unbounded_channel::<(usize, Notice)>();
    for (i, s) in started.into_iter().enumerate() {
        match s {
            Ok(s) => {
                let m = members.len();
                // One stream for the nemesis: each notice tagged with its member,
                // its hold carried along. A forwarder ends with its subject's stream.
                let (tx, mut rx) = (notice_tx.clone(), s.notices);
                tokio::spawn(async move {
                    while let Some(n) = rx.recv().await {
                        if tx.send((m, n)).is_err() {
                            break;
                        }
                    }
                });
                slots.push(i);
                members.push(s.member);
                dones.push(s.done);
                paths.push(s.path);
                observers.push(s.observer);
                out.push(None);
            }
            Err(e) => out.push(Some(Err(e))),
        }
    }
    drop(notice_tx);
    if members.is_empty() {
        return out.into_iter().map(|o| o.expect("every mode failed to start")).collect();
    }
    // The lead is named among every mode; among the started ones it moves
    // down, and a lead that did not start leaves the first-to-reach rule.
    let lead = match lead {
        Lead::Member(l) => slots.iter().position(|&i| i == l).map(Lead::Member).unwrap_or(Lead::First),
        Lead::First => Lead::First,
    };
    let nemesis = Nemesis::new(faults, members, lead, cluster, bootstrap);
    match nemesis.run(notices).await {
        Ok(records) => {
            let parts = slots.into_iter().zip(dones).zip(paths).zip(records).zip(observers);
            for ((((i, done), path), faults), observer) in parts {
                out[i] = Some(outcome(done, path, faults, observer).await);
            }
        }
        Err(e) => {
            // Nothing may outlive the runner: each job's task owns its workers.
            for ((i, done), observer) in slots.into_iter().zip(dones).zip(observers) {
                done.abort();
                if let Some(o) = observer {
                    o.abort();
                }
                let _ = done.await;
                out[i] = Some(Err(anyhow!("the nemesis failed: {e:#}")));
            }
        }
    }
    out.into_iter().map(|o| o.expect("every mode has an outcome")).collect()
}

async fn outcome(
    done: JoinHandle<anyhow::Result<JobReport>>,
    path: PathBuf,
    faults: Vec<sinkhole_history::fault::FaultRecord>,
    observer: Option<JoinHandle<Vec<Observation>>>,
) -> anyhow::Result<ModeOutcome> {
    let report = done.await.context("the job's task")??;
    // Its last look is due at most a transaction timeout and a scan after the last checkpoint.
    if let Some(o) = observer {
        o.await.context("the observer's task")?;
    }
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
