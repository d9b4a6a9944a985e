//! What the rig itself asked the broker about the job's transactions during
//! a run (DescribeTransactions), and why: the evidence for a scenario's
//! premises (the broker aborted, or kept, the transactions of a checkpoint)
//! and for the check that a restore left no transaction of an earlier
//! attempt open. Written to the history as `observed` events, typed here,
//! read back by the premise evaluation and the checker.
use serde::{Deserialize, Serialize};
use sinkhole_model::{Event, EventKind};

use super::fault::{Transactions, TxnView};

/// Why the rig looked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "look", rename_all = "kebab-case")]
pub enum Look {
    /// The transactions that carry checkpoint `checkpoint` (every subtask's),
    /// once their timeout and the broker's abort scan had passed since the
    /// checkpoint was persisted, or when the job came back first.
    Checkpoint { checkpoint: u64 },
    /// Once attempt `attempt` (restored from `restored_from`) was up: the
    /// transactions earlier attempts had opened after the first one the
    /// attempt reopens itself. A restore aborts them (Flink's PROBING abort);
    /// one still `Ongoing` is a lingering transaction.
    Lingering {
        attempt: u32,
        restored_from: Option<u64>,
        /// The ids are POOLING's (`{prefix}-{subtask}-{k}`, k an index in the writer's pool):
        /// their last number is not a checkpoint.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pooled: bool,
    },
    /// When the Flink job was resubmitted from checkpoint `restored_from`: the transactions
    /// Ongoing under ids that checkpoint holds precommitted, at a newer epoch (or another
    /// producer id) than its committables — reopened after its commit (FLINK-40626).
    Superseded { restored_from: u64 },
}

/// When a [`Look::Checkpoint`] was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LookedAt {
    /// The transaction timeout and one abort scan (plus a margin) after the
    /// checkpoint was persisted: a broker that aborts by timeout has done it.
    Deadline,
    /// A restore began before the deadline: the last moment before the sink
    /// touches the transactions again.
    Restore,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    #[serde(flatten)]
    pub look: Look,
    /// Job time (ms since the job first started).
    pub at_ms: u64,
    /// For a checkpoint look: why then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub looked_at: Option<LookedAt>,
    pub transactions: Transactions,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The broker's states that mean an abort was decided or done.
pub fn aborted(v: &TxnView) -> bool {
    v.error.is_none() && matches!(v.state.as_str(), "PrepareAbort" | "CompleteAbort" | "PrepareEpochFence")
}

pub fn committed(v: &TxnView) -> bool {
    v.error.is_none() && matches!(v.state.as_str(), "PrepareCommit" | "CompleteCommit")
}

pub fn ongoing(v: &TxnView) -> bool {
    v.error.is_none() && v.state == "Ongoing"
}

impl Observation {
    /// The `what` of its history event.
    pub fn what(&self) -> String {
        match &self.look {
            Look::Checkpoint { checkpoint } => format!("checkpoint {checkpoint}'s transactions"),
            Look::Lingering { attempt, .. } => format!("transactions left open before attempt {attempt}"),
            Look::Superseded { restored_from } => {
                format!("transactions superseding checkpoint {restored_from}'s committables at the resubmission")
            }
        }
    }

    pub fn to_event(&self) -> EventKind {
        EventKind::Observed { what: self.what(), effect: serde_json::to_value(self).unwrap_or_default() }
    }

    /// Every observation in a history (events that do not parse are left out:
    /// they were written by a rig that typed them differently).
    pub fn from_events(events: &[Event]) -> Vec<Observation> {
        events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Observed { effect, .. } => serde_json::from_value(effect.clone()).ok(),
                _ => None,
            })
            .collect()
    }

    /// The transactions it saw (none when the look failed).
    pub fn seen(&self) -> &[TxnView] {
        match &self.transactions {
            Transactions::Seen(v) => v,
            Transactions::Error { .. } => &[],
        }
    }

    /// One line for the report: each id and its state.
    pub fn summary(&self) -> String {
        match &self.transactions {
            Transactions::Error { error } => format!("the look failed: {error}"),
            Transactions::Seen(v) if v.is_empty() => "nothing to look at".to_string(),
            Transactions::Seen(v) => v
                .iter()
                .map(|t| match &t.error {
                    Some(e) => format!("{}: {e}", t.transactional_id),
                    None => format!("{}: {} (epoch {})", t.transactional_id, t.state, t.producer_epoch),
                })
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(tid: &str, state: &str) -> TxnView {
        TxnView {
            transactional_id: tid.into(),
            state: state.into(),
            producer_id: 7,
            producer_epoch: 2,
            timeout_ms: 5000,
            error: None,
        }
    }

    #[test]
    fn observations_round_trip_through_the_history_event() {
        let o = Observation {
            look: Look::Checkpoint { checkpoint: 3 },
            at_ms: 10_500,
            looked_at: Some(LookedAt::Deadline),
            transactions: Transactions::Seen(vec![view("p-0-3", "CompleteAbort")]),
            note: None,
        };
        let EventKind::Observed { what, effect } = o.to_event() else { panic!() };
        assert_eq!(what, "checkpoint 3's transactions");
        assert_eq!(effect["look"], "checkpoint");
        assert_eq!(effect["looked_at"], "deadline");
        let e = Event {
            wall_ms: 0,
            mono_us: 0,
            mode: sinkhole_model::SinkMode::Legacy,
            source: sinkhole_model::Source::Checker,
            kind: EventKind::Observed { what, effect },
        };
        assert_eq!(Observation::from_events(&[e]), vec![o.clone()]);
        assert_eq!(o.summary(), "p-0-3: CompleteAbort (epoch 2)");
        assert!(aborted(&view("x", "CompleteAbort")) && !aborted(&view("x", "Ongoing")));
        assert!(ongoing(&view("x", "Ongoing")) && committed(&view("x", "CompleteCommit")));
        let mut missing = view("x", "");
        missing.error = Some("TRANSACTIONAL_ID_NOT_FOUND (105)".into());
        assert!(!aborted(&missing) && !ongoing(&missing) && !committed(&missing));
    }
}
