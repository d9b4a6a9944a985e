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
//!
//! Share groups (KIP-932) use two more key types: a group id (type 0) finds
//! the group coordinator, which answers ShareGroupHeartbeat,
//! ShareGroupDescribe and DescribeShareGroupOffsets, and
//! `"groupId:topicId:partition"` (type 2, v6+) finds the share coordinator
//! that keeps the share-partition's state (`__share_group_state`). The cache
//! is keyed by (type, key); the rules above are the same for every type
//! (Java's `CoordinatorRequestManager` for groups).
use kafka_protocol::messages::{ApiKey, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::Message;
use tracing::debug;

use super::client::{decode_body, encode_body, str_bytes, BrokerInfo, Client, Retrier};
use super::error::{coordinator_retry, CoordinatorAction, KafkaCode, WireError};

// The key types live with the coordinator cache they key (client.rs).
pub use super::client::{KEY_TYPE_GROUP, KEY_TYPE_SHARE, KEY_TYPE_TRANSACTION};

/// The key of a share-partition for [`KEY_TYPE_SHARE`], as
/// `FindCoordinatorRequest.json` (v6) spells it; the topic id is Kafka's
/// base64 form (`Uuid.toString`).
pub fn share_coordinator_key(group_id: &str, topic_id: &str, partition: i32) -> String {
    format!("{group_id}:{topic_id}:{partition}")
}

/// The lowest FindCoordinator version that knows a key type: v1 added key
/// types (v0 means a group), v6 the share type.
fn min_version_for(key_type: i8) -> i16 {
    if key_type == KEY_TYPE_SHARE {
        6
    } else {
        1
    }
}

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
        self.find_coordinator_of(KEY_TYPE_TRANSACTION, transactional_id).await
    }

    /// [`find_coordinator`](Self::find_coordinator) for any key type: a
    /// group's coordinator ([`KEY_TYPE_GROUP`]), which answers the share-group
    /// heartbeats and descriptions, or a share-partition's share coordinator
    /// ([`KEY_TYPE_SHARE`]).
    pub async fn find_coordinator_of(&mut self, key_type: i8, key: &str) -> Result<BrokerInfo, WireError> {
        self.coordinators.remove(&(key_type, key.to_string()));
        self.coordinator_of(key_type, key).await
    }

    /// The transaction coordinator from the cache, or looked up when unknown.
    pub(super) async fn coordinator_for(&mut self, transactional_id: &str) -> Result<BrokerInfo, WireError> {
        self.coordinator_of(KEY_TYPE_TRANSACTION, transactional_id).await
    }

    /// The coordinator of `key` from the cache, or looked up when unknown.
    pub(super) async fn coordinator_of(&mut self, key_type: i8, key: &str) -> Result<BrokerInfo, WireError> {
        let cache_key = (key_type, key.to_string());
        if let Some(node) = self.coordinators.get(&cache_key).copied() {
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
                    min_version_for(key_type),
                    <FindCoordinatorRequest as Message>::VERSIONS.max,
                )?;
                let req = if version >= 4 {
                    FindCoordinatorRequest::default()
                        .with_key_type(key_type)
                        .with_coordinator_keys(vec![str_bytes(key)])
                } else {
                    FindCoordinatorRequest::default().with_key_type(key_type).with_key(str_bytes(key))
                };
                let body = encode_body(&req, version, "FindCoordinator")?;
                let reply = self.send_raw_to(node, ApiKey::FindCoordinator, version, &body).await?;
                let resp: FindCoordinatorResponse = decode_body(reply, version, "FindCoordinator")?;
                let (code, message, coordinator) = if version >= 4 {
                    let c =
                        resp.coordinators.iter().find(|c| c.key.as_str() == key).ok_or_else(|| {
                            WireError::Codec(format!("FindCoordinator reply has no entry for {key:?}"))
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
                    debug!(key_type, key, node_id = coordinator.node_id, "coordinator found");
                    // The coordinator is a broker; remember its address even
                    // if our metadata is older than it.
                    self.addrs.entry(coordinator.node_id).or_insert_with(|| coordinator.clone());
                    self.coordinators.insert(cache_key, coordinator.node_id);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_keys_need_v6() {
        assert_eq!(min_version_for(KEY_TYPE_SHARE), 6);
        assert_eq!(min_version_for(KEY_TYPE_GROUP), 1);
        assert_eq!(min_version_for(KEY_TYPE_TRANSACTION), 1);
        assert_eq!(share_coordinator_key("g", "AAAAAAAAAAAAAAAAAAAAAQ", 3), "g:AAAAAAAAAAAAAAAAAAAAAQ:3");
    }

    #[test]
    fn a_share_key_encodes_as_v6_requires() {
        let req = FindCoordinatorRequest::default()
            .with_key_type(KEY_TYPE_SHARE)
            .with_coordinator_keys(vec![str_bytes("g:t:0")]);
        let body = encode_body(&req, 6, "FindCoordinator").unwrap();
        // KeyType int8 2, CoordinatorKeys compact array of 1 (varint 2),
        // "g:t:0" (varint 6 + 5 bytes), no tagged fields.
        assert_eq!(&body[..], &[2, 2, 6, b'g', b':', b't', b':', b'0', 0]);
    }
}
