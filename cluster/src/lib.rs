//! Cluster backends: where the Kafka brokers under test come from, behind one trait.
//!
//! - [`local`]: brokers as JVM processes from a Kafka installation ([`sinkhole_install`]);
//! - [`containers`]: brokers in containers, on any engine with the Docker API;
//! - [`external`]: a cluster the rig did not start, acted on through command templates;
//! - [`node`]: what a node is on every backend — its actions, their effects, the errors;
//! - [`lifecycle`]: the node lifecycle written once — the states, the one transition function,
//!   and the driver that runs a legal action through a backend's own operations ([`NodeOps`]);
//! - [`lookup`]: the Kafka requests the rig asks any cluster (coordinator, controller, leader,
//!   under-replicated partitions, open transactions) and the readiness probe, written once;
//! - [`state`]: the state files of clusters that outlive one command (`sinkhole cluster up`);
//! - [`config`], [`ports`]: broker settings and loopback ports.
//!
//! The rest of the rig reaches a running cluster only through [`Cluster`], as Jepsen's nemesis
//! reaches nodes through its `db` and `control` protocols without knowing how they run: the
//! runner's faults, `sinkhole run` and the `cluster` command never name a backend's type after
//! it has started.
//!
//! # Why `dyn Cluster`
//!
//! The backend is picked at run time, from the scenario (`cluster.backend`) or the command
//! line, and `sinkhole run` holds one cluster of either kind for all its modes; the runner
//! takes that same cluster, and its tests take fakes. A trait object serves all three with one
//! compiled runner: `run` holds a `Box<dyn Cluster>`, the runner is generic over
//! `B: Cluster + ?Sized` (so `dyn Cluster` and the test fakes both fit) and borrows it. Static
//! dispatch would need either an enum of the backends with a hand-written `match` in every
//! method — a third copy of each operation to keep in step — or `run` and the whole runner made
//! generic and compiled once per backend. What it would save is one allocation per call, and
//! every call here is a network round trip, a signal and a wait, or a JVM start: milliseconds
//! to minutes. So the async methods return boxed futures ([`ClusterFuture`]), which is what
//! makes the trait object-safe.
//!
//! # Why [`ClusterNodes`] is a trait of its own
//!
//! A cluster's nodes and their lifecycle (which nodes, where clients reach them, `act`, the
//! wait until ready) are the same on every backend once the backend says how to signal, start
//! and confirm a node ([`NodeOps`]), so they are implemented once, for every `NodeOps`, in
//! [`lifecycle`]. A blanket implementation can only give a trait whole, hence the split:
//! [`Cluster`] requires [`ClusterNodes`] and keeps what each backend has of its own (teardown,
//! the proxy, isolation); the runner's test fakes, which have no [`NodeOps`], implement both by
//! hand. `NodeOps` itself is used statically (each backend's steps are `impl Future`, no boxes);
//! the one box is [`ClusterNodes::act_with`]'s, for the trait object.
pub mod config;
#[cfg(feature = "containers")]
pub mod containers;
pub mod external;
pub mod jvm;
pub mod lifecycle;
pub mod local;
pub mod lookup;
pub mod node;
pub mod ports;
pub mod state;

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use sinkhole_faults::proxy::Proxy;

pub use lifecycle::NodeOps;
pub use node::{
    new_cluster_id, ClusterError, CommandEffect, Intent, NetworkEffect, NodeAction, NodeEffect, OnDown, SinkListener,
};

/// A boxed future that may cross threads (the runner runs broker actions beside its loop).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What every asynchronous cluster operation returns.
pub type ClusterFuture<'a, T> = BoxFuture<'a, Result<T, ClusterError>>;

/// A cluster's nodes: which there are, where clients reach them, the lifecycle actions on them
/// and the wait until they answer. Every backend has it from its [`NodeOps`] through the one
/// implementation in [`lifecycle`]; the runner's tests implement it by hand for their fakes.
pub trait ClusterNodes: Send {
    fn node_ids(&self) -> Vec<i32>;

    /// Where clients reach each node, in node order, whatever the node's state (the proxy's
    /// port when the cluster has the proxy).
    fn bootstrap_list(&self) -> Vec<String>;

    /// Bootstrap servers of the nodes meant to be running, comma-separated (empty when none is).
    fn bootstrap(&self) -> String;

    /// Applies a lifecycle action to `node` and reports the effect the kernel, the engine or the
    /// protocol confirmed; `timeout` bounds a graceful stop and the wait for a started node to
    /// answer. `on_down` is told the moment the node is down ([`OnDown`]): for a restart, between
    /// its stop and its start. An action the node's state does not allow
    /// ([`lifecycle::transition`]) is [`ClusterError::WrongState`], and nothing is done.
    fn act_with(
        &mut self,
        node: i32,
        action: NodeAction,
        timeout: Duration,
        on_down: Option<OnDown>,
    ) -> ClusterFuture<'_, NodeEffect>;

