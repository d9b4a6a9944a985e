//! The checker: what the output topic holds, against what the source wrote.
//!
//! Two halves, kept apart so the counting can be re-run offline and tested on
//! synthetic inputs:
//! - I/O ([`drain`], [`store`], [`history`]): read the output topic with
//!   `read_committed` up to the high-water marks, save the records, read the
//!   run's history;
//! - pure ([`check`]): count committed, lost, duplicated and unexpected
//!   records and attribute losses to the transactions the history recorded.
//!
//! Jepsen's shape: the checker never talks to the system under test while it
//! runs; it reads what the run left behind (the topic and `history.jsonl`).
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sinkhole_workloads::model::{record, CommitOutcome, Event, EventKind, Source};

pub mod drain;
pub mod history;
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

/// The counts a verdict is judged on.
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
}

/// One example of an anomaly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// A sentence for the report.
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Examples {
    pub lost: Vec<Example>,
    pub duplicated: Vec<Example>,
    pub unexpected: Vec<Example>,
}

/// A partition whose read_committed position stayed below the high-water
/// mark: an open (hanging) transaction holds back the last stable offset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UncommittedTail {
    pub partition: i32,
    pub position: i64,
    pub high_watermark: i64,
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

/// The history's transactions, for attributing lost records.
#[derive(Debug, Clone, Default)]
pub struct HistoryIndex {
    pub txns: Vec<TxnInfo>,
}

impl HistoryIndex {
    /// From history events: `TxnPrecommitted` committables (with their seq
    /// ranges) and the `CommitFinished` outcome of each.
    pub fn from_events(events: &[Event]) -> HistoryIndex {
        let mut txns: Vec<TxnInfo> = Vec::new();
        let mut outcomes: BTreeMap<(String, u64), CommitOutcome> = BTreeMap::new();
        for e in events {
            match &e.kind {
                EventKind::TxnPrecommitted { committable: c, .. } => {
                    let (Some(first), Some(last)) = (c.first_seq, c.last_seq) else { continue };
                    let subtask = match e.source {
                        Source::Worker { subtask } => Some(subtask),
                        _ => subtask_of_tid(&c.transactional_id),
                    };
                    let Some(subtask) = subtask else { continue };
                    // A restored attempt pre-commits the same range again under a
                    // new id: keep each (tid, checkpoint) once, the latest wins.
                    txns.retain(|t| !(t.transactional_id == c.transactional_id && t.checkpoint == c.checkpoint));
                    txns.push(TxnInfo {
                        subtask,
                        transactional_id: c.transactional_id.clone(),
                        checkpoint: c.checkpoint,
                        first_seq: first,
                        last_seq: last,
                        outcome: None,
                    });
                }
                EventKind::CommitFinished { transactional_id, checkpoint, outcome, .. } => {
                    outcomes.insert((transactional_id.clone(), *checkpoint), outcome.clone());
                }
                _ => {}
            }
        }
        for t in &mut txns {
            t.outcome = outcomes.get(&(t.transactional_id.clone(), t.checkpoint)).cloned();
        }
        HistoryIndex { txns }
    }

    /// Transactions of `subtask` that carried any of seq `a..=b`, in seq order.
    fn covering(&self, subtask: u32, a: u64, b: u64) -> Vec<&TxnInfo> {
        let mut v: Vec<&TxnInfo> =
            self.txns.iter().filter(|t| t.subtask == subtask && t.first_seq <= b && t.last_seq >= a).collect();
        v.sort_by_key(|t| (t.first_seq, t.checkpoint));
        v
    }
}

/// `{prefix}-{subtask}-{checkpoint}` (Flink's INCREMENTING naming) → subtask.
pub fn subtask_of_tid(tid: &str) -> Option<u32> {
    let mut it = tid.rsplitn(3, '-');
    let _checkpoint: u64 = it.next()?.parse().ok()?;
    it.next()?.parse().ok()
}

fn describe_outcome(t: &TxnInfo) -> String {
    let txn = format!("transaction {} (checkpoint {})", t.transactional_id, t.checkpoint);
    match &t.outcome {
        Some(CommitOutcome::Dropped { error }) => format!("{txn}, committable dropped: {error}"),
        Some(CommitOutcome::Failed { error }) => format!("{txn}, commit failed: {error}"),
        Some(CommitOutcome::Committed) => format!("{txn}, reported committed"),
        None => format!("{txn}, no commit recorded"),
    }
}

fn seq_range(a: u64, b: u64) -> String {
    if a == b {
        format!("seq {a}")
    } else {
        format!("seq {a}–{b}")
    }
}

