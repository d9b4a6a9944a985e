//! Latency measurements: seven metrics per mode, in microseconds, with HdrHistogram.
//!
//! | metric | from | to | measured by |
//! |---|---|---|---|
//! | `produce-ack` | a Produce request sent (wire producer) / a record handed to librdkafka | its ack / delivery report | the worker (`LatencySamples`, one event per barrier) |
//! | `txn-begin` | opening a transaction (InitProducerId of the fresh id included) | begun | the worker (`LatencySamples`) |
//! | `pre-commit` | flush (and prepare) at the barrier | done | `TxnPrecommitted.flush_us`; `LatencySamples` for a sink without committables |
//! | `checkpoint` | `CheckpointTriggered` | `CheckpointPersisted` (complete) | the coordinator's history |
//! | `commit` | EndTxn (commit) started | answered | `CommitFinished.latency_us` |
//! | `visibility` | the record's `sinkhole.produced_us` header | first seen by a read_committed consumer tailing the topic during the run | [`tail`] |
//! | `recovery` | `FailureDetected` | the first committed transaction after the restore (`at-least-once`: the first persisted checkpoint) | the history |
//!
//! Everything but `visibility` is computed from `history.jsonl` after the run
//! ([`Latencies::from_history`]), so an offline re-check gets the same figures;
//! `visibility` comes from the tail and is kept in `<mode>/latency.hlog`.
//! Samples sit in windows of [`WINDOW_MS`] of wall time (when the measured
//! operation ended), which become the intervals of the HdrHistogram interval
//! log `latency.hlog`, tagged `<mode>/<metric>`, readable by HdrHistogram's own
//! tools (`HistogramLogProcessor`, the Rust crate's `IntervalLogIterator`).
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use sinkhole_base::rundir::{ModeDir, RunDir};
use sinkhole_model::{metric, CommitOutcome, Event, EventKind, SinkMode};

pub mod tail;

/// Width of one interval of the log.
pub const WINDOW_MS: u64 = 1000;
/// The interval log's name, in the run directory (every mode) and in each mode's directory (that mode).
pub const FILE_NAME: &str = sinkhole_base::rundir::names::LATENCY;
/// Significant digits of every histogram (the workers' too).
pub const SIGFIG: u8 = sinkhole_workloads::sink::LATENCY_SIGFIG;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    ProduceAck,
    TxnBegin,
    PreCommit,
    Checkpoint,
    Commit,
    Visibility,
    Recovery,
}

impl Metric {
    pub const ALL: [Metric; 7] = [
        Metric::ProduceAck,
        Metric::TxnBegin,
        Metric::PreCommit,
        Metric::Checkpoint,
        Metric::Commit,
        Metric::Visibility,
        Metric::Recovery,
    ];

    pub fn name(&self) -> &'static str {
        match self {
            Metric::ProduceAck => metric::PRODUCE_ACK,
            Metric::TxnBegin => metric::TXN_BEGIN,
            Metric::PreCommit => metric::PRE_COMMIT,
            Metric::Checkpoint => "checkpoint",
            Metric::Commit => "commit",
            Metric::Visibility => "visibility",
            Metric::Recovery => "recovery",
        }
    }

    pub fn parse(s: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == s)
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

pub fn histogram() -> Histogram<u64> {
    Histogram::new(SIGFIG).expect("valid significant digits")
}

/// One metric's samples, in windows of [`WINDOW_MS`] by wall time.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// Window start (Unix ms, a multiple of [`WINDOW_MS`]) → samples ending in it.
    windows: BTreeMap<u64, Histogram<u64>>,
}

impl Series {
    pub fn record(&mut self, wall_ms: u64, value_us: u64) {
        self.record_n(wall_ms, value_us, 1);
    }

    pub fn record_n(&mut self, wall_ms: u64, value_us: u64, count: u64) {
        let w = wall_ms - wall_ms % WINDOW_MS;
        sinkhole_workloads::sink::record_latency(self.windows.entry(w).or_insert_with(histogram), value_us, count);
    }

