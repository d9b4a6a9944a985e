//! Share groups (KIP-932) through the rig's own share consumer, against a real
//! 1-node Kafka 4.4.0 broker started by the test (or the cluster named by
//! `SINKHOLE_TEST_BOOTSTRAP`, which must allow a 1000 ms record lock).
//!
//! 1. Fault-free: N records, two members of one group read and acknowledge
//!    (ACCEPT) them under a 15 s lock; every record is delivered exactly once, and at the end
//!    the group's own view (DescribeShareGroupOffsets, ReadShareGroupState)
//!    says nothing is left.
//! 2. A member that fetches and never acknowledges: after the acquisition lock
//!    (1000 ms, the broker's lowest: `group.share.min.record.lock.duration.ms`
//!    can go down to 1000) its records go to the other member with delivery
//!    count 2, and its late acknowledgement is refused (INVALID_RECORD_STATE).
//!
//! Run with `--nocapture` for the record of what the broker answered.
// Each #[tokio::test] runs on a runtime of its own thread, so holding the
// std mutex that serialises cluster tests across awaits cannot deadlock.
#![allow(clippy::await_holding_lock)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_protocol::messages::ApiKey;
use rdkafka::config::ClientConfig as RdConfig;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use sinkhole_client::wire::share_fetch::{AcquireMode, ACK_ACCEPT};
use sinkhole_client::wire::{Client, ClientConfig};
use sinkhole_cluster::ClusterNodes;
use sinkhole_workloads::share::{ShareConsumer, ShareConsumerConfig, ShareRecord};

use crate::common;

/// The broker settings the test needs: a 1000 ms lock allowed and used, and
/// heartbeats every second so assignments arrive quickly.
const SHARE_BROKER_CONFIG: &[(&str, &str)] = &[
    ("group.share.min.record.lock.duration.ms", "1000"),
    ("group.share.record.lock.duration.ms", "1000"),
    ("group.share.min.heartbeat.interval.ms", "1000"),
    ("group.share.heartbeat.interval.ms", "1000"),
];

/// The lock of the redelivery case: the lowest the broker allows.
const LOCK_MS: u64 = 1000;

/// The lock of the fault-free case: long enough that no acknowledgement of a
/// slow round on a loaded machine arrives after it (then a record would be
/// delivered twice for reasons the case is not about).
const FAULT_FREE_LOCK_MS: u64 = 15_000;

fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{prefix}-{}-{nanos}", std::process::id())
}

async fn cluster() -> (Option<sinkhole_cluster::local::LocalCluster>, Vec<String>) {
    if let Ok(v) = std::env::var("SINKHOLE_TEST_BOOTSTRAP") {
        return (None, v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect());
    }
    let mut spec = sinkhole_cluster::local::LocalSpec::new(common::dist("4.4.0"), 1, common::test_dir("share"));
    spec.remove_dir_on_teardown = true;
    for (k, v) in SHARE_BROKER_CONFIG {
        spec.broker_config.insert(k.to_string(), v.to_string());
    }
    let c = sinkhole_cluster::local::LocalCluster::start(spec).await.expect("1-node cluster starts");
    let b = c.bootstrap_list();
    (Some(c), b)
}

/// `n` records `v0..` to `topic` (partitions round-robin), acks=all.
fn produce(bootstrap: &[String], topic: &str, partitions: i32, n: usize) {
    let p: BaseProducer = RdConfig::new()
        .set("bootstrap.servers", bootstrap.join(","))
        .set("linger.ms", "5")
        .set("acks", "all")
        .create()
        .expect("producer");
    for i in 0..n {
        let (key, value) = (format!("k{i}"), format!("v{i}"));
        let rec = BaseRecord::to(topic).partition(i as i32 % partitions).key(&key).payload(&value);
        p.send(rec).map_err(|(e, _)| e).expect("send");
        p.poll(Duration::ZERO);
    }
    p.flush(Duration::from_secs(30)).expect("flush");
}

