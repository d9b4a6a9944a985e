//! The checker: what the output topic holds, against what the source wrote.
//!
//! Two halves, kept apart so the counting can be re-run offline and tested on
//! synthetic inputs:
//! - I/O ([`drain`], [`store`]; the history through [`crate::history`]):
//!   read the output topic with `read_committed` up to the high-water marks,
//!   save the records, read the run's history;
//! - pure ([`check`], [`count`]): count committed, lost, duplicated,
//!   unexpected, nonmonotonic, aborted-read and torn-transaction records and
//!   attribute them to the transactions the history recorded.
//!
//! Jepsen's shape: the checker never talks to the system under test while it
//! runs; it reads what the run left behind (the topic and `history.jsonl`).
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::history;
use sinkhole_workloads::model::{CommitOutcome, Event, EventKind, Source};

pub mod bench;
#[cfg(test)]
mod calibration;
pub mod count;
pub mod drain;
pub mod lingering;
pub mod offline;
pub mod open_txn;
pub mod share;
pub mod store;

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

/// The counts a verdict is judged on. Fields after `unexpected` were added
/// later: `#[serde(default)]` keeps older verdict and summary files readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counts {
    /// parallelism × records_per_subtask.
    pub expected: u64,
    /// Distinct expected records seen at least once.
    pub committed: u64,
    /// Expected records never seen.
    pub lost: u64,
    /// Extra copies: a record seen three times counts 2.
    pub duplicated: u64,
    /// Records of another run, malformed, or out of the source's range.
    pub unexpected: u64,
    /// Steps back: within a partition, a subtask's seq not above the one
    /// before it (read in offset order; a repeat counts too).
    #[serde(default)]
    pub nonmonotonic: u64,
    /// Visible records that only a transaction the history says was aborted
    /// can have written.
    #[serde(default)]
    pub aborted_read: u64,
    /// Transactions with some records visible and others not.
    #[serde(default)]
    pub torn_transaction: u64,
    /// Partitions whose read_committed position stayed below the high-water mark.
    #[serde(default)]
    pub uncommitted_tail: u64,
    /// Share-group source: deliveries the workers saw with a delivery count
    /// above 1 ([`share::ShareView`]); absent otherwise.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub redelivered: u64,
    /// Share-group source: input records the group archived by the end.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub archived: u64,
    /// Transactions of an earlier attempt still open once a restored attempt
    /// was up ([`lingering`]). Left out when zero, so counts serialise as
    /// they did before it existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub lingering: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One example of an anomaly.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Example {
    pub subtask: Option<u32>,
    /// The first (or only) sequence number.
    pub seq: Option<u64>,
    /// The last sequence number of a range (lost records come in ranges).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq_end: Option<u64>,
    pub partition: Option<i32>,
    pub offset: Option<i64>,
    pub transactional_id: Option<String>,
    /// The checkpoint of that transaction, where the history knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<u64>,
    /// A sentence for the report.
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Examples {
    pub lost: Vec<Example>,
    pub duplicated: Vec<Example>,
    pub unexpected: Vec<Example>,
    #[serde(default)]
    pub nonmonotonic: Vec<Example>,
    #[serde(default)]
    pub aborted_read: Vec<Example>,
    #[serde(default)]
    pub torn_transaction: Vec<Example>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lingering: Vec<Example>,
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
    pub open: Vec<open_txn::OpenTxn>,
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
    by_subtask: Vec<(Vec<usize>, u64)>,
    pub candidates: Vec<Candidate>,
    pub tids: Vec<TidHistory>,
    pub tid_index: HashMap<String, usize>,
    /// Transactions the rig found left open after a restore ([`lingering`]).
    pub lingering: Vec<Example>,
}

/// One incarnation while the index is built.
struct Inc {
    tid: usize,
    subtask: Option<u32>,
    checkpoint: Option<u64>,
    range: Option<(u64, u64)>,
    status: TxnStatus,
    how: String,
}

