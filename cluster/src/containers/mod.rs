//! The `containers` cluster backend: Kafka brokers as containers, through the `testcontainers`
//! crate, on any engine with the Docker API (Docker, or Podman's `podman system service`).
//!
//! Each node is a KRaft combined broker+controller (as [`super::config`] wires the local backend)
//! in a container of its own, on a network created for the run, named and resolvable by its
//! container name. Three listeners: `INTERNAL` (inter-broker, by container name), `CONTROLLER`
//! (the static voter set, by container name) and `EXTERNAL`, published on a host port picked up
//! front on 127.0.0.1 and advertised as `127.0.0.1:<port>`, so the rig and the workers on the host
//! reach every broker directly. The container's command writes `server.properties` from the
//! environment, formats the storage with Kafka's `StorageTool` (`--ignore-formatted`, so a
//! restart keeps the data in the container's own layer) and execs the broker; its stdout is the
//! broker's log, collected into `node-<id>/server.log` in the cluster's directory at teardown.
//!
//! Lifecycle actions go through the engine and are confirmed by inspecting the container
//! afterwards: `kill` is the engine's SIGKILL, `stop` the engine's SIGTERM with a grace period
//! (the broker's controlled shutdown), `pause`/`resume` the cgroup freezer (a paused broker keeps
//! its sockets and answers nothing), `start`/`restart` start the same container again (same node
//! id, same data). Every action reports what the engine showed after it.
//!
//! Nothing outlives the run: every container and the network carry `sinkhole.run=<id>` and
//! `sinkhole.owner=<pid>:<start ticks>`; teardown removes them by label (and the containers'
//! anonymous volumes), Drop does the same on a panic, a reaper process (the `sinkhole` binary,
//! when the caller names it) does it when the rig dies by a signal, and every start first removes
//! what a dead rig left behind.
//!
//! With [`ContainersSpec::proxy`], the rig's Kafka-aware proxy ([`sinkhole_faults::proxy`]) runs
//! on the host in front of every node's published `EXTERNAL` listener, which then advertises the
//! proxy's port: every client↔broker connection (workers, the rig's own clients) crosses it, so
//! network faults between workers and brokers and every protocol fault act here as they do on
//! the local backend. `INTERNAL` and `CONTROLLER` traffic stays on the run's network and is not
//! proxied: a broker↔broker partition cannot be made by the proxy on this backend.
//!
//! The backend's files: this one holds the cluster (start, teardown, the state-file hand-over,
//! the [`Cluster`] implementation); `create` has the steps of a start (the engine made ready,
//! the image, the network, the proxy, each node's container); [`engine`] talks to the engine as
//! a whole (its address, labels, removal of a run, the reaper); `container` acts on one node's
//! container (the lifecycle's steps, [`crate::lifecycle`]) and waits for it; `network`
//! disconnects and reconnects a node; `props` writes a node's configuration and command;
//! [`image`] builds the image where no registry is reachable.
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::process::Child;
use std::time::Duration;

use sinkhole_base::rundir::ClusterDir;
use sinkhole_faults::proxy::Proxy;
use sinkhole_scenario::Jit;
use testcontainers::bollard::Docker;
use testcontainers::{ContainerAsync, GenericImage};

use super::lifecycle::NodeOps;
use super::ports;
use super::state::{ContainersNodeRecord, ContainersRecord};
use super::{new_cluster_id, BoxFuture, Cluster, ClusterError, ClusterFuture, Intent, NetworkEffect};

mod container;
mod create;
pub mod engine;
pub mod image;
mod network;
mod props;

pub use container::EngineState;
use engine::{block_on_own_thread, owner, short_name, spawn_reaper};
pub use engine::{
    docker_host, engine, engine_available, export_docker_host, leftovers, podman_service_socket,
    reap_when_stdin_closes, remove_orphans, remove_run, ContainersError, DETACHED_OWNER, OWNER_LABEL, RUN_LABEL,
};
pub use props::render;

