//! A Kafka-aware TCP proxy in front of every broker listener: the rig's
//! network and protocol faults.
//!
//! CONTRACT (written before the implementation; the coordinator codes
//! against these signatures — keep them, extend freely):
//! - [`Proxy::start`] binds one listener per [`Route`] and forwards to its
//!   upstream, framing both directions as Kafka frames (4-byte length).
//! - Each connection's source is classified from the client id of its first
//!   request ([`classify`]): a sink worker, a broker, or another client.
//! - [`Proxy::add`] installs a [`Rule`]; its [`RuleStats`] say what it matched
//!   and did — the confirmed effect of a network or protocol fault.
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::rng::SplitMix64;

pub mod advertise;
mod conn;
pub mod frame;
pub mod inject;
mod rule;

pub use rule::{Action, Frames, Match, Rule, RuleId, RuleStats, MAX_SAMPLES, TCP_RTO_MIN_MS};

/// A node as the proxy sees it: the destination of a connection (a broker
/// listener) or its classified source.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Peer {
    Worker(u32),
    Broker(i32),
    /// The rig's own clients (checker, tail, fault lookups), never faulted by groups.
    Other(String),
}

/// A set of peers a rule names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PeerGroup {
    Workers,
    Worker(u32),
    Brokers,
    Broker(i32),
}

/// What a proxy listener fronts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ListenerKind {
    /// The broker listener clients and other brokers use.
    Broker,
    /// The KRaft controller listener (Raft traffic between nodes).
    Controller,
}

/// One proxied listener: clients connect to `listen`, the proxy connects to `upstream`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub node: i32,
    pub kind: ListenerKind,
    pub listen: SocketAddr,
    pub upstream: SocketAddr,
}

/// The most losses drawn for one frame: held 15 rto at most (3 s at the
/// minimum timeout), so that a probability near 1 still delivers. The draws
/// do not look at the clock, and a loss fault lasts seconds: a frame lost
/// more often than this would be lost after the fault healed.
const MAX_RESENDS: u32 = 4;

/// A Hold's deadline: far enough that only the rule's removal releases it.
const HOLD_UNTIL_REMOVED: Duration = Duration::from_secs(365 * 24 * 3600);

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Worker(n) => write!(f, "worker-{n}"),
            Peer::Broker(n) => write!(f, "broker-{n}"),
            Peer::Other(c) if c.is_empty() => f.write_str("client (no id)"),
            Peer::Other(c) => write!(f, "client '{c}'"),
        }
    }
}

/// One frame as the rules see it.
#[derive(Debug, Clone)]
pub(crate) struct FrameInfo<'a> {
    pub source: &'a Peer,
    pub node: i32,
    pub kind: ListenerKind,
    pub dir: Frames,
    pub api_key: Option<i16>,
    pub api_version: i16,
    pub correlation_id: i32,
    pub transactional_ids: &'a [String],
    /// The frame's size on the wire (its length prefix included).
    pub len: usize,
}

impl FrameInfo<'_> {
    fn describe(&self, what: &str) -> String {
        let api = match self.api_key {
            Some(k) => sinkhole_kafka::api::describe_api(k),
            None => "unparsed frame".to_string(),
        };
        let dir = match self.dir {
            Frames::Request => "request",
            Frames::Response => "response",
        };
        let tid = match self.transactional_ids {
            [] => String::new(),
            [one] => format!(" tid {one}"),
            many => format!(" tids {}", many.join(",")),
        };
        format!(
            "{api} v{} {dir} corr {}{tid} {} → {}: {what}",
            self.api_version,
            self.correlation_id,
            self.source,
            destination(self.node, self.kind)
        )
    }
}

fn destination(node: i32, kind: ListenerKind) -> String {
    match kind {
        ListenerKind::Broker => format!("broker-{node}"),
        ListenerKind::Controller => format!("broker-{node} (controller listener)"),
    }
}

