//! A small cluster-aware client for the transaction RPCs: connections, the
//! metadata cache, the retry loop and the request counters. Each RPC is a
//! file of its own beside this one (`init_producer_id.rs`, `end_txn.rs`, …),
//! with its meaning on the wire and the Java class it mirrors.
//!
//! What it does, and where the behaviour comes from:
//!
//! * **Bootstrap and metadata** (Java's `NetworkClient` / `Metadata`): try the
//!   bootstrap addresses in turn until one answers ApiVersions and Metadata,
//!   then talk to brokers by node id. One connection per broker, opened
//!   lazily with an ApiVersions exchange (whose result is kept: versions are
//!   negotiated per broker), dropped on any transport error and reopened on
//!   the next use.
//! * **Coordinator discovery** (`TransactionManager.lookupCoordinator`,
//!   [`find_coordinator`](super::find_coordinator)): results are cached per
//!   transactional id and forgotten on NOT_COORDINATOR,
//!   COORDINATOR_NOT_AVAILABLE or a broken connection to the coordinator.
//! * **Retries** (`TransactionManager` + `Sender`): coordinator requests are
//!   retried after a *fixed* `retry_backoff` as classified by
//!   [`coordinator_retry`]; metadata and connection retries back off
//!   exponentially from `retry_backoff` to `retry_backoff_max` (Java's
//!   `ExponentialBackoff`, without its jitter, to keep runs reproducible).
//!   Nothing is retried past `retry_deadline`; then the caller gets
//!   [`WireError::RetriesExhausted`] with the last error inside. Every
//!   retry is logged at debug level with its error code.
//! * **Exact answers**: a non-retriable Kafka error reaches the caller as
//!   [`WireError::Kafka`] with the code the broker sent. The `*_once`
//!   variants send a single attempt and return the code instead of failing,
//!   for probes that must see exactly what the broker answered.
//!
//! Requests are sent one at a time (`&mut self`), which is what the sink
//! modes and probes need: a worker drives one producer.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use tokio::time::Instant;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tracing::{debug, info};

use super::api_versions::{fetch_api_versions, ApiVersionsInfo};
use super::connection::Connection;
use super::error::{coordinator_retry, CoordinatorAction, KafkaCode, WireError};
use super::metadata::fetch_metadata;
use super::sasl::SaslPlain;

// The types of the RPCs' answers, where callers have always found them.
pub use super::describe_configs::RESOURCE_TYPE_BROKER;
pub use super::describe_quorum::QuorumLeader;
pub use super::describe_transactions::TxnDescription;
pub use super::end_txn::EndTxnOutcome;
pub use super::find_coordinator::KEY_TYPE_TRANSACTION;
pub use super::init_producer_id::{InitProducerIdAnswer, InitProducerIdOutcome};
pub use super::list_transactions::ListedTxn;
pub use super::metadata::{BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo};

/// Client settings. Defaults follow the Java producer where one exists.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub client_id: String,
    /// Bound on one request/response exchange, and on connecting
    /// (Java: `request.timeout.ms`, 30 s).
    pub request_timeout: Duration,
    /// Fixed backoff between coordinator-request retries, and the first
    /// step of the exponential backoff (Java: `retry.backoff.ms`, 100 ms).
    pub retry_backoff: Duration,
    /// Cap of the exponential backoff (Java: `retry.backoff.max.ms`, 1 s).
    pub retry_backoff_max: Duration,
    /// Nothing is retried after this much time from the first attempt.
    pub retry_deadline: Duration,
    /// Authenticate every new connection with SASL/PLAIN (a `SASL_PLAINTEXT`
    /// listener); `None`: a PLAINTEXT listener.
    pub sasl: Option<SaslPlain>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            client_id: "sinkhole".to_string(),
            request_timeout: Duration::from_secs(30),
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(1),
            retry_deadline: Duration::from_secs(30),
            sasl: None,
        }
    }
}

/// An open connection and what its broker supports.
#[derive(Debug)]
pub(super) struct BrokerConn {
    pub(super) conn: Connection,
    pub(super) versions: ApiVersionsInfo,
}

