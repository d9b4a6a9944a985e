//! The checker benchmark (`sinkhole bench-checker --records N`): N synthetic
//! records of a two-phase job, with one lost transaction and one replayed
//! one injected, counted by the streaming [`Counter`]. Reports records per
//! second of counting and the peak memory the count added, per record.
//!
//! Records are generated in batches into one reused buffer; only the
//! counter's work is timed. Memory is the peak resident set (VmHWM) after
//! the check minus the resident set before the counter was made (the peak
//! is reset first through /proc/self/clear_refs, so generation and the
//! history index are not charged to the counter).
use std::io::Write as _;
use std::time::{Duration, Instant};

use serde::Serialize;
use sinkhole_model::{CommitOutcome, Committable, Event, EventKind, SinkMode, Source, TxnProtocol};

use super::count::{Counter, RecordRef};
use super::reads::{ReadChecker, ReadReport, Truth};
use super::{Counts, Expected, HistoryIndex, PartitionDrain};
use sinkhole_history::reads::{ReadEvent, ReadKind};

/// Records per transaction, and partitions of the synthetic topic.
const TXN: u64 = 1000;
const PARTITIONS: u64 = 8;
const BATCH: usize = 1 << 16;

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub records: u64,
    pub subtasks: u32,
    pub transactions: u64,
    pub check_seconds: f64,
    pub records_per_sec: f64,
    /// Peak resident memory the count added, bytes (None without /proc).
    pub peak_bytes: Option<u64>,
    pub bytes_per_record: Option<f64>,
    pub counts: Counts,
}

fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets VmHWM to the current resident set (Linux ≥ 4.0).
fn reset_peak() -> bool {
    std::fs::OpenOptions::new().write(true).open("/proc/self/clear_refs").and_then(|mut f| f.write_all(b"5")).is_ok()
}

/// Every partition drained to its end offset.
fn drained_to(offsets: &[i64]) -> Vec<PartitionDrain> {
    offsets
        .iter()
        .enumerate()
        .map(|(i, &o)| PartitionDrain {
            partition: i as i32,
            low_watermark: 0,
            high_watermark: o,
            position: o,
            records: 0,
        })
        .collect()
}

/// The peak resident memory above `base` KiB, bytes, when the peak was reset (`measured`).
fn peak_since(measured: bool, base: Option<u64>) -> Option<u64> {
    match (measured, base, status_kib("VmHWM:")) {
        (true, Some(b), Some(h)) => Some(h.saturating_sub(b) * 1024),
        _ => None,
    }
}

fn tid(s: u32, cp: u64) -> String {
    format!("sinkhole-bench0-legacy-{s}-{cp}")
}

/// The history of the synthetic job: every transaction opened, pre-committed
/// and committed, except subtask 0's fifth (dropped, and its records lost);
/// subtask 1's eighth is replayed at the end under a new transaction.
fn history(p: u32, n: u64) -> Vec<Event> {
    let ev = |s: u32, kind| Event {
        wall_ms: 0,
        mono_us: 0,
        mode: SinkMode::Legacy,
        source: Source::Worker { subtask: s },
        kind,
    };
    let mut out = Vec::new();
    let txns = n.div_ceil(TXN);
    let mut add = |s: u32, cp: u64, a: u64, b: u64, outcome: CommitOutcome| {
        out.push(ev(s, EventKind::TxnOpened { transactional_id: tid(s, cp), checkpoint: cp }));
        let committable = Committable {
            checkpoint: cp,
            transactional_id: tid(s, cp),
            producer_id: i64::from(s),
            producer_epoch: 0,
            protocol: TxnProtocol::V2,
            records: b - a + 1,
            first_seq: Some(a),
            last_seq: Some(b),
        };
        out.push(ev(s, EventKind::TxnPrecommitted { committable, flush_us: 1 }));
        out.push(ev(
            s,
            EventKind::CommitFinished {
                transactional_id: tid(s, cp),
                checkpoint: cp,
                restored: false,
                outcome,
                latency_us: 1,
            },
        ));
    };
    for k in 0..txns {
        for s in 0..p {
            let outcome = if s == 0 && k == 4 {
                CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() }
            } else {
                CommitOutcome::Committed
            };
            add(s, k + 1, k * TXN, ((k + 1) * TXN).min(n) - 1, outcome);
        }
    }
    if p > 1 && txns > 8 {
        add(1, txns + 1, 7 * TXN, 8 * TXN - 1, CommitOutcome::Committed);
    }
    out
}

/// Generates records in batches (values in one buffer) and times the counter on each batch.
struct Gen {
    values: Vec<u8>,
    /// (partition, offset, value end, transaction index)
    recs: Vec<(i32, i64, usize, usize)>,
    offsets: [i64; PARTITIONS as usize],
    timed: Duration,
    run_id: &'static str,
}

