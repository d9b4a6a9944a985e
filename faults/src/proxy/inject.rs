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
/// `request_body`) with `code`.
pub fn error_response(api_key: i16, version: i16, request_body: &Bytes, code: i16) -> Result<BytesMut, String> {
    let key = api(api_key)?;
    let mut req = request_body.clone();
    let decode_err = |e: anyhow::Error| format!("decoding the {key:?} v{version} request: {e}");
    match key {
        ApiKey::EndTxn => {
            let mut r = EndTxnResponse::default();
            r.error_code = code;
            encode(&r, version)
        }
        ApiKey::InitProducerId => {
            let mut r = InitProducerIdResponse::default();
            r.error_code = code;
            r.producer_epoch = -1;
            encode(&r, version)
        }
        ApiKey::AddOffsetsToTxn => {
            let mut r = AddOffsetsToTxnResponse::default();
            r.error_code = code;
            encode(&r, version)
        }
        ApiKey::AddPartitionsToTxn => {
            let mut r = AddPartitionsToTxnResponse::default();
            if version >= 4 {
                // v4+ (batched, broker-to-coordinator) has a top-level error
                // that fails every transaction in the request.
                r.error_code = code;
            } else {
                let q = AddPartitionsToTxnRequest::decode(&mut req, version).map_err(decode_err)?;
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
            }
            encode(&r, version)
        }
        ApiKey::TxnOffsetCommit => {
            let q = TxnOffsetCommitRequest::decode(&mut req, version).map_err(decode_err)?;
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
            encode(&r, version)
        }
        ApiKey::FindCoordinator => {
            let q = FindCoordinatorRequest::decode(&mut req, version).map_err(decode_err)?;
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
            encode(&r, version)
        }
        ApiKey::Produce => {
            let q = ProduceRequest::decode(&mut req, version).map_err(decode_err)?;
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
            encode(&r, version)
        }
        other => Err(format!("the proxy cannot answer {other:?} with an error")),
    }
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
