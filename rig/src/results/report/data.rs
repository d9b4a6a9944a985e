//! What the report draws, taken from one mode's history and latency log:
//! fault bands, per-sample latency points, windowed percentiles, committed
//! throughput and the checkpoint timeline. Pure functions of the events, so
//! the report of a copied results directory is the report of the run.
//!
//! Times are seconds since the mode's first history event (its job start):
//! the modes of a run ran one after the other, so relative time is what lets
//! their plots share an x axis.
use std::collections::{BTreeMap, HashMap};

use sinkhole_workloads::model::{CommitOutcome, Event, EventKind};

use crate::latency::{Latencies, Metric, WINDOW_MS};

/// A shaded interval on the time plots.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    /// Shown on the plot: the fault's name and kind.
    pub label: String,
    pub start_s: f64,
    /// None: the fault is a moment (a kill) or never reported its end.
    pub end_s: Option<f64>,
}

/// A labelled moment on the time plots (a failure detected, a restore).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub at_s: f64,
    pub label: String,
}

/// One mode's history, reduced to what the plots need.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// Wall time (Unix ms) of the first event: the origin of every time axis.
    pub t0_ms: u64,
    /// Seconds from the first to the last event.
    pub duration_s: f64,
    /// Fault intervals, from `FaultStarted` / `FaultEnded` (matched by name).
    pub faults: Vec<Band>,
    /// The job not running: `FailureDetected` to the next `JobStarted`.
    pub down: Vec<Band>,
    pub failures: Vec<Mark>,
    pub restores: Vec<Mark>,
    /// Per-sample latency points (s, µs) by series name, per metric where
    /// the history has one event per sample.
    pub samples: BTreeMap<Metric, Vec<PointSeries>>,
    /// Committed records per one-second bucket (index = second).
    pub committed_per_s: Vec<u64>,
    /// Acknowledged (produced) records per one-second bucket.
    pub acked_per_s: Vec<u64>,
    /// Whether commits could be counted (transactional modes).
    pub has_commits: bool,
    pub checkpoints: Vec<Checkpoint>,
    /// Notable events, in order: (s, text).
    pub log: Vec<(f64, String)>,
}

/// Points of one kind within a metric (e.g. commits that were dropped).
#[derive(Debug, Clone, PartialEq)]
pub struct PointSeries {
    pub name: &'static str,
    pub points: Vec<(f64, u64)>,
}

/// One checkpoint's life, in seconds since the job start.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Checkpoint {
    pub id: u64,
    pub triggered: Option<f64>,
    pub persisted: Option<f64>,
    pub notified: Option<f64>,
    pub aborted: Option<f64>,
    /// The last commit that committed one of its transactions.
    pub committed: Option<f64>,
    /// Commits of its transactions that were dropped or failed.
    pub commit_errors: Vec<f64>,
    /// Restores that started from it.
    pub restored: Vec<f64>,
}

fn secs(e: &Event, t0_ms: u64) -> f64 {
    e.wall_ms.saturating_sub(t0_ms) as f64 / 1000.0
}

