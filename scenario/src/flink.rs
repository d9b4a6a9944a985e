//! The `flink:` section: which Flink, connector and naming strategy the `flink-kafkasink`
//! mode runs, and on how many TaskManagers; and its checks, each at its field.
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::located::{key, Seg};
use sinkhole_install::flink as dist;

/// `flink: {version, connector, connector_jar, naming, taskmanagers}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlinkSpec {
    /// The Flink release (Maven Central's module jars): 1.20.x or 2.x.
    #[serde(default = "default_version")]
    pub version: String,
    /// flink-connector-kafka, built for `version` (default: the one known for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    /// A contributor's connector jar, in place of the released one on the cluster's
    /// classpath; relative to the scenario file's directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector_jar: Option<PathBuf>,
    /// KafkaSink's `TransactionNamingStrategy` (connector 4.0+).
    #[serde(default)]
    pub naming: Naming,
    /// TaskManager processes; the job's subtasks are spread over their slots.
    #[serde(default = "one")]
    pub taskmanagers: u32,
    /// FLINK-40689's precondition: before the job starts, the transactional id each subtask's
    /// first transaction uses is brought to this producer epoch with InitProducerId calls
    /// (at most [`MAX_DRIVEN_EPOCH`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive_epoch: Option<i16>,
    /// A downscale: every resubmission from a retained checkpoint (after a JobManager loss
    /// or a job outage) runs the operators at this parallelism, 1 to `job.parallelism`. The
    /// source keeps `job.parallelism` splits (the same records); the restored writers' states
    /// and committables go to fewer subtasks (FLINK-40626's case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resubmit_parallelism: Option<u32>,
    /// One subtask's snapshot of one checkpoint held for a while, in the first submission
    /// only: the checkpoint stays pending with every other subtask's snapshot taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_snapshot: Option<SlowSnapshot>,
}

/// `slow_snapshot: {subtask, checkpoint, ms}`: the job's `CheckpointLog` operator on `subtask`
/// sleeps `ms` in its snapshot of `checkpoint`. Chained operators snapshot from the sink's
/// end, so that subtask's writer has already prepared the checkpoint's transaction and
/// opened the next one; the JobManager cannot complete the checkpoint until the sleep ends.
/// That widens the window between "checkpoint n snapshotted" and "n complete" from tens of
/// milliseconds to `ms`, for a fault to land in (FLINK-40626). A real job gets the same from a
/// subtask with a slow state backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlowSnapshot {
    pub subtask: u32,
    pub checkpoint: u64,
    pub ms: u64,
}

impl SlowSnapshot {
    /// The job's `--slow-snapshot` value.
    pub fn arg(&self) -> String {
        format!("{}:{}:{}", self.subtask, self.checkpoint, self.ms)
    }
}

impl Default for FlinkSpec {
    fn default() -> FlinkSpec {
        FlinkSpec {
            version: default_version(),
            connector: None,
            connector_jar: None,
            naming: Naming::default(),
            taskmanagers: 1,
            drive_epoch: None,
            resubmit_parallelism: None,
            slow_snapshot: None,
        }
    }
}

impl FlinkSpec {
    /// The connector release: the scenario's, else the one known for the Flink version.
    pub fn connector(&self) -> String {
        self.connector
            .clone()
            .or_else(|| dist::default_connector(&self.version).map(str::to_string))
            .unwrap_or_else(|| dist::DEFAULT_CONNECTOR.to_string())
    }

    /// `connector_jar` resolved against the scenario file's directory.
    pub fn connector_jar_in(&self, scenario_file: &Path) -> Option<PathBuf> {
        let jar = self.connector_jar.as_ref()?;
        Some(match scenario_file.parent() {
            Some(dir) if jar.is_relative() => dir.join(jar),
            _ => jar.clone(),
        })
    }
}

/// KafkaSink's transactional-id naming (`TransactionNamingStrategy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Naming {
    /// `{prefix}-{subtask}-{checkpoint}`: checkpoint n's transaction has its own id.
    #[default]
    Incrementing,
    /// `{prefix}-{subtask}-{k}` from a small pool, reused (connector 4.0+).
    Pooling,
}

