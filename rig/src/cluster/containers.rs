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
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sinkhole_faults::process::{ProcessId, RunState, SignalEffect};
use sinkhole_faults::proxy::{ListenerKind, Proxy, Route};
use testcontainers::bollard::models::{
    ContainerStateStatusEnum, EndpointSettings, NetworkConnectRequest, NetworkCreateRequest, NetworkDisconnectRequest,
    PortBinding,
};
use testcontainers::bollard::query_parameters::{
    KillContainerOptionsBuilder, ListContainersOptionsBuilder, ListNetworksOptionsBuilder, ListVolumesOptionsBuilder,
    RemoveContainerOptionsBuilder, StopContainerOptionsBuilder,
};
use testcontainers::bollard::Docker;
use testcontainers::core::{ContainerPort, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerAsync, GenericImage, ImageExt};

use super::config;
use super::lookup::node_sees;
use super::node::tell_down;
use super::ports;
use super::{
    new_cluster_id, BoxFuture, Cluster, ClusterError, ClusterFuture, Intent, NetworkEffect, NodeAction, NodeEffect,
    OnDown,
};

/// Container ports (the same in every container; only `EXTERNAL` is published).
const INTERNAL_PORT: u16 = 9092;
const CONTROLLER_PORT: u16 = 9093;
const EXTERNAL_PORT: u16 = 9094;

/// The label every container and network of a run carries; its value is the run id.
pub const RUN_LABEL: &str = "sinkhole.run";
/// `<pid>:<start ticks>` of the rig process that created it: a leftover whose owner is gone is
/// removed by the next start.
pub const OWNER_LABEL: &str = "sinkhole.owner";
/// The owner of a cluster meant to outlive the command (`sinkhole cluster up`): only `cluster
/// down` removes it.
pub const DETACHED_OWNER: &str = "detached";

#[derive(Debug, thiserror::Error)]
pub enum ContainersError {
    #[error("no container engine answers{}: {detail}. Start Docker, or Podman's service (`scripts/podman-service.sh start` prints the DOCKER_HOST to export)", host.as_deref().map(|h| format!(" at {h}")).unwrap_or_default())]
    NoEngine { host: Option<String>, detail: String },
    #[error("the container engine: {0}")]
    Engine(String),
    #[error("image {image} is not available ({detail}); with no registry, build it: `sinkhole image build --kafka {version}`")]
    NoImage { image: String, version: String, detail: String },
}

impl From<ContainersError> for ClusterError {
    fn from(e: ContainersError) -> Self {
        ClusterError::Backend(Box::new(e))
    }
}

fn engine_err(what: &str) -> impl FnOnce(testcontainers::bollard::errors::Error) -> ContainersError + '_ {
    move |e| ContainersError::Engine(format!("{what}: {e}"))
}

/// Where the Podman service of `scripts/podman-service.sh` listens.
pub fn podman_service_socket() -> PathBuf {
    PathBuf::from(std::env::var("SINKHOLE_PODMAN_DIR").unwrap_or_else(|_| "/tmp/sinkhole-podman".into()))
        .join("podman.sock")
}

/// The engine address: `DOCKER_HOST` when set, else the first socket that exists of Docker's
/// default, the service of `scripts/podman-service.sh`, and Podman's rootful and rootless
/// defaults. A socket found this way is exported as `DOCKER_HOST` (once, before any container
/// exists) because testcontainers reads the engine address from there.
pub fn docker_host() -> Option<String> {
    static FOUND: OnceLock<Option<String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            if let Ok(h) = std::env::var("DOCKER_HOST") {
                if !h.is_empty() {
                    return Some(h);
                }
            }
            let mut candidates = vec![PathBuf::from("/var/run/docker.sock"), podman_service_socket()];
            candidates.push(PathBuf::from("/run/podman/podman.sock"));
            if let Ok(x) = std::env::var("XDG_RUNTIME_DIR") {
                candidates.push(PathBuf::from(x).join("podman/podman.sock"));
            }
            let found = candidates.into_iter().find(|p| p.exists()).map(|p| format!("unix://{}", p.display()))?;
            std::env::set_var("DOCKER_HOST", &found);
            Some(found)
        })
        .clone()
}

/// A client of the engine that answered a ping.
pub async fn engine() -> Result<Docker, ContainersError> {
    let host = docker_host();
    let docker = Docker::connect_with_defaults()
        .map_err(|e| ContainersError::NoEngine { host: host.clone(), detail: e.to_string() })?;
    match tokio::time::timeout(Duration::from_secs(5), docker.ping()).await {
        Ok(Ok(_)) => Ok(docker),
        Ok(Err(e)) => Err(ContainersError::NoEngine { host, detail: e.to_string() }),
        Err(_) => Err(ContainersError::NoEngine { host, detail: "no answer to a ping within 5 s".into() }),
    }
}

/// Whether an engine answers (for tests that skip without one).
pub async fn engine_available() -> Result<(), String> {
    engine().await.map(|_| ()).map_err(|e| e.to_string())
}

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

/// What the engine says about a container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineState {
    /// `running`, `paused`, `exited`, … as the engine names it.
    pub status: String,
    pub pid: Option<i64>,
    pub exit_code: Option<i64>,
}

