//! The external backend: a Kafka cluster the rig did not start and cannot signal
//! (`backend: external`, `sinkhole run --bootstrap`). The rig starts nothing; it learns the
//! nodes from the bootstrap's Metadata, acts on a node through the node-control adapter
//! ([`command`]: the scenario's command templates, `ssh {host} …`, `kubectl … {pod}`) and, with
//! no pid to watch, confirms every effect through the protocol ([`confirm`]): after a kill, stop
//! or pause the node stops answering; after a start, resume or restart it answers again and its
//! Metadata lists every node meant to run (the readiness rule of the other backends,
//! [`super::lookup::node_sees`]).
//!
//! Network faults act through the proxy where it can sit: between the rig's clients and the
//! brokers. The brokers advertise their own addresses, so the proxy rewrites them in the answers
//! that carry them (`sinkhole_faults::proxy::advertise`); broker↔broker traffic never crosses
//! it, so faults between broker groups are refused ([`unsupported_fault`]), as is the proxy on a
//! TLS listener (it would have to read encrypted Metadata).
//!
//! On teardown the rig leaves the cluster as it found it: nodes it took down are started (or
//! resumed) again; nothing is removed.
pub mod command;
mod confirm;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sinkhole_faults::proxy::{ListenerKind, Proxy, Route};
use sinkhole_workloads::wire::client::{Client, ClientConfig};
use sinkhole_workloads::wire::security::{self, Resolved, Security};

use super::{BoxFuture, Cluster, ClusterError, ClusterFuture, CommandEffect, Intent, NodeAction, NodeEffect, OnDown};
use crate::scenario::{ExternalSpec, FaultKind, FaultSpec};
use confirm::Want;

/// Why an external cluster could not be used or acted on; never carries a secret.
#[derive(Debug, thiserror::Error)]
pub enum ExternalError {
    #[error("cluster.external.security.{0}")]
    Security(#[from] security::SecurityError),
    #[error("the external cluster at {bootstrap}: {detail}")]
    Connect { bootstrap: String, detail: String },
    #[error("node {node}: the {action} command failed ({exit}): {command}{output}")]
    Command { node: i32, action: &'static str, command: String, exit: String, output: String },
}

impl From<ExternalError> for ClusterError {
    fn from(e: ExternalError) -> ClusterError {
        ClusterError::Backend(Box::new(e))
    }
}

/// One node of the external cluster.
#[derive(Debug, Clone)]
struct ExtNode {
    id: i32,
    /// Where the cluster advertises it (`host:port` from Metadata): the protocol's checks go
    /// here, around the proxy, so a network fault never reads as a node down.
    addr: String,
    /// The proxy's listener in front of it, when the cluster has the proxy.
    proxied: Option<SocketAddr>,
    /// What the rig last asked of it (Running at the start: the rig found it answering).
    intent: Intent,
}

impl ExtNode {
    fn bootstrap(&self) -> String {
        self.proxied.map(|a| a.to_string()).unwrap_or_else(|| self.addr.clone())
    }
}

/// A cluster reached at its bootstrap and acted on through command templates.
pub struct ExternalCluster {
    spec: ExternalSpec,
    nodes: Vec<ExtNode>,
    resolved: Option<Arc<Resolved>>,
    proxy: Option<Proxy>,
    torn_down: bool,
}

impl std::fmt::Debug for ExternalCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalCluster").field("bootstrap", &self.spec.bootstrap).field("nodes", &self.nodes).finish()
    }
}

