//! Produce (API 0): record batches for partitions, sent to their leader.
//!
//! On the wire: the transactional id (v3+), `acks`, a timeout, and per topic
//! and partition one record batch (magic 2, written by the producer's
//! accumulator), answered per partition with an error code, the base offset
//! of the batch, the log start offset and, from v8, record errors. From v12
//! (Transactions V2, KIP-890) a transactional Produce adds its partition to
//! the transaction implicitly. This is the exchange of Java's `Sender`
//! (`sendProduceRequest` / `handleProduceResponse`); deciding what each
//! partition's error means is the producer's (`Sender.completeBatch`), not
//! this module's.
//!
//! A reply is matched to the request by partition, and a reply that names a
//! partition the request did not, or one partition twice, is an error
//! ([`WireError::ReplyMismatch`]): its answers cannot be trusted for any
//! batch, and acknowledging a batch that was never sent would corrupt the
//! producer's sequence numbers.
use std::collections::BTreeSet;

use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse};

use super::client::{check_answered, decode_body, encode_body, Client};
use super::error::WireError;

impl Client {
    /// One Produce exchange with the broker `node_id` (a partition leader),
    /// at the highest version in `min_version..=max_version` the broker also
    /// supports. Not retried: per-partition error codes come back in the
    /// reply for the caller to classify (Java's `Sender.completeBatch` decides
    /// per batch), and a transport error drops the connection and is returned.
    /// Returns the reply and the version that was sent.
    pub async fn produce(
        &mut self,
        node_id: i32,
        request: &ProduceRequest,
        min_version: i16,
        max_version: i16,
    ) -> Result<(ProduceResponse, i16), WireError> {
        self.ensure_known(node_id).await?;
        let version = self.conn(node_id).await?.versions.negotiate(ApiKey::Produce, min_version, max_version)?;
        let body = encode_body(request, version, "Produce")?;
        let reply = self.send_raw_to(node_id, ApiKey::Produce, version, &body).await?;
        let response = decode_body::<ProduceResponse>(reply, version, "Produce")?;
        check_reply(request, &response)?;
        Ok((response, version))
    }
}

/// Checks that `response` answers only partitions `request` named, each at
/// most once (Java's `Sender.handleProduceResponse` looks each answered
/// partition up among the batches it sent). A topic is named by name up to
/// v12 and by id from v13 (KIP-516). Partitions the reply leaves out are not
/// an error here: the producer resends their batches.
fn check_reply(request: &ProduceRequest, response: &ProduceResponse) -> Result<(), WireError> {
    let asked: BTreeSet<_> = request
        .topic_data
        .iter()
        .flat_map(|t| t.partition_data.iter().map(move |p| (t.name.0.to_string(), t.topic_id, p.index)))
        .collect();
    let answered = response
        .responses
        .iter()
        .flat_map(|t| t.partition_responses.iter().map(move |p| (t.name.0.to_string(), t.topic_id, p.index)));
    check_answered("Produce", &asked, answered, |(name, id, index)| {
        if name.is_empty() && !id.is_nil() {
            format!("topic id {id} partition {index}")
        } else {
            format!("{name}-{index}")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::protocol::{Encodable, StrBytes};

    fn request(parts: &[(&'static str, i32)]) -> ProduceRequest {
        let mut topics: Vec<TopicProduceData> = Vec::new();
        for &(name, index) in parts {
            let data = PartitionProduceData::default().with_index(index).with_records(Some(Bytes::new()));
            match topics.iter_mut().find(|t| t.name.0.as_str() == name) {
                Some(t) => t.partition_data.push(data),
                None => topics.push(
                    TopicProduceData::default()
                        .with_name(TopicName(StrBytes::from_static_str(name)))
                        .with_partition_data(vec![data]),
                ),
            }
        }
        ProduceRequest::default().with_acks(-1).with_topic_data(topics)
    }

    /// A reply as a broker would encode it, decoded back the way the client
    /// decodes it.
    fn reply(parts: &[(&'static str, i32)]) -> ProduceResponse {
        let responses = parts
            .iter()
            .map(|&(name, index)| {
                TopicProduceResponse::default()
                    .with_name(TopicName(StrBytes::from_static_str(name)))
                    .with_partition_responses(vec![PartitionProduceResponse::default()
                        .with_index(index)
                        .with_base_offset(7)])
            })
            .collect();
        let mut buf = BytesMut::new();
        ProduceResponse::default().with_responses(responses).encode(&mut buf, 11).unwrap();
        decode_body(buf.freeze(), 11, "Produce").unwrap()
    }

    #[test]
    fn a_reply_for_the_partitions_asked_is_accepted() {
        let req = request(&[("out", 0), ("out", 2), ("other", 1)]);
        check_reply(&req, &reply(&[("out", 2), ("other", 1), ("out", 0)])).unwrap();
        // A partition left out is resent by the producer, not refused here.
        check_reply(&req, &reply(&[("out", 0)])).unwrap();
    }

    #[test]
    fn a_partition_not_asked_for_is_an_error_not_a_panic() {
        let req = request(&[("out", 0), ("out", 1)]);
        let err = check_reply(&req, &reply(&[("out", 0), ("out", 7)])).unwrap_err();
        assert!(matches!(err, WireError::ReplyMismatch { ref api, .. } if api == "Produce"), "{err}");
        assert_eq!(
            err.to_string(),
            "Produce reply does not match the request: it answers out-7, which the request did not name"
        );
        let err = check_reply(&req, &reply(&[("elsewhere", 0)])).unwrap_err();
        assert!(err.to_string().contains("elsewhere-0"), "{err}");
        assert!(!err.is_connection_error(), "the stream is in step; the reply is wrong");
    }

    #[test]
    fn a_partition_answered_twice_is_an_error() {
        let req = request(&[("out", 0), ("out", 1)]);
        let err = check_reply(&req, &reply(&[("out", 1), ("out", 0), ("out", 1)])).unwrap_err();
        assert!(err.to_string().ends_with("it answers out-1, a second time"), "{err}");
    }

    #[test]
    fn topics_by_id_are_matched_by_id() {
        let mut req = request(&[("", 3)]);
        req.topic_data[0].topic_id = "00000000-0000-0000-0000-000000001234".parse().unwrap();
        let mut ok = reply(&[("", 3)]);
        ok.responses[0].topic_id = req.topic_data[0].topic_id;
        check_reply(&req, &ok).unwrap();
        ok.responses[0].topic_id = "00000000-0000-0000-0000-000000000099".parse().unwrap();
        let err = check_reply(&req, &ok).unwrap_err();
        assert!(err.to_string().contains("topic id"), "{err}");
    }
}
