//! Network and protocol faults on the containers backend: the rig's Kafka-aware proxy on the host
//! in front of every container's published listener, which advertises the proxy's port.
//!
//! - `containers_proxy_fronts_the_published_listener`: a 1-node cluster with the proxy; the
//!   broker advertises the proxy port, the rig's own client crosses the proxy (the proxy lists
//!   its connection), a protocol-error rule on ApiVersions requests answers in the proxy's name,
//!   and teardown stops the proxy (its port refuses connections) and leaves nothing on the engine.
//! - `containers_refuse_broker_to_broker_partitions`: a partition between broker groups cannot be
//!   made by a proxy that sees only client traffic: refused with the reason, exit 2.
//!
//! - `containers_isolate_and_rejoin_a_node`: the engine's disconnect and connect, each confirmed.
//!
//! Each fault here is judged by its effect (the node gone from the network, the proxy's
//! counters), not by a verdict on timing, so the binary shares the machine in `make test`; the
//! scenarios run through these faults, with their verdicts, are in containers_scenario.rs, which
//! runs alone.
//!
//! Without an engine the tests that need one print why and return (see containers_live.rs).
#![allow(clippy::await_holding_lock)]
use crate::common;

use std::process::Command;
use std::time::Duration;

use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_cluster::containers::{ContainersCluster, ContainersSpec};
use sinkhole_cluster::Cluster;
use sinkhole_cluster::ClusterNodes;
use sinkhole_faults::proxy::{Action, Frames, Match, Rule};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containers_proxy_fronts_the_published_listener() {
    let Some(_turn) = common::containers::turn("containers_proxy_fronts_the_published_listener").await else { return };
    let dir = common::test_dir("containers-proxy");
    let mut spec = ContainersSpec::new("4.4.0", 1, dir.clone(), &format!("it-proxy-{}", std::process::id()));
    spec.proxy = Some(7);
    let mut cluster = ContainersCluster::start(spec).await.expect("start a 1-node cluster with the proxy");
    let node = cluster.node(1).unwrap();
    let proxy_port = node.proxy_port.expect("a proxy port");
    assert_ne!(proxy_port, node.host_port);
    assert_eq!(node.bootstrap(), format!("127.0.0.1:{proxy_port}"));
    let proxy = cluster.proxy().expect("the cluster has the proxy");
    let routes = proxy.routes();
    assert_eq!(routes.len(), 1, "{routes:?}");
    assert_eq!(routes[0].upstream.port(), node.host_port);

    // The broker advertises the proxy's port, so a client that bootstraps anywhere comes back to it.
    let cfg = ClientConfig {
        client_id: "sinkhole-it".into(),
        request_timeout: Duration::from_secs(3),
        retry_deadline: Duration::from_secs(3),
        ..ClientConfig::default()
    };
    let mut direct = Client::connect(&[format!("127.0.0.1:{}", node.host_port)], cfg.clone()).await.unwrap();
    let md = direct.metadata(Some(&[])).await.unwrap();
    assert_eq!(md.brokers.len(), 1);
    assert_eq!(md.brokers[0].port, i32::from(proxy_port), "advertised: {:?}", md.brokers);
    let mut via = Client::connect(&[node.bootstrap()], cfg.clone()).await.unwrap();
    via.metadata(Some(&[])).await.unwrap();
    let conns = proxy.connections();
    assert!(conns.iter().any(|(_, n, id)| *n == 1 && id == "sinkhole-it"), "{conns:?}");

    // A protocol fault acts on this backend: Metadata responses are dropped by the proxy, so the
    // client's Metadata times out; removing the rule heals it.
    let id = proxy.add(Rule {
        name: "metadata-dropped".into(),
        matches: Match { api_keys: vec![3], frames: Some(Frames::Response), ..Match::default() },
        action: Action::Drop,
    });
    let t0 = std::time::Instant::now();
    let lost = via.metadata(Some(&[])).await;
    let stats = proxy.remove(id);
    eprintln!("with the rule ({} ms): {:?}; stats {stats:?}", t0.elapsed().as_millis(), lost.as_ref().err());
    assert!(lost.is_err(), "Metadata answered through a rule that drops its responses");
    assert!(stats.dropped >= 1, "{stats:?}");
    assert!(stats.samples.iter().any(|s| s.contains("Metadata") && s.contains("sinkhole-it")), "{stats:?}");
    let mut healed = Client::connect(&[node.bootstrap()], cfg).await.expect("healed");
    healed.metadata(Some(&[])).await.unwrap();

    let run_id = cluster.run_id.clone();
    cluster.teardown().await;
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", proxy_port)).await.is_err(),
        "the proxy still listens after teardown"
    );
    common::containers::assert_nothing_left(&run_id).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// No engine needed: the refusal comes before any container.
