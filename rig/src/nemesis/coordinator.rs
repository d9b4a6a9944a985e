//! Faults on the checkpoint coordinator (Flink's JobManager):
//! `drop-notification`, `delay-notification`, `decline-checkpoint` and
//! `coordinator-crash`, armed through the subject's hooks and confirmed
//! only once they acted.
use super::{Due, Nemesis, Wait};
use crate::subject::{Hook, HookEnd, Subject, WorkerHit};
use sinkhole_cluster::Cluster;
use sinkhole_history::fault::{
    ArmedFor, ArmedStart, CrashStart, CrashedEnd, DeclinedEnd, DelayedEnd, DroppedEnd, End, LateNotification, Missed,
    NotActedEnd, Start,
};
use sinkhole_scenario::{FaultKind, When};

impl<S: Subject, B: Cluster + ?Sized> Nemesis<'_, S, B> {
    pub(super) async fn fire_coordinator(&mut self, f: usize, due: Due) -> anyhow::Result<()> {
        let spec = self.spec(f).clone();
        let name = self.slots[f].name.clone();
        let subject = &self.members[self.who(f)].subject;
        if spec.kind == FaultKind::CoordinatorCrash {
            // Only in a persist→notify window does the crash lose a notification.
            let window = matches!(spec.when, When::CheckpointPersisted(_)).then_some(due.checkpoint).flatten();
            let armed = match subject.arm(Hook::Crash { window }, name).await {
                Ok(a) => a,
                Err(e) => return self.fault_failed(f, due.trigger, e),
            };
            let all = subject.workers() as usize;
            let confirmed = armed.workers.iter().all(WorkerHit::confirmed)
                && armed.workers.iter().filter(|h| h.hit().is_some()).count() == all;
            let start = CrashStart {
                trigger: due.trigger,
                attempt: armed.attempt,
                workers: armed.workers,
                persisted_not_notified: window,
            };
            self.fault_started(f, confirmed, Start::Crash(start))?;
            if window.is_some() {
                let acted = armed.acted;
                self.wait_for(f, async move { Wait::Hook(acted.await) });
            }
            return Ok(());
        }
        let subtasks = match super::targets::worker_targets(&spec.kind.target().cloned(), subject.workers()) {
            Ok(t) => t,
            Err(e) => return self.fault_failed(f, due.trigger, e),
        };
        // The checkpoint acted on: the one named, else the trigger's, else
        // the next one (for a decline: the next triggered, resolved by the job).
        let checkpoint = spec.kind.checkpoint().or(due.checkpoint);
        let hook = match spec.kind.kind() {
            FaultKind::DropNotification => Hook::DropNotification { checkpoint, subtasks: subtasks.clone() },
            FaultKind::DelayNotification => {
                let Some(delay_ms) = spec.kind.delay_ms() else {
                    return self.fault_failed(f, due.trigger, "delay-notification needs delay_ms".into());
                };
                Hook::DelayNotification { checkpoint, subtasks: subtasks.clone(), delay_ms }
            }
            _ => Hook::DeclineCheckpoint { checkpoint, subtasks: subtasks.clone() },
        };
        let armed = match subject.arm(hook, name).await {
            Ok(a) => a,
            Err(e) => return self.fault_failed(f, due.trigger, e),
        };
        let armed_for = match armed.checkpoint {
            Some(c) => ArmedFor::Checkpoint(c),
            None => ArmedFor::Next("the next notification".into()),
        };
        let delay_ms = (spec.kind == FaultKind::DelayNotification).then(|| spec.kind.delay_ms().unwrap_or(0));
        let start = ArmedStart { trigger: due.trigger, armed_for_checkpoint: armed_for, subtasks, delay_ms };
        // Confirmed only once it acted (a notification withheld or late, a checkpoint aborted).
        self.fault_started(f, false, Start::Armed(start))?;
        let acted = armed.acted;
        self.wait_for(f, async move { Wait::Hook(acted.await) });
        Ok(())
    }

    /// An armed hook acted (or the job ended first).
    pub(super) fn hook_acted(
        &mut self,
        f: usize,
        end: Result<HookEnd, tokio::sync::oneshot::error::RecvError>,
    ) -> anyhow::Result<()> {
        let Ok(end) = end else { return Ok(()) };
        match end {
            HookEnd::Dropped { checkpoint, withheld_from } => {
                let missed = withheld_from.iter().map(|&subtask| Missed { subtask, checkpoint }).collect();
                let confirmed = !withheld_from.is_empty();
                let end = DroppedEnd {
                    checkpoint,
                    withheld_from,
                    missed,
                    covered_by: "the next notification (commits every checkpoint up to it)".into(),
                };
                self.fault_ended_with(f, End::Dropped(end), Some(confirmed))
            }
            HookEnd::Delayed { checkpoint, late } => {
                let all = late.iter().all(|(_, sent, _)| *sent);
                let end = DelayedEnd {
                    checkpoint,
                    delay_ms: self.spec(f).kind.delay_ms().unwrap_or(0),
                    late_notifications: late
                        .into_iter()
                        .map(|(subtask, sent, why_not)| LateNotification { subtask, sent, why_not })
                        .collect(),
                };
                self.fault_ended_with(f, End::Delayed(end), Some(all))
            }
            HookEnd::Declined { checkpoint, by, aborted } => {
                let end = DeclinedEnd { checkpoint, declined_by: by, aborted };
                self.fault_ended_with(f, End::Declined(end), Some(aborted))
            }
            HookEnd::Crashed { checkpoint, notified: false } => {
                let statement = Some(format!("checkpoint {checkpoint} was persisted and never notified"));
                self.fault_ended(f, End::Crashed(CrashedEnd { checkpoint, notified: false, statement }))
            }
            HookEnd::Crashed { checkpoint, notified: true } => {
                // Cannot happen while the crash's kills are in place; said if it does.
                let end = CrashedEnd { checkpoint, notified: true, statement: None };
                self.fault_ended_with(f, End::Crashed(end), Some(false))
            }
            HookEnd::NotActed { text } => {
                self.fault_ended_with(f, End::NotActed(NotActedEnd { not_acted: text }), Some(false))
            }
        }
    }
}
