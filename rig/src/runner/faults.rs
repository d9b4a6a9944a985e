//! The first faults: worker kills, pauses and outages, broker kills, restarts
//! and pauses; their triggers and targets. The cluster operations they need
//! are [`crate::cluster::Cluster`]'s.
//!
//! Every fault leaves an effect the kernel or the cluster confirmed (a signal
//! whose result was observed, a broker that answered again, the node that was
//! the transaction coordinator at that moment), in `FaultStarted` /
//! `FaultEnded` history events and in [`FaultRecord`]s. A fault that did not
//! take effect is recorded as unconfirmed, never silently passed over: a run
//! whose fault did nothing proves nothing.
use std::time::{Duration, Instant};

use serde_json::json;
use sinkhole_faults::proxy::{Action, Frames, Match, PeerGroup, Rule};
use sinkhole_workloads::model::{EventKind, Source};

use crate::cluster::NodeEffect;
use crate::scenario::{FaultKind, FaultSpec, FrameDirection, Group, NamedTarget, NetDirection, Target, When};

use super::FaultRecord;

/// How long a node action a fault takes may last (a graceful stop, a start until the node
/// answers again).
pub const NODE_ACTION_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the cluster gets to be ready again after the faults, before the drain.
pub const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// The scenario name of a fault kind, e.g. `kill-workers`.
pub fn kind_name(kind: FaultKind) -> String {
    kind.name().to_string()
}

/// A fault's label: its `name`, or its kind and index in the schedule.
pub fn fault_name(spec: &FaultSpec, index: usize) -> String {
    spec.name.clone().unwrap_or_else(|| format!("{}-{index}", kind_name(spec.kind)))
}

/// Time-triggered faults due `elapsed_ms` after the job first started, in
/// schedule order.
pub fn due_at(specs: &[FaultSpec], fired: &[bool], elapsed_ms: u64) -> Vec<usize> {
    let mut due: Vec<(u64, usize)> = specs
        .iter()
        .enumerate()
        .filter(|(i, _)| !fired[*i])
        .filter_map(|(i, s)| match s.when {
            When::AtMs(t) if t <= elapsed_ms => Some((t, i)),
            _ => None,
        })
        .collect();
    due.sort();
    due.into_iter().map(|(_, i)| i).collect()
}

/// Faults an event triggers, in schedule order: those waiting for this event
/// of checkpoint n, or — when n never happened (aborted, lost to a failover,
/// declined) — for an earlier id, so "n" means "n, or the first later one".
/// `source` is who recorded the event (worker events carry their subtask
/// there). One-shot triggers only; `fired` marks those already fired.
pub fn due_on_event(specs: &[FaultSpec], fired: &[bool], event: &EventKind, source: &Source) -> Vec<usize> {
    specs
        .iter()
        .enumerate()
        .filter(|(i, s)| !fired[*i] && event_matches(&s.when, event, source))
        .map(|(i, _)| i)
        .collect()
}

/// Whether `event` (recorded by `source`) is the moment trigger `when` waits for.
pub fn event_matches(when: &When, event: &EventKind, source: &Source) -> bool {
    match (*when, event, source) {
        (When::CheckpointTriggered(n), EventKind::CheckpointTriggered { id }, Source::Coordinator) => n <= *id,
        (
            When::CheckpointAcked { checkpoint, subtask },
            EventKind::CheckpointAcked { id, subtask: s },
            Source::Coordinator,
        ) => subtask == *s && checkpoint <= *id,
        (When::CheckpointPersisted(n), EventKind::CheckpointPersisted { id, .. }, Source::Coordinator) => n <= *id,
        (When::CheckpointNotified(n), EventKind::CheckpointNotified { id }, Source::Coordinator) => n <= *id,
        // The first commit of checkpoint n by any worker (live or restored).
        (When::CommitStarted(n), EventKind::CommitStarted { checkpoint, .. }, Source::Worker { .. }) => {
            n <= *checkpoint
        }
        (
            When::TxnOpened { subtask, checkpoint },
            EventKind::TxnOpened { checkpoint: c, .. },
            Source::Worker { subtask: s },
        ) => subtask == *s && checkpoint.is_none_or(|n| n <= *c),
        _ => false,
    }
}

