//! Scenarios: a cluster, a topic, a job, a fault schedule and what each sink
//! mode is expected to show. The YAML format is a contract users write
//! against (docs/SCENARIOS.md); these types are its shape.
//!
//! - [`fault`]: one fault of the schedule and the table of fault kinds (each
//!   kind's parameter names read from its struct by `fields`, how an entry is
//!   written and read by `fault_serde`);
//! - [`values`]: the values fault parameters take (targets, groups, selectors);
//! - [`when`](mod@when): triggers (when a fault fires);
//! - [`external`]: the `cluster.external` section (an existing cluster, its node commands);
//! - [`load`](mod@load): parsing and error rendering (file, line and field in every error);
//! - `located`: the located tree of a file, field paths and [`Problem`];
//! - `validate`: the semantic checks, which [`load()`] and [`from_str()`] run;
//! - [`schedule`]: seeded random schedules and the resolved fault list of a run;
//! - [`shape`]: the `shape:` section, the bounds an exploration draws each run's job from;
//! - [`timing`]: the run's derived timeouts (when to look past the transaction timeout, the drain's wait).
use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use sinkhole_model::{Partitioning, SinkMode};

pub mod broker_config;
pub mod expect_by;
pub mod external;
pub mod fault;
mod fault_serde;
mod fields;
pub mod flink;
pub mod load;
mod located;
pub mod premise;
pub mod readers;
pub mod schedule;
pub mod shape;
pub mod source;
pub mod timing;
mod validate;
mod validate_expect;
mod validate_fault;
mod validate_shape;
pub mod values;
pub mod when;

pub use external::{Commands, ExternalSpec, NodeTarget};
pub use fault::{
    Bandwidth, Blackhole, Brokers, Delay, Family, Fault, FaultKind, FaultSpec, Frames, FramesDelay, FramesError,
    KindInfo, Link, Loss, Need, NoParams, Notification, NotificationDelay, Outage, Partition, ReaderTargets, Rolling,
    Workers,
};
pub use flink::{FlinkSpec, Naming};
pub use load::{from_str, load, ScenarioError};
pub use located::Problem;
pub use readers::{ReaderMode, ReadersSpec};
pub use shape::{Bounds, Shape, ShapeSpec};
pub use source::{ShareSpec, SourceKind, SourceSpec};
pub use timing::Timing;
pub use values::*;
pub use when::When;

#[cfg(test)]
mod tests;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub cluster: ClusterSpec,
    pub topic: TopicSpec,
    pub job: JobSpec,
    /// Where the records come from: generated (default) or a share group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceSpec>,
    pub modes: Vec<SinkMode>,
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    /// A seeded random schedule, added to `faults` when the run starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<RandomSchedule>,
    /// The bounds `sinkhole explore` draws each run's job from (`shape`); `sinkhole run`
    /// runs `job` as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<ShapeSpec>,
    #[serde(default)]
    pub expect: BTreeMap<SinkMode, Expectation>,
    /// Run the modes one after another, each alone on the cluster, instead
    /// of side by side (`--sequential` does the same for one run).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sequential: bool,
    /// Side by side, the mode whose events set off an event-triggered fault
    /// on the cluster (a broker, the network); default: whichever mode
    /// reaches the event first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead: Option<SinkMode>,
    /// The Flink cluster of the `flink-kafkasink` mode (defaults when the mode runs without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flink: Option<FlinkSpec>,
    /// Expectations for some Kafka versions or transaction protocols only
    /// (known Kafka bugs), replacing `expect`'s there (`expect_by`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expect_by: Vec<expect_by::ExpectWhen>,
    /// Per mode, the effects its expectation rests on, which the rig observes
    /// (`premise`): an unmet premise makes the verdict inconclusive.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub premise: BTreeMap<SinkMode, premise::Premises>,
    /// Live read_committed consumers of each mode's topic, judged on what they polled (`readers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readers: Option<ReadersSpec>,
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
    /// Put the rig's Kafka-aware TCP proxy in front of every listener
    /// (network and protocol faults need it). Default: on exactly when a
    /// fault needs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<bool>,
    /// Where the brokers run: `local` JVM processes (default) or `containers`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub backend: Backend,
    /// The container image (containers backend); default: the image
    /// `sinkhole image build` tags for `kafka`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// An authorizer on the brokers (StandardAuthorizer) and SASL/PLAIN for
    /// the rig's clients, for ACL scenarios.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorizer: Option<AuthorizerSpec>,
    /// A cluster the rig did not start (`backend: external`): its bootstrap,
    /// security and node-control commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalSpec>,
    /// How the brokers' JVMs compile hot code (`jit`): `c1` (default) or `tiered`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub jit: Jit,
}

