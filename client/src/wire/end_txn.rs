//! EndTxn (API 26): committing or aborting the ongoing transaction.
//!
//! On the wire: transactional id, producer id and epoch, and `Committed`,
//! answered with an error code and, from v5 (Transactions V2, KIP-890), the
//! producer id and epoch the coordinator bumped to. The coordinator moves the
//! transaction to PrepareCommit/PrepareAbort, answers, and then writes the
//! markers to the partitions; a commit is durable once answered. This is the
//! Java client's `TransactionManager.EndTxnHandler` (and
//! `EndTxnRequest.Builder` for the version); Flink's `KafkaCommitter` sends
//! it from a recovered producer whose id and epoch it injected.
use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, EndTxnRequest, EndTxnResponse, ProducerId, TransactionalId};
use tracing::debug;

use super::api_versions::ApiVersionsInfo;
use super::client::{decode_body, encode_body, str_bytes, Call, Client, Target};
use super::error::{coordinator_retry, KafkaCode, WireError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTxnOutcome {
    pub version: i16,
    /// v5 (Transactions V2): the bumped pair from the reply. v≤4: the pair
    /// that was sent, which the client keeps (Java's `EndTxnHandler`).
    pub producer_id: i64,
    pub producer_epoch: i16,
}

impl Client {
    /// Commits (`commit`) or aborts the transaction. Retried per
    /// [`coordinator_retry`].
    ///
    /// Version: `Some(v)` sends exactly `v` if the broker advertises it.
    /// `None` follows Java's `EndTxnRequest.Builder`: the highest common
    /// version, capped at v4 unless the broker's finalized
    /// `transaction.version` is ≥ 2 (v5 means Transactions V2 to the broker,
    /// which then bumps the epoch). Legacy-mode callers that mimic Flink's
    /// recovery producer pass `Some(4)` or lower explicitly.
    pub async fn end_txn(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        version: Option<i16>,
    ) -> Result<EndTxnOutcome, WireError> {
        let req = EndTxnRequest::default()
            .with_transactional_id(TransactionalId(str_bytes(transactional_id)))
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(producer_epoch)
            .with_committed(commit);
        let choose = |info: &ApiVersionsInfo| match version {
            Some(v) => info.negotiate(ApiKey::EndTxn, v, v),
            None => {
                let max = if info.transaction_version() >= 2 { 5 } else { 4 };
                info.negotiate(ApiKey::EndTxn, 0, max)
            }
        };
        let encode = |v: i16| encode_body(&req, v, "EndTxn");
        let decode = |b: Bytes, v: i16| decode_body::<EndTxnResponse>(b, v, "EndTxn");
        let status = |r: &EndTxnResponse| (KafkaCode(r.error_code), None);
        let reply = self
            .call(&Call {
                api: "EndTxn",
                api_key: ApiKey::EndTxn,
                target: Target::Coordinator(transactional_id),
                choose_version: &choose,
                encode: &encode,
                decode: &decode,
                status: &status,
                classify: coordinator_retry,
                once: false,
            })
            .await?;
        let outcome = if reply.version >= 5 {
            EndTxnOutcome {
                version: reply.version,
                producer_id: *reply.body.producer_id,
                producer_epoch: reply.body.producer_epoch,
            }
        } else {
            EndTxnOutcome { version: reply.version, producer_id, producer_epoch }
        };
        debug!(
            transactional_id,
            commit,
            version = outcome.version,
            producer_id = outcome.producer_id,
            producer_epoch = outcome.producer_epoch,
            "EndTxn"
        );
        Ok(outcome)
    }
}