impl HistoryIndex {
    /// From history events, in the order they were written.
    ///
    /// The rule for "the history says this transaction was aborted" (the
    /// `aborted-read` anomaly): an explicit abort was recorded for it —
    /// `TxnAborted`, or `LingeringAborted` after it was opened and before it
    /// was committed. A commit that was `dropped` or `failed` is *not* an
    /// abort: the broker may have committed the transaction in an earlier
    /// attempt whose outcome the history lost (a kill between EndTxn and the
    /// history line), and a repeated EndTxn is then refused (with
    /// Transactions V2, PRODUCER_FENCED) although the data is committed. A
    /// dropped commit of a transaction the broker aborted shows up as `lost`.
    pub fn from_events(events: &[Event]) -> HistoryIndex {
        let mut txns: Vec<TxnInfo> = Vec::new();
        let mut txn_at: HashMap<(String, u64), usize> = HashMap::new();
        let mut outcomes: BTreeMap<(String, u64), CommitOutcome> = BTreeMap::new();
        let mut tids: Vec<TidHistory> = Vec::new();
        let mut tid_index: HashMap<String, usize> = HashMap::new();
        let mut incs: Vec<Inc> = Vec::new();
        let mut per_tid: Vec<Vec<usize>> = Vec::new();
        // The incarnation each subtask has open (opened, not pre-committed) in the current attempt.
        let mut open: HashMap<u32, usize> = HashMap::new();

        let mut tid_of = |name: &str, tids: &mut Vec<TidHistory>, per_tid: &mut Vec<Vec<usize>>| -> usize {
            if let Some(&i) = tid_index.get(name) {
                return i;
            }
            tids.push(TidHistory { transactional_id: name.to_string(), ..TidHistory::default() });
            per_tid.push(Vec::new());
            tid_index.insert(name.to_string(), tids.len() - 1);
            tids.len() - 1
        };
        let new_inc = |incs: &mut Vec<Inc>, per_tid: &mut Vec<Vec<usize>>, tid: usize, subtask: Option<u32>| {
            incs.push(Inc { tid, subtask, checkpoint: None, range: None, status: TxnStatus::Open, how: String::new() });
            per_tid[tid].push(incs.len() - 1);
            incs.len() - 1
        };
        for e in events {
            let worker = match e.source {
                Source::Worker { subtask } => Some(subtask),
                _ => None,
            };
            match &e.kind {
                EventKind::JobStarted { .. } => open.clear(),
                EventKind::WorkerStarted { subtask, .. } => {
                    open.remove(subtask);
                }
                EventKind::JobFinished { .. } => {
                    // Workers were stopped: what they still had open held no
                    // records (close aborts one that does, with TxnAborted).
                    for (_, i) in open.drain() {
                        if incs[i].status == TxnStatus::Open && incs[i].range.is_none() {
                            incs[i].status = TxnStatus::Empty;
                        }
                    }
                }
                EventKind::TxnOpened { transactional_id, checkpoint } => {
                    let subtask = worker.or_else(|| subtask_of_tid(transactional_id));
                    if let Some(s) = subtask {
                        // A transaction is opened only after the previous one
                        // was pre-committed; one without a committable was empty.
                        if let Some(prev) = open.remove(&s) {
                            if incs[prev].status == TxnStatus::Open && incs[prev].range.is_none() {
                                incs[prev].status = TxnStatus::Empty;
                            }
                        }
                    }
                    let t = tid_of(transactional_id, &mut tids, &mut per_tid);
                    let i = new_inc(&mut incs, &mut per_tid, t, subtask);
                    incs[i].checkpoint = Some(*checkpoint);
                    if let Some(s) = subtask {
                        open.insert(s, i);
                    }
                }
                EventKind::TxnPrecommitted { committable: c, .. } => {
                    let subtask = worker.or_else(|| subtask_of_tid(&c.transactional_id));
                    let t = tid_of(&c.transactional_id, &mut tids, &mut per_tid);
                    let i = match subtask.and_then(|s| open.get(&s).copied()).filter(|&i| incs[i].tid == t) {
                        Some(i) => i,
                        None => match per_tid[t].last().copied().filter(|&i| incs[i].status == TxnStatus::Open) {
                            Some(i) => i,
                            None => new_inc(&mut incs, &mut per_tid, t, subtask),
                        },
                    };
                    if let Some(s) = subtask {
                        if open.get(&s) == Some(&i) {
                            open.remove(&s);
                        }
                    }
                    incs[i].checkpoint = Some(c.checkpoint);
                    if let (Some(first), Some(last)) = (c.first_seq, c.last_seq) {
                        incs[i].range = Some((first.min(last), first.max(last)));
                        if let Some(s) = subtask {
                            // A restored attempt pre-commits the same range again under a
                            // new id: keep each (tid, checkpoint) once, the latest wins.
                            let info = TxnInfo {
                                subtask: s,
                                transactional_id: c.transactional_id.clone(),
                                checkpoint: c.checkpoint,
                                first_seq: first,
                                last_seq: last,
                                outcome: None,
                            };
                            match txn_at.get(&(c.transactional_id.clone(), c.checkpoint)) {
                                Some(&k) => txns[k] = info,
                                None => {
                                    txn_at.insert((c.transactional_id.clone(), c.checkpoint), txns.len());
                                    txns.push(info);
                                }
                            }
                        }
                    }
                }
                EventKind::CommitFinished { transactional_id, checkpoint, outcome, .. } => {
                    outcomes.insert((transactional_id.clone(), *checkpoint), outcome.clone());
                    if *outcome == CommitOutcome::Committed {
                        let t = tid_of(transactional_id, &mut tids, &mut per_tid);
                        let found = per_tid[t]
                            .iter()
                            .rev()
                            .copied()
                            .find(|&i| incs[i].checkpoint == Some(*checkpoint))
                            .or_else(|| {
                                per_tid[t].iter().rev().copied().find(|&i| incs[i].status != TxnStatus::Aborted)
                            });
                        let i = match found {
                            Some(i) => i,
                            None => {
                                let s = worker.or_else(|| subtask_of_tid(transactional_id));
                                let i = new_inc(&mut incs, &mut per_tid, t, s);
                                incs[i].checkpoint = Some(*checkpoint);
                                i
                            }
                        };
                        incs[i].status = TxnStatus::Committed;
                    }
                }
                EventKind::TxnAborted { transactional_id, producer_id, epoch, reason } => {
                    let how = format!("aborted by the sink ({reason}; producer {producer_id} epoch {epoch})");
                    abort_latest(transactional_id, how, worker, &mut tid_of, &mut tids, &mut incs, &mut per_tid);
                }
                EventKind::LingeringAborted { transactional_id, epoch } => {
                    let how = format!("aborted as a lingering transaction on restore (fenced at epoch {epoch})");
                    abort_latest(transactional_id, how, worker, &mut tid_of, &mut tids, &mut incs, &mut per_tid);
                }
                _ => {}
            }
        }
        for t in &mut txns {
            t.outcome = outcomes.get(&(t.transactional_id.clone(), t.checkpoint)).cloned();
        }

        let mut candidates: Vec<Candidate> = Vec::new();
        for (t, list) in per_tid.iter().enumerate() {
            let th = &mut tids[t];
            for &i in list {
                let inc = &incs[i];
                if inc.checkpoint.is_some() {
                    th.checkpoint = inc.checkpoint;
                }
                match (inc.status, inc.range) {
                    (TxnStatus::Empty, _) => {}
                    (TxnStatus::Aborted, range) => {
                        th.aborted.push(AbortedTxn { range, checkpoint: inc.checkpoint, how: inc.how.clone() })
                    }
                    (_, None) => th.opaque = true,
                    (status, Some((a, b))) => {
                        let subtask = inc.subtask.or_else(|| subtask_of_tid(&th.transactional_id)).unwrap_or(0);
                        th.candidates.push(candidates.len());
                        candidates.push(Candidate {
                            subtask,
                            transactional_id: th.transactional_id.clone(),
                            checkpoint: inc.checkpoint.unwrap_or(0),
                            first_seq: a,
                            last_seq: b,
                            status,
                            unambiguous: true,
                        });
                    }
                }
            }
            for &x in &th.candidates {
                for &y in &th.candidates {
                    if x != y
                        && candidates[x].first_seq <= candidates[y].last_seq
                        && candidates[y].first_seq <= candidates[x].last_seq
                    {
                        candidates[x].unambiguous = false;
                    }
                }
            }
        }

        let mut by_subtask: Vec<(Vec<usize>, u64)> = Vec::new();
        for (k, t) in txns.iter().enumerate() {
            let s = t.subtask as usize;
            if s >= 1 << 16 {
                continue;
            }
            if by_subtask.len() <= s {
                by_subtask.resize_with(s + 1, || (Vec::new(), 0));
            }
            by_subtask[s].0.push(k);
            by_subtask[s].1 = by_subtask[s].1.max(t.last_seq.saturating_sub(t.first_seq).saturating_add(1));
        }
        for (v, _) in &mut by_subtask {
            v.sort_by_key(|&k| (txns[k].first_seq, txns[k].checkpoint));
        }
        HistoryIndex { txns, by_subtask, candidates, tids, tid_index, lingering: lingering::found(events) }
    }

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
    fn split(&self, s: u32, start: u64, end: u64) -> Vec<(u64, u64, Option<&TxnInfo>)> {
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

/// Marks the latest incarnation of `tid` aborted, unless it was committed or
/// wrote nothing (an abort then aborts nothing of what the output holds).
fn abort_latest(
    tid: &str,
    how: String,
    worker: Option<u32>,
    tid_of: &mut impl FnMut(&str, &mut Vec<TidHistory>, &mut Vec<Vec<usize>>) -> usize,
    tids: &mut Vec<TidHistory>,
    incs: &mut Vec<Inc>,
    per_tid: &mut Vec<Vec<usize>>,
) {
    let t = tid_of(tid, tids, per_tid);
    match per_tid[t].last().copied() {
        Some(i) if incs[i].status == TxnStatus::Open => {
            incs[i].status = TxnStatus::Aborted;
            incs[i].how = how;
        }
        Some(_) => {}
        None => {
            // The history lost the opening (a worker killed before its
            // events were written): an aborted transaction of unknown range.
            incs.push(Inc {
                tid: t,
                subtask: worker.or_else(|| subtask_of_tid(tid)),
                checkpoint: None,
                range: None,
                status: TxnStatus::Aborted,
                how,
            });
            per_tid[t].push(incs.len() - 1);
        }
    }
}

/// `{prefix}-{subtask}-{checkpoint}` (Flink's INCREMENTING naming) → subtask.
pub fn subtask_of_tid(tid: &str) -> Option<u32> {
    let mut it = tid.rsplitn(3, '-');
    let _checkpoint: u64 = it.next()?.parse().ok()?;
    it.next()?.parse().ok()
}

pub(crate) fn describe_outcome(t: &TxnInfo) -> String {
    let txn = format!("transaction {} (checkpoint {})", t.transactional_id, t.checkpoint);
    match &t.outcome {
        Some(CommitOutcome::Dropped { error }) => format!("{txn}, committable dropped: {error}"),
        Some(CommitOutcome::Failed { error }) => format!("{txn}, commit failed: {error}"),
        Some(CommitOutcome::Committed) => format!("{txn}, reported committed"),
        None => format!("{txn}, no commit recorded"),
    }
}

pub(crate) fn seq_range(a: u64, b: u64) -> String {
    if a == b {
        format!("seq {a}")
    } else {
        format!("seq {a}–{b}")
    }
}

/// The pure check: counts and examples from the drained records (in the
/// order the drain read them), the history's transactions and how far each
/// partition's drain got. See [`count`] for how it counts.
pub fn check(
    expected: &Expected,
    records: &[DrainedRecord],
    history: &HistoryIndex,
    partitions: &[PartitionDrain],
) -> CheckReport {
    let mut c = count::Counter::new(expected, history);
    for r in records {
        c.observe(r.into());
    }
    if let Some(until) = c.second_pass_until() {
        for r in &records[..until as usize] {
            c.observe_again(r.into());
        }
    }
    c.finish(partitions)
}

/// What [`check_mode`] needs.
#[derive(Debug, Clone)]
pub struct CheckSpec {
    pub bootstrap: String,
    pub topic: String,
    pub expected: Expected,
    /// `history.jsonl` of the mode (missing = no attribution).
    pub history: Option<PathBuf>,
    /// The mode's directory: `drained.bin` is written there.
    pub dir: PathBuf,
    /// How long to wait for every partition to reach its high-water mark.
    pub timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum CheckerError {
    #[error("draining topic {topic}: {source}")]
    Kafka {
        topic: String,
        #[source]
        source: rdkafka::error::KafkaError,
    },
    #[error("topic {0} not found (or it has no partitions)")]
    NoTopic(String),
    #[error("{what} {}: {source}", .path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The history, unreadable or damaged (file, line, column).
    #[error(transparent)]
    History(#[from] crate::history::ReadError),
    #[error("{0}")]
    Other(String),
}

/// Drains the topic, saves the records in `dir/drained.bin`, reads the
/// history, and checks.
pub async fn check_mode(spec: &CheckSpec) -> Result<CheckReport, CheckerError> {
    let (bootstrap, topic, timeout) = (spec.bootstrap.clone(), spec.topic.clone(), spec.timeout);
    let drained = tokio::task::spawn_blocking(move || drain::drain(&bootstrap, &topic, timeout))
        .await
        .map_err(|e| CheckerError::Other(format!("drain task: {e}")))??;
    store::write(&spec.dir.join(store::FILE_NAME), &drained.records)?;
    store::write_partitions(&spec.dir.join(store::PARTITIONS_FILE), &drained.partitions)?;
    let index = match &spec.history {
        Some(h) if h.exists() => HistoryIndex::from_events(&history::read(h)?.events),
        _ => HistoryIndex::default(),
    };
    let mut report = check(&spec.expected, &drained.records, &index, &drained.partitions);
    let bootstrap: Vec<String> = spec.bootstrap.split(',').map(str::to_string).collect();
    open_txn::explain(&bootstrap, &spec.topic, &mut report.uncommitted_tail).await;
    Ok(report)
}

/// Re-checks a saved drain offline, streaming `drained.bin` (twice when
/// duplicated records need their first copy found). `partitions` are the
/// drain's end positions when they were saved (see [`store::PARTITIONS_FILE`]).
pub fn recheck(dir: &Path, expected: &Expected, history: Option<&Path>) -> Result<CheckReport, CheckerError> {
    let index = match history {
        Some(h) => HistoryIndex::from_events(&history::read(h)?.events),
        None => HistoryIndex::default(),
    };
    let parts = dir.join(store::PARTITIONS_FILE);
    let partitions = if parts.exists() { store::read_partitions(&parts)? } else { Vec::new() };
    recheck_with(&dir.join(store::FILE_NAME), expected, &index, &partitions)
}

/// [`recheck`] with the history already indexed.
pub fn recheck_with(
    drained: &Path,
    expected: &Expected,
    index: &HistoryIndex,
    partitions: &[PartitionDrain],
) -> Result<CheckReport, CheckerError> {
    let mut c = count::Counter::new(expected, index);
    store::for_each(drained, None, |_, r| c.observe(r))?;
    if let Some(until) = c.second_pass_until() {
        store::for_each(drained, Some(until), |_, r| c.observe_again(r))?;
    }
    Ok(c.finish(partitions))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_workloads::model::{record, Committable, SinkMode, TxnProtocol};

    const RUN: &str = "r1";

    fn exp(p: u32, n: u64) -> Expected {
        Expected { run_id: RUN.into(), parallelism: p, records_per_subtask: n }
    }

    fn rec(partition: i32, offset: i64, value: &str, tid: &str) -> DrainedRecord {
        DrainedRecord {
            partition,
            offset,
            value: value.as_bytes().to_vec(),
            tid: Some(tid.to_string()),
            produced_us: None,
        }
    }

    /// Every record of `p` subtasks × `n`, round robin over 3 partitions.
    fn all(p: u32, n: u64) -> Vec<DrainedRecord> {
        let mut v = Vec::new();
        let mut offs = [0i64; 3];
        for s in 0..p {
            for q in 0..n {
                let part = (q % 3) as usize;
                v.push(rec(part as i32, offs[part], &record::value(RUN, s, q), &format!("x-{s}-1")));
                offs[part] += 1;
            }
        }
        v
    }

    fn ev(subtask: u32, kind: EventKind) -> Event {
        Event { wall_ms: 0, mono_us: 0, mode: SinkMode::Legacy, source: Source::Worker { subtask }, kind }
    }

    fn precommitted(subtask: u32, cp: u64, a: u64, b: u64) -> Event {
        ev(
            subtask,
            EventKind::TxnPrecommitted {
                committable: Committable {
                    checkpoint: cp,
                    transactional_id: format!("sinkhole-r1-legacy-{subtask}-{cp}"),
                    producer_id: 7,
                    producer_epoch: 0,
                    protocol: TxnProtocol::V2,
                    records: b - a + 1,
                    first_seq: Some(a),
                    last_seq: Some(b),
                },
                flush_us: 1,
            },
        )
    }

    fn finished(subtask: u32, cp: u64, outcome: CommitOutcome) -> Event {
        ev(
            subtask,
            EventKind::CommitFinished {
                transactional_id: format!("sinkhole-r1-legacy-{subtask}-{cp}"),
                checkpoint: cp,
                restored: true,
                outcome,
                latency_us: 1,
            },
        )
    }

    #[test]
    fn clean() {
        let r = check(&exp(2, 10), &all(2, 10), &HistoryIndex::default(), &[]);
        assert_eq!(
            r.counts,
            Counts { expected: 20, committed: 20, lost: 0, duplicated: 0, unexpected: 0, ..Counts::default() }
        );
        assert_eq!(r.examples, Examples::default());
        assert!(r.uncommitted_tail.is_empty());
    }

    #[test]
    fn lost_range_attributed_to_the_dropped_committable() {
        let recs: Vec<_> = all(2, 100)
            .into_iter()
            .filter(|r| {
                let (_, s, q) = record::parse_value(&r.value).unwrap();
                !(s == 0 && (40..60).contains(&q))
            })
            .collect();
        let hist = HistoryIndex::from_events(&[
            precommitted(0, 3, 30, 49),
            precommitted(0, 4, 50, 69),
            finished(0, 3, CommitOutcome::Committed),
            finished(0, 4, CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() }),
        ]);
        let r = check(&exp(2, 100), &recs, &hist, &[]);
        assert_eq!(
            r.counts,
            Counts { expected: 200, committed: 180, lost: 20, duplicated: 0, unexpected: 0, ..Counts::default() }
        );
        assert_eq!(r.lost_ranges, 2);
        assert_eq!(r.examples.lost.len(), 2);
        assert_eq!(
            r.examples.lost[0].detail,
            "subtask 0 seq 40–49 lost: transaction sinkhole-r1-legacy-0-3 (checkpoint 3), reported committed"
        );
        assert_eq!(
            r.examples.lost[1].detail,
            "subtask 0 seq 50–59 lost: transaction sinkhole-r1-legacy-0-4 (checkpoint 4), committable dropped: PRODUCER_FENCED (90)"
        );
        assert_eq!(r.examples.lost[1].transactional_id.as_deref(), Some("sinkhole-r1-legacy-0-4"));
        assert_eq!((r.examples.lost[1].seq, r.examples.lost[1].seq_end), (Some(50), Some(59)));
    }

    #[test]
    fn lost_without_history() {
        let mut recs = all(1, 10);
        recs.retain(|r| record::parse_value(&r.value).unwrap().2 != 9);
        let r = check(&exp(1, 10), &recs, &HistoryIndex::default(), &[]);
        assert_eq!(r.counts.lost, 1);
        assert_eq!(r.examples.lost[0].detail, "subtask 0 seq 9 lost: in no pre-committed transaction of the history");
    }

    #[test]
    fn duplicated_counts_extra_copies() {
        let mut recs = all(1, 10);
        recs.push(rec(0, 100, &record::value(RUN, 0, 3), "x-0-2"));
        recs.push(rec(1, 100, &record::value(RUN, 0, 3), "x-0-3"));
        recs.push(rec(2, 100, &record::value(RUN, 0, 5), "x-0-2"));
        let r = check(&exp(1, 10), &recs, &HistoryIndex::default(), &[]);
        // Each extra copy lands after higher seqs of its partition: a step back each.
        assert_eq!(
            r.counts,
            Counts {
                expected: 10,
                committed: 10,
                lost: 0,
                duplicated: 3,
                unexpected: 0,
                nonmonotonic: 3,
                ..Counts::default()
            }
        );
        assert_eq!(r.examples.duplicated.len(), 2);
        let d = &r.examples.duplicated[0];
        assert_eq!((d.subtask, d.seq, d.partition, d.offset), (Some(0), Some(3), Some(0), Some(1)));
        assert!(d.detail.contains("seen 3 times") && d.detail.contains("p1@100 (x-0-3)"), "{}", d.detail);
    }

    #[test]
    fn unexpected_kinds() {
        let mut recs = all(1, 5);
        recs.push(rec(0, 50, "other-run:0:1", "y-0-1"));
        recs.push(rec(0, 51, "garbage", "y-0-1"));
        recs.push(rec(0, 52, &record::value(RUN, 0, 5), "x-0-1"));
        recs.push(rec(0, 53, &record::value(RUN, 1, 0), "x-1-1"));
        let r = check(&exp(1, 5), &recs, &HistoryIndex::default(), &[]);
        assert_eq!(
            r.counts,
            Counts { expected: 5, committed: 5, lost: 0, duplicated: 0, unexpected: 4, ..Counts::default() }
        );
        let details: Vec<&str> = r.examples.unexpected.iter().map(|e| e.detail.as_str()).collect();
        assert_eq!(
            details,
            vec![
                "partition 0 offset 50: record of another run (other-run)",
                "partition 0 offset 51: malformed value \"garbage\"",
                "partition 0 offset 52: seq 5 out of range (records_per_subtask 5)",
                "partition 0 offset 53: subtask 1 out of range (parallelism 1)",
            ]
        );
    }

    #[test]
    fn mixed_with_a_hanging_partition() {
        let mut recs = all(2, 20);
        // lost: subtask 1 seq 0..=4; duplicated: subtask 0 seq 7 twice more; one foreign
        recs.retain(|r| {
            let (_, s, q) = record::parse_value(&r.value).unwrap();
            !(s == 1 && q < 5)
        });
        for o in 0..2 {
            recs.push(rec(2, 200 + o, &record::value(RUN, 0, 7), "x-0-9"));
        }
        recs.push(rec(1, 300, "r0:0:1", "z-0-1"));
        let parts = vec![
            PartitionDrain { partition: 0, low_watermark: 0, high_watermark: 20, position: 20, records: 10 },
            PartitionDrain { partition: 1, low_watermark: 0, high_watermark: 40, position: 31, records: 10 },
        ];
        let r = check(&exp(2, 20), &recs, &HistoryIndex::default(), &parts);
        // The two extra copies of seq 7 in partition 2: one step back from 17, one repeat.
        assert_eq!(
            r.counts,
            Counts {
                expected: 40,
                committed: 35,
                lost: 5,
                duplicated: 2,
                unexpected: 1,
                nonmonotonic: 2,
                uncommitted_tail: 1,
                ..Counts::default()
            }
        );
        assert_eq!(
            r.uncommitted_tail,
            vec![UncommittedTail { partition: 1, position: 31, high_watermark: 40, open: vec![] }]
        );
        assert_eq!(r.records_read, recs.len() as u64);
    }

    #[test]
    fn examples_are_capped() {
        let recs: Vec<_> =
            all(1, 100).into_iter().filter(|r| record::parse_value(&r.value).unwrap().2.is_multiple_of(2)).collect();
        let r = check(&exp(1, 100), &recs, &HistoryIndex::default(), &[]);
        assert_eq!(r.counts.lost, 50);
        assert_eq!(r.lost_ranges, 50);
        assert_eq!(r.examples.lost.len(), MAX_EXAMPLES);
    }

    /// A pre-committed range over all of u64, or reversed, as a damaged
    /// history line can claim: no overflow, no allocation for the range;
    /// only the seqs the source can write are tracked.
    #[test]
    fn a_damaged_range_in_the_history_neither_overflows_nor_allocates() {
        let claim = |first: u64, last: u64| {
            let mut e = precommitted(0, 1, 0, 9);
            if let EventKind::TxnPrecommitted { committable, .. } = &mut e.kind {
                (committable.first_seq, committable.last_seq) = (Some(first), Some(last));
            }
            HistoryIndex::from_events(&[e, finished(0, 1, CommitOutcome::Committed)])
        };
        let tid = "sinkhole-r1-legacy-0-1";
        let recs: Vec<_> = (0..10).map(|q| rec(0, q as i64, &record::value(RUN, 0, q), tid)).collect();
        let r = check(&exp(1, 10), &recs, &claim(0, u64::MAX), &[]);
        assert_eq!((r.counts.committed, r.counts.lost, r.counts.torn_transaction), (10, 0, 1));
        // Seen whole up to the source's end: the first missing seq is the next one.
        let d = &r.examples.torn_transaction[0].detail;
        assert!(d.contains("10 of 18446744073709551615 records visible") && d.ends_with("(first: seq 10)"), "{d}");

        let r = check(&exp(1, 10), &recs[..4], &claim(u64::MAX, 0), &[]);
        assert_eq!((r.counts.committed, r.counts.lost, r.counts.torn_transaction), (4, 6, 1));
        assert!(r.examples.lost[0].detail.ends_with("lost: in no pre-committed transaction of the history"));
        let r = check(&exp(1, 10), &recs, &claim(u64::MAX, u64::MAX), &[]);
        assert_eq!((r.counts.committed, r.counts.torn_transaction), (10, 0));
    }

    #[test]
    fn tids_name_their_subtask() {
        assert_eq!(subtask_of_tid("sinkhole-abc-legacy-3-17"), Some(3));
        assert_eq!(subtask_of_tid("nope"), None);
    }
}
