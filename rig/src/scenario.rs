//! Scenarios: a cluster, a topic, a job, a fault schedule and what each sink
//! mode is expected to show. The YAML format is a contract users write
//! against (README, "Scenario format"); these types are its shape.
//!
//! Loading and validation (file, line and field in every error) live in
//! [`load`](crate::scenario::load).
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_saphyr::{Location, Spanned};
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
    /// A seeded random schedule, added to `faults` when the run starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<RandomSchedule>,
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

/// One fault in the schedule. The fields after `duration_ms` are parameters
/// of some kinds only; validation names a parameter given to a kind that does
/// not take it (docs/SCENARIOS.md lists which kind takes which).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// A label for the history and report (default: kind and index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub kind: FaultKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    pub when: When,
    /// How long the fault lasts before it is healed (a pause, an outage, a
    /// network or protocol fault, a broker kept down). Without it a fault that
    /// has a heal lasts until the job ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// `every_ms` triggers: how many times (default: until the job ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,

    // --- network faults: between two groups of nodes ---
    /// `workers`, `worker-N`, `brokers`, `broker-N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Vec<Group>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Vec<Group>>,
    /// `net-partition`: `two-way` (default) or `one-way` (from → to only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<NetDirection>,
    /// `net-delay`, `protocol-delay`, `delay-notification`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// `net-delay`, `protocol-delay`: each frame's delay is delay_ms ± a
    /// uniform jitter (seeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<u64>,
    /// `net-loss` (and optional on protocol faults): the chance, 0 < p ≤ 1,
    /// that a matching frame is acted on (seeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,

    // --- protocol faults: frames of chosen Kafka APIs ---
    /// API names as Kafka spells them: `EndTxn`, `Produce`, `InitProducerId`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apis: Option<Vec<String>>,
    /// `request` (default) or `response`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<FrameDirection>,
    /// `protocol-error`: the error to answer with, by Kafka name
    /// (`COORDINATOR_NOT_AVAILABLE`) or code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorName>,
    /// Only frames of this transactional id: the current id of subtask S
    /// (`{subtask: S}`, resolved when the fault fires) or a literal id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<TidSelector>,
    /// Only the n-th matching frame (1-based) after the fault starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u64>,

    // --- coordinator faults ---
    /// `drop-notification`, `delay-notification`, `decline-checkpoint`: the
    /// checkpoint acted on (default: the next one, or the trigger's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<u64>,
}

impl FaultSpec {
    /// A fault with no parameters beyond kind and trigger.
    pub fn new(kind: FaultKind, when: When) -> FaultSpec {
        FaultSpec {
            name: None,
            kind,
            target: None,
            when,
            duration_ms: None,
            times: None,
            from: None,
            to: None,
            direction: None,
            delay_ms: None,
            jitter_ms: None,
            probability: None,
            apis: None,
            frames: None,
            error: None,
            transactional_id: None,
            nth: None,
            checkpoint: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    // --- workers (the job's processes) ---
    /// SIGKILL chosen workers; the job fails over (restart after restart_delay_ms).
    KillWorkers,
    /// SIGSTOP chosen workers for duration_ms, then SIGCONT.
    PauseWorkers,
    /// SIGKILL every worker and keep the job down for duration_ms before the restore.
    JobOutage,
    // --- brokers ---
    /// SIGKILL a broker (it stays down for duration_ms, then restarts; without a
    /// duration it stays down until the job ends).
    BrokerKill,
    /// SIGTERM a broker and wait for its clean shutdown; down for duration_ms
    /// as `broker-kill`.
    BrokerStop,
    /// Stop and start a broker (same id and data).
    BrokerRestart,
    /// SIGSTOP a broker for duration_ms, then SIGCONT.
    BrokerPause,
    /// Restart every broker, one after another, waiting between nodes until no
    /// partition is under-replicated (Kafka's transactions system test).
    RollingRestart,
    // --- network (through the rig's TCP proxy in front of every listener) ---
    /// Frames between `from` and `to` are dropped (connections hang, as with
    /// an iptables DROP); `direction` one-way drops only from → to.
    NetPartition,
    /// The target brokers receive nothing from anyone and answer nothing.
    NetBlackhole,
    /// Connections between `from` and `to` are reset, and new ones are reset
    /// at once while the fault lasts.
    NetReset,
    /// Every frame between `from` and `to` is held delay_ms ± jitter_ms.
    NetDelay,
    /// Each frame between `from` and `to` is dropped with `probability`
    /// (whole Kafka frames: bytes of a TCP stream cannot be lost alone).
    NetLoss,
    // --- protocol (Kafka-aware proxy) ---
    /// Matching frames are swallowed.
    ProtocolDrop,
    /// Matching frames are held delay_ms ± jitter_ms.
    ProtocolDelay,
    /// Matching requests are answered by the proxy with `error` (not
    /// forwarded); matching responses have their error codes replaced.
    ProtocolError,
    // --- the checkpoint coordinator (Flink's JobManager) ---
    /// The "checkpoint complete" notification of `checkpoint` is not sent to
    /// the target subtasks (they commit it with the next one).
    DropNotification,
    /// The notification reaches the target subtasks delay_ms late.
    DelayNotification,
    /// The coordinator crashes after a checkpoint is persisted, before it is
    /// notified: every worker is killed and the job restores from the store.
    CoordinatorCrash,
    /// The target subtasks decline `checkpoint`: it is aborted.
    DeclineCheckpoint,
}

/// A group of nodes for network faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    Workers,
    Worker(u32),
    Brokers,
    Broker(i32),
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Group::Workers => f.write_str("workers"),
            Group::Worker(n) => write!(f, "worker-{n}"),
            Group::Brokers => f.write_str("brokers"),
            Group::Broker(n) => write!(f, "broker-{n}"),
        }
    }
}

impl std::str::FromStr for Group {
    type Err = String;
    fn from_str(s: &str) -> Result<Group, String> {
        let bad = || format!("{s:?}: expected `workers`, `worker-N`, `brokers` or `broker-N`");
        match s {
            "workers" => Ok(Group::Workers),
            "brokers" => Ok(Group::Brokers),
            _ => {
                if let Some(n) = s.strip_prefix("worker-") {
                    n.parse().map(Group::Worker).map_err(|_| bad())
                } else if let Some(n) = s.strip_prefix("broker-") {
                    n.parse().map(Group::Broker).map_err(|_| bad())
                } else {
                    Err(bad())
                }
            }
        }
    }
}

