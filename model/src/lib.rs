//! The plain data the rig's parts talk through: sink modes, committables,
//! subtask state, the control-channel messages between the coordinator and its
//! workers, and the history events.
//!
//! Jepsen's shape: the client (worker), the nemesis (faults), the generator
//! (coordinator schedule) and the checker never call each other; they exchange
//! these values, and the history (`history.jsonl`, one [`Event`] a line) is the
//! record a checker reads, online or offline. Everything here is serde-able
//! and stable: changing a name changes the history format.
use serde::{Deserialize, Serialize};

pub mod anomaly;
mod mutant;
pub mod record;
pub mod security;

pub use mutant::Mutant;

/// The sinks compared (docs/GUIDE.md, "Sink modes"), and the mutants: faithful
/// modes with one deliberate deviation each ([`Mutant`]), which the scenario
/// library must catch (`sinkhole calibrate`). A mode is written by its name
/// (`legacy`, `legacy~assume-committed`) wherever it is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SinkMode {
    /// Flink's reflection-based sink: plain InitProducerId, committable
    /// (tid, pid, epoch), restore by injecting pid/epoch and EndTxn ≤ v4;
    /// PRODUCER_FENCED / INVALID_TXN_STATE / UNKNOWN_PRODUCER_ID drop the
    /// committable (Flink's `KafkaCommitter`).
    Legacy,
    /// KIP-939: InitProducerId v6 Enable2Pc; restore with KeepPreparedTxn.
    Kip939,
    /// Enable2Pc at init, restore by injecting pid/epoch (brokers with 2PC but
    /// without KeepPreparedTxn).
    TwopcInject,
    /// librdkafka's transactional producer, committing at the checkpoint itself
    /// (one phase): a negative control.
    RdkafkaTxn,
    /// Idempotent, non-transactional, flush at checkpoint: a negative control.
    AtLeastOnce,
    /// Apache Flink's own `KafkaSink` (flink-connector-kafka, `EXACTLY_ONCE`) on a real Flink
    /// cluster: the rig's Flink subject. No `sinkhole worker` runs it.
    FlinkKafkasink,
    /// The rig's transactional producer used as an application uses Kafka's Java producer: one
    /// transactional id per subtask for every transaction, committing at the checkpoint itself
    /// (one phase). A negative control, and the shape KAFKA-17754 needs.
    PlainTxn,
    /// A faithful mode ([`Mutant::base`]) with one deliberate deviation. Never
    /// in [`SinkMode::ALL`]: a mutant runs only where it is named.
    Mutant(Mutant),
}

impl SinkMode {
    /// The faithful modes. Mutants are not modes a scenario runs by default.
    pub const ALL: [SinkMode; 7] = [
        SinkMode::Legacy,
        SinkMode::Kip939,
        SinkMode::TwopcInject,
        SinkMode::RdkafkaTxn,
        SinkMode::AtLeastOnce,
        SinkMode::FlinkKafkasink,
        SinkMode::PlainTxn,
    ];

    /// The names of [`SinkMode::ALL`], in order.
    pub const NAMES: [&'static str; 7] =
        ["legacy", "kip939", "twopc-inject", "rdkafka-txn", "at-least-once", "flink-kafkasink", "plain-txn"];

    pub fn name(&self) -> &'static str {
        match self {
            SinkMode::Legacy => Self::NAMES[0],
            SinkMode::Kip939 => Self::NAMES[1],
            SinkMode::TwopcInject => Self::NAMES[2],
            SinkMode::RdkafkaTxn => Self::NAMES[3],
            SinkMode::AtLeastOnce => Self::NAMES[4],
            SinkMode::FlinkKafkasink => Self::NAMES[5],
            SinkMode::PlainTxn => Self::NAMES[6],
            SinkMode::Mutant(m) => m.name(),
        }
    }

    /// A faithful mode or a mutant, by name.
    pub fn parse(s: &str) -> Option<SinkMode> {
        SinkMode::ALL.into_iter().find(|m| m.name() == s).or_else(|| Mutant::parse(s).map(SinkMode::Mutant))
    }

    /// The name in Kafka's legal characters (`[A-Za-z0-9._-]`), for topic
    /// names and transactional ids: a mutant's `~` becomes `.`.
    pub fn slug(&self) -> String {
        self.name().replace('~', ".")
    }

