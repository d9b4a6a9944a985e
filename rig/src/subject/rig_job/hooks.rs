//! What the nemesis asks of the job, carried out inside the coordinator's
//! loop: signals to workers, an outage, and the coordinator faults (a
//! notification dropped or delayed, a checkpoint declined, a crash between
//! persist and notify).
//!
//! Each answer says what was done and confirmed; an armed hook answers once
//! more when it has acted, through the channel [`crate::subject::Armed`]
//! hands the nemesis, or says it never could.
use std::collections::BTreeMap;
use std::time::Instant;

use nix::sys::signal::Signal;
use sinkhole_model::{EventKind, ToWorker};
use tokio::sync::oneshot;

use super::phase::Phase;
use super::state::{ArmedHook, Coordinator, OutageState};
use super::workers::Launcher;
use super::{Aim, Command};
use crate::subject::{Armed, Hook, HookEnd, Outage, WorkerHit};

impl<L: Launcher> Coordinator<L> {
    pub(super) async fn on_command(&mut self, c: Command) -> anyhow::Result<()> {
        match c {
            Command::OpenTransaction { subtask, reply } => {
                let _ = reply.send(self.current_tid(subtask));
            }
            Command::Signal { aims, signal, by, reply } => {
                let hits = self.signal_workers(&aims, signal, &by)?;
                let _ = reply.send(hits);
            }
            Command::Outage { down_ms, by, reply } => {
                let r = self.begin_outage(down_ms, &by)?;
                let _ = reply.send(Ok(r));
            }
            Command::Arm { hook, by, reply } => {
                let r = self.arm(hook, by)?;
                let _ = reply.send(r);
            }
        }
        Ok(())
    }

    /// Signals workers on behalf of fault `by`. A SIGKILL is a crash the job
    /// notices (it fails over); a kill in the persist→notify window means
    /// that checkpoint is never notified.
    fn signal_workers(&mut self, aims: &[Aim], signal: Signal, by: &str) -> anyhow::Result<Vec<WorkerHit>> {
        let mut out = vec![];
        for aim in aims {
            let (s, pid) = match *aim {
                Aim::Exact { subtask, pid } => (subtask, pid),
                Aim::Current(s) => {
                    let running = self.phase == Phase::Running || matches!(self.phase, Phase::Stopping { .. });
                    let slot = self.attempt.slots.get(s as usize);
                    match slot.filter(|sl| running && sl.exit.is_none()).map(|sl| sl.pid) {
                        Some(pid) => (s, pid),
                        None => {
                            out.push(WorkerHit::NotRunning { subtask: s, error: "no worker running".into() });
                            continue;
                        }
                    }
                }
            };
            match self.launcher.signal(pid, signal) {
                Ok(e) => {
                    out.push(WorkerHit::Signalled { subtask: s, pid, signal: e });
                    let current = self.attempt.slots.get(s as usize).is_some_and(|sl| sl.pid == pid);
                    if signal == Signal::SIGKILL && current {
                        let status = format!("killed by fault {by} (SIGKILL)");
                        let slot = &mut self.attempt.slots[s as usize];
                        slot.exit = Some((Instant::now(), status.clone()));
                        slot.killed_by_fault = true;
                        self.coord(EventKind::WorkerExited { subtask: s, status, expected: false })?;
                    }
                }
                Err(error) => out.push(WorkerHit::Failed { subtask: s, pid, error }),
            }
        }
        Ok(out)
    }

    /// Kills every worker and keeps the job down `down_ms` (counted from its
    /// failover), whether it was running (the kill makes it fail over) or
    /// already down.
    fn begin_outage(&mut self, down_ms: u64, by: &str) -> anyhow::Result<Outage> {
        let attempt = self.attempt.number;
        let all: Vec<Aim> = (0..self.parallelism()).map(Aim::Current).collect();
        let workers = self.signal_workers(&all, Signal::SIGKILL, by)?;
        let (ended, rx) = oneshot::channel();
        self.outage = Some(super::hooks::OutageState { since: Instant::now(), planned_ms: down_ms, ended });
        if let Phase::Down { .. } = self.phase {
            self.set_phase(Phase::Down { until: sinkhole_base::utc::in_ms_or_far(down_ms) })?;
        }
        Ok(Outage { attempt, workers, ended: rx })
    }

    fn arm(&mut self, hook: Hook, by: String) -> anyhow::Result<Result<Armed, String>> {
        let (tx, acted) = oneshot::channel();
        let attempt = self.attempt.number;
        if let Hook::Crash { window } = hook {
            // Flink's JobManager dies after the checkpoint store has the
            // checkpoint and before notifyCheckpointComplete reaches any
            // task; with HA the new leader restores every task from the
            // latest completed checkpoint. Here: every worker is killed (no
            // notification goes out, see `notify`) and the failover restores
            // from the store.
            let all: Vec<Aim> = (0..self.parallelism()).map(Aim::Current).collect();
            let workers = self.signal_workers(&all, Signal::SIGKILL, &by)?;
            match window {
                Some(id) => self.crash = Some((id, tx)),
                None => drop(tx),
            }
            return Ok(Ok(Armed { checkpoint: window, workers, attempt, acted }));
        }
        let checkpoint = match &hook {
            Hook::DropNotification { checkpoint, .. } | Hook::DelayNotification { checkpoint, .. } => *checkpoint,
            // A decline without a checkpoint acts on the next one triggered.
            Hook::DeclineCheckpoint { checkpoint, .. } => Some(checkpoint.unwrap_or(self.next_id)),
            Hook::Crash { .. } => unreachable!("handled above"),
        };
        self.hooks.push(ArmedHook { hook, by, checkpoint, acted: Some(tx), owed: 0, late: vec![] });
        Ok(Ok(Armed { checkpoint, workers: vec![], attempt, acted }))
    }

