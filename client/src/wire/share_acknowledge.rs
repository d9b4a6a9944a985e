//! ShareAcknowledge (API 79) v1–v2: acknowledging records without fetching.
//!
//! On the wire: the group and member ids, the share session epoch (a session
//! must exist: epoch 0 cannot open one here; -1 acknowledges and closes it, as
//! Java's consumer does on close), and per topic id and partition the
//! acknowledgement batches — the same batches a ShareFetch carries (see
//! [`share_fetch`](super::share_fetch)). The answer has a top-level error and
//! per partition an error code: NONE means the acknowledgements were applied
//! (and, for ACCEPT and REJECT, written to the share coordinator before the
//! answer), INVALID_RECORD_STATE that a record was no longer acquired by this
//! member (its lock had expired). It goes to each partition's leader; Java's
//! `ShareConsumeRequestManager` sends it for `commitSync`/`commitAsync` and on
//! close, and otherwise lets acknowledgements ride on the next ShareFetch.
//!
//! Versions (`ShareAcknowledgeRequest.json`, 4.4.0): v1 is KIP-932's; v2
//! (KIP-1222) adds `IsRenewAck` (bool) after `ShareSessionEpoch` in the request
//! and `AcquisitionLockTimeoutMs` (int32, ignorable) after `ErrorMessage` in
//! the response. The `kafka-protocol` crate (0.18) knows only v1: v2 requests
//! are written here, and a v2 response is read by taking out the four lock
//! bytes and decoding the rest with the crate's v1 decoder.
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::share_acknowledge_request::{
    AcknowledgePartition, AcknowledgeTopic, AcknowledgementBatch,
};
use kafka_protocol::messages::{ApiKey, GroupId, ShareAcknowledgeRequest, ShareAcknowledgeResponse};
use kafka_protocol::protocol::Decodable;
use sinkhole_kafka::primitives::{put_compact_nullable_string, put_unsigned_varint, skip_nullable_string};
use uuid::Uuid;

use super::client::{encode_body, str_bytes, Client};
use super::error::WireError;
use super::share_fetch::{put_ack_batches, put_compact_len, AckBatch, MAX_VERSION, MIN_VERSION};

/// One partition's acknowledgement batches.
pub type PartitionAcks = (i32, Vec<AckBatch>);

/// The fields of one ShareAcknowledge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareAcknowledgeParams {
    pub group_id: String,
    pub member_id: String,
    pub share_session_epoch: i32,
    pub is_renew_ack: bool,
    /// Topic id → (partition, batches).
    pub topics: Vec<(Uuid, Vec<PartitionAcks>)>,
}

/// A decoded answer, with v2's lock duration when the broker sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareAcknowledgeAnswer {
    pub response: ShareAcknowledgeResponse,
    pub acquisition_lock_timeout_ms: Option<i32>,
}

/// Encodes the request body at `version` (v1 by the crate, v2 here).
pub fn encode_request(p: &ShareAcknowledgeParams, version: i16) -> Result<Bytes, WireError> {
    match version {
        1 if p.is_renew_ack => Err(WireError::Codec(
            "ShareAcknowledge: attempted to write a non-default isRenewAck at version 1 (needs v2)".into(),
        )),
        1 => encode_body(&crate_request(p), 1, "ShareAcknowledge"),
        2 => Ok(encode_v2(p)),
        v => {
            Err(WireError::Codec(format!("ShareAcknowledge v{v}: only v{MIN_VERSION}..=v{MAX_VERSION} can be encoded")))
        }
    }
}

