//! The `local` cluster backend: Kafka brokers as JVM processes on this machine.
//!
//! Each node is a KRaft combined broker+controller with its own directory
//! (`node-<id>/`: `server.properties`, `data/`, `logs/`, and `server.log` where
//! the JVM's stdout and stderr go), loopback ports, and storage formatted by
//! Kafka's own `kafka.tools.StorageTool` with one cluster id for all nodes.
//!
//! Lifecycle actions are real: `stop` is SIGTERM and a wait for the broker's
//! controlled shutdown, `kill` is SIGKILL, `pause`/`resume` are SIGSTOP/SIGCONT
//! (a paused broker keeps its sockets open and answers nothing, like a long GC
//! pause), and `restart` starts a new JVM with the same node id, configuration
//! and data directory. Every action returns the effect the kernel showed
//! (see [`sinkhole_faults::process`]).
//!
//! The backend's files: this one holds the cluster (start, status, teardown, the state-file
//! hand-over and the [`Cluster`] implementation); `setup` prepares what the first start needs
//! (ports, the proxy's routes, the formatted storage); `process` runs one node's JVM (launch,
//! signals, graceful stop) and supplies them as the lifecycle's steps ([`NodeOps`]: when each
//! runs is [`crate::lifecycle`]'s to decide); `ready` waits until the nodes answer; `cds` the
//! brokers' class-data archive, made once by `sinkhole setup`, for faster JVM starts.
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};
use sinkhole_client::wire::SaslPlain;
use sinkhole_faults::process::{ProcessId, RunState, SignalError};
use sinkhole_faults::proxy::Proxy;

use super::config::{self, NodeAddr};
use super::lifecycle::NodeOps;
use super::node::io;
use super::ports;
use super::{new_cluster_id, BoxFuture, Cluster, ClusterError, Intent, SinkListener};
use sinkhole_base::procs::{self, Lifetime};
use sinkhole_base::rundir::{names, ClusterDir};
use sinkhole_install::KafkaDist;
use sinkhole_scenario::Jit;

pub mod cds;
mod process;
mod ready;
mod setup;

pub use process::{tail, LocalNode};
use setup::{proxy_routes, sink_ports};

/// What only the local backend fails at (shown through [`ClusterError::Backend`]).
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error("formatting the storage of node {node} failed (exit {code:?}):\n{output}")]
    Format { node: i32, code: Option<i32>, output: String },
    #[error("node {id}: {source}")]
    Signal {
        id: i32,
        #[source]
        source: SignalError,
    },
}

impl From<LocalError> for ClusterError {
    fn from(e: LocalError) -> Self {
        ClusterError::Backend(Box::new(e))
    }
}

/// How to build a local cluster.
#[derive(Debug, Clone)]
pub struct LocalSpec {
    pub nodes: usize,
    pub dist: KafkaDist,
    pub broker_config: BTreeMap<String, String>,
    /// JVM max heap, e.g. "512m".
    pub heap: String,
    /// The brokers' JIT compilers ([`crate::jvm`]).
    pub jit: Jit,
    pub base_port: Option<u16>,
    /// The cluster's directory (node directories are made inside it).
    pub dir: PathBuf,
    pub lifetime: Lifetime,
    pub ready_timeout: Duration,
    /// Remove `dir` at teardown (throwaway clusters); logs are lost with it.
    pub remove_dir_on_teardown: bool,
    /// Remove each node's `data/` (the log segments) at teardown, keeping its
    /// `server.log`, logs and configuration: a campaign's runs, whose verdicts
    /// rest on what was drained, and whose segments would otherwise fill the disk
    /// over a night (a hundred megabytes and more a run).
    pub drop_data_on_teardown: bool,
    /// ACL scenarios: an authorizer, and a SASL/PLAIN listener for the sink
    /// workers whose one user is this ([`config::with_sink_listener`]).
    pub sink_sasl: Option<SaslPlain>,
    /// Put the rig's Kafka-aware proxy in front of every listener, with this
    /// seed (None: no proxy). See [`LocalCluster::proxy`].
    pub proxy: Option<u64>,
    /// More client listeners on every node, as (name, security protocol), e.g.
    /// `("SECURE", "SASL_SSL")`, each on a free loopback port ([`config::with_listener`]);
    /// their keystores and SASL settings come from `broker_config`
    /// (`listener.name.secure.…`). [`LocalCluster::listener_bootstrap`] finds them again.
    /// The tests of the client security against real TLS and SASL_SSL listeners.
    pub listeners: Vec<(String, String)>,
    /// The brokers' class-data archive (default: the one `sinkhole setup` made, see [`cds`]).
    pub class_archive: cds::ClassArchive,
}