impl Timeline {
    pub fn from_events(events: &[Event]) -> Timeline {
        let Some(first) = events.first() else { return Timeline::default() };
        let t0 = events.iter().map(|e| e.wall_ms).min().unwrap_or(first.wall_ms);
        let mut t = Timeline { t0_ms: t0, ..Timeline::default() };
        t.duration_s = events.iter().map(|e| secs(e, t0)).fold(0.0, f64::max);

        let mut open_faults: Vec<(String, f64)> = Vec::new();
        let mut down_since: Option<f64> = None;
        let mut ckpts: BTreeMap<u64, Checkpoint> = BTreeMap::new();
        let mut triggered_mono: HashMap<u64, u64> = HashMap::new();
        // (transactional id, checkpoint) → records of its latest pre-commit.
        let mut precommitted: HashMap<(String, u64), u64> = HashMap::new();
        // Per subtask: records acked since its last commit (one-phase sinks
        // have no committable to read the count from).
        let mut acked_pending: HashMap<u32, u64> = HashMap::new();
        let mut commit_ok: Vec<(f64, u64)> = Vec::new();
        let mut commit_restored: Vec<(f64, u64)> = Vec::new();
        let mut commit_bad: Vec<(f64, u64)> = Vec::new();
        let mut ckpt_ok: Vec<(f64, u64)> = Vec::new();
        let mut ckpt_aborted: Vec<(f64, u64)> = Vec::new();
        let mut flush: Vec<(f64, u64)> = Vec::new();

        let bucket = |v: &mut Vec<u64>, s: f64, n: u64| {
            let i = s.max(0.0) as usize;
            if v.len() <= i {
                v.resize(i + 1, 0);
            }
            v[i] += n;
        };
        for e in events {
            let s = secs(e, t0);
            let worker = match e.source {
                sinkhole_workloads::model::Source::Worker { subtask } => Some(subtask),
                _ => None,
            };
            match &e.kind {
                EventKind::FaultStarted { name, fault, .. } => {
                    open_faults.push((format!("{name} ({fault})"), s));
                    t.log.push((s, format!("fault {name} ({fault}) started")));
                }
                EventKind::FaultEnded { name, fault, .. } => {
                    let label = format!("{name} ({fault})");
                    match open_faults.iter().position(|(l, _)| *l == label) {
                        Some(i) => {
                            let (label, start) = open_faults.remove(i);
                            t.faults.push(Band { label, start_s: start, end_s: Some(s) });
                        }
                        // An end without its start (a torn history): a moment.
                        None => t.faults.push(Band { label, start_s: s, end_s: None }),
                    }
                    t.log.push((s, format!("fault {name} ({fault}) ended")));
                }
                EventKind::FaultSkipped { name, fault, reason } => {
                    t.log.push((s, format!("fault {name} ({fault}) skipped: {reason}")));
                }
                EventKind::FailureDetected { reason, .. } => {
                    down_since.get_or_insert(s);
                    t.failures.push(Mark { at_s: s, label: "failure".into() });
                    t.log.push((s, format!("failure detected: {reason}")));
                }
                EventKind::JobStarted { attempt, restored_from } => {
                    if let Some(from) = down_since.take() {
                        t.down.push(Band { label: "job down".into(), start_s: from, end_s: Some(s) });
                    }
                    if *attempt > 0 {
                        let what = match restored_from {
                            Some(c) => format!("restore from chk {c}"),
                            None => "restart from scratch".to_string(),
                        };
                        t.restores.push(Mark { at_s: s, label: what.clone() });
                        t.log.push((s, format!("job attempt {attempt}: {what}")));
                        if let Some(c) = restored_from {
                            ckpts.entry(*c).or_insert_with(|| Checkpoint { id: *c, ..Default::default() });
                            if let Some(k) = ckpts.get_mut(c) {
                                k.restored.push(s);
                            }
                        }
                    }
                }
                EventKind::JobFinished { outcome, attempts } => {
                    t.log.push((s, format!("job finished: {outcome} ({attempts} attempts)")));
                }
                EventKind::Unsupported { what, error } => {
                    t.log.push((s, format!("unsupported: {what} → {error}")));
                }
                EventKind::CheckpointTriggered { id } => {
                    triggered_mono.insert(*id, e.mono_us);
                    ckpts.entry(*id).or_insert_with(|| Checkpoint { id: *id, ..Default::default() }).triggered =
                        Some(s);
                }
                EventKind::CheckpointPersisted { id, .. } => {
                    if let Some(m) = triggered_mono.remove(id) {
                        ckpt_ok.push((s, e.mono_us.saturating_sub(m)));
                    }
                    ckpts.entry(*id).or_insert_with(|| Checkpoint { id: *id, ..Default::default() }).persisted =
                        Some(s);
                }
                EventKind::CheckpointNotified { id } => {
                    ckpts.entry(*id).or_insert_with(|| Checkpoint { id: *id, ..Default::default() }).notified = Some(s);
                }
                EventKind::CheckpointAborted { id, reason } => {
                    if let Some(m) = triggered_mono.remove(id) {
                        ckpt_aborted.push((s, e.mono_us.saturating_sub(m)));
                    }
                    ckpts.entry(*id).or_insert_with(|| Checkpoint { id: *id, ..Default::default() }).aborted = Some(s);
                    t.log.push((s, format!("checkpoint {id} aborted: {reason}")));
                }
                EventKind::TxnPrecommitted { committable, flush_us } => {
                    flush.push((s, *flush_us));
                    precommitted
                        .insert((committable.transactional_id.clone(), committable.checkpoint), committable.records);
                }
                EventKind::ProduceAcked { records, .. } => {
                    bucket(&mut t.acked_per_s, s, *records);
                    if let Some(w) = worker {
                        *acked_pending.entry(w).or_default() += records;
                    }
                }
                EventKind::CommitFinished { transactional_id, checkpoint, restored, outcome, latency_us } => {
                    t.has_commits = true;
                    let k = ckpts
                        .entry(*checkpoint)
                        .or_insert_with(|| Checkpoint { id: *checkpoint, ..Default::default() });
                    match outcome {
                        CommitOutcome::Committed => {
                            k.committed = Some(s);
                            if *restored {
                                commit_restored.push((s, *latency_us));
                            } else {
                                commit_ok.push((s, *latency_us));
                            }
                            let pending = worker.and_then(|w| acked_pending.remove(&w)).unwrap_or(0);
                            let n =
                                precommitted.get(&(transactional_id.clone(), *checkpoint)).copied().unwrap_or(pending);
                            bucket(&mut t.committed_per_s, s, n);
                        }
                        CommitOutcome::Dropped { error } | CommitOutcome::Failed { error } => {
                            k.commit_errors.push(s);
                            commit_bad.push((s, *latency_us));
                            let how =
                                if matches!(outcome, CommitOutcome::Dropped { .. }) { "dropped" } else { "failed" };
                            t.log.push((
                                s,
                                format!("commit of {transactional_id} (checkpoint {checkpoint}) {how}: {error}"),
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
        // A fault still open at the end (the history stops first): to the end.
        for (label, start) in open_faults {
            t.faults.push(Band { label, start_s: start, end_s: None });
        }
        if let Some(from) = down_since {
            t.down.push(Band { label: "job down".into(), start_s: from, end_s: Some(t.duration_s) });
        }
        let len = t.acked_per_s.len().max(t.committed_per_s.len());
        t.acked_per_s.resize(len, 0);
        t.committed_per_s.resize(len, 0);
        let series = |name, points: Vec<(f64, u64)>| PointSeries { name, points };
        t.samples.insert(
            Metric::Commit,
            vec![
                series("committed", commit_ok),
                series("committed on restore", commit_restored),
                series("dropped / failed", commit_bad),
            ],
        );
        t.samples.insert(Metric::Checkpoint, vec![series("complete", ckpt_ok), series("aborted", ckpt_aborted)]);
        t.samples.insert(Metric::PreCommit, vec![series("flush", flush)]);
        for v in t.samples.values_mut() {
            v.retain(|s| !s.points.is_empty());
        }
        t.samples.retain(|_, v| !v.is_empty());
        t.checkpoints = ckpts.into_values().collect();
        t
    }
}

/// Percentiles of one metric per window of the latency log: (window middle
/// in s since `t0_ms`, p50, p99, max) in µs.
pub fn windows(l: &Latencies, m: Metric, t0_ms: u64) -> Vec<(f64, u64, u64, u64)> {
    let Some(s) = l.get(m) else { return Vec::new() };
    s.windows()
        .filter(|(_, h)| !h.is_empty())
        .map(|(w, h)| {
            let mid = (w + WINDOW_MS / 2).saturating_sub(t0_ms) as f64 / 1000.0;
            (mid, h.value_at_quantile(0.5), h.value_at_quantile(0.99), h.max())
        })
        .collect()
}