#[test]
fn containers_refuse_broker_to_broker_partitions() {
    let dir = common::test_dir("containers-refuse");
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("b2b.yaml");
    std::fs::write(
        &scenario,
        "name: b2b\ncluster: {brokers: 3, kafka: 4.4.0, backend: containers}\n\
         topic: {partitions: 3, replication_factor: 3}\n\
         job: {parallelism: 1, records_per_subtask: 100, rate_per_subtask: 100, checkpoint_interval_ms: 1000, transaction_timeout_ms: 60000}\n\
         modes: [legacy]\n\
         faults:\n  - {name: split, kind: net-partition, from: [broker-1], to: [broker-2, broker-3], \
         when: {at_ms: 1000}, duration_ms: 1000}\n",
    )
    .unwrap();
    let out = Command::new(common::bin()).arg("run").arg(&scenario).arg("--results").arg(&dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("fault split") && err.contains("broker↔broker"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Isolating a node from the run's network (the engine's disconnect) and healing it (connect
/// with its name as alias), each confirmed by inspecting the container's networks; the broker
/// answers again after the heal. Whether clients keep reaching an isolated node is printed (the
/// published port belongs to the network it left).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containers_isolate_and_rejoin_a_node() {
    let Some(_turn) = common::containers::turn("containers_isolate_and_rejoin_a_node").await else { return };
    let dir = common::test_dir("containers-isolate");
    let spec = ContainersSpec::new("4.4.0", 1, dir.clone(), &format!("it-isolate-{}", std::process::id()));
    let mut cluster = ContainersCluster::start(spec).await.expect("start a 1-node cluster");
    let network = cluster.network.clone();
    assert_eq!(cluster.networks_of(1).await.unwrap(), vec![network.clone()]);
    let cut = cluster.isolate(1).await.expect("disconnect");
    eprintln!("isolate: {cut:?}");
    assert!(cut.confirmed && !cut.networks.contains(&network), "{cut:?}");
    let cfg = ClientConfig {
        request_timeout: Duration::from_secs(2),
        retry_deadline: Duration::from_secs(1),
        ..ClientConfig::default()
    };
    let bootstrap = cluster.node(1).unwrap().bootstrap();
    let t0 = std::time::Instant::now();
    let reach = match Client::connect(&[bootstrap], cfg).await {
        Ok(mut c) => c.metadata(Some(&[])).await.map(|_| ()).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    eprintln!("a client while isolated ({} ms): {reach:?}", t0.elapsed().as_millis());
    let heal = cluster.rejoin(1).await.expect("connect");
    eprintln!("rejoin: {heal:?}");
    assert!(heal.confirmed && heal.networks.contains(&network), "{heal:?}");
    let t0 = std::time::Instant::now();
    cluster.wait_ready(Duration::from_secs(60)).await.expect("the broker answers after the heal");
    eprintln!("ready {} ms after the heal", t0.elapsed().as_millis());
    let run_id = cluster.run_id.clone();
    cluster.teardown().await;
    common::containers::assert_nothing_left(&run_id).await;
    let _ = std::fs::remove_dir_all(&dir);
}
