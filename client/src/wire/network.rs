//! The client's connections and its request loop: what Java's
//! `NetworkClient` (bootstrap, one connection per broker, reconnects, the
//! metadata refresh after a broken connection) and `Sender` (send, classify
//! the answer, back off, retry) do for the producer. The behaviour is
//! described in [`client`](super::client)'s docs.
//!
//! Every new connection is brought up here in Java's order: TCP, ApiVersions
//! ([`fetch_api_versions`]), then SASL when configured, then (at bootstrap)
//! Metadata. The request loop `Client::call` is what the RPC files send
//! through.
use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use tracing::debug;

use super::api_versions::{fetch_api_versions, ApiVersionsInfo};
use super::client::{
    txn_key, BrokerConn, BrokerInfo, Call, Client, ClientConfig, ClusterMetadata, Reply, Retrier, Target,
};
use super::connection::Connection;
use super::error::{CoordinatorAction, WireError};
use super::find_coordinator::KEY_TYPE_TRANSACTION;
use super::metadata::fetch_metadata;
use super::sasl;

/// Connects to `addr` and runs ApiVersions on the new connection.
pub(super) async fn open_addr(config: &ClientConfig, addr: &str) -> Result<BrokerConn, WireError> {
    let security = config.security.as_deref();
    let mut conn = match security.and_then(|s| s.tls.as_ref()) {
        Some(tls) => Connection::connect_tls(addr, &config.client_id, config.request_timeout, tls).await?,
        None => Connection::connect(addr, &config.client_id, config.request_timeout).await?,
    };
    let versions = fetch_api_versions(&mut conn, config.request_timeout).await?;
    // Java's `SaslClientAuthenticator` order: ApiVersions, then the SASL
    // exchange, before any other request on the connection. The sink's own
    // principal (ACL scenarios) wins over the process's security.
    if let Some(creds) = &config.sasl {
        sasl::authenticate(&mut conn, &versions, creds, config.request_timeout).await?;
    } else if let Some(s) = security.and_then(|s| s.sasl.as_ref()) {
        sasl::authenticate_with(&mut conn, &versions, s, config.request_timeout).await?;
    }
    Ok(BrokerConn { conn, versions })
}

impl Client {
    /// Whether the broker at `addr` answers now: a connection, ApiVersions, and the
    /// authentication the configuration asks for — nothing cached, nothing kept. What the
    /// rig asks of a node it cannot watch as a process (an external cluster's).
    pub async fn probe(config: &ClientConfig, addr: &str) -> Result<(), WireError> {
        open_addr(config, addr).await.map(drop)
    }
}

impl Client {
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
    pub(super) async fn bootstrap(&mut self) -> Result<i32, WireError> {
        let mut tried = Vec::new();
        let mut last = String::new();
        for addr in self.bootstrap.clone() {
            tried.push(addr.clone());
            match self.bootstrap_one(&addr).await {
                Ok(node) => return Ok(node),
                // Authentication failures are not retried (Java's
                // `SaslAuthenticationException` is fatal to the client).
                Err(e) if e.is_authentication_error() => return Err(e),
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

    // ----- what a broker supports -------------------------------------------

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
}