    /// The faithful mode itself, or the one a mutant deviates from.
    pub fn base(&self) -> SinkMode {
        match self {
            SinkMode::Mutant(m) => m.base(),
            m => *m,
        }
    }

    pub fn mutant(&self) -> Option<Mutant> {
        match self {
            SinkMode::Mutant(m) => Some(*m),
            _ => None,
        }
    }

    /// Whether the mode commits in two phases (pre-commit at the checkpoint,
    /// commit on notification).
    pub fn two_phase(&self) -> bool {
        matches!(self.base(), SinkMode::Legacy | SinkMode::Kip939 | SinkMode::TwopcInject | SinkMode::FlinkKafkasink)
    }

    /// Whether the rig's own job (coordinator and `sinkhole worker` processes) runs the mode;
    /// `flink-kafkasink` runs on a Flink cluster instead.
    pub fn rig_job(&self) -> bool {
        !matches!(self.base(), SinkMode::FlinkKafkasink)
    }

    /// Whether records are written in Kafka transactions at all.
    pub fn transactional(&self) -> bool {
        !matches!(self.base(), SinkMode::AtLeastOnce)
    }
}

impl Serialize for SinkMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for SinkMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SinkMode, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = SinkMode;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a sink mode name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SinkMode, E> {
                SinkMode::parse(v).ok_or_else(|| E::unknown_variant(v, &SinkMode::NAMES))
            }
        }
        d.deserialize_str(V)
    }
}

impl std::fmt::Display for SinkMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which transaction protocol a transaction ran under (docs/PROTOCOL.md §1.4, §1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TxnProtocol {
    /// AddPartitionsToTxn, Produce ≤ v11, EndTxn ≤ v4.
    V1,
    /// Partitions added implicitly by Produce v12+, EndTxn v5 bumps the epoch.
    V2,
}

/// What a subtask hands to the checkpoint for a pre-committed transaction;
/// committed when the checkpoint is complete, or on restore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Committable {
    /// The checkpoint whose barrier closed this transaction.
    pub checkpoint: u64,
    pub transactional_id: String,
    /// -1 where the mode does not keep it (kip939).
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub protocol: TxnProtocol,
    /// Records written in the transaction, and their source range.
    pub records: u64,
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
}

/// One committable of a restored subtask's state, as the [`EventKind::StateRestored`] event
/// names it: enough to tie a transaction the checker finds open to the checkpoint that
/// pre-committed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoredCommittable {
    pub transactional_id: String,
    pub checkpoint: u64,
    /// -1 where the mode does not keep it (kip939).
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl From<&Committable> for RestoredCommittable {
    fn from(c: &Committable) -> RestoredCommittable {
        RestoredCommittable {
            transactional_id: c.transactional_id.clone(),
            checkpoint: c.checkpoint,
            producer_id: c.producer_id,
            producer_epoch: c.producer_epoch,
        }
    }
}

/// A subtask's part of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SubtaskState {
    /// The next source sequence number to emit after a restore.
    pub next_seq: u64,
    /// Committables not yet known to be committed.
    pub committables: Vec<Committable>,
}

/// A complete checkpoint as the coordinator persists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    pub id: u64,
    /// Indexed by subtask.
    pub subtasks: Vec<SubtaskState>,
    pub persisted_wall_ms: u64,
}

/// How records are spread over the output topic's partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Partitioning {
    /// seq modulo partitions.
    #[default]
    RoundRobin,
    /// Every record of subtask s to partition s modulo partitions.
    BySubtask,
    /// A hash of (subtask, seq).
    Hash,
}

