//! What the rig asks a cluster's brokers, the same on every backend: the same Kafka requests
//! through the rig's own wire client, so the answers mean the same whether the brokers are JVMs
//! here or containers. Written once; [`super::Cluster`]'s default methods call these.
//!
//! - which node coordinates a transactional id (FindCoordinator, key type 1), or a group (key type 0);
//! - which node is the active controller (DescribeQuorum: the leader of `__cluster_metadata-0`);
//! - which node leads a partition, and how many partitions are under-replicated (Metadata);
//! - the coordinator's view of open transactions (DescribeTransactions);
//! - whether a node is ready ([`node_sees`], the readiness rule of both backends).
use std::time::Duration;

use serde_json::json;
use sinkhole_client::wire::client::{Client, ClientConfig, ClusterMetadata};

use super::ClusterError;

/// A short-lived client for the rig's own lookups (not a sink worker: the proxy classifies it as
/// `other` and never faults it).
async fn lookup_client(bootstrap: &[String]) -> Result<Client, ClusterError> {
    let config = ClientConfig {
        client_id: "sinkhole-faults".into(),
        request_timeout: Duration::from_secs(5),
        retry_deadline: Duration::from_secs(10),
        ..ClientConfig::default()
    };
    Client::connect(bootstrap, config).await.map_err(|e| ClusterError::Lookup(e.to_string()))
}

/// The node coordinating `transactional_id` now (FindCoordinator, key type 1).
pub async fn find_coordinator(bootstrap: &[String], transactional_id: &str) -> Result<i32, ClusterError> {
    let mut client = lookup_client(bootstrap).await?;
    client.find_coordinator(transactional_id).await.map(|b| b.node_id).map_err(|e| ClusterError::Lookup(e.to_string()))
}

/// The node coordinating group `group` now (FindCoordinator, key type 0): for a share group the
/// broker that answers its heartbeats and DescribeShareGroupOffsets.
pub async fn find_group_coordinator(bootstrap: &[String], group: &str) -> Result<i32, ClusterError> {
    use sinkhole_client::wire::find_coordinator::KEY_TYPE_GROUP;
    let mut client = lookup_client(bootstrap).await?;
    client
        .find_coordinator_of(KEY_TYPE_GROUP, group)
        .await
        .map(|b| b.node_id)
        .map_err(|e| ClusterError::Lookup(e.to_string()))
}

/// DescribeQuorum (API 55) through any running broker, which forwards it to the quorum: the
/// leader it names is the active controller (the `quorum-state` files would lag on a killed
/// node; the quorum's own answer does not).
pub async fn controller(bootstrap: &[String]) -> Result<i32, ClusterError> {
    let mut client = lookup_client(bootstrap).await?;
    client
        .describe_quorum()
        .await
        .map(|q| q.leader_id)
        .map_err(|e| ClusterError::Lookup(format!("DescribeQuorum: {e}")))
}

/// The leader of `topic`'s `partition` now (Metadata).
pub async fn leader_of(bootstrap: &[String], topic: &str, partition: i32) -> Result<i32, ClusterError> {
    let mut client = lookup_client(bootstrap).await?;
    let md = client
        .metadata(Some(&[topic.to_string()]))
        .await
        .map_err(|e| ClusterError::Lookup(format!("Metadata: {e}")))?;
    let t = md.topic(topic).ok_or_else(|| ClusterError::Lookup(format!("Metadata has no topic {topic}")))?;
    if let Some(e) = t.error {
        return Err(ClusterError::Lookup(format!("Metadata of {topic}: {e}")));
    }
    match t.partitions.iter().find(|p| p.partition == partition) {
        None => Err(ClusterError::Lookup(format!("{topic} has no partition {partition}"))),
        Some(p) if p.leader < 0 => Err(ClusterError::Lookup(format!("{topic}-{partition} has no leader now"))),
        Some(p) => Ok(p.leader),
    }
}

/// The `__transaction_state` partition that holds `transactional_id`, for a log of `partitions`
/// partitions: Kafka's `TransactionStateManager.partitionFor`, `Utils.abs(id.hashCode) % n`, with
/// Java's `String.hashCode` over UTF-16 code units and `Utils.abs` mapping `Int.MinValue` to 0.
pub fn txn_log_partition(transactional_id: &str, partitions: i32) -> i32 {
    let hash = transactional_id.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)));
    let abs = if hash == i32::MIN { 0 } else { hash.abs() };
    abs % partitions.max(1)
}

/// Where `transactional_id`'s transaction state is written now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnLogPlacement {
    /// The `__transaction_state` partition.
    pub partition: i32,
    /// Its leader: the transaction coordinator.
    pub leader: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
}

impl TxnLogPlacement {
    /// The follower a fault should stop: an in-sync replica other than the leader, lowest id
    /// first, else any other replica.
    pub fn follower(&self) -> Option<i32> {
        let mut others: Vec<i32> = self.replicas.iter().copied().filter(|&r| r != self.leader).collect();
        others.sort_unstable();
        others.iter().copied().find(|r| self.isr.contains(r)).or_else(|| others.first().copied())
    }
}

