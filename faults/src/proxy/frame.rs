//! Frames for the proxy: one direction of a connection read frame by frame,
//! and what the rules need to know of a request body.
//!
//! The framing itself (the size prefix, the size limit, the headers) is
//! `sinkhole-kafka`'s, shared with the wire client. Here, as in
//! tokio-rs/mini-redis's `Connection`, a reader owns one growing `BytesMut`,
//! reads into it and asks [`split_frame`] for the next whole frame (no copy:
//! the frame shares the allocation, and is forwarded as it came, size prefix
//! included). Request bodies are read only as far as the rules need
//! ([`request_facts`]).
use std::io;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, ApiKey, DescribeTransactionsRequest, EndTxnRequest,
    FindCoordinatorRequest, InitProducerIdRequest, TxnOffsetCommitRequest,
};
use kafka_protocol::protocol::Decodable;
use sinkhole_kafka::frame::split_frame;
use sinkhole_kafka::primitives::{read_nullable_string, skip_nullable_string};
use tokio::io::{AsyncRead, AsyncReadExt};

/// The largest frame the proxy accepts. Kafka brokers refuse requests above
/// `socket.request.max.bytes` (100 MiB by default); responses (Fetch) can be
/// bigger, so the bound is generous: it only guards against a stream that is
/// out of step, whose "length" is then garbage.
pub const MAX_FRAME: usize = 512 * 1024 * 1024;

/// Reads whole frames from one direction of a connection.
pub struct FrameReader<R> {
    rd: R,
    buf: BytesMut,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(rd: R) -> FrameReader<R> {
        FrameReader { rd, buf: BytesMut::with_capacity(64 * 1024) }
    }

    pub fn get_ref(&self) -> &R {
        &self.rd
    }

    /// The next whole frame, length prefix included; None at a clean end of
    /// stream (between frames). A negative or oversized length, or an end of
    /// stream inside a frame, is an error: the connection is closed.
    pub async fn next(&mut self) -> io::Result<Option<Bytes>> {
        loop {
            if let Some(frame) = self.parse()? {
                return Ok(Some(frame));
            }
            if self.buf.capacity() - self.buf.len() < 4096 {
                self.buf.reserve(64 * 1024);
            }
            if self.rd.read_buf(&mut self.buf).await? == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed inside a frame"))
                };
            }
        }
    }

    fn parse(&mut self) -> io::Result<Option<Bytes>> {
        split_frame(&mut self.buf, MAX_FRAME).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

/// The first version at which an API's request body is "flexible" (compact
/// strings, tagged fields), for the APIs whose first field is the
/// transactional id (Kafka's JSON schemas: `flexibleVersions`).
fn first_field_tid_flexible_from(key: ApiKey) -> Option<i16> {
    match key {
        ApiKey::Produce => Some(9),
        ApiKey::InitProducerId => Some(2),
        ApiKey::AddPartitionsToTxn => Some(3),
        ApiKey::AddOffsetsToTxn => Some(3),
        ApiKey::EndTxn => Some(3),
        ApiKey::TxnOffsetCommit => Some(3),
        _ => None,
    }
}

/// Whether a Produce request gets a response: acks (its second field, after
/// the transactional id) is not 0. Read without decoding the request.
pub fn produce_expects_response(version: i16, body: &[u8]) -> bool {
    let mut pos = 0;
    if skip_nullable_string(body, &mut pos, version >= 9).is_none() {
        return true;
    }
    body.get(pos..pos + 2).is_none_or(|a| i16::from_be_bytes([a[0], a[1]]) != 0)
}

/// What the proxy learns from a request body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestFacts {
    /// Transactional ids the request carries (usually 0 or 1).
    pub transactional_ids: Vec<String>,
    /// Whether the broker answers it (Produce with acks=0 gets no response).
    pub expects_response: bool,
}

