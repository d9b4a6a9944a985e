//! The cluster operations faults need.
use std::future::Future;
use std::time::Duration;

use serde_json::json;
use sinkhole_workloads::wire::client::{Client, ClientConfig};

use crate::cluster::local::{LocalCluster, NodeAction, NodeEffect};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
