//! The checkpoint coordinator and the job's failover: Flink's JobManager in
//! miniature.
//!
//! - Checkpoints mirror Flink's `CheckpointCoordinator`: periodic triggers with
//!   ids from one counter that never goes back (`CheckpointIDCounter`, so ids
//!   continue across restores and an aborted id is never reused), at most
//!   `max_concurrent_checkpoints` pending, a pending checkpoint expires after
//!   `checkpoint_timeout_ms`, a checkpoint is complete only once its metadata
//!   is durably stored, completing n subsumes the pending ones below it, and
//!   only then is "n complete" sent to every task (`notifyCheckpointComplete`).
//! - Failover mirrors Flink's full restart (`RestartAllFailoverStrategy` with
//!   the fixed-delay restart strategy): any task failure cancels every task,
//!   pending checkpoints are aborted, and after the delay every task is
//!   redeployed with its state from the latest complete checkpoint; more than
//!   `restart_limit` restarts fail the job (`FixedDelayRestartBackoffTimeStrategy`).
//!   Failures are detected from a worker's exit, a `Failed` message, a closed
//!   control connection, or silence longer than `heartbeat_timeout_ms`
//!   (Flink's heartbeat timeout between JobManager and TaskManagers).
//! - The end of a bounded job mirrors FLIP-147: once every task reached the end
//!   of its input, one more (final) checkpoint commits the rest, and the job
//!   finishes when every task confirmed its commits.
//!
//! The loop is a single task that owns all state and never waits on a fault:
//! faults are the nemesis' business, on its own task, reaching the job only
//! through [`super::Handle`]'s commands. Three points of every checkpoint can
//! be held by the nemesis (see [`crate::subject`]): the acks of checkpoint n
//! are taken only after its trigger is released, n completes only after
//! every ack is released, and n is notified only after its persist is
//! released. While a point waits, heartbeats, other checkpoints and commands
//! go on.
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use sinkhole_model::{
    AckPolicy, CheckpointRecord, CommitOutcome, EventKind, FromWorker, Source, SubtaskState, ToWorker,
};
use tokio::net::UnixListener;
use tokio::sync::{mpsc, watch};

use super::checkpoints::CheckpointStore;
use super::control::{self, Conn, ConnEvent, Inbound};
use super::phase::Phase;
pub use super::state::Coordinator;
use super::state::{Attempt, Late, Pending, Point, STOP_TIMEOUT, TICK};
use super::workers::Launcher;
use super::{Command, JobConfig, JobReport};
use crate::subject::{Hold, HookEnd, JobEvent, Notice};
use sinkhole_history::JobOutcome;

pub(crate) fn now_wall_ms() -> u64 {
    sinkhole_base::utc::now_ms()
}

/// `12400` → `12 400`.
pub fn group_digits(n: u64) -> String {
    let digits: Vec<char> = n.to_string().chars().collect();
    let groups: Vec<String> = digits.rchunks(3).rev().map(|g| g.iter().collect()).collect();
    groups.join(" ")
}

impl<L: Launcher> Coordinator<L> {
    pub(crate) fn new(
        cfg: JobConfig,
        launcher: L,
        history: sinkhole_history::Writer,
        bootstrap: watch::Receiver<Vec<String>>,
        commands: mpsc::UnboundedReceiver<Command>,
        notices: mpsc::UnboundedSender<Notice>,
    ) -> anyhow::Result<Self> {
        for sub in [cfg.dir.workers(), cfg.dir.logs()] {
            std::fs::create_dir_all(&sub).with_context(|| format!("creating {}", sub.display()))?;
        }
        let store = CheckpointStore::open(cfg.dir.checkpoints())?;
        let start = history.start();
        let socket = control::socket_path(&cfg.dir, &cfg.run_id, cfg.mode);
        let (inbox_tx, inbox) = mpsc::unbounded_channel();
        let (released_tx, released) = mpsc::unbounded_channel();
        Ok(Coordinator {
            cfg,
            launcher,
            bootstrap,
            history,
            store,
            socket,
            start,
            inbox,
            inbox_tx,
            conn_counter: Arc::new(AtomicU64::new(0)),
            min_conn: 0,
            conns: HashMap::new(),
            accept_task: None,
            phase: Phase::Down { until: start },
            attempt: Attempt::empty(),
            failures: 0,
            next_id: 1,
            pending: BTreeMap::new(),
            next_trigger: None,
            final_id: None,
            final_complete: None,
            completed: 0,
            latest_complete: None,
            job_started: None,
            committables_dropped: 0,
            outcome: None,
            commands,
            commands_open: true,
            notices,
            released_tx,
            released,
            held: BTreeMap::new(),
            to_notify: VecDeque::new(),
            outage: None,
            hooks: vec![],
            delayed: vec![],
            crash: None,
        })
    }

