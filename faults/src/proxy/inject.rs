//! Protocol errors the proxy injects: a response it writes itself in place of
//! forwarding a request, or a broker's response with its error codes replaced.
//!
//! The answers follow what a Kafka broker writes for a request it fails as a
//! whole (the `getErrorResponse` of each request class in
//! `org.apache.kafka.common.requests`): the error code at the top level where
//! the version has one, on every partition (or key) the request named where
//! the errors are per partition, and "no id" values (-1) beside it.
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnResponse, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey,
    DescribeTransactionsResponse, EndTxnResponse, FindCoordinatorRequest, FindCoordinatorResponse,
    InitProducerIdResponse, ProduceRequest, ProduceResponse, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

fn encode(body: &impl Encodable, version: i16) -> Result<BytesMut, String> {
    let mut buf = BytesMut::new();
    body.encode(&mut buf, version).map_err(|e| format!("encoding: {e}"))?;
    Ok(buf)
}

fn api(key: i16) -> Result<ApiKey, String> {
    ApiKey::try_from(key).map_err(|_| format!("unknown api key {key}"))
}

/// The body of a response that fails the request (`api_key`, `version`,
/// `request_body`) with `code`: one function per API below, each after its
/// request class's `getErrorResponse`.
pub fn error_response(api_key: i16, version: i16, request_body: &Bytes, code: i16) -> Result<BytesMut, String> {
    let key = api(api_key)?;
    let mut req = request_body.clone();
    let decode_err = |e: anyhow::Error| format!("decoding the {key:?} v{version} request: {e}");
    match key {
        ApiKey::EndTxn => encode(&end_txn_failed(code), version),
        ApiKey::InitProducerId => encode(&init_producer_id_failed(code), version),
        ApiKey::AddOffsetsToTxn => encode(&add_offsets_to_txn_failed(code), version),
        // v4+ (batched, broker-to-coordinator) has a top-level error that
        // fails every transaction in the request.
        ApiKey::AddPartitionsToTxn if version >= 4 => {
            let mut r = AddPartitionsToTxnResponse::default();
            r.error_code = code;
            encode(&r, version)
        }
        ApiKey::AddPartitionsToTxn => {
            let q = AddPartitionsToTxnRequest::decode(&mut req, version).map_err(decode_err)?;
            encode(&add_partitions_to_txn_failed(&q, code), version)
        }
        ApiKey::TxnOffsetCommit => {
            let q = TxnOffsetCommitRequest::decode(&mut req, version).map_err(decode_err)?;
            encode(&txn_offset_commit_failed(&q, code), version)
        }
        ApiKey::FindCoordinator => {
            let q = FindCoordinatorRequest::decode(&mut req, version).map_err(decode_err)?;
            encode(&find_coordinator_failed(&q, version, code), version)
        }
        ApiKey::Produce => {
            let q = ProduceRequest::decode(&mut req, version).map_err(decode_err)?;
            encode(&produce_failed(&q, code), version)
        }
        other => Err(format!("the proxy cannot answer {other:?} with an error")),
    }
}

fn end_txn_failed(code: i16) -> EndTxnResponse {
    let mut r = EndTxnResponse::default();
    r.error_code = code;
    r
}

/// The error, with epoch -1 beside it.
fn init_producer_id_failed(code: i16) -> InitProducerIdResponse {
    let mut r = InitProducerIdResponse::default();
    r.error_code = code;
    r.producer_epoch = -1;
    r
}

fn add_offsets_to_txn_failed(code: i16) -> AddOffsetsToTxnResponse {
    let mut r = AddOffsetsToTxnResponse::default();
    r.error_code = code;
    r
}

/// v3 and below: the error on every partition the request named.
fn add_partitions_to_txn_failed(q: &AddPartitionsToTxnRequest, code: i16) -> AddPartitionsToTxnResponse {
    let mut r = AddPartitionsToTxnResponse::default();
    r.results_by_topic_v3_and_below = q
        .v3_and_below_topics
        .iter()
        .map(|t| {
            let mut tr = AddPartitionsToTxnTopicResult::default();
            tr.name = t.name.clone();
            tr.results_by_partition = t
                .partitions
                .iter()
                .map(|&p| {
                    let mut pr = AddPartitionsToTxnPartitionResult::default();
                    pr.partition_index = p;
                    pr.partition_error_code = code;
                    pr
                })
                .collect();
            tr
        })
        .collect();
    r
}

