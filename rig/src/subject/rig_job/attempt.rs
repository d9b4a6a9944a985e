//! One attempt of the job: deploying its workers, watching them (exits,
//! closed connections, silence), failing over, and ending the job.
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::sys::signal::Signal;
use sinkhole_model::{EventKind, ToWorker, WorkerConfig};

use super::phase::Phase;
use super::state::{Attempt, Coordinator, Slot, SEND_TIMEOUT};
use super::workers::{LaunchSpec, Launcher};
use crate::subject::{JobEvent, OutageEnd};
use sinkhole_history::JobOutcome;

/// After a worker exits (or its connection closes) the other signal usually
/// follows within milliseconds; waiting this long lets the messages it sent
/// before dying (an `Unsupported` event, a `Failed` reason) be read first.
const EXIT_GRACE: Duration = Duration::from_millis(300);

impl<L: Launcher> Coordinator<L> {
    /// Starts every subtask of attempt `number` from the latest complete checkpoint.
    pub(super) async fn launch(&mut self, number: u32) -> anyhow::Result<()> {
        let restore = self.store.latest()?;
        let p = self.parallelism();
        if let Some(r) = &restore {
            anyhow::ensure!(
                r.subtasks.len() == p as usize,
                "checkpoint {} has {} subtasks, the job has {p}",
                r.id,
                r.subtasks.len()
            );
        }
        let restored_from = restore.as_ref().map(|r| r.id);
        let now = Instant::now();
        self.attempt = Attempt { number, restored_from, slots: vec![], all_ready_at: None, last_triggered: None };
        self.final_id = None;
        self.final_complete = None;
        self.next_trigger = None;
        self.set_phase(Phase::Running)?;
        if self.job_started.is_none() {
            self.job_started = Some(now);
        }
        self.coord(EventKind::JobStarted { attempt: number, restored_from })?;
        self.notice(now, JobEvent::Started { attempt: number, restored_from });
        if let Some(o) = self.outage.take() {
            let _ = o.ended.send(OutageEnd { down_ms: o.since.elapsed().as_millis() as u64, restored_from });
        }
        if number > 0 {
            self.progress(&format!(
                "restore: attempt {number} from {}",
                restored_from.map(|i| format!("checkpoint {i}")).unwrap_or_else(|| "the beginning".into())
            ));
        }
        let j = self.cfg.job.clone();
        let heartbeat_ms = (j.heartbeat_timeout_ms / 4).clamp(20, 1000);
        let (bootstrap, sasl) = match &self.cfg.sink_listener {
            Some(l) => (l.bootstrap.clone(), Some(l.sasl.clone())),
            None => (self.bootstrap.borrow().clone(), None),
        };
        let register_partitions = match j.register_partitions {
            sinkhole_scenario::Registration::Lazy => sinkhole_model::PartitionRegistration::Lazy,
            sinkhole_scenario::Registration::Eager => sinkhole_model::PartitionRegistration::Eager,
        };
        for s in 0..p {
            let config = WorkerConfig {
                run_id: self.cfg.run_id.clone(),
                mode: self.cfg.mode,
                subtask: s,
                parallelism: p,
                attempt: number,
                bootstrap: bootstrap.clone(),
                topic: self.cfg.topic.clone(),
                partitions: self.cfg.partitions,
                partitioning: j.partitioning,
                records: j.records_per_subtask,
                rate_per_sec: j.rate_per_subtask,
                transaction_timeout_ms: j.transaction_timeout_ms,
                tid_prefix: self.cfg.tid_prefix.clone(),
                linger_ms: j.linger_ms,
                batch_size: j.batch_size,
                restore: restore.as_ref().map(|r| (r.id, r.subtasks[s as usize].clone())),
                heartbeat_ms,
                register_partitions,
                force_transactions_v1: j.force_transactions_v1,
                sasl: sasl.clone(),
                share: self.cfg.share.clone(),
                security: self.cfg.security.clone(),
            };
            let config_path = self.cfg.dir.worker_config(s, number);
            std::fs::write(&config_path, serde_json::to_vec_pretty(&config)?)
                .with_context(|| format!("writing {}", config_path.display()))?;
            let log = self.cfg.dir.worker_log(s);
            let launched = self.launcher.launch(LaunchSpec {
                config: &config,
                config_path: &config_path,
                control: &self.socket,
                log: &log,
            });
            match launched {
                Ok(pid) => {
                    self.attempt.slots.push(Slot {
                        pid,
                        launched: now,
                        conn: None,
                        writer: None,
                        ready: false,
                        last_heard: now,
                        end_of_input: false,
                        committed: 0,
                        next_seq: config.restore.as_ref().map(|(_, st)| st.next_seq).unwrap_or(0),
                        exit: None,
                        closed: None,
                        expected_exit: false,
                        killed_by_fault: false,
                        unacknowledged: None,
                    });
                    self.coord(EventKind::WorkerStarted { subtask: s, pid, attempt: number })?;
                }
                Err(e) => {
                    // The slots started so far are killed by the failover.
                    self.fail_over(Some(s), format!("could not start the worker of subtask {s}: {e:#}")).await?;
                    return Ok(());
                }
            }
        }
        // Connections that arrived before the slots existed can be tied now.
        let unbound: Vec<u64> = self.conns.iter().filter(|(_, c)| c.subtask.is_none()).map(|(&id, _)| id).collect();
        for id in unbound {
            self.try_bind_by_peer(id).await?;
        }
        Ok(())
    }

