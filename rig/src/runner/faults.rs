//! The first faults: worker kills, pauses and outages, broker kills, restarts
//! and pauses; their triggers; and the cluster operations they need.
//!
//! Every fault leaves an effect the kernel or the cluster confirmed (a signal
//! whose result was observed, a broker that answered again, the node that was
//! the transaction coordinator at that moment), in `FaultStarted` /
//! `FaultEnded` history events and in [`FaultRecord`]s. A fault that did not
//! take effect is recorded as unconfirmed, never silently passed over: a run
//! whose fault did nothing proves nothing.
use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::json;
use sinkhole_workloads::wire::client::{Client, ClientConfig};

use crate::cluster::local::{LocalCluster, NodeAction, NodeEffect};
use crate::scenario::{FaultKind, FaultSpec, NamedTarget, Target, When};

use super::FaultRecord;

/// What the runner needs from the cluster: the node actions faults take, and
/// where a transactional id's coordinator is right now.
pub trait Brokers: Send {
    fn node_ids(&self) -> Vec<i32>;
    /// Bootstrap servers of the nodes meant to be running.
    fn bootstrap(&self) -> Vec<String>;
    fn act(&mut self, node: i32, action: NodeAction) -> impl Future<Output = Result<NodeEffect, String>> + Send;
    fn wait_ready(&mut self) -> impl Future<Output = Result<(), String>> + Send;
    /// The node coordinating `transactional_id` now (FindCoordinator, key type 1).
    fn find_coordinator(&mut self, transactional_id: &str) -> impl Future<Output = Result<i32, String>> + Send;
    /// The KRaft quorum leader now.
    fn controller(&mut self) -> impl Future<Output = Result<i32, String>> + Send {
        async { Err("this cluster cannot name its controller".to_string()) }
    }
    /// The leader of `topic`'s `partition` now (Metadata).
    fn leader_of(&mut self, topic: &str, partition: i32) -> impl Future<Output = Result<i32, String>> + Send {
        let _ = (topic, partition);
        async { Err("this cluster cannot name a partition leader".to_string()) }
    }
    /// How many partitions (all topics) have fewer in-sync replicas than replicas.
    fn under_replicated(&mut self) -> impl Future<Output = Result<usize, String>> + Send {
        async { Err("this cluster cannot count under-replicated partitions".to_string()) }
    }
    /// The Kafka-aware proxy in front of the listeners, when the cluster has one.
    fn proxy(&self) -> Option<sinkhole_faults::proxy::Proxy> {
        None
    }
}

/// How long a node action may take (a graceful stop, a start until ready).
const NODE_ACTION_TIMEOUT: Duration = Duration::from_secs(60);

impl Brokers for LocalCluster {
    fn node_ids(&self) -> Vec<i32> {
        LocalCluster::node_ids(self)
    }

    fn bootstrap(&self) -> Vec<String> {
        let running: Vec<String> =
            LocalCluster::bootstrap(self).split(',').filter(|s| !s.is_empty()).map(str::to_string).collect();
        if running.is_empty() {
            self.bootstrap_list()
        } else {
            running
        }
    }

    async fn act(&mut self, node: i32, action: NodeAction) -> Result<NodeEffect, String> {
        LocalCluster::act(self, node, action, NODE_ACTION_TIMEOUT).await.map_err(|e| e.to_string())
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        LocalCluster::wait_ready(self, Duration::from_secs(120)).await.map_err(|e| e.to_string())
    }

    async fn find_coordinator(&mut self, transactional_id: &str) -> Result<i32, String> {
        let config = ClientConfig {
            client_id: "sinkhole-faults".into(),
            request_timeout: Duration::from_secs(5),
            retry_deadline: Duration::from_secs(10),
            ..ClientConfig::default()
        };
        let mut client = Client::connect(&Brokers::bootstrap(self), config).await.map_err(|e| e.to_string())?;
        client.find_coordinator(transactional_id).await.map(|b| b.node_id).map_err(|e| e.to_string())
    }
}

/// A cluster with no nodes, for running the coordinator without brokers
/// (tests of its state machine): every broker fault fails, visibly.
#[derive(Debug, Default)]
pub struct NoBrokers;