    pub(super) fn parallelism(&self) -> u32 {
        self.cfg.job.parallelism
    }

    pub(super) fn record(&mut self, source: Source, kind: EventKind) -> anyhow::Result<()> {
        self.history.record(source, kind).context("writing the history")?;
        Ok(())
    }

    pub(super) fn coord(&mut self, kind: EventKind) -> anyhow::Result<()> {
        self.record(Source::Coordinator, kind)
    }

    pub(super) fn progress(&self, line: &str) {
        if self.cfg.progress {
            eprintln!("{}  {line}", self.cfg.mode.name());
        }
    }

    /// Every phase change goes through here (see [`super::phase`]).
    pub(super) fn set_phase(&mut self, next: Phase) -> anyhow::Result<()> {
        self.phase = self.phase.to(next)?;
        Ok(())
    }

    /// Tells the nemesis, without waiting for it.
    pub(super) fn notice(&self, at: Instant, event: JobEvent) {
        let _ = self.notices.send(Notice { at, event, hold: None });
    }

    /// Tells the nemesis and lets it hold `point` (released when it lets go,
    /// at once if nobody listens).
    pub(super) fn notice_held(&mut self, at: Instant, event: JobEvent, point: Point) {
        let (hold, released) = Hold::new();
        *self.held.entry(point).or_insert(0) += 1;
        let tx = self.released_tx.clone();
        tokio::spawn(async move {
            let _ = released.await;
            let _ = tx.send(point);
        });
        let _ = self.notices.send(Notice { at, event, hold: Some(hold) });
    }

    pub(super) fn is_held(&self, point: Point) -> bool {
        self.held.get(&point).is_some_and(|n| *n > 0)
    }

    /// Runs the job to its end and returns what happened.
    pub async fn run(mut self) -> anyhow::Result<JobReport> {
        let _ = std::fs::remove_file(&self.socket);
        let listener =
            UnixListener::bind(&self.socket).with_context(|| format!("binding {}", self.socket.display()))?;
        self.accept_task =
            Some(tokio::spawn(control::accept_loop(listener, self.inbox_tx.clone(), self.conn_counter.clone())));
        let result = self.drive().await;
        let finish = self.finish().await;
        result?;
        finish
    }

    async fn drive(&mut self) -> anyhow::Result<()> {
        enum Wake {
            Msg(Option<Inbound>),
            Cmd(Option<Command>),
            Released(Option<Point>),
            Tick,
        }
        self.launch(0).await?;
        while self.outcome.is_none() {
            let wake = tokio::select! {
                m = self.inbox.recv() => Wake::Msg(m),
                c = self.commands.recv(), if self.commands_open => Wake::Cmd(c),
                p = self.released.recv() => Wake::Released(p),
                _ = tokio::time::sleep(TICK) => Wake::Tick,
            };
            match wake {
                Wake::Msg(Some(inb)) => {
                    self.on_inbound(inb).await?;
                    while self.outcome.is_none() {
                        match self.inbox.try_recv() {
                            Ok(inb) => self.on_inbound(inb).await?,
                            Err(_) => break,
                        }
                    }
                }
                Wake::Msg(None) => anyhow::bail!("the control socket's accept loop ended"),
                Wake::Cmd(Some(c)) => self.on_command(c).await?,
                Wake::Cmd(None) => self.commands_open = false,
                Wake::Released(Some(p)) => self.on_released(p).await?,
                Wake::Released(None) | Wake::Tick => {}
            }
            if self.outcome.is_none() {
                self.on_tick().await?;
            }
        }
        Ok(())
    }

    // ----- worker messages -----------------------------------------------