impl LocalSpec {
    pub fn new(dist: KafkaDist, nodes: usize, dir: PathBuf) -> LocalSpec {
        LocalSpec {
            nodes,
            class_archive: cds::ClassArchive::for_dist(&dist),
            dist,
            broker_config: BTreeMap::new(),
            heap: "512m".into(),
            jit: Jit::default(),
            base_port: None,
            dir,
            lifetime: Lifetime::Owned,
            ready_timeout: Duration::from_secs(90),
            remove_dir_on_teardown: false,
            drop_data_on_teardown: false,
            sink_sasl: None,
            proxy: None,
            listeners: Vec::new(),
        }
    }
}

/// Status of one node as `sinkhole cluster status` prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeStatus {
    pub node_id: i32,
    pub pid: Option<i32>,
    pub broker_port: u16,
    pub controller_port: u16,
    pub intent: Intent,
    pub observed: RunState,
    pub log: PathBuf,
}

/// A running local cluster.
#[derive(Debug)]
pub struct LocalCluster {
    pub version: String,
    pub cluster_id: String,
    pub dir: PathBuf,
    pub dist: KafkaDist,
    pub heap: String,
    pub jit: Jit,
    pub broker_config: BTreeMap<String, String>,
    pub lifetime: Lifetime,
    pub nodes: Vec<LocalNode>,
    pub remove_dir_on_teardown: bool,
    pub drop_data_on_teardown: bool,
    torn_down: bool,
    proxy: Option<Proxy>,
    class_archive: cds::ClassArchive,
}

impl LocalCluster {
    /// Formats and starts every node, then waits until the cluster is ready.
    pub async fn start(spec: LocalSpec) -> Result<LocalCluster, ClusterError> {
        if !matches!(spec.nodes, 1 | 3 | 5) {
            return Err(ClusterError::NodeCount(spec.nodes));
        }
        let addrs = ports::allocate(spec.nodes, spec.base_port)?;
        // The JVMs run inside their node directories: every path handed to
        // them must be absolute.
        let mut spec = spec;
        spec.dir = std::path::absolute(&spec.dir).map_err(io(format!("resolving {}", spec.dir.display())))?;
        fs::create_dir_all(&spec.dir).map_err(io(format!("creating {}", spec.dir.display())))?;
        let cluster_id = new_cluster_id();
        let sink_ports = if spec.sink_sasl.is_some() { sink_ports(&addrs, &[])? } else { vec![] };
        // One port per node for each extra listener, distinct from every other port chosen.
        let mut extra_ports: Vec<Vec<u16>> = Vec::new();
        for _ in &spec.listeners {
            let taken: Vec<u16> = sink_ports.iter().chain(extra_ports.iter().flatten()).copied().collect();
            extra_ports.push(setup::sink_ports(&addrs, &taken)?);
        }
        let proxied = match spec.proxy {
            Some(_) => Some(ports::allocate_proxy(&addrs, &sink_ports)?),
            None => None,
        };
        let mut nodes = Vec::new();
        for addr in &addrs {
            let dir = ClusterDir::at(&spec.dir).node(addr.node_id);
            fs::create_dir_all(dir.join(names::NODE_LOGS)).map_err(io(format!("creating {}", dir.display())))?;
            let data = dir.join(names::NODE_DATA);
            let mut text = config::render(*addr, &addrs, &data.to_string_lossy(), &spec.broker_config);
            if let Some(sasl) = &spec.sink_sasl {
                let port = sink_ports[nodes.len()];
                text = config::with_sink_listener(&text, port, &sasl.username, &sasl.password);
            }
            for ((name, protocol), ports) in spec.listeners.iter().zip(&extra_ports) {
                text = config::with_listener(&text, name, protocol, ports[nodes.len()]);
            }
            if let Some(p) = &proxied {
                text = config::via_proxy(&text, &addrs, p);
            }
            let proxy_port = proxied.as_ref().map(|p| p[nodes.len()].broker_port);
            let node = LocalNode { addr: *addr, dir, process: None, child: None, intent: Intent::Stopped, proxy_port };
            fs::write(node.config_path(), text).map_err(io("writing server.properties"))?;
            nodes.push(node);
        }
        let mut cluster = LocalCluster {
            version: spec.dist.version.clone(),
            cluster_id,
            dir: spec.dir.clone(),
            dist: spec.dist.clone(),
            heap: spec.heap.clone(),
            jit: spec.jit,
            broker_config: spec.broker_config.clone(),
            lifetime: spec.lifetime,
            nodes,
            remove_dir_on_teardown: spec.remove_dir_on_teardown,
            drop_data_on_teardown: spec.drop_data_on_teardown,
            torn_down: false,
            proxy: None,
            class_archive: spec.class_archive.clone(),
        };
        if let (Some(p), Some(seed)) = (&proxied, spec.proxy) {
            // Before the brokers: their first connections already cross it.
            cluster.proxy = Some(Proxy::start(proxy_routes(&addrs, p), seed).await.map_err(io("starting the proxy"))?);
        }
        cluster.format_all()?;
        for i in 0..cluster.nodes.len() {
            cluster.launch(i)?;
            cluster.nodes[i].intent = Intent::Running;
        }
        cluster.await_ready(spec.ready_timeout).await?;
        Ok(cluster)
    }