impl Brokers for NoBrokers {
    fn node_ids(&self) -> Vec<i32> {
        vec![]
    }
    fn bootstrap(&self) -> Vec<String> {
        vec!["127.0.0.1:9".into()]
    }
    async fn act(&mut self, node: i32, action: NodeAction) -> Result<NodeEffect, String> {
        Err(format!("no cluster: cannot {action:?} node {node}"))
    }
    async fn wait_ready(&mut self) -> Result<(), String> {
        Ok(())
    }
    async fn find_coordinator(&mut self, transactional_id: &str) -> Result<i32, String> {
        Err(format!("no cluster: no coordinator for {transactional_id}"))
    }
}

/// The scenario name of a fault kind, e.g. `kill-workers`.
pub fn kind_name(kind: FaultKind) -> String {
    match serde_json::to_value(kind) {
        Ok(serde_json::Value::String(s)) => s,
        _ => format!("{kind:?}"),
    }
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

/// Faults triggered by checkpoint `persisted` being persisted: those waiting
/// for it, or for an earlier id that was never persisted (aborted, or lost to a
/// failover); the window — persisted but not yet notified — is the same.
pub fn due_after_persist(specs: &[FaultSpec], fired: &[bool], persisted: u64) -> Vec<usize> {
    specs
        .iter()
        .enumerate()
        .filter(|(i, s)| !fired[*i] && matches!(s.when, When::CheckpointPersisted(n) if n <= persisted))
        .map(|(i, _)| i)
        .collect()
}

/// Why a fault that never fired did not.
pub fn skipped_reason(spec: &FaultSpec, latest_persisted: Option<u64>, job_ran_ms: u64) -> String {
    match spec.when {
        When::AtMs(t) => format!("the job ended after {job_ran_ms} ms, before at_ms {t}"),
        When::CheckpointPersisted(n) => match latest_persisted {
            Some(l) => format!("the job ended before checkpoint {n} was persisted (the last was {l})"),
            None => format!("the job ended before checkpoint {n} was persisted (none was)"),
        },
        other => format!("the job ended before its trigger {other:?} happened"),
    }
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
        // Resolved by the runner (Brokers::controller / leader_of) when the fault fires.
        Some(Target::Named(NamedTarget::Controller)) => Ok(BrokerTarget::Controller),
        Some(Target::Named(NamedTarget::Leader)) => Ok(BrokerTarget::LeaderOf(0)),
        Some(Target::Leader { leader: p }) => Ok(BrokerTarget::LeaderOf(*p)),
    }
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
}

impl FaultSlot {
    pub fn new(spec: FaultSpec, index: usize) -> FaultSlot {
        FaultSlot { name: fault_name(&spec, index), kind: kind_name(spec.kind), spec, record: None, queued: false }
    }

    pub fn fired(&self) -> bool {
        self.record.is_some() || self.queued
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

    #[test]
    fn persist_triggers_fire_at_their_checkpoint_or_the_first_persisted_after_it() {
        let specs = vec![
            spec(FaultKind::KillWorkers, When::CheckpointPersisted(3)),
            spec(FaultKind::BrokerKill, When::CheckpointPersisted(1)),
            spec(FaultKind::JobOutage, When::AtMs(0)),
        ];
        let mut fired = vec![false; 3];
        assert_eq!(due_after_persist(&specs, &fired, 1), vec![1]);
        fired[1] = true;
        assert!(due_after_persist(&specs, &fired, 2).is_empty());
        assert_eq!(due_after_persist(&specs, &fired, 3), vec![0]);
        // Checkpoint 3 was aborted; 4 is the first persisted after it.
        assert_eq!(due_after_persist(&specs, &fired, 4), vec![0]);
        fired[0] = true;
        assert!(due_after_persist(&specs, &fired, 9).is_empty());
        let r = skipped_reason(&specs[0], Some(2), 1000);
        assert!(r.contains("checkpoint 3") && r.contains("last was 2"), "{r}");
    }

    #[test]
    fn names_default_to_kind_and_index() {
        let mut s = spec(FaultKind::BrokerRestart, When::AtMs(1));
        assert_eq!(fault_name(&s, 4), "broker-restart-4");
        s.name = Some("restart the coordinator".into());
        assert_eq!(fault_name(&s, 4), "restart the coordinator");
        assert_eq!(kind_name(FaultKind::JobOutage), "job-outage");
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
