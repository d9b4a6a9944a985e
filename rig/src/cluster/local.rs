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
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};
use sinkhole_faults::process::{ProcessId, RunState, SignalEffect, SignalError};
use sinkhole_faults::proxy::{ListenerKind, Proxy, Route};
use sinkhole_workloads::wire::SaslPlain;

use super::config::{self, NodeAddr};
use super::lookup::node_sees;
use super::node::{io, tell_down};
use super::ports::{self, PortError};
use super::{
    new_cluster_id, BoxFuture, Cluster, ClusterError, ClusterFuture, Intent, NodeAction, NodeEffect, OnDown,
    SinkListener,
};
use crate::install::KafkaDist;
use crate::procs::{self, Lifetime};

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
    pub base_port: Option<u16>,
    /// The cluster's directory (node directories are made inside it).
    pub dir: PathBuf,
    pub lifetime: Lifetime,
    pub ready_timeout: Duration,
    /// Remove `dir` at teardown (throwaway clusters); logs are lost with it.
    pub remove_dir_on_teardown: bool,
    /// ACL scenarios: an authorizer, and a SASL/PLAIN listener for the sink
    /// workers whose one user is this ([`config::with_sink_listener`]).
    pub sink_sasl: Option<SaslPlain>,
    /// Put the rig's Kafka-aware proxy in front of every listener, with this
    /// seed (None: no proxy). See [`LocalCluster::proxy`].
    pub proxy: Option<u64>,
}

impl LocalSpec {
    pub fn new(dist: KafkaDist, nodes: usize, dir: PathBuf) -> LocalSpec {
        LocalSpec {
            nodes,
            dist,
            broker_config: BTreeMap::new(),
            heap: "512m".into(),
            base_port: None,
            dir,
            lifetime: Lifetime::Owned,
            ready_timeout: Duration::from_secs(90),
            remove_dir_on_teardown: false,
            sink_sasl: None,
            proxy: None,
        }
    }
}

/// One node: its address, directory and the JVM currently running it.
#[derive(Debug)]
pub struct LocalNode {
    pub addr: NodeAddr,
    pub dir: PathBuf,
    pub process: Option<ProcessId>,
    /// Present when this process started the JVM (so it can reap it).
    child: Option<Child>,
    pub intent: Intent,
    /// The proxy port clients reach the broker listener at (advertised), when
    /// the cluster is proxied.
    pub proxy_port: Option<u16>,
}