    async fn on_inbound(&mut self, inb: Inbound) -> anyhow::Result<()> {
        if inb.conn < self.min_conn {
            return Ok(()); // a killed attempt's connection: its last words do not count
        }
        match inb.what {
            ConnEvent::Hello { peer_pid, writer } => {
                self.conns.insert(inb.conn, Conn { peer_pid, writer: Some(writer), subtask: None, buffered: vec![] });
                self.try_bind_by_peer(inb.conn).await?;
            }
            ConnEvent::Msg(msg) => {
                let Some(bound) = self.conns.get(&inb.conn).map(|c| c.subtask) else { return Ok(()) };
                match bound {
                    Some(s) => self.on_message(s, inb.at, *msg).await?,
                    None => {
                        // Tied by the pid a Ready reports, else by the subtask
                        // a message names (connections of killed attempts were
                        // dropped above, so a claim is from this attempt).
                        let target = match &*msg {
                            FromWorker::Ready { pid, .. } if self.slot_of_pid(*pid).is_some() => self.slot_of_pid(*pid),
                            other => control::claimed_subtask(other)
                                .map(|s| s as usize)
                                .filter(|&s| self.attempt.slots.get(s).is_some_and(|sl| sl.conn.is_none())),
                        };
                        if let Some(conn) = self.conns.get_mut(&inb.conn) {
                            conn.buffered.push((inb.at, *msg));
                        }
                        if let Some(s) = target {
                            self.bind(inb.conn, s).await?;
                        }
                    }
                }
            }
            ConnEvent::Closed(err) => {
                let Some(conn) = self.conns.remove(&inb.conn) else { return Ok(()) };
                if let Some(s) = conn.subtask {
                    let slot = &mut self.attempt.slots[s as usize];
                    if slot.conn == Some(inb.conn) {
                        slot.writer = None;
                        slot.closed = Some((inb.at, err.unwrap_or_else(|| "closed by the worker".into())));
                    }
                }
            }
        }
        Ok(())
    }

    pub(super) async fn try_bind_by_peer(&mut self, conn: u64) -> anyhow::Result<()> {
        let Some(peer) = self.conns.get(&conn).and_then(|c| c.peer_pid) else { return Ok(()) };
        if let Some(s) = self.slot_of_pid(peer) {
            self.bind(conn, s).await?;
        }
        Ok(())
    }

    /// Ties connection `conn` to slot `s` and replays what it sent so far.
    async fn bind(&mut self, conn: u64, s: usize) -> anyhow::Result<()> {
        if self.attempt.slots[s].conn.is_some() {
            return Ok(()); // one connection per worker; a second one stays unbound
        }
        let Some(c) = self.conns.get_mut(&conn) else { return Ok(()) };
        c.subtask = Some(s as u32);
        let writer = c.writer.take();
        let buffered = std::mem::take(&mut c.buffered);
        let slot = &mut self.attempt.slots[s];
        slot.conn = Some(conn);
        slot.writer = writer;
        for (at, msg) in buffered {
            self.on_message(s as u32, at, msg).await?;
        }
        Ok(())
    }

