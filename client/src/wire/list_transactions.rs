//! ListTransactions (API 66, KIP-664): the transactions a broker coordinates.
//!
//! On the wire: optional filters by state and by producer id, answered with
//! the transactional id, producer id and state of every transaction whose
//! `__transaction_state` partition the broker leads, and the state filters it
//! did not know. A whole-cluster list is the union of every broker's answer:
//! Java's admin `ListTransactionsHandler` with its all-brokers lookup
//! strategy. Flink's POOLING transactional-id strategy finds lingering
//! transactions this way.
use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ListTransactionsRequest, ListTransactionsResponse, ProducerId};
use tracing::warn;

use super::api_versions::ApiVersionsInfo;
use super::client::{broker_retry, decode_body, encode_body, str_bytes, Call, Client, Target};
use super::error::{KafkaCode, WireError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedTxn {
    pub transactional_id: String,
    pub producer_id: i64,
    pub state: String,
    /// Node id of the coordinator that listed it.
    pub broker: i32,
}

impl Client {
    /// Lists transactions at every broker (each is the coordinator of some
    /// `__transaction_state` partitions) and merges the answers, like Java's
    /// admin `ListTransactionsHandler` with its all-brokers strategy.
    /// Filters are passed through (empty = no filter). Each broker's
    /// retriable errors are retried until `retry_deadline`: a broker that
    /// cannot answer fails the call, since a partial list could hide a
    /// lingering transaction.
    pub async fn list_transactions(
        &mut self,
        state_filters: &[String],
        producer_id_filters: &[i64],
    ) -> Result<Vec<ListedTxn>, WireError> {
        self.refresh_brokers().await?;
        let req = ListTransactionsRequest::default()
            .with_state_filters(state_filters.iter().map(|s| str_bytes(s)).collect())
            .with_producer_id_filters(producer_id_filters.iter().map(|p| ProducerId(*p)).collect());
        let mut out = Vec::new();
        for node in self.addrs.keys().copied().collect::<Vec<_>>() {
            let choose = |info: &ApiVersionsInfo| info.negotiate_request::<ListTransactionsRequest>();
            let encode = |v: i16| encode_body(&req, v, "ListTransactions");
            let decode = |b: Bytes, v: i16| decode_body::<ListTransactionsResponse>(b, v, "ListTransactions");
            let status = |r: &ListTransactionsResponse| (KafkaCode(r.error_code), None);
            let reply = self
                .call(&Call {
                    api: "ListTransactions",
                    api_key: ApiKey::ListTransactions,
                    target: Target::Node(node),
                    choose_version: &choose,
                    encode: &encode,
                    decode: &decode,
                    status: &status,
                    classify: broker_retry,
                    once: false,
                })
                .await?;
            if !reply.body.unknown_state_filters.is_empty() {
                warn!(node_id = node, unknown = ?reply.body.unknown_state_filters, "ListTransactions: unknown state filters");
            }
            out.extend(reply.body.transaction_states.into_iter().map(|s| ListedTxn {
                transactional_id: s.transactional_id.0.to_string(),
                producer_id: *s.producer_id,
                state: s.transaction_state.to_string(),
                broker: node,
            }));
        }
        Ok(out)
    }
}