/// The `__transaction_state` partition of `transactional_id`, its leader, replicas and ISR now
/// (Metadata of the internal topic).
pub async fn txn_log_placement(bootstrap: &[String], transactional_id: &str) -> Result<TxnLogPlacement, ClusterError> {
    const TOPIC: &str = "__transaction_state";
    let mut client = lookup_client(bootstrap).await?;
    let md = client
        .metadata(Some(&[TOPIC.to_string()]))
        .await
        .map_err(|e| ClusterError::Lookup(format!("Metadata: {e}")))?;
    let t = md.topic(TOPIC).ok_or_else(|| ClusterError::Lookup(format!("Metadata has no topic {TOPIC}")))?;
    if let Some(e) = t.error {
        return Err(ClusterError::Lookup(format!("Metadata of {TOPIC}: {e}")));
    }
    let partition = txn_log_partition(transactional_id, t.partitions.len() as i32);
    let p = t
        .partitions
        .iter()
        .find(|p| p.partition == partition)
        .ok_or_else(|| ClusterError::Lookup(format!("{TOPIC} has no partition {partition}")))?;
    Ok(TxnLogPlacement { partition, leader: p.leader, replicas: p.replicas.clone(), isr: p.isr.clone() })
}

/// How many partitions (all topics) have fewer in-sync replicas than replicas now (Metadata).
pub async fn under_replicated(bootstrap: &[String]) -> Result<usize, ClusterError> {
    let mut client = lookup_client(bootstrap).await?;
    let md = client.metadata(None).await.map_err(|e| ClusterError::Lookup(format!("Metadata: {e}")))?;
    Ok(under_replicated_in(&md))
}

/// Partitions (every topic, internal ones included) whose ISR is smaller than their replica set
/// — Kafka's `UnderReplicatedPartitions` gauge, which its rolling-restart procedure waits to see
/// at 0 before the next node.
pub fn under_replicated_in(md: &ClusterMetadata) -> usize {
    md.topics.iter().flat_map(|t| t.partitions.iter()).filter(|p| p.isr.len() < p.replicas.len()).count()
}

/// The coordinator's view of these transactional ids now (DescribeTransactions): state, epoch,
/// timeout — the evidence that the broker aborted a transaction by timeout, or kept it.
pub async fn describe_transactions(bootstrap: &[String], ids: &[String]) -> Result<serde_json::Value, ClusterError> {
    let mut client = lookup_client(bootstrap).await?;
    let found = client.describe_transactions(ids).await.map_err(|e| ClusterError::Lookup(e.to_string()))?;
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

/// One readiness probe of one node: it answers ApiVersions, and its Metadata lists exactly the
/// expected broker ids (a fenced or unregistered broker is missing from Metadata). Both backends
/// are ready by this rule.
pub(crate) async fn node_sees(bootstrap: &str, expected: &[i32]) -> Result<(), String> {
    let cfg = ClientConfig {
        request_timeout: Duration::from_secs(2),
        retry_deadline: Duration::from_secs(1),
        ..ClientConfig::default()
    };
    let mut client = Client::connect(&[bootstrap.to_string()], cfg).await.map_err(|e| e.to_string())?;
    let md = client.metadata(Some(&[])).await.map_err(|e| e.to_string())?;
    let mut seen: Vec<i32> = md.brokers.iter().map(|b| b.node_id).collect();
    seen.sort_unstable();
    let mut want = expected.to_vec();
    want.sort_unstable();
    if seen == want {
        Ok(())
    } else {
        Err(format!("metadata lists brokers {seen:?}, expected {want:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn txn_log_partition_is_javas_string_hash_modulo_the_partitions() {
        // Java: "a".hashCode() = 97, "hello".hashCode() = 99162322,
        // "polygenelubricants".hashCode() = Integer.MIN_VALUE (Utils.abs gives 0).
        assert_eq!(txn_log_partition("a", 10), 7);
        assert_eq!(txn_log_partition("hello", 50), 99162322 % 50);
        assert_eq!(txn_log_partition("polygenelubricants", 10), 0);
        // Negative hashes: "sinkhole-kafka-19367-0-1".hashCode() = -1939642958,
        // "zzzzzzzz".hashCode() = -1910022912; Utils.abs, then the modulo.
        assert_eq!(txn_log_partition("sinkhole-kafka-19367-0-1", 10), 8);
        assert_eq!(txn_log_partition("zzzzzzzz", 10), 2);
        assert_eq!(txn_log_partition("", 10), 0);
    }

    #[test]
    fn the_follower_is_an_in_sync_replica_other_than_the_leader() {
        let at = |leader, replicas: Vec<i32>, isr: Vec<i32>| TxnLogPlacement { partition: 3, leader, replicas, isr };
        assert_eq!(at(2, vec![2, 3, 1], vec![2, 3, 1]).follower(), Some(1));
        assert_eq!(at(2, vec![2, 3, 1], vec![2, 3]).follower(), Some(3));
        assert_eq!(at(2, vec![2, 3, 1], vec![2]).follower(), Some(1));
        assert_eq!(at(1, vec![1], vec![1]).follower(), None);
    }

    #[test]
    fn under_replicated_counts_partitions_with_a_short_isr_in_every_topic() {
        use sinkhole_client::wire::client::{PartitionInfo, TopicInfo};
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
                    topic_id: Default::default(),
                    error: None,
                    partitions: vec![part(0, vec![1, 2, 3], vec![1, 2, 3]), part(1, vec![1, 2, 3], vec![2, 3])],
                },
                TopicInfo {
                    name: "__transaction_state".into(),
                    topic_id: Default::default(),
                    error: None,
                    partitions: vec![part(0, vec![1, 2], vec![])],
                },
            ],
            ..ClusterMetadata::default()
        };
        assert_eq!(under_replicated_in(&md), 2);
    }
}