/// Where a request goes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Target<'a> {
    Any,
    Node(i32),
    /// The broker Metadata names as controller (brokers forward to the
    /// KRaft controller), else any broker.
    Controller,
    Coordinator(&'a str),
    /// The coordinator of a key of another FindCoordinator key type: a
    /// group's ([`KEY_TYPE_GROUP`](super::find_coordinator::KEY_TYPE_GROUP))
    /// or a share-partition's ([`KEY_TYPE_SHARE`](super::find_coordinator::KEY_TYPE_SHARE)).
    KeyedCoordinator(i8, &'a str),
}

/// One request kind, described for [`Client::call`].
pub(super) struct Call<'a, T> {
    pub(super) api: &'a str,
    pub(super) api_key: ApiKey,
    pub(super) target: Target<'a>,
    pub(super) choose_version: &'a (dyn Fn(&ApiVersionsInfo) -> Result<i16, WireError> + Sync),
    pub(super) encode: &'a (dyn Fn(i16) -> Result<Bytes, WireError> + Sync),
    pub(super) decode: &'a (dyn Fn(Bytes, i16) -> Result<T, WireError> + Sync),
    /// The reply's deciding error code and an optional detail message.
    pub(super) status: &'a (dyn Fn(&T) -> (KafkaCode, Option<String>) + Sync),
    pub(super) classify: fn(KafkaCode) -> CoordinatorAction,
    /// One attempt; the reply is returned whatever its code.
    pub(super) once: bool,
}

pub(super) struct Reply<T> {
    pub(super) body: T,
    pub(super) version: i16,
    pub(super) node: i32,
    pub(super) code: KafkaCode,
}

/// Backoff and deadline bookkeeping for one logical operation.
pub(super) struct Retrier {
    what: String,
    started: Instant,
    deadline: Duration,
    attempts: u32,
    base: Duration,
    max: Duration,
    exponential: bool,
}

impl Retrier {
    /// Fixed backoff, as `TransactionManager` re-enqueues coordinator requests.
    pub(super) fn fixed(what: impl Into<String>, config: &ClientConfig) -> Self {
        Retrier {
            what: what.into(),
            started: Instant::now(),
            deadline: config.retry_deadline,
            attempts: 0,
            base: config.retry_backoff,
            max: config.retry_backoff,
            exponential: false,
        }
    }

    /// Exponential backoff, as `NetworkClient`/`Metadata` back off reconnects.
    pub(super) fn exponential(what: impl Into<String>, config: &ClientConfig) -> Self {
        Retrier {
            exponential: true,
            max: config.retry_backoff_max.max(config.retry_backoff),
            ..Retrier::fixed(what, config)
        }
    }

    fn next_delay(&self) -> Duration {
        if !self.exponential {
            return self.base;
        }
        let shift = self.attempts.saturating_sub(1).min(20);
        self.base.saturating_mul(1u32 << shift).min(self.max)
    }

    /// Records a failed attempt; sleeps before the next one, or gives up
    /// when the next attempt would start after the deadline.
    pub(super) async fn backoff(&mut self, err: WireError) -> Result<(), WireError> {
        self.attempts += 1;
        let delay = self.next_delay();
        if self.started.elapsed() + delay > self.deadline {
            // The caller gets the error and decides how loud it is.
            debug!(what = %self.what, attempts = self.attempts, error = %err, "giving up");
            return Err(WireError::RetriesExhausted {
                what: self.what.clone(),
                attempts: self.attempts,
                last: Box::new(err),
            });
        }
        debug!(
            what = %self.what,
            attempt = self.attempts,
            delay_ms = delay.as_millis() as u64,
            code = err.kafka_code().map(|c| c.to_string()).unwrap_or_default(),
            error = %err,
            "retrying"
        );
        tokio::time::sleep(delay).await;
        Ok(())
    }
}

