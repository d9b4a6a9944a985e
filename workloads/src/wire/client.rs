//! A small cluster-aware client for the transaction RPCs.
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
//!   `FindCoordinatorRequest`): FindCoordinator with key type 1
//!   (transaction), batched form from v4. Results are cached per
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

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use tokio::time::Instant;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_quorum_request::{
    PartitionData as QuorumPartitionData, TopicData as QuorumTopicData,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnResponse, ApiKey, CreateTopicsRequest, CreateTopicsResponse,
    DescribeConfigsRequest, DescribeConfigsResponse, DescribeQuorumRequest, DescribeQuorumResponse,
    DescribeTransactionsRequest, DescribeTransactionsResponse, EndTxnRequest, EndTxnResponse, FindCoordinatorRequest,
    FindCoordinatorResponse, ListTransactionsRequest, ListTransactionsResponse, MetadataRequest, MetadataResponse,
    ProduceRequest, ProduceResponse, ProducerId, TopicName, TransactionalId,
};
use kafka_protocol::protocol::{Decodable, Encodable, Message, StrBytes};
use tracing::{debug, info, warn};

use super::connection::Connection;
use super::error::{coordinator_retry, CoordinatorAction, KafkaCode, WireError};
use super::init_producer_id::{self, InitProducerIdParams};
use super::sasl::SaslPlain;
use super::versions::{fetch_api_versions, ApiVersionsInfo};

/// FindCoordinator key type of a transactional id.
pub const KEY_TYPE_TRANSACTION: i8 = 1;

/// DescribeConfigs resource type of a broker.
pub const RESOURCE_TYPE_BROKER: i8 = 4;

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
}

/// The KRaft quorum as DescribeQuorum reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumLeader {
    /// The active controller's node id.
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub high_watermark: i64,
    pub voters: Vec<i32>,
    /// The broker that answered.
    pub asked: i32,
}

/// Result of a successful InitProducerId.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitProducerIdOutcome {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// v6 only (KIP-939, with KeepPreparedTxn): the prepared transaction's
    /// producer id and epoch; -1 when none or below v6.
    pub ongoing_txn_producer_id: i64,
    pub ongoing_txn_producer_epoch: i16,
    /// The request version that was sent.
    pub version: i16,
    /// Node id of the broker that answered (the transaction coordinator
    /// for a transactional id).
    pub coordinator: i32,
}

/// What one InitProducerId attempt got back, error or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitProducerIdAnswer {
    /// The error code of the reply, `None` for NONE.
    pub error: Option<KafkaCode>,
    /// The reply's fields as sent (pid/epoch are usually -1 on error).
    pub outcome: InitProducerIdOutcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTxnOutcome {
    pub version: i16,
    /// v5 (Transactions V2): the bumped pair from the reply. v≤4: the pair
    /// that was sent, which the client keeps (Java's `EndTxnHandler`).
    pub producer_id: i64,
    pub producer_epoch: i16,
}

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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedTxn {
    pub transactional_id: String,
    pub producer_id: i64,
    pub state: String,
    /// Node id of the coordinator that listed it.
    pub broker: i32,
}

/// An open connection and what its broker supports.
#[derive(Debug)]
struct BrokerConn {
    conn: Connection,
    versions: ApiVersionsInfo,
}

/// Where a request goes.
#[derive(Debug, Clone, Copy)]
enum Target<'a> {
    Any,
    Node(i32),
    /// The broker Metadata names as controller (brokers forward to the
    /// KRaft controller), else any broker.
    Controller,
    Coordinator(&'a str),
}

/// One request kind, described for [`Client::call`].
struct Call<'a, T> {
    api: &'a str,
    api_key: ApiKey,
    target: Target<'a>,
    choose_version: &'a (dyn Fn(&ApiVersionsInfo) -> Result<i16, WireError> + Sync),
    encode: &'a (dyn Fn(i16) -> Result<Bytes, WireError> + Sync),
    decode: &'a (dyn Fn(Bytes, i16) -> Result<T, WireError> + Sync),
    /// The reply's deciding error code and an optional detail message.
    status: &'a (dyn Fn(&T) -> (KafkaCode, Option<String>) + Sync),
    classify: fn(KafkaCode) -> CoordinatorAction,
    /// One attempt; the reply is returned whatever its code.
    once: bool,
}

