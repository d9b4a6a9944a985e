//! Faults on the job's processes: `kill-workers`, `pause-workers`,
//! `job-outage` — real signals, sent by the subject to the workers it runs.
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::{Due, Heal, HealAction, Nemesis, Wait};
use crate::subject::{OutageEnd as Restored, Subject, WorkerHit};
use sinkhole_cluster::Cluster;
use sinkhole_history::fault::{
    End, NoteEnd, OutageEnd, Resumed, ResumedEnd, Start, Transactions, WhileFrozen, WorkersStart,
};
use sinkhole_scenario::FaultKind;

/// Confirmed when every target was hit and each signal was seen to act.
fn all_confirmed(hits: &[WorkerHit]) -> bool {
    !hits.is_empty() && hits.iter().all(WorkerHit::confirmed)
}

impl<S: Subject, B: Cluster + ?Sized> Nemesis<'_, S, B> {
    pub(super) async fn fire_workers(&mut self, f: usize, due: Due) -> anyhow::Result<()> {
        let spec = self.spec(f).clone();
        let name = self.slots[f].name.clone();
        let (attempt, restart_delay_ms) = (self.attempt(f), self.cfg(f).restart_delay_ms);
        let look_after = self.look_after_ms(f);
        let subject = &self.members[self.who(f)].subject;
        let targets = if spec.kind == FaultKind::JobOutage {
            Ok((0..subject.workers()).collect())
        } else {
            super::targets::worker_targets(&spec.kind.target().cloned(), subject.workers())
        };
        let targets = match targets {
            Ok(t) => t,
            Err(e) => return self.fault_failed(f, due.trigger, e),
        };
        match spec.kind.kind() {
            FaultKind::KillWorkers => {
                let hits = subject.signal(targets, Signal::SIGKILL, name).await;
                // The job fails over as a whole: it is down from now, not only once its
                // coordinator has noticed (a worker fault falling due in between waits for the
                // restore, instead of signalling workers that are gone).
                let m = self.who(f);
                self.states[m].up = false;
                self.states[m].killed = Some(attempt);
                let start = WorkersStart { trigger: due.trigger, attempt, workers: hits, ..empty_start() };
                let confirmed = all_confirmed(&start.workers);
                self.fault_started(f, confirmed, Start::Workers(start))
            }
            FaultKind::PauseWorkers => {
                let Some(d) = spec.duration_ms else {
                    return self.fault_failed(f, due.trigger, "pause-workers needs duration_ms".into());
                };
                let hits = subject.signal(targets, Signal::SIGSTOP, name).await;
                let frozen: Vec<(u32, u32)> = hits.iter().filter_map(WorkerHit::hit).collect();
                // The transactions the frozen workers hold open: the broker's
                // view of them is the evidence of what a pause past the
                // transaction timeout did.
                let mut open = vec![];
                for (s, _) in &frozen {
                    open.push(subject.open_transaction(*s).await);
                }
                let confirmed = all_confirmed(&hits) && !frozen.is_empty();
                let start = WorkersStart {
                    trigger: due.trigger,
                    attempt,
                    workers: hits,
                    duration_ms: Some(d),
                    open_transactions: Some(open.clone()),
                    ..empty_start()
                };
                // Past the transaction timeout plus the broker's abort scan
                // and a margin, while still frozen: the broker's view then is
                // the evidence.
                let now = Instant::now();
                if d > look_after && !open.is_empty() {
                    self.heals.push(Heal {
                        at: now.checked_add(Duration::from_millis(look_after)),
                        fault: f,
                        action: HealAction::ObserveOpen(open),
                    });
                }
                self.fault_started(f, confirmed, Start::Workers(start))?;
                self.heals.push(Heal {
                    at: now.checked_add(Duration::from_millis(d)),
                    fault: f,
                    action: HealAction::ResumeWorkers(frozen),
                });
                Ok(())
            }
            _ => {
                // The job stays down for the outage, whether it was running
                // (the kill makes it fail over) or already down.
                let d = spec.duration_ms.unwrap_or(restart_delay_ms);
                let outage = match subject.outage(d, name).await {
                    Ok(o) => o,
                    Err(e) => return self.fault_failed(f, due.trigger, e),
                };
                let confirmed = all_confirmed(&outage.workers);
                let start = WorkersStart {
                    trigger: due.trigger,
                    attempt: outage.attempt,
                    workers: outage.workers,
                    outage_ms: Some(d),
                    ..empty_start()
                };
                self.fault_started(f, confirmed, Start::Workers(start))?;
                let ended = outage.ended;
                self.wait_for(f, async move { Wait::Outage(ended.await, d) });
                Ok(())
            }
        }
    }

    /// When the broker's view of a frozen worker's transaction is taken: past
    /// the transaction timeout and one abort scan ([`sinkhole_scenario::Timing`]).
    pub(super) fn look_after_ms(&self, f: usize) -> u64 {
        self.cfg(f).timing.look_after_ms()
    }

    pub(super) fn outage_ended(
        &mut self,
        f: usize,
        end: Result<Restored, tokio::sync::oneshot::error::RecvError>,
        planned_ms: u64,
    ) -> anyhow::Result<()> {
        let end = match end {
            Ok(r) => End::Outage(OutageEnd { planned_ms, down_ms: r.down_ms, restored_from: r.restored_from }),
            Err(_) => End::Note(NoteEnd { note: "the job ended during the outage".into() }),
        };
        self.fault_ended(f, end)
    }

    pub(super) async fn resume(&mut self, f: usize, frozen: Vec<(u32, u32)>) -> anyhow::Result<()> {
        let name = self.slots[f].name.clone();
        let subject = &self.members[self.who(f)].subject;
        let hits = subject.resume(frozen, name).await;
        let workers = hits
            .into_iter()
            .map(|h| match h {
                WorkerHit::Signalled { subtask, pid, signal } => Resumed::Signalled { subtask, pid, signal },
                // The failover may have killed it meanwhile: nothing to resume.
                WorkerHit::Failed { subtask, pid, error } => Resumed::Gone { subtask, pid, gone: error },
                WorkerHit::NotRunning { subtask, error } => Resumed::Gone { subtask, pid: 0, gone: error },
            })
            .collect();
        self.fault_ended(f, End::Resumed(ResumedEnd { workers }))
    }

    /// The broker's view of the frozen workers' transactions, into the
    /// pause's start effect (and a note in the history).
    pub(super) fn observed(&mut self, f: usize, transactions: Transactions) -> anyhow::Result<()> {
        let attempt = self.attempt(f);
        let after_ms = i64::try_from(self.look_after_ms(f)).unwrap_or(i64::MAX);
        let mut obs = WhileFrozen { after_ms, transactions, note: None };
        let started_in = self.slots[f].firings.last().and_then(|fi| match &fi.start {
            Start::Workers(w) => Some(w.attempt),
            _ => None,
        });
        if started_in != Some(attempt) {
            // A failover meanwhile: the next attempt reuses the ids.
            obs.note = Some(format!(
                "the job failed over during the pause (attempt {attempt} now): these ids may belong to the new attempt"
            ));
        }
        let name = self.slots[f].name.clone();
        let text =
            format!("fault {name}: the broker's view while frozen: {}", serde_json::to_value(&obs).unwrap_or_default());
        self.record(f, sinkhole_model::EventKind::Note { text })?;
        if let Some(Start::Workers(w)) = self.slots[f].firings.last_mut().map(|fi| &mut fi.start) {
            w.while_frozen = Some(obs);
        }
        Ok(())
    }
}

fn empty_start() -> WorkersStart {
    WorkersStart {
        trigger: Default::default(),
        attempt: 0,
        workers: vec![],
        duration_ms: None,
        open_transactions: None,
        while_frozen: None,
        outage_ms: None,
    }
}
