//! The wire client against a real broker: a 1-node Kafka 4.4.0 cluster
//! started by the test, with 2PC and unstable API versions enabled (or the
//! cluster named by `SINKHOLE_TEST_BOOTSTRAP`, to run it against another).
//! Assertions are limited to what Kafka guarantees on any broker; the
//! version-dependent answers (InitProducerId v6, Enable2Pc, KeepPreparedTxn)
//! are recorded and printed, and checked only where the broker's own
//! advertised versions and configs say what to expect. Run with
//! `--nocapture` to see the record.
// Each #[tokio::test] runs on a runtime of its own thread, so holding the
// std mutex that serialises cluster tests across awaits cannot deadlock.
#![allow(clippy::await_holding_lock)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kafka_protocol::messages::ApiKey;
use sinkhole_client::wire::{Client, ClientConfig, InitProducerIdParams, KafkaCode};
use sinkhole_cluster::ClusterNodes;

const TWO_PC_CONFIG: &str = "transaction.two.phase.commit.enable";

use crate::common;

fn external_bootstrap() -> Option<Vec<String>> {
    let v = std::env::var("SINKHOLE_TEST_BOOTSTRAP").ok()?;
    let list: Vec<String> = v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect();
    (!list.is_empty()).then_some(list)
}

fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{prefix}-{}-{nanos}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_client_against_a_live_broker() {
    let _turn = common::serial();
    let mut _cluster = None;
    let servers = match external_bootstrap() {
        Some(s) => s,
        None => {
            let c = sinkhole_cluster::local::LocalCluster::start(common::two_pc_spec("wire"))
                .await
                .expect("1-node cluster starts");
            let b = c.bootstrap_list();
            _cluster = Some(c);
            b
        }
    };
    let config = ClientConfig {
        client_id: "sinkhole-wire-live".to_string(),
        retry_deadline: Duration::from_secs(60),
        ..Default::default()
    };
    let mut client = Client::connect(&servers, config).await.expect("bootstrap");

    // --- ApiVersions -------------------------------------------------------
    let info = client.api_versions(None).await.expect("ApiVersions");
    for key in [
        ApiKey::Metadata,
        ApiKey::FindCoordinator,
        ApiKey::InitProducerId,
        ApiKey::AddPartitionsToTxn,
        ApiKey::EndTxn,
        ApiKey::DescribeTransactions,
        ApiKey::ListTransactions,
    ] {
        println!("ApiVersions: {key:?} {:?}", info.range(key));
    }
    println!(
        "ApiVersions: transaction.version={} metadata.version={:?} finalized_epoch={}",
        info.transaction_version(),
        info.metadata_version_level(),
        info.finalized_features_epoch
    );
    let ipi_max = info.max_version(ApiKey::InitProducerId).expect("every transactional broker supports InitProducerId");

    // --- Metadata ----------------------------------------------------------
    let md = client.metadata(None).await.expect("Metadata");
    println!(
        "Metadata: cluster_id={:?} controller={} brokers={:?}",
        md.cluster_id,
        md.controller_id,
        md.brokers.iter().map(|b| (b.node_id, b.addr())).collect::<Vec<_>>()
    );
    assert!(!md.brokers.is_empty());
    let node = md.brokers[0].node_id;

    // --- DescribeConfigs ---------------------------------------------------
    let keys = vec![
        TWO_PC_CONFIG.to_string(),
        "unstable.api.versions.enable".to_string(),
        "transaction.max.timeout.ms".to_string(),
    ];
    let configs = client.describe_broker_configs(node, &keys).await.expect("DescribeConfigs");
    println!("DescribeConfigs(broker {node}): {configs:?}");
    let two_pc_enabled = configs.get(TWO_PC_CONFIG).cloned().flatten().as_deref() == Some("true");

    // --- CreateTopics ------------------------------------------------------
    let topic = unique("sinkhole-wire-live");
    client.create_topic(&topic, 3, 1, &[("min.insync.replicas".into(), "1".into())]).await.expect("CreateTopics");
    client.create_topic(&topic, 3, 1, &[]).await.expect("CreateTopics again: TOPIC_ALREADY_EXISTS is success");
    let md = client.metadata(Some(std::slice::from_ref(&topic))).await.unwrap();
    let t = md.topic(&topic).expect("created topic in Metadata");
    assert_eq!(t.partitions.len(), 3);
    assert!(t.partitions.iter().all(|p| p.leader >= 0));
    println!("CreateTopics: {topic} leaders {:?}", t.partitions.iter().map(|p| p.leader).collect::<Vec<_>>());

    // --- FindCoordinator + InitProducerId v5 --------------------------------
    let tid1 = unique("sinkhole-live-v5");
    let coordinator = client.find_coordinator(&tid1).await.expect("FindCoordinator");
    println!("FindCoordinator({tid1}): {coordinator:?}");
    let p1 = InitProducerIdParams::transactional(&tid1, 60_000);
    let v5 = client.init_producer_id(&p1, Some(5)).await.expect("InitProducerId v5");
    println!("InitProducerId v5: {v5:?}");
    assert_eq!(v5.version, 5);
    assert!(v5.producer_id >= 0);
    assert_eq!(v5.producer_epoch, 0, "a new transactional id starts at epoch 0");
    assert_eq!(v5.coordinator, coordinator.node_id);

    // --- AddPartitionsToTxn + DescribeTransactions + ListTransactions --------
    let parts = vec![(topic.clone(), 0), (topic.clone(), 1)];
    client.add_partitions_to_txn(&tid1, v5.producer_id, v5.producer_epoch, &parts).await.expect("AddPartitionsToTxn");
    let d = client.describe_transactions(std::slice::from_ref(&tid1)).await.unwrap();
    println!("DescribeTransactions after add: {d:?}");
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].state, "Ongoing");
    assert_eq!(d[0].producer_id, v5.producer_id);
    let mut got = d[0].partitions.clone();
    got.sort();
    assert_eq!(got, parts);

    let listed = client.list_transactions(&["Ongoing".to_string()], &[]).await.expect("ListTransactions");
    let mine: Vec<_> = listed.iter().filter(|l| l.transactional_id == tid1).collect();
    println!("ListTransactions(Ongoing): {} total, ours: {mine:?}", listed.len());
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].producer_id, v5.producer_id);

    // --- EndTxn abort ------------------------------------------------------
    let end = client.end_txn(&tid1, v5.producer_id, v5.producer_epoch, false, None).await.expect("EndTxn abort");
    println!("EndTxn abort (negotiated): {end:?}");
    if end.version >= 5 {
        assert!(
            (end.producer_id, end.producer_epoch) != (v5.producer_id, v5.producer_epoch),
            "EndTxn v5 bumps the epoch"
        );
    } else {
        assert_eq!((end.producer_id, end.producer_epoch), (v5.producer_id, v5.producer_epoch));
    }
    let d = client.describe_transactions(std::slice::from_ref(&tid1)).await.unwrap();
    println!("DescribeTransactions after abort: state={} epoch={}", d[0].state, d[0].producer_epoch);
    assert!(d[0].state == "PrepareAbort" || d[0].state == "CompleteAbort", "{}", d[0].state);

    // --- DescribeTransactions of an unknown id ----------------------------
    let unknown = unique("sinkhole-live-never-used");
    let d = client.describe_transactions(std::slice::from_ref(&unknown)).await.unwrap();
    println!("DescribeTransactions(unknown id): {:?}", d[0].error);
    assert_eq!(d[0].error, Some(KafkaCode::TRANSACTIONAL_ID_NOT_FOUND));

    // --- Negotiated InitProducerId stays at v5 without 2PC flags ----------
    let tid3 = unique("sinkhole-live-negotiated");
    let neg = client
        .init_producer_id(&InitProducerIdParams::transactional(&tid3, 60_000), None)
        .await
        .expect("InitProducerId negotiated");
    println!("InitProducerId negotiated: {neg:?}");
    assert_eq!(neg.version, ipi_max.min(5));

    // --- InitProducerId on an Ongoing id: one attempt, then the retry loop --
    let tid4 = unique("sinkhole-live-fence");
    let p4 = InitProducerIdParams::transactional(&tid4, 60_000);
    let first = client.init_producer_id(&p4, None).await.unwrap();
    client.add_partitions_to_txn(&tid4, first.producer_id, first.producer_epoch, &[(topic.clone(), 0)]).await.unwrap();
    let once = client.init_producer_id_once(&p4, None).await.unwrap();
    println!(
        "InitProducerId once on an Ongoing txn: error={} outcome={:?}",
        once.error.map(|c| c.to_string()).unwrap_or_else(|| "NONE".into()),
        once.outcome
    );
    let retried = client.init_producer_id(&p4, None).await.expect("InitProducerId with retries");
    println!("InitProducerId with retries afterwards: {retried:?}");
    assert!(
        retried.producer_id != first.producer_id || retried.producer_epoch > first.producer_epoch,
        "re-initialising fences the old epoch"
    );
    let d = client.describe_transactions(std::slice::from_ref(&tid4)).await.unwrap();
    println!("DescribeTransactions after re-init: state={} epoch={}", d[0].state, d[0].producer_epoch);
    assert_ne!(d[0].state, "Ongoing");

    // --- InitProducerId v6 with Enable2Pc --------------------------------
    if ipi_max < 6 {
        println!("InitProducerId v6: not advertised (max v{ipi_max}); 2PC calls skipped");
        let err = client
            .init_producer_id(
                &InitProducerIdParams {
                    enable_2pc: true,
                    ..InitProducerIdParams::transactional(&unique("sinkhole-live-2pc"), 60_000)
                },
                None,
            )
            .await
            .unwrap_err();
        println!("InitProducerId enable2Pc without v6: {err}");
        return;
    }
    let tid2 = unique("sinkhole-live-2pc");
    let p2 = InitProducerIdParams { enable_2pc: true, ..InitProducerIdParams::transactional(&tid2, 60_000) };
    let two_pc = client.init_producer_id_once(&p2, Some(6)).await.expect("InitProducerId v6 enable2Pc: transport");
    println!("InitProducerId v6 enable2Pc=true: {two_pc:?}");
    if !two_pc_enabled {
        println!("broker has {TWO_PC_CONFIG}={:?}; not checking the answer", configs.get(TWO_PC_CONFIG));
        return;
    }
    assert_eq!(two_pc.error, None, "2PC is enabled on this broker");
    let o = two_pc.outcome;
    assert_eq!(o.version, 6);
    assert_eq!(o.producer_epoch, 0);
    assert_eq!((o.ongoing_txn_producer_id, o.ongoing_txn_producer_epoch), (-1, -1));

    client
        .add_partitions_to_txn(&tid2, o.producer_id, o.producer_epoch, &[(topic.clone(), 2)])
        .await
        .expect("AddPartitionsToTxn under 2PC");
    let d = client.describe_transactions(std::slice::from_ref(&tid2)).await.unwrap();
    println!(
        "DescribeTransactions 2PC txn: state={} timeout_ms={} pid={} epoch={}",
        d[0].state, d[0].timeout_ms, d[0].producer_id, d[0].producer_epoch
    );
    assert_eq!(d[0].state, "Ongoing");

    // --- InitProducerId v6 with KeepPreparedTxn: record what the broker says
    let p_keep = InitProducerIdParams {
        enable_2pc: true,
        keep_prepared_txn: true,
        ..InitProducerIdParams::transactional(&tid2, 60_000)
    };
    let keep =
        client.init_producer_id_once(&p_keep, Some(6)).await.expect("InitProducerId v6 keepPreparedTxn: transport");
    println!(
        "InitProducerId v6 enable2Pc=true keepPreparedTxn=true on an Ongoing txn: error={} outcome={:?}",
        keep.error.map(|c| c.to_string()).unwrap_or_else(|| "NONE".into()),
        keep.outcome
    );
    let d = client.describe_transactions(std::slice::from_ref(&tid2)).await.unwrap();
    println!(
        "DescribeTransactions after keepPreparedTxn: state={} pid={} epoch={} partitions={:?}",
        d[0].state, d[0].producer_id, d[0].producer_epoch, d[0].partitions
    );

    // KeepPreparedTxn on an id with no transaction, with and without Enable2Pc.
    for enable_2pc in [true, false] {
        let p = InitProducerIdParams {
            enable_2pc,
            keep_prepared_txn: true,
            ..InitProducerIdParams::transactional(&unique("sinkhole-live-keep"), 60_000)
        };
        let a = client.init_producer_id_once(&p, Some(6)).await.unwrap();
        println!(
            "InitProducerId v6 enable2Pc={enable_2pc} keepPreparedTxn=true on a new id: error={} outcome={:?}",
            a.error.map(|c| c.to_string()).unwrap_or_else(|| "NONE".into()),
            a.outcome
        );
    }

    // Leave nothing ongoing: abort whatever is current.
    if d[0].state == "Ongoing" {
        let (pid, epoch) = if keep.error.is_none() && keep.outcome.ongoing_txn_producer_id >= 0 {
            (keep.outcome.ongoing_txn_producer_id, keep.outcome.ongoing_txn_producer_epoch)
        } else {
            (d[0].producer_id, d[0].producer_epoch)
        };
        match client.end_txn(&tid2, pid, epoch, false, None).await {
            Ok(e) => println!("cleanup abort of {tid2}: {e:?}"),
            Err(e) => println!("cleanup abort of {tid2} failed: {e}"),
        }
    }
}
