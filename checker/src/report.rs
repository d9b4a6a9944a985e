//! What the checker reports, and the records it reports on: the drained records and how far
//! each partition's drain got, what the job was supposed to write, the counts a verdict is
//! judged on and their examples (the anomaly table's, `sinkhole_model::anomaly`), and the
//! report of one mode. Plain data at the bottom of the crate: the counting, the store, the
//! drain and the verdict all speak it.
use serde::{Deserialize, Serialize};

/// The counts, the examples and the anomalies they are of: one table in the model crate.
pub use sinkhole_model::anomaly::{Anomaly, Counts, Example, Examples};

/// How many examples of each anomaly a report keeps.
pub const MAX_EXAMPLES: usize = 8;

/// One record read from the output topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrainedRecord {
    pub partition: i32,
    pub offset: i64,
    /// The record value (`run:subtask:seq` for records the source wrote).
    pub value: Vec<u8>,
    /// The `sinkhole.tid` header: the transaction that wrote the record.
    pub tid: Option<String>,
    /// The `sinkhole.produced_us` header.
    pub produced_us: Option<i64>,
}

/// How far the drain got in one partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionDrain {
    pub partition: i32,
    /// Log start offset and high-water mark (read_uncommitted) before the drain.
    pub low_watermark: i64,
    pub high_watermark: i64,
    /// The read_committed position reached: past committed and aborted data
    /// and control markers. Below the high-water mark when the drain timed out.
    pub position: i64,
    pub records: u64,
}

impl PartitionDrain {
    pub fn complete(&self) -> bool {
        self.position >= self.high_watermark
    }
}

/// Everything one drain read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Drain {
    pub topic: String,
    pub records: Vec<DrainedRecord>,
    pub partitions: Vec<PartitionDrain>,
    pub elapsed_ms: u64,
}

/// What the job was supposed to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub run_id: String,
    pub parallelism: u32,
    pub records_per_subtask: u64,
}

/// A partition whose read_committed position stayed below the high-water
/// mark: an open (hanging) transaction holds back the last stable offset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UncommittedTail {
    pub partition: i32,
    pub position: i64,
    pub high_watermark: i64,
    /// What holds it open, by the brokers' own answers ([`open_txn`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open: Vec<OpenTxn>,
}

/// What the coordinators said of the mode's transactions when the check began, after the job
/// had ended and every fault had healed: those not yet complete (Ongoing, PrepareCommit,
/// PrepareAbort), under the mode's transactional-id prefix ([`crate::open_txn::look_at_end`]).
/// A finished job leaves none Ongoing: Flink's committer has committed every committable of
/// the last checkpoint and its writer aborted what it had open when it closed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EndLook {
    /// Whether the look was taken (an older verdict, or a check that had no cluster to ask,
    /// has none).
    pub taken: bool,
    pub transactions: Vec<EndTxn>,
    /// Why the look could not list every coordinator's transactions (then `transactions` may
    /// lack some).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One transaction a coordinator listed at the end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndTxn {
    pub transactional_id: String,
    /// Kafka's state name (Ongoing, PrepareCommit, PrepareAbort).
    pub state: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The output topic's partitions in the transaction, as its coordinator has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<i32>,
    /// How long the transaction had been open when the look was taken, ms (-1: unknown).
    pub open_ms: i64,
    /// The coordinator that answered.
    pub coordinator: i32,
}

/// The checker's findings for one mode.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CheckReport {
    pub counts: Counts,
    pub examples: Examples,
    /// Every contiguous lost range (subtask, first seq, last seq), split at
    /// transaction boundaries the history knows.
    pub lost_ranges: usize,
    pub uncommitted_tail: Vec<UncommittedTail>,
    /// The mode's transactions not yet complete when the check began.
    #[serde(default)]
    pub end_look: EndLook,
    /// Every transaction left open after the job, and whose doing it is ([`crate::hanging`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hanging: Vec<Hanging>,
    /// Records read, per partition and in total.
    pub partitions: Vec<PartitionDrain>,
    pub records_read: u64,
}

