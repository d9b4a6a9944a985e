//! Network faults the engine makes: a node's container disconnected from the run's network
//! and connected again (`net-blackhole` on this backend), each confirmed by the networks the
//! engine lists on the container afterwards.
use std::time::Instant;

use testcontainers::bollard::models::{EndpointSettings, NetworkConnectRequest, NetworkDisconnectRequest};

use super::engine::engine_err;
use super::ContainersCluster;
use crate::lifecycle::NodeOps;
use crate::{ClusterError, NetworkEffect};

fn ms(t0: Instant) -> u64 {
    t0.elapsed().as_millis() as u64
}

impl ContainersCluster {
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
    pub(super) async fn disconnect(&mut self, id: i32) -> Result<NetworkEffect, ClusterError> {
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
    pub(super) async fn reconnect(&mut self, id: i32) -> Result<NetworkEffect, ClusterError> {
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
}
