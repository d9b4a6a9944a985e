//! Metadata (API 3): the cluster's brokers, its controller, and the
//! partitions of topics with their leaders.
//!
//! On the wire the request is a list of topic names (null = every topic; an
//! empty list = brokers only, from v1) and, from v4,
//! `AllowAutoTopicCreation`, which the rig always sets to false: asking about
//! a topic must never create it. The reply lists every broker with its node id
//! and advertised address, the controller id, and per topic and partition an
//! error code, the leader, the replicas and the ISR. This is Java's
//! `MetadataRequest` / `MetadataResponse` as `NetworkClient`'s
//! `DefaultMetadataUpdater` uses them: the last answer is the client's
//! metadata cache ([`Client::cached_metadata`]), which decides where requests
//! go; [`Client::metadata`] asks again.
use std::time::Duration;

use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, TopicName};

use super::client::{str_bytes, BrokerConn, BrokerInfo, Client, ClusterMetadata, PartitionInfo, Retrier, TopicInfo};
use super::error::{KafkaCode, WireError};

/// Metadata over one connection. `topics`: `None` = all topics,
/// `Some(&[])` = brokers only (v1+; v0 cannot ask for no topics).
pub(super) async fn fetch_metadata(
    bc: &mut BrokerConn,
    timeout: Duration,
    topics: Option<&[String]>,
) -> Result<ClusterMetadata, WireError> {
    let version = bc.versions.negotiate_request::<MetadataRequest>()?;
    let topics = match topics {
        None if version >= 1 => None,
        None => Some(vec![]),
        Some(names) => Some(
            names.iter().map(|n| MetadataRequestTopic::default().with_name(Some(TopicName(str_bytes(n))))).collect(),
        ),
    };
    let req = MetadataRequest::default()
        .with_topics(topics)
        // Never create topics as a side effect (only expressible from v4).
        .with_allow_auto_topic_creation(version < 4);
    let resp = bc.conn.send(&req, version, timeout).await?;
    if let Some(code) = KafkaCode::from_code(resp.error_code) {
        return Err(WireError::kafka("Metadata", code, None));
    }
    Ok(convert_metadata(resp))
}

fn convert_metadata(resp: MetadataResponse) -> ClusterMetadata {
    ClusterMetadata {
        cluster_id: resp.cluster_id.map(|c| c.to_string()),
        controller_id: *resp.controller_id,
        brokers: resp
            .brokers
            .into_iter()
            .map(|b| BrokerInfo { node_id: *b.node_id, host: b.host.to_string(), port: b.port })
            .collect(),
        topics: resp
            .topics
            .into_iter()
            .map(|t| TopicInfo {
                name: t.name.map(|n| n.0.to_string()).unwrap_or_default(),
                topic_id: t.topic_id,
                error: KafkaCode::from_code(t.error_code),
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| PartitionInfo {
                        partition: p.partition_index,
                        leader: *p.leader_id,
                        replicas: p.replica_nodes.iter().map(|r| **r).collect(),
                        isr: p.isr_nodes.iter().map(|r| **r).collect(),
                        error: KafkaCode::from_code(p.error_code),
                    })
                    .collect(),
            })
            .collect(),
    }
}

impl Client {
    /// Metadata for `topics` (`None` = all topics), from any broker, at the
    /// highest version both the broker and the crate support.
    pub async fn metadata(&mut self, topics: Option<&[String]>) -> Result<ClusterMetadata, WireError> {
        let md = self.metadata_inner(topics).await?;
        self.apply_metadata(md.clone(), false);
        Ok(md)
    }

    /// Refreshes only the broker list (and controller id).
    pub(super) async fn refresh_brokers(&mut self) -> Result<(), WireError> {
        let md = self.metadata_inner(Some(&[])).await?;
        self.apply_metadata(md, true);
        Ok(())
    }

    async fn metadata_inner(&mut self, topics: Option<&[String]>) -> Result<ClusterMetadata, WireError> {
        let mut retry = Retrier::exponential("Metadata", &self.config);
        loop {
            let timeout = self.config.request_timeout;
            let attempt = async {
                let node = self.any_node().await?;
                let bc = self.conn(node).await?;
                let result = fetch_metadata(bc, timeout, topics).await;
                if bc.conn.is_broken() {
                    self.conns.remove(&node);
                }
                result
            }
            .await;
            match attempt {
                Ok(md) => return Ok(md),
                Err(e) if e.is_connection_error() || matches!(e, WireError::NoBrokerReachable { .. }) => {
                    retry.backoff(e).await?
                }
                Err(e) => return Err(e),
            }
        }
    }
}
