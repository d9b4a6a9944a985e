//! The local backend against real Kafka 4.4.0: a 3-node KRaft cluster, the
//! transaction coordinator moving when its node is killed, a real restart, a
//! pause that freezes a broker, and a teardown that leaves no process behind.
// Each #[tokio::test] runs on a runtime of its own thread, so holding the
// std mutex that serialises cluster tests across awaits cannot deadlock.
#![allow(clippy::await_holding_lock)]
use crate::common;

use std::time::{Duration, Instant};

use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_client::wire::init_producer_id::InitProducerIdParams;
use sinkhole_cluster::local::{LocalCluster, LocalSpec};
use sinkhole_cluster::{ClusterNodes, NodeAction};
use sinkhole_faults::process::RunState;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_coordinator_moves_on_kill_node_rejoins_pause_freezes() {
    let _turn = common::serial();
    let mut spec = LocalSpec::new(common::dist("4.4.0"), 3, common::test_dir("three"));
    spec.remove_dir_on_teardown = true;
    // Fence a dead broker after 3 s instead of 9 s, so leadership moves sooner.
    for (k, v) in [("broker.session.timeout.ms", "3000"), ("broker.heartbeat.interval.ms", "500")] {
        spec.broker_config.insert(k.into(), v.into());
    }
    let t0 = Instant::now();
    let mut cluster = LocalCluster::start(spec).await.expect("3-node cluster starts");
    eprintln!("3-node cluster ready in {:.1} s", t0.elapsed().as_secs_f64());
    let started = cluster.processes();
    assert_eq!(started.len(), 3);

    let mut client = Client::connect(&cluster.bootstrap_list(), ClientConfig::default()).await.unwrap();
    let md = client.metadata(None).await.unwrap();
    let mut ids: Vec<i32> = md.brokers.iter().map(|b| b.node_id).collect();
    ids.sort();
    assert_eq!(ids, vec![1, 2, 3]);

    // The coordinator of a transactional id, loaded by a first InitProducerId.
    let tid = "sinkhole-it-coordinator";
    let first =
        client.init_producer_id(&InitProducerIdParams::transactional(tid, 60_000), None).await.expect("InitProducerId");
    let coord = client.find_coordinator(tid).await.unwrap().node_id;
    assert_eq!(first.coordinator, coord);
    eprintln!("coordinator of {tid}: node {coord}");

    // Kill it: the signal is confirmed and the JVM is gone.
    let killed_pid = cluster.node(coord).unwrap().process.unwrap();
    let effect = cluster.act(coord, NodeAction::Kill, Duration::from_secs(30)).await.unwrap();
    assert!(effect.signals[0].confirmed, "{effect:?}");
    assert_eq!(killed_pid.state(), RunState::Gone);

    // FindCoordinator moves to another node, and that node serves the id.
    let t_kill = Instant::now();
    let mut client = Client::connect(&cluster.bootstrap_list(), common::quick_client()).await.unwrap();
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

    // Restart the killed node: same id, same data, and it rejoins.
    let effect = cluster.act(coord, NodeAction::Restart, Duration::from_secs(90)).await.unwrap();
    assert_eq!(effect.ready, Some(true), "{effect:?}");
    let new_pid = effect.new_pid.unwrap();
    assert_ne!(new_pid, killed_pid.pid);
    let mut direct =
        Client::connect(&[cluster.node(coord).unwrap().bootstrap()], common::quick_client()).await.unwrap();
    let mut ids: Vec<i32> = direct.metadata(None).await.unwrap().brokers.iter().map(|b| b.node_id).collect();
    ids.sort();
    assert_eq!(ids, vec![1, 2, 3], "the restarted node sees the whole cluster");
    let data = cluster.node(coord).unwrap().dir.join("data").join("meta.properties");
    assert!(data.exists(), "restart kept the formatted data directory");

    // Pause freezes a broker: it stops answering, and answers again after resume.
    let victim = *cluster.node_ids().iter().find(|&&n| n != coord).unwrap();
    let addr = cluster.node(victim).unwrap().bootstrap();
    let effect = cluster.act(victim, NodeAction::Pause, Duration::from_secs(10)).await.unwrap();
    assert!(effect.signals[0].confirmed);
    assert_eq!(cluster.node(victim).unwrap().process.unwrap().state(), RunState::Stopped);
    let frozen = tokio::time::timeout(
        Duration::from_secs(5),
        Client::connect(std::slice::from_ref(&addr), common::quick_client()),
    )
    .await;
    assert!(!matches!(frozen, Ok(Ok(_))), "a paused broker must not answer");
    let effect = cluster.act(victim, NodeAction::Resume, Duration::from_secs(10)).await.unwrap();
    assert!(effect.signals[0].confirmed);
    let t_resume = Instant::now();
    loop {
        if Client::connect(std::slice::from_ref(&addr), common::quick_client()).await.is_ok() {
            break;
        }
        assert!(t_resume.elapsed() < Duration::from_secs(30), "resumed broker does not answer");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Teardown: every process this cluster ever started is gone (checked by pid).
    let mut all = started.clone();
    all.extend(cluster.processes());
    cluster.teardown();
    for p in &all {
        assert_eq!(p.state(), RunState::Gone, "pid {} still alive after teardown", p.pid);
    }
    assert!(!cluster.dir.exists(), "throwaway directory removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_cluster_leaves_no_process_and_a_broken_config_names_the_node() {
    let _turn = common::serial();
    let mut spec = LocalSpec::new(common::dist("4.4.0"), 1, common::test_dir("drop"));
    spec.remove_dir_on_teardown = true;
    let cluster = LocalCluster::start(spec.clone()).await.expect("1-node cluster starts");
    let pids = cluster.processes();
    assert!(pids.iter().all(|p| p.is_alive()));
    drop(cluster);
    assert!(pids.iter().all(|p| p.state() == RunState::Gone));

    // A setting the broker rejects: start fails with the node and its log.
    spec.broker_config.insert("transaction.state.log.replication.factor".into(), "not-a-number".into());
    let err = LocalCluster::start(spec).await.expect_err("a broken config must fail");
    let msg = err.to_string();
    assert!(msg.contains("node 1"), "{msg}");
    assert!(msg.contains("transaction.state.log.replication.factor"), "log tail should name the bad setting: {msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_tells_the_node_is_down_after_the_old_jvm_exited_and_before_it_ends() {
    let _turn = common::serial();
    let mut spec = LocalSpec::new(common::dist("4.4.0"), 1, common::test_dir("restart-down"));
    spec.remove_dir_on_teardown = true;
    let mut cluster = LocalCluster::start(spec).await.expect("1-node cluster starts");
    let old = cluster.node(1).unwrap().process.unwrap();

    let (tx, rx) = tokio::sync::oneshot::channel();
    let restart = async {
        let effect = cluster.act_with(1, NodeAction::Restart, Duration::from_secs(90), Some(tx)).await;
        (effect, Instant::now())
    };
    // What the waiter sees the moment it is told: the old JVM's state, by its pid and start time.
    let down = async {
        let down = rx.await.expect("the restart tells when the node is down");
        (down, old.state(), Instant::now())
    };
    let ((effect, ended), (down, old_state, told)) = tokio::join!(restart, down);
    let effect = effect.expect("restart");

    assert_eq!(old_state, RunState::Gone, "told only after the old JVM exited");
    assert!(told < ended, "told before the restart finished");
    assert_eq!((down.node_id, down.action, down.new_pid, down.ready), (1, NodeAction::Restart, None, None));
    assert!(down.signals.first().is_some_and(|s| s.signal.contains("SIGTERM") && s.confirmed), "{down:?}");
    assert!(down.elapsed_ms <= effect.elapsed_ms, "{down:?} {effect:?}");
    assert_eq!(effect.ready, Some(true), "{effect:?}");
    assert_ne!(effect.new_pid, Some(old.pid), "a new JVM");
    cluster.teardown();
}

/// The class-data archive `sinkhole setup` makes is really mapped by the
/// broker's JVM (it shows in the process' memory map), not merely named on
/// its command line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_maps_the_class_data_archive_setup_made() {
    use sinkhole_cluster::local::cds::{self, Built, ClassArchive};
    let _turn = common::serial();
    let dist = common::dist("4.4.0");
    let path = match cds::build(&dist).await.expect("the archive is made or found") {
        Built::Made { path, .. } | Built::AlreadyThere(path) => path,
        Built::Skipped(why) => panic!("no archive: {why}"),
    };
    let mut spec = LocalSpec::new(dist, 1, common::test_dir("cds"));
    spec.remove_dir_on_teardown = true;
    assert_eq!(spec.class_archive, ClassArchive::Use(path.clone()), "a new spec takes the archive");
    let mut cluster = LocalCluster::start(spec).await.expect("1-node cluster starts");
    let pid = cluster.processes()[0].pid;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    assert!(maps.contains(&*path.to_string_lossy()), "{} is not mapped by broker pid {pid}", path.display());
    cluster.teardown();
}