struct Reply<T> {
    body: T,
    version: i16,
    node: i32,
    code: KafkaCode,
}

/// Backoff and deadline bookkeeping for one logical operation.
struct Retrier {
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
    fn fixed(what: impl Into<String>, config: &ClientConfig) -> Self {
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
    fn exponential(what: impl Into<String>, config: &ClientConfig) -> Self {
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
    async fn backoff(&mut self, err: WireError) -> Result<(), WireError> {
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

fn encode_body<R: Encodable>(req: &R, version: i16, api: &str) -> Result<Bytes, WireError> {
    let mut buf = BytesMut::new();
    req.encode(&mut buf, version).map_err(|e| WireError::codec(&format!("encoding {api} v{version}"), e))?;
    Ok(buf.freeze())
}

fn decode_body<R: Decodable>(mut body: Bytes, version: i16, api: &str) -> Result<R, WireError> {
    R::decode(&mut body, version).map_err(|e| WireError::codec(&format!("decoding {api} v{version} response"), e))
}

fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Classification for requests to a fixed broker (not a coordinator):
/// the coordinator table, plus the codes the crate marks retriable.
fn broker_retry(code: KafkaCode) -> CoordinatorAction {
    match coordinator_retry(code) {
        CoordinatorAction::Fail if code.response_error().is_some_and(|e| e.is_retriable()) => CoordinatorAction::Retry,
        action => action,
    }
}

/// CreateTopics: NOT_CONTROLLER means "refresh metadata and resend".
fn create_topics_retry(code: KafkaCode) -> CoordinatorAction {
    if code == KafkaCode::NOT_CONTROLLER {
        CoordinatorAction::RediscoverAndRetry
    } else {
        broker_retry(code)
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

/// Metadata over one connection. `topics`: `None` = all topics,
/// `Some(&[])` = brokers only (v1+; v0 cannot ask for no topics).
async fn fetch_metadata(
    bc: &mut BrokerConn,
    timeout: Duration,
    topics: Option<&[String]>,
) -> Result<ClusterMetadata, WireError> {
    let version = bc.versions.negotiate_request::<MetadataRequest>()?;
    let topics = match topics {
        None if version >= 1 => None,
        None => Some(vec![]),
        Some(names) => Some(
            names.iter().map(|n| MetadataRequestTopic::default().with_name(Some(TopicName(str_bytes(n))))).collect(),
        ),
    };
    let req = MetadataRequest::default()
        .with_topics(topics)
        // Never create topics as a side effect (only expressible from v4).
        .with_allow_auto_topic_creation(version < 4);
    let resp = bc.conn.send(&req, version, timeout).await?;
    if let Some(code) = KafkaCode::from_code(resp.error_code) {
        return Err(WireError::kafka("Metadata", code, None));
    }
    Ok(convert_metadata(resp))
}

fn convert_metadata(resp: MetadataResponse) -> ClusterMetadata {
    ClusterMetadata {
        cluster_id: resp.cluster_id.map(|c| c.to_string()),
        controller_id: *resp.controller_id,
        brokers: resp
            .brokers
            .into_iter()
            .map(|b| BrokerInfo { node_id: *b.node_id, host: b.host.to_string(), port: b.port })
            .collect(),
        topics: resp
            .topics
            .into_iter()
            .map(|t| TopicInfo {
                name: t.name.map(|n| n.0.to_string()).unwrap_or_default(),
                error: KafkaCode::from_code(t.error_code),
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| PartitionInfo {
                        partition: p.partition_index,
                        leader: *p.leader_id,
                        replicas: p.replica_nodes.iter().map(|r| **r).collect(),
                        isr: p.isr_nodes.iter().map(|r| **r).collect(),
                        error: KafkaCode::from_code(p.error_code),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// The rig's Kafka client. See the module docs.
#[derive(Debug)]
pub struct Client {
    config: ClientConfig,
    bootstrap: Vec<String>,
    /// The last Metadata answer.
    metadata: ClusterMetadata,
    /// Node id → advertised address (from the last Metadata).
    addrs: BTreeMap<i32, BrokerInfo>,
    conns: BTreeMap<i32, BrokerConn>,
    /// Transactional id → coordinator node id.
    coordinators: HashMap<String, i32>,
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
        self.coordinators.get(transactional_id).copied()
    }

    /// Forgets a cached coordinator; the next request looks it up again.
    pub fn forget_coordinator(&mut self, transactional_id: &str) {
        self.coordinators.remove(transactional_id);
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
    fn apply_metadata(&mut self, md: ClusterMetadata, brokers_only: bool) {
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
    async fn conn(&mut self, node: i32) -> Result<&mut BrokerConn, WireError> {
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
    async fn any_node(&mut self) -> Result<i32, WireError> {
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
    async fn ensure_known(&mut self, node: i32) -> Result<(), WireError> {
        if !self.addrs.contains_key(&node) {
            self.refresh_brokers().await?;
        }
        Ok(())
    }

    /// Sends a raw body to `node`; a transport error drops the connection.
    async fn send_raw_to(&mut self, node: i32, api_key: ApiKey, version: i16, body: &[u8]) -> Result<Bytes, WireError> {
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
    async fn after_transport_error(&mut self, node: Option<i32>, transactional_id: Option<&str>) {
        if let Some(node) = node {
            self.conns.remove(&node);
            self.coordinators.retain(|_, c| *c != node);
        }
        if let Some(tid) = transactional_id {
            self.coordinators.remove(tid);
        }
        if let Err(e) = self.refresh_brokers().await {
            debug!(error = %e, "metadata refresh after a transport error failed");
        }
    }

    // ----- ApiVersions and Metadata ----------------------------------------

    /// What a broker (`None`: any broker) answered to ApiVersions on the
    /// current connection.
    pub async fn api_versions(&mut self, node_id: Option<i32>) -> Result<ApiVersionsInfo, WireError> {
        let mut retry = Retrier::exponential("ApiVersions", &self.config);
        loop {
            let attempt = async {
                let node = match node_id {
                    Some(n) => {
                        self.ensure_known(n).await?;
                        n
                    }
                    None => self.any_node().await?,
                };
                Ok::<_, WireError>(self.conn(node).await?.versions.clone())
            }
            .await;
            match attempt {
                Ok(info) => return Ok(info),
                Err(e) if e.is_connection_error() || matches!(e, WireError::NoBrokerReachable { .. }) => {
                    retry.backoff(e).await?
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Metadata for `topics` (`None` = all topics), from any broker, at the
    /// highest version both the broker and the crate support.
    pub async fn metadata(&mut self, topics: Option<&[String]>) -> Result<ClusterMetadata, WireError> {
        let md = self.metadata_inner(topics).await?;
        self.apply_metadata(md.clone(), false);
        Ok(md)
    }

    /// Refreshes only the broker list (and controller id).
    async fn refresh_brokers(&mut self) -> Result<(), WireError> {
        let md = self.metadata_inner(Some(&[])).await?;
        self.apply_metadata(md, true);
        Ok(())
    }

    async fn metadata_inner(&mut self, topics: Option<&[String]>) -> Result<ClusterMetadata, WireError> {
        let mut retry = Retrier::exponential("Metadata", &self.config);
        loop {
            let timeout = self.config.request_timeout;
            let attempt = async {
                let node = self.any_node().await?;
                let bc = self.conn(node).await?;
                let result = fetch_metadata(bc, timeout, topics).await;
                if bc.conn.is_broken() {
                    self.conns.remove(&node);
                }
                result
            }
            .await;
            match attempt {
                Ok(md) => return Ok(md),
                Err(e) if e.is_connection_error() || matches!(e, WireError::NoBrokerReachable { .. }) => {
                    retry.backoff(e).await?
                }
                Err(e) => return Err(e),
            }
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
        }
    }

    /// Sends one request kind with the retry rules of the module docs.
    async fn call<T>(&mut self, c: &Call<'_, T>) -> Result<Reply<T>, WireError> {
        let mut retry = Retrier::fixed(c.api, &self.config);
        let tid = match c.target {
            Target::Coordinator(tid) => Some(tid),
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
                    self.after_transport_error(node_used, tid).await;
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
                            self.coordinators.remove(tid);
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

    // ----- coordinator discovery ---------------------------------------------

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
    async fn coordinator_for(&mut self, transactional_id: &str) -> Result<BrokerInfo, WireError> {
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

    // ----- InitProducerId -----------------------------------------------------

    /// InitProducerId, retried per [`coordinator_retry`] (so an ongoing
    /// transaction's CONCURRENT_TRANSACTIONS is retried, as Java does; each
    /// attempt fences and bumps the epoch again).
    ///
    /// Sent to the coordinator of the transactional id, or to any broker
    /// for an idempotent producer.
    ///
    /// Version: `Some(v)` sends exactly `v` if the broker advertises it
    /// (else [`WireError::UnsupportedVersion`]). `None` picks v6 when the
    /// params need it (Enable2Pc or KeepPreparedTxn) and otherwise the
    /// highest common version up to v5, even if the broker advertises v6:
    /// v6 is an unstable version (`latestVersionUnstable`) that Java clients
    /// never send, and without the flags it asks nothing more of the broker.
    /// Callers that want 2PC pass `Some(6)` explicitly.
    pub async fn init_producer_id(
        &mut self,
        params: &InitProducerIdParams,
        version: Option<i16>,
    ) -> Result<InitProducerIdOutcome, WireError> {
        Ok(self.init_producer_id_call(params, version, false).await?.outcome)
    }

    /// One InitProducerId attempt (after the coordinator lookup, which is
    /// retried): returns whatever the broker answered, including retriable
    /// codes such as CONCURRENT_TRANSACTIONS. Transport errors are returned
    /// as errors.
    pub async fn init_producer_id_once(
        &mut self,
        params: &InitProducerIdParams,
        version: Option<i16>,
    ) -> Result<InitProducerIdAnswer, WireError> {
        self.init_producer_id_call(params, version, true).await
    }

    async fn init_producer_id_call(
        &mut self,
        params: &InitProducerIdParams,
        version: Option<i16>,
        once: bool,
    ) -> Result<InitProducerIdAnswer, WireError> {
        let choose = |info: &ApiVersionsInfo| match version {
            Some(v) => info.negotiate(ApiKey::InitProducerId, v, v),
            None if params.needs_v6() => info.negotiate(ApiKey::InitProducerId, 6, 6),
            None => info.negotiate(ApiKey::InitProducerId, 0, init_producer_id::MAX_CRATE_VERSION),
        };
        let encode = |v: i16| init_producer_id::encode_request(params, v);
        let decode = |b: Bytes, v: i16| init_producer_id::decode_response(b, v);
        let status = |r: &kafka_protocol::messages::InitProducerIdResponse| (KafkaCode(r.error_code), None);
        let target = match &params.transactional_id {
            Some(tid) => Target::Coordinator(tid),
            None => Target::Any,
        };
        let reply = self
            .call(&Call {
                api: "InitProducerId",
                api_key: ApiKey::InitProducerId,
                target,
                choose_version: &choose,
                encode: &encode,
                decode: &decode,
                status: &status,
                classify: coordinator_retry,
                once,
            })
            .await?;
        let r = &reply.body;
        let outcome = InitProducerIdOutcome {
            producer_id: *r.producer_id,
            producer_epoch: r.producer_epoch,
            ongoing_txn_producer_id: *r.ongoing_txn_producer_id,
            ongoing_txn_producer_epoch: r.ongoing_txn_producer_epoch,
            version: reply.version,
            coordinator: reply.node,
        };
        debug!(
            transactional_id = params.transactional_id.as_deref().unwrap_or("-"),
            version = reply.version,
            code = %reply.code,
            producer_id = outcome.producer_id,
            producer_epoch = outcome.producer_epoch,
            "InitProducerId"
        );
        Ok(InitProducerIdAnswer { error: KafkaCode::from_code(r.error_code), outcome })
    }

    // ----- Produce -------------------------------------------------------------

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
        Ok((decode_body::<ProduceResponse>(reply, version, "Produce")?, version))
    }

    // ----- AddPartitionsToTxn / EndTxn ---------------------------------------

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
        let decode = |b: Bytes, v: i16| decode_body::<AddPartitionsToTxnResponse>(b, v, "AddPartitionsToTxn");
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

    // ----- admin: DescribeTransactions / ListTransactions -------------------

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
                            self.coordinators.remove(tid);
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
                                self.coordinators.remove(&tid);
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

    // ----- admin: topics and configs -----------------------------------------

    /// Creates a topic (TOPIC_ALREADY_EXISTS counts as success), then waits
    /// until Metadata shows every partition with a leader. `partitions` /
    /// `replication_factor` of -1 use the broker defaults.
    pub async fn create_topic(
        &mut self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: &[(String, String)],
    ) -> Result<(), WireError> {
        let topic = CreatableTopic::default()
            .with_name(TopicName(str_bytes(name)))
            .with_num_partitions(partitions)
            .with_replication_factor(replication_factor)
            .with_configs(
                configs
                    .iter()
                    .map(|(k, v)| {
                        CreatableTopicConfig::default().with_name(str_bytes(k)).with_value(Some(str_bytes(v)))
                    })
                    .collect(),
            );
        let timeout_ms = i32::try_from(self.config.request_timeout.as_millis()).unwrap_or(i32::MAX);
        let req = CreateTopicsRequest::default().with_topics(vec![topic]).with_timeout_ms(timeout_ms);
        let choose = |info: &ApiVersionsInfo| info.negotiate_request::<CreateTopicsRequest>();
        let encode = |v: i16| encode_body(&req, v, "CreateTopics");
        let decode = |b: Bytes, v: i16| decode_body::<CreateTopicsResponse>(b, v, "CreateTopics");
        let status = |r: &CreateTopicsResponse| match r.topics.iter().find(|t| t.name.0.as_str() == name) {
            Some(t) => (KafkaCode(t.error_code), t.error_message.as_ref().map(|m| m.to_string())),
            None => (KafkaCode::UNKNOWN_SERVER_ERROR, Some(format!("no result for topic {name}"))),
        };
        let created = match self
            .call(&Call {
                api: "CreateTopics",
                api_key: ApiKey::CreateTopics,
                target: Target::Controller,
                choose_version: &choose,
                encode: &encode,
                decode: &decode,
                status: &status,
                classify: create_topics_retry,
                once: false,
            })
            .await
        {
            Ok(_) => true,
            Err(e) if e.kafka_code() == Some(KafkaCode::TOPIC_ALREADY_EXISTS) => {
                debug!(topic = name, "topic already exists");
                false
            }
            Err(e) => return Err(e),
        };

        // Wait for leaders (Java's admin returns before that; the rig
        // must not start producing into a partition without a leader).
        let mut retry = Retrier::exponential(format!("waiting for leaders of topic {name}"), &self.config);
        let names = [name.to_string()];
        loop {
            let md = self.metadata(Some(&names)).await?;
            let problem = match md.topic(name) {
                None => Some("topic missing from Metadata".to_string()),
                Some(t) if t.error.is_some() => t.error.map(|c| c.to_string()),
                Some(t) if t.partitions.is_empty() => Some("no partitions yet".to_string()),
                Some(t) if created && partitions > 0 && t.partitions.len() < partitions as usize => {
                    Some(format!("{} of {partitions} partitions", t.partitions.len()))
                }
                Some(t) => t
                    .partitions
                    .iter()
                    .find(|p| p.leader < 0)
                    .map(|p| format!("partition {} has no leader", p.partition)),
            };
            match problem {
                None => {
                    info!(topic = name, created, "topic ready");
                    return Ok(());
                }
                Some(p) => retry.backoff(WireError::Codec(p)).await?,
            }
        }
    }

    /// The KRaft quorum's leader (the active controller) and its epoch:
    /// DescribeQuorum (API 55) for `__cluster_metadata` partition 0, sent to
    /// any broker, which forwards it to the controller quorum (what Java's
    /// `Admin.describeMetadataQuorum` does). Retriable errors (e.g.
    /// NOT_LEADER_OR_FOLLOWER during an election) are retried until
    /// `retry_deadline`.
    pub async fn describe_quorum(&mut self) -> Result<QuorumLeader, WireError> {
        let req = DescribeQuorumRequest::default().with_topics(vec![QuorumTopicData::default()
            .with_topic_name(TopicName(str_bytes("__cluster_metadata")))
            .with_partitions(vec![QuorumPartitionData::default().with_partition_index(0)])]);
        let choose = |info: &ApiVersionsInfo| info.negotiate_request::<DescribeQuorumRequest>();
        let encode = |v: i16| encode_body(&req, v, "DescribeQuorum");
        let decode = |b: Bytes, v: i16| decode_body::<DescribeQuorumResponse>(b, v, "DescribeQuorum");
        let status = |r: &DescribeQuorumResponse| {
            if r.error_code != 0 {
                return (KafkaCode(r.error_code), r.error_message.as_ref().map(|m| m.to_string()));
            }
            match r.topics.first().and_then(|t| t.partitions.first()) {
                Some(p) if p.error_code != 0 => {
                    (KafkaCode(p.error_code), p.error_message.as_ref().map(|m| m.to_string()))
                }
                Some(p) if *p.leader_id < 0 => (KafkaCode::NOT_LEADER_OR_FOLLOWER, Some("no quorum leader yet".into())),
                Some(_) => (KafkaCode::NONE, None),
                None => (KafkaCode::UNKNOWN_SERVER_ERROR, Some("no partition in the DescribeQuorum reply".into())),
            }
        };
        let reply = self
            .call(&Call {
                api: "DescribeQuorum",
                api_key: ApiKey::DescribeQuorum,
                target: Target::Any,
                choose_version: &choose,
                encode: &encode,
                decode: &decode,
                status: &status,
                classify: coordinator_retry,
                once: false,
            })
            .await?;
        let p = reply
            .body
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .ok_or_else(|| WireError::Codec("no partition in the DescribeQuorum reply".into()))?;
        Ok(QuorumLeader {
            leader_id: *p.leader_id,
            leader_epoch: p.leader_epoch,
            high_watermark: p.high_watermark,
            voters: p.current_voters.iter().map(|v| *v.replica_id).collect(),
            asked: reply.node,
        })
    }

    /// A broker's configuration values (DescribeConfigs, resource type
    /// BROKER, asked of that broker). Empty `keys` = all. Values are `None`
    /// when null (sensitive or unset); keys the broker does not know are
    /// absent from the map.
    pub async fn describe_broker_configs(
        &mut self,
        node_id: i32,
        keys: &[String],
    ) -> Result<BTreeMap<String, Option<String>>, WireError> {
        let resource = DescribeConfigsResource::default()
            .with_resource_type(RESOURCE_TYPE_BROKER)
            .with_resource_name(str_bytes(&node_id.to_string()))
            .with_configuration_keys((!keys.is_empty()).then(|| keys.iter().map(|k| str_bytes(k)).collect()));
        let req = DescribeConfigsRequest::default().with_resources(vec![resource]);
        let choose = |info: &ApiVersionsInfo| info.negotiate_request::<DescribeConfigsRequest>();
        let encode = |v: i16| encode_body(&req, v, "DescribeConfigs");
        let decode = |b: Bytes, v: i16| decode_body::<DescribeConfigsResponse>(b, v, "DescribeConfigs");
        let status = |r: &DescribeConfigsResponse| match r.results.first() {
            Some(res) => (KafkaCode(res.error_code), res.error_message.as_ref().map(|m| m.to_string())),
            None => (KafkaCode::UNKNOWN_SERVER_ERROR, Some("empty DescribeConfigs reply".to_string())),
        };
        let reply = self
            .call(&Call {
                api: "DescribeConfigs",
                api_key: ApiKey::DescribeConfigs,
                target: Target::Node(node_id),
                choose_version: &choose,
                encode: &encode,
                decode: &decode,
                status: &status,
                classify: broker_retry,
                once: false,
            })
            .await?;
        Ok(reply
            .body
            .results
            .into_iter()
            .flat_map(|r| r.configs)
            .map(|c| (c.name.to_string(), c.value.map(|v| v.to_string())))
            .collect())
    }
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

    #[test]
    fn defaults_follow_the_java_producer() {
        let c = ClientConfig::default();
        assert_eq!(c.retry_backoff, Duration::from_millis(100));
        assert_eq!(c.retry_backoff_max, Duration::from_secs(1));
        assert_eq!(c.retry_deadline, Duration::from_secs(30));
        assert_eq!(c.request_timeout, Duration::from_secs(30));
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

    #[test]
    fn broker_retry_adds_retriable_codes() {
        assert_eq!(broker_retry(KafkaCode::LEADER_NOT_AVAILABLE), CoordinatorAction::Retry);
        assert_eq!(broker_retry(KafkaCode::NOT_COORDINATOR), CoordinatorAction::RediscoverAndRetry);
        assert_eq!(broker_retry(KafkaCode::INVALID_REQUEST), CoordinatorAction::Fail);
        assert_eq!(create_topics_retry(KafkaCode::NOT_CONTROLLER), CoordinatorAction::RediscoverAndRetry);
        assert_eq!(create_topics_retry(KafkaCode::TOPIC_ALREADY_EXISTS), CoordinatorAction::Fail);
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