impl LocalNode {
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.proxy_port.unwrap_or(self.addr.broker_port))
    }
    fn config_path(&self) -> PathBuf {
        self.dir.join("server.properties")
    }

    /// The kernel's view: reaps our own child first so a dead JVM is `Gone`.
    pub fn observed(&mut self) -> RunState {
        if let Some(child) = self.child.as_mut() {
            if let Ok(Some(_)) = child.try_wait() {
                self.child = None;
                if let Some(p) = self.process {
                    procs::forget(p.pid);
                }
                return RunState::Gone;
            }
        }
        self.process.map(|p| p.state()).unwrap_or(RunState::Gone)
    }

    fn exit_code(&mut self) -> String {
        match self.child.as_mut().map(|c| c.try_wait()) {
            Some(Ok(Some(status))) => status.to_string(),
            _ => "unknown".into(),
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
    pub broker_config: BTreeMap<String, String>,
    pub lifetime: Lifetime,
    pub nodes: Vec<LocalNode>,
    pub remove_dir_on_teardown: bool,
    torn_down: bool,
    proxy: Option<Proxy>,
}

/// One loopback port per node for the sink listener, distinct from each
/// other and from the nodes' own ports.
fn sink_ports(addrs: &[NodeAddr]) -> Result<Vec<u16>, ClusterError> {
    let mut taken: Vec<u16> = addrs.iter().flat_map(|a| [a.broker_port, a.controller_port]).collect();
    let mut out = Vec::new();
    let mut tries = 0;
    while out.len() < addrs.len() {
        tries += 1;
        if tries > 64 {
            return Err(ClusterError::Ports(PortError::NoneFree(
                "the kernel kept returning ports already chosen".into(),
            )));
        }
        let what = "finding a free port for the sink listener";
        let l = std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(io(what))?;
        let port = l.local_addr().map_err(io(what))?.port();
        if !taken.contains(&port) {
            taken.push(port);
            out.push(port);
        }
    }
    Ok(out)
}

/// The proxy's routes: per node, its broker and controller listeners, each
/// reached at the proxy port (`proxied`) and forwarded to the real one.
fn proxy_routes(real: &[NodeAddr], proxied: &[NodeAddr]) -> Vec<Route> {
    let at = |port: u16| std::net::SocketAddr::from(([127, 0, 0, 1], port));
    real.iter()
        .zip(proxied)
        .flat_map(|(r, p)| {
            [
                Route {
                    node: r.node_id,
                    kind: ListenerKind::Broker,
                    listen: at(p.broker_port),
                    upstream: at(r.broker_port),
                },
                Route {
                    node: r.node_id,
                    kind: ListenerKind::Controller,
                    listen: at(p.controller_port),
                    upstream: at(r.controller_port),
                },
            ]
        })
        .collect()
}

/// The last `lines` lines of a file (at most the last 64 KiB are read).
pub fn tail(path: &Path, lines: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return format!("(no log at {})", path.display());
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut s = String::new();
    let _ = f.read_to_string(&mut s);
    let all: Vec<&str> = s.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
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
        let sink_ports = if spec.sink_sasl.is_some() { sink_ports(&addrs)? } else { vec![] };
        let proxied = match spec.proxy {
            Some(_) => Some(ports::allocate_proxy(&addrs, &sink_ports)?),
            None => None,
        };
        let mut nodes = Vec::new();
        for addr in &addrs {
            let dir = spec.dir.join(format!("node-{}", addr.node_id));
            fs::create_dir_all(dir.join("logs")).map_err(io(format!("creating {}", dir.display())))?;
            let data = dir.join("data");
            let mut text = config::render(*addr, &addrs, &data.to_string_lossy(), &spec.broker_config);
            if let Some(sasl) = &spec.sink_sasl {
                let port = sink_ports[nodes.len()];
                text = config::with_sink_listener(&text, port, &sasl.username, &sasl.password);
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
            broker_config: spec.broker_config.clone(),
            lifetime: spec.lifetime,
            nodes,
            remove_dir_on_teardown: spec.remove_dir_on_teardown,
            torn_down: false,
            proxy: None,
        };
        if let (Some(p), Some(seed)) = (&proxied, spec.proxy) {
            // Before the brokers: their first connections already cross it.
            cluster.proxy = Some(Proxy::start(proxy_routes(&addrs, p), seed).await.map_err(io("starting the proxy"))?);
        }
        cluster.format_all()?;
        for i in 0..cluster.nodes.len() {
            cluster.launch(i)?;
        }
        cluster.await_ready(spec.ready_timeout).await?;
        Ok(cluster)
    }

    /// `StorageTool format` for every node, in parallel (each is a short JVM).
    fn format_all(&self) -> Result<(), ClusterError> {
        let mut running = Vec::new();
        for node in &self.nodes {
            let mut cmd = Command::new(self.dist.java());
            cmd.arg("-Xmx256m")
                .arg(format!("-Dlog4j2.configurationFile={}", self.dist.log4j_config().display()))
                .arg("-cp")
                .arg(self.dist.classpath())
                .args(["kafka.tools.StorageTool", "format", "--ignore-formatted", "-t", &self.cluster_id, "-c"])
                .arg(node.config_path())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let (child, _) = procs::spawn(cmd, Lifetime::Owned).map_err(io("starting the Kafka storage tool"))?;
            running.push((node.addr.node_id, child));
        }
        for (node, child) in running {
            let pid = child.id() as i32;
            let out = child.wait_with_output().map_err(io("waiting for the storage tool"))?;
            procs::forget(pid);
            if !out.status.success() {
                let mut output = String::from_utf8_lossy(&out.stdout).into_owned();
                output.push_str(&String::from_utf8_lossy(&out.stderr));
                return Err(LocalError::Format { node, code: out.status.code(), output }.into());
            }
        }
        Ok(())
    }

    /// Starts the JVM of node index `i`.
    fn launch(&mut self, i: usize) -> Result<(), ClusterError> {
        let node = &self.nodes[i];
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(node.log_path())
            .map_err(io(format!("opening {}", node.log_path().display())))?;
        let log2 = log.try_clone().map_err(io("duplicating the log handle"))?;
        let mut cmd = Command::new(self.dist.java());
        cmd.arg(format!("-Xmx{}", self.heap))
            .arg("-Xms128m")
            // As kafka-run-class.sh does for the broker.
            .args(["-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35"])
            .args(["-XX:+ExplicitGCInvokesConcurrent", "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true"])
            .arg(format!("-Dlog4j2.configurationFile={}", self.dist.log4j_config().display()))
            .arg(format!("-Dkafka.logs.dir={}", node.dir.join("logs").display()))
            .arg("-cp")
            .arg(self.dist.classpath())
            .arg("kafka.Kafka")
            .arg(node.config_path())
            .current_dir(&node.dir)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        let (child, id) = procs::spawn(cmd, self.lifetime).map_err(io("starting a Kafka broker JVM"))?;
        let node = &mut self.nodes[i];
        node.process = Some(id);
        node.child = Some(child);
        node.intent = Intent::Running;
        Ok(())
    }

    fn index(&self, id: i32) -> Result<usize, ClusterError> {
        self.nodes
            .iter()
            .position(|n| n.addr.node_id == id)
            .ok_or_else(|| ClusterError::UnknownNode { id, known: self.node_ids() })
    }

    pub fn node(&self, id: i32) -> Result<&LocalNode, ClusterError> {
        Ok(&self.nodes[self.index(id)?])
    }

    /// Ready = every node meant to run answers ApiVersions and its Metadata
    /// lists every node meant to run.
    async fn await_ready(&mut self, timeout: Duration) -> Result<(), ClusterError> {
        let want: Vec<usize> = (0..self.nodes.len()).filter(|&i| self.nodes[i].intent == Intent::Running).collect();
        let started = Instant::now();
        let mut last = String::from("no node answered yet");
        loop {
            for &i in &want {
                if self.nodes[i].observed() == RunState::Gone || self.nodes[i].observed() == RunState::Zombie {
                    let node = &mut self.nodes[i];
                    return Err(ClusterError::NodeExited {
                        node: node.addr.node_id,
                        during: "the rig waited for the cluster to be ready".into(),
                        code: node.exit_code(),
                        log: node.log_path(),
                        tail: tail(&node.log_path(), 25),
                    });
                }
            }
            let ids: Vec<i32> = want.iter().map(|&i| self.nodes[i].addr.node_id).collect();
            let mut all = true;
            for &i in &want {
                match node_sees(&self.nodes[i].bootstrap(), &ids).await {
                    Ok(()) => {}
                    Err(e) => {
                        last = format!("node {}: {e}", self.nodes[i].addr.node_id);
                        all = false;
                        break;
                    }
                }
            }
            if all {
                tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, nodes = ?ids, "cluster ready");
                return Ok(());
            }
            if started.elapsed() >= timeout {
                return Err(ClusterError::NotReady { secs: started.elapsed().as_secs_f64(), detail: last });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Applies a lifecycle action to node `id` and reports its effect ([`Cluster::act_with`]).
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
        match action {
            NodeAction::Kill => {
                let p = self.require_process(i, action)?;
                effect.signals.push(self.signal(i, p, Signal::SIGKILL, Duration::from_secs(5))?);
                self.reap(i);
                self.nodes[i].intent = Intent::Killed;
                tell_down(&mut on_down, &effect, started);
            }
            NodeAction::Stop => {
                let p = self.require_process(i, action)?;
                effect.signals.extend(self.stop(i, p, timeout).await?);
                self.nodes[i].intent = Intent::Stopped;
                tell_down(&mut on_down, &effect, started);
            }
            NodeAction::Pause => {
                if state != Intent::Running {
                    return Err(ClusterError::WrongState { id, state, action });
                }
                let p = self.require_process(i, action)?;
                effect.signals.push(self.signal(i, p, Signal::SIGSTOP, Duration::from_secs(5))?);
                self.nodes[i].intent = Intent::Paused;
            }
            NodeAction::Resume => {
                if state != Intent::Paused {
                    return Err(ClusterError::WrongState { id, state, action });
                }
                let p = self.require_process(i, action)?;
                effect.signals.push(self.signal(i, p, Signal::SIGCONT, Duration::from_secs(5))?);
                self.nodes[i].intent = Intent::Running;
            }
            NodeAction::Start | NodeAction::Restart => {
                if action == NodeAction::Start && matches!(state, Intent::Running | Intent::Paused) {
                    return Err(ClusterError::WrongState { id, state, action });
                }
                if let Some(p) = self.nodes[i].process {
                    if p.is_alive() {
                        effect.signals.extend(self.stop(i, p, timeout).await?);
                    }
                }
                // The old JVM is reaped (or there was none): down, and not yet started again.
                tell_down(&mut on_down, &effect, started);
                self.launch(i)?;
                effect.new_pid = self.nodes[i].process.map(|p| p.pid);
                effect.ready = Some(self.wait_node_ready(i, timeout).await.is_ok());
                if effect.ready == Some(false) {
                    // Say why: a broker that exited is an error, a slow one is reported.
                    self.wait_node_ready(i, Duration::ZERO).await?;
                }
            }
        }
        effect.elapsed_ms = started.elapsed().as_millis() as u64;
        Ok(effect)
    }

    fn require_process(&mut self, i: usize, action: NodeAction) -> Result<ProcessId, ClusterError> {
        let id = self.nodes[i].addr.node_id;
        match (self.nodes[i].process, self.nodes[i].observed()) {
            (Some(p), RunState::Running | RunState::Stopped) => Ok(p),
            _ => Err(ClusterError::WrongState { id, state: self.nodes[i].intent, action }),
        }
    }

    fn signal(&mut self, i: usize, p: ProcessId, sig: Signal, within: Duration) -> Result<SignalEffect, ClusterError> {
        let id = self.nodes[i].addr.node_id;
        let e = p.signal_group(sig, within).map_err(|source| LocalError::Signal { id, source })?;
        tracing::info!(node = id, signal = %sig, confirmed = e.confirmed, observed = ?e.observed, "signal delivered");
        Ok(e)
    }

    /// SIGTERM (with SIGCONT, in case the node is paused: a stopped JVM would
    /// hold the SIGTERM pending forever), wait, then SIGKILL.
    async fn stop(&mut self, i: usize, p: ProcessId, timeout: Duration) -> Result<Vec<SignalEffect>, ClusterError> {
        let mut out = vec![self.signal(i, p, Signal::SIGTERM, Duration::ZERO)?];
        if p.state() == RunState::Stopped {
            out.push(self.signal(i, p, Signal::SIGCONT, Duration::from_secs(1))?);
        }
        let started = Instant::now();
        while started.elapsed() < timeout {
            if matches!(self.nodes[i].observed(), RunState::Gone | RunState::Zombie) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let last = out.last_mut().expect("one signal at least");
        last.observed = p.state();
        if matches!(self.nodes[i].observed(), RunState::Running | RunState::Stopped) {
            tracing::warn!(node = self.nodes[i].addr.node_id, "no exit after SIGTERM within {timeout:?}: SIGKILL");
            out.push(self.signal(i, p, Signal::SIGKILL, Duration::from_secs(5))?);
        } else if let Some(first) = out.first_mut() {
            first.confirmed = true;
            first.observed = RunState::Gone;
            first.after_ms = started.elapsed().as_millis() as u64;
        }
        self.reap(i);
        Ok(out)
    }

    fn reap(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        if let Some(mut child) = node.child.take() {
            let _ = child.wait();
        }
        if let Some(p) = node.process {
            procs::forget(p.pid);
        }
    }

    async fn wait_node_ready(&mut self, i: usize, timeout: Duration) -> Result<(), ClusterError> {
        let started = Instant::now();
        let expected: Vec<i32> =
            self.nodes.iter().filter(|n| n.intent == Intent::Running).map(|n| n.addr.node_id).collect();
        loop {
            if matches!(self.nodes[i].observed(), RunState::Gone | RunState::Zombie) {
                let node = &mut self.nodes[i];
                return Err(ClusterError::NodeExited {
                    node: node.addr.node_id,
                    during: "it was starting".into(),
                    code: node.exit_code(),
                    log: node.log_path(),
                    tail: tail(&node.log_path(), 25),
                });
            }
            let res = node_sees(&self.nodes[i].bootstrap(), &expected).await;
            match res {
                Ok(()) => return Ok(()),
                Err(e) if started.elapsed() >= timeout => {
                    return Err(ClusterError::NotReady { secs: started.elapsed().as_secs_f64(), detail: e })
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
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
    /// the directory when the spec asked for it. Idempotent.
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
        broker_config: BTreeMap<String, String>,
        records: Vec<LocalNodeRecord>,
    ) -> LocalCluster {
        let nodes = records
            .into_iter()
            .map(|r| LocalNode {
                dir: dir.join(format!("node-{}", r.addr.node_id)),
                addr: r.addr.into(),
                process: r.process,
                child: None,
                intent: r.intent,
                proxy_port: None,
            })
            .collect();
        LocalCluster {
            version: dist.version.clone(),
            cluster_id,
            dir,
            dist,
            heap,
            broker_config,
            lifetime: Lifetime::Detached,
            nodes,
            remove_dir_on_teardown: false,
            torn_down: true, // adopted clusters end only through `down`
            proxy: None,
        }
    }

    /// Forces teardown of an adopted cluster (`cluster down`).
    pub fn force_teardown(&mut self, remove_dir: bool) {
        self.torn_down = false;
        self.remove_dir_on_teardown = remove_dir;
        self.teardown();
    }
}

/// The local backend behind the cluster layer's one trait. The lookups are the trait's own
/// (the Kafka requests of [`super::lookup`]); network isolation goes through the proxy, which
/// fronts every listener, so `isolates_nodes` stays false.
impl Cluster for LocalCluster {
    fn backend(&self) -> &'static str {
        "local"
    }

    fn node_ids(&self) -> Vec<i32> {
        self.nodes.iter().map(|n| n.addr.node_id).collect()
    }

    fn bootstrap_list(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.bootstrap()).collect()
    }

    fn bootstrap(&self) -> String {
        self.nodes.iter().filter(|n| n.intent == Intent::Running).map(|n| n.bootstrap()).collect::<Vec<_>>().join(",")
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
