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

/// The sinks compared (README.md, "Sink modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
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
}

impl SinkMode {
    pub const ALL: [SinkMode; 6] = [
        SinkMode::Legacy,
        SinkMode::Kip939,
        SinkMode::TwopcInject,
        SinkMode::RdkafkaTxn,
        SinkMode::AtLeastOnce,
        SinkMode::FlinkKafkasink,
    ];

    pub fn name(&self) -> &'static str {
        match self {
            SinkMode::Legacy => "legacy",
            SinkMode::Kip939 => "kip939",
            SinkMode::TwopcInject => "twopc-inject",
            SinkMode::RdkafkaTxn => "rdkafka-txn",
            SinkMode::AtLeastOnce => "at-least-once",
            SinkMode::FlinkKafkasink => "flink-kafkasink",
        }
    }

    pub fn parse(s: &str) -> Option<SinkMode> {
        SinkMode::ALL.into_iter().find(|m| m.name() == s)
    }

    /// Whether the mode commits in two phases (pre-commit at the checkpoint,
    /// commit on notification).
    pub fn two_phase(&self) -> bool {
        matches!(self, SinkMode::Legacy | SinkMode::Kip939 | SinkMode::TwopcInject | SinkMode::FlinkKafkasink)
    }

    /// Whether the rig's own job (coordinator and `sinkhole worker` processes) runs the mode;
    /// `flink-kafkasink` runs on a Flink cluster instead.
    pub fn rig_job(&self) -> bool {
        !matches!(self, SinkMode::FlinkKafkasink)
    }

    /// Whether records are written in Kafka transactions at all.
    pub fn transactional(&self) -> bool {
        !matches!(self, SinkMode::AtLeastOnce)
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
    pub sasl: Option<crate::wire::SaslPlain>,
    /// A real cluster's listener security (`cluster.external.security`): names and paths
    /// only; the worker reads the password itself ([`crate::wire::security`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<crate::wire::security::Security>,
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

/// Record layout (the checker parses what the source writes).
pub mod record {
    /// Header names carried by every record.
    pub const H_RUN: &str = "sinkhole.run";
    pub const H_SUBTASK: &str = "sinkhole.subtask";
    pub const H_SEQ: &str = "sinkhole.seq";
    /// Produce time, Unix microseconds.
    pub const H_TIME_US: &str = "sinkhole.produced_us";
    pub const H_TID: &str = "sinkhole.tid";

    /// The record key: `"{subtask}-{seq}"`; the value repeats it with the run
    /// id so a record is attributable even if headers were stripped.
    pub fn key(subtask: u32, seq: u64) -> String {
        format!("{subtask}-{seq}")
    }

    pub fn value(run_id: &str, subtask: u32, seq: u64) -> String {
        format!("{run_id}:{subtask}:{seq}")
    }

    /// Parses a value back into (run id, subtask, seq).
    pub fn parse_value(v: &[u8]) -> Option<(&str, u32, u64)> {
        let s = std::str::from_utf8(v).ok()?;
        let mut it = s.rsplitn(3, ':');
        let seq = it.next()?.parse().ok()?;
        let subtask = it.next()?.parse().ok()?;
        let run = it.next()?;
        Some((run, subtask, seq))
    }
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
    fn record_values_parse_back() {
        let v = record::value("run:x", 3, 42);
        assert_eq!(record::parse_value(v.as_bytes()), Some(("run:x", 3, 42)));
        assert_eq!(record::parse_value(b"garbage"), None);
    }
}