impl Serialize for Group {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Group {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Group, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetDirection {
    OneWay,
    TwoWay,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrameDirection {
    Request,
    Response,
}

/// A Kafka error by name (`NOT_COORDINATOR`) or code (`16`).
pub use sinkhole_kafka::ErrorName;

/// Whose frames a protocol fault acts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TidSelector {
    /// `{subtask: S}`: subtask S's transactional id at the moment the fault fires.
    Subtask {
        subtask: u32,
    },
    Literal(String),
}

/// What a fault acts on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Target {
    /// `all`, `txn-coordinator` (of subtask 0's current transactional id),
    /// `controller` (the KRaft quorum leader), `leader` (of partition 0).
    Named(NamedTarget),
    /// Subtask ids (worker and coordinator faults) or node ids (broker faults).
    Ids(Vec<i64>),
    /// `{txn-coordinator: S}`: the coordinator of subtask S's current transactional id.
    Coordinator {
        #[serde(rename = "txn-coordinator")]
        txn_coordinator: u32,
    },
    /// `{leader: P}`: the leader of partition P of the scenario's topic.
    Leader { leader: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NamedTarget {
    All,
    TxnCoordinator,
    Controller,
    Leader,
}

/// When a fault fires. Event triggers fire at the first event that matches
/// (for checkpoint n: n itself or, if n never happens, the first later one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum When {
    /// Milliseconds after the job first started.
    AtMs(u64),
    /// Every this many milliseconds after the job first started (the first
    /// time after one period), `times` times or until the job ends.
    EveryMs(u64),
    /// When the coordinator triggers checkpoint n.
    CheckpointTriggered(u64),
    /// When subtask s acknowledges checkpoint n.
    CheckpointAcked { checkpoint: u64, subtask: u32 },
    /// After checkpoint n is persisted and before it is notified: the window
    /// where a checkpointed transaction is pre-committed but not committed.
    #[serde(alias = "after_checkpoint_persisted")]
    CheckpointPersisted(u64),
    /// After the notification of checkpoint n is sent.
    CheckpointNotified(u64),
    /// When a subtask starts committing checkpoint n (its CommitStarted event).
    CommitStarted(u64),
    /// When subtask s opens a transaction (for checkpoint n's interval if given).
    TxnOpened { subtask: u32, checkpoint: Option<u64> },
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CountName {
    Lost,
    Duplicated,
    Unexpected,
    Nonmonotonic,
    AbortedRead,
    TornTransaction,
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

// ===========================================================================
// Loading and validation
// ===========================================================================

/// Kafka's default `transaction.max.timeout.ms` (15 minutes): the bound on a
/// producer's `transaction.timeout.ms` unless the scenario's broker config
/// lowers or raises it (Kafka `TransactionStateManagerConfig`).
pub const DEFAULT_TXN_MAX_TIMEOUT_MS: i64 = 900_000;

/// One thing wrong with a scenario, located in its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub file: String,
    /// 1-based; 0 when the location is unknown.
    pub line: u64,
    pub column: u64,
    /// The field, as a path: `job.parallelism`, `faults[0].duration_ms`,
    /// `cluster.broker_config[transaction.max.timeout.ms]`.
    pub field: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}: {}", self.file, self.line, self.column, self.field, self.message)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("{path}: cannot read the scenario: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// One line per problem (`file:line:column: field: message`).
    #[error("{}", .problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("\n"))]
    Invalid {
        problems: Vec<Problem>,
        /// For syntax and type errors: serde-saphyr's rendering with the
        /// offending lines of the file (without its own headline).
        snippet: Option<String>,
    },
}

impl ScenarioError {
    pub fn problems(&self) -> &[Problem] {
        match self {
            ScenarioError::Invalid { problems, .. } => problems,
            ScenarioError::Read { .. } => &[],
        }
    }

    /// The problems, then the source excerpt where there is one: what a user reads.
    pub fn render(&self) -> String {
        match self {
            ScenarioError::Invalid { snippet: Some(s), .. } => format!("{self}\n{s}"),
            _ => self.to_string(),
        }
    }
}

/// Reads and validates a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read { path: name.clone(), source })?;
    from_str(&text, &name)
}

/// Parses and validates a scenario; `source_name` names the file in errors.
pub fn from_str(text: &str, source_name: &str) -> Result<Scenario, ScenarioError> {
    // A shadow parse into a generic tree of located nodes: the typed parse
    // below says *what* is wrong and where, this one names the *field* there
    // and locates fields for the semantic checks (the scenario types stay
    // plain, without `Spanned` wrappers).
    let tree = serde_saphyr::from_str_with_options::<Spanned<Node>>(text, yaml_options()).ok();
    let locs = Locs::new(tree.as_ref());
    let scenario: Scenario = match serde_saphyr::from_str_with_options(text, yaml_options()) {
        Ok(s) => s,
        Err(e) => return Err(syntax_problem(&e, text, source_name, &locs)),
    };
    let problems = validate(&scenario, &locs, source_name);
    if problems.is_empty() {
        Ok(scenario)
    } else {
        Err(ScenarioError::Invalid { problems, snippet: None })
    }
}

/// Budgets against alias bombs and absurd inputs: a scenario is a few hundred
/// nodes, so generous limits still stop a billion-laughs file at once.
fn yaml_options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_aliases: 1_000,
            max_anchors: 1_000,
            max_nodes: 200_000,
            max_depth: 64,
            max_documents: 1,
            max_total_scalar_bytes: 4 << 20,
        },
        with_snippet: true,
    }
}

fn syntax_problem(e: &serde_saphyr::Error, text: &str, file: &str, locs: &Locs) -> ScenarioError {
    use serde_saphyr::MessageFormatter;
    let loc = e.location().unwrap_or(Location::UNKNOWN);
    let (mut line, mut column) = (loc.line(), loc.column());
    let raw = serde_saphyr::DefaultMessageFormatter.format_message(e.without_snippet()).into_owned();
    let field = if raw.starts_with("missing field") {
        // serde reports a missing field at the end of its mapping: name the
        // mapping, at its key.
        match locs.mapping_at(line, column) {
            Some((path, l, c)) => {
                (line, column) = (l, c);
                path
            }
            None => field_by_indent(text, line as usize),
        }
    } else {
        locs.field_at(line, column).unwrap_or_else(|| field_by_indent(text, line as usize))
    };
    let message = explain_untagged(&raw, &field);
    let rendered = e.render_with_options(serde_saphyr::render_options! { source_name: Some(file) });
    // serde-saphyr's first line repeats the message; keep the excerpt.
    let snippet: Vec<&str> = rendered.lines().skip(1).collect();
    let snippet = if snippet.is_empty() { None } else { Some(snippet.join("\n")) };
    ScenarioError::Invalid { problems: vec![Problem { file: file.to_string(), line, column, field, message }], snippet }
}