pub(super) fn encode_body<R: Encodable>(req: &R, version: i16, api: &str) -> Result<Bytes, WireError> {
    let mut buf = BytesMut::new();
    req.encode(&mut buf, version).map_err(|e| WireError::codec(&format!("encoding {api} v{version}"), e))?;
    Ok(buf.freeze())
}

pub(super) fn decode_body<R: Decodable>(mut body: Bytes, version: i16, api: &str) -> Result<R, WireError> {
    R::decode(&mut body, version).map_err(|e| WireError::codec(&format!("decoding {api} v{version} response"), e))
}

/// Checks that a reply answers only what its request named (partitions,
/// ids), each at most once: an answer for anything else is a broker or proxy
/// fault, never an answer to trust, and an error names it
/// ([`WireError::ReplyMismatch`]) where matching it up would otherwise panic
/// or acknowledge what was never sent. `name` renders a key for the error.
pub(super) fn check_answered<K: Ord>(
    api: &str,
    asked: &BTreeSet<K>,
    answered: impl IntoIterator<Item = K>,
    name: impl Fn(&K) -> String,
) -> Result<(), WireError> {
    let mut seen = BTreeSet::new();
    for key in answered {
        let problem = if !asked.contains(&key) {
            "which the request did not name"
        } else if seen.contains(&key) {
            "a second time"
        } else {
            seen.insert(key);
            continue;
        };
        return Err(WireError::ReplyMismatch {
            api: api.to_string(),
            detail: format!("it answers {}, {problem}", name(&key)),
        });
    }
    Ok(())
}

/// The coordinator-cache key of a transactional id.
pub(super) fn txn_key(transactional_id: &str) -> (i8, String) {
    (KEY_TYPE_TRANSACTION, transactional_id.to_string())
}

pub(super) fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Classification for requests to a fixed broker (not a coordinator):
/// the coordinator table, plus the codes the crate marks retriable.
pub(super) fn broker_retry(code: KafkaCode) -> CoordinatorAction {
    match coordinator_retry(code) {
        CoordinatorAction::Fail if code.response_error().is_some_and(|e| e.is_retriable()) => CoordinatorAction::Retry,
        action => action,
    }
}

/// Connects to `addr` and runs ApiVersions on the new connection.
async fn open_addr(config: &ClientConfig, addr: &str) -> Result<BrokerConn, WireError> {
    let mut conn = Connection::connect(addr, &config.client_id, config.request_timeout).await?;
    let versions = fetch_api_versions(&mut conn, config.request_timeout).await?;
    // Java's `SaslClientAuthenticator` order: ApiVersions, then the SASL
    // exchange, before any other request on the connection.
    if let Some(creds) = &config.sasl {
        super::sasl::authenticate(&mut conn, &versions, creds, config.request_timeout).await?;
    }
    Ok(BrokerConn { conn, versions })
}

/// The rig's Kafka client. See the module docs.
#[derive(Debug)]
pub struct Client {
    pub(super) config: ClientConfig,
    bootstrap: Vec<String>,
    /// The last Metadata answer.
    pub(super) metadata: ClusterMetadata,
    /// Node id → advertised address (from the last Metadata).
    pub(super) addrs: BTreeMap<i32, BrokerInfo>,
    pub(super) conns: BTreeMap<i32, BrokerConn>,
    /// (FindCoordinator key type, key) → coordinator node id.
    pub(super) coordinators: HashMap<(i8, String), i32>,
    /// Requests sent and error-code retries since the last [`Client::take_counts`].
    counts: RequestCounts,
}

/// How many requests of each API [`Client`] sent through its retry loop, and
/// how many of them were retried for a Kafka error code (e.g.
/// `AddPartitionsToTxn` → `CONCURRENT_TRANSACTIONS`): what a comparison of
/// registration strategies needs to see, since retries are otherwise silent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// API name → attempts sent.
    pub requests: BTreeMap<String, u64>,
    /// `API/ERROR_NAME` → retries after that error.
    pub retries: BTreeMap<String, u64>,
}

