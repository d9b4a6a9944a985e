//! Starting a containers cluster, step by step ([`ContainersCluster::start`]): the spec checked,
//! the engine made ready (what dead runs left behind removed), the image picked, the run's
//! network, the proxy in front of the published listeners, and each node's container. Every
//! step after the cluster value exists removes what the run created when it fails, so a failed
//! start leaves nothing behind.
use std::collections::HashMap;
use std::fs;
use std::time::Duration;

use sinkhole_base::rundir::ClusterDir;
use sinkhole_faults::proxy::{ListenerKind, Proxy, Route};
use testcontainers::bollard::models::{NetworkCreateRequest, PortBinding};
use testcontainers::bollard::Docker;
use testcontainers::core::{ContainerPort, WaitFor};
use testcontainers::runners::AsyncRunner;
use testcontainers::{ContainerRequest, GenericImage, ImageExt};

use super::engine::{self, docker_host, engine, engine_err, remove_orphans, ContainersError, OWNER_LABEL, RUN_LABEL};
use super::props::{render, split_image, ENTRY_SCRIPT, EXTERNAL_PORT};
use super::{image, ContainersCluster, ContainersNode, ContainersSpec};
use crate::config::NodeAddr;
use crate::{ClusterError, Intent};

/// What makes a spec impossible, found before anything is created.
pub(super) fn check(spec: &ContainersSpec) -> Result<(), ClusterError> {
    if !matches!(spec.nodes, 1 | 3 | 5) {
        return Err(ClusterError::NodeCount(spec.nodes));
    }
    if spec.detached && spec.proxy.is_some() {
        return Err(ContainersError::Engine(
            "a detached cluster cannot have the proxy: it lives in the process that started it".into(),
        )
        .into());
    }
    Ok(())
}

/// The engine, also reachable by testcontainers, with what dead runs left behind removed.
pub(super) async fn ready_engine() -> Result<Docker, ClusterError> {
    let docker = engine().await?;
    engine::check_testcontainers_reaches(docker_host().as_deref())?;
    match remove_orphans(&docker).await {
        Ok((0, 0)) => {}
        Ok((c, n)) => tracing::warn!(containers = c, networks = n, "removed what dead sinkhole runs left behind"),
        Err(e) => tracing::warn!("could not look for leftovers of dead runs: {e}"),
    }
    Ok(docker)
}

/// The spec's image; else `localhost/sinkhole-kafka:<version>` if the engine has it, else the
/// upstream image (pulled).
pub(super) async fn pick_image(docker: &Docker, spec: &ContainersSpec) -> String {
    if let Some(i) = &spec.image {
        return i.clone();
    }
    let local = image::default_tag(&spec.version);
    if docker.inspect_image(&local).await.is_ok() {
        local
    } else {
        image::upstream_tag(&spec.version)
    }
}

/// Creates the run's network `name`, labelled with the run and its owner.
pub(super) async fn create_network(docker: &Docker, name: &str, run_id: &str, owner: &str) -> Result<(), ClusterError> {
    let labels =
        HashMap::from([(RUN_LABEL.to_string(), run_id.to_string()), (OWNER_LABEL.to_string(), owner.to_string())]);
    docker
        .create_network(NetworkCreateRequest { name: name.to_string(), labels: Some(labels), ..Default::default() })
        .await
        .map_err(engine_err("creating the run's network"))?;
    Ok(())
}

/// One node about to be created: its id and container name, the host port its `EXTERNAL`
/// listener is published on and the proxy's port in front of it.
pub(super) struct NewNode<'a> {
    pub id: i32,
    pub name: &'a str,
    pub host_port: u16,
    pub proxy_port: Option<u16>,
}

impl ContainersCluster {
    /// Starts the proxy, before the containers: the rig's first connection to a broker already
    /// crosses it. `proxied` holds the proxy's listener for each of `addrs`.
    pub(super) async fn start_proxy(
        &mut self,
        addrs: &[NodeAddr],
        proxied: &[NodeAddr],
        seed: u64,
    ) -> Result<(), ClusterError> {
        let loopback = |port| std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let routes = addrs
            .iter()
            .zip(proxied)
            .map(|(a, p)| Route {
                node: a.node_id,
                kind: ListenerKind::Broker,
                listen: loopback(p.broker_port),
                upstream: loopback(a.broker_port),
            })
            .collect();
        match Proxy::start(routes, seed).await {
            Ok(proxy) => {
                self.proxy = Some(proxy);
                Ok(())
            }
            Err(e) => {
                self.remove_all().await;
                Err(ContainersError::Engine(format!("starting the proxy: {e}")).into())
            }
        }
    }