impl ExternalCluster {
    /// Resolves the security (installing it for every client of this process), reads the
    /// cluster's nodes from Metadata and checks them against `brokers` and `external.nodes`;
    /// with `proxy_seed`, puts the proxy in front of every node's client listener.
    pub async fn connect(spec: ExternalSpec, brokers: usize, proxy_seed: Option<u64>) -> Result<Self, ClusterError> {
        let joined = spec.bootstrap.join(",");
        let connect_err = |detail: String| ExternalError::Connect { bootstrap: joined.clone(), detail };
        if spec.bootstrap.is_empty() {
            return Err(connect_err("no bootstrap: give cluster.external.bootstrap or --bootstrap".into()).into());
        }
        let resolved = match &spec.security {
            Some(s) => Some(Arc::new(s.resolve().map_err(ExternalError::from)?)),
            None => None,
        };
        security::install(resolved.clone());
        let redact = |s: String| security::redact(&s);
        let config = ClientConfig {
            client_id: "sinkhole-faults".into(),
            request_timeout: Duration::from_secs(10),
            retry_deadline: Duration::from_secs(30),
            ..ClientConfig::default()
        };
        let mut client =
            Client::connect(&spec.bootstrap, config).await.map_err(|e| connect_err(redact(e.to_string())))?;
        let md = client.metadata(Some(&[])).await.map_err(|e| connect_err(redact(format!("Metadata: {e}"))))?;
        let mut found: Vec<(i32, String)> =
            md.brokers.iter().map(|b| (b.node_id, format!("{}:{}", b.host, b.port))).collect();
        found.sort();
        let ids: Vec<i32> = found.iter().map(|(id, _)| *id).collect();
        if found.len() != brokers {
            return Err(connect_err(format!(
                "Metadata lists {} broker(s) {ids:?}, but cluster.brokers is {brokers}",
                found.len()
            ))
            .into());
        }
        if !spec.nodes.is_empty() {
            let listed: Vec<i32> = spec.nodes.keys().copied().collect();
            if listed != ids {
                return Err(connect_err(format!(
                    "Metadata lists nodes {ids:?}, but cluster.external.nodes names {listed:?}"
                ))
                .into());
            }
        }
        let mut nodes: Vec<ExtNode> =
            found.into_iter().map(|(id, addr)| ExtNode { id, addr, proxied: None, intent: Intent::Running }).collect();
        let mut cluster = ExternalCluster { spec, nodes: vec![], resolved, proxy: None, torn_down: false };
        if let Some(seed) = proxy_seed {
            if cluster.resolved.as_ref().is_some_and(|r| r.tls.is_some()) {
                return Err(ClusterError::Unsupported(
                    "the proxy cannot sit in a TLS connection (it rewrites the brokers' addresses in Metadata): \
                     network and protocol faults need a PLAINTEXT or SASL_PLAINTEXT listener"
                        .into(),
                ));
            }
            let mut routes = Vec::with_capacity(nodes.len());
            for n in &mut nodes {
                let upstream = tokio::net::lookup_host(n.addr.as_str())
                    .await
                    .ok()
                    .and_then(|mut a| a.next())
                    .ok_or_else(|| connect_err(format!("node {}'s address {} does not resolve", n.id, n.addr)))?;
                let port = super::ports::free_ports(1)?[0];
                let listen = SocketAddr::from(([127, 0, 0, 1], port));
                n.proxied = Some(listen);
                routes.push(Route { node: n.id, kind: ListenerKind::Broker, listen, upstream });
            }
            let proxy = Proxy::start_advertising(routes, seed)
                .await
                .map_err(|e| ClusterError::Unsupported(format!("starting the proxy: {e}")))?;
            cluster.proxy = Some(proxy);
        }
        cluster.nodes = nodes;
        Ok(cluster)
    }

    fn index(&self, id: i32) -> Result<usize, ClusterError> {
        self.nodes
            .iter()
            .position(|n| n.id == id)
            .ok_or_else(|| ClusterError::UnknownNode { id, known: self.nodes.iter().map(|n| n.id).collect() })
    }

    /// The template for `name`, or why the action cannot be taken.
    fn template(&self, name: &'static str) -> Option<String> {
        self.spec.commands.each().iter().find(|(n, _)| *n == name).and_then(|(_, t)| t.map(str::to_string))
    }