/// A group whose share-partitions start at the earliest offset (the default
/// `latest` would skip what was produced before the first member joined),
/// with a lock of `lock_ms`; waits until the broker shows the settings.
async fn prepare_group(client: &mut Client, group: &str, lock_ms: u64) {
    let lock = lock_ms.to_string();
    client
        .alter_group_configs(
            group,
            &[("share.auto.offset.reset", "earliest"), ("share.record.lock.duration.ms", lock.as_str())],
        )
        .await
        .expect("IncrementalAlterConfigs on the GROUP resource");
    let key = "share.auto.offset.reset".to_string();
    for _ in 0..50 {
        let m = client.describe_group_configs(group, std::slice::from_ref(&key)).await.expect("DescribeConfigs");
        if m.get(&key).cloned().flatten().as_deref() == Some("earliest") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("group config not visible after 5 s");
}

fn config(group: &str, topic: &str, max_records: i32) -> ShareConsumerConfig {
    let mut c = ShareConsumerConfig::new(group, &[topic]);
    c.max_records = max_records;
    c.acquire_mode = AcquireMode::RecordLimit;
    c.max_wait = Duration::from_millis(200);
    c.client = ClientConfig { client_id: "sinkhole-share-live".into(), ..Default::default() };
    c
}

async fn join(bootstrap: &[String], cfg: ShareConsumerConfig) -> ShareConsumer {
    ShareConsumer::join(bootstrap, cfg, Duration::from_secs(30)).await.expect("joins the share group")
}

fn value(r: &ShareRecord) -> String {
    String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned()
}

/// What the group says about a partition: the start offset and lag
/// (DescribeShareGroupOffsets), and the offset up to which every record is
/// done by the persisted state (ReadShareGroupState): the start offset moved
/// past acknowledged or archived batches that directly follow it. The start
/// offset alone can stay behind: after everything was acknowledged, 4.4.0
/// kept the last acknowledged batch above the start offset (measured).
async fn group_view(client: &mut Client, group: &str, topic: &str, partition: i32) -> (i64, Option<i64>, i64) {
    let (offsets, version) = client.describe_share_group_offsets(group, &[]).await.expect("DescribeShareGroupOffsets");
    let p = offsets
        .partitions
        .iter()
        .find(|p| p.topic == topic && p.partition == partition)
        .unwrap_or_else(|| panic!("no offsets for {topic}-{partition}: {offsets:?}"))
        .clone();
    let topic_id = client.metadata(Some(&[topic.to_string()])).await.unwrap().topic(topic).unwrap().topic_id;
    let state =
        client.read_share_group_state(group, topic_id, partition, p.leader_epoch).await.expect("ReadShareGroupState");
    println!(
        "group view {topic}-{partition} (DescribeShareGroupOffsets v{version}): {p:?}; ReadShareGroupState: {state:?}"
    );
    let mut done = state.start_offset;
    for b in &state.batches {
        if b.first_offset <= done && (b.state == "acknowledged" || b.state == "archived") {
            done = done.max(b.last_offset + 1);
        }
    }
    (p.start_offset, p.lag, done)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_groups_deliver_once_and_redeliver_after_the_lock() {
    let _turn = common::serial();
    let (_cluster, bootstrap) = cluster().await;
    let mut admin = Client::connect(&bootstrap, ClientConfig::default()).await.expect("bootstrap");
    let info = admin.api_versions(None).await.expect("ApiVersions");
    for key in [ApiKey::ShareGroupHeartbeat, ApiKey::ShareGroupDescribe, ApiKey::ShareFetch, ApiKey::ShareAcknowledge] {
        println!("ApiVersions: {key:?} {:?}", info.range(key));
        assert!(info.range(key).is_some(), "a 4.4.0 broker serves {key:?}");
    }
    println!(
        "ApiVersions: share.version finalized {:?}; key 93 {:?}",
        info.feature_level("share.version"),
        info.ranges.get(&93)
    );

    // --- 1. fault-free: two members, every record exactly once -------------
    const N: usize = 200;
    let topic = unique("share-in");
    admin.create_topic(&topic, 2, 1, &[]).await.expect("topic");
    produce(&bootstrap, &topic, 2, N);
    let group = unique("share-g");
    prepare_group(&mut admin, &group, FAULT_FREE_LOCK_MS).await;
    let mut a = join(&bootstrap, config(&group, &topic, 16)).await;
    let mut b = join(&bootstrap, config(&group, &topic, 16)).await;
    let mut seen: BTreeMap<String, Vec<(String, i16)>> = BTreeMap::new();
    let mut ack_errors = vec![];
    let started = Instant::now();
    while seen.len() < N && started.elapsed() < Duration::from_secs(60) {
        for (name, m) in [("a", &mut a), ("b", &mut b)] {
            let (records, acks) = m.poll().await.expect("ShareFetch");
            ack_errors.extend(acks.into_iter().filter(|r| r.error.is_some()));
            for r in &records {
                seen.entry(value(r)).or_default().push((name.to_string(), r.delivery_count));
                m.acknowledge(r, ACK_ACCEPT);
            }
        }
    }
    for (name, m) in [("a", &mut a), ("b", &mut b)] {
        let results = m.commit_sync().await.expect("ShareAcknowledge");
        ack_errors.extend(results.into_iter().filter(|r| r.error.is_some()));
        println!("member {name}: {:?}, ShareFetch v{:?}", m.membership(), m.fetch_version);
    }
    let by_member = |who: &str| seen.values().flatten().filter(|(m, _)| m == who).count();
    println!(
        "fault-free: {} distinct records in {:.1} s, a {} b {}",
        seen.len(),
        started.elapsed().as_secs_f64(),
        by_member("a"),
        by_member("b")
    );
    assert!(ack_errors.is_empty(), "acknowledgements refused: {ack_errors:?}");
    assert_eq!(seen.len(), N, "every record delivered");
    let dup: Vec<_> = seen.iter().filter(|(_, d)| d.len() != 1).collect();
    assert!(dup.is_empty(), "delivered more than once: {dup:?}");
    assert!(seen.values().flatten().all(|(_, c)| *c == 1), "first deliveries have delivery count 1");
    for partition in 0..2 {
        // Acknowledged records are done: the start offset moves past them.
        let mut view = group_view(&mut admin, &group, &topic, partition).await;
        for _ in 0..20 {
            if view.2 == (N / 2) as i64 && view.1 == Some(0) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
            view = group_view(&mut admin, &group, &topic, partition).await;
        }
        assert_eq!(view.2, (N / 2) as i64, "every record of {topic}-{partition} done in the persisted state");
        assert_eq!(view.1, Some(0), "nothing left to deliver on {topic}-{partition}");
    }
    let results = a.close().await.expect("close a");
    assert!(results.iter().all(|r| r.error.is_none()), "{results:?}");
    b.close().await.expect("close b");

    // --- 2. a member that never acknowledges -------------------------------
    const M: usize = 10;
    let topic = unique("share-lock");
    admin.create_topic(&topic, 1, 1, &[]).await.expect("topic");
    produce(&bootstrap, &topic, 1, M);
    let group = unique("share-lock-g");
    prepare_group(&mut admin, &group, LOCK_MS).await;
    let mut silent = join(&bootstrap, config(&group, &topic, M as i32)).await;
    let mut held: Vec<ShareRecord> = vec![];
    let started = Instant::now();
    while held.is_empty() && started.elapsed() < Duration::from_secs(30) {
        held = silent.poll().await.expect("ShareFetch").0;
    }
    let acquired_at = Instant::now();
    println!(
        "silent member acquired {:?} (lock {:?} ms)",
        held.iter().map(|r| (r.offset, r.delivery_count)).collect::<Vec<_>>(),
        silent.lock_timeout_ms()
    );
    assert_eq!(held.len(), M, "the silent member got every record");
    assert!(held.iter().all(|r| r.delivery_count == 1));
    assert_eq!(silent.lock_timeout_ms(), Some(LOCK_MS as i32), "the broker announces the group's lock");
    let mut other = join(&bootstrap, config(&group, &topic, M as i32)).await;
    let mut redelivered: Vec<ShareRecord> = vec![];
    while redelivered.len() < M && started.elapsed() < Duration::from_secs(60) {
        redelivered.extend(other.poll().await.expect("ShareFetch").0);
    }
    let after = acquired_at.elapsed();
    println!(
        "other member got {:?} after {} ms",
        redelivered.iter().map(|r| (r.offset, r.delivery_count)).collect::<Vec<_>>(),
        after.as_millis()
    );
    let mut offsets: Vec<i64> = redelivered.iter().map(|r| r.offset).collect();
    offsets.sort();
    assert_eq!(offsets, held.iter().map(|r| r.offset).collect::<Vec<_>>(), "the same records, once each");
    assert!(redelivered.iter().all(|r| r.delivery_count == 2), "redelivered with delivery count 2");
    assert!(after >= Duration::from_millis(LOCK_MS - 100), "not before the lock ran out");
    // The silent member acknowledges too late: the records are another
    // member's now, and the broker refuses it.
    for r in &held {
        silent.acknowledge(r, ACK_ACCEPT);
    }
    let late = silent.commit_sync().await.expect("ShareAcknowledge");
    println!("late acknowledgement while the other member holds the records: {late:?}");
    assert!(
        !late.is_empty() && late.iter().all(|r| r.error.as_deref() == Some("INVALID_RECORD_STATE")),
        "a late acknowledgement is refused: {late:?}"
    );
    for r in &redelivered {
        other.acknowledge(r, ACK_ACCEPT);
    }
    let results = other.commit_sync().await.expect("ShareAcknowledge");
    println!("the holder's acknowledgement: {results:?}");
    assert!(!results.is_empty() && results.iter().all(|r| r.error.is_none()), "{results:?}");
    let view = group_view(&mut admin, &group, &topic, 0).await;
    assert_eq!((view.1, view.2), (Some(0), M as i64), "all done at the end");
    other.close().await.expect("close");
    silent.close().await.expect("close");
}
