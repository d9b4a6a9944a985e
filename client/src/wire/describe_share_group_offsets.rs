//! DescribeShareGroupOffsets (API 90) v0–v1: where a share group stands on
//! each partition — the client's view of the share-partition state.
//!
//! On the wire: groups, each with topics by name and partitions (null = all
//! the group has state for), answered per partition with the share-partition
//! *start offset* (every offset below it is done: acknowledged or archived),
//! the leader epoch, and from v1 the *lag* (KIP-1226: the records at or above
//! the start offset whose delivery is not complete — still available or
//! acquired; -1 when unknown). It goes to the group coordinator, which asks the
//! share coordinator (ReadShareGroupStateSummary); Java's admin
//! `listShareGroupOffsets` (`ListShareGroupOffsetsHandler`) and
//! `kafka-share-groups.sh --describe` use it.
//!
//! The `kafka-protocol` crate (0.18) knows only v0. The v1 request has v0's
//! layout; the v1 response adds `Lag` (int64) after `LeaderEpoch` and is read
//! here field by field (`DescribeShareGroupOffsetsResponse.json`, 4.4.0).
use bytes::Bytes;
use kafka_protocol::messages::describe_share_group_offsets_request::{
    DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic,
};
use kafka_protocol::messages::{ApiKey, DescribeShareGroupOffsetsRequest, GroupId, TopicName};
use serde::Serialize;
use sinkhole_kafka::primitives::{read_nullable_string, read_unsigned_varint, skip_tagged_fields};

use super::api_versions::ApiVersionsInfo;
use super::client::{encode_body, str_bytes, Call, Client, Target};
use super::error::{coordinator_retry, KafkaCode, WireError};
use super::find_coordinator::KEY_TYPE_GROUP;

/// One share-partition's offsets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SharePartitionOffsets {
    pub topic: String,
    pub partition: i32,
    /// -1 when the share-partition has no state yet.
    pub start_offset: i64,
    pub leader_epoch: i32,
    /// v1: records at or above the start offset not yet delivered for good;
    /// `None` below v1, -1 when the broker does not know it.
    pub lag: Option<i64>,
    /// The partition's error, by Kafka's name.
    pub error: Option<String>,
}

/// A v0/v1 response, as far as the rig reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareGroupOffsets {
    pub group_id: String,
    pub error: Option<KafkaCode>,
    pub error_message: Option<String>,
    pub partitions: Vec<SharePartitionOffsets>,
}

/// Encodes the request for one group (`topics`: name → partitions; empty =
/// every partition with state). v1's request is v0's layout.
pub fn encode_request(group_id: &str, topics: &[(String, Vec<i32>)], version: i16) -> Result<Bytes, WireError> {
    if !(0..=1).contains(&version) {
        return Err(WireError::Codec(format!("DescribeShareGroupOffsets v{version}: only v0..=v1 can be encoded")));
    }
    let group = DescribeShareGroupOffsetsRequestGroup::default()
        .with_group_id(GroupId(str_bytes(group_id)))
        .with_topics((!topics.is_empty()).then(|| {
            topics
                .iter()
                .map(|(t, ps)| {
                    DescribeShareGroupOffsetsRequestTopic::default()
                        .with_topic_name(TopicName(str_bytes(t)))
                        .with_partitions(ps.clone())
                })
                .collect()
        }));
    encode_body(&DescribeShareGroupOffsetsRequest::default().with_groups(vec![group]), 0, "DescribeShareGroupOffsets")
}

/// A reader over a response body that names what was cut short.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn fail(&self, what: &str) -> WireError {
        WireError::Codec(format!("DescribeShareGroupOffsets response: {what} at byte {}", self.pos))
    }
    fn take<const N: usize>(&mut self, what: &str) -> Result<[u8; N], WireError> {
        let s = self.b.get(self.pos..self.pos + N).ok_or_else(|| self.fail(what))?;
        self.pos += N;
        Ok(s.try_into().expect("length checked"))
    }
    fn i16(&mut self, what: &str) -> Result<i16, WireError> {
        Ok(i16::from_be_bytes(self.take(what)?))
    }
    fn i32(&mut self, what: &str) -> Result<i32, WireError> {
        Ok(i32::from_be_bytes(self.take(what)?))
    }
    fn i64(&mut self, what: &str) -> Result<i64, WireError> {
        Ok(i64::from_be_bytes(self.take(what)?))
    }
    fn string(&mut self, what: &str) -> Result<Option<String>, WireError> {
        read_nullable_string(self.b, &mut self.pos, true).ok_or_else(|| self.fail(what))
    }
    fn array_len(&mut self, what: &str) -> Result<usize, WireError> {
        let n = read_unsigned_varint(self.b, &mut self.pos).ok_or_else(|| self.fail(what))?;
        Ok(n.saturating_sub(1) as usize)
    }
    fn tags(&mut self, what: &str) -> Result<(), WireError> {
        skip_tagged_fields(self.b, &mut self.pos).ok_or_else(|| self.fail(what))
    }
}

