//! The Kafka-aware proxy in front of real Kafka 4.4.0 brokers: the cluster
//! starts and serves transactions through it, a dropped EndTxn response
//! leaves the client without an answer while the broker commits, an injected
//! FindCoordinator error reaches the client, and (3 nodes) a two-way
//! partition between brokers takes a broker out of the ISR.
// Each #[tokio::test] runs on a runtime of its own thread, so holding the
// std mutex that serialises cluster tests across awaits cannot deadlock.
#![allow(clippy::await_holding_lock)]
use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;
use sinkhole_client::producer::{InitOptions, ProducerConfig, TxnProducer};
use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_client::wire::KafkaCode;
use sinkhole_cluster::local::{LocalCluster, LocalSpec};
use sinkhole_cluster::{Cluster, ClusterNodes, NodeAction};
use sinkhole_faults::proxy::{Action, Frames, ListenerKind, Match, Peer, PeerGroup, Rule};

fn admin_config() -> ClientConfig {
    ClientConfig {
        client_id: "sinkhole-proxy-live".into(),
        request_timeout: Duration::from_secs(5),
        retry_deadline: Duration::from_secs(10),
        ..ClientConfig::default()
    }
}

/// A producer that looks like subtask `subtask` of a `legacy` sink.
fn producer(bootstrap: &[String], tid: &str, subtask: u32, timeouts: (u64, u64)) -> ProducerConfig {
    ProducerConfig {
        request_timeout: Duration::from_secs(timeouts.0),
        delivery_timeout: Duration::from_secs(timeouts.1),
        client_id: format!("sinkhole-legacy-{subtask}-1"),
        ..ProducerConfig::new(bootstrap.to_vec(), Some(tid.to_string()))
    }
}