fn is_default<T: Default + PartialEq>(t: &T) -> bool {
    *t == T::default()
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    #[default]
    Local,
    Containers,
    /// An existing cluster: the rig starts nothing, acts on nodes through
    /// `cluster.external.commands` (see [`external`]).
    External,
}

/// The just-in-time compilers a broker JVM the rig starts may use (local and containers
/// backends; an external cluster's JVMs are its owner's).
///
/// The rig's brokers live for seconds to minutes on machines as small as two cores, beside the
/// workers and the nemesis whose timing the verdicts judge. HotSpot's default (tiered: C1, then
/// C2 for the hottest methods) spends most of a short broker's CPU on C2 compilations that only
/// pay back in long runs. `c1` stops at the first tier (`-XX:TieredStopAtLevel=1`): the same
/// bytecode, the same Kafka semantics, a quarter less CPU in a run (measured on the FLIP-319
/// scenario, whose 29 s are set by its rate: 29.3 → 21.5 CPU-s, user and system, the rig's
/// processes included). `tiered` is the JVM's default, for long runs whose
/// figure is the broker's own speed (`scenarios/throughput.yaml`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Jit {
    #[default]
    C1,
    Tiered,
}

impl std::str::FromStr for Jit {
    type Err = String;

    fn from_str(s: &str) -> Result<Jit, String> {
        match s {
            "c1" => Ok(Jit::C1),
            "tiered" => Ok(Jit::Tiered),
            other => Err(format!("{other:?}: use c1 or tiered")),
        }
    }
}

/// ACLs for the sink's principal (`User:sink`); the rig's own tools are super users.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorizerSpec {
    /// Grant TWO_PHASE_COMMIT on the sink's transactional ids (KIP-939);
    /// without it Enable2Pc must be refused.
    #[serde(default)]
    pub two_phase_commit_acl: bool,
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
    /// When a transaction's output partitions are registered with the
    /// coordinator: `lazy` (default, at a partition's first record, as the Java
    /// producer does) or `eager` (every partition at transaction begin).
    #[serde(default, skip_serializing_if = "is_default")]
    pub register_partitions: Registration,
    /// The rig's producer speaks Transactions V1 (AddPartitionsToTxn,
    /// Produce ≤ v11, EndTxn ≤ v4) even on a Transactions V2 cluster, as
    /// pre-4.0 Java clients and librdkafka do (two-phase modes).
    #[serde(default, skip_serializing_if = "is_default")]
    pub force_transactions_v1: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Registration {
    #[default]
    Lazy,
    Eager,
}

/// A seeded random schedule (Jepsen's nemesis mixes): faults of the chosen
/// kinds at random moments, each for a random duration, with quiet periods
/// between them. `schedule::resolve` turns it into plain `FaultSpec`s with
/// `at_ms` triggers; the same seed gives the same list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomSchedule {
    pub mix: Mix,
    /// Fixed seed for the schedule; default: the run's seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// No fault before this (job time, ms).
    #[serde(default = "default_schedule_start")]
    pub start_ms: u64,
    /// No fault starts after this (job time, ms).
    pub end_ms: u64,
    /// Quiet time between one fault's end and the next one's start: [min, max].
    #[serde(default = "default_quiet")]
    pub quiet_ms: [u64; 2],
    /// Each fault's duration: [min, max].
    #[serde(default = "default_fault_duration")]
    pub duration_ms: [u64; 2],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mix {
    /// No faults: the control run.
    None,
    Workers,
    Brokers,
    Network,
    Protocol,
    Coordinator,
    /// Every kind above, interleaved.
    All,
}

