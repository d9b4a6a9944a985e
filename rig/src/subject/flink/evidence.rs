//! Flink's log lines into the rig's history and the nemesis' notices: the same typed events
//! the rig's own job writes, so the checker, the verdict and the report read both alike.
//!
//! - The JobManager's `Triggering checkpoint N … @ TS` → `checkpoint-triggered` (stamped TS);
//!   `Completed checkpoint N` → `checkpoint-persisted` with the retained `chk-N` directory
//!   (its `_metadata` is written before the line); an expired or declined one → `checkpoint-aborted`.
//! - The job's `sinkhole checkpoint N subtask I source S first_seq A next_seq K records C` →
//!   `checkpoint-acked` and `txn-precommitted`: the committable of checkpoint N's transaction,
//!   `{prefix}-{I}-{N}` under INCREMENTING (POOLING: the id the writer's `Prepare` line named
//!   on the same task thread just before), carrying S's seq A..K-1 — what a lost range is
//!   attributed to.
//! - KafkaCommitter: `Committing Kafka transaction X` → `commit-started` (restored when the
//!   producer was resumed for it, `Attempting to resume transaction X`); `Unable to commit
//!   transaction (…X…) because …` with the exception on the next line → `commit-finished`,
//!   dropped, with the logged error. Under Transactions V2 that line also appears for a
//!   transaction whose commit had succeeded (the resumed producer's EndTxn v4 carries the
//!   pre-commit epoch, and the broker answers PRODUCER_FENCED): it is evidence, not a count;
//!   the verdict rests on records really missing. A commit whose task thread went on to its
//!   next snapshot (or the job finished) without such a line returned without an error →
//!   `commit-finished`, committed.
//! - The job's provenance lines and the TaskManager's `Classpath:` line → notes: which jar
//!   KafkaSink was loaded from, with its SHA-256, against the jar the run put there.
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use sinkhole_model::{CommitOutcome, Committable, EventKind, Source, TxnProtocol};
use tokio::sync::mpsc;

use super::logs::{parse, Event, Line, LogLine};
use super::Seen;
use crate::subject::{JobEvent, Notice};
use sinkhole_scenario::Naming;

/// A moment given as Unix milliseconds (Flink's clock), as an `Instant` of this process.
pub fn instant_at(wall_ms: u64) -> Instant {
    let now_ms = sinkhole_base::utc::now_ms();
    let now = Instant::now();
    now.checked_sub(std::time::Duration::from_millis(now_ms.saturating_sub(wall_ms))).unwrap_or(now)
}

/// What the job loop needs to hear of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// The job's tasks are being restored from this checkpoint (a Flink restart or a resubmission).
    Restored {
        job: String,
        id: u64,
    },
    /// The current job switched to this state.
    JobState {
        to: String,
    },
    Completed {
        id: u64,
    },
}

/// Where a provenance line says a class came from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct Loaded {
    pub class: String,
    pub jar: String,
    pub sha256: String,
}

#[derive(Debug, Default)]
struct Thread {
    /// The committable the writer prepared last (tid, producer id, epoch).
    prepared: Option<(String, i64, i16)>,
    /// Ids whose producer was resumed (a restored commit).
    resumed: HashSet<String>,
    /// Commits started and not yet settled: (tid, checkpoint, restored, started).
    committing: Vec<(String, u64, bool, Instant)>,
}

/// The job's `sinkhole checkpoint N subtask I source S first_seq A next_seq K records C` line.
struct Snapshot {
    id: u64,
    subtask: u32,
    /// S: the source subtask whose seqs A..K-1 these are (I when the line names none).
    logical: Option<u32>,
    first_seq: u64,
    next_seq: u64,
    records: u64,
}

/// A dropped commit waiting for its exception line.
#[derive(Debug)]
struct Drop {
    tid: String,
    checkpoint: u64,
    restored: bool,
    subtask: u32,
    level: String,
    because: String,
    at: Instant,
    started: Option<Instant>,
    failover: bool,
}

/// The history and notices from Flink's lines.
pub struct Evidence {
    history: sinkhole_history::Writer,
    notices: mpsc::UnboundedSender<Notice>,
    seen: Arc<Mutex<Seen>>,
    prefix: String,
    naming: Naming,
    protocol: TxnProtocol,
    checkpoints_dir: std::path::PathBuf,
    /// The job id whose JobManager lines count (older jobs' lines are history already).
    pub job: Option<String>,
    threads: HashMap<String, Thread>,
    tid_checkpoint: HashMap<String, u64>,
    /// Checkpoint → its committables (id → producer id, epoch), from the writer's Prepare lines.
    pub precommitted: BTreeMap<u64, super::lingering::Precommitted>,
    notified: BTreeSet<u64>,
    pending_drop: Option<Drop>,
    pub dropped: u64,
    pub loaded: BTreeSet<Loaded>,
    /// TaskManager log index → whether its `Classpath:` line named the connector jar expected.
    pub classpath: BTreeMap<usize, bool>,
    /// The connector jar's file name on the classpath (what the `Classpath:` line must hold).
    pub connector_jar_name: String,
    /// The checkpoint the job's tasks were restored from: a commit of it or an earlier one
    /// is a recovery commit (KafkaCommitter logs "Committing" before it resumes the producer).
    pub restored_from: Option<u64>,
    /// When the tasks were last killed (Unix ms): a line written before it, read after it,
    /// opens nothing (a restored job's threads have the same names).
    gone_at_ms: u64,
}