/// Everything a worker process needs to run one subtask attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerConfig {
    pub run_id: String,
    pub mode: SinkMode,
    pub subtask: u32,
    pub parallelism: u32,
    /// Job attempt: 0 for the first start, +1 on each restore.
    pub attempt: u32,
    pub bootstrap: Vec<String>,
    pub topic: String,
    pub partitions: u32,
    pub partitioning: Partitioning,
    pub records: u64,
    /// Records per second per subtask; 0 = as fast as possible.
    pub rate_per_sec: u64,
    pub transaction_timeout_ms: i32,
    /// Transactional id prefix; ids are `{prefix}-{subtask}-{checkpoint}` (Flink's INCREMENTING).
    pub tid_prefix: String,
    pub linger_ms: u64,
    pub batch_size: usize,
    /// The checkpoint restored from, and this subtask's state in it.
    pub restore: Option<(u64, SubtaskState)>,
    pub heartbeat_ms: u64,
    /// When the transaction's output partitions are registered with the
    /// transaction coordinator (two-phase modes).
    #[serde(default)]
    pub register_partitions: PartitionRegistration,
    /// Speak Transactions V1 even on a Transactions V2 cluster (two-phase modes).
    #[serde(default)]
    pub force_transactions_v1: bool,
    /// SASL/PLAIN credentials for `bootstrap` (a `SASL_PLAINTEXT` listener),
    /// when the cluster runs an authorizer and the sink has its own principal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sasl: Option<security::SaslPlain>,
    /// Read the input from a share group instead of generating it
    /// (`crate::share::source`); None: the generated source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<ShareInput>,
    /// A real cluster's listener security (`cluster.external.security`): names and paths
    /// only; the worker reads the password itself (`sinkhole_client::wire::security`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<security::Security>,
}

/// When a share-group source acknowledges what it read, relative to the
/// checkpoint cycle (scenario `source.ack`; docs/GUIDE.md, "Share-group source").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AckPolicy {
    /// At checkpoint n's barrier, before the sink pre-commits (and long before
    /// it commits): a crash before n completes loses what was acknowledged.
    BeforeCommit,
    /// Once the sink committed checkpoint n (`notifyCheckpointComplete`, as a
    /// Flink share-group source would): a crash between the commit and the
    /// acknowledgement redelivers committed records.
    #[default]
    AfterCommit,
    /// Right after each fetch, before the records are even written.
    AtPoll,
}

impl AckPolicy {
    pub const ALL: [AckPolicy; 3] = [AckPolicy::BeforeCommit, AckPolicy::AfterCommit, AckPolicy::AtPoll];

    pub fn name(&self) -> &'static str {
        match self {
            AckPolicy::BeforeCommit => "before-commit",
            AckPolicy::AfterCommit => "after-commit",
            AckPolicy::AtPoll => "at-poll",
        }
    }
}

impl std::fmt::Display for AckPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A worker's share-group input: which group and topic, how it acknowledges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareInput {
    pub group_id: String,
    pub input_topic: String,
    pub ack: AckPolicy,
    /// Records per ShareFetch at most (`MaxRecords`, Java's `max.poll.records`).
    pub batch: u32,
}

/// Input record ids `(subtask, first seq, last seq)`, inclusive: what a
/// transaction carried or an acknowledgement covered, compressed into runs.
/// Written as a JSON array `[subtask, first, last]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct IdRange(pub u32, pub u64, pub u64);

impl IdRange {
    pub fn subtask(&self) -> u32 {
        self.0
    }
    pub fn contains(&self, subtask: u32, seq: u64) -> bool {
        self.0 == subtask && self.1 <= seq && seq <= self.2
    }
    pub fn len(&self) -> u64 {
        self.2.saturating_sub(self.1).saturating_add(1)
    }
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Record ids as sorted, merged runs (a share source hands out records in
/// offset order per partition, so runs are long).
pub fn id_ranges(ids: impl IntoIterator<Item = (u32, u64)>) -> Vec<IdRange> {
    let mut v: Vec<(u32, u64)> = ids.into_iter().collect();
    v.sort_unstable();
    v.dedup();
    let mut out: Vec<IdRange> = Vec::new();
    for (s, q) in v {
        match out.last_mut() {
            Some(r) if r.0 == s && r.2.checked_add(1) == Some(q) => r.2 = q,
            _ => out.push(IdRange(s, q, q)),
        }
    }
    out
}

/// A record a share group handed out again (delivery count above 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redelivery {
    pub subtask: u32,
    pub seq: u64,
    pub partition: i32,
    pub offset: i64,
    pub delivery_count: i16,
}

/// When a transaction's output partitions are registered with the
/// coordinator (scenario `job.register_partitions`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionRegistration {
    /// Before a partition's first batch (Java's `TransactionManager`; under
    /// Transactions V2 the leader adds it on Produce).
    #[default]
    Lazy,
    /// Every partition of the topic in one AddPartitionsToTxn when the
    /// transaction is opened.
    Eager,
}

