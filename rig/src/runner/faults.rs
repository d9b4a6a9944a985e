//! The cluster operations faults need, and the resolution of fault targets
//! and proxy rules.
use std::future::Future;
use std::time::Duration;

use serde_json::json;
use sinkhole_faults::proxy::{Action, Frames, Match, PeerGroup, Rule};
use sinkhole_workloads::wire::client::{Client, ClientConfig};

use crate::cluster::local::{LocalCluster, NodeAction, NodeEffect};
use crate::scenario::{FaultKind, FaultSpec, FrameDirection, Group, NamedTarget, NetDirection, Target};

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
    /// The coordinator's view of these transactional ids now
    /// (DescribeTransactions): state, epoch, timeout — the evidence that the
    /// broker aborted a transaction by timeout, or kept it.
    fn describe_transactions(
        &mut self,
        ids: Vec<String>,
    ) -> impl Future<Output = Result<serde_json::Value, String>> + Send {
        let bootstrap = self.bootstrap();
        async move {
            let config = ClientConfig {
                client_id: "sinkhole-faults".into(),
                request_timeout: Duration::from_secs(5),
                retry_deadline: Duration::from_secs(10),
                ..ClientConfig::default()
            };
            let mut client = Client::connect(&bootstrap, config).await.map_err(|e| e.to_string())?;
            let found = client.describe_transactions(&ids).await.map_err(|e| e.to_string())?;
            Ok(serde_json::Value::Array(
                found
                    .iter()
                    .map(|d| {
                        json!({"transactional_id": d.transactional_id, "state": d.state,
                               "producer_id": d.producer_id, "producer_epoch": d.producer_epoch,
                               "timeout_ms": d.timeout_ms, "error": d.error.map(|e| e.to_string())})
                    })
                    .collect(),
            ))
        }
    }
    /// Whether `net-blackhole` cuts a node off the network itself (containers:
    /// the engine disconnects it from the run's network) rather than through
    /// the proxy (local nodes, whose every listener the proxy fronts).
    fn isolates_nodes(&self) -> bool {
        false
    }
    /// Cuts the node off every peer; the effect as the engine reports it.
    fn isolate(&mut self, node: i32) -> impl Future<Output = Result<serde_json::Value, String>> + Send {
        async move { Err(format!("this cluster cannot isolate node {node}")) }
    }
    /// Undoes [`Brokers::isolate`].
    fn rejoin(&mut self, node: i32) -> impl Future<Output = Result<serde_json::Value, String>> + Send {
        async move { Err(format!("this cluster cannot rejoin node {node}")) }
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

    fn proxy(&self) -> Option<sinkhole_faults::proxy::Proxy> {
        LocalCluster::proxy(self)
    }

    /// DescribeQuorum (API 55) through any running broker, which forwards it
    /// to the quorum: the leader it names is the active controller (the
    /// `quorum-state` files would lag on a killed node; the quorum's own
    /// answer does not).
    async fn controller(&mut self) -> Result<i32, String> {
        let mut client = fault_client(&Brokers::bootstrap(self)).await?;
        client.describe_quorum().await.map(|q| q.leader_id).map_err(|e| format!("DescribeQuorum: {e}"))
    }

    async fn leader_of(&mut self, topic: &str, partition: i32) -> Result<i32, String> {
        let mut client = fault_client(&Brokers::bootstrap(self)).await?;
        let md = client.metadata(Some(&[topic.to_string()])).await.map_err(|e| format!("Metadata: {e}"))?;
        let t = md.topic(topic).ok_or_else(|| format!("Metadata has no topic {topic}"))?;
        if let Some(e) = t.error {
            return Err(format!("Metadata of {topic}: {e}"));
        }
        let p = t
            .partitions
            .iter()
            .find(|p| p.partition == partition)
            .ok_or_else(|| format!("{topic} has no partition {partition}"))?;
        if p.leader < 0 {
            return Err(format!("{topic}-{partition} has no leader now"));
        }
        Ok(p.leader)
    }

    async fn under_replicated(&mut self) -> Result<usize, String> {
        let mut client = fault_client(&Brokers::bootstrap(self)).await?;
        let md = client.metadata(None).await.map_err(|e| format!("Metadata: {e}"))?;
        Ok(under_replicated_in(&md))
    }
}

/// A short-lived client for the rig's own lookups (not a sink worker: the
/// proxy classifies it as `other` and never faults it).
async fn fault_client(bootstrap: &[String]) -> Result<Client, String> {
    let config = ClientConfig {
        client_id: "sinkhole-faults".into(),
        request_timeout: Duration::from_secs(5),
        retry_deadline: Duration::from_secs(10),
        ..ClientConfig::default()
    };
    Client::connect(bootstrap, config).await.map_err(|e| e.to_string())
}

/// Partitions (every topic, internal ones included) whose ISR is smaller
/// than their replica set — Kafka's `UnderReplicatedPartitions` gauge, which
/// its rolling-restart procedure waits to see at 0 before the next node.
pub fn under_replicated_in(md: &sinkhole_workloads::wire::client::ClusterMetadata) -> usize {
    md.topics.iter().flat_map(|t| t.partitions.iter()).filter(|p| p.isr.len() < p.replicas.len()).count()
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
    async fn controller(&mut self) -> Result<i32, String> {
        Err("no cluster: no controller".into())
    }
    async fn leader_of(&mut self, topic: &str, partition: i32) -> Result<i32, String> {
        Err(format!("no cluster: no leader of {topic}-{partition}"))
    }
    async fn under_replicated(&mut self) -> Result<usize, String> {
        Err("no cluster: nothing to count".into())
    }
}

/// The scenario name of a fault kind, e.g. `kill-workers`.
pub fn kind_name(kind: FaultKind) -> String {
    kind.name().to_string()
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
                .map(|a| sinkhole_kafka::api::api_key(a).ok_or_else(|| format!("{a:?} is not a Kafka API name")))
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
                    Action::Error { code: sinkhole_kafka::errors::error_code(e)? }
                }
            }
        }
        other => return Err(format!("{} is not a network or protocol fault", other.name())),
    };
    Ok(Rule { name: name.to_string(), matches: m, action })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::When;

    fn spec(kind: FaultKind, when: When) -> FaultSpec {
        FaultSpec::new(kind, when)
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
    fn under_replicated_counts_partitions_with_a_short_isr_in_every_topic() {
        use sinkhole_workloads::wire::client::{ClusterMetadata, PartitionInfo, TopicInfo};
        let part = |partition, replicas: Vec<i32>, isr: Vec<i32>| PartitionInfo {
            partition,
            leader: isr.first().copied().unwrap_or(-1),
            replicas,
            isr,
            error: None,
        };
        let md = ClusterMetadata {
            topics: vec![
                TopicInfo {
                    name: "out".into(),
                    error: None,
                    partitions: vec![part(0, vec![1, 2, 3], vec![1, 2, 3]), part(1, vec![1, 2, 3], vec![2, 3])],
                },
                TopicInfo {
                    name: "__transaction_state".into(),
                    error: None,
                    partitions: vec![part(0, vec![1, 2], vec![])],
                },
            ],
            ..ClusterMetadata::default()
        };
        assert_eq!(under_replicated_in(&md), 2);
    }

    #[test]
    fn names_default_to_kind_and_index() {
        use crate::nemesis::fault_name;
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