impl Mix {
    /// The one family a mix draws from (None for `none` and `all`).
    pub fn family(self) -> Option<Family> {
        match self {
            Mix::Workers => Some(Family::Workers),
            Mix::Brokers => Some(Family::Brokers),
            Mix::Network => Some(Family::Network),
            Mix::Protocol => Some(Family::Protocol),
            Mix::Coordinator => Some(Family::Coordinator),
            Mix::None | Mix::All => None,
        }
    }
}

impl From<Family> for Mix {
    fn from(f: Family) -> Mix {
        match f {
            Family::Workers => Mix::Workers,
            Family::Brokers => Mix::Brokers,
            Family::Network => Mix::Network,
            Family::Protocol => Mix::Protocol,
            Family::Coordinator => Mix::Coordinator,
        }
    }
}

fn default_schedule_start() -> u64 {
    2_000
}
fn default_quiet() -> [u64; 2] {
    [1_000, 3_000]
}
fn default_fault_duration() -> [u64; 2] {
    [500, 2_000]
}

/// What a mode is expected to show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Expectation {
    /// `clean`: nothing lost, duplicated or unexpected.
    Word(ExpectWord),
    /// Conditions on counts, e.g. `{lost: ">0"}`; unnamed counts are free.
    Counts(BTreeMap<CountName, Condition>),
    /// `{job_failed: "InvalidPidMappingException"}`: `job-failed`, and the
    /// failure's reason (for the Flink subject: the job's deepest cause)
    /// contains the text. A job that fails for another reason fails it: a
    /// known bug's scenario passes only when the bug itself stopped the job.
    FailedWith(FailedWith),
}

/// The body of `{job_failed: TEXT}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailedWith {
    pub job_failed: String,
}

impl Expectation {
    /// `job-failed` or `{job_failed: …}`: the job is expected not to finish.
    pub fn wants_failure(&self) -> bool {
        matches!(self, Expectation::Word(ExpectWord::JobFailed) | Expectation::FailedWith(_))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExpectWord {
    Clean,
    /// `job-failed`: the job is expected not to finish (restart limit
    /// exceeded, or the sink gives up); the counts are not judged.
    JobFailed,
    /// `refused`: the broker is expected to refuse what the mode needs (the
    /// job cannot start: e.g. Enable2Pc without the TWO_PHASE_COMMIT ACL →
    /// TRANSACTIONAL_ID_AUTHORIZATION_FAILED); a mode that runs fails it.
    Refused,
}

/// A count an expectation names (`{torn-transaction: 0}`): an anomaly of the model's table
/// (`sinkhole_model::anomaly`), which says its name, what `clean` forbids and everything
/// else about it once.
pub use sinkhole_model::anomaly::Anomaly as CountName;

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
    sinkhole_install::DEFAULT_KAFKA.to_string()
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

/// Kafka's default `transaction.max.timeout.ms` (15 minutes): the bound on a
/// producer's `transaction.timeout.ms` unless the scenario's broker config
/// lowers or raises it (Kafka `TransactionStateManagerConfig`).
pub const DEFAULT_TXN_MAX_TIMEOUT_MS: i64 = 900_000;

/// A parsed [`Condition`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq(u64),
    Gt(u64),
    Ge(u64),
    Lt(u64),
    Le(u64),
}

impl Cmp {
    pub fn holds(&self, n: u64) -> bool {
        match *self {
            Cmp::Eq(x) => n == x,
            Cmp::Gt(x) => n > x,
            Cmp::Ge(x) => n >= x,
            Cmp::Lt(x) => n < x,
            Cmp::Le(x) => n <= x,
        }
    }
}

impl fmt::Display for Cmp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cmp::Eq(x) => write!(f, "=={x}"),
            Cmp::Gt(x) => write!(f, ">{x}"),
            Cmp::Ge(x) => write!(f, ">={x}"),
            Cmp::Lt(x) => write!(f, "<{x}"),
            Cmp::Le(x) => write!(f, "<={x}"),
        }
    }
}