/// The transaction holding one partition's tail open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenTxn {
    pub producer_id: i64,
    pub producer_epoch: i32,
    pub txn_start_offset: i64,
    /// From ListTransactions; `None` when no coordinator lists the producer
    /// (its id expired, or the listing failed: see `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinator_state: Option<String>,
    /// Open here but finished (or unknown) at its coordinator.
    pub hanging: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Whether a transaction open in a partition is hanging, given what its
/// coordinator says (`None`: no coordinator knows the producer).
pub fn is_hanging(coordinator_state: Option<&str>) -> bool {
    !matches!(coordinator_state, Some("Ongoing" | "PrepareCommit" | "PrepareAbort"))
}

impl OpenTxn {
    /// One line for a verdict's reason.
    pub fn describe(&self) -> String {
        let id = self.transactional_id.as_deref().unwrap_or("an unknown transactional id");
        let at = format!(
            "{id} (producer {}, epoch {}) from offset {}",
            self.producer_id, self.producer_epoch, self.txn_start_offset
        );
        match (&self.coordinator_state, self.hanging) {
            (Some(s), true) => format!(
                "held open by {at}, which its coordinator has as {s}: a hanging transaction, finished by the coordinator \
                 without this partition's marker (the broker's doing, not the sink's)"
            ),
            (Some(s), false) => format!("held open by {at}, still {s} at its coordinator"),
            (None, _) => format!(
                "held open by {at}, which no coordinator lists: a hanging transaction{}",
                self.error.as_deref().map(|e| format!(" (listing failed: {e})")).unwrap_or_default()
            ),
        }
    }
}

/// Whose doing an open transaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Whose {
    /// Its coordinator still has it Ongoing: the sink never ended it.
    Sink,
    /// A partition holds it open while its coordinator does not (or answered its commit):
    /// the broker never wrote the marker.
    Broker,
}

/// One transaction left open after the job, with the evidence ([`crate::hanging`] finds them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hanging {
    pub whose: Whose,
    /// None when no coordinator lists the producer that holds a partition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<String>,
    pub producer_id: i64,
    pub producer_epoch: i32,
    /// What its coordinator said (None: no coordinator lists it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coordinator_state: Option<String>,
    /// Partitions whose read_committed position stopped at it, with the offset it starts at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stuck: Vec<(i32, i64)>,
    /// The output topic's partitions its coordinator has in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtask: Option<u32>,
    /// The checkpoint whose records it carries (its committable's), where the history knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<u64>,
    /// A restore had its committable in the state it restored: (attempt, checkpoint restored from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<(u32, u64)>,
    /// That restore (or a later one) never started its commit.
    #[serde(default)]
    pub restored_never_committed: bool,
    /// What the history says became of it, in words.
    pub story: String,
}

impl Hanging {
    /// One sentence for a verdict's reason and the report.
    pub fn describe(&self) -> String {
        let id = self.transactional_id.as_deref().unwrap_or("an unknown transactional id");
        let held = if self.stuck.is_empty() {
            match self.partitions.as_slice() {
                [] => String::new(),
                p => {
                    format!(", open in partition(s) {}", p.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", "))
                }
            }
        } else {
            let parts: Vec<String> = self.stuck.iter().map(|(p, o)| format!("{p} from offset {o}")).collect();
            format!(", holding partition(s) {}", parts.join(", "))
        };
        let state = self
            .coordinator_state
            .as_deref()
            .map_or("listed by no coordinator".to_string(), |s| format!("{s} at its coordinator"));
        let whose = match self.whose {
            Whose::Sink => "left open by the sink",
            Whose::Broker => "the broker's doing, not the sink's",
        };
        format!(
            "{id} (producer {}, epoch {}) {state} after the job{held}: {}; {whose}",
            self.producer_id, self.producer_epoch, self.story
        )
    }

    pub fn example(&self) -> Example {
        Example {
            subtask: self.subtask,
            partition: self.stuck.first().map(|(p, _)| *p),
            offset: self.stuck.first().map(|(_, o)| *o),
            transactional_id: self.transactional_id.clone(),
            checkpoint: self.checkpoint,
            detail: self.describe(),
            ..Example::default()
        }
    }
}