    /// Whether an armed decline takes subtask `s`'s ack of `id`; if so the
    /// checkpoint is aborted, as Flink's `CheckpointCoordinator` aborts a
    /// pending checkpoint on a task's decline message (CHECKPOINT_DECLINED).
    /// The subtask keeps its committables; the next checkpoint carries them.
    pub(super) fn decline_armed(&mut self, id: u64, s: u32) -> anyhow::Result<bool> {
        let k = self.hooks.iter().position(|h| {
            matches!(h.hook, Hook::DeclineCheckpoint { .. })
                && h.acted.is_some()
                && h.subtasks().contains(&s)
                && h.applies_to(id)
        });
        let Some(k) = k else { return Ok(false) };
        // Hooks stay in place once they acted (late notifications refer to them by index).
        let (by, acted) = (self.hooks[k].by.clone(), self.hooks[k].acted.take());
        self.abort(id, format!("declined by subtask {s} (fault {by})"))?;
        let aborted = !self.pending.contains_key(&id);
        if let Some(tx) = acted {
            let _ = tx.send(HookEnd::Declined { checkpoint: id, by: s, aborted });
        }
        Ok(true)
    }

    /// After notification `id` went out: notes and hook ends for what was
    /// withheld. Flink's CommitterOperator commits every checkpoint up to
    /// the one notified, so a dropped notification is covered by the next.
    pub(super) fn report_withheld(
        &mut self,
        id: u64,
        withheld: &BTreeMap<u32, (usize, Option<u64>)>,
    ) -> anyhow::Result<()> {
        let slots = self.attempt.slots.len();
        for k in Self::hooks_in(withheld) {
            let hit: Vec<u32> = self.hooks[k].subtasks().iter().copied().filter(|&t| (t as usize) < slots).collect();
            let by = self.hooks[k].by.clone();
            match self.hooks[k].hook {
                Hook::DelayNotification { delay_ms, .. } => {
                    self.hooks[k].owed = withheld.values().filter(|(h, _)| *h == k).count();
                    self.coord(EventKind::Note {
                        text: format!(
                            "notification of checkpoint {id} to subtasks {hit:?} held {delay_ms} ms by fault {by}"
                        ),
                    })?;
                    if self.hooks[k].owed == 0 {
                        self.end_delay_hook(k, id);
                    }
                }
                _ => {
                    self.coord(EventKind::Note {
                        text: format!("notification of checkpoint {id} withheld from subtasks {hit:?} by fault {by}"),
                    })?;
                    if let Some(tx) = self.hooks[k].acted.take() {
                        let _ = tx.send(HookEnd::Dropped { checkpoint: id, withheld_from: hit });
                    }
                }
            }
        }
        Ok(())
    }

    fn end_delay_hook(&mut self, k: usize, id: u64) {
        let late = std::mem::take(&mut self.hooks[k].late);
        if let Some(tx) = self.hooks[k].acted.take() {
            let _ = tx.send(HookEnd::Delayed { checkpoint: id, late });
        }
    }

    /// Sends the notifications a delay hook held back, once due.
    pub(super) async fn send_delayed_notifications(&mut self, now: Instant) -> anyhow::Result<()> {
        if self.delayed.is_empty() {
            return Ok(());
        }
        let (due, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.delayed).into_iter().partition(|d| d.due <= now);
        self.delayed = keep;
        for d in due {
            let same_attempt = d.attempt == self.attempt.number && self.phase == Phase::Running;
            let sent = same_attempt && self.send(d.subtask as usize, &ToWorker::Complete { id: d.checkpoint }).await;
            let why_not = (!same_attempt).then(|| "the job failed over before it was due".to_string());
            let h = &mut self.hooks[d.hook];
            h.late.push((d.subtask, sent, why_not));
            h.owed = h.owed.saturating_sub(1);
            if h.owed == 0 {
                self.end_delay_hook(d.hook, d.checkpoint);
            }
        }
        Ok(())
    }

    /// The job ended: every hook still waiting says it never acted; an
    /// outage still in progress ends unrestored (its channel closes).
    pub(super) fn settle_hooks(&mut self) {
        self.outage = None;
        self.crash = None;
        for h in &mut self.hooks {
            let Some(tx) = h.acted.take() else { continue };
            let text = match (&h.hook, h.owed) {
                (_, n) if n > 0 => "the job ended before the late notification was due".to_string(),
                (hook, _) => {
                    let what = match hook {
                        Hook::DeclineCheckpoint { .. } => "an ack it could decline",
                        _ => "a notification it could act on",
                    };
                    format!("the job ended before {what} (checkpoint {:?} or later)", h.checkpoint)
                }
            };
            let _ = tx.send(HookEnd::NotActed { text });
        }
        self.delayed.clear();
    }
}
