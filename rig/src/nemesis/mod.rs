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
//! confirmed ([`sinkhole_history::fault`]), and how late it fired against its
//! time or event. A fault that fired more than [`LATE_BOUND`] late for a
//! reason other than a restore in progress did not hit the scenario that
//! was written: the verdict says so and is inconclusive.
//!
//! One nemesis serves every mode of a run at once ([`members`]): a fault on
//! a job fires per mode on that mode's own time or event, a fault on the
//! cluster fires once for all.
//!
//! - [`members`]: the jobs served and which of them a fault is for;
//! - [`clock`]: reading the jobs' notices and the time, firing what is due;
//! - [`triggers`]: when a fault is due;
//! - [`targets`]: what it aims at, and the proxy rule a network or protocol fault installs;
//! - [`workers`], [`brokers`], [`network`], [`coordinator`]: one family of kinds each,
//!   with how it fires and how it heals; [`readers`]: the workers family's faults on the live
//!   readers.
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use anyhow::Context;
use sinkhole_faults::proxy::Proxy;
use sinkhole_model::{EventKind, SinkMode, Source};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use crate::subject::{Notice, Subject};
use sinkhole_cluster::Cluster;
use sinkhole_history::fault::{End, FailedStart, FaultEffect, FaultRecord, Firing, Start, Trigger};
use sinkhole_history::Stamp;
use sinkhole_scenario::{FaultSpec, Timing, When};

pub mod brokers;
pub mod clock;
pub mod coordinator;
pub mod members;
pub mod network;
pub mod readers;
pub mod targets;
pub mod triggers;
pub mod workers;

use brokers::{ClusterJob, ClusterOp};
use members::MemberState;
pub use members::{Lead, Member};

pub use sinkhole_history::trigger::LATE_BOUND;
/// Lateness below this is the loop's own granularity and is not recorded.
const LATE_NOTED: Duration = Duration::from_millis(100);
const TICK: Duration = Duration::from_millis(10);

/// What the nemesis needs to know of the run besides its faults.
#[derive(Debug, Clone)]
pub struct Config {
    pub mode: SinkMode,
    pub topic: String,
    pub partitions: u32,
    /// When the broker's view of a pause's transactions is taken.
    pub timing: Timing,
    pub restart_delay_ms: u64,
    pub progress: bool,
    /// The share group the mode's job reads, with a share-group source
    /// (`group-coordinator` targets its coordinator).
    pub share_group: Option<String>,
}

/// One scheduled fault and what became of it.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    pub spec: FaultSpec,
    pub name: String,
    pub kind: String,
    /// Its action was queued (a cluster action waiting for the one in flight).
    pub queued: bool,
    /// Set off by its event, waiting out its `after_ms`: (its trigger, when it is due, the
    /// event's checkpoint).
    pub delayed: Option<(Trigger, Instant, Option<u64>)>,
    /// Times it was fired (an `every_ms` fault fires more than once).
    pub count: u32,
    /// Every firing, in order (each is a FaultStarted/FaultEnded pair).
    pub firings: Vec<Firing>,
    /// Set once it was skipped.
    pub skipped: Option<String>,
    /// The member (job) it is for; None: the cluster, shared by every member.
    pub member: Option<usize>,
    /// The member whose event or clock set it off.
    pub fired_by: Option<usize>,
}

impl Slot {
    pub fn new(spec: FaultSpec, index: usize, member: Option<usize>) -> Slot {
        Slot {
            name: fault_name(&spec, index),
            kind: spec.kind.name().to_string(),
            spec,
            queued: false,
            delayed: None,
            count: 0,
            firings: vec![],
            skipped: None,
            member,
            fired_by: None,
        }
    }

    pub fn fired(&self) -> bool {
        self.queued || self.delayed.is_some() || self.count > 0 || !self.firings.is_empty()
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
    /// Start killed readers again, or let paused ones poll again (their indexes).
    Readers(readers::ReaderAction, Vec<u32>),
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
    /// The jobs served, and what their notices told of each.
    pub(crate) members: Vec<Member<S>>,
    pub(crate) states: Vec<MemberState>,
    pub(crate) lead: Lead,
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
    pub(crate) bootstrap: watch::Sender<Vec<String>>,
    pub(crate) heals: Vec<Heal>,
    pub(crate) waits: JoinSet<(usize, Wait)>,
    /// Waits outstanding per fault.
    pub(crate) waiting: Vec<usize>,
    /// Faults that fell due while they could not act, and what they waited for.
    pub(crate) deferred: Vec<Option<Deferral>>,
}

/// What a time-triggered fault that fell due waits for (see `clock.rs`): firing
/// then would have acted on nothing, and come out unconfirmed by bad luck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deferral {
    /// A kill or pause of workers while its job has none up: the restore.
    Restore,
    /// A network or protocol fault while the only broker is down: its return.
    Broker,
}