    pub fn node(&self, id: i32) -> Result<&LocalNode, ClusterError> {
        Ok(&self.nodes[self.index(id)?])
    }

    /// Every node's `host:port` on listener `name` (one of [`LocalSpec::listeners`]), read back
    /// from the nodes' `server.properties`; empty when no node has it.
    pub fn listener_bootstrap(&self, name: &str) -> Vec<String> {
        let prefix = format!("{name}://");
        self.nodes
            .iter()
            .filter_map(|n| fs::read_to_string(n.config_path()).ok())
            .flat_map(|text| {
                let line = text.lines().find_map(|l| l.strip_prefix("listeners=")).unwrap_or_default().to_string();
                line.split(',').filter_map(|l| l.strip_prefix(&prefix)).map(str::to_string).collect::<Vec<_>>()
            })
            .collect()
    }

    pub fn status(&mut self) -> Vec<NodeStatus> {
        self.nodes
            .iter_mut()
            .map(|n| NodeStatus {
                node_id: n.addr.node_id,
                pid: n.process.map(|p| p.pid),
                broker_port: n.addr.broker_port,
                controller_port: n.addr.controller_port,
                intent: n.intent,
                observed: n.observed(),
                log: n.log_path(),
            })
            .collect()
    }

    /// Every process this cluster started and may still have.
    pub fn processes(&self) -> Vec<ProcessId> {
        self.nodes.iter().filter_map(|n| n.process).collect()
    }

    /// Kills every node (SIGKILL to each process group) and reaps them; removes
    /// the directory, or the nodes' data, when the spec asked for it. Idempotent.
    pub fn teardown(&mut self) {
        if self.torn_down {
            return;
        }
        self.torn_down = true;
        for i in 0..self.nodes.len() {
            if let Some(p) = self.nodes[i].process {
                if p.is_alive() {
                    let _ = p.signal_group(Signal::SIGKILL, Duration::from_secs(5));
                }
            }
            self.reap(i);
            self.nodes[i].intent = Intent::Killed;
        }
        if let Some(p) = &self.proxy {
            p.stop();
        }
        if self.remove_dir_on_teardown {
            let _ = fs::remove_dir_all(&self.dir);
        } else if self.drop_data_on_teardown {
            for n in &self.nodes {
                let _ = fs::remove_dir_all(n.dir.join(names::NODE_DATA));
            }
        }
    }

    /// Hands the nodes over to a state file: this value no longer kills them on drop.
    pub fn detach(mut self) -> Vec<LocalNodeRecord> {
        self.torn_down = true;
        self.nodes
            .iter_mut()
            .map(|n| {
                n.child.take();
                if let Some(p) = n.process {
                    procs::forget(p.pid);
                }
                LocalNodeRecord { addr: n.addr.into(), process: n.process, intent: n.intent }
            })
            .collect()
    }

