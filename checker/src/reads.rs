//! What the live readers saw, judged against the committed truth: the read-side anomalies.
//!
//! A scenario's readers are read_committed consumers polling the output topic while the job
//! and the faults run (`readers.jsonl`, [`sinkhole_history::reads`]). The final drain, taken
//! once every transaction has ended, is the truth they are held to: at each (partition, offset)
//! below the drain's position it holds the committed record, or nothing (a control marker, an
//! aborted record). Named as Jepsen's Kafka workload names them (`jepsen.tests.kafka`):
//!
//! - **G1a** (aborted read, seen live): a reader polled a record at an offset where the truth
//!   holds none: it read what was never committed (KAFKA-17754 is one way to get there).
//! - **inconsistent-offsets**: a reader polled a record at an offset where the truth, or
//!   another reader, holds a different one.
//! - **precommitted-read**: a reader polled a record before its transaction's commit could have
//!   been issued: before the checkpoint holding the transaction was durable (Flink commits only
//!   once a checkpoint is complete: `CheckpointCommitter`, `notifyCheckpointComplete`) and before
//!   the sink said it was committing it. On the wall clock the history and the readers share,
//!   to the millisecond; a poll in the same millisecond is given the benefit of the doubt.
//! - **poll-skip**: a committed record a consumer passed over, judged at two scopes.
//!   *Within one assignment* of a partition to a consumer incarnation: two consecutive polls
//!   passed over it (read_committed legitimately passes over aborted records and markers,
//!   which the truth does not hold). *Across rebalances and restarts*, per consumer scope (as
//!   Jepsen's Kafka workload judges poll-skip per consumer, not per poll pair): the scope is the
//!   consumer group for `subscribe` readers (a partition moving to another member must resume
//!   at or before the group's committed position, which is at most one past what a member
//!   polled) and the reader itself, across all its incarnations, for `assign` readers (a new
//!   consumer starts again from the log start). A committed record below the scope's furthest
//!   poll in its partition that none of the scope's consumers ever polled was passed over when
//!   the partition changed hands or the consumer restarted. A record the within-assignment
//!   check already counted is not counted again: each skipped record counts once per scope.
//! - **nonmonotonic-poll**: within one assignment, a poll at or below the offset polled before it.
//! - **unseen**: committed, but no reader polled it before the run ended. Reported with the lag
//!   of the records that were seen (from the earliest moment their commit could be issued to
//!   the first poll, ms), never a failure by itself: a reader stopped by a fault near the end
//!   legitimately misses the last records.
//!
//! Pure: it streams read events and drained records in, holds one 16-byte entry per offset of
//! the truth (the record, its transaction, whether a reader saw it), a bit per offset per
//! consumer scope (for poll-skip), and one position per reader and partition, and is tested on
//! synthetic histories. The state is in vectors indexed by partition and by reader, not maps: a
//! run's readers poll millions of records, and each poll is a few indexed loads.
use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use sinkhole_history::reads::{ReadEvent, ReadKind};
use sinkhole_model::{record, Event, EventKind};

use crate::count::RecordRef;
use crate::report::{PartitionDrain, MAX_EXAMPLES};
use sinkhole_model::anomaly::{Anomaly, Group};

/// The read-side anomalies' names (their keys in the anomaly table), as the verdict, the
/// report and the examples name them.
pub const G1A: &str = Anomaly::G1a.key();
pub const INCONSISTENT_OFFSETS: &str = Anomaly::InconsistentOffsets.key();
pub const PRECOMMITTED_READ: &str = Anomaly::PrecommittedRead.key();
pub const POLL_SKIP: &str = Anomaly::PollSkip.key();
pub const NONMONOTONIC_POLL: &str = Anomaly::NonmonotonicPoll.key();
pub const UNSEEN: &str = Anomaly::Unseen.key();

/// What the readers saw, counted. Absent from a verdict whose scenario has no readers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReadReport {
    pub readers: u32,
    /// Consumers created: one per reader, one more per restart.
    pub incarnations: u32,
    pub polls: u64,
    /// Polls of records at an offset the truth holds no committed record at.
    #[serde(rename = "G1a")]
    pub g1a: u64,
    pub inconsistent_offsets: u64,
    pub precommitted_read: u64,
    /// Committed records passed over, counted per record: within an assignment, or never polled
    /// by a consumer scope (a group, or an assign reader's incarnations) below its furthest poll.
    pub poll_skip: u64,
    pub nonmonotonic_poll: u64,
    pub unseen: u64,
    /// Polls at offsets the drain did not reach (it timed out there): not judged.
    pub not_judged: u64,
    /// From the earliest moment a seen record's commit could be issued to its first poll, ms.
    pub lag_ms: Lag,
    /// Up to [`MAX_EXAMPLES`] sentences per anomaly name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub examples: BTreeMap<String, Vec<String>>,
}

impl ReadReport {
    /// The anomalies that make a verdict expecting clean data fail, by name, with their counts.
    pub fn anomalies(&self) -> Vec<(&'static str, u64)> {
        self.counts().into_iter().filter(|(_, n)| *n > 0).collect()
    }

    /// Every read-side anomaly (the table's readers, evidence left out) by name with its count,
    /// zero or not, in the table's order (`unseen` is not one).
    pub fn counts(&self) -> Vec<(&'static str, u64)> {
        let mut c = crate::Counts::default();
        self.add_to(&mut c);
        Anomaly::ALL
            .iter()
            .filter(|a| a.group() == Group::Readers && a.severity().is_anomaly())
            .map(|a| (a.key(), c.get(*a)))
            .collect()
    }

