//! The history's transactions as the checker needs them: each pre-committed transaction with
//! its source range and what became of it, per transactional id (ids are reused across
//! restores, each time at a new epoch, and records carry only the id). Built from the history
//! by [`crate::indexing`]; read by the counting to attribute records and losses.
use std::collections::HashMap;

use sinkhole_model::CommitOutcome;

use crate::report::Example;

/// A pre-committed transaction as the history recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnInfo {
    pub subtask: u32,
    pub transactional_id: String,
    pub checkpoint: u64,
    pub first_seq: u64,
    pub last_seq: u64,
    /// The last commit outcome recorded for it, if any.
    pub outcome: Option<CommitOutcome>,
}

/// What the history says became of one transaction (one incarnation of a
/// transactional id: the ids are reused across restores, each time with a
/// new producer epoch, and records carry only the id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnStatus {
    /// Neither a commit nor an abort recorded.
    Open,
    /// A `CommitFinished` with outcome `committed`.
    Committed,
    /// An explicit abort recorded: `TxnAborted` (the sink's own abort,
    /// answered by the broker) or `LingeringAborted` (an InitProducerId on
    /// restore fenced the id and aborted what was open under it).
    Aborted,
    /// Opened and closed without records (an empty transaction emits no
    /// committable): it wrote nothing.
    Empty,
}

/// A pre-committed transaction that may be visible (not aborted): records
/// carrying its id and a seq in its range are attributed to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub subtask: u32,
    pub transactional_id: String,
    pub checkpoint: u64,
    pub first_seq: u64,
    pub last_seq: u64,
    pub status: TxnStatus,
    /// No other candidate of the same id overlaps its range.
    pub unambiguous: bool,
}

/// An aborted incarnation of a transactional id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbortedTxn {
    /// The seqs it carried, when it was pre-committed before the abort.
    pub range: Option<(u64, u64)>,
    pub checkpoint: Option<u64>,
    /// How the history says it ended.
    pub how: String,
}

/// Everything the history says about one transactional id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TidHistory {
    pub transactional_id: String,
    /// Indexes into [`HistoryIndex::candidates`].
    pub candidates: Vec<usize>,
    pub aborted: Vec<AbortedTxn>,
    /// A transaction under this id that may be visible but whose seqs the
    /// history does not know (committed in one phase, or never pre-committed
    /// and never ended): no visible record of the id can be called an
    /// aborted read.
    pub opaque: bool,
    /// The checkpoint of the latest transaction under this id.
    pub checkpoint: Option<u64>,
}

impl TidHistory {
    /// Whether an aborted incarnation of the id could have written seq `q`.
    pub fn aborted_could_hold(&self, q: u64) -> bool {
        self.aborted.iter().any(|a| a.range.is_none_or(|(x, y)| x <= q && q <= y))
    }

    fn aborted_for(&self, q: u64) -> Option<&AbortedTxn> {
        // A pre-committed range that holds q says more than an open one.
        self.aborted
            .iter()
            .find(|a| a.range.is_some_and(|(x, y)| x <= q && q <= y))
            .or_else(|| self.aborted.iter().find(|a| a.range.is_none()))
    }

    pub fn abort_text(&self, q: u64) -> String {
        match self.aborted_for(q) {
            Some(a) => match a.checkpoint {
                Some(c) => format!("the history says was aborted (checkpoint {c}): {}", a.how),
                None => format!("the history says was aborted: {}", a.how),
            },
            None => "the history says was aborted".to_string(),
        }
    }

    pub fn aborted_checkpoint(&self, q: u64) -> Option<u64> {
        self.aborted_for(q).and_then(|a| a.checkpoint)
    }
}

/// The history's transactions, for attributing records and losses.
#[derive(Debug, Clone, Default)]
pub struct HistoryIndex {
    /// Pre-committed transactions, the latest per (id, checkpoint), with the
    /// last commit outcome: what lost ranges are attributed to.
    pub txns: Vec<TxnInfo>,
    /// Per subtask: indexes into `txns` sorted by first seq, and the longest
    /// range (bounds the search for transactions covering a seq).
    pub(crate) by_subtask: Vec<(Vec<usize>, u64)>,
    pub candidates: Vec<Candidate>,
    pub tids: Vec<TidHistory>,
    pub tid_index: HashMap<String, usize>,
    /// Transactions the rig found left open after a restore ([`lingering`]).
    pub lingering: Vec<Example>,
}

impl HistoryIndex {
    /// The checkpoint of the latest transaction under `tid`.
    pub fn checkpoint_of(&self, tid: &str) -> Option<u64> {
        self.tid_index.get(tid).and_then(|&i| self.tids[i].checkpoint)
    }

    /// Transactions of `subtask` that carried any of seq `a..=b`, in seq order.
    fn covering(&self, subtask: u32, a: u64, b: u64) -> Vec<&TxnInfo> {
        let Some((list, longest)) = self.by_subtask.get(subtask as usize) else { return Vec::new() };
        // A transaction starting `longest` or more before `a` ends before it.
        let from = list.partition_point(|&k| self.txns[k].first_seq.saturating_add(*longest) <= a);
        let to = list.partition_point(|&k| self.txns[k].first_seq <= b);
        list[from..to.max(from)].iter().map(|&k| &self.txns[k]).filter(|t| t.last_seq >= a).collect()
    }

    /// A lost range `a..=b` of `subtask`, split at the transactions that carried it.
    pub(crate) fn split(&self, s: u32, start: u64, end: u64) -> Vec<(u64, u64, Option<&TxnInfo>)> {
        let mut pieces: Vec<(u64, u64, Option<&TxnInfo>)> = Vec::new();
        let mut cur = start;
        for t in self.covering(s, start, end) {
            let a = t.first_seq.max(cur);
            let b = t.last_seq.min(end);
            if a > b {
                continue;
            }
            if a > cur {
                pieces.push((cur, a - 1, None));
            }
            pieces.push((a, b, Some(t)));
            cur = b + 1;
            if cur > end {
                break;
            }
        }
        if cur <= end {
            pieces.push((cur, end, None));
        }
        pieces
    }
}

/// `{prefix}-{subtask}-{checkpoint}` (Flink's INCREMENTING naming) → subtask.
pub fn subtask_of_tid(tid: &str) -> Option<u32> {
    let mut it = tid.rsplitn(3, '-');
    let _checkpoint: u64 = it.next()?.parse().ok()?;
    it.next()?.parse().ok()
}

pub fn describe_outcome(t: &TxnInfo) -> String {
    let txn = format!("transaction {} (checkpoint {})", t.transactional_id, t.checkpoint);
    match &t.outcome {
        Some(CommitOutcome::Dropped { error }) => format!("{txn}, committable dropped: {error}"),
        Some(CommitOutcome::Failed { error }) => format!("{txn}, commit failed: {error}"),
        Some(CommitOutcome::Committed) => format!("{txn}, reported committed"),
        None => format!("{txn}, no commit recorded"),
    }
}

pub fn seq_range(a: u64, b: u64) -> String {
    if a == b {
        format!("seq {a}")
    } else {
        format!("seq {a}–{b}")
    }
}
