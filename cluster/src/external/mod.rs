//! The external backend: a Kafka cluster the rig did not start and cannot signal
//! (`backend: external`, `sinkhole run --bootstrap`). The rig starts nothing; it learns the
//! nodes from the bootstrap's Metadata, acts on a node through the node-control adapter
//! ([`command`]: the scenario's command templates, `ssh {host} …`, `kubectl … {pod}`) and, with
//! no pid to watch, confirms every effect through the protocol ([`confirm`]): after a kill, stop
//! or pause the node stops answering; after a start, resume or restart it answers again and its
//! Metadata lists every node meant to run (the readiness rule of the other backends,
//! [`super::lookup::node_sees`]). The commands are this backend's steps of the node lifecycle
//! ([`NodeOps`]); which run for an action, and in what order, is [`super::lifecycle`]'s — with
//! one difference only this backend has: a `restart` command does both halves of a restart.
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

use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_client::wire::security::{self, ResolveSecurity, Resolved, Security};
use sinkhole_faults::proxy::{ListenerKind, Proxy, Route};

use super::lifecycle::{self, NodeEntry, NodeOps, RestartBy, Sight, Signal};
use super::{BoxFuture, Cluster, ClusterError, CommandEffect, Intent, NodeAction, NodeEffect};
use confirm::Want;
use sinkhole_scenario::{ExternalSpec, FaultKind, FaultSpec};

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
pub struct ExtNode {
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
            match lifecycle::act(self, id, action, timeout, None).await {
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
    use sinkhole_scenario::Group;
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

impl NodeEntry for ExtNode {
    fn id(&self) -> i32 {
        self.id
    }
    fn intent(&self) -> Intent {
        self.intent
    }
    fn set_intent(&mut self, to: Intent) {
        self.intent = to;
    }
    fn bootstrap(&self) -> String {
        ExtNode::bootstrap(self)
    }
}

/// An external node's steps are its command templates, each confirmed through the protocol
/// (`ExternalCluster::step`). With no pid to watch, what the rig sees of a node is what it last
/// asked of it: a node meant to run or paused is alive, a stopped or killed one is down.
impl NodeOps for ExternalCluster {
    type Node = ExtNode;
    type Hold = ();

    fn nodes(&self) -> &[ExtNode] {
        &self.nodes
    }

    fn nodes_mut(&mut self) -> &mut [ExtNode] {
        &mut self.nodes
    }

    /// One `restart` command does both halves when the scenario has one; the node is down
    /// somewhere inside it.
    fn restart_by(&self) -> RestartBy {
        match self.template("restart") {
            Some(_) => RestartBy::OneStep,
            None => RestartBy::StopThenStart,
        }
    }

    async fn look(&mut self, i: usize) -> Result<Sight<()>, ClusterError> {
        Ok(match self.nodes[i].intent {
            Intent::Running => Sight::Up(()),
            Intent::Paused => Sight::Frozen(()),
            Intent::Stopped | Intent::Killed => Sight::Down,
        })
    }

    /// A resumed node is confirmed answering: that is its readiness.
    async fn signal(
        &mut self,
        i: usize,
        _: &(),
        signal: Signal,
        timeout: Duration,
        effect: &mut NodeEffect,
    ) -> Result<(), ClusterError> {
        let (name, want) = match signal {
            Signal::Kill => ("kill", Want::Down),
            Signal::Stop => ("stop", Want::Down),
            Signal::Pause => ("pause", Want::Down),
            Signal::Resume => ("resume", Want::Up),
        };
        let e = self.step(i, name, want, timeout).await?;
        if signal == Signal::Resume {
            effect.ready = Some(e.confirmed);
        }
        effect.commands.push(e);
        Ok(())
    }

    async fn start(&mut self, i: usize, timeout: Duration, effect: &mut NodeEffect) -> Result<(), ClusterError> {
        effect.commands.push(self.step(i, "start", Want::Up, timeout).await?);
        Ok(())
    }

    async fn restart(&mut self, i: usize, timeout: Duration, effect: &mut NodeEffect) -> Result<(), ClusterError> {
        effect.commands.push(self.step(i, "restart", Want::Up, timeout).await?);
        Ok(())
    }

    /// The start (or restart) command's own confirmation: it ran until the protocol showed the
    /// node answering and listing the others, or its deadline passed.
    async fn await_node_ready(&mut self, _: usize, _: Duration, effect: &mut NodeEffect) -> Result<(), ClusterError> {
        effect.ready = Some(effect.commands.last().is_some_and(|c| c.confirmed));
        Ok(())
    }

    async fn await_ready(&mut self, timeout: Duration) -> Result<(), ClusterError> {
        ExternalCluster::await_ready(self, timeout).await
    }
}

#[cfg(test)]
mod tests;
