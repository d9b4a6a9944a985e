//! The nemesis: fault injection, on a task of its own, reaching the system
//! under test only through the [`Subject`] trait and the cluster only through
//! its backend trait.
//!
//! Jepsen's nemesis is a client of the cluster that the test's generator
//! drives; here the schedule is the scenario's fault list, and the nemesis
//! reads the job's [`Notice`]s to know when an event trigger has come. It
//! never runs inside the job's loop: a broker restart that takes 13 s runs
//! beside the job, and only what its window needs waits — a fault triggered
//! by "checkpoint 3 persisted" holds checkpoint 3's notification until the
//! fault's effect is in place (the node is down), not until it is healed,
//! while checkpoints, heartbeats and other faults go on.
//!
//! Every fault leaves an effect the kernel, the cluster or the proxy
//! confirmed ([`crate::history::fault`]), and how late it fired against its
//! time or event. A fault that fired more than [`LATE_BOUND`] late for a
//! reason other than a restore in progress did not hit the scenario that
//! was written: the verdict says so and is inconclusive.
//!
//! - [`triggers`]: when a fault is due;
//! - [`targets`]: what it aims at, and the proxy rule a network or protocol fault installs;
//! - [`workers`], [`brokers`], [`network`], [`coordinator`]: one family of kinds each,
//!   with how it fires and how it heals.
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use anyhow::Context;
use sinkhole_faults::proxy::Proxy;
use sinkhole_workloads::model::{EventKind, SinkMode, Source};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::cluster::Cluster;
use crate::history::fault::{End, FailedStart, FaultEffect, FaultRecord, Firing, Start, Trigger};
use crate::history::{self};
use crate::scenario::{FaultKind, FaultSpec, When};
use crate::subject::{JobEvent, Notice, Subject};

pub mod brokers;
pub mod coordinator;
pub mod network;
pub mod targets;
pub mod triggers;
pub mod workers;

use brokers::{ClusterJob, ClusterOp};

/// A fault that fires later than this after its time or event, for any
/// reason but a restore in progress, makes the verdict inconclusive.
pub const LATE_BOUND: Duration = Duration::from_secs(1);
/// Lateness below this is the loop's own granularity and is not recorded.
const LATE_NOTED: Duration = Duration::from_millis(100);
const TICK: Duration = Duration::from_millis(10);

/// What the nemesis needs to know of the run besides its faults.
#[derive(Debug, Clone)]
pub struct Config {
    pub mode: SinkMode,
    pub topic: String,
    pub partitions: u32,
    pub transaction_timeout_ms: i32,
    pub restart_delay_ms: u64,
    pub progress: bool,
}

/// One scheduled fault and what became of it.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub spec: FaultSpec,
    pub name: String,
    pub kind: String,
    /// Its action was queued (a cluster action waiting for the one in flight).
    pub queued: bool,
    /// Times it was fired (an `every_ms` fault fires more than once).
    pub count: u32,
    /// Every firing, in order (each is a FaultStarted/FaultEnded pair).
    pub firings: Vec<Firing>,
    /// Set once it was skipped.
    pub skipped: Option<String>,
}

impl Slot {
    pub fn new(spec: FaultSpec, index: usize) -> Slot {
        Slot {
            name: fault_name(&spec, index),
            kind: spec.kind.name().to_string(),
            spec,
            queued: false,
            count: 0,
            firings: vec![],
            skipped: None,
        }
    }

    pub fn fired(&self) -> bool {
        self.queued || self.count > 0 || !self.firings.is_empty()
    }

    fn repeats(&self) -> bool {
        matches!(self.spec.when, When::EveryMs(_))
    }

    /// The record: confirmed only when every firing was.
    pub fn record(&self) -> Option<FaultRecord> {
        if let Some(reason) = &self.skipped {
            return Some(FaultRecord {
                name: self.name.clone(),
                kind: self.kind.clone(),
                fired: false,
                confirmed: false,
                effect: FaultEffect::Skipped { skipped: reason.clone() },
            });
        }
        let effect = FaultEffect::of(&self.firings, self.repeats())?;
        let confirmed = self.firings.iter().all(|f| f.confirmed);
        Some(FaultRecord { name: self.name.clone(), kind: self.kind.clone(), fired: true, confirmed, effect })
    }
}

/// A fault's label: its `name`, or its kind and index in the schedule.
pub fn fault_name(spec: &FaultSpec, index: usize) -> String {
    spec.name.clone().unwrap_or_else(|| format!("{}-{index}", spec.kind.name()))
}

