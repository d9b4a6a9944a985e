//! ReadShareGroupState (API 84, v0): the persisted state of one
//! share-partition, as the share coordinator keeps it in `__share_group_state`.
//!
//! On the wire: the group id and per topic id and partition a leader epoch,
//! answered per partition with an error, the state epoch, the start offset
//! and the *state batches*: offset ranges with a delivery state (0 available,
//! 2 acknowledged, 4 archived) and a delivery count. Offsets below the start
//! offset are done; offsets at or above it that no batch names have never
//! been delivered. ACQUIRED is not a persisted state: a record under an
//! acquisition lock is written as AVAILABLE with its delivery count, so this
//! view cannot tell "acquired now" from "available"; only its leader knows
//! (`SharePartition` in the broker). It goes to the share coordinator of
//! `"group:topicId:partition"` (FindCoordinator key type 2).
//!
//! This is an inter-broker request: the share-partition leader sends it when
//! it loads a partition (`DefaultStatePersister` → `PersisterStateManager`).
//! The broker authorizes it as CLUSTER_ACTION on the cluster
//! (`KafkaApis.handleReadShareGroupStateRequest`), which passes on a cluster
//! without an authorizer, as the rig's test clusters are; with an authorizer
//! the answer is CLUSTER_AUTHORIZATION_FAILED and the caller falls back to
//! DescribeShareGroupOffsets.
//!
//! The leader epoch is not a detail: the share coordinator
//! (`ShareCoordinatorShard.readStateAndMaybeUpdateLeaderEpoch`) refuses a
//! negative one (INVALID_REQUEST, **measured** on 4.4.0), fences a lower one
//! (FENCED_LEADER_EPOCH), and *persists* a higher one — after which the real
//! share-partition leader's writes, with its older epoch, are fenced. An
//! observer must therefore send exactly the stored epoch, which
//! DescribeShareGroupOffsets reports (`LeaderEpoch`); then nothing is written.
use bytes::Bytes;
use kafka_protocol::messages::read_share_group_state_request::{PartitionData, ReadStateData};
use kafka_protocol::messages::{ApiKey, ReadShareGroupStateRequest, ReadShareGroupStateResponse};
use serde::Serialize;
use sinkhole_kafka::primitives::uuid_to_kafka_string;
use uuid::Uuid;

use super::api_versions::ApiVersionsInfo;
use super::client::{decode_body, encode_body, str_bytes, Call, Client, Target};
use super::error::{coordinator_retry, KafkaCode, WireError};
use super::find_coordinator::{share_coordinator_key, KEY_TYPE_SHARE};

/// Delivery states of a state batch (`RecordState` in the broker).
pub const STATE_AVAILABLE: i8 = 0;
pub const STATE_ACKNOWLEDGED: i8 = 2;
pub const STATE_ARCHIVED: i8 = 4;

/// One persisted range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StateBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    /// `available`, `acknowledged`, `archived`, or `state <n>`.
    pub state: String,
    pub delivery_count: i16,
}

/// The persisted state of one share-partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharePartitionState {
    pub partition: i32,
    pub error: Option<String>,
    pub state_epoch: i32,
    /// -1: not initialised.
    pub start_offset: i64,
    pub batches: Vec<StateBatch>,
}

/// Kafka's name of a delivery state.
pub fn state_name(state: i8) -> String {
    match state {
        STATE_AVAILABLE => "available".into(),
        STATE_ACKNOWLEDGED => "acknowledged".into(),
        STATE_ARCHIVED => "archived".into(),
        n => format!("state {n}"),
    }
}

fn convert(r: &ReadShareGroupStateResponse, partition: i32) -> Option<SharePartitionState> {
    let p = r.results.iter().flat_map(|t| t.partitions.iter()).find(|p| p.partition == partition)?;
    Some(SharePartitionState {
        partition,
        error: KafkaCode::from_code(p.error_code).map(|c| c.name()),
        state_epoch: p.state_epoch,
        start_offset: p.start_offset,
        batches: p
            .state_batches
            .iter()
            .map(|b| StateBatch {
                first_offset: b.first_offset,
                last_offset: b.last_offset,
                state: state_name(b.delivery_state),
                delivery_count: b.delivery_count,
            })
            .collect(),
    })
}

