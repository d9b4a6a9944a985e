//! InitProducerId (API 22) v0–v6, with the v6 request encoded by hand.
//!
//! On the wire: a transactional id (null for an idempotent producer), the
//! transaction timeout and, from v3, the current producer id and epoch (-1 for
//! a fresh producer; set, they ask for an epoch bump), answered with the
//! producer id and epoch to use. With a transactional id it goes to the
//! transaction coordinator, which fences every earlier producer of the id and
//! aborts its ongoing transaction (or, in v6 with `KeepPreparedTxn`, keeps a
//! prepared one). The retries follow the Java client's
//! `TransactionManager.InitProducerIdHandler`.
//!
//! InitProducerId is where the sink modes differ: `legacy` sends it without
//! 2PC, `kip939` and `twopc-inject` send v6 with `Enable2Pc=true`, and
//! `kip939` recovers with v6 `KeepPreparedTxn=true`. The `kafka-protocol`
//! crate encodes the request only up to v5 (v6 is marked
//! `latestVersionUnstable` in Kafka's JSON schema) though it decodes the v6
//! response, so v6 requests are written here.
//!
//! Schema, from `InitProducerIdRequest.json` (checked in the 4.4.0
//! `kafka-clients` jar; `docs/PROTOCOL.md` §1.3), flexible from v2:
//!
//! | field | type | versions |
//! |---|---|---|
//! | TransactionalId | nullable string (compact from v2) | 0+ |
//! | TransactionTimeoutMs | int32 | 0+ |
//! | ProducerId | int64, default -1 | 3+ |
//! | ProducerEpoch | int16, default -1 | 3+ |
//! | Enable2Pc | bool, default false | 6+ |
//! | KeepPreparedTxn | bool, default false | 6+ |
//! | tagged fields | unsigned varint count | 2+ |
//!
//! So v6 = v5 + two bool bytes before the tagged-field count. As in Java's
//! generated `InitProducerIdRequestData.write` (reached through
//! `InitProducerIdRequest.Builder`), asking for a non-default Enable2Pc or
//! KeepPreparedTxn below v6 is an error rather than a silent drop: the
//! broker would otherwise run a different protocol than the caller asked for.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, InitProducerIdRequest, InitProducerIdResponse, ProducerId, TransactionalId};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use sinkhole_kafka::primitives::{put_compact_nullable_string, put_unsigned_varint};
use tracing::debug;

use super::api_versions::ApiVersionsInfo;
use super::client::{Call, Client, Target};
use super::error::{coordinator_retry, KafkaCode, WireError};

/// Highest InitProducerId version this module encodes.
pub const MAX_VERSION: i16 = 6;

/// Highest version the `kafka-protocol` crate encodes (the stable ones).
pub const MAX_CRATE_VERSION: i16 = 5;

/// The fields of an InitProducerId request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitProducerIdParams {
    /// `None` for an idempotent (non-transactional) producer.
    pub transactional_id: Option<String>,
    pub transaction_timeout_ms: i32,
    /// -1 for a fresh producer; the current id for a client epoch bump (v3+).
    pub producer_id: i64,
    /// -1 for a fresh producer; the current epoch for a client epoch bump (v3+).
    pub producer_epoch: i16,
    /// KIP-939: the transaction may outlive the timeout (v6).
    pub enable_2pc: bool,
    /// KIP-939: keep a prepared transaction instead of aborting it (v6).
    pub keep_prepared_txn: bool,
}

impl Default for InitProducerIdParams {
    fn default() -> Self {
        InitProducerIdParams {
            transactional_id: None,
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
            enable_2pc: false,
            keep_prepared_txn: false,
        }
    }
}

impl InitProducerIdParams {
    /// A fresh transactional producer: pid/epoch -1, no 2PC.
    pub fn transactional(transactional_id: &str, transaction_timeout_ms: i32) -> Self {
        InitProducerIdParams {
            transactional_id: Some(transactional_id.to_string()),
            transaction_timeout_ms,
            ..Default::default()
        }
    }

    /// True when the request needs v6 (a KIP-939 flag is set).
    pub fn needs_v6(&self) -> bool {
        self.enable_2pc || self.keep_prepared_txn
    }
}