    /// [`ClusterNodes::act_with`] with nobody waiting for the node to be down.
    fn act(&mut self, node: i32, action: NodeAction, timeout: Duration) -> ClusterFuture<'_, NodeEffect> {
        self.act_with(node, action, timeout, None)
    }

    /// Until every node meant to run answers and sees the others (see [`lookup::node_sees`]).
    fn wait_ready(&mut self, timeout: Duration) -> ClusterFuture<'_, ()>;
}

/// A running Kafka cluster of any backend: the operations the runner, its faults and the CLI
/// need. Its nodes and their lifecycle are [`ClusterNodes`]; each backend supplies teardown and
/// what only it has (the proxy, isolation); the lookups are the same Kafka requests on every
/// backend and default to [`lookup`] through [`Cluster::client_bootstrap`].
pub trait Cluster: ClusterNodes {
    /// `local`, `containers` or `external`: what the run reports.
    fn backend(&self) -> &'static str;

    /// Where the rig's own clients and newly started workers bootstrap: the nodes meant to be
    /// running, or every node when none is (a client then waits for one to come back).
    fn client_bootstrap(&self) -> Vec<String> {
        let running: Vec<String> = self.bootstrap().split(',').filter(|s| !s.is_empty()).map(str::to_string).collect();
        if running.is_empty() {
            self.bootstrap_list()
        } else {
            running
        }
    }

    /// The sink's SASL listener (ACL scenarios), when the cluster has one.
    fn sink_listener(&self) -> Option<SinkListener> {
        None
    }

    /// The Kafka-aware proxy in front of the listeners, when the cluster has one.
    fn proxy(&self) -> Option<Proxy> {
        None
    }

    /// The listener security every client of this cluster needs (an external cluster's
    /// SASL/TLS), by reference: the workers read the secret themselves.
    fn security(&self) -> Option<sinkhole_client::wire::security::Security> {
        None
    }

    /// Stops every node and removes what the backend created; idempotent.
    fn teardown(&mut self) -> BoxFuture<'_, ()>;

    /// The node coordinating `transactional_id` now (FindCoordinator, key type 1).
    fn find_coordinator(&mut self, transactional_id: &str) -> ClusterFuture<'_, i32> {
        let (bootstrap, tid) = (self.client_bootstrap(), transactional_id.to_string());
        Box::pin(async move { lookup::find_coordinator(&bootstrap, &tid).await })
    }

    /// The node coordinating consumer or share group `group` now (FindCoordinator, key type 0).
    fn find_group_coordinator(&mut self, group: &str) -> ClusterFuture<'_, i32> {
        let (bootstrap, group) = (self.client_bootstrap(), group.to_string());
        Box::pin(async move { lookup::find_group_coordinator(&bootstrap, &group).await })
    }

    /// The KRaft quorum leader now (DescribeQuorum).
    fn controller(&mut self) -> ClusterFuture<'_, i32> {
        let bootstrap = self.client_bootstrap();
        Box::pin(async move { lookup::controller(&bootstrap).await })
    }

    /// The leader of `topic`'s `partition` now (Metadata).
    fn leader_of(&mut self, topic: &str, partition: i32) -> ClusterFuture<'_, i32> {
        let (bootstrap, topic) = (self.client_bootstrap(), topic.to_string());
        Box::pin(async move { lookup::leader_of(&bootstrap, &topic, partition).await })
    }

    /// The `__transaction_state` partition of `transactional_id`, its leader, replicas and ISR now.
    fn txn_log_placement(&mut self, transactional_id: &str) -> ClusterFuture<'_, lookup::TxnLogPlacement> {
        let (bootstrap, tid) = (self.client_bootstrap(), transactional_id.to_string());
        Box::pin(async move { lookup::txn_log_placement(&bootstrap, &tid).await })
    }

    /// How many partitions (all topics) have fewer in-sync replicas than replicas.
    fn under_replicated(&mut self) -> ClusterFuture<'_, usize> {
        let bootstrap = self.client_bootstrap();
        Box::pin(async move { lookup::under_replicated(&bootstrap).await })
    }

    /// The coordinator's view of these transactional ids now (DescribeTransactions).
    fn describe_transactions(&mut self, ids: Vec<String>) -> ClusterFuture<'_, serde_json::Value> {
        let bootstrap = self.client_bootstrap();
        Box::pin(async move { lookup::describe_transactions(&bootstrap, &ids).await })
    }

    /// Whether `net-blackhole` cuts a node off the network itself (containers: the engine
    /// disconnects it from the run's network) rather than through the proxy (local nodes, whose
    /// every listener the proxy fronts).
    fn isolates_nodes(&self) -> bool {
        false
    }

    /// Cuts the node off every peer; the effect as the backend reports it.
    fn isolate(&mut self, node: i32) -> ClusterFuture<'_, NetworkEffect> {
        Box::pin(async move { Err(ClusterError::Unsupported(format!("this cluster cannot isolate node {node}"))) })
    }

    /// Undoes [`Cluster::isolate`].
    fn rejoin(&mut self, node: i32) -> ClusterFuture<'_, NetworkEffect> {
        Box::pin(async move { Err(ClusterError::Unsupported(format!("this cluster cannot rejoin node {node}"))) })
    }
}