/// What a fault still has to undo, and when (None: when the job ends).
#[derive(Debug)]
pub(crate) struct Heal {
    pub at: Option<Instant>,
    pub fault: usize,
    pub action: HealAction,
}

#[derive(Debug)]
pub(crate) enum HealAction {
    /// SIGCONT to these (subtask, pid).
    ResumeWorkers(Vec<(u32, u32)>),
    StartBroker(i32),
    ResumeBroker(i32),
    /// Remove a proxy rule (the network heals; held frames are released).
    RemoveRule(sinkhole_faults::proxy::RuleId),
    /// Reconnect nodes the engine disconnected (containers `net-blackhole`).
    Rejoin(Vec<i32>),
    /// Not a heal: while frozen workers are still frozen, past the
    /// transaction timeout, ask the broker what became of the transactions
    /// they hold open (DescribeTransactions). The fault goes on.
    ObserveOpen(Vec<String>),
}

/// Something a fault waits for from the subject.
pub(crate) enum Wait {
    Hook(Result<crate::subject::HookEnd, tokio::sync::oneshot::error::RecvError>),
    Outage(Result<crate::subject::OutageEnd, tokio::sync::oneshot::error::RecvError>, u64),
}

/// Why a fault fired when it did.
pub(crate) struct Due {
    pub trigger: Trigger,
    /// When it should have fired.
    pub at: Instant,
    /// The checkpoint of the event that set it off, if any.
    pub checkpoint: Option<u64>,
    /// Where the subject waits for it.
    pub hold: Option<crate::subject::Hold>,
}

pub struct Nemesis<'a, S: Subject, B: Cluster + ?Sized> {
    pub(crate) slots: Vec<Slot>,
    pub(crate) subject: S,
    /// None while a cluster action runs (it holds the cluster).
    pub(crate) cluster: Option<&'a mut B>,
    pub(crate) op: Option<ClusterOp<'a, B>>,
    pub(crate) queue: VecDeque<ClusterJob>,
    /// The fault whose cluster action is in flight, and the one before it.
    pub(crate) op_fault: Option<usize>,
    pub(crate) last_op_fault: Option<usize>,
    pub(crate) proxy: Option<Proxy>,
    /// The cluster isolates nodes itself (containers) instead of through the proxy.
    pub(crate) isolates: bool,
    pub(crate) node_ids: Vec<i32>,
    pub(crate) history: history::Writer,
    pub(crate) bootstrap: watch::Sender<Vec<String>>,
    pub(crate) cfg: Config,
    pub(crate) job_started: Option<Instant>,
    pub(crate) attempt: u32,
    /// Every worker of the current attempt is up.
    pub(crate) up: bool,
    pub(crate) ended: bool,
    pub(crate) latest_persisted: Option<u64>,
    pub(crate) heals: Vec<Heal>,
    pub(crate) waits: JoinSet<(usize, Wait)>,
    /// Waits outstanding per fault.
    pub(crate) waiting: Vec<usize>,
    /// Faults that fell due while the job was restoring and waited for it.
    pub(crate) deferred: Vec<bool>,
}

impl<'a, S: Subject, B: Cluster + ?Sized> Nemesis<'a, S, B> {
    pub fn new(
        specs: Vec<FaultSpec>,
        subject: S,
        cluster: &'a mut B,
        history: history::Writer,
        bootstrap: watch::Sender<Vec<String>>,
        cfg: Config,
    ) -> Self {
        let n = specs.len();
        let slots = specs.into_iter().enumerate().map(|(i, s)| Slot::new(s, i)).collect();
        bootstrap.send_replace(cluster.client_bootstrap());
        Nemesis {
            slots,
            subject,
            proxy: cluster.proxy(),
            isolates: cluster.isolates_nodes(),
            node_ids: cluster.node_ids(),
            cluster: Some(cluster),
            op: None,
            queue: VecDeque::new(),
            op_fault: None,
            last_op_fault: None,
            history,
            bootstrap,
            cfg,
            job_started: None,
            attempt: 0,
            up: false,
            ended: false,
            latest_persisted: None,
            heals: vec![],
            waits: JoinSet::new(),
            waiting: vec![0; n],
            deferred: vec![false; n],
        }
    }

    pub(crate) fn spec(&self, f: usize) -> &FaultSpec {
        &self.slots[f].spec
    }

    pub(crate) fn progress(&self, line: &str) {
        if self.cfg.progress {
            eprintln!("{}  {line}", self.cfg.mode.name());
        }
    }

