//! What a local cluster needs before its first start: loopback ports for the sink listener,
//! the proxy's routes, and every node's storage formatted by Kafka's own
//! `kafka.tools.StorageTool` with the one cluster id.
use std::process::{Command, Stdio};

use sinkhole_faults::proxy::{ListenerKind, Route};

use super::{LocalCluster, LocalError};
use crate::config::NodeAddr;
use crate::node::io;
use crate::ports::PortError;
use crate::ClusterError;
use sinkhole_base::procs::{self, Lifetime};

/// One loopback port per node for the sink listener (or an extra listener), distinct from each
/// other, from the nodes' own ports and from `also` (ports already chosen for other listeners).
pub(super) fn sink_ports(addrs: &[NodeAddr], also: &[u16]) -> Result<Vec<u16>, ClusterError> {
    let mut taken: Vec<u16> = addrs.iter().flat_map(|a| [a.broker_port, a.controller_port]).collect();
    taken.extend_from_slice(also);
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
pub(super) fn proxy_routes(real: &[NodeAddr], proxied: &[NodeAddr]) -> Vec<Route> {
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

impl LocalCluster {
    /// `StorageTool format` for every node, in parallel (each is a short JVM).
    pub(super) fn format_all(&self) -> Result<(), ClusterError> {
        let mut running = Vec::new();
        for node in &self.nodes {
            let mut cmd = Command::new(self.dist.java());
            // The format tool maps the brokers' archive too (same classpath), but never
            // writes one: only a broker's exit knows every class a broker loads.
            let archive = match &self.class_archive {
                a @ super::cds::ClassArchive::Use(_) => a.jvm_args(),
                _ => vec![],
            };
            cmd.arg("-Xmx256m")
                .args(archive)
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
}
