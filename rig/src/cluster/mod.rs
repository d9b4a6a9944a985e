//! Cluster backends: where the Kafka brokers under test come from.
//!
//! `local` runs brokers as JVM processes from a Kafka installation (see
//! [`crate::install`]). The `containers` and `external` backends of docs/ARCHITECTURE.md
//! come with later issues and will sit behind the same node-lifecycle actions
//! ([`local::NodeAction`]).
pub mod config;
pub mod containers;
pub mod local;
pub mod ports;
pub mod state;

use std::time::Duration;

/// A running cluster of either backend, with the operations the runner and `sinkhole run` use
/// (`impl Brokers for Cluster` is in [`containers`]).
#[derive(Debug)]
pub enum Cluster {
    Local(local::LocalCluster),
    Containers(containers::ContainersCluster),
}

impl Cluster {
    pub fn backend(&self) -> &'static str {
        match self {
            Cluster::Local(_) => "local",
            Cluster::Containers(_) => "containers",
        }
    }
    /// Bootstrap servers of the nodes meant to be running, comma-separated.
    pub fn bootstrap(&self) -> String {
        match self {
            Cluster::Local(c) => c.bootstrap(),
            Cluster::Containers(c) => c.bootstrap(),
        }
    }
    pub fn bootstrap_list(&self) -> Vec<String> {
        match self {
            Cluster::Local(c) => c.bootstrap_list(),
            Cluster::Containers(c) => c.bootstrap_list(),
        }
    }
    pub fn node_ids(&self) -> Vec<i32> {
        match self {
            Cluster::Local(c) => c.node_ids(),
            Cluster::Containers(c) => c.node_ids(),
        }
    }
    pub async fn act(
        &mut self,
        node: i32,
        action: local::NodeAction,
        timeout: Duration,
    ) -> anyhow::Result<local::NodeEffect> {
        match self {
            Cluster::Local(c) => Ok(c.act(node, action, timeout).await?),
            Cluster::Containers(c) => Ok(c.act(node, action, timeout).await?),
        }
    }
    pub async fn wait_ready(&mut self, timeout: Duration) -> anyhow::Result<()> {
        match self {
            Cluster::Local(c) => Ok(c.wait_ready(timeout).await?),
            Cluster::Containers(c) => Ok(c.wait_ready(timeout).await?),
        }
    }
    /// The sink's SASL listener (local backend, ACL scenarios); the containers backend has none.
    pub fn sink_listener(&self) -> Option<local::SinkListener> {
        match self {
            Cluster::Local(c) => c.sink_listener(),
            Cluster::Containers(_) => None,
        }
    }
    /// Stops every node and removes what the backend created (containers, network); idempotent.
    pub async fn teardown(&mut self) {
        match self {
            Cluster::Local(c) => c.teardown(),
            Cluster::Containers(c) => c.teardown().await,
        }
    }
}