/// What the proxy did with a frame a rule picked.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    Dropped,
    Delayed(Duration),
    ErrorInjected(i16),
    Reset,
    /// Held this long so the link carries it at the rule's rate; its bytes.
    Throttled(Duration, usize),
    /// Held until the rule's removal.
    Held,
    /// Drawn lost: delivered this much later.
    Resent(Duration),
    /// The rule fit but its action could not be carried out (the frame was
    /// forwarded): counted as matched, not as acted.
    Failed(String),
}

/// A rule's decision for one frame.
#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    pub rule: RuleId,
    pub action: Action,
    /// For `Delay`: the hold drawn for this frame; for `Throttle`: until the
    /// link would have carried it.
    pub hold: Duration,
}

struct RuleEntry {
    id: RuleId,
    rule: Rule,
    stats: RuleStats,
    /// Frames that fit, for `nth`.
    seen: u64,
    /// Throttle: when the link is free again, per direction (requests, responses).
    link_free: [Option<std::time::Instant>; 2],
}

pub(crate) struct ConnEntry {
    pub source: Option<Peer>,
    pub node: i32,
    pub kind: ListenerKind,
    pub client_id: String,
    pub kill: Arc<watch::Sender<bool>>,
}

#[derive(Default)]
struct State {
    rules: Vec<RuleEntry>,
    next_rule: u64,
    finished: BTreeMap<RuleId, RuleStats>,
    conns: BTreeMap<u64, ConnEntry>,
    next_conn: u64,
}

pub(crate) struct Shared {
    routes: Vec<Route>,
    /// Rewrite the brokers' addresses in responses to the routes' ([`advertise`]).
    advertise: bool,
    state: Mutex<State>,
    /// Active rules, read without the lock on every frame (the fast path).
    rule_count: AtomicUsize,
    /// Loss and jitter draws: a seed gives the same sequence of draws on
    /// every build, whatever `rand` release it has (see [`crate::rng`]).
    rng: Mutex<SplitMix64>,
    /// Bumped on every rule removal: held frames re-check their rule.
    pub(crate) removals: watch::Sender<u64>,
    shutdown: watch::Sender<bool>,
    listeners: Mutex<Vec<JoinHandle<()>>>,
}

