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
//! Pure: it streams read events and drained records in, holds one small entry per committed
//! offset (the truth and who saw it) and one per reader and partition, and is tested on
//! synthetic histories.
use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use sinkhole_history::reads::{ReadEvent, ReadKind};
use sinkhole_model::{record, Event, EventKind};

use crate::count::RecordRef;
use crate::report::{PartitionDrain, MAX_EXAMPLES};

/// The read-side anomalies' names, as the verdict, the report and the matrix show them.
pub const G1A: &str = "G1a";
pub const INCONSISTENT_OFFSETS: &str = "inconsistent-offsets";
pub const PRECOMMITTED_READ: &str = "precommitted-read";
pub const POLL_SKIP: &str = "poll-skip";
pub const NONMONOTONIC_POLL: &str = "nonmonotonic-poll";
pub const UNSEEN: &str = "unseen";

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

    /// Every read-side anomaly by name with its count, zero or not, in the order the report and
    /// the verdict's counts show them (`unseen` is not one).
    pub fn counts(&self) -> [(&'static str, u64); 5] {
        [
            (G1A, self.g1a),
            (INCONSISTENT_OFFSETS, self.inconsistent_offsets),
            (PRECOMMITTED_READ, self.precommitted_read),
            (POLL_SKIP, self.poll_skip),
            (NONMONOTONIC_POLL, self.nonmonotonic_poll),
        ]
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

impl Lag {
    fn of(mut v: Vec<u64>) -> Lag {
        if v.is_empty() {
            return Lag::default();
        }
        v.sort_unstable();
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        Lag { samples: v.len() as u64, p50: at(0.5), p99: at(0.99), max: v[v.len() - 1] }
    }
}

/// A committed record as the truth holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Committed {
    /// (subtask, seq) when the value is the run's; None for another value.
    id: Option<(u32, u64)>,
    /// Index into [`Truth::tids`].
    tid: Option<u32>,
}

/// One partition of the truth: the committed record at each offset below the drain's position.
#[derive(Debug, Default)]
struct PartitionTruth {
    low: i64,
    position: i64,
    at: Vec<Option<Committed>>,
    /// When a reader first polled the record (wall clock, ms).
    first_seen_ms: Vec<Option<u64>>,
}

/// The final drain, indexed by (partition, offset).
#[derive(Debug, Default)]
pub struct Truth {
    parts: BTreeMap<i32, PartitionTruth>,
    tids: Vec<String>,
    tid_index: HashMap<String, u32>,
}

impl Truth {
    /// The truth's extent: each partition from its log start to the drain's position.
    pub fn new(partitions: &[PartitionDrain]) -> Truth {
        let mut t = Truth::default();
        for p in partitions {
            let len = (p.position - p.low_watermark).max(0) as usize;
            t.parts.insert(
                p.partition,
                PartitionTruth {
                    low: p.low_watermark,
                    position: p.position,
                    at: vec![None; len],
                    first_seen_ms: vec![None; len],
                },
            );
        }
        t
    }

    /// One drained record (committed: the drain reads read_committed).
    pub fn observe(&mut self, r: RecordRef<'_>) {
        let tid = r.tid.map(|t| match self.tid_index.get(t) {
            Some(&i) => i,
            None => {
                self.tids.push(t.to_string());
                let i = (self.tids.len() - 1) as u32;
                self.tid_index.insert(t.to_string(), i);
                i
            }
        });
        let id = record::parse_value(r.value).map(|(_, s, q)| (s, q));
        if let Some(p) = self.parts.get_mut(&r.partition) {
            if let Some(slot) = index(p, r.offset) {
                p.at[slot] = Some(Committed { id, tid });
            }
        }
    }
}

fn index(p: &PartitionTruth, offset: i64) -> Option<usize> {
    (offset >= p.low && offset < p.position).then(|| (offset - p.low) as usize)
}

/// The earliest moment (wall clock, ms) the history allows each transaction's commit.
#[derive(Debug, Default)]
struct CommitBounds {
    /// (checkpoint, the earliest a checkpoint at or past it was recorded durable), by checkpoint.
    by_checkpoint: Vec<(u64, u64)>,
    /// Per transactional id: the checkpoint it was opened for.
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
                    b.checkpoint_of.insert(transactional_id.clone(), *checkpoint);
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

/// Where one reader incarnation is in one partition: the assignment it polls under and the
/// offset it polled last.
#[derive(Debug, Clone, Copy)]
struct Position {
    assignment: u32,
    last: i64,
}

/// One consumer scope's view of one partition, for poll-skip across rebalances and restarts.
#[derive(Debug, Default)]
struct ScopePartition {
    /// A bit per offset of the truth (from its log start): polled by a consumer of the scope, or
    /// already counted as passed over by the within-assignment check.
    covered: Vec<u64>,
    /// The furthest offset a consumer of the scope polled.
    furthest: Option<i64>,
}

impl ScopePartition {
    fn cover(&mut self, from: usize, to: usize) {
        if to > from && self.covered.len() * 64 < to {
            self.covered.resize(to.div_ceil(64), 0);
        }
        for i in from..to {
            self.covered[i / 64] |= 1 << (i % 64);
        }
    }

    fn covers(&self, i: usize) -> bool {
        self.covered.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

/// Who shares a poll-skip scope: the consumer group of `subscribe` readers (Kafka's committed
/// position is the group's), or one `assign` reader across its restarts.
#[derive(Debug)]
struct Scope {
    /// How examples name it.
    name: String,
    parts: HashMap<i32, ScopePartition>,
}

/// Judges read events as they stream in; [`ReadChecker::finish`] gives the report.
pub struct ReadChecker<'a> {
    truth: &'a mut Truth,
    /// Per transactional id of the truth ([`Truth::tids`]): the earliest its commit could be issued.
    earliest: Vec<Option<u64>>,
    /// (reader, incarnation) → how many assignments it has had.
    assignments: HashMap<(u32, u32), u32>,
    positions: HashMap<(u32, u32, i32), Position>,
    /// Offsets with a record the truth does not hold, as the first reader saw it.
    foreign: HashMap<(i32, i64), Option<(u32, u64)>>,
    /// Poll-skip scopes, by key (`group` name, or reader), and each reader's current scope.
    scopes: Vec<Scope>,
    scope_index: HashMap<ScopeKey, usize>,
    reader_scope: HashMap<u32, usize>,
    report: ReadReport,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum ScopeKey {
    Group(String),
    Reader(u32),
}

impl<'a> ReadChecker<'a> {
    /// `history`: the mode's events, for when each transaction could commit.
    pub fn new(truth: &'a mut Truth, history: &[Event]) -> ReadChecker<'a> {
        let bounds = CommitBounds::new(history);
        let earliest = truth.tids.iter().map(|t| bounds.earliest(t)).collect();
        ReadChecker {
            truth,
            earliest,
            assignments: HashMap::new(),
            positions: HashMap::new(),
            foreign: HashMap::new(),
            scopes: Vec::new(),
            scope_index: HashMap::new(),
            reader_scope: HashMap::new(),
            report: ReadReport::default(),
        }
    }

    pub fn observe(&mut self, e: &ReadEvent) {
        let key = (e.reader, e.incarnation);
        match &e.kind {
            ReadKind::Started { group } => {
                self.report.incarnations += 1;
                self.report.readers = self.report.readers.max(e.reader + 1);
                let key = match group {
                    Some(g) => ScopeKey::Group(g.clone()),
                    None => ScopeKey::Reader(e.reader),
                };
                let scope = self.scope(key);
                self.reader_scope.insert(e.reader, scope);
            }
            ReadKind::Assigned { .. } => *self.assignments.entry(key).or_default() += 1,
            ReadKind::Polled { partition, offset, subtask, seq } => {
                self.report.polls += 1;
                let id = subtask.zip(*seq);
                self.judge_order(e, *partition, *offset);
                self.judge_record(e, *partition, *offset, id);
                self.cover(e.reader, *partition, *offset, *offset + 1);
                self.reach(e.reader, *partition, *offset);
            }
            ReadKind::Stopped { .. } => {}
        }
    }

    /// The index of a scope, made on first sight.
    fn scope(&mut self, key: ScopeKey) -> usize {
        if let Some(&i) = self.scope_index.get(&key) {
            return i;
        }
        let name = match &key {
            ScopeKey::Group(g) => format!("group {g}"),
            ScopeKey::Reader(r) => format!("reader {r} (all its consumers)"),
        };
        self.scopes.push(Scope { name, parts: HashMap::new() });
        self.scope_index.insert(key, self.scopes.len() - 1);
        self.scopes.len() - 1
    }

    /// Marks offsets `from..to` of the partition as accounted for in the reader's scope: polled, or
    /// already counted as passed over.
    fn cover(&mut self, reader: u32, partition: i32, from: i64, to: i64) {
        let scope = match self.reader_scope.get(&reader) {
            Some(&s) => s,
            // A reader whose start was not recorded (a torn file): its own scope.
            None => {
                let s = self.scope(ScopeKey::Reader(reader));
                self.reader_scope.insert(reader, s);
                s
            }
        };
        let Some(p) = self.truth.parts.get(&partition) else { return };
        let sp = self.scopes[scope].parts.entry(partition).or_default();
        let clamp = |o: i64| (o.clamp(p.low, p.position) - p.low) as usize;
        sp.cover(clamp(from), clamp(to));
    }

    /// The furthest poll of the reader's scope in the partition.
    fn reach(&mut self, reader: u32, partition: i32, offset: i64) {
        if let Some(&s) = self.reader_scope.get(&reader) {
            let sp = self.scopes[s].parts.entry(partition).or_default();
            sp.furthest = Some(sp.furthest.map_or(offset, |f| f.max(offset)));
        }
    }

    /// poll-skip and nonmonotonic-poll: this poll against the one before it in the same
    /// assignment of the partition to this incarnation.
    fn judge_order(&mut self, e: &ReadEvent, partition: i32, offset: i64) {
        let assignment = self.assignments.get(&(e.reader, e.incarnation)).copied().unwrap_or(0);
        let key = (e.reader, e.incarnation, partition);
        let before = self.positions.insert(key, Position { assignment, last: offset });
        let Some(before) = before.filter(|b| b.assignment == assignment) else { return };
        let who = || format!("reader {} (consumer {}) on partition {partition}", e.reader, e.incarnation);
        if offset <= before.last {
            self.report.nonmonotonic_poll += 1;
            self.report.example(NONMONOTONIC_POLL, || {
                format!("{}: offset {offset} polled after offset {}", who(), before.last)
            });
            return;
        }
        let Some(p) = self.truth.parts.get(&partition) else { return };
        let mut skipped = (before.last + 1..offset).filter(|&o| index(p, o).is_some_and(|i| p.at[i].is_some()));
        if let Some(first) = skipped.next() {
            let n = 1 + skipped.count() as u64;
            self.report.poll_skip += n;
            // Counted here: the scope's check at the end must not count them again.
            self.cover(e.reader, partition, first, offset);
            self.report.example(POLL_SKIP, || {
                format!(
                    "{}: polled offset {} then {offset}, passing over {n} committed record(s) from offset {first}",
                    who(),
                    before.last
                )
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
        let Some(p) = self.truth.parts.get_mut(&partition) else {
            self.report.not_judged += 1;
            return;
        };
        let Some(i) = index(p, offset) else {
            self.report.not_judged += 1;
            return;
        };
        let Some(truth) = p.at[i] else {
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
        };
        if truth.id != id {
            self.report.inconsistent_offsets += 1;
            self.report.example(INCONSISTENT_OFFSETS, || {
                let held = truth.id.map(|x| what(Some(x))).unwrap_or_else(|| "another value".into());
                format!(
                    "reader {} polled {} at partition {partition} offset {offset}, which holds {held}",
                    e.reader,
                    what(id)
                )
            });
            return;
        }
        if p.first_seen_ms[i].is_none() {
            p.first_seen_ms[i] = Some(e.wall_ms);
        }
        let Some(t) = truth.tid else { return };
        if let Some(earliest) = self.earliest[t as usize] {
            if e.wall_ms < earliest {
                self.report.precommitted_read += 1;
                let tid = &self.truth.tids[t as usize];
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
    }

    /// unseen and the lag of the seen, poll-skip across rebalances and restarts, then the report.
    pub fn finish(self) -> ReadReport {
        let ReadChecker { truth, earliest, mut report, scopes, .. } = self;
        for scope in &scopes {
            let mut parts: Vec<_> = scope.parts.iter().collect();
            parts.sort_unstable_by_key(|(p, _)| **p);
            for (&partition, sp) in parts {
                let (Some(p), Some(furthest)) = (truth.parts.get(&partition), sp.furthest) else { continue };
                let below = (furthest.clamp(p.low, p.position) - p.low) as usize;
                let mut passed = (0..below).filter(|&i| p.at[i].is_some() && !sp.covers(i));
                let Some(first) = passed.next() else { continue };
                let (n, last) = passed.fold((1u64, first), |(n, _), i| (n + 1, i));
                report.poll_skip += n;
                report.example(POLL_SKIP, || {
                    format!(
                        "{} on partition {partition}: {n} committed record(s) from offset {} to {} below its furthest poll at offset {furthest} polled by none of its consumers: passed over across a rebalance or restart",
                        scope.name,
                        p.low + first as i64,
                        p.low + last as i64,
                    )
                });
            }
        }
        let mut lags = vec![];
        for (&partition, p) in &truth.parts {
            for (i, c) in p.at.iter().enumerate() {
                let Some(c) = c else { continue };
                match p.first_seen_ms[i] {
                    Some(seen) => {
                        if let Some(at) = c.tid.and_then(|t| earliest[t as usize]) {
                            lags.push(seen.saturating_sub(at));
                        }
                    }
                    None => {
                        report.unseen += 1;
                        let offset = p.low + i as i64;
                        report.example(UNSEEN, || {
                            format!("partition {partition} offset {offset}: committed, never polled")
                        });
                    }
                }
            }
        }
        report.lag_ms = Lag::of(lags);
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
    fn polls_past_the_drain_are_not_judged() {
        let mut t = truth(&[(0, 0, "t1")], 1);
        let mut evs = started(0, 0).to_vec();
        evs.push(poll(0, 0, 9_000, 5, 4));
        let r = run(&mut t, &evs);
        assert_eq!((r.g1a, r.not_judged), (0, 1));
    }
}
