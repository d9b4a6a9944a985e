//! AddPartitionsToTxn (API 24): registering partitions with the ongoing
//! transaction before producing to them (Transactions V1).
//!
//! On the wire (v0–v3, the client form): transactional id, producer id and
//! epoch, and the partitions by topic, answered with an error code per
//! partition; v4+ is the batched form brokers send each other
//! (`AddPartitionsToTxnManager`, verifying a Produce). The coordinator writes
//! the partitions to the transaction's metadata, which is what lets it send
//! markers to them at EndTxn. This mirrors the Java client's
//! `TransactionManager.AddPartitionsToTxnHandler`, including its reading of
//! OPERATION_NOT_ATTEMPTED (a partition skipped because another failed).
//! Under Transactions V2 the partition is added by Produce v12+ instead.
//!
//! A reply that answers a partition the request did not name, or one twice,
//! is refused ([`WireError::ReplyMismatch`]) rather than read: an error code
//! on a partition never asked for would otherwise decide the outcome.
use std::collections::BTreeSet;

use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, ProducerId, TopicName, TransactionalId,
};

use super::api_versions::ApiVersionsInfo;
use super::client::{check_answered, decode_body, encode_body, str_bytes, Call, Client, Target};
use super::error::{coordinator_retry, CoordinatorAction, KafkaCode, WireError};

impl Client {
    /// Adds partitions to the ongoing transaction, Transactions V1 style
    /// (AddPartitionsToTxn v≤3; v4+ is for brokers only). Retried per
    /// [`coordinator_retry`]; otherwise the first failing partition's code is
    /// returned as [`WireError::Kafka`] whose message lists every partition's
    /// result. OPERATION_NOT_ATTEMPTED (a partition skipped because another
    /// failed) never decides the code.
    pub async fn add_partitions_to_txn(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &[(String, i32)],
    ) -> Result<(), WireError> {
        let mut topics: Vec<AddPartitionsToTxnTopic> = Vec::new();
        for (topic, partition) in partitions {
            match topics.iter_mut().find(|t| t.name.0.as_str() == topic) {
                Some(t) => t.partitions.push(*partition),
                None => topics.push(
                    AddPartitionsToTxnTopic::default()
                        .with_name(TopicName(str_bytes(topic)))
                        .with_partitions(vec![*partition]),
                ),
            }
        }
        let req = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(TransactionalId(str_bytes(transactional_id)))
            .with_v3_and_below_producer_id(ProducerId(producer_id))
            .with_v3_and_below_producer_epoch(producer_epoch)
            .with_v3_and_below_topics(topics);
        let choose = |info: &ApiVersionsInfo| info.negotiate(ApiKey::AddPartitionsToTxn, 0, 3);
        let encode = |v: i16| encode_body(&req, v, "AddPartitionsToTxn");
        let decode = |b: Bytes, v: i16| {
            let r = decode_body::<AddPartitionsToTxnResponse>(b, v, "AddPartitionsToTxn")?;
            check_reply(partitions, &r)?;
            Ok(r)
        };
        let status = |r: &AddPartitionsToTxnResponse| {
            let results: Vec<(String, i32, KafkaCode)> = r
                .results_by_topic_v3_and_below
                .iter()
                .flat_map(|t| {
                    t.results_by_partition
                        .iter()
                        .map(move |p| (t.name.0.to_string(), p.partition_index, KafkaCode(p.partition_error_code)))
                })
                .collect();
            let code = add_partitions_code(results.iter().map(|(_, _, c)| *c));
            let message = (!code.is_ok()).then(|| {
                results.iter().map(|(t, p, c)| format!("{t}-{p}: {}", c.name())).collect::<Vec<_>>().join(", ")
            });
            (code, message)
        };
        self.call(&Call {
            api: "AddPartitionsToTxn",
            api_key: ApiKey::AddPartitionsToTxn,
            target: Target::Coordinator(transactional_id),
            choose_version: &choose,
            encode: &encode,
            decode: &decode,
            status: &status,
            classify: coordinator_retry,
            once: false,
        })
        .await?;
        Ok(())
    }
}

