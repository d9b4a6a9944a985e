//! Premises: the effects a mode's expectation rests on, which the rig
//! observes instead of assuming (docs/SCENARIOS.md, "premise").
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
//! A share-group source's expectations rest on the group's reaction to a
//! fault instead: `delivery_limit` (records archived at the delivery limit)
//! and `redelivery` (a record delivered again), each `true`.
//!
//! A premise that did not hold makes the verdict `inconclusive` with the
//! evidence as its reason (unless the counts show anomalies the expectation
//! forbids, which are real whatever the broker did).
//!
//! Most scenarios need not write one: [`defaults`] gives each mode the
//! premises its built-in expectation rests on, resolved once when a run is
//! planned; a mode's own entry replaces them, and an empty one
//! (`premise: {legacy: {}}`) means none at all.
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
    /// A known bug's trigger: the proxy fault `fault` had acted on a frame (held, delayed,
    /// dropped one) before the fault `before` fired: `{fault: hold-markers, before: crash}` —
    /// the coordinator's WriteTxnMarkers were held when the node was killed, so the crash found
    /// the transaction PrepareCommit with its markers unwritten. A run where the crash came
    /// first never reached the state the bug needs: its verdict is inconclusive, whatever the
    /// counts, rather than a clean that says nothing about the bug.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acted_before: Option<PremiseOf>,
    /// Share-group source: the group archives records at its delivery limit
    /// (`group.share.delivery.count.limit`: a lock that runs out on a record
    /// delivered that many times ends its deliveries; Kafka's `SharePartition`).
    /// Judged from the group's view at the end of the run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delivery_limit: bool,
    /// Share-group source: the group delivers records again (delivery count
    /// above 1: a lock ran out, a member went away with records in hand).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redelivery: bool,
}

/// `delivery_limit: true`, `redelivery: true`.
fn is_set(b: bool) -> Option<PremiseOf> {
    b.then(PremiseOf::default)
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
    /// `acted_before` only: the fault that `fault` must have acted before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PremiseKind {
    TimeoutAbort,
    OutlivesTimeout,
    Superseded,
    ActedBefore,
    DeliveryLimit,
    Redelivery,
}

impl PremiseKind {
    pub fn name(self) -> &'static str {
        match self {
            PremiseKind::TimeoutAbort => "timeout_abort",
            PremiseKind::OutlivesTimeout => "outlives_timeout",
            PremiseKind::Superseded => "superseded",
            PremiseKind::ActedBefore => "acted_before",
            PremiseKind::DeliveryLimit => "delivery_limit",
            PremiseKind::Redelivery => "redelivery",
        }
    }

    /// About a share group's deliveries, not about transactions: judged from the group's view.
    pub fn of_share_group(self) -> bool {
        matches!(self, PremiseKind::DeliveryLimit | PremiseKind::Redelivery)
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
            (None, Some(name)) if self.kind == PremiseKind::ActedBefore => {
                write!(
                    f,
                    "{} {{fault: {name}, before: {}}}",
                    self.kind.name(),
                    self.of.before.as_deref().unwrap_or("?")
                )
            }
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
            (PremiseKind::TimeoutAbort, self.timeout_abort.clone()),
            (PremiseKind::OutlivesTimeout, self.outlives_timeout.clone()),
            (PremiseKind::Superseded, self.superseded.clone()),
            (PremiseKind::ActedBefore, self.acted_before.clone()),
            (PremiseKind::DeliveryLimit, is_set(self.delivery_limit)),
            (PremiseKind::Redelivery, is_set(self.redelivery)),
        ]
        .into_iter()
        .filter_map(|(kind, of)| of.map(|of| Premise { kind, of }))
        .collect()
    }

    /// The checkpoints whose transactions the rig must look at past their timeout (a
    /// `superseded` premise is looked at by the Flink subject when it resubmits).
    pub fn checkpoints(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .list()
            .iter()
            .filter(|p| matches!(p.kind, PremiseKind::TimeoutAbort | PremiseKind::OutlivesTimeout))
            .filter_map(|p| p.of.checkpoint)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    pub fn is_empty(&self) -> bool {
        self.list().is_empty()
    }

    /// Adds `p`, replacing a premise of its kind.
    pub fn set(&mut self, p: Premise) {
        match p.kind {
            PremiseKind::TimeoutAbort => self.timeout_abort = Some(p.of),
            PremiseKind::OutlivesTimeout => self.outlives_timeout = Some(p.of),
            PremiseKind::Superseded => self.superseded = Some(p.of),
            PremiseKind::ActedBefore => self.acted_before = Some(p.of),
            PremiseKind::DeliveryLimit => self.delivery_limit = true,
            PremiseKind::Redelivery => self.redelivery = true,
        }
    }
}

pub mod defaults;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn premises_list_and_render() {
        let p = Premises {
            timeout_abort: Some(PremiseOf { checkpoint: Some(3), fault: None, before: None }),
            outlives_timeout: Some(PremiseOf { checkpoint: None, fault: Some("freeze-0".into()), before: None }),
            delivery_limit: true,
            ..Premises::default()
        };
        let l = p.list();
        assert_eq!(l.len(), 3);
        assert_eq!(l[0].to_string(), "timeout_abort {checkpoint: 3}");
        assert_eq!(l[1].to_string(), "outlives_timeout {fault: freeze-0}");
        assert_eq!(l[2].to_string(), "delivery_limit");
        assert!(l[2].kind.of_share_group() && !l[0].kind.of_share_group());
        assert_eq!(p.checkpoints(), vec![3]);
        let trigger = Premise {
            kind: PremiseKind::ActedBefore,
            of: PremiseOf { checkpoint: None, fault: Some("hold".into()), before: Some("crash".into()) },
        };
        assert_eq!(trigger.to_string(), "acted_before {fault: hold, before: crash}");
        assert!(Premises::default().is_empty() && Premises::default().list().is_empty());
        // `set` rebuilds what `list` gives.
        let mut back = Premises::default();
        for x in l {
            back.set(x);
        }
        assert_eq!(back, p);
    }
}
