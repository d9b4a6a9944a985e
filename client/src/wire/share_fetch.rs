//! ShareFetch (API 78) v1–v2: records of a share group, acquired for one
//! member, with the acknowledgements of earlier records riding along.
//!
//! On the wire: the group and member ids, the share *session* epoch (0 opens a
//! session on this broker, -1 closes it, else it counts up by one per request
//! and wraps from `i32::MAX` to 1: Java's `ShareRequestMetadata`), the fetch
//! bounds (`MaxWaitMs`, `MinBytes`, `MaxBytes`, `MaxRecords`, `BatchSize`), the
//! partitions to add to the session — each with acknowledgement batches for
//! records the member got earlier — and the partitions to forget. The answer
//! carries a top-level error, the acquisition lock duration, and per partition
//! a fetch error, an *acknowledge* error (the outcome of the acknowledgements
//! that rode along), the records (record batches as in Fetch) and the
//! `AcquiredRecords` ranges with their delivery counts: only the offsets in
//! those ranges are this member's. It goes to each partition's leader, which
//! runs the share-partition (`SharePartition`, in the broker).
//!
//! Versions (`ShareFetchRequest.json`, 4.4.0): v0 was 4.0's early access and
//! is gone; v1 is the stable KIP-932 version; v2 adds, after `BatchSize`,
//! `ShareAcquireMode` (int8, 0 = batch-optimized, 1 = record-limit: at most
//! `MaxRecords` acquired, KIP-1206; *ignorable*) and `IsRenewAck` (bool, true
//! when the batches carry RENEW, KIP-1222; not ignorable). The v2 response has
//! no new field. The `kafka-protocol` crate (0.18) knows only v1, so v2
//! requests are written here, and v2 responses are decoded with the crate's v1
//! decoder, whose layout is the same.
//!
//! As Java's generated `ShareFetchRequestData.write` does, a non-default
//! ignorable field (the acquire mode) is dropped below v2, and a non-default
//! non-ignorable one (`IsRenewAck`) is an error there. Not retried here: what
//! an error means for the session is the consumer's call (Java's
//! `ShareSessionHandler.handleResponse` / `handleError`).
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::share_fetch_request::{AcknowledgementBatch, FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::{ApiKey, GroupId, ShareFetchRequest, ShareFetchResponse};
use kafka_protocol::protocol::Decodable;
use sinkhole_kafka::primitives::{put_compact_nullable_string, put_unsigned_varint};
use uuid::Uuid;

use super::client::{encode_body, str_bytes, Client};
use super::error::WireError;

/// Highest ShareFetch version this module encodes.
pub const MAX_VERSION: i16 = 2;
/// Lowest version a 4.1+ broker knows (v0 was removed).
pub const MIN_VERSION: i16 = 1;

/// Acknowledge types (`AcknowledgeType`, and the JSON's `AcknowledgeTypes`).
/// GAP marks an acquired offset with no record (a control record or a
/// compacted one): Java's `ShareCompletedFetch` acknowledges those itself.
pub const ACK_GAP: i8 = 0;
pub const ACK_ACCEPT: i8 = 1;
pub const ACK_RELEASE: i8 = 2;
pub const ACK_REJECT: i8 = 3;
/// KIP-1222 (v2): keep the records acquired and restart their lock.
pub const ACK_RENEW: i8 = 4;

/// `ShareAcquireMode` (v2): how many records the broker acquires per fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AcquireMode {
    /// Whole record batches, so possibly more than `MaxRecords` (v1's only way).
    #[default]
    BatchOptimized,
    /// At most `MaxRecords` records (KIP-1206).
    RecordLimit,
}

impl AcquireMode {
    pub fn id(self) -> i8 {
        match self {
            AcquireMode::BatchOptimized => 0,
            AcquireMode::RecordLimit => 1,
        }
    }
}

/// One acknowledgement batch: offsets `first..=last` and either one type for
/// all of them or one per offset (Java's `AcknowledgementBatch`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub types: Vec<i8>,
}

/// A partition in a ShareFetch: fetched, with the acknowledgements to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPartitionAcks {
    pub partition: i32,
    pub acks: Vec<AckBatch>,
}

