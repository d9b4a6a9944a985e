//! Apache Flink's own `KafkaSink` on a real Flink cluster, as a [`Subject`]: the
//! `flink-kafkasink` mode.
//!
//! The job (`subjects/flink/`, built by `sinkhole setup --flink`) reads a deterministic,
//! checkpointed source that emits the rig's own records and writes them through
//! flink-connector-kafka's `KafkaSink` with `EXACTLY_ONCE`; the rig runs it on a session
//! cluster of its own ([`cluster`]), submits it through the REST API ([`rest`]), reads what
//! happens from Flink's own logs ([`logs`]) and writes it into the same history the rig's
//! job writes ([`evidence`]), so the checker, the verdict and the report judge both alike.
//!
//! What crosses the subject boundary:
//! - **workers** are the cluster's processes: ids `0..taskmanagers` are the TaskManagers and
//!   id `taskmanagers` the JobManager. A killed TaskManager is started again after
//!   `restart_delay_ms` (a supervisor's job; Flink restores the tasks itself), a killed
//!   JobManager too, and then, as there is no HA, the job is resubmitted from the latest
//!   retained checkpoint of its last job id. A pause is SIGSTOP/SIGCONT of a process group.
//! - **an outage** kills the JobManager and every TaskManager, waits, starts them and
//!   resubmits from the latest retained checkpoint ([`cluster::latest_checkpoint`]).
//! - **notices** come from Flink's own events, stamped with Flink's own clock: checkpoint
//!   triggered and completed (the JobManager's `CheckpointCoordinator` lines, written when
//!   the retained `chk-N/_metadata` exists), each subtask's snapshot (the job's
//!   `CheckpointLog` line: acked), a commit started (KafkaCommitter's debug line; the first
//!   one of a checkpoint also stands for its notification, which Flink sends over its own
//!   RPC), the job up and down (its tasks running, from the REST API). None can be held:
//!   Flink's JobManager does not wait for the rig, so a fault meant for the window between
//!   "checkpoint complete" and the commit holds the commit's EndTxn at the proxy instead.
//! - **coordinator hooks** Flink cannot do answer `Err` with the reason ([`Handle::arm`]):
//!   the nemesis records such a fault as not confirmed.
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use nix::sys::signal::Signal;
use sinkhole_model::SinkMode;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::{Armed, Hook, JobReport, Notice, Outage, Subject, WorkerHit};
use sinkhole_base::rundir::ModeDir;
use sinkhole_install::flink::{ConnectorJar, FlinkDist};
use sinkhole_scenario::{FlinkSpec, JobSpec, Naming};

pub mod cluster;
pub mod epochs;
pub mod evidence;
mod job;
pub mod lingering;
pub mod logs;
pub mod rest;

/// Everything the Flink subject needs.
#[derive(Debug, Clone)]
pub struct FlinkConfig {
    pub run_id: String,
    pub mode: SinkMode,
    /// `results/<run-id>/<mode>/`: the cluster's directory is `flink/` in it.
    pub dir: ModeDir,
    pub job: JobSpec,
    pub flink: FlinkSpec,
    pub dist: FlinkDist,
    /// A contributor's connector jar, checked (path and sha256).
    pub connector_jar: Option<ConnectorJar>,
    pub topic: String,
    pub partitions: u32,
    pub tid_prefix: String,
    /// The cluster's bootstrap servers (the proxy's when it has one).
    pub bootstrap: Vec<String>,
    /// The checkpoint a `superseded` premise names: at a resubmission from it the subject
    /// looks for transactions superseding its committables ([`lingering`]).
    pub superseded_look: Option<u64>,
    pub progress: bool,
}

impl FlinkConfig {
    pub fn connector_major(&self) -> u32 {
        sinkhole_install::flink::check_connector_version(&self.dist.connector).map(|(a, _, _)| a).unwrap_or(0)
    }
}

/// What the job loop shares with the handle without a round trip: the transactional ids seen.
#[derive(Debug, Default)]
pub struct Seen {
    /// (subtask, checkpoint) → the id that carried it (from the writer's `Prepare` line).
    pub tids: HashMap<(u32, u64), String>,
    /// The latest checkpoint each subtask snapshotted.
    pub last: HashMap<u32, u64>,
}

/// What the nemesis asks of the job loop.
#[derive(Debug)]
pub(crate) enum Command {
    Signal { workers: Vec<u32>, signal: Signal, by: String, reply: oneshot::Sender<Vec<WorkerHit>> },
    Resume { frozen: Vec<(u32, u32)>, by: String, reply: oneshot::Sender<Vec<WorkerHit>> },
    Outage { down_ms: u64, by: String, reply: oneshot::Sender<Result<Outage, String>> },
}