    /// Adds a whole histogram to the window holding `wall_ms`.
    pub fn add(&mut self, wall_ms: u64, h: &Histogram<u64>) {
        let w = wall_ms - wall_ms % WINDOW_MS;
        let into = self.windows.entry(w).or_insert_with(histogram);
        // Auto-resizing histograms of the same precision always add.
        into.add(h).expect("auto-resizing histogram");
    }

    pub fn merge(&mut self, other: &Series) {
        for (w, h) in &other.windows {
            self.add(*w, h);
        }
    }

    /// Window start (Unix ms) and its samples, in time order.
    pub fn windows(&self) -> impl Iterator<Item = (u64, &Histogram<u64>)> {
        self.windows.iter().map(|(w, h)| (*w, h))
    }

    pub fn total(&self) -> Histogram<u64> {
        let mut t = histogram();
        for h in self.windows.values() {
            t.add(h).expect("auto-resizing histogram");
        }
        t
    }

    pub fn count(&self) -> u64 {
        self.windows.values().map(|h| h.len()).sum()
    }
}

/// p50, p90, p99, p99.9, max and count of one metric (µs), as in `verdict.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    #[serde(rename = "p99.9")]
    pub p99_9: u64,
    pub max: u64,
    pub count: u64,
}

impl Summary {
    pub fn of(h: &Histogram<u64>) -> Summary {
        Summary {
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p99_9: h.value_at_quantile(0.999),
            max: h.max(),
            count: h.len(),
        }
    }
}

/// One mode's metrics.
#[derive(Debug, Clone, Default)]
pub struct Latencies {
    pub metrics: BTreeMap<Metric, Series>,
}

impl Latencies {
    pub fn series(&mut self, m: Metric) -> &mut Series {
        self.metrics.entry(m).or_default()
    }

    pub fn get(&self, m: Metric) -> Option<&Series> {
        self.metrics.get(&m)
    }

    /// Every metric the history holds (all but `visibility`), for one mode.
    pub fn from_history(mode: SinkMode, events: &[Event]) -> Latencies {
        let mut l = Latencies::default();
        // Checkpoint id → trigger time (µs, monotonic).
        let mut triggered: BTreeMap<u64, u64> = BTreeMap::new();
        // The failure being recovered from: its time, and whether the job has
        // restarted since (a commit that was in flight when the failure was
        // detected does not end the recovery).
        let mut failure: Option<(u64, bool)> = None;
        for e in events.iter().filter(|e| e.mode == mode) {
            let mut recovered = false;
            match &e.kind {
                EventKind::LatencySamples { metric, buckets } => {
                    // A metric this rig does not know (a newer worker) is skipped, not misfiled.
                    if let Some(m) = Metric::parse(metric) {
                        let s = l.series(m);
                        for &(v, n) in buckets {
                            s.record_n(e.wall_ms, v, n);
                        }
                    }
                }
                // Flink logs neither a pre-commit's nor a commit's duration: the Flink
                // subject's events carry none, and none is recorded for it.
                EventKind::TxnPrecommitted { flush_us, .. } if mode.rig_job() => {
                    l.series(Metric::PreCommit).record(e.wall_ms, *flush_us)
                }
                EventKind::CommitFinished { latency_us, outcome, .. } => {
                    if mode.rig_job() {
                        l.series(Metric::Commit).record(e.wall_ms, *latency_us);
                    }
                    recovered = mode.transactional() && *outcome == CommitOutcome::Committed;
                }
                EventKind::CheckpointTriggered { id } => {
                    triggered.insert(*id, e.mono_us);
                }
                EventKind::CheckpointAborted { id, .. } => {
                    triggered.remove(id);
                }
                EventKind::CheckpointPersisted { id, .. } => {
                    if let Some(t) = triggered.remove(id) {
                        l.series(Metric::Checkpoint).record(e.wall_ms, e.mono_us.saturating_sub(t));
                    }
                    // at-least-once has no transactions: its flush at a
                    // checkpoint is what makes records durable.
                    recovered = !mode.transactional();
                }
                EventKind::FailureDetected { .. } => {
                    failure.get_or_insert((e.mono_us, false));
                    // Checkpoints in flight die with the job.
                    triggered.clear();
                }
                EventKind::JobStarted { .. } => {
                    if let Some((_, restarted)) = failure.as_mut() {
                        *restarted = true;
                    }
                }
                _ => {}
            }
            if recovered {
                if let Some((at, true)) = failure {
                    l.series(Metric::Recovery).record(e.wall_ms, e.mono_us.saturating_sub(at));
                    failure = None;
                }
            }
        }
        l
    }

