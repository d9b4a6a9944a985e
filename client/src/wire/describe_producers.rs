//! DescribeProducers (API 61, KIP-664): the producers a partition leader
//! keeps state for, with the start offset of each one's open transaction.
//!
//! On the wire: topics and partition indexes, answered per partition with an
//! error and the active producers (id, epoch, last sequence and timestamp,
//! coordinator epoch, `CurrentTxnStartOffset`: -1 when the producer has no
//! transaction open in that partition). It must go to the partition's
//! leader (NOT_LEADER_OR_FOLLOWER otherwise). This is the first half of
//! Kafka's `kafka-transactions.sh find-hanging` (`TransactionsCommand`): a
//! producer with a transaction open in a partition whose coordinator no
//! longer has that transaction ongoing is a hanging transaction, and it pins
//! the partition's last stable offset.
use bytes::Bytes;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::describe_producers_response::PartitionResponse;
use kafka_protocol::messages::{ApiKey, DescribeProducersRequest, DescribeProducersResponse, TopicName};

use super::api_versions::ApiVersionsInfo;
use super::client::{broker_retry, decode_body, encode_body, str_bytes, Call, Client, Target};
use super::error::{KafkaCode, WireError};

/// One active producer of a partition, as its leader keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveProducer {
    pub producer_id: i64,
    pub producer_epoch: i32,
    pub last_timestamp: i64,
    pub coordinator_epoch: i32,
    /// The first offset of its open transaction here; `None` when it has none.
    pub txn_start_offset: Option<i64>,
}

/// A partition's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionProducers {
    pub partition: i32,
    pub error: Option<KafkaCode>,
    pub producers: Vec<ActiveProducer>,
}

fn convert(p: &PartitionResponse) -> PartitionProducers {
    PartitionProducers {
        partition: p.partition_index,
        error: KafkaCode::from_code(p.error_code),
        producers: p
            .active_producers
            .iter()
            .map(|s| ActiveProducer {
                producer_id: *s.producer_id,
                producer_epoch: s.producer_epoch,
                last_timestamp: s.last_timestamp,
                coordinator_epoch: s.coordinator_epoch,
                txn_start_offset: (s.current_txn_start_offset >= 0).then_some(s.current_txn_start_offset),
            })
            .collect(),
    }
}

impl Client {
    /// Asks the leader of `topic`'s `partition` (from fresh metadata) for its
    /// active producers. A partition without a leader is an error.
    pub async fn describe_producers(&mut self, topic: &str, partition: i32) -> Result<PartitionProducers, WireError> {
        let md = self.metadata(Some(&[topic.to_string()])).await?;
        let leader = md
            .topic(topic)
            .and_then(|t| t.partitions.iter().find(|p| p.partition == partition))
            .map(|p| p.leader)
            .filter(|l| *l >= 0)
            .ok_or_else(|| WireError::Codec(format!("{topic}-{partition} has no leader in Metadata")))?;
        let req = DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
            .with_name(TopicName(str_bytes(topic)))
            .with_partition_indexes(vec![partition])]);
        let choose = |info: &ApiVersionsInfo| info.negotiate_request::<DescribeProducersRequest>();
        let encode = |v: i16| encode_body(&req, v, "DescribeProducers");
        let decode = |b: Bytes, v: i16| decode_body::<DescribeProducersResponse>(b, v, "DescribeProducers");
        // The partition's own error is the caller's business (it is returned).
        let status = |_: &DescribeProducersResponse| (KafkaCode::NONE, None);
        let reply = self
            .call(&Call {
                api: "DescribeProducers",
                api_key: ApiKey::DescribeProducers,
                target: Target::Node(leader),
                choose_version: &choose,
                encode: &encode,
                decode: &decode,
                status: &status,
                classify: broker_retry,
                once: false,
            })
            .await?;
        reply
            .body
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .find(|p| p.partition_index == partition)
            .map(convert)
            .ok_or_else(|| WireError::Codec(format!("DescribeProducers reply has no partition {partition}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::describe_producers_response::ProducerState;
    use kafka_protocol::messages::ProducerId;

    #[test]
    fn an_open_transaction_has_a_start_offset_and_a_closed_one_none() {
        let p = PartitionResponse::default().with_partition_index(1).with_active_producers(vec![
            ProducerState::default().with_producer_id(ProducerId(6)).with_current_txn_start_offset(518),
            ProducerState::default().with_producer_id(ProducerId(5)).with_current_txn_start_offset(-1),
        ]);
        let c = convert(&p);
        assert_eq!((c.partition, c.error), (1, None));
        assert_eq!(
            c.producers.iter().map(|a| (a.producer_id, a.txn_start_offset)).collect::<Vec<_>>(),
            [(6, Some(518)), (5, None)]
        );
        let refused = convert(&PartitionResponse::default().with_error_code(6));
        assert_eq!(refused.error.map(|c| c.name()), Some("NOT_LEADER_OR_FOLLOWER".to_string()));
    }
}