impl<'a, S: Subject, B: Cluster + ?Sized> Nemesis<'a, S, B> {
    /// A nemesis for the jobs of `members` (one per mode running now): each
    /// job fault of `specs` once per member, each cluster fault once.
    pub fn new(
        specs: Vec<FaultSpec>,
        members: Vec<Member<S>>,
        lead: Lead,
        cluster: &'a mut B,
        bootstrap: watch::Sender<Vec<String>>,
    ) -> Self {
        let mut slots = vec![];
        for (i, spec) in specs.into_iter().enumerate() {
            if spec.job_scoped() {
                for m in 0..members.len() {
                    slots.push(Slot::new(spec.clone(), i, Some(m)));
                }
            } else {
                slots.push(Slot::new(spec, i, None));
            }
        }
        let n = slots.len();
        bootstrap.send_replace(cluster.client_bootstrap());
        Nemesis {
            slots,
            states: vec![MemberState::default(); members.len()],
            members,
            lead,
            proxy: cluster.proxy(),
            isolates: cluster.isolates_nodes(),
            node_ids: cluster.node_ids(),
            cluster: Some(cluster),
            op: None,
            queue: VecDeque::new(),
            op_fault: None,
            last_op_fault: None,
            bootstrap,
            heals: vec![],
            waits: JoinSet::new(),
            waiting: vec![0; n],
            deferred: vec![None; n],
        }
    }

    /// The member fault `f` acts on: its own, or for a cluster fault the one
    /// that set it off (the lead, before it fired).
    pub(crate) fn who(&self, f: usize) -> usize {
        let s = &self.slots[f];
        s.member.or(s.fired_by).unwrap_or(match self.lead {
            Lead::Member(m) => m,
            Lead::First => 0,
        })
    }

    pub(crate) fn subject(&self, f: usize) -> &S {
        &self.members[self.who(f)].subject
    }

    pub(crate) fn cfg(&self, f: usize) -> &Config {
        &self.members[self.who(f)].cfg
    }

    /// The attempt of the job fault `f` acts on.
    pub(crate) fn attempt(&self, f: usize) -> u32 {
        self.states[self.who(f)].attempt
    }

    /// The members whose history fault `f`'s events go to: its own, or every one.
    fn audience(&self, f: usize) -> Vec<usize> {
        match self.slots[f].member {
            Some(m) => vec![m],
            None => (0..self.members.len()).collect(),
        }
    }

    pub(crate) fn spec(&self, f: usize) -> &FaultSpec {
        &self.slots[f].spec
    }

    /// A progress line about fault `f`, under its mode (or every mode's).
    pub(crate) fn progress(&self, f: usize, line: &str) {
        let cfg = self.cfg(f);
        if !cfg.progress {
            return;
        }
        match self.slots[f].member {
            Some(_) => eprintln!("{}  {line}", cfg.mode.name()),
            None if self.members.len() == 1 => eprintln!("{}  {line}", cfg.mode.name()),
            None => {
                let all: Vec<&str> = self.members.iter().map(|m| m.cfg.mode.name()).collect();
                eprintln!("{}  {line}", all.join("+"))
            }
        }
    }

    /// Runs until every job has ended, then heals whatever is still faulted
    /// and returns every member's fault records (the ones that never fired
    /// say why), in the members' order. `notices` carries each member's
    /// notices with its index.
    pub async fn run(
        mut self,
        mut notices: mpsc::UnboundedReceiver<(usize, Notice)>,
    ) -> anyhow::Result<Vec<Vec<FaultRecord>>> {
        #[allow(clippy::large_enum_variant)] // one lives at a time, on the stack
        enum Wake<'b, B: ?Sized> {
            Notice(Option<(usize, Notice)>),
            Op((&'b mut B, brokers::Done)),
            Wait(Option<(usize, Wait)>),
            Tick,
        }
        while !self.ended() {
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
                Wake::Notice(Some((m, n))) => self.on_notice(m, n).await?,
                Wake::Notice(None) => {
                    for st in &mut self.states {
                        st.ended = true;
                    }
                }
                Wake::Op((cluster, done)) => self.op_done(cluster, done)?,
                Wake::Wait(Some((f, w))) => self.on_wait(f, w)?,
                Wake::Wait(None) | Wake::Tick => {}
            }
            if !self.ended() {
                self.on_tick().await?;
            }
        }
        self.finish().await
    }

