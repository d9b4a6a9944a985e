//! Transactional ids and the lingering-transaction probe, after Flink's
//! INCREMENTING naming strategy (`TransactionalIdFactory`,
//! `TransactionNamingStrategyImpl`) and PROBING abort strategy
//! (`TransactionAbortStrategyImpl`).
use std::collections::BTreeSet;

use sinkhole_model::SinkMode;

/// `{prefix}-{subtask}-{checkpoint}`, where `checkpoint` is the checkpoint
/// whose barrier will pre-commit the transaction (Flink's
/// `TransactionalIdFactory.buildTransactionalId`).
pub fn transactional_id(prefix: &str, subtask: u32, checkpoint: u64) -> String {
    format!("{prefix}-{subtask}-{checkpoint}")
}

/// The transactional id subtask `subtask` of `mode` writes checkpoint
/// `checkpoint`'s records under: [`transactional_id`] for the modes after
/// Flink's KafkaSink; `rdkafka-txn`'s and `plain-txn`'s one id per subtask,
/// `{prefix}-{subtask}`, which their producer keeps from one transaction to the
/// next (as a plain transactional producer does; docs/PROTOCOL.md §1.9).
pub fn transactional_id_of(mode: SinkMode, prefix: &str, subtask: u32, checkpoint: u64) -> String {
    match mode {
        SinkMode::RdkafkaTxn | SinkMode::PlainTxn => format!("{prefix}-{subtask}"),
        _ => transactional_id(prefix, subtask, checkpoint),
    }
}

/// The checkpoint offset of the first transaction of an attempt: the one
/// after the restored checkpoint, or 1 when the job starts fresh.
pub fn first_checkpoint(restored: Option<u64>) -> u64 {
    restored.map_or(1, |n| n + 1)
}

/// What one probe's InitProducerId said about its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeResult {
    /// Epoch 0: the id had never been initialised. The probe stops here.
    Unused,
    /// Epoch > 0: a previous attempt used the id; the InitProducerId fenced
    /// it and aborted whatever was ongoing.
    Used,
}

/// The checkpoint offsets to probe for one subtask on restore: restored+1,
/// +2, … until an id comes back unused (Flink's PROBING strategy).
///
/// Ids whose committables are still uncommitted are never initialised (an
/// InitProducerId on an ONGOING or, with 2PC, prepared transaction aborts
/// it); they are skipped and the probe goes on past them.
///
/// Only this subtask's own ids are probed: Flink also steps to subtasks
/// `own + parallelism, …` to cover a lowered parallelism, which the rig never
/// changes between attempts.
#[derive(Debug, Clone)]
pub struct LingeringProbe {
    next: u64,
    skip: BTreeSet<u64>,
    done: bool,
    /// Probes so far (a bound against a broker that never answers epoch 0).
    probes: u64,
}

/// Stop after this many probes even if ids keep coming back used: each probe
/// creates an id, so restart loops widen the search by one per attempt, and a
/// run has far fewer attempts than this.
pub const MAX_PROBES: u64 = 10_000;

impl LingeringProbe {
    pub fn new(restored: Option<u64>, uncommitted: impl IntoIterator<Item = u64>) -> LingeringProbe {
        LingeringProbe {
            next: first_checkpoint(restored),
            skip: uncommitted.into_iter().collect(),
            done: false,
            probes: 0,
        }
    }

    /// The next checkpoint offset to probe, or None when done.
    pub fn next_checkpoint(&mut self) -> Option<u64> {
        if self.done || self.probes >= MAX_PROBES {
            return None;
        }
        while self.skip.contains(&self.next) {
            self.next += 1;
        }
        Some(self.next)
    }

    /// Records the probe of the offset [`next_checkpoint`](Self::next_checkpoint) returned.
    pub fn observe(&mut self, epoch: i16) -> ProbeResult {
        self.probes += 1;
        if epoch == 0 {
            self.done = true;
            ProbeResult::Unused
        } else {
            self.next += 1;
            ProbeResult::Used
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rdkafka_txn_keeps_one_id_per_subtask_the_others_one_per_checkpoint() {
        assert_eq!(transactional_id_of(SinkMode::RdkafkaTxn, "p", 1, 7), "p-1");
        assert_eq!(transactional_id_of(SinkMode::RdkafkaTxn, "p", 1, 8), "p-1");
        for mode in [SinkMode::Legacy, SinkMode::TwopcInject, SinkMode::Kip939] {
            assert_eq!(transactional_id_of(mode, "p", 1, 7), "p-1-7");
        }
    }

    #[test]
    fn incrementing_names() {
        assert_eq!(transactional_id("sh-run1-legacy", 3, 17), "sh-run1-legacy-3-17");
        assert_eq!(first_checkpoint(None), 1);
        assert_eq!(first_checkpoint(Some(5)), 6);
    }

    /// Drives a probe against a made-up broker: `used` ids answer epoch > 0.
    fn run(restored: Option<u64>, uncommitted: &[u64], used: &[u64]) -> (Vec<u64>, Vec<u64>) {
        let mut p = LingeringProbe::new(restored, uncommitted.iter().copied());
        let (mut probed, mut lingering) = (vec![], vec![]);
        while let Some(c) = p.next_checkpoint() {
            probed.push(c);
            let epoch = if used.contains(&c) { 3 } else { 0 };
            if p.observe(epoch) == ProbeResult::Used {
                lingering.push(c);
            }
        }
        (probed, lingering)
    }

    #[test]
    fn probes_until_the_first_unused_id() {
        assert_eq!(run(None, &[], &[]), (vec![1], vec![]));
        assert_eq!(run(Some(4), &[], &[5, 6]), (vec![5, 6, 7], vec![5, 6]));
        // A gap stops the probe: that is why Flink fills gaps with empty
        // initialised transactions.
        assert_eq!(run(Some(4), &[], &[5, 7]), (vec![5, 6], vec![5]));
    }

    #[test]
    fn never_probes_an_uncommitted_id() {
        assert_eq!(run(Some(4), &[5], &[6]), (vec![6, 7], vec![6]));
        assert_eq!(run(Some(4), &[1, 2, 5, 6], &[7]), (vec![7, 8], vec![7]));
    }

    #[test]
    fn bounded() {
        let mut p = LingeringProbe::new(Some(0), []);
        let mut n = 0;
        while p.next_checkpoint().is_some() {
            p.observe(1);
            n += 1;
        }
        assert_eq!(n, MAX_PROBES);
    }
}