    /// One summary per metric that has samples (a metric the mode does not
    /// have, e.g. `commit` for `at-least-once`, is absent, not zero).
    pub fn summaries(&self) -> BTreeMap<String, Summary> {
        self.metrics
            .iter()
            .filter(|(_, s)| s.count() > 0)
            .map(|(m, s)| (m.name().to_string(), Summary::of(&s.total())))
            .collect()
    }

    /// This mode's intervals, tagged `<mode>/<metric>`.
    pub fn intervals(&self, mode: SinkMode) -> Vec<Interval> {
        let mut out = Vec::new();
        for (m, s) in &self.metrics {
            for (w, h) in s.windows() {
                out.push(Interval {
                    tag: format!("{}/{}", mode.name(), m.name()),
                    start_ms: w,
                    duration_ms: WINDOW_MS,
                    histogram: h.clone(),
                });
            }
        }
        out
    }

    /// The intervals of `mode` read back from a log (e.g. to recover
    /// `visibility`, which the history does not hold, in an offline re-check).
    pub fn from_intervals(mode: SinkMode, intervals: &[Interval]) -> Latencies {
        let mut l = Latencies::default();
        for i in intervals {
            let Some((m, metric)) = i.tag.split_once('/') else { continue };
            if m != mode.name() {
                continue;
            }
            if let Some(metric) = Metric::parse(metric) {
                l.series(metric).add(i.start_ms, &i.histogram);
            }
        }
        l
    }
}

/// One interval of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    pub tag: String,
    /// Unix ms.
    pub start_ms: u64,
    pub duration_ms: u64,
    pub histogram: Histogram<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {message}")]
    Format { path: String, message: String },
    #[error(transparent)]
    History(#[from] sinkhole_history::ReadError),
}

/// Writes `intervals` as an HdrHistogram interval log (V2 compressed
/// histograms, the encoding Java's `HistogramLogReader` expects): sorted by
/// time then tag, timestamps relative to the `BaseTime`/`StartTime` header
/// (the first interval), values in µs, the human-readable max column in ms.
pub fn write_log(path: &Path, intervals: &[Interval]) -> Result<(), LogError> {
    let io = |source| LogError::Io { path: path.display().to_string(), source };
    let mut sorted: Vec<&Interval> = intervals.iter().collect();
    sorted.sort_by(|a, b| (a.start_ms, &a.tag).cmp(&(b.start_ms, &b.tag)));
    let base_ms = sorted.first().map(|i| i.start_ms).unwrap_or(0);
    let base = UNIX_EPOCH + Duration::from_millis(base_ms);
    let mut buf = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    {
        let mut w = IntervalLogWriterBuilder::new()
            .add_comment("sinkhole latency log: tags <mode>/<metric>; values in microseconds; max column in ms")
            .with_start_time(base)
            .with_base_time(base)
            .with_max_value_divisor(1000.0)
            .begin_log_with(&mut buf, &mut ser)
            .map_err(io)?;
        for i in sorted {
            let tag = Tag::new(&i.tag).ok_or_else(|| LogError::Format {
                path: path.display().to_string(),
                message: format!("tag {:?} has a character a log tag cannot hold (',', ' ', newline)", i.tag),
            })?;
            w.write_histogram(
                &i.histogram,
                Duration::from_millis(i.start_ms - base_ms),
                Duration::from_millis(i.duration_ms),
                Some(tag),
            )
            .map_err(|e| LogError::Format { path: path.display().to_string(), message: format!("{e:?}") })?;
        }
    }
    std::fs::write(path, buf).map_err(io)
}