/// Encodes the request body (without the request header) at `version`.
pub fn encode_request(params: &InitProducerIdParams, version: i16) -> Result<Bytes, WireError> {
    if !(0..=MAX_VERSION).contains(&version) {
        return Err(WireError::Codec(format!("InitProducerId v{version}: only v0..=v{MAX_VERSION} can be encoded")));
    }
    if version < 6 {
        for (set, name) in [(params.enable_2pc, "enable2Pc"), (params.keep_prepared_txn, "keepPreparedTxn")] {
            if set {
                return Err(WireError::Codec(format!(
                    "InitProducerId: attempted to write a non-default {name} at version {version} (needs v6)"
                )));
            }
        }
        return encode_with_crate(params, version);
    }
    Ok(encode_v6(params))
}

fn encode_with_crate(params: &InitProducerIdParams, version: i16) -> Result<Bytes, WireError> {
    let req = InitProducerIdRequest::default()
        .with_transactional_id(
            params.transactional_id.as_ref().map(|t| TransactionalId(StrBytes::from_string(t.clone()))),
        )
        .with_transaction_timeout_ms(params.transaction_timeout_ms)
        .with_producer_id(ProducerId(params.producer_id))
        .with_producer_epoch(params.producer_epoch);
    let mut buf = BytesMut::new();
    req.encode(&mut buf, version).map_err(|e| WireError::codec(&format!("encoding InitProducerId v{version}"), e))?;
    Ok(buf.freeze())
}

/// v6 by hand; see the table in the module docs.
fn encode_v6(params: &InitProducerIdParams) -> Bytes {
    let mut buf = BytesMut::with_capacity(32);
    put_compact_nullable_string(&mut buf, params.transactional_id.as_deref());
    buf.put_i32(params.transaction_timeout_ms);
    buf.put_i64(params.producer_id);
    buf.put_i16(params.producer_epoch);
    buf.put_u8(params.enable_2pc as u8);
    buf.put_u8(params.keep_prepared_txn as u8);
    put_unsigned_varint(&mut buf, 0); // no tagged fields
    buf.freeze()
}

/// Decodes a response body (after the response header); the crate handles
/// every version up to v6 (`OngoingTxnProducerId/Epoch`).
pub fn decode_response(mut body: Bytes, version: i16) -> Result<InitProducerIdResponse, WireError> {
    InitProducerIdResponse::decode(&mut body, version)
        .map_err(|e| WireError::codec(&format!("decoding InitProducerId v{version} response"), e))
}

/// Result of a successful InitProducerId.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitProducerIdOutcome {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// v6 only (KIP-939, with KeepPreparedTxn): the prepared transaction's
    /// producer id and epoch; -1 when none or below v6.
    pub ongoing_txn_producer_id: i64,
    pub ongoing_txn_producer_epoch: i16,
    /// The request version that was sent.
    pub version: i16,
    /// Node id of the broker that answered (the transaction coordinator
    /// for a transactional id).
    pub coordinator: i32,
}

/// What one InitProducerId attempt got back, error or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitProducerIdAnswer {
    /// The error code of the reply, `None` for NONE.
    pub error: Option<KafkaCode>,
    /// The reply's fields as sent (pid/epoch are usually -1 on error).
    pub outcome: InitProducerIdOutcome,
}

impl Client {
    /// InitProducerId, retried per [`coordinator_retry`] (so an ongoing
    /// transaction's CONCURRENT_TRANSACTIONS is retried, as Java does; each
    /// attempt fences and bumps the epoch again).
    ///
    /// Sent to the coordinator of the transactional id, or to any broker
    /// for an idempotent producer.
    ///
    /// Version: `Some(v)` sends exactly `v` if the broker advertises it
    /// (else [`WireError::UnsupportedVersion`]). `None` picks v6 when the
    /// params need it (Enable2Pc or KeepPreparedTxn) and otherwise the
    /// highest common version up to v5, even if the broker advertises v6:
    /// v6 is an unstable version (`latestVersionUnstable`) that Java clients
    /// never send, and without the flags it asks nothing more of the broker.
    /// Callers that want 2PC pass `Some(6)` explicitly.
    pub async fn init_producer_id(
        &mut self,
        params: &InitProducerIdParams,
        version: Option<i16>,
    ) -> Result<InitProducerIdOutcome, WireError> {
        Ok(self.init_producer_id_call(params, version, false).await?.outcome)
    }

    /// One InitProducerId attempt (after the coordinator lookup, which is
    /// retried): returns whatever the broker answered, including retriable
    /// codes such as CONCURRENT_TRANSACTIONS. Transport errors are returned
    /// as errors.
    pub async fn init_producer_id_once(
        &mut self,
        params: &InitProducerIdParams,
        version: Option<i16>,
    ) -> Result<InitProducerIdAnswer, WireError> {
        self.init_producer_id_call(params, version, true).await
    }