/// The nemesis' handle on the Flink job.
#[derive(Debug, Clone)]
pub struct Handle {
    commands: mpsc::UnboundedSender<Command>,
    taskmanagers: u32,
    tid_prefix: String,
    naming: Naming,
    seen: Arc<Mutex<Seen>>,
}

const ENDED: &str = "the job has ended";

/// Why the Flink subject has no such coordinator hook.
pub fn no_hook(hook: &Hook) -> String {
    match hook {
        Hook::DropNotification { .. } | Hook::DelayNotification { .. } => "the Flink subject cannot withhold or delay \
            a checkpoint's notification: Flink's JobManager sends notifyCheckpointComplete over its own RPC. Hold the \
            commit at the proxy instead (protocol-delay on EndTxn with transactional_id {subtask: S})"
            .into(),
        Hook::DeclineCheckpoint { .. } => "the Flink subject cannot make a task decline a checkpoint; pause a \
            TaskManager past checkpoint_timeout_ms to make one expire"
            .into(),
        Hook::Crash { .. } => "the Flink subject cannot stop Flink's JobManager between a checkpoint's completion and \
            its notification (Flink notifies within tens of milliseconds, before any trigger sees the checkpoint): \
            kill the JobManager with kill-workers (worker id = flink.taskmanagers), or hold EndTxn at the proxy"
            .into(),
    }
}

impl Handle {
    fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Option<oneshot::Receiver<T>> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(make(reply)).ok().map(|_| rx)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Subject for Handle {
    /// The TaskManagers, then the JobManager.
    fn workers(&self) -> u32 {
        self.taskmanagers + 1
    }

    /// INCREMENTING: `{prefix}-{subtask}-{checkpoint}`. POOLING reuses ids, so only one the
    /// writer already prepared for that checkpoint is known; else INCREMENTING's form.
    fn transactional_id(&self, subtask: u32, checkpoint: u64) -> String {
        if self.naming == Naming::Pooling {
            if let Some(t) = self.lock().tids.get(&(subtask, checkpoint)) {
                return t.clone();
            }
        }
        format!("{}-{subtask}-{checkpoint}", self.tid_prefix)
    }

    /// The transaction after the subtask's latest snapshot (KafkaWriter opens checkpoint
    /// n+1's at snapshot n).
    async fn open_transaction(&self, subtask: u32) -> String {
        let next = self.lock().last.get(&subtask).copied().unwrap_or(0) + 1;
        self.transactional_id(subtask, next)
    }

    async fn signal(&self, workers: Vec<u32>, signal: Signal, by: String) -> Vec<WorkerHit> {
        let gone = |w: &[u32]| {
            w.iter().map(|&subtask| WorkerHit::NotRunning { subtask, error: ENDED.into() }).collect::<Vec<_>>()
        };
        let w = workers.clone();
        match self.ask(|reply| Command::Signal { workers, signal, by, reply }) {
            Some(rx) => rx.await.unwrap_or_else(|_| gone(&w)),
            None => gone(&w),
        }
    }

    async fn resume(&self, frozen: Vec<(u32, u32)>, by: String) -> Vec<WorkerHit> {
        let gone = |f: &[(u32, u32)]| {
            f.iter().map(|&(subtask, pid)| WorkerHit::Failed { subtask, pid, error: ENDED.into() }).collect::<Vec<_>>()
        };
        let f = frozen.clone();
        match self.ask(|reply| Command::Resume { frozen, by, reply }) {
            Some(rx) => rx.await.unwrap_or_else(|_| gone(&f)),
            None => gone(&f),
        }
    }

    async fn outage(&self, down_ms: u64, by: String) -> Result<Outage, String> {
        let rx = self.ask(|reply| Command::Outage { down_ms, by, reply }).ok_or(ENDED)?;
        rx.await.map_err(|_| ENDED.to_string())?
    }

    async fn arm(&self, hook: Hook, _by: String) -> Result<Armed, String> {
        Err(no_hook(&hook))
    }
}

/// A Flink job started by [`start`].
pub struct Running {
    pub handle: Handle,
    pub notices: mpsc::UnboundedReceiver<Notice>,
    /// Ends with the job (every JobManager and TaskManager killed).
    pub done: JoinHandle<anyhow::Result<JobReport>>,
}

/// Prepares the cluster, starts it and submits the job, all on a task of its own.
pub fn start(cfg: FlinkConfig, history: sinkhole_history::Writer) -> anyhow::Result<Running> {
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    let (notice_tx, notices) = mpsc::unbounded_channel();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let handle = Handle {
        commands: cmd_tx,
        taskmanagers: cfg.flink.taskmanagers,
        tid_prefix: cfg.tid_prefix.clone(),
        naming: cfg.flink.naming,
        seen: seen.clone(),
    };
    let job = job::Loop::new(cfg, history, cmd_rx, notice_tx, seen)?;
    let done = tokio::spawn(job.run());
    Ok(Running { handle, notices, done })
}
