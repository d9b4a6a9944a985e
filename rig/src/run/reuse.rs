//! A cluster kept up from one run to the next (the matrix's consecutive
//! cells with the same cluster spec, an exploration's runs, a shrink's and a
//! replay's tries), and the check that it is still fit to hand over.
//!
//! Starting Kafka is most of a short cell's overhead; a cell that shares a
//! warm cluster gets its own topics and transactional ids (both carry the
//! run id), so nothing of the earlier run is read or fenced. What it must
//! not inherit is damage: a node down, partitions under-replicated, a
//! transaction still open (the broker would abort it under the next run's
//! feet), a proxy rule left installed. [`health`] looks for each; any one of
//! them and the next cell gets a fresh cluster, and says why.
//!
//! What it would inherit without harm but at a cost is the earlier runs'
//! data: a kept cluster serves an exploration's runs for hours, and each
//! run's topics would stay on its brokers' disks (tens of MB a run) and be
//! recovered again by every broker a later fault kills. A campaign's run
//! drops its log segments with its cluster ([`super::RunArgs::drop_data`]);
//! a kept cluster drops the run's topics instead ([`drop_topics`]).
use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_client::wire::WireError;

use super::{broker_config, Plan};
use sinkhole_cluster::Cluster;

/// What makes two runs' clusters interchangeable: the same Kafka, the same
/// nodes and broker settings, the same backend and image, the proxy in the
/// path or not. A scenario with an authorizer is never shared (its sink
/// principal's password and ACLs are the run's own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClusterKey {
    pub kafka: String,
    pub brokers: usize,
    pub broker_config: BTreeMap<String, String>,
    pub backend: String,
    pub image: Option<String>,
    pub proxy: bool,
}

/// The key of the plan's cluster, or None when it must be the run's own.
pub fn cluster_key(plan: &Plan) -> Option<ClusterKey> {
    let s = &plan.scenario;
    if s.cluster.authorizer.is_some() {
        return None;
    }
    Some(ClusterKey {
        kafka: s.cluster.kafka.clone(),
        brokers: s.cluster.brokers,
        broker_config: broker_config(s),
        backend: format!("{:?}", s.cluster.backend).to_lowercase(),
        image: s.cluster.image.clone(),
        proxy: s.needs_proxy(),
    })
}

/// A cluster handed from one run to the next.
pub struct Warm {
    pub cluster: Box<dyn Cluster>,
    pub key: ClusterKey,
    /// The run that started it (its directory holds the nodes' logs).
    pub started_by: String,
}

impl Warm {
    /// Tears the kept cluster down: a campaign's end, however it ends.
    pub async fn teardown(mut self) {
        self.cluster.teardown().await;
    }
}

/// The topics a run made: each mode's output, and a share-group source's input.
pub fn run_topics(plan: &Plan) -> Vec<String> {
    let s = &plan.scenario;
    let mut topics = Vec::new();
    for m in &s.modes {
        let topic = plan.topic(*m);
        if s.share_source().is_some() {
            topics.push(sinkhole_scenario::source::input_topic(&topic));
        }
        topics.push(topic);
    }
    topics
}

/// Deletes `topics` (checked and drained already) from a cluster kept for the next run.
pub async fn drop_topics(bootstrap: &[String], topics: &[String]) -> Result<(), WireError> {
    let mut client = Client::connect(bootstrap, ClientConfig::default()).await?;
    client.delete_topics(topics).await
}

/// How the run came by its cluster, for summary.json and matrix.json.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ClusterUse {
    /// The run whose cluster this run reused (None: it started its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from: Option<String>,
    /// Why a cluster that was offered was not reused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_because: Option<String>,
}

/// Transaction states that are not finished (Kafka's `TransactionState`).
const OPEN_STATES: [&str; 4] = ["Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"];

/// Whether the cluster is fit for another run: every node answers and sees
/// the others, no partition is under-replicated, no transaction is open, no
/// proxy rule is left. `Err` says what is wrong.
pub async fn health(cluster: &mut dyn Cluster) -> Result<(), String> {
    // A node a fault left killed, stopped or paused is not among those the
    // backend means to be running, and waiting for readiness would skip it.
    let running = cluster.bootstrap().split(',').filter(|a| !a.is_empty()).count();
    let nodes = cluster.node_ids().len();
    if running < nodes {
        return Err(format!("only {running} of {nodes} node(s) are running"));
    }
    // A rule left in the path would also make the nodes look unready.
    if let Some(p) = cluster.proxy() {
        if p.active_rules() > 0 {
            return Err(format!("{} proxy rule(s) still installed", p.active_rules()));
        }
    }
    cluster.wait_ready(Duration::from_secs(20)).await.map_err(|e| format!("a node is not ready: {e}"))?;
    // Replicas catch up a little after a restart: give them a few seconds.
    let mut urp = cluster.under_replicated().await.map_err(|e| format!("under-replicated partitions unknown: {e}"))?;
    for _ in 0..20 {
        if urp == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        urp = cluster.under_replicated().await.map_err(|e| format!("under-replicated partitions unknown: {e}"))?;
    }
    if urp > 0 {
        return Err(format!("{urp} partition(s) still under-replicated after 10 s"));
    }
    let states: Vec<String> = OPEN_STATES.iter().map(|s| s.to_string()).collect();
    let mut client = Client::connect(&cluster.client_bootstrap(), ClientConfig::default())
        .await
        .map_err(|e| format!("the cluster does not answer: {e}"))?;
    // A commit or abort just answered still writes its markers (Prepare*):
    // give what is finishing a few seconds before calling it open.
    let mut open = vec![];
    for _ in 0..20 {
        open = client.list_transactions(&states, &[]).await.map_err(|e| format!("ListTransactions failed: {e}"))?;
        if open.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    if let Some(t) = open.first() {
        return Err(format!(
            "{} transaction(s) still open after 5 s, e.g. {} ({}, on node {})",
            open.len(),
            t.transactional_id,
            t.state,
            t.broker
        ));
    }
    Ok(())
}