impl Condition {
    /// `0` or `"==N"` / `">N"` / `">=N"` / `"<N"` / `"<=N"` / `"N"`.
    pub fn parse(&self) -> Result<Cmp, String> {
        match self {
            Condition::Exactly(n) => Ok(Cmp::Eq(*n)),
            Condition::Expr(s) => {
                let t = s.trim();
                let (op, rest): (fn(u64) -> Cmp, &str) = if let Some(r) = t.strip_prefix(">=") {
                    (Cmp::Ge, r)
                } else if let Some(r) = t.strip_prefix("<=") {
                    (Cmp::Le, r)
                } else if let Some(r) = t.strip_prefix("==") {
                    (Cmp::Eq, r)
                } else if let Some(r) = t.strip_prefix('>') {
                    (Cmp::Gt, r)
                } else if let Some(r) = t.strip_prefix('<') {
                    (Cmp::Lt, r)
                } else {
                    (Cmp::Eq, t)
                };
                let n: u64 = rest.trim().parse().map_err(|_| {
                    format!("condition {s:?} does not parse: use 0, \">0\", \">=N\", \"<N\", \"<=N\" or \"==N\"")
                })?;
                let c = op(n);
                if c == Cmp::Lt(0) {
                    return Err(format!("condition {s:?} can never hold (counts are never negative)"));
                }
                Ok(c)
            }
        }
    }
}

/// The broker's `transaction.max.timeout.ms` for this scenario.
pub fn txn_max_timeout_ms(s: &Scenario) -> Result<i64, String> {
    match s.cluster.broker_config.get("transaction.max.timeout.ms") {
        None => Ok(DEFAULT_TXN_MAX_TIMEOUT_MS),
        Some(ConfigValue::Int(i)) if *i > 0 => Ok(*i),
        Some(ConfigValue::Str(t)) if t.trim().parse::<i64>().is_ok_and(|i| i > 0) => Ok(t.trim().parse().unwrap()),
        Some(v) => Err(format!("must be a positive number of milliseconds, got {v}")),
    }
}

impl Scenario {
    /// The share-group source, with its defaults, if the job reads one.
    pub fn share_source(&self) -> Option<ShareSpec> {
        self.source.as_ref().and_then(|s| s.share(self.job.parallelism))
    }

    /// The bounds of this scenario's exploration: its `shape:`, else the defaults
    /// ([`shape::Bounds::of`], with the loader's own checks of a job).
    pub fn shape_bounds(&self) -> Bounds {
        Bounds::of(self, &validate::job_problems)
    }

    /// The `flink:` section, or its defaults.
    pub fn flink_spec(&self) -> FlinkSpec {
        self.flink.clone().unwrap_or_default()
    }

    /// Whether the cluster gets the rig's proxy: `cluster.proxy` when set,
    /// else exactly when a fault (explicit, or from the resolved random
    /// schedule, which is in `faults` by then) is a network or protocol fault.
    pub fn needs_proxy(&self) -> bool {
        self.cluster.proxy.unwrap_or_else(|| {
            self.faults.iter().any(|f| f.kind.kind().needs_proxy())
                || self.schedule.as_ref().is_some_and(|r| {
                    schedule::families(r.mix, true).iter().any(|m| m.family().is_some_and(Family::needs_proxy))
                })
        })
    }
}
