//! The observer: the rig's own looks at the broker's transactions during a
//! run, beside the nemesis and the job, for two purposes.
//!
//! - **Premises** (`scenario::premise`): a mode's expectation may rest on
//!   the broker aborting, or keeping, the transactions of checkpoint N. Once
//!   N is persisted the observer waits until their timeout and one abort
//!   scan have passed (Kafka's `TransactionCoordinator` aborts timed-out
//!   transactions every `transaction.abort.timed.out.transaction.cleanup.interval.ms`)
//!   and asks the coordinator (DescribeTransactions); if the job restores
//!   first it asks then, the last moment before the sink touches them again.
//! - **Lingering transactions**: once an attempt that restored is up, every
//!   transaction an earlier attempt opened after the one the new attempt
//!   reopens itself must have been aborted (Flink's `ExactlyOnceKafkaWriter`
//!   aborts lingering transactions in its initialisation, before it writes).
//!   One still `Ongoing` blocks read_committed readers of its partitions
//!   until it times out; the checker counts it (`lingering`).
//!
//! Like the nemesis it never calls into the job: it reads the subject's
//! notices (a copy; the nemesis gets the originals with their holds), names
//! transactions through the [`Subject`] trait and asks the cluster through
//! its bootstrap list. Each look is written to the history as it is taken
//! (`history::observation`).
use std::collections::BTreeMap;
use std::time::Instant;

use sinkhole_model::{SinkMode, Source};
use tokio::sync::mpsc;

use crate::subject::{JobEvent, Subject};
use sinkhole_cluster::lookup;
use sinkhole_history::fault::{Transactions, TxnView};
use sinkhole_history::observation::{Look, LookedAt, Observation};
use sinkhole_history::Writer;
use sinkhole_scenario::Timing;

/// What the observer needs to know of the run.
#[derive(Debug, Clone)]
pub struct Config {
    pub mode: SinkMode,
    /// The checkpoints a premise of this mode is about.
    pub checkpoints: Vec<u64>,
    /// When a checkpoint's transactions are looked at once it is persisted.
    pub timing: Timing,
    /// The brokers to ask (the rig's own addresses, not through the proxy's faults).
    pub bootstrap: Vec<String>,
}

/// A transaction an attempt opened.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Opened {
    attempt: u32,
    subtask: u32,
    checkpoint: u64,
    transactional_id: String,
}

/// The ids a restored attempt must find aborted: those earlier attempts
/// opened for a checkpoint past the first one the attempt reopens itself
/// (which its own first InitProducerId fences anyway), latest incarnation
/// only, in (subtask, checkpoint) order.
fn lingering_candidates(opened: &[Opened], attempt: u32, restored_from: Option<u64>) -> Vec<String> {
    let reopened = sinkhole_workloads::sink::naming::first_checkpoint(restored_from);
    let mut ids: BTreeMap<(u32, u64), String> = BTreeMap::new();
    for o in opened.iter().filter(|o| o.attempt < attempt && o.checkpoint > reopened) {
        ids.insert((o.subtask, o.checkpoint), o.transactional_id.clone());
    }
    let mut v: Vec<String> = ids.into_values().collect();
    v.dedup();
    v
}

async fn describe(bootstrap: &[String], ids: &[String]) -> Transactions {
    match lookup::describe_transactions(bootstrap, ids).await {
        Ok(v) => serde_json::from_value::<Vec<TxnView>>(v)
            .map(Transactions::Seen)
            .unwrap_or_else(|e| Transactions::Error { error: format!("the broker's answer did not parse: {e}") }),
        Err(e) => Transactions::Error { error: e.to_string() },
    }
}

struct Observer<S: Subject> {
    cfg: Config,
    subject: S,
    history: Writer,
    job_started: Option<Instant>,
    attempt: u32,
    restored_from: BTreeMap<u32, Option<u64>>,
    opened: Vec<Opened>,
    /// Checkpoint looks waiting for their deadline.
    due: Vec<(u64, Instant)>,
    looked: Vec<u64>,
    out: Vec<Observation>,
}

impl<S: Subject> Observer<S> {
    fn job_ms(&self) -> u64 {
        self.job_started.map(|t| t.elapsed().as_millis() as u64).unwrap_or(0)
    }

    fn record(&mut self, o: Observation) {
        if let Err(e) = self.history.record(Source::Checker, o.to_event()) {
            tracing::warn!(error = %e, "the observation was not written to the history");
        }
        self.out.push(o);
    }

    async fn look_at_checkpoint(&mut self, checkpoint: u64, looked_at: LookedAt) {
        self.due.retain(|(c, _)| *c != checkpoint);
        self.looked.push(checkpoint);
        let ids: Vec<String> =
            (0..self.subject.workers()).map(|s| self.subject.transactional_id(s, checkpoint)).collect();
        let transactions = describe(&self.cfg.bootstrap, &ids).await;
        let o = Observation {
            look: Look::Checkpoint { checkpoint },
            at_ms: self.job_ms(),
            looked_at: Some(looked_at),
            transactions,
            note: None,
        };
        self.record(o);
    }