/// The fields of one ShareFetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareFetchParams {
    pub group_id: String,
    pub member_id: String,
    pub share_session_epoch: i32,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub max_records: i32,
    pub batch_size: i32,
    pub acquire_mode: AcquireMode,
    pub is_renew_ack: bool,
    /// Topic id → partitions (added to the session, or carrying acks).
    pub topics: Vec<(Uuid, Vec<FetchPartitionAcks>)>,
    /// Partitions to drop from the session.
    pub forgotten: Vec<(Uuid, Vec<i32>)>,
}

/// Encodes the request body at `version` (v1 by the crate, v2 here).
pub fn encode_request(p: &ShareFetchParams, version: i16) -> Result<Bytes, WireError> {
    match version {
        1 => {
            if p.is_renew_ack {
                return Err(WireError::Codec(
                    "ShareFetch: attempted to write a non-default isRenewAck at version 1 (needs v2)".into(),
                ));
            }
            encode_body(&crate_request(p), 1, "ShareFetch")
        }
        2 => Ok(encode_v2(p)),
        v => Err(WireError::Codec(format!("ShareFetch v{v}: only v{MIN_VERSION}..=v{MAX_VERSION} can be encoded"))),
    }
}

fn crate_request(p: &ShareFetchParams) -> ShareFetchRequest {
    ShareFetchRequest::default()
        .with_group_id(Some(GroupId(str_bytes(&p.group_id))))
        .with_member_id(Some(str_bytes(&p.member_id)))
        .with_share_session_epoch(p.share_session_epoch)
        .with_max_wait_ms(p.max_wait_ms)
        .with_min_bytes(p.min_bytes)
        .with_max_bytes(p.max_bytes)
        .with_max_records(p.max_records)
        .with_batch_size(p.batch_size)
        .with_topics(
            p.topics
                .iter()
                .map(|(id, parts)| {
                    FetchTopic::default().with_topic_id(*id).with_partitions(
                        parts
                            .iter()
                            .map(|fp| {
                                FetchPartition::default()
                                    .with_partition_index(fp.partition)
                                    .with_acknowledgement_batches(
                                        fp.acks
                                            .iter()
                                            .map(|a| {
                                                AcknowledgementBatch::default()
                                                    .with_first_offset(a.first_offset)
                                                    .with_last_offset(a.last_offset)
                                                    .with_acknowledge_types(a.types.clone())
                                            })
                                            .collect(),
                                    )
                            })
                            .collect(),
                    )
                })
                .collect(),
        )
        .with_forgotten_topics_data(
            p.forgotten
                .iter()
                .map(|(id, parts)| ForgottenTopic::default().with_topic_id(*id).with_partitions(parts.clone()))
                .collect(),
        )
}

/// A compact array's length prefix (varint of n + 1).
pub(super) fn put_compact_len(buf: &mut BytesMut, n: usize) {
    put_unsigned_varint(buf, n as u32 + 1);
}

/// Acknowledgement batches as both ShareFetch and ShareAcknowledge write
/// them: first, last, compact array of int8 types, no tagged fields.
pub(super) fn put_ack_batches(buf: &mut BytesMut, acks: &[AckBatch]) {
    put_compact_len(buf, acks.len());
    for a in acks {
        buf.put_i64(a.first_offset);
        buf.put_i64(a.last_offset);
        put_compact_len(buf, a.types.len());
        for t in &a.types {
            buf.put_i8(*t);
        }
        put_unsigned_varint(buf, 0);
    }
}