    pub(super) fn slot_of_pid(&self, pid: u32) -> Option<usize> {
        self.attempt.slots.iter().position(|s| s.pid == pid)
    }

    /// Workers that exited on their own since the last look.
    pub(super) fn reap(&mut self, now: Instant) -> anyhow::Result<()> {
        for (pid, status) in self.launcher.exited() {
            let Some(i) = self.slot_of_pid(pid) else { continue };
            let slot = &mut self.attempt.slots[i];
            if slot.exit.is_some() {
                continue;
            }
            slot.exit = Some((now, status.clone()));
            let expected = slot.expected_exit;
            self.coord(EventKind::WorkerExited { subtask: i as u32, status, expected })?;
        }
        Ok(())
    }

    pub(super) async fn send(&mut self, s: usize, msg: &ToWorker) -> bool {
        let Some(w) = self.attempt.slots[s].writer.as_mut() else { return false };
        let err = match tokio::time::timeout(SEND_TIMEOUT, w.send(msg)).await {
            Ok(Ok(())) => return true,
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("a send took longer than {SEND_TIMEOUT:?}"),
        };
        let slot = &mut self.attempt.slots[s];
        slot.writer = None;
        if slot.closed.is_none() {
            slot.closed = Some((Instant::now(), format!("sending {msg:?}: {err}")));
        }
        false
    }

    /// Kills every worker of the attempt that is still alive (and reaps it).
    pub(super) fn kill_all(&mut self, why: &str) -> anyhow::Result<()> {
        for i in 0..self.attempt.slots.len() {
            if self.attempt.slots[i].exit.is_some() {
                continue;
            }
            let pid = self.attempt.slots[i].pid;
            self.attempt.slots[i].expected_exit = true;
            let status = match self.launcher.signal(pid, Signal::SIGKILL) {
                Ok(e) => format!("killed by the coordinator ({why}): SIGKILL, observed {:?}", e.observed),
                Err(e) => format!("already gone ({e})"),
            };
            self.attempt.slots[i].exit = Some((Instant::now(), status.clone()));
            self.coord(EventKind::WorkerExited { subtask: i as u32, status, expected: true })?;
        }
        // Whatever the killed workers still had in flight is void.
        self.min_conn = self.conn_counter.load(std::sync::atomic::Ordering::SeqCst);
        self.conns.clear();
        for slot in &mut self.attempt.slots {
            slot.writer = None;
        }
        Ok(())
    }

    pub(super) async fn fail_over(&mut self, subtask: Option<u32>, reason: String) -> anyhow::Result<()> {
        if self.phase != Phase::Running {
            return Ok(());
        }
        self.coord(EventKind::FailureDetected { subtask, reason: reason.clone() })?;
        self.progress(&format!("failure (attempt {}): {reason}", self.attempt.number));
        self.kill_all("failover")?;
        self.abort_all("the job is failing over")?;
        self.failures += 1;
        let limit = self.cfg.job.restart_limit;
        if self.failures > limit {
            return self
                .end(JobOutcome::Failed {
                    reason: format!(
                        "the job failed {} times, more than restart_limit {limit}; last: {reason}",
                        self.failures
                    ),
                })
                .await;
        }
        let delay_ms = match &self.outage {
            Some(o) => o.planned_ms,
            None => self.cfg.job.restart_delay_ms,
        };
        let from_checkpoint = self.store.latest()?.map(|c| c.id);
        let attempt = self.attempt.number + 1;
        self.coord(EventKind::Restarting { attempt, from_checkpoint, delay_ms })?;
        self.set_phase(Phase::Down { until: sinkhole_base::utc::in_ms_or_far(delay_ms) })?;
        self.notice(Instant::now(), JobEvent::Down { attempt: self.attempt.number });
        Ok(())
    }

    /// Ends the job: kills what is left, records `JobFinished`.
    pub(super) async fn end(&mut self, outcome: JobOutcome) -> anyhow::Result<()> {
        if self.phase == Phase::Done {
            return Ok(());
        }
        if !matches!(outcome, JobOutcome::Finished) {
            self.kill_all("the job ended")?;
        }
        self.abort_all("the job ended")?;
        let text = match &outcome {
            JobOutcome::Finished => "finished".to_string(),
            JobOutcome::Failed { reason } => format!("failed: {reason}"),
            JobOutcome::Unsupported { error } => format!("unsupported: {error}"),
        };
        self.coord(EventKind::JobFinished { outcome: text.clone(), attempts: self.attempt.number + 1 })?;
        self.progress(&format!("job {text} ({} checkpoints, {} attempts)", self.completed, self.attempt.number + 1));
        self.set_phase(Phase::Done)?;
        self.outcome = Some(outcome);
        Ok(())
    }