impl Gen {
    fn emit(&mut self, c: &mut Counter<'_>, tids: &[String], s: u32, q: u64, t: usize) {
        let part = (q % PARTITIONS) as usize;
        let _ = write!(self.values, "{}:{s}:{q}", self.run_id);
        self.recs.push((part as i32, self.offsets[part], self.values.len(), t));
        self.offsets[part] += 1;
        if self.recs.len() == BATCH {
            self.flush(c, tids);
        }
    }

    fn flush(&mut self, c: &mut Counter<'_>, tids: &[String]) {
        let t0 = Instant::now();
        let mut start = 0;
        for &(partition, offset, end, t) in &self.recs {
            c.observe(RecordRef { partition, offset, value: &self.values[start..end], tid: Some(&tids[t]) });
            start = end;
        }
        self.timed += t0.elapsed();
        self.values.clear();
        self.recs.clear();
    }
}

pub fn run(records: u64, subtasks: u32) -> BenchReport {
    let p = subtasks.max(1);
    let n = (records / u64::from(p)).max(1);
    let run_id = "bench-run";
    let events = history(p, n);
    let index = HistoryIndex::from_events(&events);
    let txns = n.div_ceil(TXN);
    // Transaction k of subtask s at k * p + s; the replay last.
    let tids: Vec<String> =
        (0..txns).flat_map(|k| (0..p).map(move |s| tid(s, k + 1))).chain([tid(1, txns + 1)]).collect();
    let expected = Expected { run_id: run_id.into(), parallelism: p, records_per_subtask: n };
    let mut g = Gen {
        values: Vec::with_capacity(BATCH * 24),
        recs: Vec::with_capacity(BATCH),
        offsets: [0; PARTITIONS as usize],
        timed: Duration::ZERO,
        run_id,
    };

    let measured = reset_peak();
    let base = status_kib("VmRSS:");
    let mut c = Counter::new(&expected, &index);
    let mut produced = 0u64;
    for k in 0..txns {
        for s in 0..p {
            if s == 0 && k == 4 {
                continue;
            }
            for q in k * TXN..((k + 1) * TXN).min(n) {
                g.emit(&mut c, &tids, s, q, (k * u64::from(p) + u64::from(s)) as usize);
                produced += 1;
            }
        }
    }
    if p > 1 && txns > 8 {
        for q in 7 * TXN..8 * TXN {
            g.emit(&mut c, &tids, 1, q, tids.len() - 1);
            produced += 1;
        }
    }
    g.flush(&mut c, &tids);
    let (offsets, mut timed) = (g.offsets, g.timed);
    let t0 = Instant::now();
    let parts = drained_to(&offsets);
    let report = c.finish(&parts);
    timed += t0.elapsed();
    let peak = peak_since(measured, base);
    let secs = timed.as_secs_f64();
    BenchReport {
        records: produced,
        subtasks: p,
        transactions: index.candidates.len() as u64,
        check_seconds: secs,
        records_per_sec: produced as f64 / secs.max(1e-9),
        peak_bytes: peak,
        bytes_per_record: peak.map(|b| b as f64 / produced as f64),
        counts: report.counts,
    }
}

/// The read-side check on synthetic polls: one reader polls the same job's records (every
/// partition in offset order), plus the records of an aborted transaction (G1a) and less one
/// committed record it passes over (poll-skip, unseen).
#[derive(Debug, Clone, Serialize)]
pub struct ReadBench {
    pub polls: u64,
    /// Indexing the drain (the truth) and judging every poll.
    pub check_seconds: f64,
    pub polls_per_sec: f64,
    pub peak_bytes: Option<u64>,
    pub bytes_per_poll: Option<f64>,
    pub report: ReadReport,
}

/// A record of the synthetic log, in offset order per partition.
struct Laid {
    partition: i32,
    offset: i64,
    subtask: u32,
    seq: u64,
    /// Index of its transaction in the transactional ids.
    txn: usize,
    committed: bool,
}

/// The job's records laid out on the partitions, and each partition's end offset.
fn read_layout(p: u32, n: u64) -> (Vec<Laid>, [i64; PARTITIONS as usize]) {
    let mut out = Vec::with_capacity((n * u64::from(p)) as usize);
    let mut offsets = [0i64; PARTITIONS as usize];
    for k in 0..n.div_ceil(TXN) {
        for s in 0..p {
            for q in k * TXN..((k + 1) * TXN).min(n) {
                let part = (q % PARTITIONS) as usize;
                let t = (k * u64::from(p) + u64::from(s)) as usize;
                let committed = !(s == 0 && k == 4);
                out.push(Laid { partition: part as i32, offset: offsets[part], subtask: s, seq: q, txn: t, committed });
                offsets[part] += 1;
            }
        }
    }
    (out, offsets)
}