/// Reads an interval log back (absolute times from its `BaseTime`, else its `StartTime`).
pub fn read_log(path: &Path) -> Result<Vec<Interval>, LogError> {
    let bytes = std::fs::read(path).map_err(|source| LogError::Io { path: path.display().to_string(), source })?;
    parse_log(&bytes, path)
}

pub fn parse_log(bytes: &[u8], path: &Path) -> Result<Vec<Interval>, LogError> {
    let bad = |message: String| LogError::Format { path: path.display().to_string(), message };
    let mut start = None;
    let mut base = None;
    let mut out = Vec::new();
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(bytes) {
        match entry.map_err(|e| bad(format!("unparsable interval log: {e:?}")))? {
            LogEntry::StartTime(t) => start = Some(t),
            LogEntry::BaseTime(t) => base = Some(t),
            LogEntry::Interval(i) => {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(i.encoded_histogram())
                    .map_err(|e| bad(format!("interval at {:?}: base64: {e}", i.start_timestamp())))?;
                let h: Histogram<u64> = de
                    .deserialize(&mut &raw[..])
                    .map_err(|e| bad(format!("interval at {:?}: histogram: {e:?}", i.start_timestamp())))?;
                let offset = base.or(start).unwrap_or_default();
                out.push(Interval {
                    tag: i.tag().map(|t| t.as_str().to_string()).unwrap_or_default(),
                    start_ms: (offset + i.start_timestamp()).as_millis() as u64,
                    duration_ms: i.duration().as_millis() as u64,
                    histogram: h,
                });
            }
        }
    }
    Ok(out)
}

/// After one mode's job: its latencies from the history plus what the live
/// tail saw, written to `<mode_dir>/latency.hlog` (so an offline re-check can
/// get `visibility` back with [`load_mode`]); returns the summaries for the verdict.
pub fn finish_mode(
    mode: SinkMode,
    mode_dir: &ModeDir,
    history: &Path,
    tail: Option<&tail::TailResult>,
) -> Result<BTreeMap<String, Summary>, LogError> {
    let events = sinkhole_history::read(history)?.events;
    let mut l = Latencies::from_history(mode, &events);
    if let Some(t) = tail {
        l.series(Metric::Visibility).merge(&t.visibility);
    }
    write_log(&mode_dir.latency(), &l.intervals(mode))?;
    Ok(l.summaries())
}

/// One mode's latencies, offline: the history, plus `visibility` from the
/// mode's `latency.hlog` when it exists (the history does not hold it).
pub fn load_mode(mode: SinkMode, mode_dir: &ModeDir) -> Result<Latencies, LogError> {
    let events = sinkhole_history::read(&mode_dir.history())?.events;
    let mut l = Latencies::from_history(mode, &events);
    let log = mode_dir.latency();
    if log.exists() {
        let seen = Latencies::from_intervals(mode, &read_log(&log)?);
        if let Some(v) = seen.get(Metric::Visibility) {
            l.series(Metric::Visibility).merge(v);
        }
    }
    Ok(l)
}

/// `<run_dir>/latency.hlog`: every mode's log merged, one time line (modes
/// ran one after the other). Modes without a log (the rig failed) are skipped.
pub fn write_run_log(run_dir: &RunDir, mode_dirs: &[ModeDir]) -> Result<std::path::PathBuf, LogError> {
    let mut all = Vec::new();
    for d in mode_dirs {
        let p = d.latency();
        if p.exists() {
            all.extend(read_log(&p)?);
        }
    }
    let out = run_dir.latency();
    write_log(&out, &all)?;
    Ok(out)
}