/// Now on the wall clock, Unix ms (the clock history events are stamped with).
fn wall_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// `frame` (a response to `api_key` v`version`) with the brokers' addresses in it
    /// replaced by their routes' listen addresses, when the proxy advertises itself and the
    /// answer carries any; else `frame` as it is.
    pub(crate) fn advertised(&self, frame: bytes::Bytes, api_key: i16, version: i16) -> bytes::Bytes {
        if !self.advertise || !advertise::carries_addresses(api_key) {
            return frame;
        }
        let to =
            |node: i32| self.routes.iter().find(|r| r.node == node && r.kind == ListenerKind::Broker).map(|r| r.listen);
        let rewritten = sinkhole_kafka::header::response_body_offset(&frame, api_key, version)
            .ok_or_else(|| "unparsable response header".to_string())
            .and_then(|off| match advertise::rewrite(api_key, version, &frame.slice(off..), to)? {
                Some(body) => {
                    sinkhole_kafka::encode::replace_body(&frame, off, &body).map(Some).map_err(|e| e.to_string())
                }
                None => Ok(None),
            });
        match rewritten {
            Ok(Some(f)) => f,
            Ok(None) => frame,
            Err(why) => {
                tracing::warn!(api_key, version, "proxy: broker addresses not rewritten: {why}");
                frame
            }
        }
    }

    pub(crate) fn has_rules(&self) -> bool {
        self.rule_count.load(Ordering::Acquire) > 0
    }

    pub(crate) fn rule_active(&self, id: RuleId) -> bool {
        lock(&self.state).rules.iter().any(|r| r.id == id)
    }

    /// The first rule (in insertion order) that fits the frame and passes its
    /// `nth` and `probability`.
    pub(crate) fn decide(&self, f: &FrameInfo<'_>) -> Option<Verdict> {
        let mut st = lock(&self.state);
        for r in st.rules.iter_mut() {
            if !r.rule.matches.fits_but_id(f) {
                continue;
            }
            if !r.rule.matches.id_fits(f) {
                r.stats.other_id(f.transactional_ids);
                continue;
            }
            r.seen += 1;
            r.stats.matched += 1;
            if r.rule.matches.nth.is_some_and(|n| n != r.seen) {
                continue;
            }
            if let Some(p) = r.rule.matches.probability {
                if lock(&self.rng).unit() >= p {
                    continue;
                }
            }
            let hold = match r.rule.action {
                Action::Delay { delay_ms, jitter_ms } => {
                    let j = if jitter_ms > 0 { lock(&self.rng).plus_minus(jitter_ms) } else { 0 };
                    Duration::from_millis((delay_ms as i64 + j).max(0) as u64)
                }
                Action::Throttle { bytes_per_sec } => {
                    // The link carries frames one after another at its rate:
                    // this one starts when the one before it is through.
                    let now = std::time::Instant::now();
                    let side = usize::from(f.dir == Frames::Response);
                    let start = r.link_free[side].filter(|t| *t > now).unwrap_or(now);
                    let wire = Duration::from_secs_f64(f.len as f64 / bytes_per_sec.max(1) as f64);
                    let done = start + wire;
                    r.link_free[side] = Some(done);
                    done - now
                }
                // Until the removal wakes the writer (see `conn::write_loop`).
                Action::Hold => HOLD_UNTIL_REMOVED,
                Action::Lose { rto_ms } => {
                    // The first loss was the probability's draw; each resend
                    // is lost again with the same probability, and waits
                    // twice as long as the one before.
                    let p = r.rule.matches.probability.unwrap_or(0.0);
                    let mut rng = lock(&self.rng);
                    let mut losses = 1u32;
                    while losses < MAX_RESENDS && rng.unit() < p {
                        losses += 1;
                    }
                    Duration::from_millis(rto_ms.saturating_mul((1u64 << losses) - 1))
                }
                _ => Duration::ZERO,
            };
            return Some(Verdict { rule: r.id, action: r.rule.action.clone(), hold });
        }
        None
    }

    /// Records what was done with a frame (or connection) a rule picked.
    pub(crate) fn record(&self, id: RuleId, outcome: Outcome, describe: impl FnOnce(&str) -> String) {
        self.record_as(id, outcome, false, describe)
    }

    /// [`Shared::record`]; `from_connection`: a connection-level action (no
    /// frame was matched by [`Shared::decide`]), which also counts as matched.
    fn record_as(&self, id: RuleId, outcome: Outcome, from_connection: bool, describe: impl FnOnce(&str) -> String) {
        let what = match &outcome {
            Outcome::Dropped => "dropped".to_string(),
            Outcome::Delayed(d) => format!("delayed {} ms", d.as_millis()),
            Outcome::ErrorInjected(c) => format!("error {c} injected"),
            Outcome::Reset => "connection reset".to_string(),
            Outcome::Throttled(d, n) => format!("throttled {} ms ({n} bytes)", d.as_millis()),
            Outcome::Held => "held until the heal".to_string(),
            Outcome::Resent(d) => format!("lost, sent again {} ms later", d.as_millis()),
            Outcome::Failed(why) => format!("forwarded unchanged ({why})"),
        };
        let sample = describe(&what);
        tracing::debug!(rule = id.0, "{sample}");
        let mut st = lock(&self.state);
        let Some(r) = st.rules.iter_mut().find(|r| r.id == id) else {
            return;
        };
        if from_connection {
            r.stats.matched += 1;
        }
        match outcome {
            Outcome::Dropped => r.stats.dropped += 1,
            Outcome::Delayed(_) => r.stats.delayed += 1,
            Outcome::ErrorInjected(_) => r.stats.errors_injected += 1,
            Outcome::Reset => r.stats.connections_reset += 1,
            Outcome::Throttled(_, n) => {
                r.stats.throttled += 1;
                r.stats.throttled_bytes += n as u64;
            }
            Outcome::Held => r.stats.held += 1,
            Outcome::Resent(_) => r.stats.resent += 1,
            Outcome::Failed(_) => {}
        }
        if r.stats.samples.len() < MAX_SAMPLES {
            r.stats.samples.push(sample);
            r.stats.sample_ms.push(wall_ms());
        }
    }

    pub(crate) fn register(&self, route: &Route, kill: Arc<watch::Sender<bool>>) -> u64 {
        let mut st = lock(&self.state);
        st.next_conn += 1;
        let id = st.next_conn;
        st.conns
            .insert(id, ConnEntry { source: None, node: route.node, kind: route.kind, client_id: String::new(), kill });
        id
    }

    pub(crate) fn unregister(&self, id: u64) {
        lock(&self.state).conns.remove(&id);
    }

    /// A connection's source is known: remember it, and reset the connection
    /// at once if a connection-level Reset rule names it. Returns whether it
    /// was reset.
    pub(crate) fn classified(&self, id: u64, source: &Peer, client_id: &str) -> bool {
        let hit = {
            let mut st = lock(&self.state);
            let Some(c) = st.conns.get_mut(&id) else {
                return false;
            };
            c.source = Some(source.clone());
            c.client_id = client_id.to_string();
            let (node, kind, kill) = (c.node, c.kind, c.kill.clone());
            st.rules
                .iter()
                .find(|r| {
                    r.rule.action == Action::Reset && r.rule.matches.connection_level() && {
                        let (f, b) = r.rule.matches.orientation(source, node);
                        f || b
                    }
                })
                .map(|r| (r.id, node, kind, kill))
        };
        match hit {
            Some((rule, node, kind, kill)) => {
                let _ = kill.send(true);
                self.record_as(rule, Outcome::Reset, true, |what| {
                    format!("new connection {source} → {} (client id '{client_id}'): {what}", destination(node, kind))
                });
                true
            }
            None => false,
        }
    }
}