    fn redactor(&self) -> impl Fn(&str) -> String + Sync + '_ {
        move |s: &str| match &self.resolved {
            Some(r) => r.redact(s),
            None => s.to_string(),
        }
    }

    /// Runs template `name` on node `i` and waits until the protocol shows `want` (or
    /// `deadline` passes); the command's failure is an error with its redacted output.
    async fn step(
        &self,
        i: usize,
        name: &'static str,
        want: Want,
        deadline: Duration,
    ) -> Result<CommandEffect, ClusterError> {
        let node = &self.nodes[i];
        let template = self.template(name).ok_or_else(|| no_command(node.id, name))?;
        let target = self.spec.nodes.get(&node.id);
        let command = command::render(&template, node.id, target).map_err(ClusterError::Unsupported)?;
        let redact = self.redactor();
        let shown = redact(&command);
        let started = Instant::now();
        let ran = command::run(&command, Duration::from_millis(self.spec.command_timeout_ms), &redact).await;
        tracing::info!(node = node.id, action = name, exit = ?ran.exit, ran_ms = ran.ran_ms, "node command ran");
        if !ran.ok() {
            return Err(ExternalError::Command {
                node: node.id,
                action: name,
                command: shown,
                exit: ran.exit.map(|c| format!("exit {c}")).unwrap_or_else(|| "no exit code".into()),
                output: if ran.output.is_empty() { String::new() } else { format!("\n{}", ran.output) },
            }
            .into());
        }
        let expected: Vec<i32> =
            self.nodes.iter().filter(|n| n.id == node.id || n.intent == Intent::Running).map(|n| n.id).collect();
        let seen = confirm::wait_for(&node.addr, want, &expected, started, deadline.max(Duration::from_secs(5))).await;
        let status = match self.template("status") {
            Some(t) => match command::render(&t, node.id, target) {
                Ok(c) => {
                    Some(command::run(&c, Duration::from_millis(self.spec.command_timeout_ms), &redact).await.output)
                }
                Err(e) => Some(e),
            },
            None => None,
        };
        Ok(CommandEffect {
            action: name.to_string(),
            command: shown,
            exit: ran.exit,
            ran_ms: ran.ran_ms,
            output: ran.output,
            observed: seen.observed,
            confirmed: seen.confirmed,
            after_ms: seen.after_ms,
            status,
        })
    }

    async fn apply(
        &mut self,
        id: i32,
        action: NodeAction,
        timeout: Duration,
        mut on_down: Option<OnDown>,
    ) -> Result<NodeEffect, ClusterError> {
        let i = self.index(id)?;
        let started = Instant::now();
        let mut effect = NodeEffect::new(id, action);
        let state = self.nodes[i].intent;
        let wrong = || ClusterError::WrongState { id, state, action };
        match action {
            NodeAction::Kill | NodeAction::Stop => {
                if !matches!(state, Intent::Running | Intent::Paused) {
                    return Err(wrong());
                }
                let name = if action == NodeAction::Kill { "kill" } else { "stop" };
                effect.commands.push(self.step(i, name, Want::Down, timeout).await?);
                self.nodes[i].intent = if action == NodeAction::Kill { Intent::Killed } else { Intent::Stopped };
                super::node::tell_down(&mut on_down, &effect, started);
            }
            NodeAction::Pause => {
                if state != Intent::Running {
                    return Err(wrong());
                }
                effect.commands.push(self.step(i, "pause", Want::Down, timeout).await?);
                self.nodes[i].intent = Intent::Paused;
            }
            NodeAction::Resume => {
                if state != Intent::Paused {
                    return Err(wrong());
                }
                let e = self.step(i, "resume", Want::Up, timeout).await?;
                effect.ready = Some(e.confirmed);
                effect.commands.push(e);
                self.nodes[i].intent = Intent::Running;
            }
            NodeAction::Start => {
                if matches!(state, Intent::Running | Intent::Paused) {
                    return Err(wrong());
                }
                super::node::tell_down(&mut on_down, &effect, started);
                let e = self.step(i, "start", Want::Up, timeout).await?;
                effect.ready = Some(e.confirmed);
                effect.commands.push(e);
                self.nodes[i].intent = Intent::Running;
            }
            NodeAction::Restart => {
                if self.template("restart").is_some() {
                    // One command does both halves; the node is down somewhere inside it.
                    super::node::tell_down(&mut on_down, &effect, started);
                    let e = self.step(i, "restart", Want::Up, timeout).await?;
                    effect.ready = Some(e.confirmed);
                    effect.commands.push(e);
                } else {
                    // Kafka's own rolling-restart order: a controlled shutdown, then a start.
                    if matches!(state, Intent::Running | Intent::Paused) {
                        effect.commands.push(self.step(i, "stop", Want::Down, timeout).await?);
                        self.nodes[i].intent = Intent::Stopped;
                    }
                    super::node::tell_down(&mut on_down, &effect, started);
                    let e = self.step(i, "start", Want::Up, timeout).await?;
                    effect.ready = Some(e.confirmed);
                    effect.commands.push(e);
                }
                self.nodes[i].intent = Intent::Running;
            }
        }
        effect.elapsed_ms = started.elapsed().as_millis() as u64;
        Ok(effect)
    }

    async fn await_ready(&mut self, timeout: Duration) -> Result<(), ClusterError> {
        let ids: Vec<i32> = self.nodes.iter().filter(|n| n.intent == Intent::Running).map(|n| n.id).collect();
        let started = Instant::now();
        for n in self.nodes.iter().filter(|n| n.intent == Intent::Running) {
            let left = timeout.saturating_sub(started.elapsed());
            let seen = confirm::wait_for(&n.addr, Want::Up, &ids, started, left).await;
            if !seen.confirmed {
                return Err(ClusterError::NotReady {
                    secs: started.elapsed().as_secs_f64(),
                    detail: format!("node {}: {}", n.id, seen.observed),
                });
            }
        }
        Ok(())
    }

    /// Brings back the nodes the rig took down, so the cluster is left as it was found.
    async fn restore(&mut self) {
        if std::mem::replace(&mut self.torn_down, true) {
            return;
        }
        let timeout = Duration::from_secs(60);
        for id in self.nodes.iter().map(|n| n.id).collect::<Vec<_>>() {
            let Ok(i) = self.index(id) else { continue };
            let action = match self.nodes[i].intent {
                Intent::Running => continue,
                Intent::Paused => NodeAction::Resume,
                Intent::Stopped | Intent::Killed => NodeAction::Start,
            };
            match self.apply(id, action, timeout, None).await {
                Ok(e) if e.ready == Some(true) => {
                    tracing::info!(node = id, ?action, "node restored")
                }
                Ok(e) => tracing::warn!(node = id, ?action, ?e, "node restored, not confirmed"),
                Err(e) => tracing::warn!(node = id, ?action, "node not restored: {e}"),
            }
        }
        if let Some(p) = self.proxy.take() {
            p.shutdown().await;
        }
    }
}

