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
use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Frames {
    Request,
    Response,
}

/// Which frames a rule acts on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Match {
    /// Sources and destinations (empty = any). A frame matches when its
    /// connection goes from a peer in `from` to a peer in `to`, or — with
    /// `both_ways` — from `to` to `from`; then requests travel from → to and
    /// responses to → from, and `direction_from_to_only` below restricts
    /// which of them.
    pub from: Vec<PeerGroup>,
    pub to: Vec<PeerGroup>,
    pub both_ways: bool,
    /// Only bytes travelling from a `from` peer towards a `to` peer (one-way
    /// partition); false = both directions of the matched connections.
    pub one_way: bool,
    /// Kafka API keys (empty = any).
    pub api_keys: Vec<i16>,
    /// Request or response frames (None = both).
    pub frames: Option<Frames>,
    /// Only frames of this transactional id (requests carrying one, and the
    /// responses to them).
    pub transactional_id: Option<String>,
    /// Only the n-th matching frame (1-based).
    pub nth: Option<u64>,
    /// Act on a matching frame with this probability (seeded).
    pub probability: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "action")]
pub enum Action {
    /// Swallow the frame (the connection stays open).
    Drop,
    /// Hold the frame delay_ms ± jitter_ms (order on the connection kept).
    Delay { delay_ms: u64, jitter_ms: u64 },
    /// Requests: answer with this error code instead of forwarding.
    /// Responses: replace the error codes in the response.
    Error { code: i16 },
    /// Reset (RST) matching connections now and new ones at once.
    Reset,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    pub name: String,
    pub matches: Match,
    pub action: Action,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RuleId(pub u64);

/// What a rule matched and did: the confirmed effect of a fault.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuleStats {
    pub matched: u64,
    pub dropped: u64,
    pub delayed: u64,
    pub errors_injected: u64,
    pub connections_reset: u64,
    /// Up to 20 descriptions of frames acted on, e.g.
    /// "EndTxn v5 response corr 17 tid sinkhole-x-0-3 worker-0 → broker-2: dropped".
    pub samples: Vec<String>,
}

impl RuleStats {
    /// The rule acted on at least one frame or connection.
    pub fn acted(&self) -> bool {
        self.dropped + self.delayed + self.errors_injected + self.connections_reset > 0
    }
}

/// The running proxy: a cheap handle (clones share it). Dropping the last
/// handle does not stop it; call [`Proxy::shutdown`].
#[derive(Debug, Clone)]
pub struct Proxy {
    _private: (),
}

impl Proxy {
    /// Binds every route's listener and starts forwarding. `seed` drives
    /// jitter and probabilities.
    pub async fn start(routes: Vec<Route>, seed: u64) -> std::io::Result<Proxy> {
        let _ = (routes, seed);
        Err(std::io::Error::other("the proxy is not built yet"))
    }

    pub fn routes(&self) -> Vec<Route> {
        vec![]
    }

    pub fn add(&self, rule: Rule) -> RuleId {
        let _ = rule;
        RuleId(0)
    }

    /// Removes the rule (held frames are released) and returns its final stats.
    pub fn remove(&self, id: RuleId) -> RuleStats {
        let _ = id;
        RuleStats::default()
    }

    pub fn stats(&self, id: RuleId) -> RuleStats {
        let _ = id;
        RuleStats::default()
    }

    /// Live connections: (source, destination node, client id).
    pub fn connections(&self) -> Vec<(Peer, i32, String)> {
        vec![]
    }

    pub async fn shutdown(&self) {}
}

/// The source of a connection, from the client id of its first request.
/// Sink workers use `sinkhole-<mode>-<subtask>-<attempt>`.
pub fn classify(client_id: &str) -> Peer {
    Peer::Other(client_id.to_string())
}
