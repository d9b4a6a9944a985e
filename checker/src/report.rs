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

/// The checker's findings for one mode.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CheckReport {
    pub counts: Counts,
    pub examples: Examples,
    /// Every contiguous lost range (subtask, first seq, last seq), split at
    /// transaction boundaries the history knows.
    pub lost_ranges: usize,
    pub uncommitted_tail: Vec<UncommittedTail>,
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
