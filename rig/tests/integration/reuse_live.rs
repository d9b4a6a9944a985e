//! The health check that decides whether the matrix hands a cluster on to
//! the next cell, against a real 1-node Kafka 4.4.0: a healthy cluster
//! passes; an open transaction, a proxy rule left installed or a node that
//! is down each fail it, saying which. A run that hands its cluster on
//! deletes its topics (DeleteTopics), a topic already gone counting as deleted.
#![allow(clippy::await_holding_lock)]

use crate::common;

use std::time::Duration;

use sinkhole_client::producer::{Bytes, InitOptions, ProducerConfig, TxnProducer};
use sinkhole_cluster::local::LocalCluster;
use sinkhole_cluster::{Cluster, ClusterNodes, NodeAction};
use sinkhole_faults::proxy::{Action, Match, Rule};
use sinkhole_rig::run::reuse::health;

#[tokio::test]
async fn a_cluster_is_handed_on_only_when_healthy() {
    let _turn = common::serial();
    let mut spec = common::two_pc_spec("reuse");
    spec.proxy = Some(7);
    let mut cluster = LocalCluster::start(spec).await.expect("1-node cluster starts");
    health(&mut cluster).await.expect("a fresh cluster is healthy");

    // A transaction left open: not handed on, and the id is named.
    let servers = cluster.bootstrap_list();
    let mut admin = sinkhole_client::wire::Client::connect(&servers, Default::default()).await.unwrap();
    admin.create_topic("sinkhole-reuse", 1, 1, &[]).await.unwrap();
    let cfg = ProducerConfig {
        request_timeout: Duration::from_secs(10),
        ..ProducerConfig::new(servers.clone(), Some("sinkhole-reuse-open".into()))
    };
    let mut p = TxnProducer::connect(cfg).await.unwrap();
    p.init(InitOptions::default()).await.unwrap();
    p.begin().unwrap();
    p.send("sinkhole-reuse", 0, Bytes::from_static(b"k"), Bytes::from_static(b"v"), vec![]).await.unwrap();
    p.flush().await.unwrap();
    let why = health(&mut cluster).await.expect_err("an open transaction is damage");
    assert!(why.contains("still open") && why.contains("sinkhole-reuse-open"), "{why}");
    p.abort().await.unwrap();
    health(&mut cluster).await.expect("healthy again once it is aborted");

    // A proxy rule still installed.
    let proxy = cluster.proxy().expect("the spec asked for a proxy");
    let id = proxy.add(Rule { name: "left".into(), matches: Match::default(), action: Action::Drop });
    let why = health(&mut cluster).await.expect_err("a rule left installed is damage");
    assert!(why.contains("proxy rule"), "{why}");
    proxy.remove(id);

    // The run's topics deleted before the cluster is handed on; deleting them again is no error.
    let topics = ["sinkhole-reuse".to_string()];
    sinkhole_rig::run::reuse::drop_topics(&servers, &topics).await.expect("the topic deleted");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while admin.metadata(None).await.unwrap().topic("sinkhole-reuse").is_some() {
        assert!(std::time::Instant::now() < deadline, "the deleted topic is still listed after 10 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    sinkhole_rig::run::reuse::drop_topics(&servers, &topics).await.expect("a topic already gone counts as deleted");
    health(&mut cluster).await.expect("healthy once its topic is gone");

    // A node down.
    cluster.act(1, NodeAction::Kill, Duration::from_secs(30)).await.unwrap();
    let why = health(&mut cluster).await.expect_err("a node down is damage");
    assert!(why.contains("0 of 1 node(s) are running"), "{why}");
    cluster.teardown();
}