impl RequestCounts {
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty() && self.retries.is_empty()
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: RequestCounts) {
        for (k, v) in other.requests {
            *self.requests.entry(k).or_default() += v;
        }
        for (k, v) in other.retries {
            *self.retries.entry(k).or_default() += v;
        }
    }

    /// Counts one retry of `api` after `code`.
    pub fn retried(&mut self, api: &str, code: KafkaCode) {
        *self.retries.entry(format!("{api}/{}", code.name())).or_default() += 1;
    }
}

impl Client {
    /// Tries the bootstrap addresses in turn until one answers ApiVersions
    /// and Metadata (brokers only; call [`metadata`](Self::metadata) for
    /// topics). Retries with exponential backoff until `retry_deadline`, then
    /// fails with [`WireError::NoBrokerReachable`].
    pub async fn connect(bootstrap: &[String], config: ClientConfig) -> Result<Client, WireError> {
        let mut client = Client {
            config,
            bootstrap: bootstrap.to_vec(),
            metadata: ClusterMetadata { controller_id: -1, ..Default::default() },
            addrs: BTreeMap::new(),
            conns: BTreeMap::new(),
            coordinators: HashMap::new(),
            counts: RequestCounts::default(),
        };
        if client.bootstrap.is_empty() {
            return Err(WireError::NoBrokerReachable { tried: vec![], last: "empty bootstrap list".to_string() });
        }
        let mut retry = Retrier::exponential("bootstrap", &client.config);
        loop {
            match client.bootstrap().await {
                Ok(node) => {
                    info!(
                        node,
                        cluster_id = client.metadata.cluster_id.as_deref().unwrap_or("?"),
                        brokers = client.metadata.brokers.len(),
                        "bootstrapped"
                    );
                    return Ok(client);
                }
                Err(e) if e.is_authentication_error() => return Err(e),
                Err(e) => {
                    if let Err(WireError::RetriesExhausted { last, .. }) = retry.backoff(e).await {
                        return Err(*last);
                    }
                }
            }
        }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Requests and retries counted since the last call (see [`RequestCounts`]).
    pub fn take_counts(&mut self) -> RequestCounts {
        std::mem::take(&mut self.counts)
    }

    pub fn bootstrap_servers(&self) -> &[String] {
        &self.bootstrap
    }

    /// The last Metadata answer (brokers; topics as last asked for).
    pub fn cached_metadata(&self) -> &ClusterMetadata {
        &self.metadata
    }

    /// The cached coordinator of a transactional id, if looked up.
    pub fn cached_coordinator(&self, transactional_id: &str) -> Option<i32> {
        self.coordinators.get(&txn_key(transactional_id)).copied()
    }

    /// Forgets a cached coordinator; the next request looks it up again.
    pub fn forget_coordinator(&mut self, transactional_id: &str) {
        self.coordinators.remove(&txn_key(transactional_id));
    }

    /// Closes the connection to a broker (it is reopened on next use).
    pub fn disconnect(&mut self, node_id: i32) {
        if self.conns.remove(&node_id).is_some() {
            debug!(node_id, "connection closed on request");
        }
    }

    /// The connection to a broker, opened if needed, for probes that send
    /// hand-made requests (e.g. a version the broker does not advertise).
    /// A connection left broken is dropped at the next client call.
    pub async fn connection(&mut self, node_id: i32) -> Result<&mut Connection, WireError> {
        self.ensure_known(node_id).await?;
        Ok(&mut self.conn(node_id).await?.conn)
    }

    // ----- connections ---------------------------------------------------

    /// Tries each bootstrap address once; returns the node id of a broker
    /// with an open connection.
    async fn bootstrap(&mut self) -> Result<i32, WireError> {
        let mut tried = Vec::new();
        let mut last = String::new();
        for addr in self.bootstrap.clone() {
            tried.push(addr.clone());
            match self.bootstrap_one(&addr).await {
                Ok(node) => return Ok(node),
                // Authentication failures are not retried (Java's
                // `SaslAuthenticationException` is fatal to the client).
                Err(e @ WireError::Kafka { .. }) if e.is_authentication_error() => return Err(e),
                Err(e) => {
                    debug!(addr, error = %e, "bootstrap address failed");
                    last = e.to_string();
                }
            }
        }
        Err(WireError::NoBrokerReachable { tried, last })
    }

    async fn bootstrap_one(&mut self, addr: &str) -> Result<i32, WireError> {
        let mut bc = open_addr(&self.config, addr).await?;
        let md = fetch_metadata(&mut bc, self.config.request_timeout, Some(&[])).await?;
        self.apply_metadata(md, true);
        // Keep the connection if the address is one the cluster advertises;
        // otherwise (an alias such as localhost) connect by advertised address.
        if let Some(node) = self.addrs.values().find(|b| b.addr() == addr).map(|b| b.node_id) {
            self.conns.insert(node, bc);
            return Ok(node);
        }
        drop(bc);
        let mut last = format!("{addr} answered, but no advertised broker is reachable");
        for node in self.addrs.keys().copied().collect::<Vec<_>>() {
            match self.conn(node).await {
                Ok(_) => return Ok(node),
                Err(e) => last = e.to_string(),
            }
        }
        Err(WireError::NoBrokerReachable { tried: self.addrs.values().map(BrokerInfo::addr).collect(), last })
    }

    /// Stores a Metadata answer. Connections to brokers whose address
    /// changed are dropped. `brokers_only`: keep the cached topics.
    pub(super) fn apply_metadata(&mut self, md: ClusterMetadata, brokers_only: bool) {
        self.addrs = md.brokers.iter().map(|b| (b.node_id, b.clone())).collect();
        let stale: Vec<i32> = self
            .conns
            .iter()
            .filter(|(id, bc)| self.addrs.get(id).map(BrokerInfo::addr).as_deref() != Some(bc.conn.peer()))
            .map(|(id, _)| *id)
            .collect();
        for id in stale {
            debug!(node_id = id, "dropping connection: broker address changed or gone");
            self.conns.remove(&id);
        }
        let topics = if brokers_only { std::mem::take(&mut self.metadata.topics) } else { md.topics };
        self.metadata = ClusterMetadata { topics, ..md };
    }

    /// The open connection to `node`, opening it if needed.
    pub(super) async fn conn(&mut self, node: i32) -> Result<&mut BrokerConn, WireError> {
        if self.conns.get(&node).is_some_and(|bc| bc.conn.is_broken()) {
            self.conns.remove(&node);
        }
        if !self.conns.contains_key(&node) {
            let addr = self.addrs.get(&node).map(BrokerInfo::addr).ok_or_else(|| WireError::NoBrokerReachable {
                tried: vec![format!("node {node}")],
                last: format!("node {node} is not in the cluster metadata"),
            })?;
            let bc = open_addr(&self.config, &addr).await?;
            debug!(node_id = node, addr, "connected to broker");
            self.conns.insert(node, bc);
        }
        self.conns.get_mut(&node).ok_or_else(|| WireError::Disconnected { peer: format!("node {node}") })
    }

    /// A broker to send "any broker" requests to: one already connected,
    /// else the first reachable known broker, else the bootstrap list again.
    pub(super) async fn any_node(&mut self) -> Result<i32, WireError> {
        self.conns.retain(|_, bc| !bc.conn.is_broken());
        if let Some(&node) = self.conns.keys().next() {
            return Ok(node);
        }
        for node in self.addrs.keys().copied().collect::<Vec<_>>() {
            match self.conn(node).await {
                Ok(_) => return Ok(node),
                Err(e) => debug!(node_id = node, error = %e, "broker unreachable"),
            }
        }
        // Every known broker is down or moved: re-bootstrap.
        self.bootstrap().await
    }

    /// Makes sure `node` has an address, refreshing metadata once if not.
    pub(super) async fn ensure_known(&mut self, node: i32) -> Result<(), WireError> {
        if !self.addrs.contains_key(&node) {
            self.refresh_brokers().await?;
        }
        Ok(())
    }

    /// Sends a raw body to `node`; a transport error drops the connection.
    pub(super) async fn send_raw_to(
        &mut self,
        node: i32,
        api_key: ApiKey,
        version: i16,
        body: &[u8],
    ) -> Result<Bytes, WireError> {
        let timeout = self.config.request_timeout;
        let bc = self.conn(node).await?;
        let result = bc.conn.send_raw(api_key, version, body, timeout).await;
        let broken = bc.conn.is_broken();
        if broken {
            if let Err(e) = &result {
                debug!(node_id = node, ?api_key, error = %e, "dropping connection");
            }
            self.conns.remove(&node);
        }
        result
    }

    /// After a transport error: forget what may be stale and refresh the
    /// broker list (best effort; the retry will find out if it is still bad).
    pub(super) async fn after_transport_error(&mut self, node: Option<i32>, coordinator_key: Option<(i8, &str)>) {
        if let Some(node) = node {
            self.conns.remove(&node);
            self.coordinators.retain(|_, c| *c != node);
        }
        if let Some((key_type, key)) = coordinator_key {
            self.coordinators.remove(&(key_type, key.to_string()));
        }
        if let Err(e) = self.refresh_brokers().await {
            debug!(error = %e, "metadata refresh after a transport error failed");
        }
    }

    // ----- the generic request loop -----------------------------------------

    async fn resolve(&mut self, target: Target<'_>) -> Result<i32, WireError> {
        match target {
            Target::Any => self.any_node().await,
            Target::Node(n) => {
                self.ensure_known(n).await?;
                Ok(n)
            }
            Target::Controller => {
                let c = self.metadata.controller_id;
                if c >= 0 && self.addrs.contains_key(&c) {
                    Ok(c)
                } else {
                    self.any_node().await
                }
            }
            Target::Coordinator(tid) => Ok(self.coordinator_for(tid).await?.node_id),
            Target::KeyedCoordinator(key_type, key) => Ok(self.coordinator_of(key_type, key).await?.node_id),
        }
    }

    /// Sends one request kind with the retry rules of the module docs.
    pub(super) async fn call<T>(&mut self, c: &Call<'_, T>) -> Result<Reply<T>, WireError> {
        let mut retry = Retrier::fixed(c.api, &self.config);
        let coordinator_key = match c.target {
            Target::Coordinator(tid) => Some((KEY_TYPE_TRANSACTION, tid)),
            Target::KeyedCoordinator(key_type, key) => Some((key_type, key)),
            _ => None,
        };
        loop {
            let mut node_used = None;
            let attempt = async {
                let node = self.resolve(c.target).await?;
                node_used = Some(node);
                let version = (c.choose_version)(&self.conn(node).await?.versions)?;
                let body = (c.encode)(version)?;
                let reply = self.send_raw_to(node, c.api_key, version, &body).await?;
                let decoded = (c.decode)(reply, version)?;
                Ok::<_, WireError>((node, version, decoded))
            }
            .await;
            let (node, version, body) = match attempt {
                Ok(r) => r,
                Err(e) if !c.once && (e.is_connection_error() || matches!(e, WireError::NoBrokerReachable { .. })) => {
                    self.after_transport_error(node_used, coordinator_key).await;
                    retry.backoff(e).await?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            *self.counts.requests.entry(c.api.to_string()).or_default() += 1;
            let (code, message) = (c.status)(&body);
            if code.is_ok() || c.once {
                return Ok(Reply { body, version, node, code });
            }
            let err = WireError::kafka(c.api, code, message);
            let action = (c.classify)(code);
            if action != CoordinatorAction::Fail {
                self.counts.retried(c.api, code);
            }
            match action {
                CoordinatorAction::Fail => return Err(err),
                CoordinatorAction::Retry => retry.backoff(err).await?,
                CoordinatorAction::RediscoverAndRetry => {
                    match c.target {
                        Target::Coordinator(tid) => {
                            self.coordinators.remove(&txn_key(tid));
                        }
                        Target::KeyedCoordinator(key_type, key) => {
                            self.coordinators.remove(&(key_type, key.to_string()));
                        }
                        Target::Controller => {
                            if let Err(e) = self.refresh_brokers().await {
                                debug!(error = %e, "metadata refresh failed");
                            }
                        }
                        Target::Any | Target::Node(_) => {}
                    }
                    retry.backoff(err).await?
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::InitProducerIdParams;
    use kafka_protocol::messages::ProduceRequest;

    #[test]
    fn defaults_follow_the_java_producer() {
        let c = ClientConfig::default();
        assert_eq!(c.retry_backoff, Duration::from_millis(100));
        assert_eq!(c.retry_backoff_max, Duration::from_secs(1));
        assert_eq!(c.retry_deadline, Duration::from_secs(30));
        assert_eq!(c.request_timeout, Duration::from_secs(30));
    }

    #[test]
    fn broker_retry_adds_retriable_codes() {
        assert_eq!(broker_retry(KafkaCode::LEADER_NOT_AVAILABLE), CoordinatorAction::Retry);
        assert_eq!(broker_retry(KafkaCode::NOT_COORDINATOR), CoordinatorAction::RediscoverAndRetry);
        assert_eq!(broker_retry(KafkaCode::INVALID_REQUEST), CoordinatorAction::Fail);
    }

    #[test]
    fn exponential_backoff_doubles_up_to_the_cap() {
        let config = ClientConfig::default();
        let mut r = Retrier::exponential("x", &config);
        let mut delays = vec![];
        for _ in 0..6 {
            r.attempts += 1;
            delays.push(r.next_delay().as_millis());
        }
        assert_eq!(delays, vec![100, 200, 400, 800, 1000, 1000]);
        let mut f = Retrier::fixed("y", &config);
        f.attempts = 5;
        assert_eq!(f.next_delay(), Duration::from_millis(100));
    }

    #[tokio::test(start_paused = true)]
    async fn retrier_gives_up_at_the_deadline() {
        let config = ClientConfig { retry_deadline: Duration::from_millis(350), ..Default::default() };
        let mut r = Retrier::fixed("EndTxn", &config);
        let mut n = 0;
        let err = loop {
            let e = WireError::kafka("EndTxn", KafkaCode::CONCURRENT_TRANSACTIONS, None);
            match r.backoff(e).await {
                Ok(()) => n += 1,
                Err(e) => break e,
            }
        };
        // 100 ms fixed backoff: retries start at 100, 200 and 300 ms; a
        // fourth would start at 400 ms, past the 350 ms deadline.
        assert_eq!(n, 3);
        match err {
            WireError::RetriesExhausted { what, attempts, last } => {
                assert_eq!(what, "EndTxn");
                assert_eq!(attempts, n + 1);
                assert_eq!(last.kafka_code(), Some(KafkaCode::CONCURRENT_TRANSACTIONS));
            }
            other => panic!("{other}"),
        }
    }

    /// Client futures must be `Send` so workers can drive them from spawned tasks.
    #[allow(dead_code)]
    fn client_futures_are_send(client: &mut Client, p: &InitProducerIdParams) {
        fn assert_send<T: Send>(_: T) {}
        assert_send(client.init_producer_id(p, None));
        assert_send(client.init_producer_id_once(p, Some(6)));
        assert_send(client.end_txn("t", 1, 0, true, None));
        assert_send(client.add_partitions_to_txn("t", 1, 0, &[]));
        assert_send(client.describe_transactions(&[]));
        assert_send(client.list_transactions(&[], &[]));
        assert_send(client.create_topic("t", 1, 1, &[]));
        assert_send(client.describe_broker_configs(1, &[]));
        assert_send(client.metadata(None));
        assert_send(client.produce(1, &ProduceRequest::default(), 3, 12));
        assert_send(client.find_coordinator("t"));
        assert_send(client.describe_quorum());
        assert_send(client.api_versions(None));
        assert_send(Client::connect(&[], ClientConfig::default()));
    }
}