/// The terminal lines of a run, read from each mode's verdict (one line per
/// mode that measured anything).
pub fn render_lines(verdicts: &[(SinkMode, Option<std::path::PathBuf>)]) -> String {
    #[derive(Deserialize)]
    struct OnlyLatency {
        #[serde(default)]
        latency: BTreeMap<String, Summary>,
    }
    let mut out = String::new();
    for (mode, path) in verdicts {
        let Some(path) = path else { continue };
        let Ok(text) = std::fs::read_to_string(path) else { continue };
        let Ok(v) = serde_json::from_str::<OnlyLatency>(&text) else { continue };
        if let Some(line) = render_line(*mode, &v.latency) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// `<mode> latency µs p50/p99/max: commit 2100/9800/15000, visibility …`,
/// metrics in [`Metric::ALL`] order; None when nothing was measured.
pub fn render_line(mode: SinkMode, summaries: &BTreeMap<String, Summary>) -> Option<String> {
    let parts: Vec<String> = Metric::ALL
        .iter()
        .filter_map(|m| summaries.get(m.name()).map(|s| format!("{m} {}/{}/{}", s.p50, s.p99, s.max)))
        .collect();
    if parts.is_empty() {
        None
    } else {
        Some(format!("{} latency µs p50/p99/max: {}", mode.name(), parts.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_model::{Committable, Source, TxnProtocol};

    const T0: u64 = 1_800_000_000_000; // Unix ms, on a window boundary

    /// A history builder: events at (ms since T0), monotonic clock in step.
    struct H(Vec<Event>, SinkMode);

    impl H {
        fn new(mode: SinkMode) -> H {
            H(Vec::new(), mode)
        }
        fn at(&mut self, ms: u64, source: Source, kind: EventKind) -> &mut Self {
            self.0.push(Event { wall_ms: T0 + ms, mono_us: ms * 1000, mode: self.1, source, kind });
            self
        }
        fn coord(&mut self, ms: u64, kind: EventKind) -> &mut Self {
            self.at(ms, Source::Coordinator, kind)
        }
        fn worker(&mut self, ms: u64, kind: EventKind) -> &mut Self {
            self.at(ms, Source::Worker { subtask: 0 }, kind)
        }
    }

    fn commit(checkpoint: u64, latency_us: u64, outcome: CommitOutcome) -> EventKind {
        EventKind::CommitFinished {
            transactional_id: format!("p-0-{checkpoint}"),
            checkpoint,
            restored: false,
            outcome,
            latency_us,
        }
    }

    fn persisted(id: u64) -> EventKind {
        EventKind::CheckpointPersisted { id, path: format!("chk-{id}.json") }
    }

    fn failure() -> EventKind {
        EventKind::FailureDetected { subtask: Some(0), reason: "killed".into() }
    }

    fn started(attempt: u32) -> EventKind {
        EventKind::JobStarted { attempt, restored_from: Some(1) }
    }

    fn counts(l: &Latencies) -> BTreeMap<&'static str, u64> {
        l.metrics.iter().map(|(m, s)| (m.name(), s.count())).filter(|(_, n)| *n > 0).collect()
    }

    #[test]
    fn worker_samples_become_produce_ack_txn_begin_and_pre_commit() {
        let mut h = H::new(SinkMode::Legacy);
        h.worker(100, EventKind::LatencySamples { metric: "produce-ack".into(), buckets: vec![(800, 3), (2000, 1)] })
            .worker(1100, EventKind::LatencySamples { metric: "produce-ack".into(), buckets: vec![(900, 2)] })
            .worker(1100, EventKind::LatencySamples { metric: "txn-begin".into(), buckets: vec![(4000, 1)] })
            .worker(1200, EventKind::LatencySamples { metric: "from-the-future".into(), buckets: vec![(1, 1)] })
            .worker(
                1100,
                EventKind::TxnPrecommitted {
                    committable: Committable {
                        checkpoint: 1,
                        transactional_id: "p-0-1".into(),
                        producer_id: 1,
                        producer_epoch: 0,
                        protocol: TxnProtocol::V2,
                        records: 10,
                        first_seq: Some(0),
                        last_seq: Some(9),
                    },
                    flush_us: 1500,
                },
            );
        let l = Latencies::from_history(SinkMode::Legacy, &h.0);
        assert_eq!(counts(&l), BTreeMap::from([("produce-ack", 6), ("txn-begin", 1), ("pre-commit", 1)]));
        let acks = l.get(Metric::ProduceAck).unwrap();
        // two windows: [T0, T0+1s) and [T0+1s, T0+2s)
        let w: Vec<(u64, u64)> = acks.windows().map(|(w, h)| (w - T0, h.len())).collect();
        assert_eq!(w, vec![(0, 4), (1000, 2)]);
        let s = Summary::of(&acks.total());
        assert_eq!((s.p50, s.max, s.count), (800, 2000, 6));
        assert_eq!(l.get(Metric::PreCommit).unwrap().total().max(), 1500);
    }

    #[test]
    fn checkpoint_is_trigger_to_persisted_and_aborted_ones_are_skipped() {
        let mut h = H::new(SinkMode::TwopcInject);
        h.coord(0, EventKind::CheckpointTriggered { id: 1 })
            .coord(40, persisted(1))
            .coord(1000, EventKind::CheckpointTriggered { id: 2 })
            .coord(1500, EventKind::CheckpointAborted { id: 2, reason: "timeout".into() })
            .coord(1600, persisted(2)) // not after an abort: no sample
            .coord(2000, EventKind::CheckpointTriggered { id: 3 })
            .coord(2300, failure()) // a checkpoint in flight dies with the job
            .coord(2400, persisted(3))
            .coord(3000, EventKind::CheckpointTriggered { id: 4 })
            .coord(3125, persisted(4));
        let l = Latencies::from_history(SinkMode::TwopcInject, &h.0);
        let c = l.get(Metric::Checkpoint).unwrap();
        assert_eq!(c.count(), 2);
        let t = c.total();
        assert!(t.equivalent(t.min(), 40_000) && t.equivalent(t.max(), 125_000), "{} {}", t.min(), t.max());
    }

    #[test]
    fn commit_counts_every_outcome() {
        let mut h = H::new(SinkMode::Legacy);
        h.worker(10, commit(1, 2100, CommitOutcome::Committed))
            .worker(20, commit(2, 9800, CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() }))
            .worker(30, commit(3, 15000, CommitOutcome::Failed { error: "x".into() }));
        let l = Latencies::from_history(SinkMode::Legacy, &h.0);
        let t = l.get(Metric::Commit).unwrap().total();
        let s = Summary::of(&t);
        assert_eq!(s.count, 3);
        assert!(t.equivalent(s.p50, 9800) && t.equivalent(s.max, 15_000), "{s:?}");
    }

    #[test]
    fn recovery_runs_from_the_failure_to_the_first_commit_after_the_restart() {
        let mut h = H::new(SinkMode::Legacy);
        h.coord(0, started(0))
            .coord(1000, failure())
            .coord(1001, failure()) // the same outage seen twice: one recovery
            .worker(1002, commit(1, 10, CommitOutcome::Committed)) // in flight before the restart: not the end
            .coord(1500, EventKind::Restarting { attempt: 1, from_checkpoint: Some(1), delay_ms: 400 })
            .coord(1600, started(1))
            .worker(1700, commit(1, 10, CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() }))
            .worker(2750, commit(2, 10, CommitOutcome::Committed))
            .worker(2800, commit(3, 10, CommitOutcome::Committed))
            .coord(5000, failure())
            .coord(5200, started(2))
            .worker(5300, commit(4, 10, CommitOutcome::Committed))
            .coord(9000, failure()); // the job failed for good: no recovery
        let l = Latencies::from_history(SinkMode::Legacy, &h.0);
        let r = l.get(Metric::Recovery).unwrap();
        let samples: Vec<u64> = r.total().iter_recorded().map(|v| v.value_iterated_to()).collect();
        // 1.75 s to the first committed transaction (a dropped one does not count), then 0.3 s
        assert_eq!(r.count(), 2);
        assert_eq!(samples.len(), 2);
        assert!(samples[0].abs_diff(300_000) < 300, "{samples:?}");
        assert!(samples[1].abs_diff(1_750_000) < 1_750, "{samples:?}");
    }

    #[test]
    fn at_least_once_recovers_at_the_first_persisted_checkpoint() {
        let mut h = H::new(SinkMode::AtLeastOnce);
        h.coord(0, failure())
            .coord(100, started(1))
            .coord(200, EventKind::CheckpointTriggered { id: 2 })
            .coord(900, persisted(2));
        let l = Latencies::from_history(SinkMode::AtLeastOnce, &h.0);
        let r = l.get(Metric::Recovery).unwrap().total();
        assert!(r.len() == 1 && r.equivalent(r.max(), 900_000), "{}", r.max());
        assert!(l.get(Metric::Commit).is_none());
    }

    #[test]
    fn other_modes_events_are_ignored() {
        let mut h = H::new(SinkMode::Kip939);
        h.worker(10, commit(1, 5, CommitOutcome::Committed));
        assert!(Latencies::from_history(SinkMode::Legacy, &h.0).metrics.is_empty());
    }

    #[test]
    fn summaries_and_the_terminal_line() {
        let mut l = Latencies::default();
        for v in 1..=1000 {
            l.series(Metric::Commit).record(T0, v);
        }
        l.series(Metric::Visibility).record(T0, 42_000);
        l.series(Metric::Recovery); // empty: absent from the summary
        let s = l.summaries();
        assert_eq!(s.keys().collect::<Vec<_>>(), vec!["commit", "visibility"]);
        assert_eq!(s["commit"], Summary { p50: 500, p90: 900, p99: 990, p99_9: 999, max: 1000, count: 1000 });
        let json = serde_json::to_value(s["commit"]).unwrap();
        assert_eq!(json["p99.9"], 999);
        assert_eq!(
            render_line(SinkMode::Legacy, &s).unwrap(),
            "legacy latency µs p50/p99/max: commit 500/990/1000, visibility 42015/42015/42015"
        );
        assert_eq!(render_line(SinkMode::Legacy, &BTreeMap::new()), None);
    }

    #[test]
    fn interval_log_round_trip() {
        let mut legacy = Latencies::default();
        legacy.series(Metric::Commit).record(T0 + 10, 2100);
        legacy.series(Metric::Commit).record(T0 + 990, 9800);
        legacy.series(Metric::Commit).record(T0 + 2500, 15_000);
        legacy.series(Metric::Visibility).record_n(T0 + 1200, 50_000, 1000);
        let mut alo = Latencies::default();
        alo.series(Metric::ProduceAck).record(T0 + 1500, 700);
        let mut intervals = legacy.intervals(SinkMode::Legacy);
        intervals.extend(alo.intervals(SinkMode::AtLeastOnce));

        let dir = std::env::temp_dir().join(format!("sinkhole-hlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(FILE_NAME);
        write_log(&path, &intervals).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("#[BaseTime: 1800000000.000"), "{text}");
        assert!(text.contains(",legacy/commit,") || text.contains("Tag=legacy/commit,"), "{text}");

        let back = read_log(&path).unwrap();
        // sorted by time, then tag
        let tags: Vec<(u64, &str, u64)> =
            back.iter().map(|i| (i.start_ms - T0, i.tag.as_str(), i.histogram.len())).collect();
        assert_eq!(
            tags,
            vec![
                (0, "legacy/commit", 2),
                (1000, "at-least-once/produce-ack", 1),
                (1000, "legacy/visibility", 1000),
                (2000, "legacy/commit", 1)
            ]
        );
        assert!(back.iter().all(|i| i.duration_ms == WINDOW_MS));
        let again = Latencies::from_intervals(SinkMode::Legacy, &back);
        assert_eq!(again.summaries(), legacy.summaries());
        assert_eq!(Latencies::from_intervals(SinkMode::AtLeastOnce, &back).summaries(), alo.summaries());

        std::fs::write(&path, b"#[BaseTime: 1.0 (seconds since epoch)]\nTag=x,0.0,1.0,1.0,not-base64!\n").unwrap();
        let e = read_log(&path).unwrap_err();
        assert!(e.to_string().contains(FILE_NAME), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
