//! The runner end to end against a real Kafka 4.4.0 broker: real
//! `sinkhole worker` processes (legacy mode), the checkpoint coordinator, a
//! worker kill inside the persist→notify window and a pause (SIGSTOP, then
//! SIGCONT a second later) of the broker that coordinates subtask 0's
//! transactions; then the output is drained with
//! read_committed and every record must be there exactly once.
// Each #[tokio::test] runs on a runtime of its own thread, so holding the
// std mutex that serialises cluster tests across awaits cannot deadlock.
#![allow(clippy::await_holding_lock)]
use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use sinkhole_base::rundir::ModeDir;
use sinkhole_checker::{CheckSpec, Expected};
use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_cluster::local::{LocalCluster, LocalSpec};
use sinkhole_cluster::Cluster;
use sinkhole_history::JobOutcome;
use sinkhole_model::{EventKind, Partitioning, SinkMode};
use sinkhole_rig::runner::{run_mode, ModeRun};
use sinkhole_scenario::{
    Brokers, ClusterSpec, Fault, FaultSpec, JobSpec, NamedTarget, Scenario, Target, Timing, TopicSpec, When, Workers,
};

#[tokio::test]
async fn legacy_survives_a_kill_in_the_window_and_a_coordinator_pause_exactly_once() {
    let _g = common::serial();
    let dir = common::test_dir("runner");
    let mut spec = LocalSpec::new(common::dist("4.4.0"), 1, dir.join("cluster"));
    spec.broker_config.insert("transaction.abort.timed.out.transaction.cleanup.interval.ms".into(), "500".into());
    let mut cluster: Box<dyn Cluster> = Box::new(LocalCluster::start(spec).await.expect("cluster"));
    let topic = "runner-out";
    let mut client = Client::connect(&cluster.bootstrap_list(), ClientConfig::default()).await.unwrap();
    client.create_topic(topic, 3, 1, &[]).await.unwrap();
    drop(client);

    let scenario = Scenario {
        name: "runner-it".into(),
        description: None,
        cluster: ClusterSpec {
            brokers: 1,
            kafka: "4.4.0".into(),
            broker_config: BTreeMap::new(),
            proxy: None,
            backend: Default::default(),
            image: None,
            authorizer: None,
            external: None,
            jit: Default::default(),
        },
        topic: TopicSpec { partitions: 3, replication_factor: 1, min_insync_replicas: None },
        job: JobSpec {
            parallelism: 2,
            records_per_subtask: 3_000,
            rate_per_subtask: 1_000,
            checkpoint_interval_ms: 300,
            checkpoint_timeout_ms: 30_000,
            max_concurrent_checkpoints: 1,
            transaction_timeout_ms: 60_000,
            restart_delay_ms: 100,
            restart_limit: 5,
            heartbeat_timeout_ms: 5_000,
            linger_ms: 5,
            batch_size: 16 * 1024,
            partitioning: Partitioning::RoundRobin,
            register_partitions: Default::default(),
            force_transactions_v1: false,
        },
        source: None,
        modes: vec![SinkMode::Legacy],
        faults: vec![
            FaultSpec {
                name: Some("kill-0-in-window".into()),
                kind: Fault::KillWorkers(Workers { target: Some(Target::Ids(vec![0])) }),
                when: When::CheckpointPersisted(2),
                duration_ms: None,
                times: None,
                after_ms: None,
            },
            FaultSpec {
                name: Some("pause-coordinator".into()),
                kind: Fault::BrokerPause(Brokers { target: Target::Named(NamedTarget::TxnCoordinator) }),
                when: When::AtMs(1_500),
                duration_ms: Some(1_000),
                times: None,
                after_ms: None,
            },
        ],
        schedule: None,
        shape: None,
        expect: BTreeMap::new(),
        sequential: false,
        lead: None,
        flink: None,
        expect_by: Vec::new(),
        premise: BTreeMap::new(),
        readers: None,
    };
    let mode_dir = dir.join("legacy");
    let outcome = run_mode(
        ModeRun {
            run_id: "runner-it".into(),
            mode: SinkMode::Legacy,
            scenario: &scenario,
            dir: ModeDir::at(&mode_dir),
            topic: topic.into(),
            tid_prefix: format!("runner-it-{}", std::process::id()),
            sinkhole_bin: common::bin(),
            seed: 1,
            progress: true,
            timing: Timing::of(&scenario),
            readers: None,
        },
        cluster.as_mut(),
    )
    .await
    .expect("run_mode");
    eprintln!("outcome: {outcome:#?}");
    assert_eq!(outcome.job, JobOutcome::Finished);
    assert!(outcome.attempts >= 2, "the kill made the job fail over");
    assert!(outcome.checkpoints_completed >= 3);
    for f in &outcome.faults {
        assert!(f.fired && f.confirmed, "{f:?}");
    }
    assert_eq!(outcome.faults[1].effect.to_value()["start"]["coordinator"]["node"], 1);
    assert_eq!(outcome.faults[1].effect.to_value()["end"]["effect"]["signals"][0]["signal"], "SIGCONT");

    let events = sinkhole_history::read(&outcome.history).unwrap().events;
    assert!(events
        .iter()
        .any(|e| e.kind == EventKind::Restarting { attempt: 1, from_checkpoint: Some(2), delay_ms: 100 }));
    assert!(!events.iter().any(|e| e.kind == EventKind::CheckpointNotified { id: 2 }));
    // The restored subtask committed checkpoint 2's transaction itself.
    assert!(events.iter().any(|e| matches!(&e.kind, EventKind::CommitFinished { checkpoint: 2, restored: true, .. })));
    assert!(mode_dir.join("logs/worker-0.log").exists());
    assert!(mode_dir.join("workers/worker-0-attempt-1.json").exists());

    let report = sinkhole_checker::check_mode(&CheckSpec {
        bootstrap: cluster.bootstrap(),
        topic: topic.into(),
        expected: Expected { run_id: "runner-it".into(), parallelism: 2, records_per_subtask: 3_000 },
        history: Some(outcome.history.clone()),
        dir: ModeDir::at(&mode_dir),
        timeout: Duration::from_secs(60),
        tid_prefix: None,
    })
    .await
    .expect("check");
    eprintln!("counts: {:?}", report.counts);
    assert_eq!(report.counts.expected, 6_000);
    assert_eq!(report.counts.committed, 6_000);
    assert_eq!(report.counts.lost, 0);
    assert_eq!(report.counts.duplicated, 0);
    assert_eq!(report.counts.unexpected, 0);
    cluster.teardown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
