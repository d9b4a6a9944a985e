//! What the report draws, taken from one mode's history and latency log:
//! fault bands, per-sample latency points, windowed percentiles, committed
//! throughput and the checkpoint timeline. Pure functions of the events, so
//! the report of a copied results directory is the report of the run.
//!
//! Times are seconds since the mode's first history event (its job start):
//! the modes of a run ran one after the other, so relative time is what lets
//! their plots share an x axis.
use std::collections::{BTreeMap, HashMap};

use sinkhole_model::{CommitOutcome, Event, EventKind};

use sinkhole_checker::latency::{Latencies, Metric, WINDOW_MS};

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
        let mut r = Reading { t: Timeline { t0_ms: t0, ..Timeline::default() }, ..Reading::default() };
        r.t.duration_s = events.iter().map(|e| secs(e, t0)).fold(0.0, f64::max);
        for e in events {
            r.event(e, secs(e, t0));
        }
        r.finish()
    }
}

/// A timeline while the history is read, with what the events still to
/// come are matched against.
#[derive(Default)]
struct Reading {
    t: Timeline,
    /// Faults started and not ended yet: (label, start).
    open_faults: Vec<(String, f64)>,
    down_since: Option<f64>,
    ckpts: BTreeMap<u64, Checkpoint>,
    triggered_mono: HashMap<u64, u64>,
    /// (transactional id, checkpoint) → records of its latest pre-commit.
    precommitted: HashMap<(String, u64), u64>,
    /// Per subtask: records acked since its last commit (one-phase sinks
    /// have no committable to read the count from).
    acked_pending: HashMap<u32, u64>,
    commit_ok: Vec<(f64, u64)>,
    commit_restored: Vec<(f64, u64)>,
    commit_bad: Vec<(f64, u64)>,
    ckpt_ok: Vec<(f64, u64)>,
    ckpt_aborted: Vec<(f64, u64)>,
    flush: Vec<(f64, u64)>,
}

/// Adds `n` to the one-second bucket of `s`.
fn bucket(v: &mut Vec<u64>, s: f64, n: u64) {
    let i = s.max(0.0) as usize;
    if v.len() <= i {
        v.resize(i + 1, 0);
    }
    v[i] += n;
}

impl Reading {
    /// One event, `s` seconds after the origin.
    fn event(&mut self, e: &Event, s: f64) {
        let worker = match e.source {
            sinkhole_model::Source::Worker { subtask } => Some(subtask),
            _ => None,
        };
        let t = &mut self.t;
        match &e.kind {
            EventKind::FaultStarted { name, fault, .. } => {
                self.open_faults.push((format!("{name} ({fault})"), s));
                t.log.push((s, format!("fault {name} ({fault}) started")));
            }
            EventKind::FaultEnded { name, fault, .. } => self.fault_ended(name, fault, s),
            EventKind::FaultSkipped { name, fault, reason } => {
                t.log.push((s, format!("fault {name} ({fault}) skipped: {reason}")));
            }
            EventKind::FailureDetected { reason, .. } => {
                self.down_since.get_or_insert(s);
                t.failures.push(Mark { at_s: s, label: "failure".into() });
                t.log.push((s, format!("failure detected: {reason}")));
            }
            EventKind::JobStarted { attempt, restored_from } => self.job_started(*attempt, *restored_from, s),
            EventKind::JobFinished { outcome, attempts } => {
                t.log.push((s, format!("job finished: {outcome} ({attempts} attempts)")));
            }
            EventKind::Unsupported { what, error } => {
                t.log.push((s, format!("unsupported: {what} → {error}")));
            }
            EventKind::CheckpointTriggered { id } => {
                self.triggered_mono.insert(*id, e.mono_us);
                self.checkpoint(*id).triggered = Some(s);
            }
            EventKind::CheckpointPersisted { id, .. } => {
                if let Some(m) = self.triggered_mono.remove(id) {
                    self.ckpt_ok.push((s, e.mono_us.saturating_sub(m)));
                }
                self.checkpoint(*id).persisted = Some(s);
            }
            EventKind::CheckpointNotified { id } => self.checkpoint(*id).notified = Some(s),
            EventKind::CheckpointAborted { id, reason } => {
                if let Some(m) = self.triggered_mono.remove(id) {
                    self.ckpt_aborted.push((s, e.mono_us.saturating_sub(m)));
                }
                self.checkpoint(*id).aborted = Some(s);
                self.t.log.push((s, format!("checkpoint {id} aborted: {reason}")));
            }
            EventKind::TxnPrecommitted { committable, flush_us } => {
                self.flush.push((s, *flush_us));
                self.precommitted
                    .insert((committable.transactional_id.clone(), committable.checkpoint), committable.records);
            }
            EventKind::ProduceAcked { records, .. } => {
                bucket(&mut t.acked_per_s, s, *records);
                if let Some(w) = worker {
                    *self.acked_pending.entry(w).or_default() += records;
                }
            }
            EventKind::CommitFinished { transactional_id, checkpoint, restored, outcome, latency_us } => {
                t.has_commits = true;
                match outcome {
                    CommitOutcome::Committed => {
                        self.committed(worker, transactional_id, *checkpoint, *restored, *latency_us, s)
                    }
                    CommitOutcome::Dropped { error } | CommitOutcome::Failed { error } => {
                        let how = if matches!(outcome, CommitOutcome::Dropped { .. }) { "dropped" } else { "failed" };
                        self.commit_error(transactional_id, *checkpoint, how, error, *latency_us, s)
                    }
                }
            }
            _ => {}
        }
    }