    /// After the look: ids the current attempt itself opened meanwhile are
    /// its own, not an earlier attempt's.
    async fn look_for_lingering(&mut self, attempt: u32, events: &mut mpsc::UnboundedReceiver<(Instant, JobEvent)>) {
        let restored_from = self.restored_from.get(&attempt).copied().flatten();
        let ids = lingering_candidates(&self.opened, attempt, restored_from);
        if ids.is_empty() {
            return;
        }
        let at_ms = self.job_ms();
        let mut transactions = describe(&self.cfg.bootstrap, &ids).await;
        let mut later = Vec::new();
        while let Ok(ev) = events.try_recv() {
            later.push(ev);
        }
        let reused: Vec<String> = later
            .iter()
            .filter_map(|(_, e)| match e {
                JobEvent::TxnOpened { transactional_id, .. } => Some(transactional_id.clone()),
                _ => None,
            })
            .collect();
        let mut note = None;
        if let Transactions::Seen(v) = &mut transactions {
            let before = v.len();
            v.retain(|t| !reused.contains(&t.transactional_id));
            if v.len() < before {
                note =
                    Some(format!("{} id(s) left out: the new attempt opened them during the look", before - v.len()));
            }
        }
        self.record(Observation {
            look: Look::Lingering { attempt, restored_from, pooled: false },
            at_ms,
            looked_at: None,
            transactions,
            note,
        });
        for (at, e) in later {
            self.on_event(at, &e);
        }
    }

    /// Bookkeeping for one event; what it makes due is handled by the loop.
    fn on_event(&mut self, at: Instant, e: &JobEvent) {
        match e {
            JobEvent::Started { attempt, restored_from } => {
                self.job_started.get_or_insert(at);
                self.attempt = *attempt;
                self.restored_from.insert(*attempt, *restored_from);
            }
            JobEvent::TxnOpened { subtask, checkpoint, transactional_id } => self.opened.push(Opened {
                attempt: self.attempt,
                subtask: *subtask,
                checkpoint: *checkpoint,
                transactional_id: transactional_id.clone(),
            }),
            JobEvent::CheckpointPersisted { id }
                if self.cfg.checkpoints.contains(id)
                    && !self.looked.contains(id)
                    && !self.due.iter().any(|(c, _)| c == id) =>
            {
                self.due.push((*id, Instant::now() + self.cfg.timing.look_after()));
            }
            _ => {}
        }
    }
}

/// Runs until the job has ended and every pending look was taken; returns
/// what it saw (also written to the history).
pub async fn run<S: Subject>(
    cfg: Config,
    subject: S,
    history: Writer,
    mut events: mpsc::UnboundedReceiver<(Instant, JobEvent)>,
) -> Vec<Observation> {
    let lingering = cfg.mode.two_phase();
    let mut o = Observer {
        cfg,
        subject,
        history,
        job_started: None,
        attempt: 0,
        restored_from: BTreeMap::new(),
        opened: vec![],
        due: vec![],
        looked: vec![],
        out: vec![],
    };
    let mut ended = false;
    loop {
        let next_due = o.due.iter().map(|(_, t)| *t).min();
        if ended && next_due.is_none() {
            break;
        }
        let sleep = async {
            match next_due {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            ev = events.recv(), if !ended => {
                let Some((at, e)) = ev else { ended = true; continue };
                o.on_event(at, &e);
                match e {
                    // The job comes back before a look's deadline: look now.
                    JobEvent::Started { attempt, .. } if attempt > 0 => {
                        for c in o.due.iter().map(|(c, _)| *c).collect::<Vec<_>>() {
                            o.look_at_checkpoint(c, LookedAt::Restore).await;
                        }
                    }
                    JobEvent::Up { attempt } if attempt > 0 && lingering => {
                        o.look_for_lingering(attempt, &mut events).await;
                    }
                    JobEvent::Ended => ended = true,
                    _ => {}
                }
            }
            _ = sleep => {
                let now = Instant::now();
                for c in o.due.iter().filter(|(_, t)| *t <= now).map(|(c, _)| *c).collect::<Vec<_>>() {
                    o.look_at_checkpoint(c, LookedAt::Deadline).await;
                }
            }
        }
    }
    o.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opened(attempt: u32, subtask: u32, checkpoint: u64) -> Opened {
        Opened { attempt, subtask, checkpoint, transactional_id: format!("p-{subtask}-{checkpoint}") }
    }

    #[test]
    fn lingering_candidates_are_earlier_attempts_ids_past_the_reopened_one() {
        // Attempt 0 opened 1..=5 for both subtasks; attempt 1 restored from 2
        // and reopens 3 itself: 4 and 5 must have been aborted by its restore.
        let mut v: Vec<Opened> = (1..=5).flat_map(|c| [opened(0, 0, c), opened(0, 1, c)]).collect();
        assert_eq!(lingering_candidates(&v, 1, Some(2)), ["p-0-4", "p-0-5", "p-1-4", "p-1-5"]);
        // The new attempt's own ids never count, and a fresh restore (no
        // checkpoint) reopens 1.
        v.push(opened(1, 0, 6));
        assert_eq!(lingering_candidates(&v, 1, Some(3)), ["p-0-5", "p-1-5"]);
        assert_eq!(lingering_candidates(&v, 1, None).len(), 8);
        assert!(lingering_candidates(&v, 1, Some(5)).is_empty());
        // Ids reused by attempt 1 and left again by it are attempt 2's to check once.
        v.push(opened(1, 0, 7));
        assert_eq!(lingering_candidates(&v, 2, Some(5)), ["p-0-7"]);
    }
}