impl Client {
    /// The persisted state of `topic_id`-`partition` in `group_id`, from its
    /// share coordinator. `leader_epoch` must be the stored one (see the
    /// module docs: DescribeShareGroupOffsets' `LeaderEpoch`). Coordinator
    /// errors are retried; other errors come back in
    /// [`SharePartitionState::error`] (INVALID_REQUEST for a share-partition
    /// without state yet).
    pub async fn read_share_group_state(
        &mut self,
        group_id: &str,
        topic_id: Uuid,
        partition: i32,
        leader_epoch: i32,
    ) -> Result<SharePartitionState, WireError> {
        let key = share_coordinator_key(group_id, &uuid_to_kafka_string(topic_id.as_bytes()), partition);
        let req = ReadShareGroupStateRequest::default().with_group_id(str_bytes(group_id)).with_topics(vec![
            ReadStateData::default().with_topic_id(topic_id).with_partitions(vec![PartitionData::default()
                .with_partition(partition)
                .with_leader_epoch(leader_epoch)]),
        ]);
        let choose = |info: &ApiVersionsInfo| info.negotiate_request::<ReadShareGroupStateRequest>();
        let encode = |v: i16| encode_body(&req, v, "ReadShareGroupState");
        let decode = |b: Bytes, v: i16| decode_body::<ReadShareGroupStateResponse>(b, v, "ReadShareGroupState");
        let status = |r: &ReadShareGroupStateResponse| match convert(r, partition) {
            // Only the coordinator codes are the call's business.
            Some(p) => match p.error.as_deref() {
                Some("NOT_COORDINATOR") => (KafkaCode::NOT_COORDINATOR, None),
                Some("COORDINATOR_NOT_AVAILABLE") => (KafkaCode::COORDINATOR_NOT_AVAILABLE, None),
                Some("COORDINATOR_LOAD_IN_PROGRESS") => (KafkaCode::COORDINATOR_LOAD_IN_PROGRESS, None),
                _ => (KafkaCode::NONE, None),
            },
            None => (KafkaCode::UNKNOWN_SERVER_ERROR, Some(format!("no entry for partition {partition}"))),
        };
        let reply = self
            .call(&Call {
                api: "ReadShareGroupState",
                api_key: ApiKey::ReadShareGroupState,
                target: Target::KeyedCoordinator(KEY_TYPE_SHARE, &key),
                choose_version: &choose,
                encode: &encode,
                decode: &decode,
                status: &status,
                classify: coordinator_retry,
                once: false,
            })
            .await?;
        convert(&reply.body, partition)
            .ok_or_else(|| WireError::Codec(format!("ReadShareGroupState reply has no partition {partition}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::read_share_group_state_response::{
        PartitionResult, ReadStateResult, StateBatch as Batch,
    };
    use kafka_protocol::protocol::Encodable;

    #[test]
    fn state_batches_by_name() {
        let r = ReadShareGroupStateResponse::default().with_results(vec![ReadStateResult::default()
            .with_topic_id(Uuid::from_u128(1))
            .with_partitions(vec![PartitionResult::default()
                .with_partition(0)
                .with_state_epoch(1)
                .with_start_offset(10)
                .with_state_batches(vec![
                    Batch::default()
                        .with_first_offset(10)
                        .with_last_offset(11)
                        .with_delivery_state(0)
                        .with_delivery_count(2),
                    Batch::default()
                        .with_first_offset(12)
                        .with_last_offset(12)
                        .with_delivery_state(4)
                        .with_delivery_count(5),
                ])])]);
        let mut buf = bytes::BytesMut::new();
        r.encode(&mut buf, 0).unwrap();
        let back: ReadShareGroupStateResponse = decode_body(buf.freeze(), 0, "ReadShareGroupState").unwrap();
        let s = convert(&back, 0).unwrap();
        assert_eq!(s.start_offset, 10);
        assert_eq!(s.batches[0].state, "available");
        assert_eq!(s.batches[0].delivery_count, 2);
        assert_eq!(s.batches[1].state, "archived");
        assert_eq!(state_name(2), "acknowledged");
        assert_eq!(state_name(1), "state 1");
        assert!(convert(&back, 3).is_none());
    }

    #[test]
    fn request_bytes() {
        let req = ReadShareGroupStateRequest::default().with_group_id(str_bytes("g")).with_topics(vec![
            ReadStateData::default()
                .with_topic_id(Uuid::from_u128(1))
                .with_partitions(vec![PartitionData::default().with_partition(2).with_leader_epoch(-1)]),
        ]);
        let b = encode_body(&req, 0, "ReadShareGroupState").unwrap();
        let mut expected = vec![0x02, b'g', 0x02];
        expected.extend_from_slice(&1u128.to_be_bytes());
        expected.extend_from_slice(&[0x02, 0, 0, 0, 2, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00]);
        assert_eq!(&b[..], &expected[..]);
    }
}
