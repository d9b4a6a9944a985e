//! DescribeQuorum (API 55, KIP-595): the KRaft controller quorum's leader.
//!
//! On the wire: the topic `__cluster_metadata` and partition 0, answered with
//! the quorum's leader id and epoch, the high watermark and the voters (and
//! observers) with their log end offsets. A broker forwards the request to
//! the active controller, so any broker can be asked: what Java's
//! `Admin.describeMetadataQuorum` does. The rig uses it to aim a fault at the
//! active controller; during an election the leader is -1 or the answer is
//! NOT_LEADER_OR_FOLLOWER, both retried.
use bytes::Bytes;
use kafka_protocol::messages::describe_quorum_request::{
    PartitionData as QuorumPartitionData, TopicData as QuorumTopicData,
};
use kafka_protocol::messages::{ApiKey, DescribeQuorumRequest, DescribeQuorumResponse, TopicName};

use super::api_versions::ApiVersionsInfo;
use super::client::{decode_body, encode_body, str_bytes, Call, Client, Target};
use super::error::{coordinator_retry, KafkaCode, WireError};

/// The KRaft quorum as DescribeQuorum reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumLeader {
    /// The active controller's node id.
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub high_watermark: i64,
    pub voters: Vec<i32>,
    /// The broker that answered.
    pub asked: i32,
}

impl Client {
    /// The KRaft quorum's leader (the active controller) and its epoch:
    /// DescribeQuorum (API 55) for `__cluster_metadata` partition 0, sent to
    /// any broker, which forwards it to the controller quorum (what Java's
    /// `Admin.describeMetadataQuorum` does). Retriable errors (e.g.
    /// NOT_LEADER_OR_FOLLOWER during an election) are retried until
    /// `retry_deadline`.
    pub async fn describe_quorum(&mut self) -> Result<QuorumLeader, WireError> {
        let req = DescribeQuorumRequest::default().with_topics(vec![QuorumTopicData::default()
            .with_topic_name(TopicName(str_bytes("__cluster_metadata")))
            .with_partitions(vec![QuorumPartitionData::default().with_partition_index(0)])]);
        let choose = |info: &ApiVersionsInfo| info.negotiate_request::<DescribeQuorumRequest>();
        let encode = |v: i16| encode_body(&req, v, "DescribeQuorum");
        let decode = |b: Bytes, v: i16| decode_body::<DescribeQuorumResponse>(b, v, "DescribeQuorum");
        let status = |r: &DescribeQuorumResponse| {
            if r.error_code != 0 {
                return (KafkaCode(r.error_code), r.error_message.as_ref().map(|m| m.to_string()));
            }
            match r.topics.first().and_then(|t| t.partitions.first()) {
                Some(p) if p.error_code != 0 => {
                    (KafkaCode(p.error_code), p.error_message.as_ref().map(|m| m.to_string()))
                }
                Some(p) if *p.leader_id < 0 => (KafkaCode::NOT_LEADER_OR_FOLLOWER, Some("no quorum leader yet".into())),
                Some(_) => (KafkaCode::NONE, None),
                None => (KafkaCode::UNKNOWN_SERVER_ERROR, Some("no partition in the DescribeQuorum reply".into())),
            }
        };
        let reply = self
            .call(&Call {
                api: "DescribeQuorum",
                api_key: ApiKey::DescribeQuorum,
                target: Target::Any,
                choose_version: &choose,
                encode: &encode,
                decode: &decode,
                status: &status,
                classify: coordinator_retry,
                once: false,
            })
            .await?;
        let p = reply
            .body
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .ok_or_else(|| WireError::Codec("no partition in the DescribeQuorum reply".into()))?;
        Ok(QuorumLeader {
            leader_id: *p.leader_id,
            leader_epoch: p.leader_epoch,
            high_watermark: p.high_watermark,
            voters: p.current_voters.iter().map(|v| *v.replica_id).collect(),
            asked: reply.node,
        })
    }
}
