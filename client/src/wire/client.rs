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
//!
//! Where it is: this file holds the client's state (its settings, the
//! connections it keeps, the metadata cache, the counters), `Retrier` and
//! the small pieces every request uses; [`network`](super::network) opens
//! connections and runs the request loop; the connection bring-up
//! ([`api_versions`](super::api_versions), [`sasl`](super::sasl)) is below
//! this file and each RPC a file above it, so the files import one way.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use tracing::{debug, info};

use super::api_versions::ApiVersionsInfo;
use super::connection::Connection;
use super::error::{coordinator_retry, CoordinatorAction, KafkaCode, WireError};
use super::sasl::SaslPlain;
use super::security::Resolved;

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
    /// TLS and SASL for a real cluster's listener ([`security`](super::security)); by default
    /// the one installed for this process.
    pub security: Option<Arc<Resolved>>,
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
            security: super::security::installed(),
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

/// FindCoordinator key type of a consumer or share group (Java's
/// `FindCoordinatorRequest.CoordinatorType.GROUP`).
pub const KEY_TYPE_GROUP: i8 = 0;

/// FindCoordinator key type of a transactional id.
pub const KEY_TYPE_TRANSACTION: i8 = 1;

/// FindCoordinator key type of a share-partition's state (KIP-932, v6+): the
/// share coordinator, which keeps `__share_group_state`. The key is
/// `"groupId:topicId:partition"` ([`share_coordinator_key`](super::find_coordinator::share_coordinator_key)).
pub const KEY_TYPE_SHARE: i8 = 2;

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

// The cluster as the last Metadata answer describes it: the client's
// metadata cache (the Metadata RPC that fills it is `metadata.rs`).

/// A broker as the cluster advertises it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
}

impl BrokerInfo {
    /// `host:port` (IPv6 literals in brackets).
    pub fn addr(&self) -> String {
        if self.host.contains(':') && !self.host.starts_with('[') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    pub partition: i32,
    /// -1 when there is no leader.
    pub leader: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// The partition's error (e.g. LEADER_NOT_AVAILABLE), if any.
    pub error: Option<KafkaCode>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    pub name: String,
    /// The topic id (KIP-516; nil below Metadata v10). Share groups name
    /// topics by id only (ShareFetch, ShareGroupHeartbeat assignments).
    pub topic_id: uuid::Uuid,
    /// e.g. UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist.
    pub error: Option<KafkaCode>,
    pub partitions: Vec<PartitionInfo>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterMetadata {
    pub cluster_id: Option<String>,
    /// -1 when unknown. On KRaft clusters this is a broker that forwards to
    /// the active controller, not the controller itself.
    pub controller_id: i32,
    pub brokers: Vec<BrokerInfo>,
    pub topics: Vec<TopicInfo>,
}

impl ClusterMetadata {
    pub fn broker(&self, node_id: i32) -> Option<&BrokerInfo> {
        self.brokers.iter().find(|b| b.node_id == node_id)
    }

    pub fn topic(&self, name: &str) -> Option<&TopicInfo> {
        self.topics.iter().find(|t| t.name == name)
    }

    /// The topic with id `id` (never the nil id).
    pub fn topic_by_id(&self, id: uuid::Uuid) -> Option<&TopicInfo> {
        self.topics.iter().find(|t| !id.is_nil() && t.topic_id == id)
    }
}

/// The rig's Kafka client. See the module docs.
#[derive(Debug)]
pub struct Client {
    pub(super) config: ClientConfig,
    pub(super) bootstrap: Vec<String>,
    /// The last Metadata answer.
    pub(super) metadata: ClusterMetadata,
    /// Node id → advertised address (from the last Metadata).
    pub(super) addrs: BTreeMap<i32, BrokerInfo>,
    pub(super) conns: BTreeMap<i32, BrokerConn>,
    /// (FindCoordinator key type, key) → coordinator node id.
    pub(super) coordinators: HashMap<(i8, String), i32>,
    /// Requests sent and error-code retries since the last [`Client::take_counts`].
    pub(super) counts: RequestCounts,
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

    #[test]
    fn broker_addr_formats_ipv6() {
        let b = BrokerInfo { node_id: 1, host: "::1".into(), port: 9092 };
        assert_eq!(b.addr(), "[::1]:9092");
        let b = BrokerInfo { node_id: 1, host: "127.0.0.1".into(), port: 9092 };
        assert_eq!(b.addr(), "127.0.0.1:9092");
    }
}