/// `every_ms` faults due `elapsed_ms` after the job first started: firing
/// k (1-based) is due at k × period. `count[i]` firings happened so far;
/// a fault whose last firing is still in effect (`busy`) waits for its heal
/// (a pause is not stacked on a pause), then fires at once if overdue.
pub fn due_every(specs: &[FaultSpec], count: &[u32], busy: &[bool], elapsed_ms: u64) -> Vec<usize> {
    specs
        .iter()
        .enumerate()
        .filter(|(i, s)| match s.when {
            When::EveryMs(p) if p > 0 => {
                !busy[*i]
                    && s.times.is_none_or(|t| count[*i] < t)
                    && (u64::from(count[*i]) + 1).saturating_mul(p) <= elapsed_ms
            }
            _ => false,
        })
        .map(|(i, _)| i)
        .collect()
}

/// Why a fault that never fired did not.
pub fn skipped_reason(spec: &FaultSpec, latest_persisted: Option<u64>, job_ran_ms: u64) -> String {
    match spec.when {
        When::AtMs(t) => format!("the job ended after {job_ran_ms} ms, before at_ms {t}"),
        When::EveryMs(p) => format!("the job ended after {job_ran_ms} ms, before the first period of every_ms {p}"),
        When::CheckpointPersisted(n) => match latest_persisted {
            Some(l) => format!("the job ended before checkpoint {n} was persisted (the last was {l})"),
            None => format!("the job ended before checkpoint {n} was persisted (none was)"),
        },
        When::CheckpointTriggered(n) => format!("the job ended before checkpoint {n} was triggered"),
        When::CheckpointAcked { checkpoint, subtask } => {
            format!("the job ended before subtask {subtask} acked checkpoint {checkpoint}")
        }
        When::CheckpointNotified(n) => format!("the job ended before checkpoint {n} was notified"),
        When::CommitStarted(n) => format!("the job ended before any worker started committing checkpoint {n}"),
        When::TxnOpened { subtask, checkpoint: Some(n) } => {
            format!("the job ended before subtask {subtask} opened the transaction of checkpoint {n}")
        }
        When::TxnOpened { subtask, checkpoint: None } => {
            format!("the job ended before subtask {subtask} opened a transaction")
        }
    }
}

/// A trigger as it is recorded in a fault's effect.
pub fn trigger_json(when: &When, event: Option<&EventKind>) -> serde_json::Value {
    let mut t = serde_json::to_value(when).unwrap_or(serde_json::Value::Null);
    if let (Some(obj), Some(e)) = (t.as_object_mut(), event) {
        obj.insert("event".into(), serde_json::to_value(e).unwrap_or_default());
    }
    t
}

/// Which subtasks a worker fault acts on.
pub fn worker_targets(target: &Option<Target>, parallelism: u32) -> Result<Vec<u32>, String> {
    match target {
        None | Some(Target::Named(NamedTarget::All)) => Ok((0..parallelism).collect()),
        Some(Target::Ids(ids)) => ids
            .iter()
            .map(|&i| {
                if i >= 0 && (i as u64) < parallelism as u64 {
                    Ok(i as u32)
                } else {
                    Err(format!("subtask {i} does not exist (parallelism {parallelism})"))
                }
            })
            .collect(),
        Some(Target::Named(NamedTarget::TxnCoordinator)) | Some(Target::Coordinator { .. }) => {
            Err("txn-coordinator names a broker, not a worker".into())
        }
        Some(Target::Named(NamedTarget::Controller | NamedTarget::Leader)) | Some(Target::Leader { .. }) => {
            Err("controller and leader name brokers, not workers".into())
        }
    }
}

/// A broker fault's target before it is resolved against the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerTarget {
    Nodes(Vec<i32>),
    /// The coordinator of this subtask's current transactional id.
    CoordinatorOf(u32),
    /// The KRaft quorum leader.
    Controller,
    /// The leader of this partition of the scenario's topic.
    LeaderOf(u32),
}

