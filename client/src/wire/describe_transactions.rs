//! DescribeTransactions (API 65, KIP-664): the coordinator's view of
//! transactional ids.
//!
//! On the wire: a list of transactional ids, answered per id with an error
//! code, the state (Empty, Ongoing, PrepareCommit, PrepareAbort,
//! CompleteCommit, CompleteAbort, Dead, PrepareEpochFence), the timeout, the
//! start time of the current transaction, producer id and epoch, and the
//! partitions in it. Each id must be asked of its own coordinator, so ids are
//! grouped by coordinator as Java's admin `DescribeTransactionsHandler` does.
//! The rig uses it to confirm what a fault did (a transaction the broker
//! aborted on timeout, one it committed though the client never heard back).
use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, DescribeTransactionsRequest, DescribeTransactionsResponse, TransactionalId};
use tracing::warn;

use super::api_versions::ApiVersionsInfo;
use super::client::{decode_body, encode_body, str_bytes, txn_key, Call, Client, Retrier, Target};
use super::error::{coordinator_retry, CoordinatorAction, KafkaCode, WireError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnDescription {
    pub transactional_id: String,
    /// e.g. TRANSACTIONAL_ID_NOT_FOUND; the other fields are then empty.
    pub error: Option<KafkaCode>,
    /// Kafka's state name: Empty, Ongoing, PrepareCommit, PrepareAbort,
    /// CompleteCommit, CompleteAbort, Dead, PrepareEpochFence.
    pub state: String,
    pub timeout_ms: i32,
    /// -1 when no transaction is in progress.
    pub start_time_ms: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub partitions: Vec<(String, i32)>,
    /// Node id of the coordinator that answered.
    pub coordinator: i32,
}

impl Client {
    /// Describes transactional ids, each at its coordinator (Java's admin
    /// `DescribeTransactionsHandler`): NOT_COORDINATOR and
    /// COORDINATOR_NOT_AVAILABLE re-discover the coordinator,
    /// COORDINATOR_LOAD_IN_PROGRESS retries, other per-id errors (e.g.
    /// TRANSACTIONAL_ID_NOT_FOUND) are reported in that id's
    /// [`TxnDescription::error`]. Results come in the order of `ids`.
    pub async fn describe_transactions(&mut self, ids: &[String]) -> Result<Vec<TxnDescription>, WireError> {
        let mut done: HashMap<String, TxnDescription> = HashMap::new();
        let mut pending: Vec<String> = ids.to_vec();
        pending.sort();
        pending.dedup();
        let mut retry = Retrier::fixed("DescribeTransactions", &self.config);
        while !pending.is_empty() {
            // Group the pending ids by coordinator.
            let mut groups: BTreeMap<i32, Vec<String>> = BTreeMap::new();
            for tid in &pending {
                let node = self.coordinator_for(tid).await?.node_id;
                groups.entry(node).or_default().push(tid.clone());
            }
            let mut last_err = None;
            for (node, tids) in groups {
                let req = DescribeTransactionsRequest::default()
                    .with_transactional_ids(tids.iter().map(|t| TransactionalId(str_bytes(t))).collect());
                let choose = |info: &ApiVersionsInfo| info.negotiate(ApiKey::DescribeTransactions, 0, 0);
                let encode = |v: i16| encode_body(&req, v, "DescribeTransactions");
                let decode =
                    |b: Bytes, v: i16| decode_body::<DescribeTransactionsResponse>(b, v, "DescribeTransactions");
                let status = |_: &DescribeTransactionsResponse| (KafkaCode::NONE, None);
                let reply = self
                    .call(&Call {
                        api: "DescribeTransactions",
                        api_key: ApiKey::DescribeTransactions,
                        target: Target::Node(node),
                        choose_version: &choose,
                        encode: &encode,
                        decode: &decode,
                        status: &status,
                        classify: coordinator_retry,
                        once: true,
                    })
                    .await;
                let reply = match reply {
                    Ok(r) => r,
                    Err(e) if e.is_connection_error() || matches!(e, WireError::NoBrokerReachable { .. }) => {
                        for tid in &tids {
                            self.coordinators.remove(&txn_key(tid));
                        }
                        self.after_transport_error(Some(node), None).await;
                        last_err = Some(e);
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                for s in reply.body.transaction_states {
                    let tid = s.transactional_id.0.to_string();
                    if !tids.contains(&tid) {
                        warn!(transactional_id = tid, "DescribeTransactions answered an id that was not asked");
                        continue;
                    }
                    let code = KafkaCode(s.error_code);
                    match coordinator_retry(code) {
                        _ if code.is_ok() || code == KafkaCode::TRANSACTIONAL_ID_NOT_FOUND => {}
                        CoordinatorAction::Fail => {}
                        action => {
                            if action == CoordinatorAction::RediscoverAndRetry {
                                self.coordinators.remove(&txn_key(&tid));
                            }
                            last_err = Some(WireError::kafka("DescribeTransactions", code, Some(tid)));
                            continue;
                        }
                    }
                    let partitions = s
                        .topics
                        .iter()
                        .flat_map(|t| t.partitions.iter().map(move |p| (t.topic.0.to_string(), *p)))
                        .collect();
                    done.insert(
                        tid.clone(),
                        TxnDescription {
                            transactional_id: tid,
                            error: KafkaCode::from_code(s.error_code),
                            state: s.transaction_state.to_string(),
                            timeout_ms: s.transaction_timeout_ms,
                            start_time_ms: s.transaction_start_time_ms,
                            producer_id: *s.producer_id,
                            producer_epoch: s.producer_epoch,
                            partitions,
                            coordinator: reply.node,
                        },
                    );
                }
            }
            pending.retain(|t| !done.contains_key(t));
            if !pending.is_empty() {
                let err = last_err
                    .unwrap_or_else(|| WireError::Codec(format!("DescribeTransactions reply lacks {pending:?}")));
                retry.backoff(err).await?;
            }
        }
        Ok(ids.iter().filter_map(|t| done.get(t).cloned()).collect())
    }
}
