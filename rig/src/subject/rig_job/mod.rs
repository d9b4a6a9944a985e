//! The rig's own job as a [`Subject`]: a checkpoint coordinator (Flink's
//! JobManager in miniature) in this process, and one `sinkhole worker`
//! process per subtask.
//!
//! - [`coordinator`]: the loop that owns every piece of the job's state —
//!   checkpoints, failover, the end of the job; [`attempt`] deploys and
//!   watches an attempt's workers; [`hooks`] carries out what the nemesis
//!   asks through the subject boundary;
//! - [`phase`]: the job's phases and their legal transitions;
//! - [`control`]: the control socket the workers connect to;
//! - [`workers`]: starting, signalling and reaping worker processes;
//! - [`checkpoints`]: the durable store of complete checkpoints.
//!
//! [`start`] spawns the coordinator on its own task and returns a [`Handle`]
//! (the nemesis' way in, through [`Subject`]) and the stream of [`Notice`]s.
use std::time::Instant;

use nix::sys::signal::Signal;
use sinkhole_model::SinkMode;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::{Armed, Hook, Notice, Outage, Subject, WorkerHit};
use sinkhole_base::rundir::ModeDir;
use sinkhole_scenario::JobSpec;

pub mod attempt;
pub mod checkpoints;
pub mod control;
pub mod coordinator;
pub mod hooks;
pub mod phase;
pub mod state;
pub mod workers;

pub use coordinator::Coordinator;
pub use workers::{LaunchSpec, Launcher, ProcessLauncher};

/// Everything the job needs besides its launcher.
#[derive(Debug, Clone)]
pub struct JobConfig {
    pub run_id: String,
    pub mode: SinkMode,
    /// `results/<run-id>/<mode>/`: checkpoints/, workers/, logs/ go here.
    pub dir: ModeDir,
    pub job: JobSpec,
    pub topic: String,
    pub partitions: u32,
    pub tid_prefix: String,
    pub progress: bool,
    /// Workers bootstrap from this listener with its credentials instead of
    /// the cluster's bootstrap (ACL scenarios: the sink's own principal).
    pub sink_listener: Option<sinkhole_cluster::SinkListener>,
    /// The workers read this share group instead of generating their records.
    pub share: Option<sinkhole_model::ShareInput>,
    /// A real cluster's listener security, by reference (the workers read the password).
    pub security: Option<sinkhole_client::wire::security::Security>,
}

pub use super::JobReport;

/// What the nemesis asks of the coordinator (through [`Handle`]).
#[derive(Debug)]
pub(crate) enum Command {
    OpenTransaction { subtask: u32, reply: oneshot::Sender<String> },
    Signal { aims: Vec<Aim>, signal: Signal, by: String, reply: oneshot::Sender<Vec<WorkerHit>> },
    Outage { down_ms: u64, by: String, reply: oneshot::Sender<Result<Outage, String>> },
    Arm { hook: Hook, by: String, reply: oneshot::Sender<Result<Armed, String>> },
}

/// Which process a signal is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aim {
    /// Subtask s's worker of the current attempt.
    Current(u32),
    /// That very process (a resume goes to the worker that was paused, not to
    /// its successor after a failover).
    Exact { subtask: u32, pid: u32 },
}

/// The nemesis' handle on the running job. Cheap to clone; every call is a
/// message to the coordinator's loop, answered when it has been carried out.
#[derive(Debug, Clone)]
pub struct Handle {
    commands: mpsc::UnboundedSender<Command>,
    parallelism: u32,
    mode: SinkMode,
    tid_prefix: String,
}

impl Handle {
    async fn signal_aims(&self, aims: Vec<Aim>, signal: Signal, by: String) -> Vec<WorkerHit> {
        let gone = |aims: &[Aim]| {
            aims.iter()
                .map(|a| match *a {
                    Aim::Current(subtask) => WorkerHit::NotRunning { subtask, error: "the job has ended".into() },
                    Aim::Exact { subtask, pid } => {
                        WorkerHit::Failed { subtask, pid, error: "the job has ended".into() }
                    }
                })
                .collect()
        };
        let (reply, rx) = oneshot::channel();
        if self.commands.send(Command::Signal { aims: aims.clone(), signal, by, reply }).is_err() {
            return gone(&aims);
        }
        rx.await.unwrap_or_else(|_| gone(&aims))
    }
}

const ENDED: &str = "the job has ended";

impl Subject for Handle {
    fn workers(&self) -> u32 {
        self.parallelism
    }

    fn transactional_id(&self, subtask: u32, checkpoint: u64) -> String {
        sinkhole_workloads::sink::naming::transactional_id_of(self.mode, &self.tid_prefix, subtask, checkpoint)
    }

    async fn open_transaction(&self, subtask: u32) -> String {
        let (reply, rx) = oneshot::channel();
        let fallback = self.transactional_id(subtask, 1);
        if self.commands.send(Command::OpenTransaction { subtask, reply }).is_err() {
            return fallback;
        }
        rx.await.unwrap_or(fallback)
    }

    async fn signal(&self, workers: Vec<u32>, signal: Signal, by: String) -> Vec<WorkerHit> {
        self.signal_aims(workers.into_iter().map(Aim::Current).collect(), signal, by).await
    }

    async fn resume(&self, frozen: Vec<(u32, u32)>, by: String) -> Vec<WorkerHit> {
        let aims = frozen.into_iter().map(|(subtask, pid)| Aim::Exact { subtask, pid }).collect();
        self.signal_aims(aims, Signal::SIGCONT, by).await
    }

    async fn outage(&self, down_ms: u64, by: String) -> Result<Outage, String> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(Command::Outage { down_ms, by, reply }).map_err(|_| ENDED.to_string())?;
        rx.await.map_err(|_| ENDED.to_string())?
    }

    async fn arm(&self, hook: Hook, by: String) -> Result<Armed, String> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(Command::Arm { hook, by, reply }).map_err(|_| ENDED.to_string())?;
        rx.await.map_err(|_| ENDED.to_string())?
    }
}

/// A job started by [`start`].
pub struct Running {
    pub handle: Handle,
    pub notices: mpsc::UnboundedReceiver<Notice>,
    /// Ends with the job (every worker stopped or killed).
    pub done: JoinHandle<anyhow::Result<JobReport>>,
}

/// Starts the job on a task of its own: workers are deployed at once.
/// `bootstrap` carries the cluster's bootstrap servers as they change (the
/// nodes meant to be running), read whenever an attempt is deployed.
pub fn start<L: Launcher + 'static>(
    cfg: JobConfig,
    launcher: L,
    history: sinkhole_history::Writer,
    bootstrap: watch::Receiver<Vec<String>>,
) -> anyhow::Result<Running> {
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    let (notice_tx, notices) = mpsc::unbounded_channel();
    let handle = Handle {
        commands: cmd_tx,
        parallelism: cfg.job.parallelism,
        mode: cfg.mode,
        tid_prefix: cfg.tid_prefix.clone(),
    };
    let coordinator = Coordinator::new(cfg, launcher, history, bootstrap, cmd_rx, notice_tx)?;
    let done = tokio::spawn(coordinator.run());
    Ok(Running { handle, notices, done })
}

/// When the run began (the history's origin), for callers that start the
/// clock before the job.
pub fn origin(history: &sinkhole_history::Writer) -> Instant {
    history.start()
}