    /// Puts the counts among the output's, where expectations and the words judge them.
    pub fn add_to(&self, c: &mut crate::Counts) {
        c.g1a = self.g1a;
        c.inconsistent_offsets = self.inconsistent_offsets;
        c.precommitted_read = self.precommitted_read;
        c.poll_skip = self.poll_skip;
        c.nonmonotonic_poll = self.nonmonotonic_poll;
        c.unseen = self.unseen;
    }

    fn example(&mut self, name: &str, text: impl FnOnce() -> String) {
        let list = self.examples.entry(name.to_string()).or_default();
        if list.len() < MAX_EXAMPLES {
            list.push(text());
        }
    }
}

/// A distribution in milliseconds: how many samples, the median, the 99th percentile, the most.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Lag {
    pub samples: u64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

/// The lags of first polls, counted as they come: exact quantiles without a sample kept per
/// record. A lag under [`DENSE_MS`] (a reader keeping up) is counted in its millisecond's bucket;
/// a longer one is kept as it is.
#[derive(Debug)]
struct Lags {
    dense: Vec<u64>,
    sparse: Vec<u64>,
    samples: u64,
    max: u64,
}

const DENSE_MS: u64 = 1 << 16;

impl Lags {
    fn new() -> Lags {
        Lags { dense: vec![0; DENSE_MS as usize], sparse: Vec::new(), samples: 0, max: 0 }
    }

    fn add(&mut self, lag: u64) {
        self.samples += 1;
        self.max = self.max.max(lag);
        match self.dense.get_mut(lag as usize) {
            Some(n) => *n += 1,
            None => self.sparse.push(lag),
        }
    }

    /// The lag of rank `k` (from 0) in increasing order: every dense lag is below every sparse one.
    fn at_rank(&mut self, k: u64) -> u64 {
        let in_dense = self.samples - self.sparse.len() as u64;
        if k >= in_dense {
            return *self.sparse.select_nth_unstable((k - in_dense) as usize).1;
        }
        let mut below = 0;
        for (ms, &n) in self.dense.iter().enumerate() {
            below += n;
            if below > k {
                return ms as u64;
            }
        }
        unreachable!("rank {k} below the {in_dense} dense samples")
    }

    /// The nearest-rank median and 99th percentile, and the most.
    fn lag(mut self) -> Lag {
        if self.samples == 0 {
            return Lag::default();
        }
        let rank = |q: f64| ((self.samples - 1) as f64 * q).round() as u64;
        let (k50, k99) = (rank(0.5), rank(0.99));
        Lag { samples: self.samples, p50: self.at_rank(k50), p99: self.at_rank(k99), max: self.max }
    }
}

/// [`Slot::tid`] where the truth holds no committed record (a control marker, an aborted record,
/// or an offset the drain skipped).
const NOTHING: u32 = u32::MAX;
/// [`Slot::tid`] of a committed record written outside any transaction.
const NO_TID: u32 = u32::MAX - 1;
/// [`Slot::id`] of a value that is not the run's.
const FOREIGN: u64 = u64::MAX;
/// [`Slot::id`] of a run's value too wide to pack (a subtask ≥ 65 535 or a seq ≥ 2⁴⁸): the
/// (subtask, seq) is in [`Truth::wide`].
const WIDE: u64 = u64::MAX - 1;
const SEQ_BITS: u32 = 48;
/// [`Slot::seen`] of a record no reader polled yet.
const NOT_SEEN: u32 = 0;
/// [`Slot::seen`] of a record a reader polled (its lag is counted then, in [`Lags`]).
const SEEN: u32 = 1;
/// Partitions beyond this are not indexed (a topic of the rig never has that many; a corrupt
/// partition or reader id must not allocate).
const MAX_PARTITIONS: usize = 1 << 16;
const MAX_READERS: usize = 1 << 16;

/// A run's (subtask, seq) in one word: the subtask in the top 16 bits, the seq below.
fn pack(id: Option<(u32, u64)>) -> u64 {
    match id {
        None => FOREIGN,
        Some((s, q)) if s < 0xffff && q < 1 << SEQ_BITS => (u64::from(s) << SEQ_BITS) | q,
        Some(_) => WIDE,
    }
}

/// The value's (subtask, seq) when it is one the run's source wrote (`run:subtask:seq`), as
/// [`record::parse_value`] reads it; the common all-digits shape without allocating or
/// validating twice, anything else by [`record::parse_value`] itself.
fn parse_id(v: &[u8]) -> Option<(u32, u64)> {
    fn digits_back(v: &[u8], max: usize) -> Option<(u64, usize)> {
        let start = v.iter().rposition(|b| !b.is_ascii_digit()).map_or(0, |i| i + 1);
        let n = v.len() - start;
        if n == 0 || n > max {
            return None;
        }
        Some((v[start..].iter().fold(0u64, |a, &b| a * 10 + u64::from(b - b'0')), start))
    }
    let fast = || {
        let (seq, i) = digits_back(v, 19)?;
        let rest = v[..i].strip_suffix(b":")?;
        let (subtask, j) = digits_back(rest, 9)?;
        let run = rest[..j].strip_suffix(b":")?;
        (run.is_ascii() || std::str::from_utf8(run).is_ok()).then_some(())?;
        Some((subtask as u32, seq))
    };
    fast().or_else(|| record::parse_value(v).map(|(_, s, q)| (s, q)))
}

/// One offset of the truth, 16 bytes: the committed record, its transaction, and whether a
/// reader has polled it (and how long after its commit could be issued).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    /// [`pack`]ed (subtask, seq), [`FOREIGN`] or [`WIDE`].
    id: u64,
    /// Index into [`Truth::tids`], or [`NOTHING`] / [`NO_TID`].
    tid: u32,
    /// [`NOT_SEEN`] or [`SEEN`].
    seen: u32,
}

