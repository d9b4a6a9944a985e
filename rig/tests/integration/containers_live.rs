//! The containers backend against real Kafka 4.4.0 in containers (Podman's or Docker's API):
//! the foundation's lifecycle test (rig/tests/integration/local_cluster.rs) on 3 containerised nodes — the
//! transaction coordinator moves when its container is killed, a restart keeps the node id and
//! its data, a paused container answers nothing until unpaused — and a teardown that leaves no
//! container, network or volume, checked through the engine's API.
//!
//! Without an engine (no DOCKER_HOST, no socket that answers) these tests print why and return:
//! `make test` starts Podman's service (scripts/podman-service.sh) so they run there.
// Each #[tokio::test] runs on a runtime of its own thread, so holding the
// std mutex that serialises cluster tests across awaits cannot deadlock.
#![allow(clippy::await_holding_lock)]
use crate::common;

use std::time::{Duration, Instant};

use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_client::wire::init_producer_id::InitProducerIdParams;
use sinkhole_cluster::containers::{self, ContainersCluster, ContainersSpec};
use sinkhole_cluster::{Cluster, ClusterNodes, NodeAction};
use sinkhole_faults::process::RunState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containers_three_nodes_coordinator_moves_on_kill_node_rejoins_pause_freezes_teardown_leaves_nothing() {
    let Some(_turn) = common::containers::turn("containers_three_nodes_…").await else { return };
    let run_id = format!("it-lifecycle-{}", std::process::id());
    let dir = common::test_dir("containers-three");
    let mut spec = ContainersSpec::new("4.4.0", 3, dir.clone(), &run_id);
    for (k, v) in [("broker.session.timeout.ms", "3000"), ("broker.heartbeat.interval.ms", "500")] {
        spec.broker_config.insert(k.into(), v.into());
    }
    let t0 = Instant::now();
    let mut cluster = ContainersCluster::start(spec).await.expect("3-container cluster starts");
    eprintln!("3-container cluster ready in {:.1} s ({})", t0.elapsed().as_secs_f64(), cluster.image);
    let docker = containers::engine().await.unwrap();
    let (cs, nets, _) = containers::leftovers(&docker, &run_id).await.unwrap();
    assert_eq!(cs.len(), 3, "{cs:?}");
    assert_eq!(nets, vec![cluster.network.clone()]);

    let mut client = Client::connect(&cluster.bootstrap_list(), ClientConfig::default()).await.unwrap();
    let md = client.metadata(None).await.unwrap();
    let mut ids: Vec<i32> = md.brokers.iter().map(|b| b.node_id).collect();
    ids.sort();
    assert_eq!(ids, vec![1, 2, 3]);
    for b in &md.brokers {
        assert_eq!(b.host, "127.0.0.1", "advertised to the host on the published port");
    }

    let tid = "sinkhole-it-containers-coordinator";
    let first =
        client.init_producer_id(&InitProducerIdParams::transactional(tid, 60_000), None).await.expect("InitProducerId");
    let coord = client.find_coordinator(tid).await.unwrap().node_id;
    assert_eq!(first.coordinator, coord);
    eprintln!("coordinator of {tid}: node {coord}");

    // Kill its container: the engine confirms it exited.
    let effect = cluster.act(coord, NodeAction::Kill, Duration::from_secs(30)).await.unwrap();
    assert!(effect.signals[0].confirmed, "{effect:?}");
    assert_eq!(effect.signals[0].observed, RunState::Gone);
    assert!(effect.signals[0].signal.contains("→ exited"), "{effect:?}");
    assert_eq!(cluster.engine_state(coord).await.unwrap().status, "exited");

    let t_kill = Instant::now();
    let running: Vec<String> = cluster.bootstrap().split(',').map(str::to_string).collect();
    let mut client = Client::connect(&running, common::quick_client()).await.unwrap();
    let moved_to = loop {
        assert!(t_kill.elapsed() < Duration::from_secs(60), "coordinator did not move within 60 s");
        match client.find_coordinator(tid).await {
            Ok(b) if b.node_id != coord => {
                match client.init_producer_id(&InitProducerIdParams::transactional(tid, 60_000), None).await {
                    Ok(o) => {
                        assert_eq!(o.producer_id, first.producer_id, "same id, same producer id");
                        assert!(o.producer_epoch > first.producer_epoch, "epoch bumped by the new coordinator");
                        break b.node_id;
                    }
                    Err(e) => eprintln!("InitProducerId on node {}: {e}", b.node_id),
                }
            }
            Ok(b) => eprintln!("coordinator still node {}", b.node_id),
            Err(e) => eprintln!("FindCoordinator: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    eprintln!("coordinator moved {coord} → {moved_to} after {:.1} s", t_kill.elapsed().as_secs_f64());

    // Restart the killed node: the same container (same id, same data), answering again.
    let container_before = cluster.node(coord).unwrap().container_id.clone();
    let effect = cluster.act(coord, NodeAction::Restart, Duration::from_secs(90)).await.unwrap();
    assert_eq!(effect.ready, Some(true), "{effect:?}");
    assert!(effect.new_pid.is_some());
    assert_eq!(cluster.node(coord).unwrap().container_id, container_before);
    let mut direct =
        Client::connect(&[cluster.node(coord).unwrap().bootstrap()], common::quick_client()).await.unwrap();
    let mut ids: Vec<i32> = direct.metadata(None).await.unwrap().brokers.iter().map(|b| b.node_id).collect();
    ids.sort();
    assert_eq!(ids, vec![1, 2, 3], "the restarted node sees the whole cluster");
    // The data survived: the restarted broker's log says the storage was already formatted, and
    // the coordinator state it serves still has the producer id from before the kill.
    cluster.collect_logs().await;
    let log = std::fs::read_to_string(cluster.log_path(coord)).unwrap();
    assert!(log.matches("formatted; starting the broker").count() >= 2, "two starts in one container's log");
    assert!(
        log.contains("already formatted") || log.contains("All of the log directories are already formatted"),
        "restart kept the formatted data directory:\n{}",
        &log[log.len().saturating_sub(3000)..]
    );

    // Pause freezes a broker (cgroup freezer): no answer until unpaused.
    let victim = *cluster.node_ids().iter().find(|&&n| n != coord).unwrap();
    let addr = cluster.node(victim).unwrap().bootstrap();
    let effect = cluster.act(victim, NodeAction::Pause, Duration::from_secs(10)).await.unwrap();
    assert!(effect.signals[0].confirmed, "{effect:?}");
    assert_eq!(cluster.engine_state(victim).await.unwrap().status, "paused");
    let frozen = tokio::time::timeout(
        Duration::from_secs(5),
        Client::connect(std::slice::from_ref(&addr), common::quick_client()),
    )
    .await;
    assert!(!matches!(frozen, Ok(Ok(_))), "a paused broker must not answer");
    let effect = cluster.act(victim, NodeAction::Resume, Duration::from_secs(10)).await.unwrap();
    assert!(effect.signals[0].confirmed, "{effect:?}");
    let t_resume = Instant::now();
    while Client::connect(std::slice::from_ref(&addr), common::quick_client()).await.is_err() {
        assert!(t_resume.elapsed() < Duration::from_secs(30), "resumed broker does not answer");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // A graceful stop is a controlled shutdown (not the engine's SIGKILL after the grace period).
    let effect = cluster.act(victim, NodeAction::Stop, Duration::from_secs(30)).await.unwrap();
    assert!(effect.signals.iter().all(|s| s.confirmed), "{effect:?}");
    assert_eq!(effect.signals.len(), 1, "no SIGKILL needed: {effect:?}");

    // Teardown: nothing of the run is left on the engine; the logs are in the run directory.
    cluster.teardown().await;
    common::containers::assert_nothing_left(&run_id).await;
    for id in 1..=3 {
        let log = std::fs::read_to_string(dir.join(format!("node-{id}/server.log"))).unwrap();
        assert!(log.contains("Kafka Server started") || log.contains("started"), "node {id} log collected");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containers_a_dropped_cluster_leaves_nothing_and_a_broken_config_names_the_node() {
    let Some(_turn) = common::containers::turn("containers_a_dropped_cluster_…").await else { return };
    let docker = containers::engine().await.unwrap();
    let run_id = format!("it-drop-{}", std::process::id());
    let dir = common::test_dir("containers-drop");
    let spec = ContainersSpec::new("4.4.0", 1, dir.clone(), &run_id);
    let t0 = Instant::now();
    let cluster = ContainersCluster::start(spec.clone()).await.expect("1-container cluster starts");
    eprintln!("1-container cluster ready in {:.1} s", t0.elapsed().as_secs_f64());
    assert_eq!(containers::leftovers(&docker, &run_id).await.unwrap().0.len(), 1);
    // Dropped without teardown, as when a panic unwinds.
    drop(cluster);
    common::containers::assert_nothing_left(&run_id).await;

    // A setting the broker rejects: start fails naming the node and the setting, and cleans up.
    let mut bad = spec;
    bad.broker_config.insert("transaction.state.log.replication.factor".into(), "not-a-number".into());
    let err = ContainersCluster::start(bad).await.expect_err("a broken config must fail");
    let msg = err.to_string();
    assert!(msg.contains("node 1"), "{msg}");
    assert!(msg.contains("transaction.state.log.replication.factor"), "log tail should name the setting: {msg}");
    let (cs, nets, _) = containers::leftovers(&docker, &run_id).await.unwrap();
    assert!(cs.is_empty() && nets.is_empty(), "a failed start leaves nothing: {cs:?} {nets:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