/// Untagged enums fail with "did not match any variant": say what is accepted there.
fn explain_untagged(raw: &str, field: &str) -> String {
    if !raw.contains("did not match any variant") {
        return raw.to_string();
    }
    let top = field.split(['.', '[']).next().unwrap_or("");
    let hint = if raw.contains("Expectation") || top == "expect" {
        "expected `clean`, `job-failed`, or a map of lost/duplicated/unexpected to conditions (0, \">0\", \">=N\", \"<N\", \"==N\")"
    } else if raw.contains("Condition") {
        "expected a count (0) or a condition string (\">0\", \">=N\", \"<N\", \"==N\")"
    } else if raw.contains("Target") || field.ends_with("target") {
        "expected `all`, `txn-coordinator`, a list of ids, or {txn-coordinator: SUBTASK}"
    } else if raw.contains("ConfigValue") || top == "cluster" {
        "expected a scalar (string, number or boolean)"
    } else {
        return raw.to_string();
    };
    format!("{hint} ({raw})")
}

/// For syntax errors (no tree): the block-style key path leading to `line`,
/// from indentation. Flow collections are not followed: good enough to point
/// at the right key in a broken file.
fn field_by_indent(text: &str, line: usize) -> String {
    let mut stack: Vec<(usize, String)> = Vec::new();
    for l in text.lines().take(line.max(1)) {
        let trimmed = l.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = l.len() - trimmed.len();
        let body = trimmed.trim_start_matches("- ");
        let Some((key, _)) = body.split_once(':') else { continue };
        if key.is_empty() || key.contains([' ', '{', '[', '"', '\'']) {
            continue;
        }
        while stack.last().is_some_and(|(i, _)| *i >= indent) {
            stack.pop();
        }
        stack.push((indent, key.to_string()));
    }
    if stack.is_empty() {
        "(document)".to_string()
    } else {
        stack.into_iter().map(|(_, k)| k).collect::<Vec<_>>().join(".")
    }
}

// ---------------------------------------------------------------------------
// The located tree

