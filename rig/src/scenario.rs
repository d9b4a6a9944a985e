//! Scenarios: a cluster, a topic, a job, a fault schedule and what each sink
//! mode is expected to show. The YAML format is a contract users write
//! against (README, "Scenario format"); these types are its shape.
//!
//! Loading and validation (file, line and field in every error) live in
//! [`load`](crate::scenario::load).
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sinkhole_workloads::model::{Partitioning, SinkMode};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub cluster: ClusterSpec,
    pub topic: TopicSpec,
    pub job: JobSpec,
    pub modes: Vec<SinkMode>,
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    #[serde(default)]
    pub expect: BTreeMap<SinkMode, Expectation>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    #[serde(default = "one")]
    pub brokers: usize,
    #[serde(default = "default_kafka")]
    pub kafka: String,
    /// Broker settings; YAML scalars of any type, rendered as Kafka expects.
    #[serde(default)]
    pub broker_config: BTreeMap<String, ConfigValue>,
}

/// A broker setting's value as written in YAML (numbers and booleans unquoted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ConfigValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl std::fmt::Display for ConfigValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigValue::Bool(b) => write!(f, "{b}"),
            ConfigValue::Int(i) => write!(f, "{i}"),
            ConfigValue::Float(x) => write!(f, "{x}"),
            ConfigValue::Str(s) => f.write_str(s),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicSpec {
    #[serde(default = "three")]
    pub partitions: u32,
    #[serde(default = "one")]
    pub replication_factor: usize,
    #[serde(default)]
    pub min_insync_replicas: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    pub parallelism: u32,
    pub records_per_subtask: u64,
    /// Records per second per subtask; 0 = unthrottled.
    #[serde(default)]
    pub rate_per_subtask: u64,
    pub checkpoint_interval_ms: u64,
    #[serde(default = "default_checkpoint_timeout")]
    pub checkpoint_timeout_ms: u64,
    #[serde(default = "one_u32")]
    pub max_concurrent_checkpoints: u32,
    pub transaction_timeout_ms: i32,
    #[serde(default)]
    pub restart_delay_ms: u64,
    /// Restores allowed before the job is reported failed.
    #[serde(default = "default_restart_limit")]
    pub restart_limit: u32,
    /// A worker silent for this long is declared failed.
    #[serde(default = "default_heartbeat_timeout")]
    pub heartbeat_timeout_ms: u64,
    #[serde(default = "default_linger")]
    pub linger_ms: u64,
    #[serde(default = "default_batch_size")]
    pub batch_size: usize,
    #[serde(default)]
    pub partitioning: Partitioning,
}

/// One fault in the schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// A label for the history and report (default: kind and index).
    #[serde(default)]
    pub name: Option<String>,
    pub kind: FaultKind,
    #[serde(default)]
    pub target: Option<Target>,
    pub when: When,
    /// How long a pause or an outage lasts.
    #[serde(default)]
    pub duration_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// SIGKILL chosen workers; the job fails over (restart after restart_delay_ms).
    KillWorkers,
    /// SIGSTOP chosen workers for duration_ms, then SIGCONT.
    PauseWorkers,
    /// SIGKILL every worker and keep the job down for duration_ms before the restore.
    JobOutage,
    /// SIGKILL a broker (it stays down for duration_ms, then restarts; without a
    /// duration it stays down until the job ends).
    BrokerKill,
    /// Stop and start a broker (same id and data).
    BrokerRestart,
    /// SIGSTOP a broker for duration_ms, then SIGCONT.
    BrokerPause,
}

/// What a fault acts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Target {
    /// `all`, or `txn-coordinator` (of subtask 0's current transactional id).
    Named(NamedTarget),
    /// Subtask ids (worker faults) or node ids (broker faults).
    Ids(Vec<i64>),
    /// `{txn-coordinator: S}`: the coordinator of subtask S's current transactional id.
    Coordinator {
        #[serde(rename = "txn-coordinator")]
        txn_coordinator: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NamedTarget {
    All,
    TxnCoordinator,
}

/// When a fault fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum When {
    /// Milliseconds after the job first started.
    AtMs(u64),
    /// After checkpoint n is persisted and before it is notified: the window
    /// where a checkpointed transaction is pre-committed but not committed.
    AfterCheckpointPersisted(u64),
}

/// What a mode is expected to show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Expectation {
    /// `clean`: nothing lost, duplicated or unexpected.
    Word(ExpectWord),
    /// Conditions on counts, e.g. `{lost: ">0"}`; unnamed counts are free.
    Counts(BTreeMap<CountName, Condition>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExpectWord {
    Clean,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CountName {
    Lost,
    Duplicated,
    Unexpected,
}

/// A condition on a count: `0`, `">0"`, `">=5"`, `"<10"`, `"==3"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Condition {
    Exactly(u64),
    Expr(String),
}

fn one() -> usize {
    1
}
fn one_u32() -> u32 {
    1
}
fn three() -> u32 {
    3
}
fn default_kafka() -> String {
    crate::DEFAULT_KAFKA.to_string()
}
fn default_checkpoint_timeout() -> u64 {
    60_000
}
fn default_restart_limit() -> u32 {
    10
}
fn default_heartbeat_timeout() -> u64 {
    5_000
}
fn default_linger() -> u64 {
    5
}
fn default_batch_size() -> usize {
    16 * 1024
}