    async fn on_message(&mut self, s: u32, at: Instant, msg: FromWorker) -> anyhow::Result<()> {
        if self.phase == Phase::Done {
            return Ok(());
        }
        let i = s as usize;
        {
            let slot = &mut self.attempt.slots[i];
            if at > slot.last_heard {
                slot.last_heard = at;
            }
        }
        match msg {
            FromWorker::Ready { .. } => {
                self.attempt.slots[i].ready = true;
                if self.attempt.all_ready_at.is_none() && self.attempt.slots.iter().all(|s| s.ready) {
                    let now = Instant::now();
                    self.attempt.all_ready_at = Some(now);
                    self.next_trigger = Some(now + Duration::from_millis(self.cfg.job.checkpoint_interval_ms));
                    self.notice(now, JobEvent::Up { attempt: self.attempt.number });
                }
            }
            FromWorker::Heartbeat { next_seq, .. } => self.attempt.slots[i].next_seq = next_seq,
            FromWorker::Ack { id, state, .. } => {
                if self.is_held(Point::Acks(id)) {
                    if let Some(p) = self.pending.get_mut(&id) {
                        p.waiting.push((s, at, state));
                    }
                    return Ok(());
                }
                // Completed once the nemesis lets go of the ack (`on_released`).
                self.take_ack(s, at, id, state)?;
            }
            FromWorker::Committed { id, .. } => {
                let slot = &mut self.attempt.slots[i];
                slot.committed = slot.committed.max(id);
                let event = JobEvent::Committed { subtask: s, checkpoint: id };
                let unacked = std::mem::take(&mut self.attempt.slots[i].unacknowledged);
                if self.cfg.share.as_ref().is_some_and(|sh| sh.ack == AckPolicy::AfterCommit) {
                    // What a Flink source does in notifyCheckpointComplete, after
                    // the sink's commit: a fault on this report lands between the
                    // two. A report that left nothing unacknowledged has no window:
                    // it sets off no trigger.
                    if unacked.is_some_and(|(c, n)| c == id && n > 0) {
                        let point = Point::AckInput { attempt: self.attempt.number, subtask: s, id };
                        self.notice_held(at, event, point);
                    } else {
                        self.send(i, &ToWorker::Acknowledge { id }).await;
                    }
                } else {
                    self.notice(at, event);
                }
            }
            FromWorker::EndOfInput { .. } => {
                let slot = &mut self.attempt.slots[i];
                slot.end_of_input = true;
                slot.next_seq = self.cfg.job.records_per_subtask;
            }
            FromWorker::Event { event } => {
                if let EventKind::CommitFinished { outcome: CommitOutcome::Dropped { .. }, .. } = &event {
                    self.committables_dropped += 1;
                }
                if let EventKind::ShareUnacknowledged { checkpoint, records } = &event {
                    self.attempt.slots[i].unacknowledged = Some((*checkpoint, *records));
                }
                let unsupported = match &event {
                    EventKind::Unsupported { what, error } => Some(format!("{what} → {error}")),
                    _ => None,
                };
                let job_event = match &event {
                    EventKind::CommitStarted { transactional_id, checkpoint, restored } => {
                        Some(JobEvent::CommitStarted {
                            subtask: s,
                            checkpoint: *checkpoint,
                            transactional_id: transactional_id.clone(),
                            restored: *restored,
                        })
                    }
                    EventKind::TxnOpened { transactional_id, checkpoint } => Some(JobEvent::TxnOpened {
                        subtask: s,
                        checkpoint: *checkpoint,
                        transactional_id: transactional_id.clone(),
                    }),
                    EventKind::ShareAcknowledged { .. } => share_ack_notice(&event)
                        .map(|(checkpoint, _)| JobEvent::Acknowledged { subtask: s, checkpoint }),
                    _ => None,
                };
                // Acknowledged at n's barrier (before-commit, at-poll): n completes,
                // and so commits, only once the nemesis lets go of the report.
                let hold = share_ack_notice(&event).and_then(|(_, hold)| hold);
                self.history.record_at(at, Source::Worker { subtask: s }, event).context("writing the history")?;
                match (job_event, hold) {
                    (Some(e), Some(point)) => self.notice_held(at, e, point),
                    (Some(e), None) => self.notice(at, e),
                    _ => {}
                }
                if let Some(error) = unsupported {
                    self.progress(&format!("unsupported on this broker: {error}"));
                    self.end(JobOutcome::Unsupported { error }).await?;
                }
            }
            FromWorker::Failed { error, .. } => {
                self.fail_over(Some(s), format!("subtask {s} failed: {error}")).await?;
            }
        }
        Ok(())
    }

    // ----- checkpoints ---------------------------------------------------

    pub(super) async fn trigger(&mut self, is_final: bool) -> anyhow::Result<()> {
        let id = self.next_id;
        self.next_id += 1;
        let p = self.parallelism() as usize;
        self.pending.insert(id, Pending::new(p));
        self.attempt.last_triggered = Some(id);
        if is_final {
            self.final_id = Some(id);
        }
        self.coord(EventKind::CheckpointTriggered { id })?;
        for s in 0..p {
            self.send(s, &ToWorker::Checkpoint { id }).await;
        }
        // Faults waiting for this trigger act while the barriers are being
        // taken: the acks are taken once the nemesis lets go.
        self.notice_held(Instant::now(), JobEvent::CheckpointTriggered { id }, Point::Acks(id));
        Ok(())
    }