    /// Writes `node`'s configuration (also into `node-<id>/server.properties`, for the record),
    /// starts its container and adds it to the cluster; `names` are every node's.
    pub(super) async fn start_node(
        &mut self,
        spec: &ContainersSpec,
        owner: &str,
        names: &[(i32, String)],
        node: NewNode<'_>,
    ) -> Result<(), ClusterError> {
        let id = node.id;
        let props = render(id, names, node.proxy_port.unwrap_or(node.host_port), &spec.broker_config);
        let _ = fs::create_dir_all(ClusterDir::at(&self.dir).node(id));
        let _ = fs::write(ClusterDir::at(&self.dir).node_properties(id), &props);
        let req = self
            .container_request(&node, owner, spec)
            .with_env_var("SINKHOLE_SERVER_PROPERTIES", props)
            .with_startup_timeout(Duration::from_secs(120));
        let container = match req.start().await {
            Ok(c) => c,
            Err(e) => {
                self.remove_all().await;
                return Err(start_error(spec, &self.image, node.name, e.to_string()));
            }
        };
        self.nodes.push(ContainersNode {
            node_id: id,
            name: node.name.to_string(),
            host_port: node.host_port,
            proxy_port: node.proxy_port,
            container_id: container.id().to_string(),
            intent: Intent::Running,
            container: Some(container),
        });
        Ok(())
    }

    /// The container of `node` on the run's network, labelled with the run, its owner and the
    /// node, its `EXTERNAL` listener published on the node's host port.
    fn container_request(
        &self,
        node: &NewNode<'_>,
        owner: &str,
        spec: &ContainersSpec,
    ) -> ContainerRequest<GenericImage> {
        let (repo, tag) = split_image(&self.image);
        let bind_port = node.host_port.to_string();
        GenericImage::new(repo, tag)
            .with_entrypoint("/bin/sh")
            .with_exposed_port(ContainerPort::Tcp(EXTERNAL_PORT))
            .with_wait_for(WaitFor::Nothing)
            .with_cmd(["-c", ENTRY_SCRIPT])
            .with_container_name(node.name)
            .with_hostname(node.name)
            .with_network(self.network.clone())
            .with_label(RUN_LABEL, self.run_id.clone())
            .with_label(OWNER_LABEL, owner)
            .with_label("sinkhole.node", node.id.to_string())
            .with_env_var("PATH", "/opt/java/openjdk/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
            .with_env_var("SINKHOLE_CLUSTER_ID", self.cluster_id.clone())
            .with_env_var("SINKHOLE_NODE_ID", node.id.to_string())
            .with_env_var("SINKHOLE_HEAP", spec.heap.clone())
            .with_env_var("SINKHOLE_JVM_OPTS", crate::jvm::broker_options(spec.jit).join(" "))
            // Podman 4.3 reports an empty HostIp for a binding to all addresses, which
            // testcontainers cannot read back, and a 0.0.0.0 binding makes netavark write a
            // DNAT rule that hangs connections: publish on loopback, on the port picked.
            .with_host_config_modifier(move |hc| {
                hc.publish_all_ports = Some(false);
                hc.port_bindings = Some(HashMap::from([(
                    format!("{EXTERNAL_PORT}/tcp"),
                    Some(vec![PortBinding { host_ip: Some("127.0.0.1".into()), host_port: Some(bind_port.clone()) }]),
                )]));
            })
    }
}

/// Why container `name` did not start: the default image missing (no registry, no local
/// build) when that is what the engine says, else the engine's words.
fn start_error(spec: &ContainersSpec, image: &str, name: &str, msg: String) -> ClusterError {
    let missing = ["pull", "manifest", "registry", "404"].iter().any(|w| msg.contains(w));
    if spec.image.is_none() && missing {
        return ContainersError::NoImage { image: image.to_string(), version: spec.version.clone(), detail: msg }
            .into();
    }
    ContainersError::Engine(format!("starting container {name} from {image}: {msg}")).into()
}