    pub(super) async fn tick_running(&mut self, now: Instant) -> anyhow::Result<()> {
        let j = self.cfg.job.clone();
        // Failure detection.
        let startup = Duration::from_millis(j.heartbeat_timeout_ms.max(j.checkpoint_timeout_ms));
        let heartbeat = Duration::from_millis(j.heartbeat_timeout_ms);
        let mut failure = None;
        for (i, slot) in self.attempt.slots.iter().enumerate() {
            let s = i as u32;
            // A worker that has not connected yet may still have messages on
            // their way (its connection not yet accepted): it gets the grace too.
            let conn_gone = slot.conn.is_some() && slot.closed.is_some();
            if let Some((at, status)) = &slot.exit {
                if !slot.expected_exit && (conn_gone || now.duration_since(*at) >= EXIT_GRACE) {
                    failure = Some((s, format!("the worker of subtask {s} exited: {status}")));
                    break;
                }
            } else if let Some((at, why)) = &slot.closed {
                if now.duration_since(*at) >= EXIT_GRACE {
                    failure = Some((s, format!("the control connection of subtask {s} closed: {why}")));
                    break;
                }
            } else if !slot.ready && now.duration_since(slot.launched) > startup {
                failure = Some((s, format!("subtask {s} was not ready {} ms after its start", startup.as_millis())));
                break;
            } else if slot.ready && now.saturating_duration_since(slot.last_heard) > heartbeat {
                let silent = now.saturating_duration_since(slot.last_heard).as_millis();
                failure = Some((
                    s,
                    format!(
                        "no message from subtask {s} for {silent} ms (heartbeat_timeout_ms {})",
                        j.heartbeat_timeout_ms
                    ),
                ));
                break;
            }
        }
        if let Some((s, reason)) = failure {
            return self.fail_over(Some(s), reason).await;
        }

        // Expired checkpoints (Flink: the checkpoint canceller after checkpointTimeout).
        let timeout = Duration::from_millis(j.checkpoint_timeout_ms);
        let expired: Vec<(u64, Vec<u32>)> = self
            .pending
            .iter()
            .filter(|(_, p)| now.duration_since(p.triggered) >= timeout)
            .map(|(&id, p)| (id, (0..p.acks.len() as u32).filter(|&s| p.acks[s as usize].is_none()).collect()))
            .collect();
        for (id, missing) in expired {
            self.abort(id, format!("expired after {} ms: no ack from subtasks {missing:?}", j.checkpoint_timeout_ms))?;
        }

        // The end of the job: the final checkpoint's commits, then Stop.
        if let Some((fid, at)) = self.final_complete {
            if self.attempt.slots.iter().all(|s| s.committed >= fid) {
                for s in 0..self.attempt.slots.len() {
                    self.attempt.slots[s].expected_exit = true;
                    self.send(s, &ToWorker::Stop).await;
                }
                self.set_phase(Phase::Stopping { since: now })?;
            } else if now.duration_since(at) >= timeout {
                let missing: Vec<usize> =
                    (0..self.attempt.slots.len()).filter(|&s| self.attempt.slots[s].committed < fid).collect();
                return self
                    .end(JobOutcome::Failed {
                        reason: format!(
                            "subtasks {missing:?} did not confirm the commits of the final checkpoint {fid} within {} ms",
                            j.checkpoint_timeout_ms
                        ),
                    })
                    .await;
            }
            return Ok(());
        }

        // Triggers.
        if self.attempt.all_ready_at.is_none() || self.pending.len() >= j.max_concurrent_checkpoints.max(1) as usize {
            return Ok(());
        }
        if self.attempt.slots.iter().all(|s| s.end_of_input) {
            if self.final_id.is_none() {
                self.trigger(true).await?;
            }
        } else if self.next_trigger.is_some_and(|t| now >= t) {
            self.next_trigger = Some(now + Duration::from_millis(j.checkpoint_interval_ms));
            self.trigger(false).await?;
        }
        Ok(())
    }

    /// Subtask s's current transactional id, as Flink's INCREMENTING naming
    /// gives it: the checkpoint that will carry the open transaction — after
    /// barrier k that is k+1; right after a restore from r, r+1; fresh, 1.
    pub(super) fn current_tid(&self, s: u32) -> String {
        let n = match (self.attempt.last_triggered, self.attempt.restored_from) {
            (Some(k), _) => k + 1,
            (None, Some(r)) => r + 1,
            (None, None) => 1,
        };
        sinkhole_workloads::sink::naming::transactional_id_of(self.cfg.mode, &self.cfg.tid_prefix, s, n)
    }
}