/// Coordinator → worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ToWorker {
    /// Take checkpoint `id`: pre-commit the open transaction, open the next, ack.
    Checkpoint { id: u64 },
    /// Checkpoint `id` is complete: commit every committable up to it.
    Complete { id: u64 },
    /// A share-group source acknowledging after the commit (`after-commit`):
    /// the commits of checkpoint `id` are reported, now acknowledge the
    /// records read up to it. Sent once the subtask's `Committed` for `id`
    /// came in, so a fault can land between the two.
    Acknowledge { id: u64 },
    /// Finish: close producers and exit 0.
    Stop,
}

/// Worker → coordinator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum FromWorker {
    /// Connected, restored, and writing.
    Ready {
        subtask: u32,
        pid: u32,
    },
    Heartbeat {
        subtask: u32,
        next_seq: u64,
    },
    /// Checkpoint `id` taken: the subtask's state for it.
    Ack {
        subtask: u32,
        id: u64,
        state: SubtaskState,
    },
    /// Every committable up to `id` is settled (committed or dropped).
    Committed {
        subtask: u32,
        id: u64,
    },
    /// The source is exhausted (`next_seq` = records) and everything written
    /// is in a transaction that the next checkpoint will pre-commit.
    EndOfInput {
        subtask: u32,
    },
    /// Something the history should keep (the coordinator writes it).
    Event {
        event: EventKind,
    },
    /// A failure the worker cannot recover from: the job must fail over.
    Failed {
        subtask: u32,
        error: String,
    },
}

/// Result of one commit of one committable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum CommitOutcome {
    Committed,
    /// Logged and dropped, as Flink's KafkaCommitter does for ProducerFenced,
    /// InvalidTxnState and UnknownProducerId: data of this transaction is lost
    /// if the broker aborted it.
    Dropped {
        error: String,
    },
    /// Not settled: the job fails over and retries on restore.
    Failed {
        error: String,
    },
}

/// Who wrote a history event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "kebab-case")]
pub enum Source {
    Coordinator,
    Worker { subtask: u32 },
    Fault,
    Checker,
}