fn crate_request(p: &ShareAcknowledgeParams) -> ShareAcknowledgeRequest {
    ShareAcknowledgeRequest::default()
        .with_group_id(Some(GroupId(str_bytes(&p.group_id))))
        .with_member_id(Some(str_bytes(&p.member_id)))
        .with_share_session_epoch(p.share_session_epoch)
        .with_topics(
            p.topics
                .iter()
                .map(|(id, parts)| {
                    AcknowledgeTopic::default().with_topic_id(*id).with_partitions(
                        parts
                            .iter()
                            .map(|(part, acks)| {
                                AcknowledgePartition::default()
                                    .with_partition_index(*part)
                                    .with_acknowledgement_batches(
                                        acks.iter()
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
}

fn encode_v2(p: &ShareAcknowledgeParams) -> Bytes {
    let mut buf = BytesMut::with_capacity(48);
    put_compact_nullable_string(&mut buf, Some(&p.group_id));
    put_compact_nullable_string(&mut buf, Some(&p.member_id));
    buf.put_i32(p.share_session_epoch);
    buf.put_u8(p.is_renew_ack as u8);
    put_compact_len(&mut buf, p.topics.len());
    for (id, parts) in &p.topics {
        buf.put_slice(id.as_bytes());
        put_compact_len(&mut buf, parts.len());
        for (part, acks) in parts {
            buf.put_i32(*part);
            put_ack_batches(&mut buf, acks);
            put_unsigned_varint(&mut buf, 0);
        }
        put_unsigned_varint(&mut buf, 0);
    }
    put_unsigned_varint(&mut buf, 0);
    buf.freeze()
}

/// Decodes a response body at `version`; see the module docs for v2.
pub fn decode_response(body: Bytes, version: i16) -> Result<ShareAcknowledgeAnswer, WireError> {
    let cut = |what: &str| WireError::Codec(format!("ShareAcknowledge v{version} response cut short ({what})"));
    let (v1, lock) = match version {
        1 => (body, None),
        2 => {
            // ThrottleTimeMs (4), ErrorCode (2), ErrorMessage (compact nullable string).
            let mut pos = 6;
            skip_nullable_string(&body, &mut pos, true).ok_or_else(|| cut("error message"))?;
            let lock = body.get(pos..pos + 4).ok_or_else(|| cut("lock duration"))?;
            let lock = i32::from_be_bytes([lock[0], lock[1], lock[2], lock[3]]);
            let mut v1 = BytesMut::with_capacity(body.len() - 4);
            v1.put_slice(&body[..pos]);
            v1.put_slice(&body[pos + 4..]);
            (v1.freeze(), Some(lock))
        }
        v => return Err(WireError::Codec(format!("ShareAcknowledge v{v} response: not decodable here"))),
    };
    let mut v1 = v1;
    let response = ShareAcknowledgeResponse::decode(&mut v1, 1)
        .map_err(|e| WireError::codec(&format!("decoding ShareAcknowledge v{version} response"), e))?;
    Ok(ShareAcknowledgeAnswer { response, acquisition_lock_timeout_ms: lock })
}

impl Client {
    /// One ShareAcknowledge to `node` (the partitions' leader) at the highest
    /// version in 1..=2 both sides know; not retried. Returns the answer and
    /// the version sent.
    pub async fn share_acknowledge(
        &mut self,
        node: i32,
        params: &ShareAcknowledgeParams,
    ) -> Result<(ShareAcknowledgeAnswer, i16), WireError> {
        self.ensure_known(node).await?;
        let version = self.conn(node).await?.versions.negotiate(ApiKey::ShareAcknowledge, MIN_VERSION, MAX_VERSION)?;
        let body = encode_request(params, version)?;
        let reply = self.send_raw_to(node, ApiKey::ShareAcknowledge, version, &body).await?;
        Ok((decode_response(reply, version)?, version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::share_fetch::{ACK_ACCEPT, ACK_GAP, ACK_RELEASE};
    use kafka_protocol::protocol::Encodable;

    fn params(renew: bool) -> ShareAcknowledgeParams {
        ShareAcknowledgeParams {
            group_id: "g".into(),
            member_id: "m".into(),
            share_session_epoch: -1,
            is_renew_ack: renew,
            topics: vec![(
                Uuid::from_u128(5),
                vec![(
                    1,
                    vec![AckBatch { first_offset: 0, last_offset: 2, types: vec![ACK_ACCEPT, ACK_GAP, ACK_RELEASE] }],
                )],
            )],
        }
    }

    #[test]
    fn v2_exact_bytes_and_v1_equivalence() {
        let v2 = encode_request(&params(false), 2).unwrap();
        let mut expected: Vec<u8> = vec![0x02, b'g', 0x02, b'm', 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x02];
        expected.extend_from_slice(&5u128.to_be_bytes());
        #[rustfmt::skip]
        expected.extend_from_slice(&[
            0x02, 0, 0, 0, 1,                   // Partitions: [1]
            0x02,                               // AcknowledgementBatches: 1
            0, 0, 0, 0, 0, 0, 0, 0,             // FirstOffset 0
            0, 0, 0, 0, 0, 0, 0, 2,             // LastOffset 2
            0x04, 1, 0, 2,                      // AcknowledgeTypes [ACCEPT, GAP, RELEASE]
            0x00, 0x00, 0x00, 0x00,             // batch, partition, topic, request tags
        ]);
        assert_eq!(&v2[..], &expected[..]);
        // v1 is v2 without the IsRenewAck byte after the epoch.
        let v1 = encode_request(&params(false), 1).unwrap();
        let mut without = v2[..8].to_vec();
        without.extend_from_slice(&v2[9..]);
        assert_eq!(&v1[..], &without[..]);
        assert!(encode_request(&params(true), 1).is_err());
        assert_eq!(encode_request(&params(true), 2).unwrap()[8], 1);
    }

    #[test]
    fn v2_response_takes_out_the_lock_duration() {
        #[rustfmt::skip]
        let mut body: Vec<u8> = vec![
            0, 0, 0, 0,             // ThrottleTimeMs
            0, 0,                   // ErrorCode
            0x03, b'o', b'k',       // ErrorMessage "ok"
            0, 0, 0x75, 0x30,       // AcquisitionLockTimeoutMs 30000
            0x02,                   // Responses: 1
        ];
        body.extend_from_slice(&5u128.to_be_bytes());
        #[rustfmt::skip]
        body.extend_from_slice(&[
            0x02, 0, 0, 0, 1,       // Partitions: PartitionIndex 1
            0, 121,                 // ErrorCode INVALID_RECORD_STATE
            0x00,                   // ErrorMessage null
            0, 0, 0, 1, 0, 0, 0, 0, 0x00, // CurrentLeader {1, 0}, tags
            0x00, 0x00,             // partition, topic tags
            0x01,                   // NodeEndpoints: 0
            0x00,                   // tags
        ]);
        let a = decode_response(Bytes::from(body.clone()), 2).unwrap();
        assert_eq!(a.acquisition_lock_timeout_ms, Some(30000));
        assert_eq!(a.response.error_message.as_deref(), Some("ok"));
        assert_eq!(a.response.responses[0].partitions[0].error_code, 121);
        // The same answer in v1 form: the crate writes it without the lock.
        let mut v1 = BytesMut::new();
        a.response.encode(&mut v1, 1).unwrap();
        let mut expected = body[..9].to_vec();
        expected.extend_from_slice(&body[13..]);
        assert_eq!(&v1[..], &expected[..]);
        assert_eq!(decode_response(v1.freeze(), 1).unwrap().acquisition_lock_timeout_ms, None);
        assert!(decode_response(Bytes::from_static(&[0, 0, 0, 0, 0]), 2).is_err());
    }
}