/// How to build a containers cluster.
#[derive(Debug, Clone)]
pub struct ContainersSpec {
    pub nodes: usize,
    /// Kafka version: picks the default image and is recorded.
    pub version: String,
    /// The image; default: `localhost/sinkhole-kafka:<version>` if the engine has it, else
    /// `apache/kafka:<version>` (pulled).
    pub image: Option<String>,
    pub broker_config: BTreeMap<String, String>,
    /// JVM max heap, e.g. "512m".
    pub heap: String,
    /// The brokers' JIT compilers ([`crate::jvm`]).
    pub jit: Jit,
    /// The cluster's directory on the host: `node-<id>/server.log` is collected here.
    pub dir: PathBuf,
    /// The run id, the value of the `sinkhole.run` label.
    pub run_id: String,
    pub ready_timeout: Duration,
    /// The `sinkhole` binary: when set, a reaper process removes the run's containers and network
    /// if this process dies without tearing down (a signal, `kill -9`).
    pub reaper: Option<PathBuf>,
    /// Outlives this process (`sinkhole cluster up`): no reaper, and dropping the value leaves
    /// the containers running.
    pub detached: bool,
    /// Put the rig's Kafka-aware proxy, with this seed, in front of every node's host-facing
    /// listener (None: no proxy). The proxy lives in this process, so a detached cluster cannot
    /// have one.
    pub proxy: Option<u64>,
}

impl ContainersSpec {
    pub fn new(version: &str, nodes: usize, dir: PathBuf, run_id: &str) -> ContainersSpec {
        ContainersSpec {
            nodes,
            version: version.to_string(),
            image: None,
            broker_config: BTreeMap::new(),
            heap: "512m".into(),
            jit: Jit::default(),
            dir,
            run_id: run_id.to_string(),
            ready_timeout: Duration::from_secs(120),
            reaper: None,
            detached: false,
            proxy: None,
        }
    }
}

/// One node: its container and the host port its `EXTERNAL` listener is published on.
pub struct ContainersNode {
    pub node_id: i32,
    /// The container name: its hostname on the run's network.
    pub name: String,
    pub host_port: u16,
    /// The proxy's port in front of `host_port`, advertised instead of it, when the cluster has
    /// the proxy.
    pub proxy_port: Option<u16>,
    pub container_id: String,
    pub intent: Intent,
    container: Option<ContainerAsync<GenericImage>>,
}

impl std::fmt::Debug for ContainersNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainersNode")
            .field("node_id", &self.node_id)
            .field("name", &self.name)
            .field("host_port", &self.host_port)
            .field("proxy_port", &self.proxy_port)
            .field("container_id", &self.container_id)
            .field("intent", &self.intent)
            .finish()
    }
}

impl ContainersNode {
    /// Where clients reach the node: the proxy's port when there is one (the rig's own clients
    /// cross it too, as on the local backend; the proxy never faults them), else the published
    /// port.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.proxy_port.unwrap_or(self.host_port))
    }
}

/// A running containers cluster.
pub struct ContainersCluster {
    pub version: String,
    pub image: String,
    pub cluster_id: String,
    pub run_id: String,
    pub network: String,
    pub dir: PathBuf,
    pub nodes: Vec<ContainersNode>,
    docker: Docker,
    reaper: Option<Child>,
    torn_down: bool,
    proxy: Option<Proxy>,
}

impl std::fmt::Debug for ContainersCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainersCluster")
            .field("image", &self.image)
            .field("run_id", &self.run_id)
            .field("network", &self.network)
            .field("nodes", &self.nodes)
            .finish()
    }
}

impl ContainersCluster {
    /// Creates the network and the containers, starts them and waits until the cluster is ready;
    /// a start that fails removes what it created (the steps are in `create`).
    pub async fn start(spec: ContainersSpec) -> Result<ContainersCluster, ClusterError> {
        create::check(&spec)?;
        let docker = create::ready_engine().await?;
        let image = create::pick_image(&docker, &spec).await;
        let dir = std::path::absolute(&spec.dir)
            .map_err(|source| ClusterError::Io { what: format!("resolving {}", spec.dir.display()), source })?;
        fs::create_dir_all(&dir)
            .map_err(|source| ClusterError::Io { what: format!("creating {}", dir.display()), source })?;
        let short = short_name(&spec.run_id);
        let network = format!("sinkhole-{short}");
        let owner = if spec.detached { DETACHED_OWNER.to_string() } else { owner() };
        create::create_network(&docker, &network, &spec.run_id, &owner).await?;
        let reaper =
            spec.reaper.as_deref().filter(|_| !spec.detached).and_then(|bin| spawn_reaper(bin, &spec.run_id, &dir));
        let addrs = ports::allocate(spec.nodes, None)?;
        // The proxy's listeners, distinct from the published ports (only their broker port is used).
        let proxied = match spec.proxy {
            Some(_) => Some(ports::allocate_proxy(&addrs, &[])?),
            None => None,
        };
        let names: Vec<(i32, String)> =
            addrs.iter().map(|a| (a.node_id, format!("sinkhole-{short}-kafka-{}", a.node_id))).collect();
        let mut cluster = ContainersCluster {
            version: spec.version.clone(),
            image,
            cluster_id: new_cluster_id(),
            run_id: spec.run_id.clone(),
            network,
            dir,
            nodes: Vec::new(),
            docker,
            reaper,
            torn_down: false,
            proxy: None,
        };
        if let (Some(p), Some(seed)) = (&proxied, spec.proxy) {
            cluster.start_proxy(&addrs, p, seed).await?;
        }
        for (i, (addr, (id, name))) in addrs.iter().zip(&names).enumerate() {
            let proxy_port = proxied.as_ref().map(|p| p[i].broker_port);
            let node = create::NewNode { id: *id, name, host_port: addr.broker_port, proxy_port };
            cluster.start_node(&spec, &owner, &names, node).await?;
        }
        if let Err(e) = cluster.await_ready(spec.ready_timeout).await {
            cluster.collect_logs().await;
            cluster.remove_all().await;
            return Err(e);
        }
        Ok(cluster)
    }