    /// The checkpoint `id`, added when first seen.
    fn checkpoint(&mut self, id: u64) -> &mut Checkpoint {
        self.ckpts.entry(id).or_insert_with(|| Checkpoint { id, ..Default::default() })
    }

    /// A fault's end closes the band its start opened (matched by name and kind).
    fn fault_ended(&mut self, name: &str, fault: &str, s: f64) {
        let label = format!("{name} ({fault})");
        match self.open_faults.iter().position(|(l, _)| *l == label) {
            Some(i) => {
                let (label, start) = self.open_faults.remove(i);
                self.t.faults.push(Band { label, start_s: start, end_s: Some(s) });
            }
            // An end without its start (a torn history): a moment.
            None => self.t.faults.push(Band { label, start_s: s, end_s: None }),
        }
        self.t.log.push((s, format!("fault {name} ({fault}) ended")));
    }

    /// A job start ends the time the job was down; a later attempt is a restore (or a restart).
    fn job_started(&mut self, attempt: u32, restored_from: Option<u64>, s: f64) {
        if let Some(from) = self.down_since.take() {
            self.t.down.push(Band { label: "job down".into(), start_s: from, end_s: Some(s) });
        }
        if attempt > 0 {
            let what = match restored_from {
                Some(c) => format!("restore from chk {c}"),
                None => "restart from scratch".to_string(),
            };
            self.t.restores.push(Mark { at_s: s, label: what.clone() });
            self.t.log.push((s, format!("job attempt {attempt}: {what}")));
            if let Some(c) = restored_from {
                self.checkpoint(c).restored.push(s);
            }
        }
    }

    /// A commit that committed: its latency, and its records in the
    /// second's bucket (the pre-committed count, else what the subtask acked
    /// since its last commit).
    fn committed(
        &mut self,
        worker: Option<u32>,
        transactional_id: &str,
        checkpoint: u64,
        restored: bool,
        latency_us: u64,
        s: f64,
    ) {
        self.checkpoint(checkpoint).committed = Some(s);
        if restored {
            self.commit_restored.push((s, latency_us));
        } else {
            self.commit_ok.push((s, latency_us));
        }
        let pending = worker.and_then(|w| self.acked_pending.remove(&w)).unwrap_or(0);
        let n = self.precommitted.get(&(transactional_id.to_string(), checkpoint)).copied().unwrap_or(pending);
        bucket(&mut self.t.committed_per_s, s, n);
    }

    /// A commit that was dropped or failed (`how`).
    fn commit_error(
        &mut self,
        transactional_id: &str,
        checkpoint: u64,
        how: &str,
        error: &str,
        latency_us: u64,
        s: f64,
    ) {
        self.checkpoint(checkpoint).commit_errors.push(s);
        self.commit_bad.push((s, latency_us));
        self.t.log.push((s, format!("commit of {transactional_id} (checkpoint {checkpoint}) {how}: {error}")));
    }

    /// What is still open at the end runs to the end; the samples by metric.
    fn finish(self) -> Timeline {
        let mut t = self.t;
        // A fault still open at the end (the history stops first): to the end.
        for (label, start) in self.open_faults {
            t.faults.push(Band { label, start_s: start, end_s: None });
        }
        if let Some(from) = self.down_since {
            t.down.push(Band { label: "job down".into(), start_s: from, end_s: Some(t.duration_s) });
        }
        let len = t.acked_per_s.len().max(t.committed_per_s.len());
        t.acked_per_s.resize(len, 0);
        t.committed_per_s.resize(len, 0);
        let series = |name, points: Vec<(f64, u64)>| PointSeries { name, points };
        t.samples.insert(
            Metric::Commit,
            vec![
                series("committed", self.commit_ok),
                series("committed on restore", self.commit_restored),
                series("dropped / failed", self.commit_bad),
            ],
        );
        t.samples
            .insert(Metric::Checkpoint, vec![series("complete", self.ckpt_ok), series("aborted", self.ckpt_aborted)]);
        t.samples.insert(Metric::PreCommit, vec![series("flush", self.flush)]);
        for v in t.samples.values_mut() {
            v.retain(|s| !s.points.is_empty());
        }
        t.samples.retain(|_, v| !v.is_empty());
        t.checkpoints = self.ckpts.into_values().collect();
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