/// v2 by hand, field by field as `ShareFetchRequest.json` lists them
/// (`PartitionMaxBytes` is v0 only; everything is flexible).
fn encode_v2(p: &ShareFetchParams) -> Bytes {
    let mut buf = BytesMut::with_capacity(64);
    put_compact_nullable_string(&mut buf, Some(&p.group_id));
    put_compact_nullable_string(&mut buf, Some(&p.member_id));
    buf.put_i32(p.share_session_epoch);
    buf.put_i32(p.max_wait_ms);
    buf.put_i32(p.min_bytes);
    buf.put_i32(p.max_bytes);
    buf.put_i32(p.max_records);
    buf.put_i32(p.batch_size);
    buf.put_i8(p.acquire_mode.id());
    buf.put_u8(p.is_renew_ack as u8);
    put_compact_len(&mut buf, p.topics.len());
    for (id, parts) in &p.topics {
        buf.put_slice(id.as_bytes());
        put_compact_len(&mut buf, parts.len());
        for fp in parts {
            buf.put_i32(fp.partition);
            put_ack_batches(&mut buf, &fp.acks);
            put_unsigned_varint(&mut buf, 0);
        }
        put_unsigned_varint(&mut buf, 0);
    }
    put_compact_len(&mut buf, p.forgotten.len());
    for (id, parts) in &p.forgotten {
        buf.put_slice(id.as_bytes());
        put_compact_len(&mut buf, parts.len());
        for part in parts {
            buf.put_i32(*part);
        }
        put_unsigned_varint(&mut buf, 0);
    }
    put_unsigned_varint(&mut buf, 0);
    buf.freeze()
}

/// Decodes a response body; v2 has v1's layout (no field is 2+ in
/// `ShareFetchResponse.json`), so the crate's v1 decoder reads both.
pub fn decode_response(mut body: Bytes, version: i16) -> Result<ShareFetchResponse, WireError> {
    if !(MIN_VERSION..=MAX_VERSION).contains(&version) {
        return Err(WireError::Codec(format!("ShareFetch v{version} response: not decodable here")));
    }
    ShareFetchResponse::decode(&mut body, 1)
        .map_err(|e| WireError::codec(&format!("decoding ShareFetch v{version} response"), e))
}