fn no_command(node: i32, name: &str) -> ClusterError {
    ClusterError::Unsupported(format!(
        "node {node}: cluster.external.commands has no {name} command, so the rig cannot {name} it"
    ))
}

/// The node-control commands a fault of `kind` runs (any one of the inner lists' sets will do).
fn commands_for(kind: FaultKind) -> &'static [&'static [&'static str]] {
    match kind {
        // Killed and stopped brokers are started again (after duration_ms, or when the job ends).
        FaultKind::BrokerKill => &[&["kill", "start"]],
        FaultKind::BrokerStop => &[&["stop", "start"]],
        FaultKind::BrokerPause => &[&["pause", "resume"]],
        FaultKind::BrokerRestart | FaultKind::RollingRestart => &[&["restart"], &["stop", "start"]],
        _ => &[],
    }
}

/// Why fault `f` cannot run on this external cluster (None: it can): a node fault without the
/// commands it needs, `net-blackhole` (the proxy cannot cut brokers off each other), a fault
/// between broker groups (their traffic never crosses the proxy), or any proxy fault on TLS.
pub fn unsupported_fault(f: &FaultSpec, spec: &ExternalSpec) -> Option<String> {
    use crate::scenario::Group;
    let kind = f.kind.kind();
    let label = f.name.clone().unwrap_or_else(|| f.kind.name().to_string());
    let have = |c: &&str| spec.commands.each().iter().any(|(n, t)| n == c && t.is_some());
    let needs = commands_for(kind);
    if !needs.is_empty() && !needs.iter().any(|set| set.iter().all(have)) {
        let want: Vec<String> = needs.iter().map(|s| s.join(" and ")).collect();
        return Some(format!(
            "fault {label}: {} needs the {} command(s) under cluster.external.commands",
            kind.name(),
            want.join(", or ")
        ));
    }
    if !kind.needs_proxy() {
        return None;
    }
    if spec.security.as_ref().is_some_and(|s| s.protocol.tls()) {
        return Some(format!(
            "fault {label}: {} acts through the proxy, which cannot read a TLS listener's traffic",
            kind.name()
        ));
    }
    if kind == FaultKind::NetBlackhole {
        return Some(format!(
            "fault {label}: net-blackhole cuts a broker off its peers too, and on an external cluster the \
             proxy carries only the rig's client↔broker traffic: use net-partition from [workers] to the broker"
        ));
    }
    let brokers = |g: Option<&[Group]>| g.into_iter().flatten().any(|g| matches!(g, Group::Brokers | Group::Broker(_)));
    if brokers(f.kind.from()) && brokers(f.kind.to()) {
        return Some(format!(
            "fault {label}: {} between broker groups needs broker↔broker traffic through the proxy, and on an \
             external cluster the proxy carries only client↔broker traffic: use the local backend",
            kind.name()
        ));
    }
    None
}

impl Cluster for ExternalCluster {
    fn backend(&self) -> &'static str {
        "external"
    }

    fn node_ids(&self) -> Vec<i32> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    fn bootstrap_list(&self) -> Vec<String> {
        self.nodes.iter().map(ExtNode::bootstrap).collect()
    }

    fn bootstrap(&self) -> String {
        self.nodes.iter().filter(|n| n.intent == Intent::Running).map(ExtNode::bootstrap).collect::<Vec<_>>().join(",")
    }

    fn act_with(
        &mut self,
        node: i32,
        action: NodeAction,
        timeout: Duration,
        on_down: Option<OnDown>,
    ) -> ClusterFuture<'_, NodeEffect> {
        Box::pin(self.apply(node, action, timeout, on_down))
    }

    fn wait_ready(&mut self, timeout: Duration) -> ClusterFuture<'_, ()> {
        Box::pin(self.await_ready(timeout))
    }

    fn proxy(&self) -> Option<Proxy> {
        self.proxy.clone()
    }

    fn security(&self) -> Option<Security> {
        self.spec.security.clone()
    }

    fn teardown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(self.restore())
    }
}

#[cfg(test)]
mod tests;