/// The running proxy: a cheap handle (clones share it). Dropping the last
/// handle does not stop it; call [`Proxy::shutdown`].
#[derive(Clone)]
pub struct Proxy {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("routes", &self.shared.routes).finish_non_exhaustive()
    }
}

impl Proxy {
    /// Binds every route's listener and starts forwarding. `seed` drives
    /// jitter and probabilities, identically on every build.
    pub async fn start(routes: Vec<Route>, seed: u64) -> std::io::Result<Proxy> {
        Proxy::start_with(routes, seed, false).await
    }

    /// [`Proxy::start`] for brokers that advertise their own addresses: their addresses in
    /// Metadata, FindCoordinator and DescribeCluster answers become the routes' listen
    /// addresses ([`advertise`]), so clients stay on the proxy.
    pub async fn start_advertising(routes: Vec<Route>, seed: u64) -> std::io::Result<Proxy> {
        Proxy::start_with(routes, seed, true).await
    }

    async fn start_with(routes: Vec<Route>, seed: u64, advertise: bool) -> std::io::Result<Proxy> {
        let mut listeners = Vec::with_capacity(routes.len());
        for r in &routes {
            let l = tokio::net::TcpListener::bind(r.listen).await.map_err(|e| {
                std::io::Error::new(e.kind(), format!("proxy for node {} binding {}: {e}", r.node, r.listen))
            })?;
            listeners.push(l);
        }
        let (shutdown, _) = watch::channel(false);
        let (removals, _) = watch::channel(0u64);
        let shared = Arc::new(Shared {
            routes: routes.clone(),
            advertise,
            state: Mutex::new(State::default()),
            rule_count: AtomicUsize::new(0),
            rng: Mutex::new(SplitMix64::new(seed)),
            removals,
            shutdown,
            listeners: Mutex::new(vec![]),
        });
        let mut tasks = Vec::new();
        for (route, listener) in routes.into_iter().zip(listeners) {
            let shared2 = shared.clone();
            let mut stop = shared.shutdown.subscribe();
            tasks.push(tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = async { let _ = stop.wait_for(|s| *s).await; } => return,
                        accepted = listener.accept() => match accepted {
                            Ok((sock, _)) => {
                                tokio::spawn(conn::serve(shared2.clone(), route.clone(), sock));
                            }
                            Err(e) => {
                                tracing::warn!(listen = %route.listen, "proxy accept failed: {e}");
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                        }
                    }
                }
            }));
        }
        *lock(&shared.listeners) = tasks;
        Ok(Proxy { shared })
    }

    pub fn routes(&self) -> Vec<Route> {
        self.shared.routes.clone()
    }

    /// Starts the draws over from `seed`, as a fresh proxy would: a run on a
    /// cluster kept from an earlier run draws what it would have drawn alone.
    pub fn reseed(&self, seed: u64) {
        *lock(&self.shared.rng) = SplitMix64::new(seed);
    }

    /// How many rules are installed now (none once every fault is healed).
    pub fn active_rules(&self) -> usize {
        self.shared.rule_count.load(Ordering::Acquire)
    }

    pub fn add(&self, rule: Rule) -> RuleId {
        let mut st = lock(&self.shared.state);
        st.next_rule += 1;
        let id = RuleId(st.next_rule);
        let mut stats = RuleStats::default();
        // A connection-level Reset acts on the live connections it names now.
        if rule.action == Action::Reset && rule.matches.connection_level() {
            for c in st.conns.values() {
                let Some(src) = &c.source else { continue };
                let (f, b) = rule.matches.orientation(src, c.node);
                if f || b {
                    let _ = c.kill.send(true);
                    stats.matched += 1;
                    stats.connections_reset += 1;
                    if stats.samples.len() < MAX_SAMPLES {
                        stats.samples.push(format!(
                            "live connection {src} → {} (client id '{}'): connection reset",
                            destination(c.node, c.kind),
                            c.client_id
                        ));
                    }
                }
            }
        }
        tracing::info!(rule = id.0, name = %rule.name, action = ?rule.action, "proxy rule added");
        st.rules.push(RuleEntry { id, rule, stats, seen: 0, link_free: [None, None] });
        self.shared.rule_count.store(st.rules.len(), Ordering::Release);
        id
    }

    /// The rule installed as `id`, while it is.
    pub fn rule(&self, id: RuleId) -> Option<Rule> {
        lock(&self.shared.state).rules.iter().find(|r| r.id == id).map(|r| r.rule.clone())
    }

    /// Removes the rule (held frames are released) and returns its final stats.
    pub fn remove(&self, id: RuleId) -> RuleStats {
        let stats = {
            let mut st = lock(&self.shared.state);
            let Some(pos) = st.rules.iter().position(|r| r.id == id) else {
                return st.finished.get(&id).cloned().unwrap_or_default();
            };
            let r = st.rules.remove(pos);
            self.shared.rule_count.store(st.rules.len(), Ordering::Release);
            st.finished.insert(id, r.stats.clone());
            r.stats
        };
        self.shared.removals.send_modify(|n| *n += 1);
        tracing::info!(rule = id.0, ?stats, "proxy rule removed");
        stats
    }

    /// The rule's stats so far (its final stats once removed).
    pub fn stats(&self, id: RuleId) -> RuleStats {
        let st = lock(&self.shared.state);
        match st.rules.iter().find(|r| r.id == id) {
            Some(r) => r.stats.clone(),
            None => st.finished.get(&id).cloned().unwrap_or_default(),
        }
    }

    /// Live connections: (source, destination node, client id).
    pub fn connections(&self) -> Vec<(Peer, i32, String)> {
        lock(&self.shared.state)
            .conns
            .values()
            .filter_map(|c| c.source.clone().map(|s| (s, c.node, c.client_id.clone())))
            .collect()
    }

    /// Stops accepting and closes every connection, without waiting (for
    /// `Drop` impls, which cannot await).
    pub fn stop(&self) {
        self.shared.shutdown.send_replace(true);
        for c in lock(&self.shared.state).conns.values() {
            let _ = c.kill.send(true);
        }
    }

    pub async fn shutdown(&self) {
        self.stop();
        let tasks = std::mem::take(&mut *lock(&self.shared.listeners));
        for t in tasks {
            let _ = t.await;
        }
    }
}