/// `{prefix}-{subtask}-{n}` (both namings) → subtask.
fn subtask_of(tid: &str) -> Option<u32> {
    let mut it = tid.rsplitn(3, '-');
    it.next()?;
    it.next()?.parse().ok()
}

impl Evidence {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        history: sinkhole_history::Writer,
        notices: mpsc::UnboundedSender<Notice>,
        seen: Arc<Mutex<Seen>>,
        prefix: String,
        naming: Naming,
        protocol: TxnProtocol,
        checkpoints_dir: std::path::PathBuf,
        connector_jar_name: String,
    ) -> Evidence {
        Evidence {
            history,
            notices,
            seen,
            prefix,
            naming,
            protocol,
            checkpoints_dir,
            job: None,
            threads: HashMap::new(),
            tid_checkpoint: HashMap::new(),
            precommitted: BTreeMap::new(),
            notified: BTreeSet::new(),
            pending_drop: None,
            dropped: 0,
            loaded: BTreeSet::new(),
            classpath: BTreeMap::new(),
            connector_jar_name,
            restored_from: None,
            gone_at_ms: 0,
        }
    }

    fn record(&self, at: Instant, source: Source, kind: EventKind) -> anyhow::Result<()> {
        self.history.record_at(at, source, kind)?;
        Ok(())
    }

    fn notice(&self, at: Instant, event: JobEvent) {
        let _ = self.notices.send(Notice { at, event, hold: None });
    }

    fn current(&self, job: &str) -> bool {
        self.job.as_deref() == Some(job)
    }

    /// One line of log `source` (0: the JobManager's; k+1: TaskManager k's).
    pub fn on_line(&mut self, source: usize, line: Line) -> anyhow::Result<Option<Heard>> {
        match line {
            Line::Cont(text) => {
                if let Some(d) = self.pending_drop.take() {
                    self.settle_drop(d, Some(text.trim()))?;
                }
                Ok(None)
            }
            Line::Record(r) => {
                if let Some(d) = self.pending_drop.take() {
                    self.settle_drop(d, None)?;
                }
                let Some(e) = parse(&r) else { return Ok(None) };
                self.on_event(source, &r, e)
            }
        }
    }

    /// A dropped commit seen more than `after` ago is written even without its exception line.
    pub fn flush(&mut self, after: std::time::Duration) -> anyhow::Result<()> {
        if self.pending_drop.as_ref().is_some_and(|d| d.at.elapsed() >= after) {
            let d = self.pending_drop.take().expect("checked above");
            self.settle_drop(d, None)?;
        }
        Ok(())
    }

    fn on_event(&mut self, source: usize, r: &LogLine, e: Event) -> anyhow::Result<Option<Heard>> {
        let at = instant_at(r.wall_ms);
        match e {
            Event::Triggered { id, at_ms, job } if self.current(&job) => {
                let at = instant_at(at_ms);
                self.record(at, Source::Coordinator, EventKind::CheckpointTriggered { id })?;
                self.notice(at, JobEvent::CheckpointTriggered { id });
            }
            Event::Completed { id, job, .. } if self.current(&job) => {
                let path = self.checkpoints_dir.join(&job).join(format!("chk-{id}"));
                self.record(
                    at,
                    Source::Coordinator,
                    EventKind::CheckpointPersisted { id, path: path.display().to_string() },
                )?;
                self.notice(at, JobEvent::CheckpointPersisted { id });
                return Ok(Some(Heard::Completed { id }));
            }
            Event::Aborted { id, reason } if source == 0 => {
                self.record(at, Source::Coordinator, EventKind::CheckpointAborted { id, reason })?;
            }
            Event::Restored { job, id } if source == 0 => return Ok(Some(Heard::Restored { job, id })),
            Event::JobState { job, to, .. } if self.current(&job) => return Ok(Some(Heard::JobState { to })),
            Event::Snapshot { id, subtask, source: logical, first_seq, next_seq, records } => {
                let snap = Snapshot { id, subtask, logical, first_seq, next_seq, records };
                self.on_snapshot(&r.thread, at, snap)?;
            }
            Event::Prepared { tid, producer_id, epoch } => {
                self.threads.entry(r.thread.clone()).or_default().prepared = Some((tid, producer_id, epoch));
            }
            Event::Resuming { tid } => {
                self.threads.entry(r.thread.clone()).or_default().resumed.insert(tid);
            }
            Event::Committing { tid } => self.on_committing(r, at, tid)?,
            Event::CommitDropped { tid, because } => self.on_commit_dropped(r, at, tid, because, false),
            Event::CommitFailed { tid } => {
                self.on_commit_dropped(r, at, tid, "of an error: data has been potentially lost".into(), true)
            }
            Event::CommitRetry { tid } => {
                let text = format!("KafkaCommitter: retriable exception while committing {tid}; retried later");
                self.record(at, Source::Coordinator, EventKind::Note { text })?;
            }
            Event::Provenance { class, jar, sha256 } => {
                let l = Loaded { class, jar, sha256 };
                if self.loaded.insert(l.clone()) {
                    let text = format!(
                        "provenance (TaskManager log {source}): {} loaded from {} sha256 {}",
                        l.class, l.jar, l.sha256
                    );
                    self.record(at, Source::Coordinator, EventKind::Note { text })?;
                }
            }
            Event::Classpath { entries } if source > 0 => {
                let holds = entries.split(':').any(|e| e.ends_with(&format!("/{}", self.connector_jar_name)));
                self.classpath.insert(source, holds);
                let text = format!(
                    "TaskManager log {source}: its Classpath line {} {}",
                    if holds { "holds" } else { "does not hold" },
                    self.connector_jar_name
                );
                self.record(at, Source::Coordinator, EventKind::Note { text })?;
            }
            Event::SlowSnapshot { subtask, id, ms } => {
                let text = format!(
                    "slow snapshot (flink.slow_snapshot): subtask {subtask} held its snapshot of checkpoint {id} for {ms} ms, \
                     checkpoint {id} pending meanwhile"
                );
                self.record(at, Source::Coordinator, EventKind::Note { text })?;
            }
            _ => {}
        }
        Ok(None)
    }

    /// The job's snapshot line: the subtask acked checkpoint `id` (its thread's
    /// commits before it settled), and, when it carried records, the
    /// committable of the transaction it pre-committed.
    fn on_snapshot(&mut self, thread: &str, at: Instant, snap: Snapshot) -> anyhow::Result<()> {
        let Snapshot { id, subtask, logical, first_seq, next_seq, records } = snap;
        self.settle_commits(thread, at)?;
        self.record(at, Source::Coordinator, EventKind::CheckpointAcked { id, subtask })?;
        self.notice(at, JobEvent::CheckpointAcked { id, subtask });
        let prepared = self.threads.entry(thread.to_string()).or_default().prepared.take();
        if let Ok(mut seen) = self.seen.lock() {
            seen.last.insert(subtask, id);
        }
        if records == 0 {
            return Ok(());
        }
        let tid = match (self.naming, &prepared) {
            (Naming::Pooling, Some((t, _, _))) => t.clone(),
            (Naming::Pooling, None) => {
                let text = format!("checkpoint {id} subtask {subtask}: POOLING, and the writer's Prepare line naming the transaction was not seen");
                return self.record(at, Source::Coordinator, EventKind::Note { text });
            }
            (Naming::Incrementing, _) => format!("{}-{subtask}-{id}", self.prefix),
        };
        let (producer_id, producer_epoch) = prepared.as_ref().map(|(_, p, e)| (*p, *e)).unwrap_or((-1, -1));
        self.tid_checkpoint.insert(tid.clone(), id);
        if producer_id >= 0 {
            self.precommitted.entry(id).or_default().insert(tid.clone(), (producer_id, producer_epoch));
        }
        if let Ok(mut seen) = self.seen.lock() {
            seen.tids.insert((subtask, id), tid.clone());
        }
        let committable = Committable {
            checkpoint: id,
            transactional_id: tid,
            producer_id,
            producer_epoch,
            protocol: self.protocol,
            records,
            first_seq: Some(first_seq),
            last_seq: Some(next_seq.saturating_sub(1)),
        };
        let s = logical.unwrap_or(subtask);
        self.record(at, Source::Worker { subtask: s }, EventKind::TxnPrecommitted { committable, flush_us: 0 })
    }

    /// KafkaCommitter's `Committing`: the commit starts on its thread; the
    /// first commit of a checkpoint (not a restored one) shows it was notified.
    fn on_committing(&mut self, r: &LogLine, at: Instant, tid: String) -> anyhow::Result<()> {
        let checkpoint = self.checkpoint_of(&tid);
        let restored = self.restored_from.is_some_and(|r| checkpoint <= r);
        let th = self.threads.entry(r.thread.clone()).or_default();
        th.resumed.remove(&tid);
        if r.wall_ms > self.gone_at_ms {
            th.committing.push((tid.clone(), checkpoint, restored, at));
        }
        let subtask = subtask_of(&tid).unwrap_or(0);
        let kind = EventKind::CommitStarted { transactional_id: tid.clone(), checkpoint, restored };
        self.record(at, Source::Worker { subtask }, kind)?;
        if !restored && self.notified.insert(checkpoint) {
            // Flink notifies over its own RPC; the first commit of n shows it arrived.
            self.record(at, Source::Coordinator, EventKind::CheckpointNotified { id: checkpoint })?;
            self.notice(at, JobEvent::CheckpointNotified { id: checkpoint });
        }
        self.notice(at, JobEvent::CommitStarted { subtask, checkpoint, transactional_id: tid, restored });
        Ok(())
    }

    /// A commit dropped (or, `failover`, failed): it waits for the exception
    /// on the next line, matched to the commit its thread started.
    fn on_commit_dropped(&mut self, r: &LogLine, at: Instant, tid: String, because: String, failover: bool) {
        let th = self.threads.entry(r.thread.clone()).or_default();
        let pos = th.committing.iter().position(|c| c.0 == tid);
        let started = pos.map(|i| th.committing.remove(i));
        let checkpoint = started.as_ref().map(|c| c.1).unwrap_or_else(|| self.checkpoint_of(&tid));
        let restored = started.as_ref().is_some_and(|c| c.2);
        self.pending_drop = Some(Drop {
            subtask: subtask_of(&tid).unwrap_or(0),
            tid,
            checkpoint,
            restored,
            level: r.level.clone(),
            because,
            at,
            started: started.map(|c| c.3),
            failover,
        });
    }

    /// The checkpoint a transactional id carried: the snapshot that named it, else
    /// INCREMENTING's `{prefix}-{subtask}-{checkpoint}`.
    fn checkpoint_of(&self, tid: &str) -> u64 {
        self.tid_checkpoint
            .get(tid)
            .copied()
            .or_else(|| tid.rsplit('-').next().and_then(|n| n.parse().ok()))
            .unwrap_or(0)
    }

    fn settle_drop(&mut self, d: Drop, exception: Option<&str>) -> anyhow::Result<()> {
        let logged = match exception {
            Some(e) => format!("{e} (KafkaCommitter {}: because {})", d.level, d.because),
            None => format!("KafkaCommitter {}: because {}", d.level, d.because),
        };
        let latency_us = d.started.map(|s| d.at.saturating_duration_since(s).as_micros() as u64).unwrap_or(0);
        let outcome = if d.failover {
            CommitOutcome::Failed { error: logged }
        } else {
            self.dropped += 1;
            CommitOutcome::Dropped { error: logged }
        };
        let kind = EventKind::CommitFinished {
            transactional_id: d.tid,
            checkpoint: d.checkpoint,
            restored: d.restored,
            outcome,
            latency_us,
        };
        self.record(d.at, Source::Worker { subtask: d.subtask }, kind)
    }

    /// Commits started on `thread` that it went past without an error line: committed.
    pub fn settle_commits(&mut self, thread: &str, at: Instant) -> anyhow::Result<()> {
        let pending = match self.threads.get_mut(thread) {
            Some(th) => std::mem::take(&mut th.committing),
            None => return Ok(()),
        };
        for (tid, checkpoint, restored, started) in pending {
            let latency_us = at.saturating_duration_since(started).as_micros() as u64;
            let subtask = subtask_of(&tid).unwrap_or(0);
            let kind = EventKind::CommitFinished {
                transactional_id: tid,
                checkpoint,
                restored,
                outcome: CommitOutcome::Committed,
                latency_us,
            };
            self.record(at, Source::Worker { subtask }, kind)?;
        }
        Ok(())
    }

    /// The job finished: every commit still open returned (the task ended after it).
    pub fn settle_all(&mut self) -> anyhow::Result<()> {
        if let Some(d) = self.pending_drop.take() {
            self.settle_drop(d, None)?;
        }
        let threads: Vec<String> = self.threads.keys().cloned().collect();
        for t in threads {
            self.settle_commits(&t, Instant::now())?;
        }
        Ok(())
    }

    /// Forgets what was open on the task threads (the tasks were killed: their commits did not return).
    pub fn tasks_gone(&mut self) {
        self.gone_at_ms = sinkhole_base::utc::now_ms();
        for th in self.threads.values_mut() {
            th.committing.clear();
            th.prepared = None;
        }
    }
}

#[cfg(test)]
mod tests;
