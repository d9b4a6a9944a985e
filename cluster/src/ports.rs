//! Loopback ports for local nodes.
//!
//! Free ports come from the kernel (bind to port 0, read it back, close). A
//! small window remains in which another process could take the port before
//! the broker binds it; the broker then fails at start and the rig reports
//! its log. Ports given by the user are checked up front, so an occupied
//! `--base-port` is one clear error instead of a broker that dies at start.
use std::collections::BTreeSet;
use std::net::{Ipv4Addr, TcpListener};

use super::config::NodeAddr;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PortError {
    #[error("port {port} ({what}) is already in use on 127.0.0.1: choose another --base-port, or leave it out to use free ports")]
    Occupied { port: u16, what: String },
    #[error("--base-port {base} leaves no room for {nodes} node(s): node ports run from {base} to {base}+{span}")]
    OutOfRange { base: u16, nodes: usize, span: usize },
    #[error("no free loopback port: {0}")]
    NoneFree(String),
}

/// Binds and returns a port the kernel says is free right now.
fn free_port(taken: &BTreeSet<u16>) -> Result<u16, PortError> {
    for _ in 0..64 {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| PortError::NoneFree(e.to_string()))?;
        let port = l.local_addr().map_err(|e| PortError::NoneFree(e.to_string()))?.port();
        if !taken.contains(&port) {
            return Ok(port);
        }
    }
    Err(PortError::NoneFree("the kernel kept returning ports already chosen".into()))
}

/// `n` distinct free loopback ports (a Flink cluster's RPC, REST and blob ports).
pub fn free_ports(n: usize) -> Result<Vec<u16>, PortError> {
    let mut taken = BTreeSet::new();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let p = free_port(&taken)?;
        taken.insert(p);
        out.push(p);
    }
    Ok(out)
}

/// Whether `port` can be bound on loopback now.
pub fn is_free(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}

/// Addresses for nodes 1..=n. With `base`, node i (1-based) uses
/// `base + 2(i-1)` for its broker listener and the next port for its
/// controller; without, free ports.
pub fn allocate(nodes: usize, base: Option<u16>) -> Result<Vec<NodeAddr>, PortError> {
    let mut out = Vec::with_capacity(nodes);
    match base {
        Some(base) => {
            let span = 2 * nodes - 1;
            if base as usize + span > u16::MAX as usize || base == 0 {
                return Err(PortError::OutOfRange { base, nodes, span });
            }
            for i in 0..nodes {
                let node_id = i as i32 + 1;
                let broker_port = base + 2 * i as u16;
                let controller_port = broker_port + 1;
                for (port, what) in [(broker_port, "broker listener"), (controller_port, "controller listener")] {
                    if !is_free(port) {
                        return Err(PortError::Occupied { port, what: format!("node {node_id} {what}") });
                    }
                }
                out.push(NodeAddr { node_id, broker_port, controller_port });
            }
        }
        None => {
            let mut taken = BTreeSet::new();
            for i in 0..nodes {
                let broker_port = free_port(&taken)?;
                taken.insert(broker_port);
                let controller_port = free_port(&taken)?;
                taken.insert(controller_port);
                out.push(NodeAddr { node_id: i as i32 + 1, broker_port, controller_port });
            }
        }
    }
    Ok(out)
}

/// Free ports for the proxy's listeners in front of `nodes` (one for the
/// broker listener, one for the controller listener, per node), distinct
/// from the nodes' own ports, from `also` (other ports the nodes will bind)
/// and from each other.
pub fn allocate_proxy(nodes: &[NodeAddr], also: &[u16]) -> Result<Vec<NodeAddr>, PortError> {
    let mut taken: BTreeSet<u16> = nodes.iter().flat_map(|a| [a.broker_port, a.controller_port]).collect();
    taken.extend(also);
    let mut out = Vec::with_capacity(nodes.len());
    for n in nodes {
        let broker_port = free_port(&taken)?;
        taken.insert(broker_port);
        let controller_port = free_port(&taken)?;
        taken.insert(controller_port);
        out.push(NodeAddr { node_id: n.node_id, broker_port, controller_port });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct() {
        let addrs = allocate(3, None).unwrap();
        let ports: BTreeSet<u16> = addrs.iter().flat_map(|a| [a.broker_port, a.controller_port]).collect();
        assert_eq!(ports.len(), 6);
        assert_eq!(addrs.iter().map(|a| a.node_id).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn proxy_ports_are_distinct_from_the_nodes_ports() {
        let addrs = allocate(3, None).unwrap();
        let proxied = allocate_proxy(&addrs, &[]).unwrap();
        let ports: BTreeSet<u16> =
            addrs.iter().chain(&proxied).flat_map(|a| [a.broker_port, a.controller_port]).collect();
        assert_eq!(ports.len(), 12);
        assert_eq!(proxied.iter().map(|a| a.node_id).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn an_occupied_base_port_is_named() {
        let holder = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = holder.local_addr().unwrap().port();
        // Node 1's controller port is base+1: occupy it.
        let err = allocate(1, Some(port - 1)).unwrap_err();
        assert_eq!(err, PortError::Occupied { port, what: "node 1 controller listener".into() });
        assert!(err.to_string().contains("--base-port"));
    }

    #[test]
    fn a_base_port_too_high_is_refused() {
        assert!(matches!(allocate(3, Some(65533)), Err(PortError::OutOfRange { .. })));
    }
}