/// Decodes a v0 or v1 response (the first group in it).
pub fn decode_response(body: &[u8], version: i16) -> Result<ShareGroupOffsets, WireError> {
    let mut r = Reader { b: body, pos: 0 };
    r.i32("throttle time")?;
    let groups = r.array_len("groups")?;
    let mut first = None;
    for _ in 0..groups {
        let group_id = r.string("group id")?.unwrap_or_default();
        let mut partitions = vec![];
        for _ in 0..r.array_len("topics")? {
            let topic = r.string("topic name")?.unwrap_or_default();
            r.take::<16>("topic id")?;
            for _ in 0..r.array_len("partitions")? {
                let partition = r.i32("partition index")?;
                let start_offset = r.i64("start offset")?;
                let leader_epoch = r.i32("leader epoch")?;
                let lag = if version >= 1 { Some(r.i64("lag")?) } else { None };
                let code = r.i16("partition error code")?;
                r.string("partition error message")?;
                r.tags("partition tags")?;
                let error = KafkaCode::from_code(code).map(|c| c.name());
                partitions.push(SharePartitionOffsets {
                    topic: topic.clone(),
                    partition,
                    start_offset,
                    leader_epoch,
                    lag,
                    error,
                });
            }
            r.tags("topic tags")?;
        }
        let code = r.i16("group error code")?;
        let error_message = r.string("group error message")?;
        r.tags("group tags")?;
        first.get_or_insert(ShareGroupOffsets {
            group_id,
            error: KafkaCode::from_code(code),
            error_message,
            partitions,
        });
    }
    r.tags("tags")?;
    first.ok_or_else(|| WireError::Codec("DescribeShareGroupOffsets response names no group".into()))
}

impl Client {
    /// The share group's offsets at its coordinator, at the highest version in
    /// 0..=1 the broker knows. Coordinator errors of the group entry are
    /// retried ([`coordinator_retry`]); other group errors fail with their code.
    pub async fn describe_share_group_offsets(
        &mut self,
        group_id: &str,
        topics: &[(String, Vec<i32>)],
    ) -> Result<(ShareGroupOffsets, i16), WireError> {
        let choose = |info: &ApiVersionsInfo| info.negotiate(ApiKey::DescribeShareGroupOffsets, 0, 1);
        let encode = |v: i16| encode_request(group_id, topics, v);
        let decode = |b: Bytes, v: i16| decode_response(&b, v);
        let status = |g: &ShareGroupOffsets| (g.error.unwrap_or(KafkaCode::NONE), g.error_message.clone());
        let reply = self
            .call(&Call {
                api: "DescribeShareGroupOffsets",
                api_key: ApiKey::DescribeShareGroupOffsets,
                target: Target::KeyedCoordinator(KEY_TYPE_GROUP, group_id),
                choose_version: &choose,
                encode: &encode,
                decode: &decode,
                status: &status,
                classify: coordinator_retry,
                once: false,
            })
            .await?;
        Ok((reply.body, reply.version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(version: i16) -> Vec<u8> {
        let mut b: Vec<u8> = vec![0, 0, 0, 0, 0x02, 0x02, b'g', 0x02, 0x03, b'i', b'n'];
        b.extend_from_slice(&3u128.to_be_bytes());
        b.extend_from_slice(&[0x02, 0, 0, 0, 0]); // Partitions: 1, index 0
        b.extend_from_slice(&40i64.to_be_bytes()); // StartOffset 40
        b.extend_from_slice(&[0, 0, 0, 0]); // LeaderEpoch 0
        if version >= 1 {
            b.extend_from_slice(&2i64.to_be_bytes()); // Lag 2
        }
        b.extend_from_slice(&[0, 0, 0x00, 0x00]); // ErrorCode, ErrorMessage null, tags
        b.extend_from_slice(&[0x00]); // topic tags
        b.extend_from_slice(&[0, 0, 0x00, 0x00]); // group ErrorCode, message null, tags
        b.push(0x00); // tags
        b
    }

    #[test]
    fn v1_carries_the_lag_and_v0_does_not() {
        let v1 = decode_response(&body(1), 1).unwrap();
        assert_eq!(v1.group_id, "g");
        let p = &v1.partitions[0];
        assert_eq!((p.topic.as_str(), p.partition, p.start_offset, p.lag), ("in", 0, 40, Some(2)));
        let v0 = decode_response(&body(0), 0).unwrap();
        assert_eq!(v0.partitions[0].start_offset, 40);
        assert_eq!(v0.partitions[0].lag, None);
        // v1 bytes read as v0 do not line up: the reader fails, not panics.
        assert!(decode_response(&body(1)[..20], 1).is_err());
    }

    #[test]
    fn the_request_is_the_same_at_both_versions() {
        let t = vec![("in".to_string(), vec![0, 1])];
        assert_eq!(encode_request("g", &t, 0).unwrap(), encode_request("g", &t, 1).unwrap());
        // Groups [ { "g", Topics [ { "in", [0, 1] } ] } ]
        let b = encode_request("g", &t, 1).unwrap();
        // then topic, group and request tags.
        assert_eq!(&b[..], &[0x02, 0x02, b'g', 0x02, 0x03, b'i', b'n', 0x03, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]);
        // No topics: null (every partition with state).
        assert_eq!(&encode_request("g", &[], 0).unwrap()[..], &[0x02, 0x02, b'g', 0x00, 0x00, 0x00]);
    }
}