/// One line of `history.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Unix time, milliseconds.
    pub wall_ms: u64,
    /// Microseconds since the run started (monotonic clock of the coordinator).
    pub mono_us: u64,
    pub mode: SinkMode,
    #[serde(flatten)]
    pub source: Source,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened. Transactions are identified by (transactional id, producer
/// id, epoch); records carry their transactional id in a header, so the
/// checker can attribute every record to one of these events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum EventKind {
    // --- job lifecycle (coordinator) ---
    JobStarted {
        attempt: u32,
        restored_from: Option<u64>,
    },
    WorkerStarted {
        subtask: u32,
        pid: u32,
        attempt: u32,
    },
    WorkerExited {
        subtask: u32,
        status: String,
        expected: bool,
    },
    FailureDetected {
        subtask: Option<u32>,
        reason: String,
    },
    Restarting {
        attempt: u32,
        from_checkpoint: Option<u64>,
        delay_ms: u64,
    },
    JobFinished {
        outcome: String,
        attempts: u32,
    },
    // --- checkpoints (coordinator) ---
    CheckpointTriggered {
        id: u64,
    },
    CheckpointAcked {
        id: u64,
        subtask: u32,
    },
    CheckpointPersisted {
        id: u64,
        path: String,
    },
    CheckpointNotified {
        id: u64,
    },
    CheckpointAborted {
        id: u64,
        reason: String,
    },
    // --- transactions (workers) ---
    /// InitProducerId answered.
    ProducerInit {
        transactional_id: String,
        producer_id: i64,
        epoch: i16,
        version: i16,
        enable_2pc: bool,
        keep_prepared_txn: bool,
        protocol: TxnProtocol,
    },
    TxnOpened {
        transactional_id: String,
        checkpoint: u64,
    },
    /// Flushed (and for kip939 prepared) at a checkpoint barrier.
    TxnPrecommitted {
        committable: Committable,
        flush_us: u64,
    },
    CommitStarted {
        transactional_id: String,
        checkpoint: u64,
        restored: bool,
    },
    CommitFinished {
        transactional_id: String,
        checkpoint: u64,
        restored: bool,
        #[serde(flatten)]
        outcome: CommitOutcome,
        latency_us: u64,
    },
    TxnAborted {
        transactional_id: String,
        producer_id: i64,
        epoch: i16,
        reason: String,
    },
    /// The input records a transaction carried, with a share-group source
    /// (the generated source's are the committable's seq range).
    TxnRecords {
        transactional_id: String,
        checkpoint: u64,
        ranges: Vec<IdRange>,
    },
    // --- share-group source (workers) ---
    /// The worker joined its share group as a new member.
    ShareJoined {
        group: String,
        member_id: String,
    },
    /// Records the share group delivered since the last barrier: how many,
    /// how many of them again (delivery count above 1: a lock ran out, or a
    /// member went away), the highest delivery count, a few examples.
    ShareDelivered {
        checkpoint: u64,
        records: u64,
        redelivered: u64,
        max_delivery_count: i16,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        examples: Vec<Redelivery>,
    },
    /// Records acknowledged (ACCEPT) to the share group: those that
    /// checkpoint `checkpoint`'s transaction carries (`before-commit`,
    /// `at-poll`) or carried up to it (`after-commit`). `refused` of them the
    /// broker did not take (their lock had run out: INVALID_RECORD_STATE),
    /// counted by error in `errors`.
    ShareAcknowledged {
        checkpoint: u64,
        policy: AckPolicy,
        records: u64,
        ranges: Vec<IdRange>,
        #[serde(default)]
        refused: u64,
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        errors: std::collections::BTreeMap<String, u64>,
        latency_us: u64,
    },
    /// `after-commit` share-group source: checkpoint `checkpoint`'s commits
    /// are done and `records` read up to it wait for their acknowledgement
    /// (sent just before the worker reports the commits).
    ShareUnacknowledged {
        checkpoint: u64,
        records: u64,
    },
    /// What a restored subtask got from the checkpoint it restores: the committables its
    /// state held (Flink's `KafkaCommitter` is handed them to commit before the writer opens),
    /// by transactional id and checkpoint, in checkpoint order. Written before any of them is
    /// committed, so the checker can tell a restored committable that was never committed
    /// from one the state never held.
    StateRestored {
        checkpoint: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        committables: Vec<RestoredCommittable>,
    },
    /// A lingering transaction found on restore by probing (Flink's PROBING abort strategy).
    LingeringAborted {
        transactional_id: String,
        epoch: i16,
    },
    /// The broker cannot run this mode (e.g. KeepPreparedTxn → UNSUPPORTED_VERSION).
    Unsupported {
        what: String,
        error: String,
    },
    /// Requests a worker's producers sent through their retry loops since
    /// the last barrier (API name → attempts) and the retries by error
    /// (`API/ERROR_NAME` → count, e.g. `AddPartitionsToTxn/CONCURRENT_TRANSACTIONS`);
    /// one event per barrier, when anything was sent.
    RequestCounts {
        #[serde(default)]
        requests: std::collections::BTreeMap<String, u64>,
        #[serde(default)]
        retries: std::collections::BTreeMap<String, u64>,
    },
    /// A produce acknowledged: sampled for latency, not per record.
    ProduceAcked {
        records: u64,
        latency_us: u64,
    },
    /// Latency samples only a worker can take (`produce-ack` per Produce
    /// request or delivery report, `txn-begin`, `pre-commit` of a sink without
    /// committables), batched: one event per barrier and metric, never one per
    /// request. `buckets` are `[value µs, count]` pairs of an HdrHistogram
    /// with 3 significant digits, so an event's size is bounded by the distinct
    /// values, not by the number of requests. Placed in time at the event.
    LatencySamples {
        metric: String,
        buckets: Vec<(u64, u64)>,
    },
    // --- faults ---
    FaultStarted {
        name: String,
        fault: String,
        effect: serde_json::Value,
    },
    FaultEnded {
        name: String,
        fault: String,
        effect: serde_json::Value,
    },
    FaultSkipped {
        name: String,
        fault: String,
        reason: String,
    },
    // --- the rig's own looks at the broker ---
    /// What the rig asked the broker about the job's transactions
    /// (DescribeTransactions) and why: a scenario's premise, or the check for
    /// transactions a restore left open. `effect` is typed by the rig
    /// (`history::observation`).
    Observed {
        what: String,
        effect: serde_json::Value,
    },
    // --- other ---
    Note {
        text: String,
    },
}