async fn produce(p: &mut TxnProducer, topic: &str, partitions: i32, n: usize) {
    for i in 0..n {
        let key = format!("k-{i}").into_bytes().into();
        p.send(topic, (i % partitions as usize) as i32, key, vec![b'v'; 100].into(), vec![]).await.unwrap();
    }
    p.flush().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_node_transactions_drop_and_error_through_the_proxy() {
    let _turn = common::serial();
    let mut spec = common::two_pc_spec("proxy-one");
    spec.proxy = Some(7);
    let t0 = Instant::now();
    let mut cluster = LocalCluster::start(spec).await.expect("the cluster becomes ready through the proxy");
    eprintln!("1-node proxied cluster ready in {:.1} s", t0.elapsed().as_secs_f64());
    let proxy = cluster.proxy().expect("a proxied cluster has its proxy");
    let routes = proxy.routes();
    assert_eq!(routes.len(), 2, "broker and controller listener of node 1");
    let broker_route = routes.iter().find(|r| r.kind == ListenerKind::Broker).unwrap();
    assert_eq!(cluster.bootstrap_list(), vec![broker_route.listen.to_string()], "clients bootstrap at the proxy");
    let bootstrap = cluster.bootstrap_list();

    let mut admin = Client::connect(&bootstrap, admin_config()).await.unwrap();
    let md = admin.metadata(Some(&[])).await.unwrap();
    assert_eq!(md.brokers[0].port as u16, broker_route.listen.port(), "the broker advertises the proxy port");
    admin.create_topic("through-proxy", 2, 1, &[]).await.unwrap();

    // A transaction through the proxy commits.
    let mut p = TxnProducer::connect(producer(&bootstrap, "proxy-ok", 0, (10, 30))).await.unwrap();
    p.init(InitOptions::default()).await.expect("InitProducerId through the proxy");
    p.begin().unwrap();
    produce(&mut p, "through-proxy", 2, 100).await;
    p.commit(None).await.expect("commit through the proxy");
    let conns = proxy.connections();
    assert!(conns.iter().any(|(peer, node, _)| *peer == Peer::Worker(0) && *node == 1), "{conns:?}");
    assert!(
        conns
            .iter()
            .any(|(peer, _, cid)| *peer == Peer::Other("sinkhole-proxy-live".into()) && cid == "sinkhole-proxy-live"),
        "{conns:?}"
    );

    // EndTxn responses of one transactional id are dropped: the client gets
    // no answer, the broker commits anyway.
    let tid = "proxy-drop";
    let drop_rule = proxy.add(Rule {
        name: "drop-endtxn".into(),
        matches: Match {
            api_keys: vec![ApiKey::EndTxn as i16],
            frames: Some(Frames::Response),
            transactional_id: Some(tid.into()),
            ..Match::default()
        },
        action: Action::Drop,
    });
    let mut q = TxnProducer::connect(producer(&bootstrap, tid, 1, (3, 8))).await.unwrap();
    q.init(InitOptions::default()).await.expect("InitProducerId passes the EndTxn rule");
    q.begin().unwrap();
    produce(&mut q, "through-proxy", 2, 50).await;
    let t = Instant::now();
    let res = q.commit(None).await;
    let waited = t.elapsed();
    eprintln!("commit with dropped EndTxn responses: {res:?} after {:.1} s", waited.as_secs_f64());
    let err = res.expect_err("the commit gets no answer");
    assert!(err.to_string().to_lowercase().contains("timed out") || err.to_string().contains("Timeout"), "{err}");
    let stats = proxy.remove(drop_rule);
    eprintln!("drop rule stats: {stats:?}");
    assert!(stats.dropped >= 1);
    assert!(stats
        .samples
        .iter()
        .all(|s| s.starts_with("EndTxn v") && s.contains(&format!("tid {tid} worker-1 → broker-1"))));
    let described = admin.describe_transactions(&[tid.to_string()]).await.unwrap();
    eprintln!("DescribeTransactions after the dropped EndTxn responses: {described:?}");
    assert_eq!(described[0].state, "CompleteCommit", "the broker committed what the client never heard of");

    // FindCoordinator answered by the proxy with COORDINATOR_NOT_AVAILABLE.
    let error_rule = proxy.add(Rule {
        name: "no-coordinator".into(),
        matches: Match {
            api_keys: vec![ApiKey::FindCoordinator as i16],
            frames: Some(Frames::Request),
            ..Match::default()
        },
        action: Action::Error { code: 15 },
    });
    let quick = ClientConfig { retry_deadline: Duration::from_secs(2), ..admin_config() };
    let mut c = Client::connect(&bootstrap, quick).await.unwrap();
    let err = c.find_coordinator("proxy-any").await.expect_err("no coordinator while the rule holds");
    eprintln!("FindCoordinator under the error rule: {err}");
    assert_eq!(err.kafka_code(), Some(KafkaCode::COORDINATOR_NOT_AVAILABLE), "{err}");
    let stats = proxy.remove(error_rule);
    assert!(stats.errors_injected >= 1, "{stats:?}");
    assert!(stats.samples[0].contains("FindCoordinator") && stats.samples[0].contains("tid proxy-any"), "{stats:?}");
    c.find_coordinator("proxy-any").await.expect("the coordinator is found once the rule is gone");

    // The proxy outlives its node: killed and started again, the node is
    // reached through the same proxy port.
    cluster.act(1, NodeAction::Kill, Duration::from_secs(30)).await.unwrap();
    let started = cluster.act(1, NodeAction::Start, Duration::from_secs(90)).await.unwrap();
    assert_eq!(started.ready, Some(true), "ready again through the proxy");
    let mut p = TxnProducer::connect(producer(&bootstrap, "proxy-after-restart", 0, (10, 30))).await.unwrap();
    p.init(InitOptions::default()).await.unwrap();
    p.begin().unwrap();
    produce(&mut p, "through-proxy", 2, 10).await;
    p.commit(None).await.expect("commit through the proxy after the restart");
}

/// How long until `node` is in no ISR of `topic`, as broker `ask` says; or
/// what it said last.
async fn isr_without(ask: &str, topic: &str, node: i32, within: Duration) -> Result<Duration, String> {
    let t = Instant::now();
    let cfg = ClientConfig {
        request_timeout: Duration::from_secs(2),
        retry_deadline: Duration::from_secs(2),
        ..admin_config()
    };
    let mut last = String::from("no answer");
    while t.elapsed() < within {
        match Client::connect(&[ask.to_string()], cfg.clone()).await {
            Ok(mut c) => match c.metadata(Some(&[topic.to_string()])).await {
                Ok(md) => {
                    if let Some(ti) = md.topic(topic) {
                        if !ti.partitions.is_empty() && ti.partitions.iter().all(|p| !p.isr.contains(&node)) {
                            return Ok(t.elapsed());
                        }
                        last = format!("{:?}", ti.partitions);
                    }
                }
                Err(e) => last = format!("Metadata: {e}"),
            },
            Err(e) => last = format!("connect: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Err(last)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_partition_between_brokers_shrinks_the_isr() {
    let _turn = common::serial();
    let mut spec = LocalSpec::new(common::dist("4.4.0"), 3, common::test_dir("proxy-three"));
    spec.remove_dir_on_teardown = true;
    spec.proxy = Some(3);
    spec.broker_config.insert("replica.lag.time.max.ms".into(), "3000".into());
    let cluster = LocalCluster::start(spec).await.expect("3-node proxied cluster starts");
    let proxy = cluster.proxy().unwrap();
    let bootstrap = cluster.bootstrap_list();
    let mut admin = Client::connect(&bootstrap, admin_config()).await.unwrap();
    admin.create_topic("isr", 3, 3, &[]).await.unwrap();

    // A transaction over three partitions led by different brokers: the
    // coordinator's markers and the leaders' verification cross the proxy too.
    let mut p = TxnProducer::connect(producer(&bootstrap, "proxy-three", 0, (10, 30))).await.unwrap();
    p.init(InitOptions::default()).await.unwrap();
    p.begin().unwrap();
    produce(&mut p, "isr", 3, 300).await;
    p.commit(None).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let seen: BTreeSet<String> = proxy
        .connections()
        .into_iter()
        .map(|(peer, node, cid)| format!("client id {cid:?} → node {node}: {peer:?}"))
        .collect();
    for s in &seen {
        eprintln!("connection {s}");
    }
    // Every inter-node connection is classified (the client ids are listed
    // in `broker_id` of the proxy): only the test's own admin client is "other".
    let unclassified: Vec<_> = proxy
        .connections()
        .into_iter()
        .filter(|(peer, _, cid)| matches!(peer, Peer::Other(_)) && cid != "sinkhole-proxy-live")
        .collect();
    assert!(unclassified.is_empty(), "{unclassified:?}");
    for id in 1..=3 {
        assert!(
            proxy.connections().iter().any(|(peer, _, cid)| *peer == Peer::Broker(id) && cid.contains("fetcher")),
            "broker {id}'s replica fetchers are classified"
        );
    }

    let md = admin.metadata(Some(&["isr".to_string()])).await.unwrap();
    assert!(md.topic("isr").unwrap().partitions.iter().all(|p| p.isr.len() == 3), "{md:?}");
    let cut = proxy.add(Rule {
        name: "isolate-broker-1".into(),
        matches: Match {
            from: vec![PeerGroup::Broker(1)],
            to: vec![PeerGroup::Broker(2), PeerGroup::Broker(3)],
            both_ways: true,
            ..Match::default()
        },
        action: Action::Drop,
    });
    let ask = cluster.node(2).unwrap().bootstrap();
    let out = isr_without(&ask, "isr", 1, Duration::from_secs(90)).await;
    let stats = proxy.remove(cut);
    eprintln!("partition stats: matched {} dropped {}; samples {:?}", stats.matched, stats.dropped, stats.samples);
    let took = out.unwrap_or_else(|last| panic!("broker 1 still in an ISR after 90 s; last seen: {last}"));
    eprintln!("broker 1 out of the ISR of all 3 partitions {:.1} s after the partition began", took.as_secs_f64());
    assert!(stats.dropped > 0);
    // Healed: broker 1 catches up and rejoins.
    let t = Instant::now();
    let mut back = None;
    while t.elapsed() < Duration::from_secs(90) {
        let mut c = Client::connect(std::slice::from_ref(&ask), admin_config()).await.unwrap();
        if let Ok(md) = c.metadata(Some(&["isr".to_string()])).await {
            if md.topic("isr").is_some_and(|t| t.partitions.iter().all(|p| p.isr.contains(&1))) {
                back = Some(t.elapsed());
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    eprintln!("broker 1 back in every ISR {back:?} after the partition healed");
    assert!(back.is_some(), "broker 1 rejoins after the heal");
}

/// Proxy overhead: one transaction of 20 000 records (100-byte values) on a
/// 1-node cluster without and with the proxy. Run by hand:
/// `cargo test -p sinkhole --test integration proxy_live::overhead -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn overhead_of_the_proxy_on_a_transaction() {
    let _turn = common::serial();
    let mut took = Vec::new();
    for proxied in [false, true] {
        let mut spec = common::two_pc_spec(if proxied { "proxy-cost-on" } else { "proxy-cost-off" });
        spec.proxy = proxied.then_some(1);
        let cluster = LocalCluster::start(spec).await.unwrap();
        let bootstrap = cluster.bootstrap_list();
        let mut admin = Client::connect(&bootstrap, admin_config()).await.unwrap();
        admin.create_topic("cost", 4, 1, &[]).await.unwrap();
        let mut best = Duration::MAX;
        for round in 0..3 {
            let mut p =
                TxnProducer::connect(producer(&bootstrap, &format!("cost-{round}"), 0, (10, 30))).await.unwrap();
            p.init(InitOptions::default()).await.unwrap();
            p.begin().unwrap();
            let t = Instant::now();
            produce(&mut p, "cost", 4, 20_000).await;
            p.commit(None).await.unwrap();
            best = best.min(t.elapsed());
        }
        eprintln!("proxied={proxied}: best of 3 = {:.0} ms for 20000 records", best.as_secs_f64() * 1e3);
        took.push(best);
    }
    eprintln!("proxy overhead ratio {:.2}", took[1].as_secs_f64() / took[0].as_secs_f64());
}