    pub fn node(&self, id: i32) -> Result<&ContainersNode, ClusterError> {
        Ok(&self.nodes[self.index(id)?])
    }

    pub fn log_path(&self, id: i32) -> PathBuf {
        ClusterDir::at(&self.dir).node_log(id)
    }

    /// Collects the logs, removes every container (and its anonymous volumes) and the network of
    /// the run, and ends the reaper. Idempotent.
    async fn remove_all(&mut self) {
        if self.torn_down {
            return;
        }
        self.torn_down = true;
        if !self.nodes.is_empty() {
            self.collect_logs().await;
        }
        for n in &mut self.nodes {
            if let Some(c) = n.container.take() {
                // rm() marks the container dropped, so its Drop does not try again.
                if let Err(e) = c.rm().await {
                    tracing::debug!(node = n.node_id, "removing the container: {e}");
                }
            }
            n.intent = Intent::Killed;
        }
        // By label too: whatever the loop missed (a container whose start failed half-way).
        if let Err(e) = remove_run(&self.docker, &self.run_id).await {
            tracing::warn!("removing the run's containers and network: {e}");
        }
        if let Some(p) = self.proxy.take() {
            p.shutdown().await;
        }
        if let Some(mut r) = self.reaper.take() {
            // Closing its stdin tells it we are done; it finds nothing left and exits.
            drop(r.stdin.take());
            let _ = r.wait();
        }
    }
}

impl ContainersCluster {
    pub fn record(&self) -> ContainersRecord {
        ContainersRecord {
            version: self.version.clone(),
            image: self.image.clone(),
            cluster_id: self.cluster_id.clone(),
            run_id: self.run_id.clone(),
            network: self.network.clone(),
            dir: self.dir.clone(),
            nodes: self
                .nodes
                .iter()
                .map(|n| ContainersNodeRecord {
                    node_id: n.node_id,
                    name: n.name.clone(),
                    host_port: n.host_port,
                    container_id: n.container_id.clone(),
                    intent: n.intent,
                })
                .collect(),
        }
    }

    /// Hands the containers over to a state file: this value no longer removes them.
    pub fn detach(mut self) -> ContainersRecord {
        let rec = self.record();
        self.torn_down = true;
        for n in &mut self.nodes {
            // Dropping the handle would remove the container.
            if let Some(c) = n.container.take() {
                std::mem::forget(c);
            }
        }
        rec
    }

    /// Rebuilds a cluster from its state file; it is removed only by [`Self::force_teardown`].
    pub async fn adopt(rec: ContainersRecord) -> Result<ContainersCluster, ClusterError> {
        let docker = engine().await?;
        Ok(ContainersCluster {
            version: rec.version,
            image: rec.image,
            cluster_id: rec.cluster_id,
            run_id: rec.run_id,
            network: rec.network,
            dir: rec.dir,
            nodes: rec
                .nodes
                .into_iter()
                .map(|n| ContainersNode {
                    node_id: n.node_id,
                    name: n.name,
                    host_port: n.host_port,
                    proxy_port: None,
                    container_id: n.container_id,
                    intent: n.intent,
                    container: None,
                })
                .collect(),
            docker,
            reaper: None,
            torn_down: true,
            proxy: None,
        })
    }

    /// Removes an adopted cluster's containers and network (`cluster down`).
    pub async fn force_teardown(&mut self) {
        self.torn_down = false;
        self.remove_all().await;
    }
}

