//! `readers:` live read_committed consumers of each mode's output topic, polling while the job
//! and the faults run, so the checker can judge what a downstream reader saw on the way
//! (`sinkhole_checker::reads`), not only what the topic holds at the end.
//!
//! ```yaml
//! readers:
//!   count: 2          # 1 to partitions × 8
//!   mode: subscribe   # assign (default): every partition from the start, no group;
//!                     # subscribe: one consumer group, partitions shared and rebalanced;
//!                     # assign~read-uncommitted, subscribe~commit-before-process,
//!                     # subscribe~skip-after-rebalance: mutant readers, for calibration
//! ```
use serde::{Deserialize, Serialize};

use super::located::{key, Seg};
use super::Scenario;

/// Readers per partition at most: more only queue on the same partitions.
pub const MAX_PER_PARTITION: u32 = 8;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadersSpec {
    pub count: u32,
    #[serde(default)]
    pub mode: ReaderMode,
}

/// How a reader gets its partitions, as a Kafka consumer does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReaderMode {
    /// `assign()`: every partition, from the log start; each reader sees the whole topic.
    #[default]
    Assign,
    /// `subscribe()` in one group: the partitions are shared among the readers and move at
    /// every rebalance (a reader restarted by a fault rejoins); a record's offset is stored for
    /// the next auto commit only once its line is written, so the group's committed position
    /// never passes a record no member processed.
    Subscribe,
    /// A mutant, for calibrating the read-side checks: `assign`, but `read_uncommitted`, so
    /// it sees the records of aborted and open transactions, which `G1a` must catch.
    #[serde(rename = "assign~read-uncommitted")]
    AssignReadUncommitted,
    /// A mutant: `subscribe`, but it commits a polled batch's end offsets synchronously before
    /// it processes (records) the batch; a reader killed meanwhile loses the batch and the group
    /// resumes past records no member processed, which poll-skip must catch.
    #[serde(rename = "subscribe~commit-before-process")]
    SubscribeCommitBeforeProcess,
    /// A mutant: `subscribe`, but on every assignment after its first it seeks the partitions
    /// it did not hold before to their end, past their committed position, skipping records;
    /// poll-skip must catch it.
    #[serde(rename = "subscribe~skip-after-rebalance")]
    SubscribeSkipAfterRebalance,
}

impl ReaderMode {
    pub fn name(self) -> &'static str {
        match self {
            ReaderMode::Assign => "assign",
            ReaderMode::Subscribe => "subscribe",
            ReaderMode::AssignReadUncommitted => "assign~read-uncommitted",
            ReaderMode::SubscribeCommitBeforeProcess => "subscribe~commit-before-process",
            ReaderMode::SubscribeSkipAfterRebalance => "subscribe~skip-after-rebalance",
        }
    }

    /// Whether the readers form one consumer group (`subscribe()`), the faithful one or a mutant.
    pub fn subscribes(self) -> bool {
        match self {
            ReaderMode::Subscribe
            | ReaderMode::SubscribeCommitBeforeProcess
            | ReaderMode::SubscribeSkipAfterRebalance => true,
            ReaderMode::Assign | ReaderMode::AssignReadUncommitted => false,
        }
    }

    /// The consumer's `isolation.level`.
    pub fn isolation(self) -> &'static str {
        match self {
            ReaderMode::AssignReadUncommitted => "read_uncommitted",
            _ => "read_committed",
        }
    }
}

pub(super) fn validate(s: &Scenario, bad: &mut impl FnMut(Vec<Seg>, String)) {
    let Some(r) = &s.readers else { return };
    let max = s.topic.partitions.saturating_mul(MAX_PER_PARTITION);
    if r.count == 0 || r.count > max {
        bad(
            vec![key("readers"), key("count")],
            format!(
                "{}: use 1 to {max} readers ({MAX_PER_PARTITION} per partition of the topic's {}); leave `readers:` out for none",
                r.count, s.topic.partitions
            ),
        );
    }
}