/// A YAML node with the locations of its children (from `Spanned`).
#[derive(Debug)]
enum Node {
    Scalar,
    Seq(Vec<Spanned<Node>>),
    Map(Vec<(Spanned<String>, Spanned<Node>)>),
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Node;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any YAML node")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_i128<E: de::Error>(self, _: i128) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_u128<E: de::Error>(self, _: u128) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_none<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Scalar)
            }
            fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Node, D2::Error> {
                Node::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
                let mut v = Vec::new();
                while let Some(n) = a.next_element::<Spanned<Node>>()? {
                    v.push(n);
                }
                Ok(Node::Seq(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Node, A::Error> {
                let mut v = Vec::new();
                while let Some(k) = a.next_key::<Spanned<KeyText>>()? {
                    let val = a.next_value::<Spanned<Node>>()?;
                    v.push((Spanned::new(k.value.0, k.referenced, k.defined), val));
                }
                Ok(Node::Map(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// A mapping key of any scalar type, as text.
struct KeyText(String);

impl<'de> Deserialize<'de> for KeyText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KeyText, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a scalar key")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<KeyText, E> {
                Ok(KeyText(b.to_string()))
            }
            fn visit_i64<E: de::Error>(self, x: i64) -> Result<KeyText, E> {
                Ok(KeyText(x.to_string()))
            }
            fn visit_u64<E: de::Error>(self, x: u64) -> Result<KeyText, E> {
                Ok(KeyText(x.to_string()))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<KeyText, E> {
                Ok(KeyText(x.to_string()))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<KeyText, E> {
                Ok(KeyText(s.to_string()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<KeyText, E> {
                Ok(KeyText("~".to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

fn render_path(path: &[Seg]) -> String {
    let mut out = String::new();
    for s in path {
        match s {
            Seg::Key(k) if k.contains('.') => {
                out.push('[');
                out.push_str(k);
                out.push(']');
            }
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    if out.is_empty() {
        "(document)".to_string()
    } else {
        out
    }
}

/// Every node's and key's location, by path.
#[derive(Debug, Default)]
struct Locs {
    /// (path, line, column, is_key)
    entries: Vec<(Vec<Seg>, u64, u64, bool)>,
}

impl Locs {
    fn new(root: Option<&Spanned<Node>>) -> Locs {
        let mut l = Locs::default();
        if let Some(r) = root {
            l.walk(&mut Vec::new(), r);
        }
        l
    }

    fn walk(&mut self, path: &mut Vec<Seg>, n: &Spanned<Node>) {
        self.entries.push((path.clone(), n.referenced.line(), n.referenced.column(), false));
        match &n.value {
            Node::Scalar => {}
            Node::Seq(items) => {
                for (i, it) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    self.walk(path, it);
                    path.pop();
                }
            }
            Node::Map(entries) => {
                for (k, v) in entries {
                    path.push(Seg::Key(k.value.clone()));
                    self.entries.push((path.clone(), k.referenced.line(), k.referenced.column(), true));
                    self.walk(path, v);
                    path.pop();
                }
            }
        }
    }

    /// Whether the file has a node at exactly `path`.
    fn has(&self, path: &[Seg]) -> bool {
        self.entries.iter().any(|(q, l, _, _)| q == path && *l > 0)
    }

    /// The location of the value at `path`, or of its nearest existing
    /// ancestor (a missing field is reported where its parent is).
    fn at(&self, path: &[Seg]) -> (u64, u64) {
        for len in (0..=path.len()).rev() {
            let p = &path[..len];
            // A value's own location; for a missing value, its key.
            let hit = self
                .entries
                .iter()
                .find(|(q, l, _, is_key)| q == p && !is_key && *l > 0)
                .or_else(|| self.entries.iter().find(|(q, l, _, _)| q == p && *l > 0));
            if let Some((_, l, c, _)) = hit {
                return (*l, *c);
            }
        }
        (1, 1)
    }

    /// The mapping that holds the key at (line, column): its path and the
    /// location of its own key (the document start for the top level).
    fn mapping_at(&self, line: u64, column: u64) -> Option<(String, u64, u64)> {
        let (path, ..) = self
            .entries
            .iter()
            .filter(|(_, l, c, _)| (*l, *c) <= (line, column) && *l > 0)
            .max_by(|a, b| (a.1, a.2).cmp(&(b.1, b.2)).then(a.3.cmp(&b.3)))?;
        let parent = &path[..path.len().saturating_sub(1)];
        let (l, c) = self
            .entries
            .iter()
            .find(|(q, l, _, is_key)| q == parent && *is_key && *l > 0)
            .map(|e| (e.1, e.2))
            .unwrap_or_else(|| self.at(parent));
        Some((render_path(parent), l, c))
    }

    /// The field a parse error at (line, column) is about: an exact match
    /// (the shallowest: "missing field" errors point at the mapping, whose
    /// first key shares its position), else the last node before it.
    fn field_at(&self, line: u64, column: u64) -> Option<String> {
        if self.entries.is_empty() || line == 0 {
            return None;
        }
        let exact = self.entries.iter().filter(|(_, l, c, _)| *l == line && *c == column).min_by_key(|e| e.0.len());
        let best = exact.or_else(|| {
            self.entries
                .iter()
                .filter(|(_, l, c, _)| (*l, *c) <= (line, column) && *l > 0)
                .max_by(|a, b| (a.1, a.2).cmp(&(b.1, b.2)).then(b.0.len().cmp(&a.0.len())))
        })?;
        Some(render_path(&best.0))
    }
}

// ---------------------------------------------------------------------------
// Conditions

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

// ---------------------------------------------------------------------------
// Semantic checks

fn key(k: &str) -> Seg {
    Seg::Key(k.to_string())
}

fn worker_fault(k: FaultKind) -> bool {
    matches!(k, FaultKind::KillWorkers | FaultKind::PauseWorkers | FaultKind::JobOutage)
}

fn kind_name(k: FaultKind) -> &'static str {
    match k {
        FaultKind::KillWorkers => "kill-workers",
        FaultKind::PauseWorkers => "pause-workers",
        FaultKind::JobOutage => "job-outage",
        FaultKind::BrokerKill => "broker-kill",
        FaultKind::BrokerStop => "broker-stop",
        FaultKind::BrokerRestart => "broker-restart",
        FaultKind::BrokerPause => "broker-pause",
        FaultKind::RollingRestart => "rolling-restart",
        FaultKind::NetPartition => "net-partition",
        FaultKind::NetBlackhole => "net-blackhole",
        FaultKind::NetReset => "net-reset",
        FaultKind::NetDelay => "net-delay",
        FaultKind::NetLoss => "net-loss",
        FaultKind::ProtocolDrop => "protocol-drop",
        FaultKind::ProtocolDelay => "protocol-delay",
        FaultKind::ProtocolError => "protocol-error",
        FaultKind::DropNotification => "drop-notification",
        FaultKind::DelayNotification => "delay-notification",
        FaultKind::CoordinatorCrash => "coordinator-crash",
        FaultKind::DeclineCheckpoint => "decline-checkpoint",
    }
}

impl FaultKind {
    /// The name as written in YAML.
    pub fn name(&self) -> &'static str {
        kind_name(*self)
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

fn validate(s: &Scenario, locs: &Locs, file: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut bad = |path: Vec<Seg>, message: String| {
        let (line, column) = locs.at(&path);
        out.push(Problem { file: file.to_string(), line, column, field: render_path(&path), message });
    };

    // name: it goes into run ids, topic names and transactional ids.
    if s.name.is_empty()
        || s.name.len() > 100
        || !s.name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        bad(
            vec![key("name")],
            format!(
                "{:?}: use 1 to 100 letters, digits, '.', '_' or '-' (it becomes part of topic names and transactional ids)",
                s.name
            ),
        );
    }

    // cluster
    let c = &s.cluster;
    if !matches!(c.brokers, 1 | 3 | 5) {
        bad(vec![key("cluster"), key("brokers")], format!("{}: use 1, 3 or 5 KRaft nodes", c.brokers));
    }
    if let Err(e) = crate::install::parse_versions(&c.kafka) {
        bad(vec![key("cluster"), key("kafka")], e.to_string());
    }
    for (k, v) in &c.broker_config {
        let path = vec![key("cluster"), key("broker_config"), key(k)];
        if let Err(e) = crate::cluster::config::parse_override(&format!("{k}={v}")) {
            bad(path, e.to_string());
        }
    }
    let max_timeout = match txn_max_timeout_ms(s) {
        Ok(m) => Some(m),
        Err(e) => {
            bad(vec![key("cluster"), key("broker_config"), key("transaction.max.timeout.ms")], e);
            None
        }
    };

    // topic
    let t = &s.topic;
    if t.partitions < 1 {
        bad(vec![key("topic"), key("partitions")], "must be ≥ 1".into());
    }
    if t.replication_factor < 1 || t.replication_factor > c.brokers {
        bad(
            vec![key("topic"), key("replication_factor")],
            format!("{} must be between 1 and the number of brokers ({})", t.replication_factor, c.brokers),
        );
    }
    if let Some(m) = t.min_insync_replicas {
        if m < 1 || m > t.replication_factor {
            bad(
                vec![key("topic"), key("min_insync_replicas")],
                format!("{m} must be between 1 and replication_factor ({})", t.replication_factor),
            );
        }
    }

    // job
    let j = &s.job;
    let jp = |f: &str| vec![key("job"), key(f)];
    if j.parallelism < 1 {
        bad(jp("parallelism"), "must be ≥ 1".into());
    }
    if j.records_per_subtask < 1 {
        bad(jp("records_per_subtask"), "must be ≥ 1".into());
    }
    if j.checkpoint_interval_ms < 10 {
        bad(jp("checkpoint_interval_ms"), format!("{} ms: must be ≥ 10 ms", j.checkpoint_interval_ms));
    }
    if j.checkpoint_timeout_ms < 1 {
        bad(jp("checkpoint_timeout_ms"), "must be ≥ 1 ms".into());
    }
    if j.max_concurrent_checkpoints < 1 {
        bad(jp("max_concurrent_checkpoints"), "must be ≥ 1".into());
    }
    if j.heartbeat_timeout_ms < 1 {
        bad(jp("heartbeat_timeout_ms"), "must be ≥ 1 ms".into());
    }
    if j.batch_size < 1 {
        bad(jp("batch_size"), "must be ≥ 1 byte".into());
    }
    if j.transaction_timeout_ms <= 0 {
        bad(jp("transaction_timeout_ms"), format!("{} ms: must be > 0", j.transaction_timeout_ms));
    } else if let Some(max) = max_timeout {
        if i64::from(j.transaction_timeout_ms) > max {
            bad(
                jp("transaction_timeout_ms"),
                format!(
                    "{} ms exceeds the broker's transaction.max.timeout.ms ({max} ms): InitProducerId would fail with INVALID_TRANSACTION_TIMEOUT; lower it or raise cluster.broker_config[transaction.max.timeout.ms]",
                    j.transaction_timeout_ms
                ),
            );
        }
    }

    // modes
    if s.modes.is_empty() {
        bad(vec![key("modes")], "name at least one mode".into());
    }
    for (i, m) in s.modes.iter().enumerate() {
        if s.modes[..i].contains(m) {
            bad(vec![key("modes"), Seg::Index(i)], format!("{m} is listed twice"));
        }
    }

    // expect
    for (m, e) in &s.expect {
        let path = vec![key("expect"), key(m.name())];
        if !s.modes.contains(m) {
            bad(
                path.clone(),
                format!(
                    "an expectation for {m}, which is not in modes [{}]",
                    s.modes.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
                ),
            );
        }
        if let Expectation::Counts(conds) = e {
            for (name, cond) in conds {
                if let Err(msg) = cond.parse() {
                    let mut p = path.clone();
                    p.push(key(count_key(*name)));
                    bad(p, msg);
                }
            }
        }
    }

    // faults
    let mut names: Vec<String> = Vec::new();
    for (i, f) in s.faults.iter().enumerate() {
        if let Some(n) = &f.name {
            if names.contains(n) {
                bad(
                    vec![key("faults"), Seg::Index(i), key("name")],
                    format!("{n:?} names another fault too; fault names must be unique"),
                );
            }
            names.push(n.clone());
        }
        validate_fault(s, locs, i, f, &mut bad);
    }
    if let Some(r) = &s.schedule {
        validate_schedule(s, r, &mut bad);
    }

    // cluster settings that depend on the faults
    if c.image.is_some() && c.backend != Backend::Containers {
        bad(
            vec![key("cluster"), key("image")],
            "an image is only used by the containers backend: add `backend: containers` or remove image".into(),
        );
    }
    if c.proxy == Some(false) {
        for (i, f) in s.faults.iter().enumerate() {
            if needs_proxy(f.kind) {
                bad(
                    vec![key("cluster"), key("proxy")],
                    format!(
                        "proxy: false, but faults[{i}] ({}) is a {} fault, which only the proxy can inject: remove `proxy: false`",
                        f.name.as_deref().unwrap_or(f.kind.name()),
                        if is_protocol(f.kind) { "protocol" } else { "network" }
                    ),
                );
            }
        }
    }
    out
}

/// Network and protocol faults act through the rig's TCP proxy.
pub fn needs_proxy(k: FaultKind) -> bool {
    is_network(k) || is_protocol(k)
}

fn is_network(k: FaultKind) -> bool {
    use FaultKind::*;
    matches!(k, NetPartition | NetBlackhole | NetReset | NetDelay | NetLoss)
}

fn is_protocol(k: FaultKind) -> bool {
    matches!(k, FaultKind::ProtocolDrop | FaultKind::ProtocolDelay | FaultKind::ProtocolError)
}

fn is_broker(k: FaultKind) -> bool {
    use FaultKind::*;
    matches!(k, BrokerKill | BrokerStop | BrokerRestart | BrokerPause)
}

/// Faults on the checkpoint coordinator's messages to chosen subtasks.
fn is_notification(k: FaultKind) -> bool {
    use FaultKind::*;
    matches!(k, DropNotification | DelayNotification | DeclineCheckpoint)
}

/// Every optional parameter of a fault, as written in YAML.
pub const FAULT_PARAMS: [&str; 14] = [
    "target",
    "duration_ms",
    "from",
    "to",
    "direction",
    "delay_ms",
    "jitter_ms",
    "probability",
    "apis",
    "frames",
    "error",
    "transactional_id",
    "nth",
    "checkpoint",
];

/// Whether a fault kind takes a parameter (required or optional); the table
/// docs/SCENARIOS.md prints.
pub fn takes(k: FaultKind, param: &str) -> bool {
    use FaultKind::*;
    let net_pair = matches!(k, NetPartition | NetReset | NetDelay | NetLoss);
    match param {
        "target" => worker_fault(k) || is_broker(k) || is_notification(k) || k == NetBlackhole,
        "duration_ms" => {
            matches!(k, PauseWorkers | JobOutage | BrokerKill | BrokerStop | BrokerPause) || needs_proxy(k)
        }
        "from" => net_pair || is_protocol(k),
        "to" => net_pair || k == NetBlackhole || is_protocol(k),
        "direction" => k == NetPartition,
        "delay_ms" => matches!(k, NetDelay | ProtocolDelay | DelayNotification),
        "jitter_ms" => matches!(k, NetDelay | ProtocolDelay),
        "probability" => k == NetLoss || is_protocol(k),
        "apis" | "frames" | "transactional_id" | "nth" => is_protocol(k),
        "error" => k == ProtocolError,
        "checkpoint" => is_notification(k),
        _ => false,
    }
}

const ALL_KINDS: [FaultKind; 20] = {
    use FaultKind::*;
    [
        KillWorkers,
        PauseWorkers,
        JobOutage,
        BrokerKill,
        BrokerStop,
        BrokerRestart,
        BrokerPause,
        RollingRestart,
        NetPartition,
        NetBlackhole,
        NetReset,
        NetDelay,
        NetLoss,
        ProtocolDrop,
        ProtocolDelay,
        ProtocolError,
        DropNotification,
        DelayNotification,
        CoordinatorCrash,
        DeclineCheckpoint,
    ]
};

impl FaultKind {
    /// Every kind, in declaration order.
    pub fn all() -> &'static [FaultKind] {
        &ALL_KINDS
    }
}

/// Which parameters a fault has set.
fn given(f: &FaultSpec) -> Vec<&'static str> {
    let set = [
        f.target.is_some(),
        f.duration_ms.is_some(),
        f.from.is_some(),
        f.to.is_some(),
        f.direction.is_some(),
        f.delay_ms.is_some(),
        f.jitter_ms.is_some(),
        f.probability.is_some(),
        f.apis.is_some(),
        f.frames.is_some(),
        f.error.is_some(),
        f.transactional_id.is_some(),
        f.nth.is_some(),
        f.checkpoint.is_some(),
    ];
    FAULT_PARAMS.iter().zip(set).filter(|(_, s)| *s).map(|(p, _)| *p).collect()
}

/// Why a kind does not take a parameter, where one line helps more than the
/// list of kinds that do.
fn not_taken_hint(k: FaultKind, param: &str) -> Option<&'static str> {
    use FaultKind::*;
    Some(match (k, param) {
        (KillWorkers, "duration_ms") => "the job restarts after job.restart_delay_ms",
        (BrokerRestart, "duration_ms") => {
            "the broker restarts at once; use broker-kill with duration_ms for a longer down time"
        }
        (RollingRestart, "target") => "it restarts every broker in turn",
        (CoordinatorCrash, "target") => "the coordinator is one process; every worker is killed with it",
        (CoordinatorCrash, "duration_ms") => "the job restores after job.restart_delay_ms",
        (DelayNotification | DropNotification | DeclineCheckpoint, "duration_ms") => {
            "it acts on one checkpoint (`checkpoint`)"
        }
        (NetPartition | NetReset | NetDelay | NetLoss, "target") => "name the two sides with from and to",
        (ProtocolDrop | ProtocolDelay | ProtocolError, "target") => {
            "choose frames with apis, from/to and transactional_id"
        }
        _ => return None,
    })
}

/// The YAML key under which a `when` variant was written (aliases included),
/// so its problems point at the user's text.
fn when_key(locs: &Locs, i: usize, names: &[&str]) -> Vec<Seg> {
    let base = |n: &str| vec![key("faults"), Seg::Index(i), key("when"), key(n)];
    names.iter().map(|n| base(n)).find(|p| locs.has(p)).unwrap_or_else(|| base(names[0]))
}

fn validate_fault(s: &Scenario, locs: &Locs, i: usize, f: &FaultSpec, bad: &mut impl FnMut(Vec<Seg>, String)) {
    use FaultKind::*;
    let c = &s.cluster;
    let j = &s.job;
    let fp = |field: &str| vec![key("faults"), Seg::Index(i), key(field)];
    let k = f.kind;
    let kind = k.name();

    // Parameters the kind does not take: say which kinds take them.
    for p in given(f) {
        // `target: all` on a rolling restart says what it does anyway.
        let all_brokers = k == RollingRestart && p == "target" && f.target == Some(Target::Named(NamedTarget::All));
        if takes(k, p) || all_brokers {
            continue;
        }
        let msg = match not_taken_hint(k, p) {
            Some(h) => format!("{kind} does not take {p} ({h})"),
            None => {
                let takers: Vec<&str> = ALL_KINDS.iter().filter(|t| takes(**t, p)).map(|t| t.name()).collect();
                format!("{kind} does not take {p}; {p} is a parameter of {}", takers.join(", "))
            }
        };
        bad(fp(p), msg);
    }

    // duration
    let needs_duration = matches!(k, PauseWorkers | JobOutage | BrokerPause);
    match f.duration_ms {
        None if needs_duration => bad(fp("duration_ms"), format!("{kind} needs duration_ms (how long it lasts)")),
        Some(0) if takes(k, "duration_ms") => bad(fp("duration_ms"), "must be ≥ 1 ms".into()),
        _ => {}
    }

    // trigger
    let when_path = |names: &[&str]| when_key(locs, i, names);
    let check_cp = |bad: &mut dyn FnMut(Vec<Seg>, String), path: Vec<Seg>, n: u64| {
        if n == 0 {
            bad(path, "checkpoints are numbered from 1: must be ≥ 1".into());
        }
    };
    let check_subtask = |bad: &mut dyn FnMut(Vec<Seg>, String), path: Vec<Seg>, st: u32| {
        if st >= j.parallelism {
            bad(path, format!("subtask {st} does not exist (parallelism {})", j.parallelism));
        }
    };
    match f.when {
        When::AtMs(_) => {}
        When::EveryMs(n) => {
            if n < 100 {
                bad(when_path(&["every_ms"]), format!("{n} ms: must be ≥ 100 ms"));
            }
            if let Some(d) = f.duration_ms {
                if d >= n && n >= 100 {
                    bad(
                        fp("duration_ms"),
                        format!("{d} ms lasts as long as the period every_ms ({n} ms): a repeated fault must end before it fires again"),
                    );
                }
            }
        }
        When::CheckpointTriggered(n) => check_cp(bad, when_path(&["checkpoint_triggered"]), n),
        When::CheckpointPersisted(n) => {
            check_cp(bad, when_path(&["checkpoint_persisted", "after_checkpoint_persisted"]), n)
        }
        When::CheckpointNotified(n) => check_cp(bad, when_path(&["checkpoint_notified"]), n),
        When::CommitStarted(n) => check_cp(bad, when_path(&["commit_started"]), n),
        When::CheckpointAcked { checkpoint, subtask } => {
            let mut p = when_path(&["checkpoint_acked"]);
            p.push(key("checkpoint"));
            check_cp(bad, p.clone(), checkpoint);
            p.pop();
            p.push(key("subtask"));
            check_subtask(bad, p, subtask);
        }
        When::TxnOpened { subtask, checkpoint } => {
            let mut p = when_path(&["txn_opened"]);
            p.push(key("subtask"));
            check_subtask(bad, p.clone(), subtask);
            if let Some(n) = checkpoint {
                p.pop();
                p.push(key("checkpoint"));
                check_cp(bad, p, n);
            }
        }
    }
    match f.times {
        Some(_) if !matches!(f.when, When::EveryMs(_)) => {
            bad(fp("times"), "times only goes with an `every_ms` trigger (other triggers fire once)".into())
        }
        Some(0) => bad(fp("times"), "must be ≥ 1".into()),
        _ => {}
    }
    if k == CoordinatorCrash && !matches!(f.when, When::CheckpointPersisted(_)) {
        bad(
            fp("when"),
            "coordinator-crash fires between a checkpoint's persist and its notification: use `when: {after_checkpoint_persisted: N}`".into(),
        );
    }

    // target
    let tp = fp("target");
    if worker_fault(k) || is_notification(k) {
        let whose = if worker_fault(k) { "acts on workers" } else { "acts on subtasks" };
        match &f.target {
            None | Some(Target::Named(NamedTarget::All)) => {}
            Some(Target::Named(NamedTarget::TxnCoordinator)) | Some(Target::Coordinator { .. }) => {
                bad(tp, format!("txn-coordinator is a broker; {kind} {whose}: use all or subtask ids"))
            }
            Some(Target::Named(NamedTarget::Controller | NamedTarget::Leader)) | Some(Target::Leader { .. }) => {
                bad(tp, format!("controller and leader are brokers; {kind} {whose}: use all or subtask ids"))
            }
            Some(Target::Ids(_)) if k == JobOutage => {
                bad(tp, "job-outage stops every worker: leave target out (or write all)".into())
            }
            Some(Target::Ids(ids)) => check_ids(bad, &tp, ids, 0, i64::from(j.parallelism) - 1, "subtask"),
        }
    } else if is_broker(k) || (k == NetBlackhole && f.target.is_some()) {
        check_broker_target(s, &f.target, &tp, kind, bad);
    }

    // network: two sides
    let check_groups = |bad: &mut dyn FnMut(Vec<Seg>, String), field: &str, gs: &[Group]| {
        if gs.is_empty() {
            bad(fp(field), "an empty list of groups".into());
        }
        for (n, g) in gs.iter().enumerate() {
            let mut p = fp(field);
            p.push(Seg::Index(n));
            match *g {
                Group::Worker(w) if w >= j.parallelism => bad(
                    p,
                    format!(
                        "{g}: no such worker (parallelism {}: worker-0..worker-{})",
                        j.parallelism,
                        j.parallelism.saturating_sub(1)
                    ),
                ),
                Group::Broker(b) if b < 1 || b as usize > c.brokers => {
                    bad(p, format!("{g}: no such broker (brokers are broker-1..broker-{})", c.brokers))
                }
                _ if gs[..n].contains(g) => bad(p, format!("{g} is listed twice")),
                _ => {}
            }
        }
    };
    if let Some(gs) = &f.from {
        check_groups(bad, "from", gs);
    }
    if let Some(gs) = &f.to {
        check_groups(bad, "to", gs);
    }
    if matches!(k, NetPartition | NetReset | NetDelay | NetLoss) {
        for side in ["from", "to"] {
            let missing = if side == "from" { f.from.is_none() } else { f.to.is_none() };
            if missing {
                bad(
                    fp(side),
                    format!("{kind} needs from and to: the two groups (workers, worker-N, brokers, broker-N) it comes between"),
                );
            }
        }
    }
    if let (Some(from), Some(to)) = (&f.from, &f.to) {
        let is_b = |g: &Group| matches!(g, Group::Brokers | Group::Broker(_));
        if !from.iter().chain(to).any(is_b) {
            bad(
                fp("to"),
                "no broker on either side: the proxy sits in front of broker listeners, and workers do not talk to each other".into(),
            );
        } else {
            for g in from {
                let overlap = to.iter().any(|t| {
                    t == g
                        || matches!((g, t), (Group::Workers, Group::Worker(_)) | (Group::Worker(_), Group::Workers))
                        || matches!((g, t), (Group::Brokers, Group::Broker(_)) | (Group::Broker(_), Group::Brokers))
                });
                if overlap {
                    bad(fp("to"), format!("{g} is on both sides: a node cannot be cut off from itself"));
                    break;
                }
            }
        }
    }
    if k == NetBlackhole {
        match (&f.target, &f.to) {
            (None, None) => bad(
                tp_clone(&fp("target")),
                "net-blackhole needs target: the broker ids (or roles) to cut off, or to: [broker-N]".into(),
            ),
            (Some(_), Some(_)) => bad(fp("to"), "give target or to, not both".into()),
            (None, Some(to)) => {
                if let Some(g) = to.iter().find(|g| matches!(g, Group::Workers | Group::Worker(_))) {
                    bad(fp("to"), format!("{g}: net-blackhole cuts off brokers; to takes brokers or broker-N"));
                }
            }
            _ => {}
        }
    }

    // delays and probabilities
    if matches!(k, NetDelay | ProtocolDelay | DelayNotification) {
        match f.delay_ms {
            None => bad(fp("delay_ms"), format!("{kind} needs delay_ms (how long each one is held)")),
            Some(0) => bad(fp("delay_ms"), "must be ≥ 1 ms".into()),
            Some(d) => {
                if let Some(jt) = f.jitter_ms {
                    if jt > d {
                        bad(
                            fp("jitter_ms"),
                            format!("{jt} ms is above delay_ms ({d} ms): a frame cannot be held less than 0 ms"),
                        );
                    }
                }
            }
        }
    }
    if let Some(p) = f.probability {
        if !(p > 0.0 && p <= 1.0) {
            bad(fp("probability"), format!("{p}: must be in (0, 1] (0 would never act)"));
        }
    } else if k == NetLoss {
        bad(fp("probability"), "net-loss needs probability: the chance 0 < p ≤ 1 that a frame is dropped".into());
    }

    // protocol
    if is_protocol(k) {
        match &f.apis {
            None => bad(
                fp("apis"),
                format!(
                    "{kind} needs apis: the Kafka APIs whose frames it acts on (e.g. [EndTxn, AddPartitionsToTxn])"
                ),
            ),
            Some(a) if a.is_empty() => bad(fp("apis"), "an empty list of APIs".into()),
            Some(a) => {
                for (n, name) in a.iter().enumerate() {
                    let mut p = fp("apis");
                    p.push(Seg::Index(n));
                    match sinkhole_kafka::api::api_key(name) {
                        None => bad(p, unknown_api(name)),
                        Some(key_) if a[..n].iter().any(|o| sinkhole_kafka::api::api_key(o) == Some(key_)) => {
                            bad(p, format!("{name} is listed twice"))
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        if k == ProtocolError {
            match &f.error {
                None => bad(
                    fp("error"),
                    "protocol-error needs error: the Kafka error to answer with, by name (NOT_COORDINATOR) or code"
                        .into(),
                ),
                Some(e) => {
                    if let Err(msg) = sinkhole_kafka::errors::error_code(e) {
                        bad(fp("error"), msg);
                    }
                }
            }
        }
        if f.nth == Some(0) {
            bad(fp("nth"), "frames are counted from 1: must be ≥ 1".into());
        }
        match &f.transactional_id {
            Some(TidSelector::Subtask { subtask }) if *subtask >= j.parallelism => {
                let mut p = fp("transactional_id");
                p.push(key("subtask"));
                bad(p, format!("subtask {subtask} does not exist (parallelism {})", j.parallelism));
            }
            Some(TidSelector::Literal(t)) if t.is_empty() => {
                bad(fp("transactional_id"), "an empty transactional id".into())
            }
            _ => {}
        }
    }

    // coordinator
    if f.checkpoint == Some(0) {
        bad(fp("checkpoint"), "checkpoints are numbered from 1: must be ≥ 1".into());
    }
}

fn tp_clone(p: &[Seg]) -> Vec<Seg> {
    p.to_vec()
}

/// "Endtxn": not an API; the nearest names help more than the whole list.
fn unknown_api(name: &str) -> String {
    let f: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    let near: Vec<&str> = sinkhole_kafka::api::api_names()
        .into_iter()
        .filter(|n| {
            let l = n.to_ascii_lowercase();
            f.len() >= 3 && (l.contains(&f) || f.contains(&l))
        })
        .take(4)
        .collect();
    if near.is_empty() {
        format!("{name:?} is not a Kafka API (use Kafka's names: Produce, FindCoordinator, InitProducerId, AddPartitionsToTxn, EndTxn, …)")
    } else {
        format!("{name:?} is not a Kafka API; did you mean {}?", near.join(" or "))
    }
}

/// A broker fault's target: node ids, all, or a role.
fn check_broker_target(
    s: &Scenario,
    t: &Option<Target>,
    tp: &[Seg],
    kind: &str,
    bad: &mut impl FnMut(Vec<Seg>, String),
) {
    let (c, j) = (&s.cluster, &s.job);
    match t {
        None => bad(
            tp.to_vec(),
            format!(
                "{kind} needs a target: node ids 1..={}, all, txn-coordinator, {{txn-coordinator: S}}, controller, leader or {{leader: P}}",
                c.brokers
            ),
        ),
        Some(Target::Named(_)) => {}
        Some(Target::Coordinator { txn_coordinator }) if *txn_coordinator >= j.parallelism => {
            let mut p = tp.to_vec();
            p.push(key("txn-coordinator"));
            bad(p, format!("txn-coordinator of subtask {txn_coordinator}, but parallelism is {}", j.parallelism))
        }
        Some(Target::Leader { leader }) if *leader >= s.topic.partitions => {
            let mut p = tp.to_vec();
            p.push(key("leader"));
            bad(
                p,
                format!(
                    "leader of partition {leader}, but the topic has {} partition(s): 0..={}",
                    s.topic.partitions,
                    s.topic.partitions.saturating_sub(1)
                ),
            )
        }
        Some(Target::Coordinator { .. }) | Some(Target::Leader { .. }) => {}
        Some(Target::Ids(ids)) => check_ids(bad, tp, ids, 1, c.brokers as i64, "node"),
    }
}

fn validate_schedule(s: &Scenario, r: &RandomSchedule, bad: &mut impl FnMut(Vec<Seg>, String)) {
    let sp = |f: &str| vec![key("schedule"), key(f)];
    if r.end_ms <= r.start_ms {
        bad(sp("end_ms"), format!("{} ms: must be after start_ms ({} ms)", r.end_ms, r.start_ms));
    }
    for (field, [lo, hi]) in [("quiet_ms", r.quiet_ms), ("duration_ms", r.duration_ms)] {
        if lo > hi {
            bad(sp(field), format!("[{lo}, {hi}]: the minimum is above the maximum; write [min, max]"));
        } else if field == "duration_ms" && lo == 0 {
            bad(sp(field), "[0, …]: a fault lasts at least 1 ms".into());
        }
    }
    if s.cluster.proxy == Some(false) && matches!(r.mix, Mix::Network | Mix::Protocol) {
        bad(
            sp("mix"),
            format!(
                "{} faults need the proxy, but cluster.proxy is false: remove `proxy: false`",
                if r.mix == Mix::Network { "network" } else { "protocol" }
            ),
        );
    }
    // With a rate, the job cannot end before records / rate: a schedule
    // starting later could never fire anything.
    if let Some(job_ms) = s.job.records_per_subtask.saturating_mul(1000).checked_div(s.job.rate_per_subtask) {
        if r.start_ms >= job_ms && r.end_ms > r.start_ms {
            bad(
                sp("start_ms"),
                format!(
                    "{} ms: the job produces its records in about {job_ms} ms ({} records at {}/s), so no fault would fire",
                    r.start_ms, s.job.records_per_subtask, s.job.rate_per_subtask
                ),
            );
        }
    }
}

fn check_ids(
    bad: &mut (impl FnMut(Vec<Seg>, String) + ?Sized),
    path: &[Seg],
    ids: &[i64],
    lo: i64,
    hi: i64,
    what: &str,
) {
    if ids.is_empty() {
        bad(path.to_vec(), format!("an empty list of {what} ids"));
    }
    for (k, id) in ids.iter().enumerate() {
        let mut p = path.to_vec();
        p.push(Seg::Index(k));
        if *id < lo || *id > hi {
            let range = if hi < lo { "none".to_string() } else { format!("{lo}..={hi}") };
            bad(p, format!("{what} {id} does not exist (valid: {range})"));
        } else if ids[..k].contains(id) {
            bad(p, format!("{what} {id} is listed twice"));
        }
    }
}

/// The YAML name of a count.
pub fn count_key(c: CountName) -> &'static str {
    match c {
        CountName::Lost => "lost",
        CountName::Duplicated => "duplicated",
        CountName::Unexpected => "unexpected",
        CountName::Nonmonotonic => "nonmonotonic",
        CountName::AbortedRead => "aborted-read",
        CountName::TornTransaction => "torn-transaction",
    }
}