    /// Runs until the job has ended, then heals whatever is still faulted and
    /// returns every fault's record (the ones that never fired say why).
    pub async fn run(mut self, mut notices: mpsc::UnboundedReceiver<Notice>) -> anyhow::Result<Vec<FaultRecord>> {
        #[allow(clippy::large_enum_variant)] // one lives at a time, on the stack
        enum Wake<'b, B: ?Sized> {
            Notice(Option<Notice>),
            Op((&'b mut B, brokers::Done)),
            Wait(Option<(usize, Wait)>),
            Tick,
        }
        while !self.ended {
            let wake = {
                let (op, waits) = (&mut self.op, &mut self.waits);
                tokio::select! {
                    n = notices.recv() => Wake::Notice(n),
                    d = async { op.as_mut().expect("guarded by the precondition").await }, if op.is_some() => Wake::Op(d),
                    w = waits.join_next(), if !waits.is_empty() => Wake::Wait(w.and_then(|r| r.ok())),
                    _ = tokio::time::sleep(TICK) => Wake::Tick,
                }
            };
            match wake {
                Wake::Notice(Some(n)) => self.on_notice(n).await?,
                Wake::Notice(None) => self.ended = true,
                Wake::Op((cluster, done)) => self.op_done(cluster, done)?,
                Wake::Wait(Some((f, w))) => self.on_wait(f, w)?,
                Wake::Wait(None) | Wake::Tick => {}
            }
            if !self.ended {
                self.on_tick().await?;
            }
        }
        self.finish().await
    }

    async fn on_notice(&mut self, n: Notice) -> anyhow::Result<()> {
        match &n.event {
            JobEvent::Started { attempt, .. } => {
                self.job_started.get_or_insert(n.at);
                self.attempt = *attempt;
                self.up = false;
            }
            JobEvent::Up { attempt } => {
                self.attempt = *attempt;
                self.up = true;
            }
            JobEvent::Down { .. } => self.up = false,
            JobEvent::CheckpointPersisted { id } => self.latest_persisted = Some(*id),
            JobEvent::Ended => {
                self.ended = true;
                return Ok(());
            }
            _ => {}
        }
        let fired: Vec<bool> = self.slots.iter().map(Slot::fired).collect();
        let specs: Vec<FaultSpec> = self.slots.iter().map(|s| s.spec.clone()).collect();
        for f in triggers::due_on_event(&specs, &fired, &n.event) {
            let trigger = triggers::event_trigger(&n.event);
            let due = Due { trigger, at: n.at, checkpoint: n.event.checkpoint(), hold: n.hold.clone() };
            self.fire(f, due).await?;
        }
        // Whatever the faults did not keep, the subject gets back now.
        drop(n.hold);
        Ok(())
    }

    async fn on_tick(&mut self) -> anyhow::Result<()> {
        let now = Instant::now();
        if let Some(started) = self.job_started {
            let elapsed = now.saturating_duration_since(started).as_millis() as u64;
            // A kill or pause of workers that falls due while the job is
            // restoring (no worker, or not all ready yet) waits until the
            // workers are up: signalling nobody would prove nothing, and the
            // fault would come out unconfirmed by bad luck of timing.
            let up = self.up;
            let waits =
                |spec: &FaultSpec| !up && matches!(spec.kind.kind(), FaultKind::KillWorkers | FaultKind::PauseWorkers);
            let specs: Vec<FaultSpec> = self.slots.iter().map(|s| s.spec.clone()).collect();
            let fired: Vec<bool> = self.slots.iter().map(Slot::fired).collect();
            for f in triggers::due_at(&specs, &fired, elapsed) {
                if waits(&specs[f]) {
                    self.deferred[f] = true;
                    continue;
                }
                let When::AtMs(t) = specs[f].when else { continue };
                let mut trigger = Trigger { at_ms: Some(elapsed), ..Trigger::default() };
                let at = started + Duration::from_millis(t);
                if self.deferred[f] && elapsed > t + 250 {
                    // Deferred by a restore: allowed, and said.
                    trigger.deferred_from_ms = Some(t);
                }
                self.fire(f, Due { trigger, at, checkpoint: None, hold: None }).await?;
            }
            let counts: Vec<u32> = self.slots.iter().map(|s| s.count).collect();
            let own: Vec<bool> = (0..self.slots.len()).map(|f| self.busy(f)).collect();
            for f in triggers::due_every(&specs, &counts, &own, elapsed) {
                if waits(&specs[f]) {
                    self.deferred[f] = true;
                }
            }
            let busy: Vec<bool> = (0..self.slots.len()).map(|f| own[f] || waits(&specs[f])).collect();
            for f in triggers::due_every(&specs, &counts, &busy, elapsed) {
                let When::EveryMs(period) = specs[f].when else { continue };
                let due_ms = triggers::every_due_ms(period, counts[f]);
                let mut trigger = Trigger {
                    every_ms: Some(period),
                    firing: Some(counts[f] + 1),
                    at_ms: Some(elapsed),
                    ..Trigger::default()
                };
                if std::mem::take(&mut self.deferred[f]) && elapsed > due_ms + 250 {
                    trigger.deferred_from_ms = Some(due_ms);
                }
                let at = started + Duration::from_millis(due_ms);
                self.fire(f, Due { trigger, at, checkpoint: None, hold: None }).await?;
            }
        }
        let due: Vec<Heal> = {
            let (due, keep) = std::mem::take(&mut self.heals).into_iter().partition(|h| h.at.is_some_and(|t| t <= now));
            self.heals = keep;
            due
        };
        for h in due {
            self.heal(h).await?;
        }
        Ok(())
    }

    /// Whether fault `f`'s latest firing is still in effect (to be healed,
    /// queued, waited for or in flight): a repeated fault waits for it.
    pub(crate) fn busy(&self, f: usize) -> bool {
        self.heals.iter().any(|h| h.fault == f)
            || self.queue.iter().any(|j| j.fault() == f)
            || self.op_fault == Some(f)
            || self.waiting[f] > 0
    }

    /// How late a fault fires now against when it was due; noted in its
    /// trigger when it is more than the loop's granularity.
    pub(crate) fn note_lateness(trigger: &mut Trigger, due: Instant, because: Option<String>) {
        let late = Instant::now().saturating_duration_since(due);
        if late >= LATE_NOTED && trigger.deferred_from_ms.is_none() {
            trigger.late_ms = Some(late.as_millis() as u64);
            trigger.late_because = because.or_else(|| Some("the nemesis was busy".to_string()));
        }
    }

    /// Fires fault `f`.
    async fn fire(&mut self, f: usize, mut due: Due) -> anyhow::Result<()> {
        self.slots[f].count += 1;
        let kind = self.spec(f).kind.kind();
        if !matches!(
            kind,
            FaultKind::BrokerKill
                | FaultKind::BrokerStop
                | FaultKind::BrokerRestart
                | FaultKind::BrokerPause
                | FaultKind::RollingRestart
        ) {
            Self::note_lateness(&mut due.trigger, due.at, None);
        }
        match kind {
            FaultKind::KillWorkers | FaultKind::PauseWorkers | FaultKind::JobOutage => self.fire_workers(f, due).await,
            FaultKind::BrokerKill
            | FaultKind::BrokerStop
            | FaultKind::BrokerRestart
            | FaultKind::BrokerPause
            | FaultKind::RollingRestart => self.fire_broker(f, due).await,
            FaultKind::DropNotification
            | FaultKind::DelayNotification
            | FaultKind::DeclineCheckpoint
            | FaultKind::CoordinatorCrash => self.fire_coordinator(f, due).await,
            k if k.needs_proxy() => self.fire_network(f, due).await,
            other => self.fault_failed(f, due.trigger, format!("{} is not implemented", other.name())),
        }
    }

    /// Undoes (or, for an observation, looks at) what a fault did.
    async fn heal(&mut self, h: Heal) -> anyhow::Result<()> {
        let f = h.fault;
        match h.action {
            HealAction::ResumeWorkers(frozen) => self.resume(f, frozen).await,
            HealAction::RemoveRule(id) => self.remove_rule(f, id),
            HealAction::ObserveOpen(ids) => {
                self.queue.push_back(ClusterJob::Observe { fault: f, ids });
                self.pump()
            }
            HealAction::Rejoin(nodes) => {
                self.queue.push_back(ClusterJob::Rejoin { fault: f, nodes });
                self.pump()
            }
            HealAction::StartBroker(node) => {
                let action = crate::cluster::NodeAction::Start;
                self.queue.push_back(ClusterJob::Heal { fault: f, node, action });
                self.pump()
            }
            HealAction::ResumeBroker(node) => {
                let action = crate::cluster::NodeAction::Resume;
                self.queue.push_back(ClusterJob::Heal { fault: f, node, action });
                self.pump()
            }
        }
    }

    // ----- records -------------------------------------------------------

    pub(crate) fn record(&self, kind: EventKind) -> anyhow::Result<()> {
        self.history.record(Source::Fault, kind).context("writing the history")?;
        Ok(())
    }

    pub(crate) fn fault_started(&mut self, f: usize, confirmed: bool, start: Start) -> anyhow::Result<()> {
        let (name, fault) = (self.slots[f].name.clone(), self.slots[f].kind.clone());
        self.progress(&format!("fault {name} ({fault}) started, confirmed: {confirmed}"));
        self.record(EventKind::FaultStarted { name, fault, effect: start.to_value() })?;
        self.slots[f].firings.push(Firing { start, end: None, confirmed });
        Ok(())
    }

    pub(crate) fn fault_ended(&mut self, f: usize, end: End) -> anyhow::Result<()> {
        self.fault_ended_with(f, end, None)
    }

    /// Ends the fault's latest firing; `confirmed` settles its confirmation
    /// when that is known only now (a proxy rule's stats, a notification
    /// that was withheld or sent late).
    pub(crate) fn fault_ended_with(&mut self, f: usize, end: End, confirmed: Option<bool>) -> anyhow::Result<()> {
        let (name, fault) = (self.slots[f].name.clone(), self.slots[f].kind.clone());
        match confirmed {
            Some(c) => self.progress(&format!("fault {name} ({fault}) ended, confirmed: {c}")),
            None => self.progress(&format!("fault {name} ({fault}) ended")),
        }
        self.record(EventKind::FaultEnded { name, fault, effect: end.to_value() })?;
        if let Some(last) = self.slots[f].firings.last_mut() {
            last.end = Some(end);
            if let Some(c) = confirmed {
                last.confirmed = c;
            }
        }
        Ok(())
    }

    /// A fault that could not be aimed (bad target, nothing to act on): fired,
    /// not confirmed, and said so.
    pub(crate) fn fault_failed(&mut self, f: usize, trigger: Trigger, error: String) -> anyhow::Result<()> {
        self.fault_started(f, false, Start::Failed(FailedStart { trigger, error }))
    }

    pub(crate) fn wait_for(&mut self, f: usize, w: impl std::future::Future<Output = Wait> + Send + 'static) {
        self.waiting[f] += 1;
        self.waits.spawn(async move { (f, w.await) });
    }

    fn on_wait(&mut self, f: usize, w: Wait) -> anyhow::Result<()> {
        self.waiting[f] = self.waiting[f].saturating_sub(1);
        match w {
            Wait::Hook(end) => self.hook_acted(f, end),
            Wait::Outage(end, planned_ms) => self.outage_ended(f, end, planned_ms),
        }
    }

    // ----- the end -------------------------------------------------------

    /// Heals whatever is still faulted, records the faults that never fired.
    /// Runs on error paths too.
    async fn finish(&mut self) -> anyhow::Result<Vec<FaultRecord>> {
        // Heals still due (a broker killed for the rest of the job among
        // them), then every cluster action to its end, one after the other.
        for h in std::mem::take(&mut self.heals) {
            self.heal(h).await?;
        }
        loop {
            self.wait_op().await?;
            if let Some(job) = self.queue.pop_front() {
                self.job_now(job).await?;
            } else if !self.heals.is_empty() {
                for h in std::mem::take(&mut self.heals) {
                    self.heal(h).await?;
                }
            } else if self.op.is_none() {
                break;
            }
        }
        let broker_fault = |k: FaultKind| {
            matches!(
                k,
                FaultKind::BrokerKill
                    | FaultKind::BrokerStop
                    | FaultKind::BrokerRestart
                    | FaultKind::BrokerPause
                    | FaultKind::RollingRestart
            )
        };
        if self.slots.iter().any(|s| s.fired() && broker_fault(s.spec.kind.kind())) {
            let cluster = self.cluster.as_deref_mut().expect("no cluster action in flight");
            if let Err(e) = cluster.wait_ready(Duration::from_secs(120)).await {
                self.history
                    .record(
                        Source::Coordinator,
                        EventKind::Note { text: format!("the cluster was not ready after the faults: {e}") },
                    )
                    .context("writing the history")?;
                anyhow::bail!("the cluster did not recover after the faults: {e}");
            }
        }
        // The job has ended: every hook and outage answers now.
        while let Some(r) = self.waits.join_next().await {
            if let Ok((f, w)) = r {
                self.on_wait(f, w)?;
            }
        }
        let ran_ms = self.job_started.map(|t| t.elapsed().as_millis() as u64).unwrap_or(0);
        for f in 0..self.slots.len() {
            if self.slots[f].fired() {
                continue;
            }
            let reason = triggers::skipped_reason(&self.slots[f].spec, self.latest_persisted, ran_ms);
            let (name, fault) = (self.slots[f].name.clone(), self.slots[f].kind.clone());
            self.record(EventKind::FaultSkipped { name, fault, reason: reason.clone() })?;
            self.slots[f].skipped = Some(reason);
        }
        self.history.sync().context("syncing the history")?;
        Ok(self.slots.iter().filter_map(Slot::record).collect())
    }
}