    /// Subtask `s`'s ack of checkpoint `id`, arrived at `at`.
    fn take_ack(&mut self, s: u32, at: Instant, id: u64, state: SubtaskState) -> anyhow::Result<()> {
        if self.pending.contains_key(&id) && self.decline_armed(id, s)? {
            return Ok(());
        }
        let Some(pending) = self.pending.get_mut(&id) else { return Ok(()) }; // aborted meanwhile
        let i = s as usize;
        if pending.acks[i].is_some() {
            return Ok(());
        }
        self.attempt.slots[i].next_seq = state.next_seq;
        pending.acks[i] = Some(state);
        self.history
            .record_at(at, Source::Coordinator, EventKind::CheckpointAcked { id, subtask: s })
            .context("writing the history")?;
        self.notice_held(at, JobEvent::CheckpointAcked { id, subtask: s }, Point::Complete(id));
        Ok(())
    }

    /// A held point was let go.
    async fn on_released(&mut self, point: Point) -> anyhow::Result<()> {
        if let Some(n) = self.held.get_mut(&point) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.held.remove(&point);
            }
        }
        if self.is_held(point) {
            return Ok(());
        }
        match point {
            Point::Acks(id) => {
                let waiting = self.pending.get_mut(&id).map(|p| std::mem::take(&mut p.waiting)).unwrap_or_default();
                // Taken now: the history shows the coordinator's events in
                // the order it took them.
                for (s, _arrived, state) in waiting {
                    self.take_ack(s, Instant::now(), id, state)?;
                }
            }
            Point::AckInput { attempt, subtask, id } => {
                if attempt == self.attempt.number && self.phase == Phase::Running {
                    self.send(subtask as usize, &ToWorker::Acknowledge { id }).await;
                }
            }
            Point::Complete(_) | Point::Notify(_) => {}
        }
        if self.phase == Phase::Running {
            self.complete_ready().await?;
        }
        self.notify_ready().await
    }

    /// Checkpoints whose acks are all in and released: complete them.
    pub(super) async fn complete_ready(&mut self) -> anyhow::Result<()> {
        let p = self.parallelism() as usize;
        let ready: Vec<u64> = self
            .pending
            .iter()
            .filter(|(id, pe)| {
                pe.acks.iter().filter(|a| a.is_some()).count() == p
                    && !self.is_held(Point::Complete(**id))
                    && !self.is_held(Point::Acks(**id))
            })
            .map(|(id, _)| *id)
            .collect();
        for id in ready {
            if self.pending.contains_key(&id) {
                self.complete(id).await?;
            }
        }
        Ok(())
    }

    pub(super) fn abort(&mut self, id: u64, reason: String) -> anyhow::Result<()> {
        if self.pending.remove(&id).is_some() {
            if self.final_id == Some(id) {
                self.final_id = None; // a new final checkpoint is triggered
            }
            self.coord(EventKind::CheckpointAborted { id, reason })?;
        }
        Ok(())
    }

    pub(super) fn abort_all(&mut self, reason: &str) -> anyhow::Result<()> {
        let ids: Vec<u64> = self.pending.keys().copied().collect();
        for id in ids {
            self.abort(id, reason.to_string())?;
        }
        Ok(())
    }

    /// Every subtask acked `id`: persist it, and let the nemesis act in the
    /// window before the notification.
    async fn complete(&mut self, id: u64) -> anyhow::Result<()> {
        let Some(pending) = self.pending.remove(&id) else { return Ok(()) };
        let subtasks: Vec<SubtaskState> = pending.acks.into_iter().map(|a| a.unwrap_or_default()).collect();
        let records: u64 = subtasks.iter().map(|s| s.next_seq).sum();
        let record = CheckpointRecord { id, subtasks, persisted_wall_ms: now_wall_ms() };
        let path = self.store.persist(&record)?;
        self.coord(EventKind::CheckpointPersisted { id, path: path.display().to_string() })?;
        self.completed += 1;
        self.latest_complete = Some(id);
        let older: Vec<u64> = self.pending.range(..id).map(|(&k, _)| k).collect();
        for old in older {
            self.abort(old, format!("subsumed by checkpoint {id}"))?;
        }
        let total = self.cfg.job.records_per_subtask * self.parallelism() as u64;
        self.progress(&format!(
            "checkpoint {id} complete ({}/{} records, attempt {}){}",
            group_digits(records),
            group_digits(total),
            self.attempt.number,
            if self.final_id == Some(id) { ", final" } else { "" }
        ));
        // The dangerous window: complete, not yet notified.
        self.to_notify.push_back((id, self.attempt.number));
        self.notice_held(Instant::now(), JobEvent::CheckpointPersisted { id }, Point::Notify(id));
        Ok(())
    }

    /// Notifies, in order, the persisted checkpoints the nemesis let go.
    pub(super) async fn notify_ready(&mut self) -> anyhow::Result<()> {
        while let Some(&(id, attempt)) = self.to_notify.front() {
            if self.is_held(Point::Notify(id)) {
                break;
            }
            self.to_notify.pop_front();
            self.notify(id, attempt).await?;
        }
        Ok(())
    }

    /// Sends "checkpoint `id` complete" (persisted by `attempt`) to every
    /// subtask, unless the job is failing over or a fault withholds it.
    async fn notify(&mut self, id: u64, attempt: u32) -> anyhow::Result<()> {
        let crashed = self.crash.take_if(|(c, _)| *c == id);
        let killed = self.attempt.slots.iter().position(|s| s.killed_by_fault);
        let failed_over = attempt != self.attempt.number;
        if self.phase != Phase::Running || killed.is_some() || failed_over {
            if let Some(s) = killed {
                // Deterministic window: a job that is failing over notifies no one.
                self.coord(EventKind::Note {
                    text: format!("checkpoint {id} not notified: subtask {s} was killed before the notification"),
                })?;
            } else if failed_over {
                self.coord(EventKind::Note {
                    text: format!(
                        "checkpoint {id} not notified: the job failed over (attempt {attempt} → {}) while its notification was held",
                        self.attempt.number
                    ),
                })?;
            }
            if let Some((_, tx)) = crashed {
                let _ = tx.send(HookEnd::Crashed { checkpoint: id, notified: false });
            }
            return Ok(());
        }
        let withheld = self.take_notification_hooks(id);
        let now = Instant::now();
        for s in 0..self.attempt.slots.len() {
            match withheld.get(&(s as u32)) {
                None => {
                    self.send(s, &ToWorker::Complete { id }).await;
                }
                Some(&(k, Some(delay_ms))) => {
                    self.delayed.push(Late {
                        due: now + Duration::from_millis(delay_ms),
                        subtask: s as u32,
                        checkpoint: id,
                        attempt: self.attempt.number,
                        hook: k,
                    });
                }
                Some(_) => {}
            }
        }
        self.coord(EventKind::CheckpointNotified { id })?;
        self.report_withheld(id, &withheld)?;
        if let Some((_, tx)) = crashed {
            // Cannot happen while the crash's kills are in place; said if it does.
            let _ = tx.send(HookEnd::Crashed { checkpoint: id, notified: true });
        }
        self.notice(Instant::now(), JobEvent::CheckpointNotified { id });
        if self.final_id == Some(id) {
            self.final_complete = Some((id, Instant::now()));
        }
        Ok(())
    }

    // ----- the clock -----------------------------------------------------

    async fn on_tick(&mut self) -> anyhow::Result<()> {
        let now = Instant::now();
        self.reap(now)?;
        match self.phase {
            Phase::Down { until } if now >= until => {
                let next = self.attempt.number + 1;
                self.launch(next).await?;
            }
            Phase::Running => {
                self.complete_ready().await?;
                self.notify_ready().await?;
                self.tick_running(now).await?;
            }
            Phase::Stopping { since } => {
                if self.attempt.slots.iter().all(|s| s.exit.is_some()) {
                    self.end(JobOutcome::Finished).await?;
                } else if now.duration_since(since) > STOP_TIMEOUT {
                    self.coord(EventKind::Note {
                        text: format!("workers did not exit within {STOP_TIMEOUT:?} of Stop: killed"),
                    })?;
                    self.kill_all("no exit after Stop")?;
                    self.end(JobOutcome::Finished).await?;
                }
            }
            Phase::Down { .. } => self.notify_ready().await?,
            Phase::Done => {}
        }
        if self.phase != Phase::Done {
            self.send_delayed_notifications(now).await?;
        }
        Ok(())
    }

    // ----- the end -------------------------------------------------------

    /// Settles what the nemesis still waits for and builds the report. Runs
    /// on error paths too: nothing may outlive the job.
    async fn finish(&mut self) -> anyhow::Result<JobReport> {
        if let Some(t) = self.accept_task.take() {
            t.abort();
        }
        let _ = std::fs::remove_file(&self.socket);
        if self.phase != Phase::Done {
            // An error ended the loop.
            let _ = self.kill_all("the runner stopped on an error");
        }
        self.settle_hooks();
        self.notice(Instant::now(), JobEvent::Ended);
        self.history.sync().context("syncing the history")?;
        let job = self
            .outcome
            .clone()
            .unwrap_or_else(|| JobOutcome::Failed { reason: "the runner stopped on an error".into() });
        Ok(JobReport {
            job,
            attempts: self.attempt.number + 1,
            checkpoints_completed: self.completed,
            committables_dropped: self.committables_dropped,
            wall_ms: self.start.elapsed().as_millis() as u64,
        })
    }

    /// Subtasks whose notification of `id` a hook withholds: (hook index,
    /// delay if it is late rather than dropped).
    fn take_notification_hooks(&mut self, id: u64) -> BTreeMap<u32, (usize, Option<u64>)> {
        let is_final = self.final_id == Some(id);
        let mut out = BTreeMap::new();
        for (k, h) in self.hooks.iter_mut().enumerate() {
            if let Some(delay) = h.claims_notification(id, is_final) {
                for &t in h.subtasks() {
                    out.entry(t).or_insert((k, delay));
                }
            }
        }
        out
    }

    /// The distinct hooks in `withheld`.
    pub(super) fn hooks_in(withheld: &BTreeMap<u32, (usize, Option<u64>)>) -> BTreeSet<usize> {
        withheld.values().map(|(k, _)| *k).collect()
    }
}