const EMPTY: Slot = Slot { id: FOREIGN, tid: NOTHING, seen: NOT_SEEN };

/// One partition of the truth: the committed record at each offset below the drain's position.
#[derive(Debug, Default)]
struct PartitionTruth {
    low: i64,
    position: i64,
    at: Vec<Slot>,
}

impl PartitionTruth {
    fn index(&self, offset: i64) -> Option<usize> {
        (offset >= self.low && offset < self.position).then(|| (offset - self.low) as usize)
    }
}

/// The final drain, indexed by (partition, offset): partitions are 0..n, a vector by partition.
#[derive(Debug, Default)]
pub struct Truth {
    /// By partition; a partition the drain did not report is empty (its polls are not judged).
    parts: Vec<PartitionTruth>,
    tids: Vec<String>,
    tid_index: HashMap<String, u32>,
    /// The last record's transaction: the records of one transaction come in runs.
    last_tid: Option<u32>,
    /// The (subtask, seq) of the [`WIDE`] slots.
    wide: HashMap<(i32, i64), (u32, u64)>,
}

impl Truth {
    /// The truth's extent: each partition from its log start to the drain's position.
    pub fn new(partitions: &[PartitionDrain]) -> Truth {
        let mut t = Truth::default();
        for p in partitions {
            let Some(i) = usize::try_from(p.partition).ok().filter(|&i| i < MAX_PARTITIONS) else { continue };
            if t.parts.len() <= i {
                t.parts.resize_with(i + 1, PartitionTruth::default);
            }
            let len = (p.position - p.low_watermark).max(0) as usize;
            t.parts[i] = PartitionTruth { low: p.low_watermark, position: p.position, at: vec![EMPTY; len] };
        }
        t
    }

    fn part(&self, partition: i32) -> Option<&PartitionTruth> {
        usize::try_from(partition).ok().and_then(|i| self.parts.get(i))
    }

    /// One drained record (committed: the drain reads read_committed).
    pub fn observe(&mut self, r: RecordRef<'_>) {
        let Some(p) = usize::try_from(r.partition).ok().and_then(|i| self.parts.get(i)) else { return };
        let Some(i) = p.index(r.offset) else { return };
        let tid = match r.tid {
            None => NO_TID,
            Some(t) => match self.last_tid {
                Some(k) if self.tids[k as usize] == t => k,
                _ => {
                    let k = match self.tid_index.get(t) {
                        Some(&k) => k,
                        None => {
                            self.tids.push(t.to_string());
                            let k = (self.tids.len() - 1) as u32;
                            self.tid_index.insert(t.to_string(), k);
                            k
                        }
                    };
                    self.last_tid = Some(k);
                    k
                }
            },
        };
        let id = parse_id(r.value);
        let packed = pack(id);
        if packed == WIDE {
            self.wide.insert((r.partition, r.offset), id.unwrap_or_default());
        }
        self.parts[r.partition as usize].at[i] = Slot { id: packed, tid, seen: NOT_SEEN };
    }

    /// The (subtask, seq) a committed slot holds.
    fn id_of(&self, partition: i32, offset: i64, slot: Slot) -> Option<(u32, u64)> {
        match slot.id {
            FOREIGN => None,
            WIDE => self.wide.get(&(partition, offset)).copied(),
            x => Some(((x >> SEQ_BITS) as u32, x & ((1 << SEQ_BITS) - 1))),
        }
    }
}

/// The earliest moment (wall clock, ms) the history allows each transaction's commit.
#[derive(Debug, Default)]
struct CommitBounds {
    /// (checkpoint, the earliest a checkpoint at or past it was recorded durable), by checkpoint.
    by_checkpoint: Vec<(u64, u64)>,
    /// Per transactional id: the first checkpoint it was opened for. An id that carries several
    /// transactions (rdkafka-txn's one id per subtask, Flink's POOLING) is judged by its first:
    /// the truth knows a record's id, not which of the id's transactions wrote it, and a later
    /// checkpoint's bound would blame a reader for polling an earlier transaction's records.
    checkpoint_of: HashMap<String, u64>,
    /// Per transactional id: the first time the sink said it was committing it.
    commit_started: HashMap<String, u64>,
}

impl CommitBounds {
    fn new(events: &[Event]) -> CommitBounds {
        let mut b = CommitBounds::default();
        let mut covering: Vec<(u64, u64)> = vec![];
        for e in events {
            match &e.kind {
                // Recorded before any subtask hears that the checkpoint is complete (the
                // notification is recorded only after it was sent, so it is no bound).
                EventKind::CheckpointPersisted { id, .. } => covering.push((*id, e.wall_ms)),
                EventKind::TxnOpened { transactional_id, checkpoint } => {
                    b.checkpoint_of.entry(transactional_id.clone()).or_insert(*checkpoint);
                }
                EventKind::CommitStarted { transactional_id, .. } => {
                    b.commit_started.entry(transactional_id.clone()).or_insert(e.wall_ms);
                }
                _ => {}
            }
        }
        // A durable checkpoint n allows the commit of every checkpoint up to n (a restore from
        // n commits them): the earliest for checkpoint c is the least time among ids ≥ c.
        covering.sort_unstable();
        let mut least = u64::MAX;
        for &(id, at) in covering.iter().rev() {
            least = least.min(at);
            b.by_checkpoint.push((id, least));
        }
        b.by_checkpoint.reverse();
        b
    }

