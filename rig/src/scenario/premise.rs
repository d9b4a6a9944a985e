//! Premises: the effects a mode's expectation rests on, which the rig
//! observes instead of assuming (README, "Premises"; docs/SCENARIOS.md).
//!
//! FLIP-319's `legacy: {lost: ">0"}` rests on the broker aborting checkpoint
//! 3's transactions by their timeout while the job is down; with an abort
//! scan slower than the outage the broker never does, legacy commits
//! everything, and without a premise the rig would blame a sink that did
//! nothing wrong. Written per mode, like `expect`:
//!
//! ```yaml
//! premise:
//!   legacy: {timeout_abort: {checkpoint: 3}}
//!   twopc-inject: {outlives_timeout: {checkpoint: 3}}
//! ```
//!
//! A premise that did not hold makes the verdict `inconclusive` with the
//! evidence as its reason (unless the counts show anomalies a clean
//! expectation forbids, which are real whatever the broker did).
use std::fmt;

use serde::{Deserialize, Serialize};

/// The premises of one mode.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Premises {
    /// The broker aborts these transactions because they outlived their
    /// `transaction.timeout.ms` (Kafka's `TransactionCoordinator` timed-out
    /// transaction scan, every
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`), before
    /// the sink commits them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_abort: Option<PremiseOf>,
    /// The broker does not abort these transactions although they outlive
    /// their timeout (KIP-939: an Enable2Pc transaction is exempt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outlives_timeout: Option<PremiseOf>,
    /// When the Flink job is resubmitted from checkpoint N, a transaction under an id N holds
    /// precommitted is Ongoing at a newer epoch (or another producer id) than N's committable:
    /// the id was reopened after N's commit, and the job went down before N+1 completed
    /// (FLINK-40626's superseded transaction). `flink-kafkasink` only; `checkpoint: N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<PremiseOf>,
}

/// Which transactions a premise is about: exactly one of the two.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PremiseOf {
    /// The transactions that carry checkpoint N (every subtask's), looked at
    /// once N was persisted and their timeout and one abort scan have passed
    /// (or when the job restores, if that comes first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<u64>,
    /// The transactions a `pause-workers` fault of that name froze open,
    /// looked at while they are still frozen (the fault's own evidence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PremiseKind {
    TimeoutAbort,
    OutlivesTimeout,
    Superseded,
}

impl PremiseKind {
    pub fn name(self) -> &'static str {
        match self {
            PremiseKind::TimeoutAbort => "timeout_abort",
            PremiseKind::OutlivesTimeout => "outlives_timeout",
            PremiseKind::Superseded => "superseded",
        }
    }
}

/// One premise: what and of which transactions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Premise {
    pub kind: PremiseKind,
    pub of: PremiseOf,
}

impl fmt::Display for Premise {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.of.checkpoint, &self.of.fault) {
            (Some(n), _) => write!(f, "{} {{checkpoint: {n}}}", self.kind.name()),
            (None, Some(name)) => write!(f, "{} {{fault: {name}}}", self.kind.name()),
            (None, None) => f.write_str(self.kind.name()),
        }
    }
}

impl Premises {
    /// The premises written, in a fixed order.
    pub fn list(&self) -> Vec<Premise> {
        [
            (PremiseKind::TimeoutAbort, &self.timeout_abort),
            (PremiseKind::OutlivesTimeout, &self.outlives_timeout),
            (PremiseKind::Superseded, &self.superseded),
        ]
        .into_iter()
        .filter_map(|(kind, of)| of.clone().map(|of| Premise { kind, of }))
        .collect()
    }

    /// The checkpoints whose transactions the rig must look at past their timeout (a
    /// `superseded` premise is looked at by the Flink subject when it resubmits).
    pub fn checkpoints(&self) -> Vec<u64> {
        let mut v: Vec<u64> =
            self.list().iter().filter(|p| p.kind != PremiseKind::Superseded).filter_map(|p| p.of.checkpoint).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    pub fn is_empty(&self) -> bool {
        self.timeout_abort.is_none() && self.outlives_timeout.is_none() && self.superseded.is_none()
    }
}

/// Kafka's default `transaction.abort.timed.out.transaction.cleanup.interval.ms`
/// (`TransactionStateManagerConfig`): how often the coordinator looks for
/// transactions past their timeout.
pub const DEFAULT_ABORT_SCAN_MS: u64 = 10_000;

/// Margin after the timeout and one scan before a checkpoint's transactions
/// are looked at: the abort itself (PrepareAbort, markers) takes a moment.
pub const LOOK_MARGIN_MS: u64 = 1_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn premises_list_and_render() {
        let p = Premises {
            timeout_abort: Some(PremiseOf { checkpoint: Some(3), fault: None }),
            outlives_timeout: Some(PremiseOf { checkpoint: None, fault: Some("freeze-0".into()) }),
            superseded: None,
        };
        let l = p.list();
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].to_string(), "timeout_abort {checkpoint: 3}");
        assert_eq!(l[1].to_string(), "outlives_timeout {fault: freeze-0}");
        assert_eq!(p.checkpoints(), vec![3]);
        assert!(Premises::default().is_empty() && Premises::default().list().is_empty());
    }
}