pub fn broker_target(target: &Option<Target>, nodes: &[i32], parallelism: u32) -> Result<BrokerTarget, String> {
    match target {
        None | Some(Target::Named(NamedTarget::All)) => Ok(BrokerTarget::Nodes(nodes.to_vec())),
        Some(Target::Ids(ids)) => ids
            .iter()
            .map(|&i| {
                if nodes.iter().any(|&n| n as i64 == i) {
                    Ok(i as i32)
                } else {
                    Err(format!("there is no node {i}; nodes are {nodes:?}"))
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map(BrokerTarget::Nodes),
        Some(Target::Named(NamedTarget::TxnCoordinator)) => Ok(BrokerTarget::CoordinatorOf(0)),
        Some(Target::Coordinator { txn_coordinator: s }) if *s < parallelism => Ok(BrokerTarget::CoordinatorOf(*s)),
        Some(Target::Coordinator { txn_coordinator: s }) => {
            Err(format!("txn-coordinator of subtask {s}: there is no such subtask (parallelism {parallelism})"))
        }
        // Resolved by the runner (Cluster::controller / leader_of) when the fault fires.
        Some(Target::Named(NamedTarget::Controller)) => Ok(BrokerTarget::Controller),
        Some(Target::Named(NamedTarget::Leader)) => Ok(BrokerTarget::LeaderOf(0)),
        Some(Target::Leader { leader: p }) => Ok(BrokerTarget::LeaderOf(*p)),
    }
}

/// Whether a fault kind goes through the proxy.
pub fn is_proxy_fault(kind: FaultKind) -> bool {
    matches!(
        kind,
        FaultKind::NetPartition
            | FaultKind::NetBlackhole
            | FaultKind::NetReset
            | FaultKind::NetDelay
            | FaultKind::NetLoss
            | FaultKind::ProtocolDrop
            | FaultKind::ProtocolDelay
            | FaultKind::ProtocolError
    )
}

/// Whether the scenario's cluster gets the proxy: `cluster.proxy` when set,
/// else exactly when a fault (explicit, or from the resolved random
/// schedule, which is in `faults` by then) is a network or protocol fault.
pub fn needs_proxy(s: &crate::scenario::Scenario) -> bool {
    s.cluster.proxy.unwrap_or_else(|| {
        s.faults.iter().any(|f| is_proxy_fault(f.kind))
            || s.schedule.as_ref().is_some_and(|r| {
                matches!(
                    r.mix,
                    crate::scenario::Mix::Network | crate::scenario::Mix::Protocol | crate::scenario::Mix::All
                )
            })
    })
}

pub fn peer_group(g: Group) -> PeerGroup {
    match g {
        Group::Workers => PeerGroup::Workers,
        Group::Worker(n) => PeerGroup::Worker(n),
        Group::Brokers => PeerGroup::Brokers,
        Group::Broker(n) => PeerGroup::Broker(n),
    }
}

/// The proxy rule a network or protocol fault installs. `transactional_id`
/// is the resolved id (a `{subtask: S}` selector resolved by the caller at
/// the moment of firing); `blackholed` the resolved target nodes of a
/// `net-blackhole`.
///
/// Network faults act on whole Kafka frames between two groups, as Jepsen's
/// partition nemeses cut links between node sets: a partition or blackhole
/// drops frames (connections hang, as an iptables DROP makes them), a reset
/// sends RST, delay holds frames, loss drops each frame with a probability.
pub fn proxy_rule(
    spec: &FaultSpec,
    name: &str,
    transactional_id: Option<String>,
    blackholed: &[i32],
) -> Result<Rule, String> {
    let groups = |g: &Option<Vec<Group>>| g.iter().flatten().copied().map(peer_group).collect::<Vec<_>>();
    let one_way = spec.direction == Some(NetDirection::OneWay);
    let mut m = Match {
        from: groups(&spec.from),
        to: groups(&spec.to),
        both_ways: !one_way,
        one_way,
        probability: spec.probability,
        ..Match::default()
    };
    let delay = || -> Result<Action, String> {
        let delay_ms = spec.delay_ms.ok_or_else(|| format!("{} needs delay_ms", spec.kind.name()))?;
        Ok(Action::Delay { delay_ms, jitter_ms: spec.jitter_ms.unwrap_or(0) })
    };
    let action = match spec.kind {
        FaultKind::NetPartition => {
            if m.from.is_empty() || m.to.is_empty() {
                return Err("net-partition needs both from and to groups".into());
            }
            Action::Drop
        }
        FaultKind::NetBlackhole => {
            if blackholed.is_empty() {
                return Err("net-blackhole: no target node".into());
            }
            // Everyone to those nodes, and their answers and own connections back.
            m.from = vec![];
            m.to = blackholed.iter().map(|&n| PeerGroup::Broker(n)).collect();
            m.both_ways = true;
            m.one_way = false;
            Action::Drop
        }
        FaultKind::NetReset => Action::Reset,
        FaultKind::NetDelay => delay()?,
        FaultKind::NetLoss => {
            match spec.probability {
                Some(p) if p > 0.0 && p <= 1.0 => {}
                other => return Err(format!("net-loss needs a probability in (0, 1], got {other:?}")),
            }
            Action::Drop
        }
        FaultKind::ProtocolDrop | FaultKind::ProtocolDelay | FaultKind::ProtocolError => {
            m.api_keys = spec
                .apis
                .iter()
                .flatten()
                .map(|a| crate::kafka_names::api_key(a).ok_or_else(|| format!("{a:?} is not a Kafka API name")))
                .collect::<Result<_, _>>()?;
            m.frames = Some(match spec.frames.unwrap_or(FrameDirection::Request) {
                FrameDirection::Request => Frames::Request,
                FrameDirection::Response => Frames::Response,
            });
            m.transactional_id = transactional_id;
            m.nth = spec.nth;
            match spec.kind {
                FaultKind::ProtocolDrop => Action::Drop,
                FaultKind::ProtocolDelay => delay()?,
                _ => {
                    let e = spec.error.as_ref().ok_or("protocol-error needs error (a Kafka error name or code)")?;
                    Action::Error { code: crate::kafka_names::error_code(e)? }
                }
            }
        }
        other => return Err(format!("{} is not a network or protocol fault", other.name())),
    };
    Ok(Rule { name: name.to_string(), matches: m, action })
}

/// Whether every signal of a node action was seen to take effect and, for
/// starts, the node answered again.
pub fn node_effect_confirmed(e: &NodeEffect) -> bool {
    e.signals.iter().all(|s| s.confirmed) && e.ready != Some(false)
}

/// What a fault still has to undo, and when (None: when the job ends).
#[derive(Debug, Clone)]
pub struct Heal {
    pub at: Option<Instant>,
    pub fault: usize,
    pub action: HealAction,
}

#[derive(Debug, Clone)]
pub enum HealAction {
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

/// One firing of a fault: what it did when it started, and when it ended.
#[derive(Debug, Clone)]
pub struct Firing {
    pub start: serde_json::Value,
    pub end: Option<serde_json::Value>,
    pub confirmed: bool,
}

/// One scheduled fault and what became of it.
#[derive(Debug, Clone)]
pub struct FaultSlot {
    pub spec: FaultSpec,
    pub name: String,
    pub kind: String,
    pub record: Option<FaultRecord>,
    /// Its action was queued (a broker action waiting for the one in flight).
    pub queued: bool,
    /// Times it was fired (an `every_ms` fault fires more than once).
    pub count: u32,
    /// Every firing, in order (each is a FaultStarted/FaultEnded pair).
    pub firings: Vec<Firing>,
}

impl FaultSlot {
    pub fn new(spec: FaultSpec, index: usize) -> FaultSlot {
        FaultSlot {
            name: fault_name(&spec, index),
            kind: kind_name(spec.kind),
            spec,
            record: None,
            queued: false,
            count: 0,
            firings: vec![],
        }
    }

    pub fn fired(&self) -> bool {
        self.record.is_some() || self.queued || self.count > 0
    }

    pub fn repeats(&self) -> bool {
        matches!(self.spec.when, When::EveryMs(_))
    }

    pub fn start_firing(&mut self, confirmed: bool, effect: serde_json::Value) {
        self.firings.push(Firing { start: effect, end: None, confirmed });
        self.refresh();
    }

    /// Ends the latest firing; `confirmed` replaces its confirmation when the
    /// effect is known only at the end (a proxy rule's stats, a notification
    /// that was withheld or sent late).
    pub fn end_firing(&mut self, effect: serde_json::Value, confirmed: Option<bool>) {
        if let Some(f) = self.firings.last_mut() {
            f.end = Some(effect);
            if let Some(c) = confirmed {
                f.confirmed = c;
            }
        }
        self.refresh();
    }

    pub fn set_confirmed(&mut self, confirmed: bool) {
        if let Some(f) = self.firings.last_mut() {
            f.confirmed = confirmed;
        }
        self.refresh();
    }

    /// The record: confirmed only when every firing was; the effect keeps the
    /// first firing's `start` and the last one's `end`, and — for repeated
    /// faults — every firing under `firings`.
    fn refresh(&mut self) {
        let Some(first) = self.firings.first() else { return };
        let confirmed = self.firings.iter().all(|f| f.confirmed);
        let mut effect = json!({"start": first.start});
        if let Some(end) = self.firings.last().and_then(|f| f.end.clone()) {
            effect["end"] = end;
        }
        if self.repeats() {
            effect["firings"] = self
                .firings
                .iter()
                .map(|f| json!({"start": f.start, "end": f.end, "confirmed": f.confirmed}))
                .collect();
        }
        self.record =
            Some(FaultRecord { name: self.name.clone(), kind: self.kind.clone(), fired: true, confirmed, effect });
    }
}

/// The effect JSON of a broker action on one node.
pub fn node_effect_json(node: i32, r: &Result<NodeEffect, String>) -> serde_json::Value {
    match r {
        Ok(e) => json!({"node": node, "confirmed": node_effect_confirmed(e), "effect": e}),
        Err(err) => json!({"node": node, "confirmed": false, "error": err}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: FaultKind, when: When) -> FaultSpec {
        FaultSpec::new(kind, when)
    }

    #[test]
    fn time_triggers_fire_once_their_time_has_come_in_time_order() {
        let specs = vec![
            spec(FaultKind::KillWorkers, When::AtMs(500)),
            spec(FaultKind::PauseWorkers, When::CheckpointPersisted(2)),
            spec(FaultKind::BrokerKill, When::AtMs(100)),
            spec(FaultKind::JobOutage, When::AtMs(2_000)),
        ];
        let mut fired = vec![false; 4];
        assert!(due_at(&specs, &fired, 99).is_empty());
        assert_eq!(due_at(&specs, &fired, 100), vec![2]);
        assert_eq!(due_at(&specs, &fired, 600), vec![2, 0]);
        fired[2] = true;
        assert_eq!(due_at(&specs, &fired, 600), vec![0]);
        assert_eq!(due_at(&specs, &fired, 10_000), vec![0, 3]);
    }

    fn persisted(id: u64) -> EventKind {
        EventKind::CheckpointPersisted { id, path: format!("chk-{id}.json") }
    }

    #[test]
    fn persist_triggers_fire_at_their_checkpoint_or_the_first_persisted_after_it() {
        let specs = vec![
            spec(FaultKind::KillWorkers, When::CheckpointPersisted(3)),
            spec(FaultKind::BrokerKill, When::CheckpointPersisted(1)),
            spec(FaultKind::JobOutage, When::AtMs(0)),
        ];
        let c = Source::Coordinator;
        let mut fired = vec![false; 3];
        assert_eq!(due_on_event(&specs, &fired, &persisted(1), &c), vec![1]);
        fired[1] = true;
        assert!(due_on_event(&specs, &fired, &persisted(2), &c).is_empty());
        assert_eq!(due_on_event(&specs, &fired, &persisted(3), &c), vec![0]);
        // Checkpoint 3 was aborted; 4 is the first persisted after it.
        assert_eq!(due_on_event(&specs, &fired, &persisted(4), &c), vec![0]);
        fired[0] = true;
        assert!(due_on_event(&specs, &fired, &persisted(9), &c).is_empty());
        let r = skipped_reason(&specs[0], Some(2), 1000);
        assert!(r.contains("checkpoint 3") && r.contains("last was 2"), "{r}");
    }

    #[test]
    fn each_event_trigger_matches_its_own_event_and_source_only() {
        let specs = vec![
            spec(FaultKind::BrokerKill, When::CheckpointTriggered(2)),
            spec(FaultKind::BrokerKill, When::CheckpointAcked { checkpoint: 2, subtask: 1 }),
            spec(FaultKind::BrokerKill, When::CheckpointNotified(2)),
            spec(FaultKind::BrokerKill, When::CommitStarted(2)),
            spec(FaultKind::BrokerKill, When::TxnOpened { subtask: 1, checkpoint: Some(3) }),
            spec(FaultKind::BrokerKill, When::TxnOpened { subtask: 0, checkpoint: None }),
        ];
        let fired = vec![false; specs.len()];
        let c = Source::Coordinator;
        let w = |s| Source::Worker { subtask: s };
        let due = |e: EventKind, src: &Source| due_on_event(&specs, &fired, &e, src);
        // Triggered: 1 is too early, 2 matches, a later one matches too (2 never happened).
        assert!(due(EventKind::CheckpointTriggered { id: 1 }, &c).is_empty());
        assert_eq!(due(EventKind::CheckpointTriggered { id: 2 }, &c), vec![0]);
        assert_eq!(due(EventKind::CheckpointTriggered { id: 5 }, &c), vec![0]);
        // Acked: the subtask must be the one named.
        assert!(due(EventKind::CheckpointAcked { id: 2, subtask: 0 }, &c).is_empty());
        assert_eq!(due(EventKind::CheckpointAcked { id: 2, subtask: 1 }, &c), vec![1]);
        assert_eq!(due(EventKind::CheckpointNotified { id: 2 }, &c), vec![2]);
        assert!(due(EventKind::CheckpointNotified { id: 1 }, &c).is_empty());
        // Commit started: any worker, checkpoint ≥ 2; a coordinator event of that shape is not one.
        let commit =
            |n| EventKind::CommitStarted { transactional_id: format!("p-0-{n}"), checkpoint: n, restored: false };
        assert!(due(commit(1), &w(0)).is_empty());
        assert_eq!(due(commit(2), &w(1)), vec![3]);
        assert!(due(commit(2), &c).is_empty());
        // Txn opened: the subtask's own event; with and without a checkpoint.
        let opened = |n| EventKind::TxnOpened { transactional_id: format!("p-x-{n}"), checkpoint: n };
        assert!(due(opened(3), &w(2)).is_empty());
        assert!(due(opened(2), &w(1)).is_empty());
        assert_eq!(due(opened(3), &w(1)), vec![4]);
        assert_eq!(due(opened(1), &w(0)), vec![5]);
        // Persisted triggers none of them.
        assert!(due(persisted(9), &c).is_empty());
        for s in &specs {
            assert!(skipped_reason(s, None, 10).starts_with("the job ended before"), "{:?}", s.when);
        }
    }

    #[test]
    fn every_ms_fires_once_per_period_up_to_times_and_waits_while_busy() {
        let mut s = spec(FaultKind::PauseWorkers, When::EveryMs(1_000));
        s.times = Some(2);
        let specs =
            vec![s, spec(FaultKind::KillWorkers, When::EveryMs(300)), spec(FaultKind::KillWorkers, When::AtMs(0))];
        let idle = [false; 3];
        assert!(due_every(&specs, &[0, 0, 0], &idle, 299).is_empty());
        assert_eq!(due_every(&specs, &[0, 0, 0], &idle, 300), vec![1]);
        assert!(due_every(&specs, &[0, 1, 0], &idle, 599).is_empty());
        assert_eq!(due_every(&specs, &[0, 1, 0], &idle, 1_000), vec![0, 1]);
        // Still paused from the first firing: the second waits, then fires late.
        assert_eq!(due_every(&specs, &[1, 5, 0], &[true, false, false], 2_000), vec![1]);
        assert_eq!(due_every(&specs, &[1, 8, 0], &idle, 2_500), vec![0]);
        // `times` reached: never again; without `times`, until the job ends.
        assert!(due_every(&specs, &[2, 100, 0], &idle, 30_001).iter().all(|&i| i == 1));
        assert_eq!(due_every(&specs, &[2, 100, 0], &idle, 30_300), vec![1]);
    }

    #[test]
    fn a_repeated_fault_keeps_every_firing_and_is_confirmed_only_if_all_were() {
        let mut slot = FaultSlot::new(spec(FaultKind::PauseWorkers, When::EveryMs(100)), 0);
        assert!(!slot.fired());
        slot.count += 1;
        slot.start_firing(true, json!({"n": 1}));
        slot.end_firing(json!({"resumed": 1}), None);
        slot.count += 1;
        slot.start_firing(true, json!({"n": 2}));
        let r = slot.record.clone().unwrap();
        assert!(r.fired && r.confirmed);
        assert_eq!(r.effect["start"]["n"], 1);
        assert_eq!(r.effect["firings"].as_array().unwrap().len(), 2);
        assert_eq!(r.effect["firings"][0]["end"]["resumed"], 1);
        slot.end_firing(json!({"gone": true}), Some(false));
        let r = slot.record.clone().unwrap();
        assert!(!r.confirmed, "one unconfirmed firing makes the fault unconfirmed");
        assert_eq!(r.effect["end"]["gone"], true);
        assert_eq!(r.effect["firings"][1]["confirmed"], false);
        // A one-shot fault keeps the old shape: start and end only.
        let mut one = FaultSlot::new(spec(FaultKind::BrokerKill, When::AtMs(1)), 1);
        one.start_firing(true, json!({"a": 1}));
        one.end_firing(json!({"b": 2}), None);
        let r = one.record.unwrap();
        assert!(r.confirmed && r.effect.get("firings").is_none());
        assert_eq!(r.effect, json!({"start": {"a": 1}, "end": {"b": 2}}));
    }

    #[test]
    fn network_faults_map_to_proxy_rules() {
        use crate::scenario::ErrorName;
        let mut p = spec(FaultKind::NetPartition, When::AtMs(0));
        p.from = Some(vec![Group::Workers]);
        p.to = Some(vec![Group::Broker(1), Group::Broker(2)]);
        let r = proxy_rule(&p, "cut", None, &[]).unwrap();
        assert_eq!(r.name, "cut");
        assert_eq!(r.action, Action::Drop);
        assert_eq!(r.matches.from, vec![PeerGroup::Workers]);
        assert_eq!(r.matches.to, vec![PeerGroup::Broker(1), PeerGroup::Broker(2)]);
        assert!(r.matches.both_ways && !r.matches.one_way);
        p.direction = Some(NetDirection::OneWay);
        let r = proxy_rule(&p, "cut", None, &[]).unwrap();
        assert!(!r.matches.both_ways && r.matches.one_way);
        p.to = None;
        assert!(proxy_rule(&p, "cut", None, &[]).unwrap_err().contains("from and to"));

        let b = spec(FaultKind::NetBlackhole, When::AtMs(0));
        let r = proxy_rule(&b, "bh", None, &[2]).unwrap();
        assert!(r.matches.from.is_empty() && r.matches.both_ways);
        assert_eq!(r.matches.to, vec![PeerGroup::Broker(2)]);
        assert!(proxy_rule(&b, "bh", None, &[]).is_err());

        let r = proxy_rule(&spec(FaultKind::NetReset, When::AtMs(0)), "rst", None, &[]).unwrap();
        assert_eq!(r.action, Action::Reset);
        let mut d = spec(FaultKind::NetDelay, When::AtMs(0));
        assert!(proxy_rule(&d, "d", None, &[]).unwrap_err().contains("delay_ms"));
        d.delay_ms = Some(200);
        d.jitter_ms = Some(50);
        assert_eq!(proxy_rule(&d, "d", None, &[]).unwrap().action, Action::Delay { delay_ms: 200, jitter_ms: 50 });
        let mut l = spec(FaultKind::NetLoss, When::AtMs(0));
        assert!(proxy_rule(&l, "l", None, &[]).is_err());
        l.probability = Some(0.25);
        let r = proxy_rule(&l, "l", None, &[]).unwrap();
        assert_eq!((r.action, r.matches.probability), (Action::Drop, Some(0.25)));

        // Protocol: API keys by name, frames, error codes, the resolved id, nth.
        let mut e = spec(FaultKind::ProtocolError, When::AtMs(0));
        e.apis = Some(vec!["EndTxn".into(), "INIT_PRODUCER_ID".into()]);
        e.frames = Some(FrameDirection::Response);
        e.error = Some(ErrorName::Name("COORDINATOR_NOT_AVAILABLE".into()));
        e.nth = Some(2);
        let r = proxy_rule(&e, "err", Some("p-0-3".into()), &[]).unwrap();
        assert_eq!(r.matches.api_keys, vec![26, 22]);
        assert_eq!(r.matches.frames, Some(Frames::Response));
        assert_eq!(r.matches.transactional_id.as_deref(), Some("p-0-3"));
        assert_eq!(r.matches.nth, Some(2));
        assert_eq!(r.action, Action::Error { code: 15 });
        e.apis = Some(vec!["NoSuchApi".into()]);
        assert!(proxy_rule(&e, "err", None, &[]).unwrap_err().contains("NoSuchApi"));
        let mut dr = spec(FaultKind::ProtocolDrop, When::AtMs(0));
        dr.apis = Some(vec!["Produce".into()]);
        let r = proxy_rule(&dr, "drop", None, &[]).unwrap();
        assert_eq!((r.action, r.matches.api_keys, r.matches.frames), (Action::Drop, vec![0], Some(Frames::Request)));
        assert!(proxy_rule(&spec(FaultKind::BrokerKill, When::AtMs(0)), "x", None, &[]).is_err());
    }

    #[test]
    fn names_default_to_kind_and_index() {
        let mut s = spec(FaultKind::BrokerRestart, When::AtMs(1));
        assert_eq!(fault_name(&s, 4), "broker-restart-4");
        s.name = Some("restart the coordinator".into());
        assert_eq!(fault_name(&s, 4), "restart the coordinator");
        assert_eq!(kind_name(FaultKind::JobOutage), "job-outage");
        // The hand-written names are the YAML (serde) names, for every kind.
        for k in FaultKind::all() {
            assert_eq!(serde_json::to_value(k).unwrap(), serde_json::Value::String(kind_name(*k)), "{k:?}");
        }
    }

    #[test]
    fn targets_resolve_or_say_why_not() {
        assert_eq!(worker_targets(&None, 3), Ok(vec![0, 1, 2]));
        assert_eq!(worker_targets(&Some(Target::Ids(vec![2, 0])), 3), Ok(vec![2, 0]));
        assert!(worker_targets(&Some(Target::Ids(vec![3])), 3).unwrap_err().contains("subtask 3"));
        assert!(worker_targets(&Some(Target::Named(NamedTarget::TxnCoordinator)), 3).is_err());

        let nodes = [1, 2, 3];
        assert_eq!(
            broker_target(&Some(Target::Named(NamedTarget::All)), &nodes, 2),
            Ok(BrokerTarget::Nodes(vec![1, 2, 3]))
        );
        assert_eq!(broker_target(&Some(Target::Ids(vec![2])), &nodes, 2), Ok(BrokerTarget::Nodes(vec![2])));
        assert!(broker_target(&Some(Target::Ids(vec![7])), &nodes, 2).unwrap_err().contains("no node 7"));
        assert_eq!(
            broker_target(&Some(Target::Named(NamedTarget::TxnCoordinator)), &nodes, 2),
            Ok(BrokerTarget::CoordinatorOf(0))
        );
        assert_eq!(
            broker_target(&Some(Target::Coordinator { txn_coordinator: 1 }), &nodes, 2),
            Ok(BrokerTarget::CoordinatorOf(1))
        );
        assert!(broker_target(&Some(Target::Coordinator { txn_coordinator: 2 }), &nodes, 2).is_err());
    }
}