/// Checks that a (v0–v3) reply answers only the partitions asked, each once.
/// A partition left out is not refused, as Java's
/// `AddPartitionsToTxnHandler` does not refuse it either.
fn check_reply(asked: &[(String, i32)], reply: &AddPartitionsToTxnResponse) -> Result<(), WireError> {
    let asked: BTreeSet<(&str, i32)> = asked.iter().map(|(t, p)| (t.as_str(), *p)).collect();
    let answered = reply
        .results_by_topic_v3_and_below
        .iter()
        .flat_map(|t| t.results_by_partition.iter().map(move |p| (t.name.0.as_str(), p.partition_index)));
    check_answered("AddPartitionsToTxn", &asked, answered, |(t, p)| format!("{t}-{p}"))
}

/// The code that decides an AddPartitionsToTxn reply: the first code that
/// calls for re-discovery, else the first retriable one, else the first
/// other error; OPERATION_NOT_ATTEMPTED only when it is all there is.
fn add_partitions_code(codes: impl Iterator<Item = KafkaCode> + Clone) -> KafkaCode {
    let errors = || codes.clone().filter(|c| !c.is_ok());
    let real = || errors().filter(|c| *c != KafkaCode::OPERATION_NOT_ATTEMPTED);
    real()
        .find(|c| coordinator_retry(*c) == CoordinatorAction::RediscoverAndRetry)
        .or_else(|| real().find(|c| coordinator_retry(*c) == CoordinatorAction::Retry))
        .or_else(|| real().next())
        .or_else(|| errors().next())
        .unwrap_or(KafkaCode::NONE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::messages::add_partitions_to_txn_response::{
        AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
    };
    use kafka_protocol::protocol::Encodable;

    /// A v3 reply with one result per (topic, partition), through the codec.
    fn reply(parts: &[(&str, i32, i16)]) -> AddPartitionsToTxnResponse {
        let topics = parts
            .iter()
            .map(|&(t, p, code)| {
                AddPartitionsToTxnTopicResult::default().with_name(TopicName(str_bytes(t))).with_results_by_partition(
                    vec![AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(p)
                        .with_partition_error_code(code)],
                )
            })
            .collect();
        let mut buf = BytesMut::new();
        AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(topics).encode(&mut buf, 3).unwrap();
        decode_body(buf.freeze(), 3, "AddPartitionsToTxn").unwrap()
    }

    #[test]
    fn a_reply_must_answer_only_the_partitions_asked() {
        let asked = vec![("out".to_string(), 0), ("out".to_string(), 1)];
        check_reply(&asked, &reply(&[("out", 1, 0), ("out", 0, 0)])).unwrap();
        check_reply(&asked, &reply(&[("out", 0, 0)])).unwrap();
        // An error on a partition never asked for must not decide the outcome.
        let err = check_reply(&asked, &reply(&[("out", 0, 0), ("out", 1, 0), ("out", 5, 48)])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "AddPartitionsToTxn reply does not match the request: it answers out-5, which the request did not name"
        );
        let err = check_reply(&asked, &reply(&[("out", 0, 0), ("out", 0, 51)])).unwrap_err();
        assert!(err.to_string().ends_with("it answers out-0, a second time"), "{err}");
    }

    #[test]
    fn add_partitions_deciding_code() {
        let c =
            |codes: &[i16]| add_partitions_code(codes.iter().map(|c| KafkaCode(*c)).collect::<Vec<_>>().into_iter());
        assert_eq!(c(&[0, 0]), KafkaCode::NONE);
        assert_eq!(c(&[55, 48, 55]), KafkaCode::INVALID_TXN_STATE);
        assert_eq!(c(&[48, 51]), KafkaCode::CONCURRENT_TRANSACTIONS);
        assert_eq!(c(&[51, 16]), KafkaCode::NOT_COORDINATOR);
        assert_eq!(c(&[55, 55]), KafkaCode::OPERATION_NOT_ATTEMPTED);
    }
}
