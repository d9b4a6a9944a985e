//! FindCoordinator (API 10): which broker is the transaction coordinator of
//! a transactional id.
//!
//! On the wire: a key type (1 = transaction; v0 has none and always means a
//! consumer group) and the key, one per request up to v3, a list of keys from
//! v4 (KIP-699), answered with the coordinator's node id, host and port and an
//! error code, per key from v4. The coordinator is the leader of the
//! `__transaction_state` partition the id hashes to, so it moves when that
//! leader does. This mirrors `TransactionManager.lookupCoordinator` and its
//! `FindCoordinatorHandler`: the answer is cached per transactional id and
//! forgotten on NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or a broken
//! connection to the coordinator; COORDINATOR_NOT_AVAILABLE (e.g.
//! `__transaction_state` not created yet) is retried.
use kafka_protocol::messages::{ApiKey, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::Message;
use tracing::debug;

use super::client::{decode_body, encode_body, str_bytes, BrokerInfo, Client, Retrier};
use super::error::{coordinator_retry, CoordinatorAction, KafkaCode, WireError};

/// FindCoordinator key type of a transactional id.
pub const KEY_TYPE_TRANSACTION: i8 = 1;

impl Client {
    /// The transaction coordinator of `transactional_id` (FindCoordinator
    /// with key type 1). COORDINATOR_NOT_AVAILABLE (e.g. `__transaction_state`
    /// not created yet) and the other retriable codes are retried with
    /// backoff until `retry_deadline`.
    ///
    /// Asks a broker now, ignoring the cache (the answer replaces it): this is
    /// what a caller who wants to know *where the coordinator is at this
    /// moment* needs, e.g. a fault aimed at the coordinator's node. Requests
    /// to the coordinator use the cached answer instead, as Java's
    /// `TransactionManager` does, until it fails.
    pub async fn find_coordinator(&mut self, transactional_id: &str) -> Result<BrokerInfo, WireError> {
        self.coordinators.remove(transactional_id);
        self.coordinator_for(transactional_id).await
    }

    /// The coordinator from the cache, or looked up when unknown.
    pub(super) async fn coordinator_for(&mut self, transactional_id: &str) -> Result<BrokerInfo, WireError> {
        if let Some(node) = self.coordinators.get(transactional_id).copied() {
            if let Some(b) = self.addrs.get(&node) {
                return Ok(b.clone());
            }
        }
        let mut retry = Retrier::fixed("FindCoordinator", &self.config);
        loop {
            let mut node_used = None;
            let attempt = async {
                let node = self.any_node().await?;
                node_used = Some(node);
                // v0 has no key type (group only); v4+ is the batched form.
                let version = self.conn(node).await?.versions.negotiate(
                    ApiKey::FindCoordinator,
                    1,
                    <FindCoordinatorRequest as Message>::VERSIONS.max,
                )?;
                let req = if version >= 4 {
                    FindCoordinatorRequest::default()
                        .with_key_type(KEY_TYPE_TRANSACTION)
                        .with_coordinator_keys(vec![str_bytes(transactional_id)])
                } else {
                    FindCoordinatorRequest::default()
                        .with_key_type(KEY_TYPE_TRANSACTION)
                        .with_key(str_bytes(transactional_id))
                };
                let body = encode_body(&req, version, "FindCoordinator")?;
                let reply = self.send_raw_to(node, ApiKey::FindCoordinator, version, &body).await?;
                let resp: FindCoordinatorResponse = decode_body(reply, version, "FindCoordinator")?;
                let (code, message, coordinator) = if version >= 4 {
                    let c = resp.coordinators.iter().find(|c| c.key.as_str() == transactional_id).ok_or_else(|| {
                        WireError::Codec(format!("FindCoordinator reply has no entry for {transactional_id:?}"))
                    })?;
                    (
                        c.error_code,
                        c.error_message.as_ref().map(|m| m.to_string()),
                        BrokerInfo { node_id: *c.node_id, host: c.host.to_string(), port: c.port },
                    )
                } else {
                    (
                        resp.error_code,
                        resp.error_message.as_ref().map(|m| m.to_string()),
                        BrokerInfo { node_id: *resp.node_id, host: resp.host.to_string(), port: resp.port },
                    )
                };
                Ok::<_, WireError>((KafkaCode(code), message, coordinator))
            }
            .await;
            let err = match attempt {
                Ok((code, _, coordinator)) if code.is_ok() => {
                    debug!(transactional_id, node_id = coordinator.node_id, "coordinator found");
                    // The coordinator is a broker; remember its address even
                    // if our metadata is older than it.
                    self.addrs.entry(coordinator.node_id).or_insert_with(|| coordinator.clone());
                    self.coordinators.insert(transactional_id.to_string(), coordinator.node_id);
                    return Ok(coordinator);
                }
                Ok((code, message, _)) => {
                    let err = WireError::kafka("FindCoordinator", code, message);
                    if coordinator_retry(code) == CoordinatorAction::Fail {
                        return Err(err);
                    }
                    err
                }
                Err(e) if e.is_connection_error() || matches!(e, WireError::NoBrokerReachable { .. }) => {
                    self.after_transport_error(node_used, None).await;
                    e
                }
                Err(e) => return Err(e),
            };
            retry.backoff(err).await?;
        }
    }
}