    /// None when the history knows nothing of the transaction (no judgement then).
    fn earliest(&self, tid: &str) -> Option<u64> {
        let cp = self.checkpoint_of.get(tid)?;
        let i = self.by_checkpoint.partition_point(|(id, _)| id < cp);
        let by_cp = self.by_checkpoint.get(i).map(|&(_, at)| at);
        let started = self.commit_started.get(tid).copied();
        match (by_cp, started) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// No poll yet in a partition (within the current assignment), or no furthest poll of a scope.
const NO_OFFSET: i64 = i64::MIN;
/// A reader whose start was not seen yet: its scope is made at its first poll.
const NO_SCOPE: u32 = u32::MAX;

/// One reader's current consumer: its incarnation, its poll-skip scope, and per partition the
/// offset it polled last within the current assignment.
#[derive(Debug)]
struct ReaderState {
    incarnation: u32,
    scope: u32,
    /// By partition: the last offset polled in the current assignment, or [`NO_OFFSET`].
    last: Vec<i64>,
}

impl ReaderState {
    /// A new assignment or a new consumer: order is judged afresh.
    fn reset(&mut self) {
        self.last.iter_mut().for_each(|l| *l = NO_OFFSET);
    }
}

/// One consumer scope's view of one partition, for poll-skip across rebalances and restarts.
#[derive(Debug)]
struct ScopePartition {
    /// A bit per offset of the truth (from its log start): polled by a consumer of the scope, or
    /// already counted as passed over by the within-assignment check.
    covered: Vec<u64>,
    /// The furthest offset a consumer of the scope polled, or [`NO_OFFSET`].
    furthest: i64,
}

impl ScopePartition {
    fn cover(&mut self, from: usize, to: usize) {
        for i in from..to {
            self.covered[i >> 6] |= 1 << (i & 63);
        }
    }

    fn covers(&self, i: usize) -> bool {
        self.covered[i >> 6] & (1 << (i & 63)) != 0
    }
}

/// Who shares a poll-skip scope: the consumer group of `subscribe` readers (Kafka's committed
/// position is the group's), or one `assign` reader across its restarts.
#[derive(Debug)]
struct Scope {
    /// How examples name it.
    name: String,
    /// By partition, made at the scope's first poll there.
    parts: Vec<Option<ScopePartition>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum ScopeKey {
    Group(String),
    Reader(u32),
}

/// Judges read events as they stream in; [`ReadChecker::finish`] gives the report.
///
/// The state is in vectors: by reader (0..count) and by partition (0..n), so a poll costs a few
/// indexed loads, no hashing.
pub struct ReadChecker<'a> {
    truth: &'a mut Truth,
    /// Per transactional id of the truth ([`Truth::tids`]): the earliest its commit could be
    /// issued, or `u64::MAX` when the history does not say.
    earliest: Vec<u64>,
    /// By reader id.
    readers: Vec<ReaderState>,
    /// Offsets with a record the truth does not hold, as the first reader saw it.
    foreign: HashMap<(i32, i64), Option<(u32, u64)>>,
    /// Poll-skip scopes, by key (group name, or reader).
    scopes: Vec<Scope>,
    scope_index: HashMap<ScopeKey, u32>,
    /// From the earliest moment a record's commit could be issued to its first poll.
    lags: Lags,
    report: ReadReport,
}

impl<'a> ReadChecker<'a> {
    /// `history`: the mode's events, for when each transaction could commit.
    pub fn new(truth: &'a mut Truth, history: &[Event]) -> ReadChecker<'a> {
        let bounds = CommitBounds::new(history);
        let earliest = truth.tids.iter().map(|t| bounds.earliest(t).unwrap_or(u64::MAX)).collect();
        ReadChecker {
            truth,
            earliest,
            readers: Vec::new(),
            foreign: HashMap::new(),
            scopes: Vec::new(),
            scope_index: HashMap::new(),
            lags: Lags::new(),
            report: ReadReport::default(),
        }
    }

    pub fn observe(&mut self, e: &ReadEvent) {
        match &e.kind {
            ReadKind::Polled { partition, offset, subtask, seq } => {
                self.report.polls += 1;
                let id = subtask.zip(*seq);
                self.judge_order(e, *partition, *offset);
                self.judge_record(e, *partition, *offset, id);
            }
            ReadKind::Started { group } => {
                self.report.incarnations += 1;
                self.report.readers = self.report.readers.max(e.reader + 1);
                let key = match group {
                    Some(g) => ScopeKey::Group(g.clone()),
                    None => ScopeKey::Reader(e.reader),
                };
                let scope = self.scope(key);
                if let Some(r) = self.reader(e.reader, e.incarnation) {
                    r.scope = scope;
                }
            }
            ReadKind::Assigned { .. } => {
                if let Some(r) = self.reader(e.reader, e.incarnation) {
                    r.reset();
                }
            }
            ReadKind::Stopped { .. } => {}
        }
    }

    /// The reader's state, made on first sight and reset when a new consumer (incarnation) of
    /// it shows up. None for an id no rig gives (past [`MAX_READERS`]).
    fn reader(&mut self, reader: u32, incarnation: u32) -> Option<&mut ReaderState> {
        let i = reader as usize;
        if i >= MAX_READERS {
            return None;
        }
        if self.readers.len() <= i {
            let n = self.truth.parts.len();
            self.readers.resize_with(i + 1, || ReaderState {
                incarnation: u32::MAX,
                scope: NO_SCOPE,
                last: vec![NO_OFFSET; n],
            });
        }
        let r = &mut self.readers[i];
        if r.incarnation != incarnation {
            r.incarnation = incarnation;
            r.reset();
        }
        Some(r)
    }

    /// The index of a scope, made on first sight.
    fn scope(&mut self, key: ScopeKey) -> u32 {
        if let Some(&i) = self.scope_index.get(&key) {
            return i;
        }
        let name = match &key {
            ScopeKey::Group(g) => format!("group {g}"),
            ScopeKey::Reader(r) => format!("reader {r} (all its consumers)"),
        };
        self.scopes.push(Scope { name, parts: Vec::new() });
        let i = (self.scopes.len() - 1) as u32;
        self.scope_index.insert(key, i);
        i
    }

    /// poll-skip within an assignment and nonmonotonic-poll: this poll against the one before it
    /// in the same assignment of the partition to this incarnation; then the poll marked in the
    /// reader's scope, for poll-skip across rebalances and restarts.
    fn judge_order(&mut self, e: &ReadEvent, partition: i32, offset: i64) {
        let Some(p) = usize::try_from(partition).ok().filter(|&p| p < MAX_PARTITIONS) else { return };
        let Some(r) = self.reader(e.reader, e.incarnation) else { return };
        if r.last.len() <= p {
            r.last.resize(p + 1, NO_OFFSET);
        }
        let before = std::mem::replace(&mut r.last[p], offset);
        let mut scope = r.scope;
        if scope == NO_SCOPE {
            // A reader whose start was not recorded (a torn file): its own scope.
            scope = self.scope(ScopeKey::Reader(e.reader));
            self.readers[e.reader as usize].scope = scope;
        }
        let truth = self.truth.parts.get(p).filter(|t| !t.at.is_empty());
        let sp = truth.map(|t| {
            let parts = &mut self.scopes[scope as usize].parts;
            if parts.len() <= p {
                parts.resize_with(p + 1, || None);
            }
            parts[p].get_or_insert_with(|| ScopePartition {
                covered: vec![0; t.at.len().div_ceil(64)],
                furthest: NO_OFFSET,
            })
        });
        if let (Some(t), Some(sp)) = (truth, sp) {
            sp.furthest = sp.furthest.max(offset);
            if let Some(i) = t.index(offset) {
                sp.covered[i >> 6] |= 1 << (i & 63);
            }
        }
        // Consecutive offsets: nothing passed over, nothing gone back (the common case).
        if before == NO_OFFSET || offset == before + 1 {
            return;
        }
        let who = || format!("reader {} (consumer {}) on partition {partition}", e.reader, e.incarnation);
        if offset <= before {
            self.report.nonmonotonic_poll += 1;
            self.report
                .example(NONMONOTONIC_POLL, || format!("{}: offset {offset} polled after offset {before}", who()));
            return;
        }
        let Some(t) = truth else { return };
        let (from, to) = (before + 1, offset);
        let clamp = |o: i64| (o.clamp(t.low, t.position) - t.low) as usize;
        let (a, b) = (clamp(from), clamp(to));
        let mut skipped = (a..b).filter(|&i| t.at[i].tid != NOTHING);
        if let Some(first) = skipped.next() {
            let n = 1 + skipped.count() as u64;
            self.report.poll_skip += n;
            // Counted here: the scope's check at the end must not count them again.
            if let Some(Some(sp)) = self.scopes[scope as usize].parts.get_mut(p) {
                sp.cover(a, b);
            }
            let first = t.low + first as i64;
            self.report.example(POLL_SKIP, || {
                format!("{}: polled offset {before} then {offset}, passing over {n} committed record(s) from offset {first}", who())
            });
        }
    }

    /// G1a, inconsistent-offsets, precommitted-read, and the first sighting for unseen and lag.
    /// The hot path of the check (one call per poll): no allocation unless an anomaly is found.
    fn judge_record(&mut self, e: &ReadEvent, partition: i32, offset: i64, id: Option<(u32, u64)>) {
        let what = |id: Option<(u32, u64)>| match id {
            Some((s, q)) => format!("subtask {s} seq {q}"),
            None => "a record not the run's".to_string(),
        };
        let Some((p, i)) = self.truth.part(partition).and_then(|p| Some((partition as usize, p.index(offset)?))) else {
            self.report.not_judged += 1;
            return;
        };
        let slot = self.truth.parts[p].at[i];
        if slot.tid == NOTHING {
            self.report.g1a += 1;
            let first = *self.foreign.entry((partition, offset)).or_insert(id);
            if first != id {
                self.report.inconsistent_offsets += 1;
            }
            self.report.example(G1A, || {
                format!(
                    "reader {} polled {} at partition {partition} offset {offset}, where nothing was committed (aborted or never committed)",
                    e.reader,
                    what(id)
                )
            });
            return;
        }
        let packed = pack(id);
        if packed != slot.id || packed == WIDE {
            let held = self.truth.id_of(partition, offset, slot);
            if held != id {
                self.report.inconsistent_offsets += 1;
                self.report.example(INCONSISTENT_OFFSETS, || {
                    let held = held.map(|x| what(Some(x))).unwrap_or_else(|| "another value".into());
                    format!(
                        "reader {} polled {} at partition {partition} offset {offset}, which holds {held}",
                        e.reader,
                        what(id)
                    )
                });
                return;
            }
        }
        let earliest = match slot.tid {
            NO_TID => u64::MAX,
            t => self.earliest[t as usize],
        };
        if slot.seen == NOT_SEEN {
            self.truth.parts[p].at[i].seen = SEEN;
            if earliest != u64::MAX {
                self.lags.add(e.wall_ms.saturating_sub(earliest));
            }
        }
        if e.wall_ms < earliest && earliest != u64::MAX {
            self.report.precommitted_read += 1;
            let tid = &self.truth.tids[slot.tid as usize];
            self.report.example(PRECOMMITTED_READ, || {
                format!(
                    "reader {} polled {} at partition {partition} offset {offset} {} ms before transaction {tid} could commit",
                    e.reader,
                    what(id),
                    earliest - e.wall_ms
                )
            });
        }
    }

    /// unseen and the lag of the seen, poll-skip across rebalances and restarts, then the report.
    pub fn finish(self) -> ReadReport {
        let ReadChecker { truth, mut report, scopes, lags, .. } = self;
        for scope in &scopes {
            for (partition, sp) in scope.parts.iter().enumerate() {
                let (Some(sp), Some(t)) = (sp, truth.parts.get(partition)) else { continue };
                if sp.furthest == NO_OFFSET {
                    continue;
                }
                let below = (sp.furthest.clamp(t.low, t.position) - t.low) as usize;
                // Whole words of polled offsets pass at once.
                let mut passed = (0..below.div_ceil(64))
                    .filter(|&w| sp.covered[w] != u64::MAX)
                    .flat_map(|w| w * 64..(w * 64 + 64).min(below))
                    .filter(|&i| !sp.covers(i) && t.at[i].tid != NOTHING);
                let Some(first) = passed.next() else { continue };
                let (n, last) = passed.fold((1u64, first), |(n, _), i| (n + 1, i));
                report.poll_skip += n;
                report.example(POLL_SKIP, || {
                    format!(
                        "{} on partition {partition}: {n} committed record(s) from offset {} to {} below its furthest poll at offset {} polled by none of its consumers: passed over across a rebalance or restart",
                        scope.name,
                        t.low + first as i64,
                        t.low + last as i64,
                        sp.furthest,
                    )
                });
            }
        }
        for (partition, p) in truth.parts.iter().enumerate() {
            for (i, s) in p.at.iter().enumerate() {
                match s.seen {
                    _ if s.tid == NOTHING => {}
                    NOT_SEEN => {
                        report.unseen += 1;
                        let offset = p.low + i as i64;
                        report.example(UNSEEN, || {
                            format!("partition {partition} offset {offset}: committed, never polled")
                        });
                    }
                    _ => {}
                }
            }
        }
        report.lag_ms = lags.lag();
        report
    }
}

/// Judges `readers.jsonl` against the drain: the whole read-side check, offline or online.
pub fn check_reads(
    reads: &std::path::Path,
    partitions: &[PartitionDrain],
    drained: impl FnOnce(&mut dyn FnMut(RecordRef<'_>)) -> Result<(), crate::CheckerError>,
    history: &[Event],
) -> Result<ReadReport, crate::CheckerError> {
    let mut truth = Truth::new(partitions);
    drained(&mut |r| truth.observe(r))?;
    let mut c = ReadChecker::new(&mut truth, history);
    sinkhole_history::reads::read(reads, |e| c.observe(&e)).map_err(|source| crate::CheckerError::Io {
        what: "reading",
        path: reads.to_path_buf(),
        source,
    })?;
    Ok(c.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_model::{SinkMode, Source};

    fn partition(p: i32, position: i64) -> PartitionDrain {
        PartitionDrain { partition: p, low_watermark: 0, high_watermark: position, position, records: 0 }
    }

    /// The truth: partition 0 holds subtask 0's seqs 0.. at the given offsets, by `tid`.
    fn truth(offsets: &[(i64, u64, &str)], position: i64) -> Truth {
        let mut t = Truth::new(&[partition(0, position)]);
        for &(o, q, tid) in offsets {
            let v = record::value("run", 0, q);
            t.observe(RecordRef { partition: 0, offset: o, value: v.as_bytes(), tid: Some(tid) });
        }
        t
    }

    fn ev(wall_ms: u64, kind: EventKind) -> Event {
        Event { wall_ms, mono_us: 0, mode: SinkMode::Legacy, source: Source::Coordinator, kind }
    }

    fn read(reader: u32, incarnation: u32, wall_ms: u64, kind: ReadKind) -> ReadEvent {
        ReadEvent { wall_ms, reader, incarnation, kind }
    }

    fn poll(reader: u32, incarnation: u32, wall_ms: u64, offset: i64, seq: u64) -> ReadEvent {
        let kind = ReadKind::Polled { partition: 0, offset, subtask: Some(0), seq: Some(seq) };
        read(reader, incarnation, wall_ms, kind)
    }

    fn persisted(id: u64) -> EventKind {
        EventKind::CheckpointPersisted { id, path: format!("chk-{id}.json") }
    }

    /// Transaction t1 (checkpoint 1, offsets 0–1) is durable at 1 000 ms; t2 (checkpoint 2, offset
    /// 3, after an abort marker or aborted record at 2) at 5 000 ms.
    fn history() -> Vec<Event> {
        vec![
            ev(10, EventKind::TxnOpened { transactional_id: "t1".into(), checkpoint: 1 }),
            ev(20, EventKind::TxnOpened { transactional_id: "t2".into(), checkpoint: 2 }),
            ev(1_000, persisted(1)),
            ev(5_000, persisted(2)),
        ]
    }

    fn run(t: &mut Truth, events: &[ReadEvent]) -> ReadReport {
        let h = history();
        let mut c = ReadChecker::new(t, &h);
        for e in events {
            c.observe(e);
        }
        c.finish()
    }

    fn started(reader: u32, incarnation: u32) -> [ReadEvent; 2] {
        [
            read(reader, incarnation, 0, ReadKind::Started { group: None }),
            read(reader, incarnation, 0, ReadKind::Assigned { partitions: vec![0] }),
        ]
    }

    #[test]
    fn a_faithful_reader_is_never_flagged_and_its_lag_is_measured() {
        let mut t = truth(&[(0, 0, "t1"), (1, 1, "t1"), (3, 2, "t2")], 4);
        let mut evs = started(0, 0).to_vec();
        evs.extend([poll(0, 0, 1_000, 0, 0), poll(0, 0, 1_500, 1, 1), poll(0, 0, 9_000, 3, 2)]);
        let r = run(&mut t, &evs);
        assert!(r.anomalies().is_empty(), "{r:?}");
        assert_eq!((r.polls, r.unseen, r.readers, r.incarnations), (3, 0, 1, 1));
        assert_eq!(r.lag_ms, Lag { samples: 3, p50: 500, p99: 4_000, max: 4_000 });
    }

    #[test]
    fn an_aborted_record_polled_is_g1a_and_a_different_one_inconsistent() {
        let mut t = truth(&[(0, 0, "t1"), (1, 1, "t1"), (3, 2, "t2")], 4);
        let mut evs = started(0, 0).to_vec();
        evs.extend(started(1, 0));
        // Offset 2 held an aborted record: reader 0 saw seq 9 there, reader 1 seq 8.
        evs.extend([poll(0, 0, 1_500, 2, 9), poll(1, 0, 1_500, 2, 8), poll(1, 0, 9_000, 3, 7)]);
        let r = run(&mut t, &evs);
        assert_eq!(r.g1a, 2);
        assert_eq!(r.inconsistent_offsets, 2, "two readers disagree at 2, reader 1 disagrees with the truth at 3");
        assert!(r.examples[G1A][0].contains("partition 0 offset 2, where nothing was committed"), "{:?}", r.examples);
        assert!(r.examples[INCONSISTENT_OFFSETS][0].contains("which holds subtask 0 seq 2"), "{:?}", r.examples);
    }

    #[test]
    fn a_record_polled_before_its_checkpoint_completed_is_a_precommitted_read() {
        let mut t = truth(&[(0, 0, "t1"), (1, 1, "t1"), (3, 2, "t2")], 4);
        let mut evs = started(0, 0).to_vec();
        evs.extend([poll(0, 0, 1_500, 0, 0), poll(0, 0, 1_500, 1, 1), poll(0, 0, 2_000, 3, 2)]);
        let r = run(&mut t, &evs);
        assert_eq!(r.precommitted_read, 1);
        assert!(r.examples[PRECOMMITTED_READ][0].contains("3000 ms before transaction t2 could commit"));
        // The sink saying it commits t2 earlier moves the bound: a mutant committing before the
        // checkpoint completes is judged by when it committed, not by the checkpoint.
        let mut h = history();
        h.push(ev(1_900, EventKind::CommitStarted { transactional_id: "t2".into(), checkpoint: 2, restored: false }));
        let mut c = ReadChecker::new(&mut t, &h);
        evs.iter().for_each(|e| c.observe(e));
        assert_eq!(c.finish().precommitted_read, 0);
    }

    #[test]
    fn an_id_reused_for_a_later_checkpoint_is_judged_by_its_first() {
        // t1 carries checkpoint 1's transaction and, reused, checkpoint 2's: its records polled
        // after checkpoint 1 was durable are no precommitted read, though checkpoint 2 was not yet.
        let mut t = truth(&[(0, 0, "t1"), (1, 1, "t1")], 2);
        let mut h = history();
        h.push(ev(30, EventKind::TxnOpened { transactional_id: "t1".into(), checkpoint: 2 }));
        let mut evs = started(0, 0).to_vec();
        evs.extend([poll(0, 0, 1_500, 0, 0), poll(0, 0, 1_600, 1, 1)]);
        let mut c = ReadChecker::new(&mut t, &h);
        evs.iter().for_each(|e| c.observe(e));
        let r = c.finish();
        assert_eq!(r.precommitted_read, 0, "{r:?}");
        // Before checkpoint 1 was durable, the same polls are.
        let mut t = truth(&[(0, 0, "t1"), (1, 1, "t1")], 2);
        let mut evs = started(0, 0).to_vec();
        evs.extend([poll(0, 0, 900, 0, 0), poll(0, 0, 1_600, 1, 1)]);
        let mut c = ReadChecker::new(&mut t, &h);
        evs.iter().for_each(|e| c.observe(e));
        assert_eq!(c.finish().precommitted_read, 1);
    }

    #[test]
    fn passing_over_a_committed_record_is_a_poll_skip_and_going_back_nonmonotonic() {
        let mut t = truth(&[(0, 0, "t1"), (1, 1, "t1"), (3, 2, "t2")], 4);
        let mut evs = started(0, 0).to_vec();
        // 0 → 3 passes over offset 1 (committed) and 2 (not): one record skipped; then back to 1.
        evs.extend([poll(0, 0, 9_000, 0, 0), poll(0, 0, 9_000, 3, 2), poll(0, 0, 9_000, 1, 1)]);
        let r = run(&mut t, &evs);
        assert_eq!((r.poll_skip, r.nonmonotonic_poll), (1, 1));
        assert!(r.examples[POLL_SKIP][0]
            .contains("polled offset 0 then 3, passing over 1 committed record(s) from offset 1"));
    }

    #[test]
    fn a_new_assignment_or_a_restarted_consumer_starts_afresh_and_unseen_records_are_counted() {
        let mut t = truth(&[(0, 0, "t1"), (1, 1, "t1"), (3, 2, "t2")], 4);
        let mut evs = started(0, 0).to_vec();
        evs.extend([poll(0, 0, 9_000, 0, 0), poll(0, 0, 9_000, 1, 1)]);
        // A rebalance gives the partition back from its committed offset: a re-read, not a step back.
        evs.push(read(0, 0, 9_000, ReadKind::Assigned { partitions: vec![0] }));
        evs.push(poll(0, 0, 9_000, 1, 1));
        // A restart (a new consumer) reads from the start again.
        evs.extend(started(0, 1));
        evs.push(poll(0, 1, 9_000, 1, 1));
        let r = run(&mut t, &evs);
        assert!(r.anomalies().is_empty(), "{r:?}");
        assert_eq!((r.unseen, r.incarnations), (1, 2));
        assert_eq!(r.examples[UNSEEN], ["partition 0 offset 3: committed, never polled"]);
    }

    fn joined(reader: u32, group: &str) -> ReadEvent {
        read(reader, 0, 0, ReadKind::Started { group: Some(group.into()) })
    }

    fn assigned(reader: u32, incarnation: u32, partitions: Vec<i32>) -> ReadEvent {
        read(reader, incarnation, 0, ReadKind::Assigned { partitions })
    }

    #[test]
    fn a_faithful_handover_within_a_group_is_clean_re_reads_included() {
        let mut t = truth(&[(0, 0, "t1"), (1, 1, "t1"), (3, 2, "t2")], 4);
        let mut evs = vec![joined(0, "g"), assigned(0, 0, vec![0]), poll(0, 0, 9_000, 0, 0), poll(0, 0, 9_000, 1, 1)];
        // Reader 1 joins; the partition moves to it, resuming at the group's committed offset 1
        // (reader 0 had not committed past it): a re-read, then on.
        evs.extend([joined(1, "g"), assigned(0, 0, vec![]), assigned(1, 0, vec![0])]);
        evs.extend([poll(1, 0, 9_000, 1, 1), poll(1, 0, 9_000, 3, 2)]);
        let r = run(&mut t, &evs);
        assert!(r.anomalies().is_empty(), "{r:?}");
        assert_eq!((r.polls, r.unseen), (4, 0));
    }

    #[test]
    fn a_member_resuming_past_committed_records_is_a_poll_skip_counted_once() {
        let mut t = truth(&[(0, 0, "t1"), (1, 1, "t1"), (3, 2, "t2")], 5);
        let mut evs = vec![joined(0, "g"), assigned(0, 0, vec![0]), poll(0, 0, 9_000, 0, 0)];
        // The partition moves to reader 1, which resumes at 3: offset 1 was never polled by the group.
        evs.extend([joined(1, "g"), assigned(0, 0, vec![]), assigned(1, 0, vec![0]), poll(1, 0, 9_000, 3, 2)]);
        let r = run(&mut t, &evs);
        assert_eq!((r.poll_skip, r.unseen), (1, 1), "{r:?}");
        assert_eq!(
            r.examples[POLL_SKIP],
            ["group g on partition 0: 1 committed record(s) from offset 1 to 1 below its furthest poll at offset 3 polled by none of its consumers: passed over across a rebalance or restart"]
        );
    }

    #[test]
    fn an_assign_reader_restarting_mid_partition_is_a_poll_skip_in_its_own_scope() {
        let mut t = truth(&[(0, 0, "t1"), (1, 1, "t1"), (3, 2, "t2")], 4);
        // Reader 0 reads everything; reader 1's first consumer polls nothing, its second starts at
        // offset 1 instead of the log start. Reader 0's polls do not cover reader 1's scope.
        let mut evs = started(0, 0).to_vec();
        evs.extend([poll(0, 0, 9_000, 0, 0), poll(0, 0, 9_000, 1, 1), poll(0, 0, 9_000, 3, 2)]);
        evs.extend(started(1, 0));
        evs.extend(started(1, 1));
        evs.extend([poll(1, 1, 9_000, 1, 1), poll(1, 1, 9_000, 3, 2)]);
        let r = run(&mut t, &evs);
        assert_eq!((r.poll_skip, r.unseen, r.nonmonotonic_poll), (1, 0, 0), "{r:?}");
        assert!(r.examples[POLL_SKIP][0]
            .starts_with("reader 1 (all its consumers) on partition 0: 1 committed record(s) from offset 0 to 0"));
    }

    #[test]
    fn a_skip_within_an_assignment_is_not_counted_again_across_restarts() {
        let mut t = truth(&[(0, 0, "t1"), (1, 1, "t1"), (3, 2, "t2")], 4);
        // 0 → 3 passes over offset 1 within the assignment; a restart then reads only offset 3.
        let mut evs = started(0, 0).to_vec();
        evs.extend([poll(0, 0, 9_000, 0, 0), poll(0, 0, 9_000, 3, 2)]);
        evs.extend(started(0, 1));
        evs.push(poll(0, 1, 9_000, 3, 2));
        let r = run(&mut t, &evs);
        assert_eq!((r.poll_skip, r.unseen), (1, 1), "{r:?}");
        assert_eq!(r.examples[POLL_SKIP].len(), 1);
        assert!(r.examples[POLL_SKIP][0]
            .ends_with("polled offset 0 then 3, passing over 1 committed record(s) from offset 1"));
    }

    #[test]
    fn lags_past_the_dense_buckets_keep_their_quantiles_exact() {
        let mut l = Lags::new();
        [70_000, 5, 100_000, 5, 3].into_iter().for_each(|x| l.add(x));
        // In order 3, 5, 5, 70 000, 100 000: the median is rank 2, the 99th percentile rank 4.
        assert_eq!(l.lag(), Lag { samples: 5, p50: 5, p99: 100_000, max: 100_000 });
        let mut l = Lags::new();
        [80_000, 90_000, 70_000].into_iter().for_each(|x| l.add(x));
        assert_eq!(l.lag(), Lag { samples: 3, p50: 80_000, p99: 90_000, max: 90_000 });
    }

    #[test]
    fn polls_past_the_drain_are_not_judged() {
        let mut t = truth(&[(0, 0, "t1")], 1);
        let mut evs = started(0, 0).to_vec();
        evs.push(poll(0, 0, 9_000, 5, 4));
        let r = run(&mut t, &evs);
        assert_eq!((r.g1a, r.not_judged), (0, 1));
    }
}