impl Drop for ContainersCluster {
    /// A cluster dropped without teardown (a panic unwinding, an early return): remove everything
    /// by label, on a runtime of its own (Drop may run inside an async context).
    fn drop(&mut self) {
        if self.torn_down {
            return;
        }
        self.torn_down = true;
        if let Some(p) = self.proxy.take() {
            p.stop();
        }
        let docker = self.docker.clone();
        let run = self.run_id.clone();
        let containers: Vec<ContainerAsync<GenericImage>> =
            self.nodes.iter_mut().filter_map(|n| n.container.take()).collect();
        block_on_own_thread(async move {
            let _ = remove_run(&docker, &run).await;
            // Their own Drop tries to remove them again: already gone, so it only logs.
            drop(containers);
        });
        if let Some(mut r) = self.reaper.take() {
            drop(r.stdin.take());
            let _ = r.wait();
        }
    }
}

/// Why a fault cannot run on the containers backend (None: it can). The proxy sits in front of
/// the host-facing listeners only, so it sees client↔broker traffic and none between brokers:
/// a network or protocol fault between two broker groups would match nothing, and a
/// `net-blackhole` would cut the clients from a node that still replicates and votes with the
/// others — not the isolation it means on the local backend.
pub fn unsupported_fault(f: &sinkhole_scenario::FaultSpec) -> Option<String> {
    use sinkhole_scenario::{FaultKind, Group};
    if !f.kind.kind().needs_proxy() {
        return None;
    }
    let label = f.name.clone().unwrap_or_else(|| f.kind.name().to_string());
    // net-blackhole disconnects the node from the run's network through the
    // engine (Cluster::isolate): brokers and clients are cut alike.
    if f.kind == FaultKind::NetBlackhole {
        return None;
    }
    let brokers = |g: Option<&[Group]>| g.into_iter().flatten().any(|g| matches!(g, Group::Brokers | Group::Broker(_)));
    if brokers(f.kind.from()) && brokers(f.kind.to()) {
        return Some(format!(
            "fault {label}: {} between broker groups needs broker↔broker traffic through the proxy, and on the \
             containers backend the proxy carries only client↔broker traffic (brokers talk over the run's \
             network): use the local backend",
            f.kind.name()
        ));
    }
    None
}

/// The containers backend behind the cluster layer's one trait. The lookups are the trait's own
/// (the same Kafka requests, through the published listeners, so the answers mean the same as on
/// the local backend); `net-blackhole` disconnects the node from the run's network through the
/// engine, since the proxy fronts only the host-facing listeners.
impl Cluster for ContainersCluster {
    fn backend(&self) -> &'static str {
        "containers"
    }

    /// The Kafka-aware proxy in front of every node's host-facing listener, when the spec asked
    /// for it.
    fn proxy(&self) -> Option<Proxy> {
        self.proxy.clone()
    }

    fn teardown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(self.remove_all())
    }

    fn isolates_nodes(&self) -> bool {
        true
    }

    fn isolate(&mut self, node: i32) -> ClusterFuture<'_, NetworkEffect> {
        Box::pin(self.disconnect(node))
    }

    fn rejoin(&mut self, node: i32) -> ClusterFuture<'_, NetworkEffect> {
        Box::pin(self.reconnect(node))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_faults_the_host_side_proxy_can_make_are_accepted() {
        let f = |v: serde_json::Value| -> sinkhole_scenario::FaultSpec { serde_json::from_value(v).unwrap() };
        let at = serde_json::json!({"at_ms": 0});
        let b2b = f(serde_json::json!({"name": "split", "kind": "net-partition", "when": at,
                                       "from": ["broker-1"], "to": ["brokers"]}));
        assert!(unsupported_fault(&b2b).unwrap().contains("fault split: net-partition between broker groups"));
        let bh = f(serde_json::json!({"kind": "net-blackhole", "when": at, "target": [1]}));
        // The engine disconnects a blackholed node from the run's network.
        assert_eq!(unsupported_fault(&bh), None);
        let w2b = f(serde_json::json!({"kind": "net-partition", "when": at, "from": ["workers"], "to": ["broker-1"]}));
        assert_eq!(unsupported_fault(&w2b), None);
        let delay = f(serde_json::json!({"kind": "net-delay", "when": at, "from": ["workers"], "to": ["brokers"],
                                         "delay_ms": 100}));
        assert_eq!(unsupported_fault(&delay), None);
        let drop = f(serde_json::json!({"kind": "protocol-drop", "when": at, "apis": ["EndTxn"]}));
        assert_eq!(unsupported_fault(&drop), None);
        let kill = f(serde_json::json!({"kind": "broker-kill", "when": at, "target": [1]}));
        assert_eq!(unsupported_fault(&kill), None);
    }
}