impl Client {
    /// One ShareFetch to `node` (the partitions' leader) at the highest
    /// version in 1..=2 both sides know. Not retried; see the module docs.
    /// Returns the answer and the version sent.
    pub async fn share_fetch(
        &mut self,
        node: i32,
        params: &ShareFetchParams,
    ) -> Result<(ShareFetchResponse, i16), WireError> {
        self.ensure_known(node).await?;
        let version = self.conn(node).await?.versions.negotiate(ApiKey::ShareFetch, MIN_VERSION, MAX_VERSION)?;
        let body = encode_request(params, version)?;
        let reply = self.send_raw_to(node, ApiKey::ShareFetch, version, &body).await?;
        Ok((decode_response(reply, version)?, version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::protocol::Encodable;

    fn params() -> ShareFetchParams {
        ShareFetchParams {
            group_id: "g".into(),
            member_id: "m".into(),
            share_session_epoch: 3,
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 1 << 20,
            max_records: 10,
            batch_size: 10,
            acquire_mode: AcquireMode::RecordLimit,
            is_renew_ack: false,
            topics: vec![(
                Uuid::from_u128(0x0102),
                vec![FetchPartitionAcks {
                    partition: 0,
                    acks: vec![AckBatch { first_offset: 5, last_offset: 6, types: vec![ACK_ACCEPT] }],
                }],
            )],
            forgotten: vec![(Uuid::from_u128(9), vec![1])],
        }
    }

    #[test]
    fn v2_exact_bytes() {
        let body = encode_request(&params(), 2).unwrap();
        let mut expected: Vec<u8> = vec![
            0x02, b'g', // GroupId "g"
            0x02, b'm', // MemberId "m"
            0, 0, 0, 3, // ShareSessionEpoch 3
            0, 0, 0x01, 0xF4, // MaxWaitMs 500
            0, 0, 0, 1, // MinBytes 1
            0, 0x10, 0, 0, // MaxBytes 1 MiB
            0, 0, 0, 10, // MaxRecords 10
            0, 0, 0, 10,   // BatchSize 10
            0x01, // ShareAcquireMode: record-limit
            0x00, // IsRenewAck: false
            0x02, // Topics: 1
        ];
        expected.extend_from_slice(&0x0102u128.to_be_bytes()); // TopicId
        #[rustfmt::skip]
        expected.extend_from_slice(&[
            0x02,                               // Partitions: 1
            0, 0, 0, 0,                         // PartitionIndex 0
            0x02,                               // AcknowledgementBatches: 1
            0, 0, 0, 0, 0, 0, 0, 5,             // FirstOffset 5
            0, 0, 0, 0, 0, 0, 0, 6,             // LastOffset 6
            0x02, 0x01,                         // AcknowledgeTypes [ACCEPT]
            0x00,                               // batch tags
            0x00,                               // partition tags
            0x00,                               // topic tags
            0x02,                               // ForgottenTopicsData: 1
        ]);
        expected.extend_from_slice(&9u128.to_be_bytes());
        expected.extend_from_slice(&[0x02, 0, 0, 0, 1, 0x00, 0x00]); // [1], tags; request tags
        assert_eq!(&body[..], &expected[..]);
    }

    #[test]
    fn v2_is_v1_plus_two_bytes_after_batch_size() {
        let mut p = params();
        p.acquire_mode = AcquireMode::BatchOptimized;
        let v1 = encode_request(&p, 1).unwrap();
        let v2 = encode_request(&p, 2).unwrap();
        // group (2) + member (2) + six int32 fields (24) precede the v2 fields.
        let at = 2 + 2 + 24;
        let mut expected = v1[..at].to_vec();
        expected.extend_from_slice(&[0, 0]);
        expected.extend_from_slice(&v1[at..]);
        assert_eq!(&v2[..], &expected[..]);
    }

    #[test]
    fn below_v2_the_acquire_mode_is_dropped_and_renew_refused() {
        let p = params(); // record-limit: ignorable, silently not sent at v1
        let v1 = encode_request(&p, 1).unwrap();
        assert_eq!(v1.len(), encode_request(&p, 2).unwrap().len() - 2);
        let renew = ShareFetchParams { is_renew_ack: true, ..params() };
        let err = encode_request(&renew, 1).unwrap_err();
        assert!(err.to_string().contains("isRenewAck"), "{err}");
        assert!(encode_request(&p, 0).is_err());
        assert!(encode_request(&p, 3).is_err());
    }

    #[test]
    fn v2_response_from_literal_bytes() {
        let mut body: Vec<u8> = vec![
            0, 0, 0, 0, // ThrottleTimeMs
            0, 0,    // ErrorCode NONE
            0x00, // ErrorMessage null
            0, 0, 0x03, 0xE8, // AcquisitionLockTimeoutMs 1000
            0x02, // Responses: 1
        ];
        body.extend_from_slice(&7u128.to_be_bytes());
        #[rustfmt::skip]
        body.extend_from_slice(&[
            0x02,                   // Partitions: 1
            0, 0, 0, 2,             // PartitionIndex 2
            0, 0,                   // ErrorCode
            0x00,                   // ErrorMessage null
            0, 121,                 // AcknowledgeErrorCode INVALID_RECORD_STATE
            0x00,                   // AcknowledgeErrorMessage null
            0, 0, 0, 1, 0, 0, 0, 4, // CurrentLeader {1, 4}
            0x00,                   // leader tags
            0x01,                   // Records: empty (compact bytes, length 0)
            0x02,                   // AcquiredRecords: 1
            0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 12, 0, 2, // 10..=12, delivery count 2
            0x00,                   // acquired tags
            0x00,                   // partition tags
            0x00,                   // topic tags
            0x01,                   // NodeEndpoints: 0
            0x00,                   // tags
        ]);
        let r = decode_response(Bytes::from(body), 2).unwrap();
        assert_eq!(r.acquisition_lock_timeout_ms, 1000);
        let part = &r.responses[0].partitions[0];
        assert_eq!(r.responses[0].topic_id, Uuid::from_u128(7));
        assert_eq!(part.partition_index, 2);
        assert_eq!(part.acknowledge_error_code, 121);
        let a = &part.acquired_records[0];
        assert_eq!((a.first_offset, a.last_offset, a.delivery_count), (10, 12, 2));
        // The crate's own v1 encoding of it reads back the same.
        let mut again = BytesMut::new();
        r.encode(&mut again, 1).unwrap();
        assert_eq!(decode_response(again.freeze(), 2).unwrap(), r);
    }
}