/// The source of a connection, from the client id of its first request.
/// Sink workers use `sinkhole-<mode>-<subtask>-<attempt>`; the Flink subject's producers
/// `producer-sinkhole-<run>-flink-kafkasink-<subtask>-<n>`.
pub fn classify(client_id: &str) -> Peer {
    if let Some(w) = worker_subtask(client_id) {
        return Peer::Worker(w);
    }
    // The Flink subject's producers: Kafka's Java client names a transactional producer
    // `producer-<its first transactional id>`, and KafkaSink's ids are
    // `sinkhole-<run>-flink-kafkasink-<subtask>-<n>`: subtask s's producers are worker s.
    if let Some(w) = client_id.strip_prefix("producer-").and_then(worker_subtask) {
        return Peer::Worker(w);
    }
    if let Some(b) = broker_id(client_id) {
        return Peer::Broker(b);
    }
    Peer::Other(client_id.to_string())
}

/// The node id in the client id of an inter-node connection.
///
/// Observed through this proxy on a 3-node Kafka 4.4.0 KRaft cluster
/// (combined nodes, static voters; `rig/tests/integration/proxy_live.rs` prints them):
/// - `"1"`, `"2"`, `"3"`: the node-to-controller channels (broker
///   registration and heartbeats, AlterPartition, forwarded requests) to the
///   active controller's controller listener: the bare node id;
/// - `raft-client-<id>`: KRaft (Fetch, Vote, BeginQuorumEpoch) between the
///   controller listeners (`KafkaRaftManager`'s network client);
/// - `broker-<id>-fetcher-<n>`: replica fetchers (`ReplicaFetcherThread`),
///   broker listener to broker listener;
/// - `broker-<id>-txn-marker-sender`: WriteTxnMarkers from the transaction
///   coordinator to partition leaders (`TransactionMarkerChannelManager`);
///   any other `broker-<id>-…` sender is taken as node `<id>` too;
/// - `AddPartitionsManager-client-<id>`: a partition leader verifying a
///   transactional Produce with the coordinator (AddPartitionsToTxn v4+,
///   `AddPartitionsToTxnManager`).
fn broker_id(client_id: &str) -> Option<i32> {
    let number = |s: &str| (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten();
    if let Some(id) = number(client_id) {
        return Some(id);
    }
    for prefix in ["raft-client-", "AddPartitionsManager-client-"] {
        if let Some(rest) = client_id.strip_prefix(prefix) {
            return number(rest);
        }
    }
    let rest = client_id.strip_prefix("broker-")?;
    number(rest.split('-').next()?)
}

/// `sinkhole-<mode>-<subtask>-<attempt>`: mode names hold '-' themselves
/// (`twopc-inject`, `rdkafka-txn`), so the numbers are read from the right.
fn worker_subtask(client_id: &str) -> Option<u32> {
    let rest = client_id.strip_prefix("sinkhole-")?;
    let (rest, attempt) = rest.rsplit_once('-')?;
    let (mode, subtask) = rest.rsplit_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if mode.is_empty() || !digits(attempt) || !digits(subtask) {
        return None;
    }
    subtask.parse().ok()
}

/// Pending requests of one connection, in the order they were sent, so a
/// response can be matched to its request and an injected answer is written
/// in its place in the response stream (Kafka clients require responses in
/// request order: Java's `NetworkClient` fails a connection on a correlation
/// id out of sequence).
#[derive(Default)]
pub(crate) struct Pending {
    pub queue: VecDeque<PendingEntry>,
}

pub(crate) enum PendingEntry {
    Forwarded {
        correlation_id: i32,
        api_key: i16,
        api_version: i16,
        transactional_ids: Vec<String>,
    },
    /// An answer the proxy wrote, waiting for the responses before it.
    Injected(bytes::Bytes),
}

#[cfg(test)]
mod tests;