    /// Every job has ended.
    fn ended(&self) -> bool {
        self.states.iter().all(|s| s.ended)
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

    /// Undoes (or, for an observation, looks at) what a fault did.
    async fn heal(&mut self, h: Heal) -> anyhow::Result<()> {
        let f = h.fault;
        match h.action {
            HealAction::ResumeWorkers(frozen) => self.resume(f, frozen).await,
            HealAction::Readers(action, readers) => self.heal_readers(f, action, readers).await,
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
                let action = sinkhole_cluster::NodeAction::Start;
                self.queue.push_back(ClusterJob::Heal { fault: f, node, action });
                self.pump()
            }
            HealAction::ResumeBroker(node) => {
                let action = sinkhole_cluster::NodeAction::Resume;
                self.queue.push_back(ClusterJob::Heal { fault: f, node, action });
                self.pump()
            }
        }
    }

    // ----- records -------------------------------------------------------

    /// Records an event of fault `f` in the history of every member it is for,
    /// at one moment: each history's fsync must not make the firing look later
    /// in the next.
    pub(crate) fn record(&self, f: usize, kind: EventKind) -> anyhow::Result<()> {
        let stamp = Stamp::now();
        for m in self.audience(f) {
            let history = &self.members[m].history;
            history.record_stamped(stamp, Source::Fault, kind.clone()).context("writing the history")?;
        }
        Ok(())
    }

    pub(crate) fn fault_started(&mut self, f: usize, confirmed: bool, start: Start) -> anyhow::Result<()> {
        let (name, fault) = (self.slots[f].name.clone(), self.slots[f].kind.clone());
        self.progress(f, &format!("fault {name} ({fault}) started, confirmed: {confirmed}"));
        self.record(f, EventKind::FaultStarted { name, fault, effect: start.to_value() })?;
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
            Some(c) => self.progress(f, &format!("fault {name} ({fault}) ended, confirmed: {c}")),
            None => self.progress(f, &format!("fault {name} ({fault}) ended")),
        }
        self.record(f, EventKind::FaultEnded { name, fault, effect: end.to_value() })?;
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
    async fn finish(&mut self) -> anyhow::Result<Vec<Vec<FaultRecord>>> {
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
        if self.slots.iter().any(|s| s.fired() && s.spec.kind.kind().family() == sinkhole_scenario::Family::Brokers) {
            let cluster = self.cluster.as_deref_mut().expect("no cluster action in flight");
            if let Err(e) = cluster.wait_ready(Duration::from_secs(120)).await {
                let text = format!("the cluster was not ready after the faults: {e}");
                for m in &self.members {
                    m.history
                        .record(Source::Coordinator, EventKind::Note { text: text.clone() })
                        .context("writing the history")?;
                }
                anyhow::bail!("the cluster did not recover after the faults: {e}");
            }
        }
        // The jobs have ended: every hook and outage answers now.
        while let Some(r) = self.waits.join_next().await {
            if let Ok((f, w)) = r {
                self.on_wait(f, w)?;
            }
        }
        for f in 0..self.slots.len() {
            let waited = self.slots[f].delayed.take().is_some();
            if self.slots[f].fired() {
                continue;
            }
            let st = &self.states[self.who(f)];
            let ran_ms = st.job_started.map(|t| t.elapsed().as_millis() as u64).unwrap_or(0);
            let reason = if waited {
                format!(
                    "its event came, but the job ended (after {ran_ms} ms) before its after_ms ({} ms) had passed",
                    self.slots[f].spec.after_ms.unwrap_or(0)
                )
            } else if self.deferred[f] == Some(Deferral::Restore) {
                // It fell due while its job was restoring, and waited for the
                // workers to be up again; the job ended first.
                format!(
                    "it fell due while the job was restoring and waited for its workers; the job ended after {ran_ms} ms, before they were up again"
                )
            } else if self.deferred[f] == Some(Deferral::Broker) {
                format!(
                    "it fell due while the only broker was down and waited for it; the job ended after {ran_ms} ms, before the broker was back"
                )
            } else {
                triggers::skipped_reason(&self.slots[f].spec, st.latest_persisted, ran_ms)
            };
            let (name, fault) = (self.slots[f].name.clone(), self.slots[f].kind.clone());
            self.record(f, EventKind::FaultSkipped { name, fault, reason: reason.clone() })?;
            self.slots[f].skipped = Some(reason);
        }
        for m in &self.members {
            m.history.sync().context("syncing the history")?;
        }
        Ok((0..self.members.len())
            .map(|m| self.slots.iter().filter(|s| s.member.is_none_or(|x| x == m)).filter_map(Slot::record).collect())
            .collect())
    }
}
