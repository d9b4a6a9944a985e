//! The runner: one sink mode of one scenario, end to end — worker processes,
//! the checkpoint coordinator, the fault schedule, the history.
//!
//! - [`coordinator`]: checkpoints and failover (Flink's `CheckpointCoordinator`
//!   and restart-all failover), the job's state machine;
//! - [`workers`]: starting, signalling and reaping the `sinkhole worker` processes;
//! - [`checkpoints`]: the durable store of complete checkpoints;
//! - [`history`]: `history.jsonl`, written as things happen;
//! - [`faults`]: the fault schedule's triggers, targets and cluster actions.
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sinkhole_workloads::model::SinkMode;

use crate::cluster::Cluster;
use crate::scenario::Scenario;

pub mod checkpoints;
pub mod coordinator;
pub mod faults;
pub mod history;
pub mod workers;

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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum JobOutcome {
    /// Every subtask reached the end of input and every committable was settled.
    Finished,
    /// The restart limit was exceeded, or the job could not go on.
    Failed { reason: String },
    /// The broker cannot run this mode (the exact error, e.g. KeepPreparedTxn → UNSUPPORTED_VERSION).
    Unsupported { error: String },
}

/// What one fault did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    pub name: String,
    pub kind: String,
    pub fired: bool,
    /// The effect was observed (signal delivered and seen, node was the coordinator, ...).
    pub confirmed: bool,
    pub effect: serde_json::Value,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModeOutcome {
    pub job: JobOutcome,
    pub attempts: u32,
    pub checkpoints_completed: u64,
    pub history: PathBuf,
    pub faults: Vec<FaultRecord>,
    /// Committables the sink logged and dropped (legacy's silent loss).
    pub committables_dropped: u64,
    pub wall_ms: u64,
}

/// Runs one mode of the scenario on `run.cluster` (already up, topic created)
/// until the job finishes, fails or turns out unsupported; every fault still
/// in effect is healed before it returns, so the topic can be read.
pub async fn run_mode(run: ModeRun<'_>) -> anyhow::Result<ModeOutcome> {
    let config = coordinator::JobConfig {
        run_id: run.run_id.clone(),
        mode: run.mode,
        dir: run.dir.clone(),
        job: run.scenario.job.clone(),
        topic: run.topic.clone(),
        partitions: run.scenario.topic.partitions,
        tid_prefix: run.tid_prefix.clone(),
        faults: run.scenario.faults.clone(),
        progress: run.progress,
        sink_listener: run.scenario.cluster.authorizer.as_ref().and_then(|_| run.cluster.sink_listener()),
    };
    let launcher = workers::ProcessLauncher::new(run.sinkhole_bin.clone());
    coordinator::Coordinator::new(config, launcher, run.cluster)?.run().await
}