impl Naming {
    pub fn name(self) -> &'static str {
        match self {
            Naming::Incrementing => "INCREMENTING",
            Naming::Pooling => "POOLING",
        }
    }
}

fn default_version() -> String {
    dist::DEFAULT_FLINK.to_string()
}

fn one() -> u32 {
    1
}

/// The highest epoch `drive_epoch` may name: an InitProducerId at `Short.MAX_VALUE - 1`
/// would itself rotate the producer id, and the job's first transaction would start at 0.
pub const MAX_DRIVEN_EPOCH: i16 = i16::MAX - 2;

/// The most TaskManagers a scenario may start (each is a JVM of about 350 MB here).
pub const MAX_TASKMANAGERS: u32 = 8;

/// Problems of the section: (path, message). `file` is the scenario's, for a relative jar.
pub(super) fn validate(f: &FlinkSpec, file: &str, job: &super::JobSpec) -> Vec<(Vec<Seg>, String)> {
    let parallelism = job.parallelism;
    let mut out = Vec::new();
    let at = |field: &str| vec![key("flink"), key(field)];
    let connector = f.connector();
    match dist::check_flink_version(&f.version) {
        Err(e) => out.push((at("version"), e.to_string())),
        Ok(_) if f.connector.is_none() && dist::default_connector(&f.version).is_none() => out.push((
            at("version"),
            format!("no flink-connector-kafka is known for Flink {}: name one in flink.connector", f.version),
        )),
        Ok(_) => {
            if let Err(e) = dist::check_versions(&f.version, &connector) {
                out.push((at(if f.connector.is_some() { "connector" } else { "version" }), e.to_string()));
            }
        }
    }
    if let Err(e) = dist::check_naming(&connector, f.naming.name()) {
        out.push((at("naming"), e));
    }
    if let Some(jar) = f.connector_jar_in(Path::new(file)) {
        if let Err(e) = dist::check_connector_jar(&jar) {
            out.push((at("connector_jar"), e.to_string()));
        }
    }
    if let Some(e) = f.drive_epoch {
        if !(1..=MAX_DRIVEN_EPOCH).contains(&e) {
            out.push((
                at("drive_epoch"),
                format!("{e}: use 1 to {MAX_DRIVEN_EPOCH} (32766 would rotate the producer id before the job)"),
            ));
        }
    }
    // The bounds below follow job.parallelism; when it is 0, its own check is the one problem.
    let parallelism_known = parallelism >= 1;
    if let Some(p) = f.resubmit_parallelism.filter(|_| parallelism_known) {
        if p < 1 || p > parallelism {
            out.push((
                at("resubmit_parallelism"),
                format!("{p}: use 1 to job.parallelism ({parallelism}); a resubmission can downscale, not upscale"),
            ));
        }
    }
    if let Some(slow) = &f.slow_snapshot {
        let field = |name: &str| vec![key("flink"), key("slow_snapshot"), key(name)];
        if parallelism_known && slow.subtask >= parallelism {
            out.push((field("subtask"), format!("{}: the job has subtasks 0 to {}", slow.subtask, parallelism - 1)));
        }
        if slow.checkpoint < 1 {
            out.push((field("checkpoint"), "0: Flink's checkpoints are numbered from 1".into()));
        }
        if slow.ms < 1 || slow.ms >= job.checkpoint_timeout_ms {
            out.push((
                field("ms"),
                format!(
                    "{}: use 1 to below job.checkpoint_timeout_ms ({}), or the checkpoint expires instead",
                    slow.ms, job.checkpoint_timeout_ms
                ),
            ));
        }
    }
    if f.taskmanagers < 1 || f.taskmanagers > MAX_TASKMANAGERS {
        out.push((at("taskmanagers"), format!("{}: use 1 to {MAX_TASKMANAGERS}", f.taskmanagers)));
    } else if parallelism_known && f.taskmanagers > parallelism {
        out.push((
            at("taskmanagers"),
            format!("{} TaskManagers for parallelism {parallelism}: some would run no subtask", f.taskmanagers),
        ));
    }
    out
}

/// Slots per TaskManager: the job's subtasks spread over every TaskManager.
pub fn slots_per_taskmanager(parallelism: u32, taskmanagers: u32) -> u32 {
    parallelism.div_ceil(taskmanagers.max(1)).max(1)
}
