//! KAFKA-17754 at the protocol level (docs/PROTOCOL.md §1.9), against a real
//! 1-node Kafka 4.4.0 behind the rig's proxy: one transactional id carrying
//! one transaction after another, as a plain transactional producer does
//! (the shape Flink's INCREMENTING naming never takes, which is why the
//! `kafka-17754` scenarios cannot meet the bug). The first commit's EndTxn is
//! held past the producer's request timeout; the producer drops the
//! connection, sends the commit again on a new one, it commits, and the next
//! transaction begins. Then the held EndTxn reaches the coordinator.
//! - Transactions V1 (forced): same epoch, so the late EndTxn ends the second
//!   transaction while the producer still writes into it.
//! - Transactions V2: the first commit bumped the epoch; the late EndTxn is
//!   fenced and the second transaction stays open.
//!
//! `plain_txn_meets_kafka_17754_…` runs the library scenarios of the bug in the sink mode that
//! has its shape (`plain-txn`), with live readers: the bug under V1, clean under V2.
//!
//! Run with `--nocapture` to see what the broker said at each step.
#![allow(clippy::await_holding_lock)]

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;
use rdkafka::message::Message;
use sinkhole_client::producer::{Bytes, InitOptions, ProducerConfig, ProducerError, TxnProducer};
use sinkhole_client::wire::{Client, KafkaCode};
use sinkhole_cluster::local::LocalCluster;
use sinkhole_cluster::Cluster;
use sinkhole_cluster::ClusterNodes;
use sinkhole_faults::proxy::{Action, Frames, Match, Proxy, Rule};
use sinkhole_model::TxnProtocol;

const PARTITIONS: i32 = 2;
/// The producer's request timeout (Java's `request.timeout.ms`), short so
/// that the test is.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the proxy holds the first EndTxn: past the timeout and the
/// retry, into the next transaction.
const HOLD_MS: u64 = 5_000;

/// `n` records keyed `{tag}-{i}` over both partitions, flushed.
async fn write(p: &mut TxnProducer, topic: &str, tag: &str, n: usize) -> Result<(), ProducerError> {
    for i in 0..n {
        let key = Bytes::from(format!("{tag}-{i}"));
        p.send(topic, i as i32 % PARTITIONS, key, Bytes::from_static(b"v"), vec![]).await?;
    }
    p.flush().await.map(|_| ())
}

/// Records visible to a `read_committed` consumer, per key tag, once it has
/// reached the end of every partition.
fn visible(bootstrap: &str, topic: &str) -> BTreeMap<String, usize> {
    let mut tags = BTreeMap::new();
    let ended = common::drain_read_committed(bootstrap, topic, PARTITIONS, Duration::from_secs(20), |m| {
        let key = String::from_utf8_lossy(m.key().unwrap_or_default()).to_string();
        let tag = key.split('-').next().unwrap_or_default().to_string();
        *tags.entry(tag).or_insert(0) += 1;
    });
    assert!(ended, "{topic}: the read_committed consumer did not reach the end: {tags:?}");
    tags
}

/// What the coordinator says of `tid`: (state, epoch).
async fn described(admin: &mut Client, tid: &str) -> (String, i16) {
    let d = admin.describe_transactions(&[tid.to_string()]).await.unwrap().remove(0);
    (d.state, d.producer_epoch)
}

/// What one protocol's run saw.
struct Seen {
    /// The coordinator's state of the second transaction just after the held
    /// EndTxn was delivered.
    state_after: String,
    /// The producer's writes after that, and its own end of the transaction.
    third_write: Result<(), ProducerError>,
    end: Result<(), ProducerError>,
    /// read_committed: records per tag (first, second, third).
    visible: BTreeMap<String, usize>,
}