/// What a share acknowledgement tells the nemesis: the checkpoint it was
/// for, and the point held until the nemesis lets go (acknowledged at n's
/// barrier, under `before-commit` and `at-poll`: n completes, and so
/// commits, only after the fault is in place). Only an acknowledgement the
/// broker took counts: one it refused for every record (their locks had run
/// out: INVALID_RECORD_STATE) acknowledged nothing, and a kill after it
/// would not be a kill between the acknowledgement and the commit; the
/// trigger waits for a later one that took effect.
fn share_ack_notice(event: &EventKind) -> Option<(u64, Option<Point>)> {
    match event {
        EventKind::ShareAcknowledged { checkpoint, policy, records, refused, .. } if records > refused => {
            Some((*checkpoint, (*policy != AckPolicy::AfterCommit).then_some(Point::Complete(*checkpoint))))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(policy: AckPolicy, records: u64, refused: u64) -> EventKind {
        EventKind::ShareAcknowledged {
            checkpoint: 3,
            policy,
            records,
            ranges: vec![],
            refused,
            errors: Default::default(),
            latency_us: 0,
        }
    }

    #[test]
    fn an_acknowledgement_counts_only_if_the_broker_took_some_of_it() {
        assert_eq!(share_ack_notice(&ack(AckPolicy::BeforeCommit, 100, 0)), Some((3, Some(Point::Complete(3)))));
        assert_eq!(share_ack_notice(&ack(AckPolicy::AtPoll, 100, 99)), Some((3, Some(Point::Complete(3)))));
        assert_eq!(share_ack_notice(&ack(AckPolicy::AfterCommit, 100, 0)), Some((3, None)), "nothing to hold");
        // Every ACCEPT refused (the locks ran out): nothing was acknowledged.
        assert_eq!(share_ack_notice(&ack(AckPolicy::BeforeCommit, 100, 100)), None);
        assert_eq!(share_ack_notice(&ack(AckPolicy::AfterCommit, 0, 0)), None);
        assert_eq!(share_ack_notice(&EventKind::ShareJoined { group: "g".into(), member_id: "m".into() }), None);
    }
}