    /// Rebuilds a cluster from its state file (its JVMs are not our children).
    pub fn adopt(
        dist: KafkaDist,
        cluster_id: String,
        dir: PathBuf,
        heap: String,
        jit: Jit,
        broker_config: BTreeMap<String, String>,
        records: Vec<LocalNodeRecord>,
    ) -> LocalCluster {
        let nodes = records
            .into_iter()
            .map(|r| LocalNode {
                dir: ClusterDir::at(&dir).node(r.addr.node_id),
                addr: r.addr.into(),
                process: r.process,
                child: None,
                intent: r.intent,
                proxy_port: None,
            })
            .collect();
        let class_archive = cds::ClassArchive::for_dist(&dist);
        LocalCluster {
            version: dist.version.clone(),
            cluster_id,
            dir,
            dist,
            heap,
            jit,
            broker_config,
            lifetime: Lifetime::Detached,
            nodes,
            remove_dir_on_teardown: false,
            drop_data_on_teardown: false,
            torn_down: true, // adopted clusters end only through `down`
            proxy: None,
            class_archive,
        }
    }

    /// Forces teardown of an adopted cluster (`cluster down`).
    pub fn force_teardown(&mut self, remove_dir: bool) {
        self.torn_down = false;
        self.remove_dir_on_teardown = remove_dir;
        self.teardown();
    }
}

/// The local backend behind the cluster layer's one trait. Its nodes and their lifecycle come
/// from its [`NodeOps`] (`process`); the lookups are the trait's own (the Kafka requests of
/// [`super::lookup`]); network isolation goes through the proxy, which fronts every listener, so
/// `isolates_nodes` stays false.
impl Cluster for LocalCluster {
    fn backend(&self) -> &'static str {
        "local"
    }

    /// The sink's SASL listener (every node's), when the cluster was started
    /// with [`LocalSpec::sink_sasl`]. Read back from each node's
    /// `server.properties`, so an adopted cluster answers too.
    fn sink_listener(&self) -> Option<SinkListener> {
        let prefix = format!("{}://", config::SINK_LISTENER);
        let jaas_user = format!("listener.name.{}.plain.sasl.jaas.config=", config::SINK_LISTENER.to_ascii_lowercase());
        let mut bootstrap = Vec::new();
        let mut sasl = None;
        for n in &self.nodes {
            let text = fs::read_to_string(n.config_path()).ok()?;
            for line in text.lines() {
                if let Some(v) = line.strip_prefix("listeners=") {
                    bootstrap.extend(v.split(',').filter_map(|l| l.strip_prefix(&prefix)).map(str::to_string));
                }
                if let Some(v) = line.strip_prefix(&jaas_user) {
                    // `... required user_<name>="<password>";`
                    let (_, rest) = v.split_once(" user_")?;
                    let (name, pw) = rest.split_once('=')?;
                    sasl = Some(SaslPlain::new(name, pw.trim_end_matches(';').trim_matches('"')));
                }
            }
        }
        (!bootstrap.is_empty()).then_some(())?;
        Some(SinkListener { bootstrap, sasl: sasl? })
    }

    /// The Kafka-aware proxy in front of every listener, when the spec asked
    /// for one. It lives as long as the cluster, across node stops and kills.
    fn proxy(&self) -> Option<Proxy> {
        self.proxy.clone()
    }

    fn teardown(&mut self) -> BoxFuture<'_, ()> {
        LocalCluster::teardown(self);
        Box::pin(async {})
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// A node as the state file keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LocalNodeRecord {
    pub addr: NodeAddrRecord,
    pub process: Option<ProcessId>,
    pub intent: Intent,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct NodeAddrRecord {
    pub node_id: i32,
    pub broker_port: u16,
    pub controller_port: u16,
}

impl From<NodeAddr> for NodeAddrRecord {
    fn from(a: NodeAddr) -> Self {
        NodeAddrRecord { node_id: a.node_id, broker_port: a.broker_port, controller_port: a.controller_port }
    }
}
impl From<NodeAddrRecord> for NodeAddr {
    fn from(a: NodeAddrRecord) -> Self {
        NodeAddr { node_id: a.node_id, broker_port: a.broker_port, controller_port: a.controller_port }
    }
}