/// The error on every partition the request named.
fn txn_offset_commit_failed(q: &TxnOffsetCommitRequest, code: i16) -> TxnOffsetCommitResponse {
    let mut r = TxnOffsetCommitResponse::default();
    r.topics = q
        .topics
        .iter()
        .map(|t| {
            let mut tr = TxnOffsetCommitResponseTopic::default();
            tr.name = t.name.clone();
            tr.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut pr = TxnOffsetCommitResponsePartition::default();
                    pr.partition_index = p.partition_index;
                    pr.error_code = code;
                    pr
                })
                .collect();
            tr
        })
        .collect();
    r
}

/// v4+: one coordinator per key, each with the error and no node; below:
/// the error at the top, no node.
fn find_coordinator_failed(q: &FindCoordinatorRequest, version: i16, code: i16) -> FindCoordinatorResponse {
    let mut r = FindCoordinatorResponse::default();
    if version >= 4 {
        r.coordinators = q
            .coordinator_keys
            .iter()
            .map(|k| {
                let mut c = Coordinator::default();
                c.key = k.clone();
                c.node_id = (-1).into();
                c.host = StrBytes::from_static_str("");
                c.port = -1;
                c.error_code = code;
                c
            })
            .collect();
    } else {
        r.error_code = code;
        r.node_id = (-1).into();
        r.port = -1;
    }
    r
}

/// The error on every partition the request named, with no offset and no append time.
fn produce_failed(q: &ProduceRequest, code: i16) -> ProduceResponse {
    let mut r = ProduceResponse::default();
    r.responses = q
        .topic_data
        .iter()
        .map(|t| {
            let mut tr = TopicProduceResponse::default();
            tr.name = t.name.clone();
            tr.topic_id = t.topic_id;
            tr.partition_responses = t
                .partition_data
                .iter()
                .map(|p| {
                    let mut pr = PartitionProduceResponse::default();
                    pr.index = p.index;
                    pr.error_code = code;
                    pr.base_offset = -1;
                    pr.log_append_time_ms = -1;
                    pr
                })
                .collect();
            tr
        })
        .collect();
    r
}

/// Replaces the error codes of a response body (top level, per partition, per
/// key) with `code`; the rest of the response is kept.
pub fn replace_errors(api_key: i16, version: i16, response_body: &Bytes, code: i16) -> Result<BytesMut, String> {
    let key = api(api_key)?;
    let mut b = response_body.clone();
    let decode_err = |e: anyhow::Error| format!("decoding the {key:?} v{version} response: {e}");
    match key {
        ApiKey::EndTxn => {
            let mut r = EndTxnResponse::decode(&mut b, version).map_err(decode_err)?;
            r.error_code = code;
            encode(&r, version)
        }
        ApiKey::InitProducerId => {
            let mut r = InitProducerIdResponse::decode(&mut b, version).map_err(decode_err)?;
            r.error_code = code;
            encode(&r, version)
        }
        ApiKey::AddOffsetsToTxn => {
            let mut r = AddOffsetsToTxnResponse::decode(&mut b, version).map_err(decode_err)?;
            r.error_code = code;
            encode(&r, version)
        }
        ApiKey::AddPartitionsToTxn => {
            let mut r = AddPartitionsToTxnResponse::decode(&mut b, version).map_err(decode_err)?;
            if version >= 4 {
                r.error_code = code;
            }
            let topics = r
                .results_by_topic_v3_and_below
                .iter_mut()
                .chain(r.results_by_transaction.iter_mut().flat_map(|t| t.topic_results.iter_mut()));
            for t in topics {
                for p in &mut t.results_by_partition {
                    p.partition_error_code = code;
                }
            }
            encode(&r, version)
        }
        ApiKey::TxnOffsetCommit => {
            let mut r = TxnOffsetCommitResponse::decode(&mut b, version).map_err(decode_err)?;
            for p in r.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                p.error_code = code;
            }
            encode(&r, version)
        }
        ApiKey::FindCoordinator => {
            let mut r = FindCoordinatorResponse::decode(&mut b, version).map_err(decode_err)?;
            if version < 4 {
                r.error_code = code;
            }
            for c in &mut r.coordinators {
                c.error_code = code;
            }
            encode(&r, version)
        }
        ApiKey::Produce => {
            let mut r = ProduceResponse::decode(&mut b, version).map_err(decode_err)?;
            for p in r.responses.iter_mut().flat_map(|t| t.partition_responses.iter_mut()) {
                p.error_code = code;
            }
            encode(&r, version)
        }
        ApiKey::DescribeTransactions => {
            let mut r = DescribeTransactionsResponse::decode(&mut b, version).map_err(decode_err)?;
            for s in &mut r.transaction_states {
                s.error_code = code;
            }
            encode(&r, version)
        }
        other => Err(format!("the proxy cannot replace the errors of {other:?} responses")),
    }
}