impl EngineState {
    /// The process view the faults record: a paused container is a stopped process.
    pub fn run_state(&self) -> RunState {
        match self.status.as_str() {
            "running" => RunState::Running,
            "paused" => RunState::Stopped,
            _ => RunState::Gone,
        }
    }
}

fn ms(t0: Instant) -> u64 {
    t0.elapsed().as_millis() as u64
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

/// `<pid>:<start ticks>` of this process.
fn owner() -> String {
    match ProcessId::of(std::process::id() as i32) {
        Some(p) => format!("{}:{}", p.pid, p.start_ticks),
        None => format!("{}:0", std::process::id()),
    }
}

fn owner_alive(label: &str) -> bool {
    let Some((pid, ticks)) = label.split_once(':') else { return false };
    let (Ok(pid), Ok(ticks)) = (pid.parse::<i32>(), ticks.parse::<u64>()) else { return false };
    ProcessId { pid, start_ticks: ticks }.is_alive()
}

/// 8 hex digits naming the run's network and containers (names must be unique on the engine,
/// and short: a container name is a hostname).
fn short_name(run_id: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    for b in format!("{run_id}/{}/{nanos}", std::process::id()).bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

/// `server.properties` of one containerised node: the rig-owned wiring (listeners by container
/// name, `EXTERNAL` advertised on `host_port`: the published port, or the proxy's), then [`config::defaults`] overridden by the
/// user's settings, as the local backend does.
pub fn render(node_id: i32, names: &[(i32, String)], host_port: u16, overrides: &BTreeMap<String, String>) -> String {
    let voters = names.iter().map(|(id, n)| format!("{id}@{n}:{CONTROLLER_PORT}")).collect::<Vec<_>>().join(",");
    let me = &names.iter().find(|(id, _)| *id == node_id).expect("the node is in the list").1;
    let mut out = format!("# written by sinkhole for node {node_id} (containers backend)\n");
    let mut put = |k: &str, v: &str| {
        out.push_str(k);
        out.push('=');
        out.push_str(v);
        out.push('\n');
    };
    put("process.roles", "broker,controller");
    put("node.id", &node_id.to_string());
    put("controller.quorum.voters", &voters);
    put(
        "listeners",
        &format!(
            "INTERNAL://0.0.0.0:{INTERNAL_PORT},EXTERNAL://0.0.0.0:{EXTERNAL_PORT},CONTROLLER://0.0.0.0:{CONTROLLER_PORT}"
        ),
    );
    put("advertised.listeners", &format!("INTERNAL://{me}:{INTERNAL_PORT},EXTERNAL://127.0.0.1:{host_port}"));
    put("controller.listener.names", "CONTROLLER");
    put("listener.security.protocol.map", "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT");
    put("inter.broker.listener.name", "INTERNAL");
    put("log.dirs", "/var/lib/kafka/data");
    let mut merged = config::defaults(names.len());
    merged.extend(
        overrides
            .iter()
            .filter(|(k, _)| !config::RIG_OWNED_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    for (k, v) in &merged {
        put(k, v);
    }
    out
}

/// The container's command: write the configuration, format the storage (a no-op when it is
/// formatted, so a restarted container keeps its data), exec the broker with the JVM options
/// `kafka-run-class.sh` uses. Works in `localhost/sinkhole-kafka` and in `apache/kafka` (both
/// have `/opt/kafka/libs` and `java` on PATH).
const ENTRY_SCRIPT: &str = r#"set -e
printf '%s\n' "$SINKHOLE_SERVER_PROPERTIES" > /tmp/server.properties
L=/opt/kafka/config/sinkhole-log4j2.xml
[ -f "$L" ] || L=/opt/kafka/config/log4j2.yaml
java -Xmx256m "-Dlog4j2.configurationFile=$L" -cp '/opt/kafka/libs/*' kafka.tools.StorageTool format --ignore-formatted -t "$SINKHOLE_CLUSTER_ID" -c /tmp/server.properties
echo "sinkhole: storage of node $SINKHOLE_NODE_ID formatted; starting the broker"
exec java "-Xmx$SINKHOLE_HEAP" -Xms128m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true "-Dlog4j2.configurationFile=$L" -Dkafka.logs.dir=/tmp/kafka-logs -cp '/opt/kafka/libs/*' kafka.Kafka /tmp/server.properties
"#;

/// `name[:tag]` → (name, tag); a missing tag is `latest`.
fn split_image(image: &str) -> (String, String) {
    let slash = image.rfind('/').map(|i| i + 1).unwrap_or(0);
    match image[slash..].rfind(':') {
        Some(i) => (image[..slash + i].to_string(), image[slash + i + 1..].to_string()),
        None => (image.to_string(), "latest".to_string()),
    }
}

/// Removes every container (with its anonymous volumes) and network labelled
/// `sinkhole.run=<run_id>`. Returns (containers, networks) removed.
pub async fn remove_run(docker: &Docker, run_id: &str) -> Result<(usize, usize), ContainersError> {
    let filters: HashMap<String, Vec<String>> =
        HashMap::from([("label".into(), vec![format!("{RUN_LABEL}={run_id}")])]);
    remove_matching(docker, &filters, |_| true).await
}

/// Removes what rigs that are no longer running left behind (their owner label names a dead
/// process): a run killed with `kill -9` before its reaper could act, or one without a reaper.
pub async fn remove_orphans(docker: &Docker) -> Result<(usize, usize), ContainersError> {
    let filters: HashMap<String, Vec<String>> = HashMap::from([("label".into(), vec![OWNER_LABEL.to_string()])]);
    remove_matching(docker, &filters, |labels| {
        labels.get(OWNER_LABEL).is_some_and(|o| o != DETACHED_OWNER && !owner_alive(o))
    })
    .await
}

async fn remove_matching(
    docker: &Docker,
    filters: &HashMap<String, Vec<String>>,
    pick: impl Fn(&HashMap<String, String>) -> bool,
) -> Result<(usize, usize), ContainersError> {
    let containers = docker
        .list_containers(Some(ListContainersOptionsBuilder::new().all(true).filters(filters).build()))
        .await
        .map_err(engine_err("listing containers"))?;
    let mut removed = 0;
    for c in containers {
        if !pick(&c.labels.clone().unwrap_or_default()) {
            continue;
        }
        let Some(id) = c.id else { continue };
        match docker.remove_container(&id, Some(RemoveContainerOptionsBuilder::new().force(true).v(true).build())).await
        {
            Ok(()) => removed += 1,
            Err(e) if e.to_string().contains("404") || e.to_string().contains("no such container") => {}
            Err(e) => return Err(ContainersError::Engine(format!("removing container {id}: {e}"))),
        }
    }
    let networks = docker
        .list_networks(Some(ListNetworksOptionsBuilder::new().filters(filters).build()))
        .await
        .map_err(engine_err("listing networks"))?;
    let mut nets = 0;
    for n in networks {
        if !pick(&n.labels.clone().unwrap_or_default()) {
            continue;
        }
        let Some(name) = n.name.or(n.id) else { continue };
        match docker.remove_network(&name).await {
            Ok(()) => nets += 1,
            Err(e) if e.to_string().contains("404") => {}
            Err(e) => return Err(ContainersError::Engine(format!("removing network {name}: {e}"))),
        }
    }
    Ok((removed, nets))
}

/// What the engine still holds of a run: containers, networks and volumes labelled with it.
pub async fn leftovers(
    docker: &Docker,
    run_id: &str,
) -> Result<(Vec<String>, Vec<String>, Vec<String>), ContainersError> {
    let filters: HashMap<String, Vec<String>> =
        HashMap::from([("label".into(), vec![format!("{RUN_LABEL}={run_id}")])]);
    let containers = docker
        .list_containers(Some(ListContainersOptionsBuilder::new().all(true).filters(&filters).build()))
        .await
        .map_err(engine_err("listing containers"))?
        .into_iter()
        .map(|c| c.names.unwrap_or_default().join(","))
        .collect();
    let networks = docker
        .list_networks(Some(ListNetworksOptionsBuilder::new().filters(&filters).build()))
        .await
        .map_err(engine_err("listing networks"))?
        .into_iter()
        .filter_map(|n| n.name)
        .collect();
    let volumes = docker
        .list_volumes(Some(ListVolumesOptionsBuilder::new().filters(&filters).build()))
        .await
        .map_err(engine_err("listing volumes"))?
        .volumes
        .unwrap_or_default()
        .into_iter()
        .map(|v| v.name)
        .collect();
    Ok((containers, networks, volumes))
}

/// Runs `fut` to completion on a runtime of its own thread: for Drop, which may run inside or
/// outside an async context.
fn block_on_own_thread<F: std::future::Future<Output = ()> + Send + 'static>(fut: F) {
    let _ = std::thread::spawn(move || {
        if let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() {
            rt.block_on(fut);
        }
    })
    .join();
}

impl ContainersCluster {
    /// Creates the network and the containers, starts them and waits until the cluster is ready.
    pub async fn start(spec: ContainersSpec) -> Result<ContainersCluster, ClusterError> {
        if !matches!(spec.nodes, 1 | 3 | 5) {
            return Err(ClusterError::NodeCount(spec.nodes));
        }
        if spec.detached && spec.proxy.is_some() {
            return Err(ContainersError::Engine(
                "a detached cluster cannot have the proxy: it lives in the process that started it".into(),
            )
            .into());
        }
        let docker = engine().await?;
        match remove_orphans(&docker).await {
            Ok((0, 0)) => {}
            Ok((c, n)) => tracing::warn!(containers = c, networks = n, "removed what dead sinkhole runs left behind"),
            Err(e) => tracing::warn!("could not look for leftovers of dead runs: {e}"),
        }
        let image = match &spec.image {
            Some(i) => i.clone(),
            None => {
                let local = crate::image::default_tag(&spec.version);
                if docker.inspect_image(&local).await.is_ok() {
                    local
                } else {
                    crate::image::upstream_tag(&spec.version)
                }
            }
        };
        let dir = std::path::absolute(&spec.dir)
            .map_err(|source| ClusterError::Io { what: format!("resolving {}", spec.dir.display()), source })?;
        fs::create_dir_all(&dir)
            .map_err(|source| ClusterError::Io { what: format!("creating {}", dir.display()), source })?;
        let short = short_name(&spec.run_id);
        let network = format!("sinkhole-{short}");
        let owner = if spec.detached { DETACHED_OWNER.to_string() } else { owner() };
        let labels =
            HashMap::from([(RUN_LABEL.to_string(), spec.run_id.clone()), (OWNER_LABEL.to_string(), owner.clone())]);
        docker
            .create_network(NetworkCreateRequest {
                name: network.clone(),
                labels: Some(labels.clone()),
                ..Default::default()
            })
            .await
            .map_err(engine_err("creating the run's network"))?;
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
            image: image.clone(),
            cluster_id: new_cluster_id(),
            run_id: spec.run_id.clone(),
            network: network.clone(),
            dir: dir.clone(),
            nodes: Vec::new(),
            docker,
            reaper,
            torn_down: false,
            proxy: None,
        };
        if let (Some(p), Some(seed)) = (&proxied, spec.proxy) {
            // Before the containers: the rig's first connection to a broker already crosses it.
            let routes = addrs
                .iter()
                .zip(p)
                .map(|(a, p)| Route {
                    node: a.node_id,
                    kind: ListenerKind::Broker,
                    listen: std::net::SocketAddr::from(([127, 0, 0, 1], p.broker_port)),
                    upstream: std::net::SocketAddr::from(([127, 0, 0, 1], a.broker_port)),
                })
                .collect();
            match Proxy::start(routes, seed).await {
                Ok(proxy) => cluster.proxy = Some(proxy),
                Err(e) => {
                    cluster.remove_all().await;
                    return Err(ContainersError::Engine(format!("starting the proxy: {e}")).into());
                }
            }
        }
        let (repo, tag) = split_image(&image);
        for (i, (addr, (id, name))) in addrs.iter().zip(&names).enumerate() {
            let host_port = addr.broker_port;
            let proxy_port = proxied.as_ref().map(|p| p[i].broker_port);
            let props = render(*id, &names, proxy_port.unwrap_or(host_port), &spec.broker_config);
            let _ = fs::create_dir_all(dir.join(format!("node-{id}")));
            let _ = fs::write(dir.join(format!("node-{id}/server.properties")), &props);
            let bind_port = host_port.to_string();
            let req = GenericImage::new(repo.clone(), tag.clone())
                .with_entrypoint("/bin/sh")
                .with_exposed_port(ContainerPort::Tcp(EXTERNAL_PORT))
                .with_wait_for(WaitFor::Nothing)
                .with_cmd(["-c", ENTRY_SCRIPT])
                .with_container_name(name.clone())
                .with_hostname(name.clone())
                .with_network(network.clone())
                .with_label(RUN_LABEL, spec.run_id.clone())
                .with_label(OWNER_LABEL, owner.clone())
                .with_label("sinkhole.node", id.to_string())
                .with_env_var(
                    "PATH",
                    "/opt/java/openjdk/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                )
                .with_env_var("SINKHOLE_SERVER_PROPERTIES", props)
                .with_env_var("SINKHOLE_CLUSTER_ID", cluster.cluster_id.clone())
                .with_env_var("SINKHOLE_NODE_ID", id.to_string())
                .with_env_var("SINKHOLE_HEAP", spec.heap.clone())
                // Podman 4.3 reports an empty HostIp for a binding to all addresses, which
                // testcontainers cannot read back, and a 0.0.0.0 binding makes netavark write a
                // DNAT rule that hangs connections: publish on loopback, on the port picked.
                .with_host_config_modifier(move |hc| {
                    hc.publish_all_ports = Some(false);
                    hc.port_bindings = Some(HashMap::from([(
                        format!("{EXTERNAL_PORT}/tcp"),
                        Some(vec![PortBinding {
                            host_ip: Some("127.0.0.1".into()),
                            host_port: Some(bind_port.clone()),
                        }]),
                    )]));
                })
                .with_startup_timeout(Duration::from_secs(120));
            let container = match req.start().await {
                Ok(c) => c,
                Err(e) => {
                    let msg = e.to_string();
                    cluster.remove_all().await;
                    if spec.image.is_none()
                        && (msg.contains("pull")
                            || msg.contains("manifest")
                            || msg.contains("registry")
                            || msg.contains("404"))
                    {
                        return Err(
                            ContainersError::NoImage { image, version: spec.version.clone(), detail: msg }.into()
                        );
                    }
                    return Err(
                        ContainersError::Engine(format!("starting container {name} from {image}: {msg}")).into()
                    );
                }
            };
            cluster.nodes.push(ContainersNode {
                node_id: *id,
                name: name.clone(),
                host_port,
                proxy_port,
                container_id: container.id().to_string(),
                intent: Intent::Running,
                container: Some(container),
            });
        }
        if let Err(e) = cluster.await_ready(spec.ready_timeout).await {
            cluster.collect_logs().await;
            cluster.remove_all().await;
            return Err(e);
        }
        Ok(cluster)
    }

    fn index(&self, id: i32) -> Result<usize, ClusterError> {
        self.nodes
            .iter()
            .position(|n| n.node_id == id)
            .ok_or_else(|| ClusterError::UnknownNode { id, known: self.node_ids() })
    }

    pub fn node(&self, id: i32) -> Result<&ContainersNode, ClusterError> {
        Ok(&self.nodes[self.index(id)?])
    }

    pub fn log_path(&self, id: i32) -> PathBuf {
        self.dir.join(format!("node-{id}")).join("server.log")
    }

    /// The engine's view of node `id`'s container. Podman may briefly report a state bollard
    /// cannot parse right after an exit: retried for a second.
    pub async fn engine_state(&self, id: i32) -> Result<EngineState, ClusterError> {
        let cid = &self.nodes[self.index(id)?].container_id;
        let mut last = String::new();
        for _ in 0..10 {
            match self.docker.inspect_container(cid, None).await {
                Ok(r) => {
                    let s = r.state.unwrap_or_default();
                    let status = match s.status {
                        Some(ContainerStateStatusEnum::RUNNING) if s.paused == Some(true) => "paused".to_string(),
                        Some(st) => st.to_string(),
                        None => "unknown".to_string(),
                    };
                    return Ok(EngineState { status, pid: s.pid.filter(|p| *p > 0), exit_code: s.exit_code });
                }
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(ContainersError::Engine(format!("inspecting node {id}'s container: {last}")).into())
    }

    /// Polls the engine until `done` holds for the container's state, or `within` passes.
    async fn await_state(
        &self,
        id: i32,
        within: Duration,
        done: impl Fn(&EngineState) -> bool,
    ) -> Result<(EngineState, bool, u64), ClusterError> {
        let t0 = Instant::now();
        loop {
            let s = self.engine_state(id).await?;
            if done(&s) {
                return Ok((s, true, t0.elapsed().as_millis() as u64));
            }
            if t0.elapsed() >= within {
                return Ok((s, false, t0.elapsed().as_millis() as u64));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The container's log (stdout, then stderr) as the engine has it now.
    pub async fn logs(&self, id: i32) -> String {
        let Ok(i) = self.index(id) else { return String::new() };
        let Some(c) = self.nodes[i].container.as_ref() else { return String::new() };
        let out = c.stdout_to_vec().await.unwrap_or_default();
        let err = c.stderr_to_vec().await.unwrap_or_default();
        let mut s = String::from_utf8_lossy(&out).into_owned();
        if !err.is_empty() {
            s.push_str("\n--- stderr ---\n");
            s.push_str(&String::from_utf8_lossy(&err));
        }
        s
    }

    /// Writes every node's log into `node-<id>/server.log`.
    pub async fn collect_logs(&self) {
        for n in &self.nodes {
            let text = self.logs(n.node_id).await;
            if text.is_empty() {
                continue; // an adopted cluster has no log handle; keep what was collected
            }
            let path = self.log_path(n.node_id);
            if let Some(p) = path.parent() {
                let _ = fs::create_dir_all(p);
            }
            if let Err(e) = fs::write(&path, text) {
                tracing::warn!(node = n.node_id, "could not write {}: {e}", path.display());
            }
        }
    }

    async fn exited_error(&self, id: i32, during: &str, state: &EngineState) -> ClusterError {
        let logs = self.logs(id).await;
        let path = self.log_path(id);
        if let Some(p) = path.parent() {
            let _ = fs::create_dir_all(p);
        }
        let _ = fs::write(&path, &logs);
        let lines: Vec<&str> = logs.lines().collect();
        ClusterError::NodeExited {
            node: id,
            during: during.to_string(),
            code: format!("container {} (exit {:?})", state.status, state.exit_code),
            log: path,
            tail: lines[lines.len().saturating_sub(25)..].join("\n"),
        }
    }

    /// Ready = every node meant to run answers ApiVersions on its published port and its Metadata
    /// lists every node meant to run (the local backend's rule).
    async fn await_ready(&mut self, timeout: Duration) -> Result<(), ClusterError> {
        let want: Vec<i32> = self.nodes.iter().filter(|n| n.intent == Intent::Running).map(|n| n.node_id).collect();
        let started = Instant::now();
        let mut last = String::from("no node answered yet");
        loop {
            for &id in &want {
                let s = self.engine_state(id).await?;
                if s.run_state() == RunState::Gone {
                    return Err(self.exited_error(id, "the rig waited for the cluster to be ready", &s).await);
                }
            }
            let mut all = true;
            for &id in &want {
                if let Err(e) = node_sees(&self.node(id)?.bootstrap(), &want).await {
                    last = format!("node {id}: {e}");
                    all = false;
                    break;
                }
            }
            if all {
                tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, nodes = ?want, "containers cluster ready");
                return Ok(());
            }
            if started.elapsed() >= timeout {
                return Err(ClusterError::NotReady { secs: started.elapsed().as_secs_f64(), detail: last });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    async fn wait_node_ready(&self, id: i32, timeout: Duration) -> Result<(), ClusterError> {
        let expected: Vec<i32> = self.nodes.iter().filter(|n| n.intent == Intent::Running).map(|n| n.node_id).collect();
        let started = Instant::now();
        loop {
            let s = self.engine_state(id).await?;
            if s.run_state() == RunState::Gone {
                return Err(self.exited_error(id, "it was starting", &s).await);
            }
            match node_sees(&self.node(id)?.bootstrap(), &expected).await {
                Ok(()) => return Ok(()),
                Err(e) if started.elapsed() >= timeout => {
                    return Err(ClusterError::NotReady { secs: started.elapsed().as_secs_f64(), detail: e })
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// A [`SignalEffect`] from the engine's answer: `signal` names what the engine was asked,
    /// `observed` is the container's state seen after, `pid` the container's process before.
    fn effect(signal: &str, before: &EngineState, after: &EngineState, confirmed: bool, after_ms: u64) -> SignalEffect {
        SignalEffect {
            pid: before.pid.unwrap_or(0) as i32,
            signal: format!(
                "{signal} [engine: {} → {}{}]",
                before.status,
                after.status,
                after.exit_code.filter(|_| after.status == "exited").map(|c| format!(", exit {c}")).unwrap_or_default()
            ),
            confirmed,
            observed: after.run_state(),
            after_ms,
        }
    }

    /// The engine's stop: SIGTERM, then SIGKILL after `timeout` (a paused container is thawed
    /// first, or it could not act on SIGTERM).
    async fn stop(&mut self, i: usize, timeout: Duration) -> Result<Vec<SignalEffect>, ClusterError> {
        let id = self.nodes[i].node_id;
        let mut out = Vec::new();
        let mut before = self.engine_state(id).await?;
        if before.status == "paused" {
            let cid = self.nodes[i].container_id.clone();
            self.docker.unpause_container(&cid).await.map_err(engine_err("unpausing a container"))?;
            let (after, ok, ms) = self.await_state(id, Duration::from_secs(5), |s| s.status == "running").await?;
            out.push(Self::effect("SIGCONT (container unpause)", &before, &after, ok, ms));
            before = after;
        }
        if before.run_state() == RunState::Gone {
            return Ok(out);
        }
        let secs = timeout.as_secs().max(1) as i32;
        let t0 = Instant::now();
        let cid = self.nodes[i].container_id.clone();
        self.docker
            .stop_container(&cid, Some(StopContainerOptionsBuilder::new().t(secs).build()))
            .await
            .map_err(engine_err("stopping a container"))?;
        let (after, ok, _) = self.await_state(id, Duration::from_secs(10), |s| s.run_state() == RunState::Gone).await?;
        let ms = t0.elapsed().as_millis() as u64;
        // Exit 137 is SIGKILL: the broker did not finish its controlled shutdown in time.
        let graceful = ok && after.exit_code != Some(137);
        out.push(Self::effect("SIGTERM (container stop)", &before, &after, graceful, ms));
        if ok && !graceful {
            out.push(Self::effect("SIGKILL (container stop timeout)", &before, &after, true, ms));
        }
        Ok(out)
    }

    /// Applies a lifecycle action to node `id` and reports the engine's view of its effect
    /// ([`Cluster::act_with`]).
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
        let intent = self.nodes[i].intent;
        let before = self.engine_state(id).await?;
        let wrong = || ClusterError::WrongState { id, state: intent, action };
        match action {
            NodeAction::Kill => {
                if before.run_state() == RunState::Gone {
                    return Err(wrong());
                }
                let cid = self.nodes[i].container_id.clone();
                self.docker
                    .kill_container(&cid, Some(KillContainerOptionsBuilder::new().signal("KILL").build()))
                    .await
                    .map_err(engine_err("killing a container"))?;
                let (after, ok, ms) =
                    self.await_state(id, Duration::from_secs(5), |s| s.run_state() == RunState::Gone).await?;
                effect.signals.push(Self::effect("SIGKILL (container kill)", &before, &after, ok, ms));
                self.nodes[i].intent = Intent::Killed;
                tell_down(&mut on_down, &effect, started);
            }
            NodeAction::Stop => {
                if before.run_state() == RunState::Gone {
                    return Err(wrong());
                }
                effect.signals.extend(self.stop(i, timeout).await?);
                self.nodes[i].intent = Intent::Stopped;
                tell_down(&mut on_down, &effect, started);
            }
            NodeAction::Pause => {
                if intent != Intent::Running || before.status != "running" {
                    return Err(wrong());
                }
                let cid = self.nodes[i].container_id.clone();
                self.docker.pause_container(&cid).await.map_err(engine_err("pausing a container"))?;
                let (after, ok, ms) = self.await_state(id, Duration::from_secs(5), |s| s.status == "paused").await?;
                effect.signals.push(Self::effect("SIGSTOP (container pause: cgroup freezer)", &before, &after, ok, ms));
                self.nodes[i].intent = Intent::Paused;
            }
            NodeAction::Resume => {
                if intent != Intent::Paused {
                    return Err(wrong());
                }
                let cid = self.nodes[i].container_id.clone();
                self.docker.unpause_container(&cid).await.map_err(engine_err("unpausing a container"))?;
                let (after, ok, ms) = self.await_state(id, Duration::from_secs(5), |s| s.status == "running").await?;
                effect.signals.push(Self::effect("SIGCONT (container unpause)", &before, &after, ok, ms));
                self.nodes[i].intent = Intent::Running;
            }
            NodeAction::Start | NodeAction::Restart => {
                if action == NodeAction::Start && matches!(intent, Intent::Running | Intent::Paused) {
                    return Err(wrong());
                }
                if before.run_state() != RunState::Gone {
                    effect.signals.extend(self.stop(i, timeout).await?);
                }
                // The engine shows the container exited (or it was not running): down, and not
                // yet started again.
                tell_down(&mut on_down, &effect, started);
                let cid = self.nodes[i].container_id.clone();
                self.docker.start_container(&cid, None).await.map_err(engine_err("starting a container"))?;
                self.nodes[i].intent = Intent::Running;
                let (after, _, _) = self.await_state(id, Duration::from_secs(5), |s| s.status == "running").await?;
                effect.new_pid = after.pid.map(|p| p as i32);
                let ready = self.wait_node_ready(id, timeout).await;
                effect.ready = Some(ready.is_ok());
                if let Err(e @ ClusterError::NodeExited { .. }) = ready {
                    return Err(e);
                }
            }
        }
        effect.elapsed_ms = started.elapsed().as_millis() as u64;
        tracing::info!(node = id, ?action, signals = ?effect.signals.iter().map(|s| &s.signal).collect::<Vec<_>>(), "container action");
        Ok(effect)
    }

    /// The networks node `id`'s container is attached to, as the engine reports them.
    pub async fn networks_of(&self, id: i32) -> Result<Vec<String>, ClusterError> {
        let cid = &self.nodes[self.index(id)?].container_id;
        let r = self.docker.inspect_container(cid, None).await.map_err(engine_err("inspecting a container"))?;
        let mut nets: Vec<String> =
            r.network_settings.and_then(|n| n.networks).map(|m| m.into_keys().collect()).unwrap_or_default();
        nets.sort();
        Ok(nets)
    }

    /// Cuts node `id` off the run's network (the engine's network disconnect): every other
    /// node loses it both ways — replication, Raft, the transaction coordinator's markers — as
    /// Jepsen's partition nemesis isolates one node. Confirmed when the engine no longer lists
    /// the network on the container; `net-blackhole` on this backend ([`Cluster::isolate`]).
    /// The published port belongs to that network, so clients lose the
    /// node too (measured on Podman 4.3: a client's ApiVersions times out while the node is
    /// isolated): this is `net-blackhole`'s effect, not a broker↔broker-only cut.
    async fn disconnect(&mut self, id: i32) -> Result<NetworkEffect, ClusterError> {
        let i = self.index(id)?;
        let t0 = Instant::now();
        let cid = self.nodes[i].container_id.clone();
        self.docker
            .disconnect_network(&self.network, NetworkDisconnectRequest { container: cid, force: Some(true) })
            .await
            .map_err(engine_err("disconnecting a container from the run's network"))?;
        let networks = self.networks_of(id).await?;
        let confirmed = !networks.contains(&self.network);
        Ok(NetworkEffect { node_id: id, action: "disconnect".into(), networks, confirmed, elapsed_ms: ms(t0) })
    }

    /// Heals [`Self::disconnect`] ([`Cluster::rejoin`]): reconnects node `id` to the run's network under its container
    /// name (an alias, so the other nodes resolve it again; its hostname never changed).
    /// Confirmed when the engine lists the network on the container again.
    async fn reconnect(&mut self, id: i32) -> Result<NetworkEffect, ClusterError> {
        let i = self.index(id)?;
        let t0 = Instant::now();
        let (cid, name) = (self.nodes[i].container_id.clone(), self.nodes[i].name.clone());
        let endpoint = EndpointSettings { aliases: Some(vec![name]), ..Default::default() };
        self.docker
            .connect_network(&self.network, NetworkConnectRequest { container: cid, endpoint_config: Some(endpoint) })
            .await
            .map_err(engine_err("connecting a container to the run's network"))?;
        let networks = self.networks_of(id).await?;
        let confirmed = networks.contains(&self.network);
        Ok(NetworkEffect { node_id: id, action: "connect".into(), networks, confirmed, elapsed_ms: ms(t0) })
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

/// A containers cluster as `sinkhole cluster up` leaves it: `containers.json` in its directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContainersRecord {
    pub version: String,
    pub image: String,
    pub cluster_id: String,
    pub run_id: String,
    pub network: String,
    pub dir: PathBuf,
    pub nodes: Vec<ContainersNodeRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContainersNodeRecord {
    pub node_id: i32,
    pub name: String,
    pub host_port: u16,
    pub container_id: String,
    pub intent: Intent,
}

/// The state file of a containers cluster in a cluster directory.
pub const STATE_FILE: &str = "containers.json";

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

/// Starts `<sinkhole> reap-containers --run <id>`: a process of its own session that waits for
/// its stdin (our pipe) to close, then removes the run's containers and network. It outlives a
/// rig killed by any signal, `kill -9` included, since the kernel closes the pipe then.
fn spawn_reaper(bin: &Path, run_id: &str, dir: &Path) -> Option<Child> {
    let log = fs::File::create(dir.join("reaper.log")).ok();
    let mut cmd = Command::new(bin);
    cmd.args(["reap-containers", "--run", run_id]).stdin(Stdio::piped()).stdout(Stdio::null());
    match log {
        Some(f) => cmd.stderr(f),
        None => cmd.stderr(Stdio::null()),
    };
    match crate::procs::spawn(cmd, crate::procs::Lifetime::Detached) {
        Ok((child, _)) => Some(child),
        Err(e) => {
            tracing::warn!("no reaper process ({e}): a rig killed by a signal would leave containers behind");
            None
        }
    }
}

/// The reaper's body: wait for stdin to close, then remove the run's containers and network.
pub async fn reap_when_stdin_closes(run_id: &str) -> Result<(usize, usize), ContainersError> {
    tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    })
    .await
    .map_err(|e| ContainersError::Engine(e.to_string()))?;
    let docker = engine().await?;
    remove_run(&docker, run_id).await
}

/// Why a fault cannot run on the containers backend (None: it can). The proxy sits in front of
/// the host-facing listeners only, so it sees client↔broker traffic and none between brokers:
/// a network or protocol fault between two broker groups would match nothing, and a
/// `net-blackhole` would cut the clients from a node that still replicates and votes with the
/// others — not the isolation it means on the local backend.
pub fn unsupported_fault(f: &crate::scenario::FaultSpec) -> Option<String> {
    use crate::scenario::{FaultKind, Group};
    if !crate::runner::faults::is_proxy_fault(f.kind) {
        return None;
    }
    let label = f.name.clone().unwrap_or_else(|| f.kind.name().to_string());
    // net-blackhole disconnects the node from the run's network through the
    // engine (Cluster::isolate): brokers and clients are cut alike.
    if f.kind == FaultKind::NetBlackhole {
        return None;
    }
    let brokers = |g: &Option<Vec<Group>>| g.iter().flatten().any(|g| matches!(g, Group::Brokers | Group::Broker(_)));
    if brokers(&f.from) && brokers(&f.to) {
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

    fn node_ids(&self) -> Vec<i32> {
        self.nodes.iter().map(|n| n.node_id).collect()
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
    fn images_split_into_name_and_tag() {
        assert_eq!(split_image("localhost/sinkhole-kafka:4.4.0"), ("localhost/sinkhole-kafka".into(), "4.4.0".into()));
        assert_eq!(split_image("apache/kafka:4.0.2"), ("apache/kafka".into(), "4.0.2".into()));
        assert_eq!(split_image("registry:5000/kafka"), ("registry:5000/kafka".into(), "latest".into()));
    }

    #[test]
    fn render_wires_listeners_by_container_name_and_advertises_the_host_port() {
        let names = vec![(1, "a-kafka-1".to_string()), (2, "a-kafka-2".to_string()), (3, "a-kafka-3".to_string())];
        let mut o = BTreeMap::new();
        o.insert("transaction.state.log.min.isr".to_string(), "1".to_string());
        o.insert("node.id".to_string(), "9".to_string());
        let text = render(2, &names, 40123, &o);
        assert!(text.contains("node.id=2\n"), "{text}");
        assert!(!text.contains("node.id=9"), "rig-owned keys are not overridden");
        assert!(text.contains("controller.quorum.voters=1@a-kafka-1:9093,2@a-kafka-2:9093,3@a-kafka-3:9093\n"));
        assert!(text.contains("advertised.listeners=INTERNAL://a-kafka-2:9092,EXTERNAL://127.0.0.1:40123\n"));
        assert!(text.contains("inter.broker.listener.name=INTERNAL\n"));
        assert!(text.contains("transaction.state.log.replication.factor=3\n"));
        assert!(text.contains("transaction.state.log.min.isr=1\n"));
    }

    #[test]
    fn owners_are_alive_only_while_their_process_is() {
        assert!(owner_alive(&owner()));
        assert!(!owner_alive("999999999:1"));
        assert!(!owner_alive("garbage"));
        let me = ProcessId::of(std::process::id() as i32).unwrap();
        assert!(!owner_alive(&format!("{}:{}", me.pid, me.start_ticks + 1)), "a reused pid is not the owner");
    }

    #[test]
    fn only_faults_the_host_side_proxy_can_make_are_accepted() {
        let f = |v: serde_json::Value| -> crate::scenario::FaultSpec { serde_json::from_value(v).unwrap() };
        let at = serde_json::json!({"at_ms": 0});
        let b2b = f(serde_json::json!({"name": "split", "kind": "net-partition", "when": at,
                                       "from": ["broker-1"], "to": ["brokers"]}));
        assert!(unsupported_fault(&b2b).unwrap().contains("fault split: net-partition between broker groups"));
        let bh = f(serde_json::json!({"kind": "net-blackhole", "when": at, "target": [1]}));
        // The engine disconnects a blackholed node from the run's network.
        assert_eq!(unsupported_fault(&bh), None);
        let w2b = f(serde_json::json!({"kind": "net-partition", "when": at, "from": ["workers"], "to": ["broker-1"]}));
        assert_eq!(unsupported_fault(&w2b), None);
        let delay = f(serde_json::json!({"kind": "net-delay", "when": at, "delay_ms": 100}));
        assert_eq!(unsupported_fault(&delay), None);
        let drop = f(serde_json::json!({"kind": "protocol-drop", "when": at, "apis": ["EndTxn"]}));
        assert_eq!(unsupported_fault(&drop), None);
        let kill = f(serde_json::json!({"kind": "broker-kill", "when": at, "target": [1]}));
        assert_eq!(unsupported_fault(&kill), None);
    }

    #[test]
    fn paused_containers_are_stopped_processes() {
        let s = |st: &str| EngineState { status: st.into(), pid: None, exit_code: None };
        assert_eq!(s("running").run_state(), RunState::Running);
        assert_eq!(s("paused").run_state(), RunState::Stopped);
        assert_eq!(s("exited").run_state(), RunState::Gone);
    }
}