/// Reads the transactional ids (and Produce's acks) of a request body.
///
/// Bodies are decoded with `kafka-protocol`; when the crate does not know the
/// version (InitProducerId v6, which Kafka 4.4.0 speaks for KIP-939) the
/// transactional id is read as the body's first field, which it is for every
/// API below but FindCoordinator and DescribeTransactions. Produce is never
/// decoded whole — that would walk every topic and partition of every batch
/// for one string — its first two fields are the transactional id and acks.
pub fn request_facts(api_key: i16, version: i16, body: &Bytes) -> RequestFacts {
    let mut facts = RequestFacts { transactional_ids: vec![], expects_response: true };
    let Ok(key) = ApiKey::try_from(api_key) else {
        return facts;
    };
    let first_field = |facts: &mut RequestFacts| -> Option<usize> {
        let flexible = version >= first_field_tid_flexible_from(key)?;
        let mut pos = 0;
        if let Some(Some(tid)) = read_nullable_string(body, &mut pos, flexible) {
            facts.transactional_ids.push(tid);
        }
        Some(pos)
    };
    let mut b = body.clone();
    let decoded: Option<Vec<String>> = match key {
        ApiKey::Produce => {
            if let Some(pos) = first_field(&mut facts) {
                if let Some(acks) = body.get(pos..pos + 2) {
                    facts.expects_response = i16::from_be_bytes([acks[0], acks[1]]) != 0;
                }
            }
            return facts;
        }
        ApiKey::InitProducerId => InitProducerIdRequest::decode(&mut b, version)
            .ok()
            .map(|r| r.transactional_id.into_iter().map(|t| t.0.to_string()).collect()),
        ApiKey::AddPartitionsToTxn => AddPartitionsToTxnRequest::decode(&mut b, version).ok().map(|r| {
            if version <= 3 {
                vec![r.v3_and_below_transactional_id.0.to_string()]
            } else {
                r.transactions.iter().map(|t| t.transactional_id.0.to_string()).collect()
            }
        }),
        ApiKey::AddOffsetsToTxn => {
            AddOffsetsToTxnRequest::decode(&mut b, version).ok().map(|r| vec![r.transactional_id.0.to_string()])
        }
        ApiKey::EndTxn => EndTxnRequest::decode(&mut b, version).ok().map(|r| vec![r.transactional_id.0.to_string()]),
        ApiKey::TxnOffsetCommit => {
            TxnOffsetCommitRequest::decode(&mut b, version).ok().map(|r| vec![r.transactional_id.0.to_string()])
        }
        ApiKey::FindCoordinator => {
            // Key type 1 = transaction (Kafka's `FindCoordinatorRequest.CoordinatorType`);
            // v0 has no key type (always a group).
            return match FindCoordinatorRequest::decode(&mut b, version) {
                Ok(r) if version >= 1 && r.key_type == 1 => {
                    facts.transactional_ids = if version >= 4 {
                        r.coordinator_keys.iter().map(|k| k.to_string()).collect()
                    } else {
                        vec![r.key.to_string()]
                    };
                    facts
                }
                _ => facts,
            };
        }
        ApiKey::DescribeTransactions => {
            return match DescribeTransactionsRequest::decode(&mut b, version) {
                Ok(r) => {
                    facts.transactional_ids = r.transactional_ids.iter().map(|t| t.0.to_string()).collect();
                    facts
                }
                Err(_) => facts,
            };
        }
        _ => return facts,
    };
    match decoded {
        Some(ids) => facts.transactional_ids = ids,
        None => {
            first_field(&mut facts);
        }
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;
    use kafka_protocol::messages::{RequestHeader as KHeader, TransactionalId};
    use kafka_protocol::protocol::{Encodable, StrBytes};
    use sinkhole_kafka::header::request_header;

    fn frame_of(key: ApiKey, version: i16, corr: i32, client: Option<&str>, body: &impl Encodable) -> Bytes {
        let h = KHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(corr)
            .with_client_id(client.map(|c| StrBytes::from_string(c.to_string())));
        let mut buf = BytesMut::new();
        buf.put_i32(0);
        h.encode(&mut buf, key.request_header_version(version)).unwrap();
        body.encode(&mut buf, version).unwrap();
        let len = (buf.len() - 4) as i32;
        buf[..4].copy_from_slice(&len.to_be_bytes());
        buf.freeze()
    }

    #[test]
    fn headers_v1_and_v2_give_the_client_id_and_the_body() {
        for version in [2i16, 3, 5] {
            let body = EndTxnRequest::default()
                .with_transactional_id(TransactionalId(StrBytes::from_static_str("tid-a")))
                .with_committed(true);
            let f = frame_of(ApiKey::EndTxn, version, 77, Some("sinkhole-legacy-0-1"), &body);
            let h = request_header(&f).unwrap();
            assert_eq!((h.api_key, h.api_version, h.correlation_id), (26, version, 77));
            assert_eq!(h.client_id(&f), "sinkhole-legacy-0-1");
            let facts = request_facts(26, version, &f.slice(h.body.unwrap()..));
            assert_eq!(facts.transactional_ids, vec!["tid-a".to_string()]);
        }
        let body = EndTxnRequest::default();
        let f = frame_of(ApiKey::EndTxn, 4, 1, None, &body);
        assert_eq!(request_header(&f).unwrap().client_id(&f), "");
    }

    #[test]
    fn produce_acks_zero_expects_no_response() {
        // Produce v3 (classic strings): null transactional id, acks 0.
        assert!(!produce_expects_response(3, &[0xff, 0xff, 0, 0, 0, 0, 0x75, 0x30]));
        assert!(produce_expects_response(3, &[0xff, 0xff, 0xff, 0xff]), "acks -1");
        // v9+ (compact): transactional id "t", acks 0.
        assert!(!produce_expects_response(9, &[2, b't', 0, 0]));
        let facts = request_facts(0, 9, &Bytes::from_static(&[2, b't', 0, 0]));
        assert_eq!(facts.transactional_ids, vec!["t".to_string()]);
        assert!(!facts.expects_response);
        // A body cut short is assumed to want an answer.
        assert!(produce_expects_response(9, &[9]));
    }

    #[test]
    fn init_producer_id_v6_falls_back_to_the_first_field() {
        // v6 = v5 + two bools before the tagged fields; the crate decodes up to v5.
        let mut body = BytesMut::new();
        body.put_u8(6); // compact string, length 5
        body.put_slice(b"tid-6");
        body.put_i32(60_000);
        body.put_i64(-1);
        body.put_i16(-1);
        body.put_u8(1);
        body.put_u8(0);
        body.put_u8(0);
        let facts = request_facts(22, 6, &body.freeze());
        assert_eq!(facts.transactional_ids, vec!["tid-6".to_string()]);
    }

    #[tokio::test]
    async fn frames_split_across_reads_are_reassembled_and_bad_lengths_refused() {
        let mut data = BytesMut::new();
        for i in 0..3u8 {
            data.put_i32(3);
            data.put_slice(&[i, i, i]);
        }
        let (mut tx, rx) = tokio::io::duplex(64);
        let bytes = data.freeze();
        let w = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for chunk in bytes.chunks(2) {
                tx.write_all(chunk).await.unwrap();
                tokio::task::yield_now().await;
            }
            tx.write_all(&(-5i32).to_be_bytes()).await.unwrap();
        });
        let mut r = FrameReader::new(rx);
        for i in 0..3u8 {
            assert_eq!(&r.next().await.unwrap().unwrap()[..], &[0, 0, 0, 3, i, i, i]);
        }
        let err = r.next().await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        w.await.unwrap();
    }
}