/// The pure check: counts and examples from the drained records, the
/// history's transactions and how far each partition's drain got.
pub fn check(
    expected: &Expected,
    records: &[DrainedRecord],
    history: &HistoryIndex,
    partitions: &[PartitionDrain],
) -> CheckReport {
    let n = expected.records_per_subtask;
    let p = expected.parallelism;
    // Copies seen per (subtask, seq).
    let mut seen: Vec<Vec<u32>> = (0..p).map(|_| vec![0u32; n as usize]).collect();
    let mut ex = Examples::default();
    let mut counts = Counts { expected: u64::from(p) * n, ..Counts::default() };

    for r in records {
        let why = match record::parse_value(&r.value) {
            None => Some(format!("malformed value {:?}", String::from_utf8_lossy(&r.value))),
            Some((run, _, _)) if run != expected.run_id => Some(format!("record of another run ({run})")),
            Some((_, s, _)) if s >= p => Some(format!("subtask {s} out of range (parallelism {p})")),
            Some((_, _, q)) if q >= n => Some(format!("seq {q} out of range (records_per_subtask {n})")),
            Some((_, s, q)) => {
                seen[s as usize][q as usize] += 1;
                None
            }
        };
        if let Some(why) = why {
            counts.unexpected += 1;
            if ex.unexpected.len() < MAX_EXAMPLES {
                let parsed = record::parse_value(&r.value);
                ex.unexpected.push(Example {
                    subtask: parsed.map(|x| x.1),
                    seq: parsed.map(|x| x.2),
                    seq_end: None,
                    partition: Some(r.partition),
                    offset: Some(r.offset),
                    transactional_id: r.tid.clone(),
                    detail: format!("partition {} offset {}: {why}", r.partition, r.offset),
                });
            }
        }
    }

    // Committed, duplicated, and the lost ranges.
    let mut lost_ranges = 0usize;
    let mut dup_keys: Vec<(u32, u64)> = Vec::new();
    for (s, copies) in seen.iter().enumerate() {
        let s = s as u32;
        let mut q = 0u64;
        while q < n {
            let c = copies[q as usize];
            if c > 0 {
                counts.committed += 1;
                if c > 1 {
                    counts.duplicated += u64::from(c - 1);
                    if dup_keys.len() < MAX_EXAMPLES {
                        dup_keys.push((s, q));
                    }
                }
                q += 1;
                continue;
            }
            let start = q;
            while q < n && copies[q as usize] == 0 {
                q += 1;
            }
            let end = q - 1;
            counts.lost += end - start + 1;
            // Split the range by the transactions that carried it.
            let txns = history.covering(s, start, end);
            let mut pieces: Vec<(u64, u64, Option<&TxnInfo>)> = Vec::new();
            let mut cur = start;
            for t in txns {
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
            for (a, b, t) in pieces {
                lost_ranges += 1;
                if ex.lost.len() < MAX_EXAMPLES {
                    let detail = match t {
                        Some(t) => format!("subtask {s} {} lost: {}", seq_range(a, b), describe_outcome(t)),
                        None => format!(
                            "subtask {s} {} lost: in no pre-committed transaction of the history",
                            seq_range(a, b)
                        ),
                    };
                    ex.lost.push(Example {
                        subtask: Some(s),
                        seq: Some(a),
                        seq_end: Some(b),
                        partition: None,
                        offset: None,
                        transactional_id: t.map(|t| t.transactional_id.clone()),
                        detail,
                    });
                }
            }
        }
    }

    // Where each duplicated record's copies are.
    for (s, q) in dup_keys {
        let copies: Vec<&DrainedRecord> = records
            .iter()
            .filter(|r| {
                record::parse_value(&r.value).is_some_and(|(run, rs, rq)| run == expected.run_id && rs == s && rq == q)
            })
            .collect();
        let first = copies[0];
        let places = copies
            .iter()
            .map(|r| format!("p{}@{} ({})", r.partition, r.offset, r.tid.as_deref().unwrap_or("no tid")))
            .collect::<Vec<_>>()
            .join(", ");
        ex.duplicated.push(Example {
            subtask: Some(s),
            seq: Some(q),
            seq_end: None,
            partition: Some(first.partition),
            offset: Some(first.offset),
            transactional_id: first.tid.clone(),
            detail: format!("subtask {s} seq {q} seen {} times: {places}", copies.len()),
        });
    }

    let uncommitted_tail = partitions
        .iter()
        .filter(|d| !d.complete())
        .map(|d| UncommittedTail { partition: d.partition, position: d.position, high_watermark: d.high_watermark })
        .collect();
    CheckReport {
        counts,
        examples: ex,
        lost_ranges,
        uncommitted_tail,
        partitions: partitions.to_vec(),
        records_read: records.len() as u64,
    }
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
    #[error("{}:{line}: {message}", .path.display())]
    History { path: PathBuf, line: usize, message: String },
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
    let index = match &spec.history {
        Some(h) if h.exists() => HistoryIndex::from_events(&history::read(h)?.events),
        _ => HistoryIndex::default(),
    };
    Ok(check(&spec.expected, &drained.records, &index, &drained.partitions))
}

/// Re-checks a saved drain offline (no partition positions: no tail report).
pub fn recheck(dir: &Path, expected: &Expected, history: Option<&Path>) -> Result<CheckReport, CheckerError> {
    let records = store::read(&dir.join(store::FILE_NAME))?;
    let index = match history {
        Some(h) => HistoryIndex::from_events(&history::read(h)?.events),
        None => HistoryIndex::default(),
    };
    Ok(check(expected, &records, &index, &[]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_workloads::model::{Committable, SinkMode, TxnProtocol};

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
        assert_eq!(r.counts, Counts { expected: 20, committed: 20, lost: 0, duplicated: 0, unexpected: 0 });
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
        assert_eq!(r.counts, Counts { expected: 200, committed: 180, lost: 20, duplicated: 0, unexpected: 0 });
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
        assert_eq!(r.counts, Counts { expected: 10, committed: 10, lost: 0, duplicated: 3, unexpected: 0 });
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
        assert_eq!(r.counts, Counts { expected: 5, committed: 5, lost: 0, duplicated: 0, unexpected: 4 });
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
        assert_eq!(r.counts, Counts { expected: 40, committed: 35, lost: 5, duplicated: 2, unexpected: 1 });
        assert_eq!(r.uncommitted_tail, vec![UncommittedTail { partition: 1, position: 31, high_watermark: 40 }]);
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

    #[test]
    fn tids_name_their_subtask() {
        assert_eq!(subtask_of_tid("sinkhole-abc-legacy-3-17"), Some(3));
        assert_eq!(subtask_of_tid("nope"), None);
    }
}