pub fn run_reads(records: u64, subtasks: u32) -> ReadBench {
    let p = subtasks.max(1);
    let n = (records / u64::from(p)).max(1);
    let txns = n.div_ceil(TXN);
    let tids: Vec<String> = (0..txns).flat_map(|k| (0..p).map(move |s| tid(s, k + 1))).collect();
    // Checkpoint k durable at k ms; every poll after it, so no precommitted read.
    let mut events: Vec<Event> = (1..=txns)
        .map(|k| Event {
            wall_ms: k,
            mono_us: 0,
            mode: SinkMode::Legacy,
            source: Source::Coordinator,
            kind: EventKind::CheckpointPersisted { id: k, path: String::new() },
        })
        .collect();
    events.extend(tids.iter().enumerate().map(|(i, t)| Event {
        wall_ms: 0,
        mono_us: 0,
        mode: SinkMode::Legacy,
        source: Source::Worker { subtask: (i as u64 % u64::from(p)) as u32 },
        kind: EventKind::TxnOpened { transactional_id: t.clone(), checkpoint: i as u64 / u64::from(p) + 1 },
    }));
    let (layout, offsets) = read_layout(p, n);
    let parts = drained_to(&offsets);
    let skipped = layout.iter().position(|r| r.committed && r.offset > 10).unwrap_or(0);
    let committed: Vec<usize> = (0..layout.len()).filter(|&i| layout[i].committed).collect();
    let measured = reset_peak();
    let base = status_kib("VmRSS:");
    let mut timed = Duration::ZERO;
    let mut truth = Truth::new(&parts);
    // The drained records, a batch at a time in one reused buffer (only indexing them is timed).
    let (mut values, mut ends): (Vec<u8>, Vec<(usize, usize)>) =
        (Vec::with_capacity(BATCH * 24), Vec::with_capacity(BATCH));
    for chunk in committed.chunks(BATCH) {
        values.clear();
        ends.clear();
        for &i in chunk {
            let _ = write!(values, "bench-run:{}:{}", layout[i].subtask, layout[i].seq);
            ends.push((i, values.len()));
        }
        let t0 = Instant::now();
        let mut start = 0;
        for &(i, end) in &ends {
            let r = &layout[i];
            truth.observe(RecordRef {
                partition: r.partition,
                offset: r.offset,
                value: &values[start..end],
                tid: Some(&tids[r.txn]),
            });
            start = end;
        }
        timed += t0.elapsed();
    }
    let mut c = ReadChecker::new(&mut truth, &events);
    let mut batch: Vec<ReadEvent> = Vec::with_capacity(BATCH);
    let mut polls = 0u64;
    let mut judge = |batch: &mut Vec<ReadEvent>, c: &mut ReadChecker<'_>| {
        let t0 = Instant::now();
        batch.iter().for_each(|e| c.observe(e));
        timed += t0.elapsed();
        batch.clear();
    };
    batch.push(ReadEvent { wall_ms: 0, reader: 0, incarnation: 0, kind: ReadKind::Started { group: None } });
    batch.push(ReadEvent {
        wall_ms: 0,
        reader: 0,
        incarnation: 0,
        kind: ReadKind::Assigned { partitions: (0..PARTITIONS as i32).collect() },
    });
    for (i, r) in layout.iter().enumerate().filter(|(i, _)| *i != skipped) {
        let kind =
            ReadKind::Polled { partition: r.partition, offset: r.offset, subtask: Some(r.subtask), seq: Some(r.seq) };
        batch.push(ReadEvent { wall_ms: txns + 1 + i as u64 / 1_000_000, reader: 0, incarnation: 0, kind });
        polls += 1;
        if batch.len() == BATCH {
            judge(&mut batch, &mut c);
        }
    }
    judge(&mut batch, &mut c);
    let t0 = Instant::now();
    let report = c.finish();
    timed += t0.elapsed();
    let peak = peak_since(measured, base);
    let secs = timed.as_secs_f64();
    ReadBench {
        polls,
        check_seconds: secs,
        polls_per_sec: polls as f64 / secs.max(1e-9),
        peak_bytes: peak,
        bytes_per_poll: peak.map(|b| b as f64 / polls as f64),
        report,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_bench_finds_what_it_injected() {
        let r = run(40_000, 4);
        assert_eq!(r.records, 40_000 - TXN + TXN);
        assert_eq!(r.counts.lost, TXN);
        assert_eq!(r.counts.duplicated, TXN);
        // One step back per partition where the replay starts.
        assert_eq!(r.counts.nonmonotonic, PARTITIONS);
        assert_eq!((r.counts.aborted_read, r.counts.torn_transaction, r.counts.unexpected), (0, 0, 0));
        assert!(r.records_per_sec > 0.0);
    }

    #[test]
    fn small_read_bench_finds_what_it_injected() {
        let r = run_reads(40_000, 4);
        // Every record polled once but one; the aborted transaction's records among them.
        assert_eq!(r.polls, 40_000 - 1);
        assert_eq!(r.report.g1a, TXN);
        assert_eq!((r.report.poll_skip, r.report.unseen), (1, 1));
        assert!(r.report.anomalies().iter().all(|(k, _)| *k == "G1a" || *k == "poll-skip"), "{:?}", r.report);
        assert!(r.polls_per_sec > 0.0);
    }
}