async fn late_end_txn(proxy: &Proxy, servers: &[String], admin: &mut Client, force_v1: bool) -> Seen {
    let tid = format!("sinkhole-k17754-{}", if force_v1 { "v1" } else { "v2" });
    let topic = tid.clone();
    admin.create_topic(&topic, PARTITIONS, 1, &[]).await.unwrap();
    let cfg = ProducerConfig {
        request_timeout: REQUEST_TIMEOUT,
        delivery_timeout: Duration::from_secs(20),
        force_v1,
        client_id: "sinkhole-legacy-0-1".into(),
        ..ProducerConfig::new(servers.to_vec(), Some(tid.clone()))
    };
    let mut p = TxnProducer::connect(cfg).await.unwrap();
    p.init(InitOptions::default()).await.unwrap();
    assert_eq!(p.protocol(), if force_v1 { TxnProtocol::V1 } else { TxnProtocol::V2 });
    p.begin().unwrap();
    write(&mut p, &topic, "first", 10).await.unwrap();

    let rule = proxy.add(Rule {
        name: "late-commit".into(),
        matches: Match {
            api_keys: vec![ApiKey::EndTxn as i16],
            frames: Some(Frames::Request),
            transactional_id: Some(tid.clone()),
            nth: Some(1),
            ..Match::default()
        },
        action: Action::Delay { delay_ms: HOLD_MS, jitter_ms: 0 },
    });
    let t0 = Instant::now();
    p.commit(None).await.expect("the commit is sent again on a new connection and commits");
    let committed_after = t0.elapsed();
    assert!(committed_after >= REQUEST_TIMEOUT, "the first EndTxn was held: {committed_after:?}");
    assert!(committed_after < Duration::from_millis(HOLD_MS), "the retry did not wait for it: {committed_after:?}");
    let (pid, epoch) = p.producer_id_and_epoch();
    eprintln!("{tid}: committed after {committed_after:?} (retry); producer now at pid {pid} epoch {epoch}");

    // The next transaction, under the same id.
    p.begin().unwrap();
    write(&mut p, &topic, "second", 10).await.unwrap();
    let before = described(admin, &tid).await;
    eprintln!("{tid}: second transaction written, coordinator: {before:?}");
    assert_eq!(before.0, "Ongoing");

    // The held EndTxn is delivered at HOLD_MS; give the coordinator a moment.
    let released = Duration::from_millis(HOLD_MS + 1_500);
    tokio::time::sleep(released.saturating_sub(t0.elapsed())).await;
    let after = described(admin, &tid).await;
    eprintln!("{tid}: after the late EndTxn, coordinator: {after:?}");
    let stats = proxy.remove(rule);
    eprintln!("{tid}: rule {stats:?}");
    assert_eq!(stats.delayed, 1, "{stats:?}");

    // The producer goes on as if its transaction were open: more writes,
    // then its commit, or (the writes failed) its abort.
    let third_write = write(&mut p, &topic, "third", 10).await;
    let end = match &third_write {
        Ok(()) => p.commit(None).await,
        Err(_) => p.abort().await,
    };
    eprintln!("{tid}: third write {third_write:?}; the producer's end of the transaction {end:?}");
    let (b, t) = (servers.join(","), topic.clone());
    let visible = tokio::task::spawn_blocking(move || visible(&b, &t)).await.unwrap();
    eprintln!("{tid}: read_committed sees {visible:?}");
    Seen { state_after: after.0, third_write, end, visible }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_end_txn_ends_the_next_transaction_under_v1_only() {
    let _turn = common::serial();
    let mut spec = common::two_pc_spec("k17754");
    spec.proxy = Some(7);
    let cluster = LocalCluster::start(spec).await.expect("1-node proxied cluster starts");
    let proxy = cluster.proxy().expect("a proxied cluster has its proxy");
    let servers = cluster.bootstrap_list();
    let mut admin = Client::connect(&servers, Default::default()).await.unwrap();

    let v2 = late_end_txn(&proxy, &servers, &mut admin, false).await;
    assert_eq!(v2.state_after, "Ongoing", "V2: the late EndTxn is fenced, the second transaction stays open");
    assert!(v2.third_write.is_ok() && v2.end.is_ok(), "V2: the producer commits its second transaction");
    let all: BTreeMap<String, usize> =
        [("first", 10), ("second", 10), ("third", 10)].map(|(t, n)| (t.into(), n)).into();
    assert_eq!(v2.visible, all, "V2: both transactions whole");

    let v1 = late_end_txn(&proxy, &servers, &mut admin, true).await;
    assert_eq!(v1.state_after, "CompleteCommit", "V1: the late EndTxn committed the second transaction (KAFKA-17754)");
    // The leader refuses the writes that follow (the partition is no longer in
    // a transaction of this producer), and the producer aborts ...
    let refused = v1.third_write.as_ref().expect_err("V1: writes after the early commit are refused");
    assert_eq!(refused.kafka_code(), Some(KafkaCode::TRANSACTION_ABORTABLE), "{refused}");
    // ... a transaction whose first half is already committed: an aborted read.
    assert_eq!(v1.visible.get("first"), Some(&10));
    assert_eq!(v1.visible.get("second"), Some(&10), "V1: records of the aborted transaction are visible");
    assert_eq!(v1.visible.get("third"), None);
}

/// The library's KAFKA-17754 pair (`scenarios/kafka-17754.yaml`, V1 forced, and
/// `kafka-17754-v2.yaml`), `plain-txn` mode with its two live readers, made shorter for a test:
/// the commit held 34 s instead of 70 (still past the producer's 30 s request timeout, so the
/// retry on a new connection commits first and the held request lands in a later transaction;
/// librdkafka's 60 s, which the 70 s is for, is not in play with this mode alone) and 12000
/// records per subtask instead of 50000 (the job still writes when the request lands).
fn shortened(name: &str, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../scenarios/{name}.yaml")))
        .unwrap();
    let mut out = text.clone();
    for (from, to) in [
        ("records_per_subtask: 50000", "records_per_subtask: 12000"),
        ("delay_ms: 70000", "delay_ms: 34000"),
        ("duration_ms: 80000", "duration_ms: 40000"),
    ] {
        assert!(out.contains(from), "{name}: {from} is gone; the test's copy no longer follows the file");
        out = out.replace(from, to);
    }
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(&file, out).unwrap();
    file
}

/// `sinkhole run FILE --mode plain-txn`: its exit code and the run directory.
fn run_plain_txn(file: PathBuf, results: PathBuf) -> (Option<i32>, PathBuf) {
    let out = Command::new(common::bin())
        .arg("run")
        .arg(&file)
        .args(["--mode", "plain-txn", "--seed", "17754", "--results"])
        .arg(&results)
        .output()
        .expect("run sinkhole");
    eprintln!("{}:\n{}", file.display(), String::from_utf8_lossy(&out.stdout));
    let dir = common::run_dir(&results, &out);
    (out.status.code(), dir)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Under V1 the late EndTxn commits the transaction open then, half written: the producer's
/// next writes are refused, it aborts and the subtask fails, and the restored job writes the
/// checkpoint again: records of an aborted transaction visible and duplicated, as the
/// scenario's `expect_by` for V1 says (`pass`, exit 0). Under V2 the late request is fenced:
/// clean. The live readers polled through both, and the fault was confirmed in both.
#[test]
fn plain_txn_meets_kafka_17754_under_v1_and_is_clean_under_v2() {
    common::dist("4.4.0");
    let dir = common::test_dir("k17754-plain");
    std::fs::create_dir_all(&dir).unwrap();
    let v1 = shortened("kafka-17754", &dir);
    let v2 = shortened("kafka-17754-v2", &dir);
    let (r1, r2) = (dir.join("v1"), dir.join("v2"));
    let t1 = std::thread::spawn(move || run_plain_txn(v1, r1));
    let (code2, dir2) = run_plain_txn(v2, r2);
    let (code1, dir1) = t1.join().unwrap();

    for (code, run, protocol) in [(code1, &dir1, "v1"), (code2, &dir2, "v2")] {
        let v = json(&run.join("plain-txn/verdict.json"));
        eprintln!("{protocol}: {} {}", v["outcome"], v["reason"]);
        assert_eq!(v["outcome"], "pass", "{protocol}: {v}");
        assert_eq!(code, Some(0), "{protocol}");
        assert!(v["faults"].as_array().unwrap().iter().all(|f| f["fired"] == true && f["confirmed"] == true), "{v}");
        let polled = std::fs::read_to_string(run.join("plain-txn/readers.jsonl")).unwrap();
        assert!(polled.lines().count() > 1000, "{protocol}: the live readers polled the topic");
    }
    let s1 = json(&dir1.join("summary.json"));
    let c1 = &s1["modes"][0]["counts"];
    assert!(c1["duplicated"].as_u64().unwrap() > 0, "V1: the early-committed half written again: {c1}");
    assert_eq!(c1["lost"], 0, "{c1}");
    let attempts = |run: &Path| json(&run.join("plain-txn/verdict.json"))["attempts"].as_u64().unwrap();
    assert!(attempts(&dir1) >= 2, "V1: the subtask whose transaction was ended under it failed over");
    assert_eq!(attempts(&dir2), 1, "V2: nothing failed");
    let s2 = json(&dir2.join("summary.json"));
    let c2 = &s2["modes"][0]["counts"];
    assert_eq!((c2["lost"].as_u64(), c2["duplicated"].as_u64()), (Some(0), Some(0)), "V2: {c2}");
    let _ = std::fs::remove_dir_all(&dir);
}