/// Names of the latency metrics (`LatencySamples.metric`, tags in `latency.hlog`).
pub mod metric {
    pub const PRODUCE_ACK: &str = "produce-ack";
    pub const TXN_BEGIN: &str = "txn-begin";
    pub const PRE_COMMIT: &str = "pre-commit";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_by_name() {
        for m in SinkMode::ALL {
            assert_eq!(SinkMode::parse(m.name()), Some(m));
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{}\"", m.name()));
        }
        assert_eq!(SinkMode::parse("flink"), None);
    }

    #[test]
    fn mutants_are_named_after_their_base_and_never_in_all() {
        assert_eq!(Mutant::ALL.len(), 8);
        for &m in Mutant::ALL {
            let mode = SinkMode::Mutant(m);
            assert_eq!(mode.name(), format!("{}~{}", m.base().name(), m.deviation()));
            assert_eq!(SinkMode::parse(mode.name()), Some(mode));
            assert_eq!(serde_json::to_string(&mode).unwrap(), format!("\"{}\"", mode.name()));
            assert_eq!(serde_json::from_str::<SinkMode>(&format!("\"{}\"", mode.name())).unwrap(), mode);
            assert!(!SinkMode::ALL.contains(&mode), "{mode} must be named to run");
            assert_eq!(mode.base(), m.base());
            assert!(m.base().mutant().is_none(), "a mutant's base is faithful");
            assert_eq!(mode.two_phase(), m.base().two_phase());
            assert!(!mode.slug().contains('~') && mode.slug().starts_with(m.base().name()));
            assert!(!m.bug_class().is_empty());
        }
        assert!(SinkMode::parse("twopc-inject~drop-2pc-flag").is_some());
        assert!(SinkMode::parse("legacy~nothing").is_none());
        assert!(SinkMode::parse("kip939~assume-committed").is_none(), "a deviation belongs to its base");
        let err = serde_json::from_str::<SinkMode>("\"flink\"").unwrap_err().to_string();
        assert!(err.contains("unknown variant `flink`"), "{err}");
    }

    #[test]
    fn events_are_flat_json_lines() {
        let e = Event {
            wall_ms: 1,
            mono_us: 2,
            mode: SinkMode::Legacy,
            source: Source::Worker { subtask: 1 },
            kind: EventKind::CommitFinished {
                transactional_id: "p-1-3".into(),
                checkpoint: 3,
                restored: true,
                outcome: CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() },
                latency_us: 5,
            },
        };
        let line = serde_json::to_string(&e).unwrap();
        assert!(line.contains(r#""by":"worker""#), "{line}");
        assert!(line.contains(r#""type":"commit-finished""#), "{line}");
        assert!(line.contains(r#""outcome":"dropped""#), "{line}");
        let back: Event = serde_json::from_str(&line).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn record_ids_compress_into_sorted_runs() {
        let r = id_ranges([(1, 5), (0, 2), (0, 3), (0, 4), (1, 6), (0, 9), (0, 3)]);
        assert_eq!(r, vec![IdRange(0, 2, 4), IdRange(0, 9, 9), IdRange(1, 5, 6)]);
        assert!(r[0].contains(0, 3) && !r[0].contains(1, 3) && !r[0].contains(0, 5));
        assert_eq!(r.iter().map(IdRange::len).sum::<u64>(), 6);
        assert!(id_ranges([]).is_empty());
        assert_eq!(id_ranges([(0, u64::MAX), (0, u64::MAX - 1)]), vec![IdRange(0, u64::MAX - 1, u64::MAX)]);
        assert_eq!(serde_json::to_string(&r[0]).unwrap(), "[0,2,4]");
    }

    #[test]
    fn ack_policies_round_trip_by_name() {
        for p in AckPolicy::ALL {
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{}\"", p.name()));
        }
        assert_eq!(AckPolicy::default(), AckPolicy::AfterCommit, "what a Flink source would do");
    }

    #[test]
    fn record_values_parse_back() {
        let v = record::value("run:x", 3, 42);
        assert_eq!(record::parse_value(v.as_bytes()), Some(("run:x", 3, 42)));
        assert_eq!(record::parse_value(b"garbage"), None);
    }
}