    async fn init_producer_id_call(
        &mut self,
        params: &InitProducerIdParams,
        version: Option<i16>,
        once: bool,
    ) -> Result<InitProducerIdAnswer, WireError> {
        let choose = |info: &ApiVersionsInfo| match version {
            Some(v) => info.negotiate(ApiKey::InitProducerId, v, v),
            None if params.needs_v6() => info.negotiate(ApiKey::InitProducerId, 6, 6),
            None => info.negotiate(ApiKey::InitProducerId, 0, MAX_CRATE_VERSION),
        };
        let encode = |v: i16| encode_request(params, v);
        let decode = |b: Bytes, v: i16| decode_response(b, v);
        let status = |r: &kafka_protocol::messages::InitProducerIdResponse| (KafkaCode(r.error_code), None);
        let target = match &params.transactional_id {
            Some(tid) => Target::Coordinator(tid),
            None => Target::Any,
        };
        let reply = self
            .call(&Call {
                api: "InitProducerId",
                api_key: ApiKey::InitProducerId,
                target,
                choose_version: &choose,
                encode: &encode,
                decode: &decode,
                status: &status,
                classify: coordinator_retry,
                once,
            })
            .await?;
        let r = &reply.body;
        let outcome = InitProducerIdOutcome {
            producer_id: *r.producer_id,
            producer_epoch: r.producer_epoch,
            ongoing_txn_producer_id: *r.ongoing_txn_producer_id,
            ongoing_txn_producer_epoch: r.ongoing_txn_producer_epoch,
            version: reply.version,
            coordinator: reply.node,
        };
        debug!(
            transactional_id = params.transactional_id.as_deref().unwrap_or("-"),
            version = reply.version,
            code = %reply.code,
            producer_id = outcome.producer_id,
            producer_epoch = outcome.producer_epoch,
            "InitProducerId"
        );
        Ok(InitProducerIdAnswer { error: KafkaCode::from_code(r.error_code), outcome })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(tid: Option<&str>, pid: i64, epoch: i16, two_pc: bool, keep: bool) -> InitProducerIdParams {
        InitProducerIdParams {
            transactional_id: tid.map(str::to_string),
            transaction_timeout_ms: 60_000,
            producer_id: pid,
            producer_epoch: epoch,
            enable_2pc: two_pc,
            keep_prepared_txn: keep,
        }
    }

    #[test]
    fn v6_exact_bytes() {
        let p = params(Some("sink-0-1"), -1, -1, true, false);
        #[rustfmt::skip]
        let expected: &[u8] = &[
            0x09,                                       // TransactionalId: compact string, varint length+1 = 8+1
            b's', b'i', b'n', b'k', b'-', b'0', b'-', b'1', //   "sink-0-1"
            0x00, 0x00, 0xEA, 0x60,                     // TransactionTimeoutMs: int32 60000
            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, // ProducerId: int64 -1
            0xFF, 0xFF,                                 // ProducerEpoch: int16 -1
            0x01,                                       // Enable2Pc: true
            0x00,                                       // KeepPreparedTxn: false
            0x00,                                       // tagged fields: count 0
        ];
        assert_eq!(&encode_request(&p, 6).unwrap()[..], expected);

        // Recovery with keepPreparedTxn and a known pid/epoch.
        let p = params(Some("t"), 0x0102_0304_0506_0708, 0x0A0B, true, true);
        #[rustfmt::skip]
        let expected: &[u8] = &[
            0x02, b't',                                 // TransactionalId "t" (length 1 + 1)
            0x00, 0x00, 0xEA, 0x60,                     // TransactionTimeoutMs 60000
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // ProducerId
            0x0A, 0x0B,                                 // ProducerEpoch
            0x01,                                       // Enable2Pc: true
            0x01,                                       // KeepPreparedTxn: true
            0x00,                                       // no tagged fields
        ];
        assert_eq!(&encode_request(&p, 6).unwrap()[..], expected);

        // A null transactional id is a single 0 byte.
        let p = params(None, -1, -1, false, false);
        assert_eq!(encode_request(&p, 6).unwrap()[0], 0x00);
    }

    #[test]
    fn v6_long_id_uses_a_two_byte_varint() {
        let tid = "x".repeat(200);
        let body = encode_request(&params(Some(&tid), -1, -1, false, false), 6).unwrap();
        // 201 = 0b1_1001001 → 0xC9 (low 7 bits + continuation), 0x01
        assert_eq!(&body[..2], &[0xC9, 0x01]);
        assert_eq!(body.len(), 2 + 200 + 4 + 8 + 2 + 2 + 1);
    }

    #[test]
    fn v6_without_flags_is_v5_plus_two_zero_bytes() {
        for p in [
            params(Some("sink-0-1"), -1, -1, false, false),
            params(Some("sink-3-17"), 4242, 7, false, false),
            params(None, -1, -1, false, false),
            params(Some(&"y".repeat(300)), 1, 0, false, false),
        ] {
            let v5 = encode_request(&p, 5).unwrap();
            let v6 = encode_request(&p, 6).unwrap();
            // The crate's v5 ends with the tagged-field count (0, one byte).
            assert_eq!(v5[v5.len() - 1], 0);
            let mut expected = v5[..v5.len() - 1].to_vec();
            expected.extend_from_slice(&[0, 0]); // Enable2Pc, KeepPreparedTxn
            expected.push(0); // tagged-field count
            assert_eq!(&v6[..], &expected[..], "{p:?}");
        }
    }

    #[test]
    fn flags_below_v6_are_rejected() {
        for v in 0..6 {
            let err = encode_request(&params(Some("t"), -1, -1, true, false), v).unwrap_err();
            assert!(err.to_string().contains("enable2Pc"), "{err}");
            let err = encode_request(&params(Some("t"), -1, -1, false, true), v).unwrap_err();
            assert!(err.to_string().contains("keepPreparedTxn"), "{err}");
        }
        assert!(encode_request(&params(Some("t"), -1, -1, false, false), 7).is_err());
        assert!(encode_request(&params(Some("t"), -1, -1, false, false), -1).is_err());
        // pid/epoch exist only from v3 (the crate enforces it, as Java does).
        assert!(encode_request(&params(Some("t"), 5, 0, false, false), 2).is_err());
        assert!(encode_request(&params(Some("t"), -1, -1, false, false), 2).is_ok());
    }

    #[test]
    fn older_versions_go_through_the_crate() {
        let v0 = encode_request(&params(Some("ab"), -1, -1, false, false), 0).unwrap();
        // int16 length 2, "ab", int32 60000: no tagged fields before v2
        assert_eq!(&v0[..], &[0, 2, b'a', b'b', 0, 0, 0xEA, 0x60]);
        let v4 = encode_request(&params(Some("ab"), 9, 1, false, false), 4).unwrap();
        assert_eq!(&v4[..], &[3, b'a', b'b', 0, 0, 0xEA, 0x60, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1, 0]);
    }

    #[test]
    fn v6_response_round_trips_ongoing_txn_fields() {
        let resp = InitProducerIdResponse::default()
            .with_error_code(0)
            .with_producer_id(ProducerId(1001))
            .with_producer_epoch(3)
            .with_ongoing_txn_producer_id(ProducerId(1000))
            .with_ongoing_txn_producer_epoch(2);
        let mut buf = BytesMut::new();
        resp.encode(&mut buf, 6).unwrap();
        let decoded = decode_response(buf.freeze(), 6).unwrap();
        assert_eq!(decoded, resp);
        assert_eq!(decoded.ongoing_txn_producer_id, ProducerId(1000));
        assert_eq!(decoded.ongoing_txn_producer_epoch, 2);
    }

    #[test]
    fn v6_response_from_literal_bytes() {
        // Field order per InitProducerIdResponse.json (4.4.0).
        #[rustfmt::skip]
        let body: &[u8] = &[
            0, 0, 0, 0,             // ThrottleTimeMs
            0, 35,                  // ErrorCode UNSUPPORTED_VERSION
            0, 0, 0, 0, 0, 0, 0x03, 0xE8, // ProducerId 1000
            0, 4,                   // ProducerEpoch 4
            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, // OngoingTxnProducerId -1
            0xFF, 0xFF,             // OngoingTxnProducerEpoch -1
            0,                      // tagged fields
        ];
        let r = decode_response(Bytes::from_static(body), 6).unwrap();
        assert_eq!(r.error_code, 35);
        assert_eq!(r.producer_id, ProducerId(1000));
        assert_eq!(r.producer_epoch, 4);
        assert_eq!(r.ongoing_txn_producer_id, ProducerId(-1));
        assert_eq!(r.ongoing_txn_producer_epoch, -1);
        // The same bytes minus the v6 fields decode as v5.
        let mut v5 = body[..16].to_vec();
        v5.push(0);
        let r5 = decode_response(Bytes::from(v5), 5).unwrap();
        assert_eq!(r5.producer_epoch, 4);
        assert_eq!(r5.ongoing_txn_producer_id, ProducerId(-1));
    }
}
