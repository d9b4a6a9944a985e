//! The transactional producer (`sinkhole_client::producer`) against a
//! real 1-node Kafka 4.4.0 with 2PC and unstable API versions enabled and a
//! 500 ms timeout-abort scan. Visibility is checked with an rdkafka
//! `read_committed` consumer. Broker answers that differ between Kafka
//! versions (KeepPreparedTxn, the code of a fenced legacy commit) are
//! printed; run with `--nocapture` to see them.
// Each #[tokio::test] runs on a runtime of its own thread, so holding the
// std mutex that serialises cluster tests across awaits cannot deadlock.
#![allow(clippy::await_holding_lock)]

use crate::common;

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::message::{Headers, Message};
use sinkhole_client::producer::{Bytes, InitOptions, ProducerConfig, ProducerError, StateKind, TxnProducer, TxnState};
use sinkhole_client::wire::KafkaCode;
use sinkhole_cluster::local::LocalCluster;
use sinkhole_cluster::ClusterNodes;
use sinkhole_model::TxnProtocol;

const PARTITIONS: i32 = 3;

fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{prefix}-{}-{nanos}", std::process::id())
}

fn config(bootstrap: &[String], tid: Option<&str>) -> ProducerConfig {
    ProducerConfig {
        request_timeout: Duration::from_secs(10),
        delivery_timeout: Duration::from_secs(30),
        client_id: "sinkhole-producer-live".to_string(),
        ..ProducerConfig::new(bootstrap.to_vec(), tid.map(str::to_string))
    }
}

/// Sends `n` records round-robin over the partitions, keys `{tag}-{i}`,
/// with two headers.
async fn send_n(p: &mut TxnProducer, topic: &str, tag: &str, n: usize) {
    for i in 0..n {
        let headers = vec![
            ("sinkhole-seq".to_string(), Bytes::from(i.to_string())),
            ("sinkhole-src".to_string(), Bytes::from_static(b"producer_live")),
        ];
        p.send(
            topic,
            (i % PARTITIONS as usize) as i32,
            Bytes::from(format!("{tag}-{i}")),
            Bytes::from(vec![b'x'; 64]),
            headers,
        )
        .await
        .unwrap_or_else(|e| panic!("send {tag} #{i}: {e}"));
    }
}

struct Visible {
    records: usize,
    distinct_keys: usize,
    /// Records whose `sinkhole-seq` header matches the number in their key.
    headers_ok: usize,
    reached_end: bool,
}

/// Reads `topic` with `isolation.level=read_committed` from the beginning of
/// every partition until the high watermarks (librdkafka moves the position
/// past aborted batches and control markers) or the timeout.
fn read_committed(bootstrap: &str, topic: &str, timeout: Duration) -> Visible {
    let (mut records, mut headers_ok) = (0, 0);
    let mut keys = HashSet::new();
    let reached_end = common::drain_read_committed(bootstrap, topic, PARTITIONS, timeout, |m| {
        records += 1;
        let key = String::from_utf8_lossy(m.key().unwrap_or_default()).to_string();
        let seq = key.rsplit('-').next().unwrap_or_default().to_string();
        if let Some(h) = m.headers() {
            if h.iter().any(|h| h.key == "sinkhole-seq" && h.value == Some(seq.as_bytes())) {
                headers_ok += 1;
            }
        }
        keys.insert(key);
    });
    Visible { records, distinct_keys: keys.len(), headers_ok, reached_end }
}

async fn visible(bootstrap: &str, topic: &str) -> Visible {
    let (b, t) = (bootstrap.to_string(), topic.to_string());
    tokio::task::spawn_blocking(move || read_committed(&b, &t, Duration::from_secs(20))).await.unwrap()
}

fn class(e: &ProducerError) -> &'static str {
    match e {
        ProducerError::Abortable(..) => "Abortable",
        ProducerError::Fatal(..) => "Fatal",
        ProducerError::IllegalState(_) => "IllegalState",
        ProducerError::Wire(_) => "Wire",
    }
}

fn code(e: &ProducerError) -> String {
    e.kafka_code().map(|c| c.to_string()).unwrap_or_else(|| "none".to_string())
}

async fn describe(p: &mut TxnProducer, tid: &str) -> String {
    match p.client().describe_transactions(&[tid.to_string()]).await {
        Ok(d) => d
            .first()
            .map(|d| {
                format!(
                    "state={} pid={} epoch={} timeout_ms={}",
                    d.state, d.producer_id, d.producer_epoch, d.timeout_ms
                )
            })
            .unwrap_or_default(),
        Err(e) => format!("DescribeTransactions failed: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_producer_against_kafka_4_4_0() {
    let _turn = common::serial();
    let cluster = LocalCluster::start(common::two_pc_spec("producer")).await.expect("1-node cluster starts");
    let servers = cluster.bootstrap_list();
    let bootstrap = cluster.bootstrap();

    let mut admin = sinkhole_client::wire::Client::connect(&servers, Default::default()).await.unwrap();
    let new_topic = |name: &str| unique(&format!("sinkhole-producer-{name}"));
    let mut topics = Vec::new();
    for name in ["v2", "v1", "abort", "legacy", "flip319", "twopc", "keep", "bench", "idem"] {
        let t = new_topic(name);
        admin.create_topic(&t, PARTITIONS, 1, &[]).await.expect("CreateTopics");
        topics.push(t);
    }
    let [t_v2, t_v1, t_abort, t_legacy, t_flip, t_2pc, t_keep, t_bench, t_idem] =
        <[String; 9]>::try_from(topics).unwrap();

    // --- (a) V2: 3000 records, commit; then an aborted second transaction ----
    let tid = unique("sinkhole-p-v2");
    let mut p = TxnProducer::connect(config(&servers, Some(&tid))).await.unwrap();
    let init = p.init(InitOptions::default()).await.expect("init");
    println!("(a) init: {init:?} transaction.version={}", p.transaction_version());
    assert!(p.transaction_version() >= 2, "Kafka 4.4.0 finalizes transaction.version 2 on a new cluster");
    assert_eq!(init.protocol, TxnProtocol::V2);
    assert_eq!(init.version, 5, "no 2PC flag: InitProducerId v5");
    assert_eq!(*p.state(), TxnState::Ready);
    p.begin().unwrap();
    send_n(&mut p, &t_v2, "a", 3000).await;
    let f = p.flush().await.expect("flush");
    println!("(a) flush: {f:?}");
    assert_eq!(f.records, 3000);
    let before = p.producer_id_and_epoch();
    p.commit(None).await.expect("commit V2");
    let after = p.producer_id_and_epoch();
    println!("(a) commit (EndTxn v5): pid/epoch {before:?} -> {after:?}");
    assert!(after != before, "EndTxn v5 bumps the epoch and the producer adopts it");
    // The next transaction starts at sequence 0 under the new epoch; a
    // wrong sequence would fail this send with OUT_OF_ORDER_SEQUENCE_NUMBER.
    p.begin().unwrap();
    send_n(&mut p, &t_v2, "a2", 300).await;
    p.flush().await.expect("flush under the bumped epoch");
    p.abort().await.expect("abort V2");
    let lat = p.take_ack_latencies_us();
    let mut sorted = lat.clone();
    sorted.sort();
    println!(
        "(a) produce acks: {} requests, median {} µs, max {} µs",
        lat.len(),
        sorted.get(sorted.len() / 2).copied().unwrap_or(0),
        sorted.last().copied().unwrap_or(0)
    );
    assert!(!lat.is_empty());
    let v = visible(&bootstrap, &t_v2).await;
    println!(
        "(a) visible: {} records, {} distinct, headers ok {}, end {}",
        v.records, v.distinct_keys, v.headers_ok, v.reached_end
    );
    assert_eq!(v.records, 3000);
    assert_eq!(v.distinct_keys, 3000);
    assert_eq!(v.headers_ok, 3000, "record headers carried");
    assert!(v.reached_end);

    // --- (b) V1 forced: AddPartitionsToTxn, Produce ≤ v11, EndTxn v4 ----------
    let tid = unique("sinkhole-p-v1");
    let mut p = TxnProducer::connect(ProducerConfig { force_v1: true, ..config(&servers, Some(&tid)) }).await.unwrap();
    let init = p.init(InitOptions::default()).await.expect("init V1");
    assert_eq!(init.protocol, TxnProtocol::V1);
    p.begin().unwrap();
    send_n(&mut p, &t_v1, "b", 3000).await;
    let before = p.producer_id_and_epoch();
    p.commit(None).await.expect("commit V1");
    assert_eq!(p.producer_id_and_epoch(), before, "EndTxn v4 keeps the epoch");
    // Sequences carry on across the commit under V1 (same epoch).
    p.begin().unwrap();
    send_n(&mut p, &t_v1, "b2", 300).await;
    p.flush().await.expect("flush with continued sequences");
    p.abort().await.expect("abort V1");
    let v = visible(&bootstrap, &t_v1).await;
    println!("(b) V1: pid/epoch {before:?} kept; visible {} records ({} distinct)", v.records, v.distinct_keys);
    assert_eq!(v.records, 3000);
    assert_eq!(v.distinct_keys, 3000);

    // --- (c) abort: nothing visible ---------------------------------------------
    let tid = unique("sinkhole-p-abort");
    let mut p = TxnProducer::connect(config(&servers, Some(&tid))).await.unwrap();
    p.init(InitOptions::default()).await.unwrap();
    p.begin().unwrap();
    send_n(&mut p, &t_abort, "c", 1500).await;
    p.flush().await.unwrap();
    p.abort().await.expect("abort");
    assert_eq!(*p.state(), TxnState::Ready);
    let v = visible(&bootstrap, &t_abort).await;
    println!("(c) abort: visible {} records, end {}", v.records, v.reached_end);
    assert_eq!(v.records, 0);
    assert!(v.reached_end, "read_committed moves past the aborted batches");

    // --- (d) legacy resume: B commits A's transaction with EndTxn v4 -----------
    let tid = unique("sinkhole-p-legacy");
    let mut a = TxnProducer::connect(config(&servers, Some(&tid))).await.unwrap();
    a.init(InitOptions::default()).await.unwrap();
    a.begin().unwrap();
    send_n(&mut a, &t_legacy, "d", 600).await;
    a.flush().await.unwrap();
    let (pid, epoch) = a.producer_id_and_epoch();
    let a_protocol = a.protocol();
    drop(a);
    let mut b = TxnProducer::connect(config(&servers, Some(&tid))).await.unwrap();
    b.resume(pid, epoch, TxnProtocol::V1).unwrap();
    assert_eq!(*b.state(), TxnState::InTransaction);
    b.commit(Some(4)).await.expect("legacy resume + EndTxn v4 commit");
    let v = visible(&bootstrap, &t_legacy).await;
    println!(
        "(d) legacy: A wrote with {a_protocol:?} as pid {pid} epoch {epoch}; B resume + EndTxn v4 commit: visible {}",
        v.records
    );
    assert_eq!(v.records, 600);

    // --- (e) FLIP-319: the broker's timeout abort beats the legacy commit --------
    let tid = unique("sinkhole-p-flip319");
    let mut a = TxnProducer::connect(ProducerConfig { transaction_timeout_ms: 2000, ..config(&servers, Some(&tid)) })
        .await
        .unwrap();
    a.init(InitOptions::default()).await.unwrap();
    a.begin().unwrap();
    send_n(&mut a, &t_flip, "e", 600).await;
    a.flush().await.unwrap();
    let (pid, epoch) = a.producer_id_and_epoch();
    drop(a);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut b = TxnProducer::connect(config(&servers, Some(&tid))).await.unwrap();
    println!("(e) after 4 s (timeout 2 s): {}", describe(&mut b, &tid).await);
    b.resume(pid, epoch, TxnProtocol::V1).unwrap();
    let err = b.commit(Some(4)).await.expect_err("a timed-out transaction cannot be committed");
    println!("(e) EndTxn v4 commit (pid {pid} epoch {epoch}) answered: {} {} — {err}", class(&err), code(&err));
    assert!(matches!(err, ProducerError::Fatal(..)), "{err}");
    assert_eq!(
        err.kafka_code(),
        Some(KafkaCode::PRODUCER_FENCED),
        "docs/PROTOCOL.md §3.3: TV1 EndTxn after a timeout abort"
    );
    assert_eq!(b.state().kind(), StateKind::FatalError);
    let v = visible(&bootstrap, &t_flip).await;
    println!("(e) visible after the fenced commit: {} (end {})", v.records, v.reached_end);
    assert_eq!(v.records, 0, "the broker aborted the transaction: silent loss");

    // --- (f) 2PC: the prepared transaction outlives its timeout -------------------
    let tid = unique("sinkhole-p-2pc");
    let mut a = TxnProducer::connect(ProducerConfig { transaction_timeout_ms: 2000, ..config(&servers, Some(&tid)) })
        .await
        .unwrap();
    let init = a.init(InitOptions { enable_2pc: true, keep_prepared_txn: false }).await.expect("init enable_2pc");
    println!("(f) init enable_2pc: {init:?}");
    assert_eq!(init.version, 6);
    a.begin().unwrap();
    send_n(&mut a, &t_2pc, "f", 600).await;
    let (pid, epoch) = a.prepare().await.expect("prepare");
    assert_eq!(*a.state(), TxnState::Prepared);
    assert!(matches!(a.send(&t_2pc, 0, Bytes::new(), Bytes::new(), vec![]).await, Err(ProducerError::IllegalState(_))));
    let a_protocol = a.protocol();
    drop(a);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut b = TxnProducer::connect(config(&servers, Some(&tid))).await.unwrap();
    println!("(f) after 4 s (client timeout 2 s): {}", describe(&mut b, &tid).await);
    b.resume(pid, epoch, a_protocol).unwrap();
    b.commit(None).await.expect("commit of the prepared 2PC transaction");
    let v = visible(&bootstrap, &t_2pc).await;
    println!("(f) 2PC resume ({a_protocol:?}) + commit: visible {}", v.records);
    assert_eq!(v.records, 600, "the 2PC transaction survived its timeout");

    // --- (g) KeepPreparedTxn on a prepared transaction: what does 4.4.0 say? ------
    let tid = unique("sinkhole-p-keep");
    let mut a = TxnProducer::connect(config(&servers, Some(&tid))).await.unwrap();
    a.init(InitOptions { enable_2pc: true, keep_prepared_txn: false }).await.unwrap();
    a.begin().unwrap();
    send_n(&mut a, &t_keep, "g", 300).await;
    let prepared = a.prepare().await.unwrap();
    drop(a);
    let mut b = TxnProducer::connect(config(&servers, Some(&tid))).await.unwrap();
    match b.init(InitOptions { enable_2pc: true, keep_prepared_txn: true }).await {
        Ok(info) => {
            println!(
                "(g) KeepPreparedTxn on 4.4.0: accepted: {info:?} (prepared was {prepared:?}); state {:?}",
                b.state()
            );
            match info.ongoing {
                Some(pair) => {
                    assert_eq!(*b.state(), TxnState::Prepared);
                    assert_eq!(b.producer_id_and_epoch(), pair);
                    let r = b.commit(None).await;
                    let v = visible(&bootstrap, &t_keep).await;
                    println!("(g) commit of the kept transaction: {r:?}; visible {}", v.records);
                }
                None => {
                    assert_eq!(*b.state(), TxnState::Ready);
                    let v = visible(&bootstrap, &t_keep).await;
                    println!("(g) no ongoing transaction reported; visible {}", v.records);
                }
            }
        }
        Err(e) => {
            println!("(g) KeepPreparedTxn on 4.4.0: {} {} — {e}", class(&e), code(&e));
            println!("(g) after the answer: {}", describe(&mut b, &tid).await);
            assert!(matches!(e, ProducerError::Fatal(..) | ProducerError::Abortable(..)), "{e}");
            assert!(e.kafka_code().is_some(), "the broker's code is kept: {e}");
            let expected =
                if matches!(e, ProducerError::Fatal(..)) { StateKind::FatalError } else { StateKind::AbortableError };
            assert_eq!(b.state().kind(), expected);
        }
    }

    // --- (h) throughput: 50 000 small records in one transaction -------------------
    let tid = unique("sinkhole-p-bench");
    let mut p = TxnProducer::connect(config(&servers, Some(&tid))).await.unwrap();
    p.init(InitOptions::default()).await.unwrap();
    let t0 = Instant::now();
    p.begin().unwrap();
    for i in 0..50_000usize {
        p.send(
            &t_bench,
            (i % 3) as i32,
            Bytes::from(format!("h-{i}")),
            Bytes::from_static(b"0123456789abcdef0123456789abcdef"),
            vec![],
        )
        .await
        .unwrap();
    }
    p.commit(None).await.unwrap();
    let secs = t0.elapsed().as_secs_f64();
    let lat = p.take_ack_latencies_us();
    println!(
        "(h) throughput: 50000 records in {:.3} s = {:.0} records/s ({} Produce requests, {:?})",
        secs,
        50_000.0 / secs,
        lat.len(),
        p.protocol()
    );
    let v = visible(&bootstrap, &t_bench).await;
    println!("(h) visible {}", v.records);
    assert_eq!(v.records, 50_000);

    // --- idempotent (non-transactional) producer: init + send + flush ----------------
    let mut p = TxnProducer::connect(config(&servers, None)).await.unwrap();
    let init = p.init(InitOptions::default()).await.expect("idempotent init");
    assert!(matches!(p.begin(), Err(ProducerError::IllegalState(_))));
    send_n(&mut p, &t_idem, "i", 100).await;
    let f = p.flush().await.unwrap();
    let v = visible(&bootstrap, &t_idem).await;
    println!("(i) idempotent: {init:?}, flushed {f:?}, visible {}", v.records);
    assert_eq!(v.records, 100);

    // --- (j) what holds a tail open: DescribeProducers + ListTransactions ------------
    // A transaction left open pins partition 0 at its first offset; the
    // checker's explanation names it, Ongoing at its coordinator (so not
    // hanging). Once it is aborted, nothing holds the partition.
    let t_open = new_topic("open");
    admin.create_topic(&t_open, 1, 1, &[]).await.expect("CreateTopics");
    let tid = unique("sinkhole-p-open");
    let mut p = TxnProducer::connect(config(&servers, Some(&tid))).await.unwrap();
    p.init(InitOptions::default()).await.unwrap();
    p.begin().unwrap();
    for i in 0..5 {
        p.send(&t_open, 0, Bytes::from(format!("o-{i}")), Bytes::from_static(b"x"), vec![]).await.unwrap();
    }
    p.flush().await.unwrap();
    let tail =
        || vec![sinkhole_checker::UncommittedTail { partition: 0, position: 0, high_watermark: 5, open: vec![] }];
    let mut tails = tail();
    sinkhole_checker::open_txn::explain(&servers, &t_open, &mut tails).await;
    println!("(j) open: {:?}", tails[0].open);
    assert_eq!(tails[0].open.len(), 1, "{tails:?}");
    let o = &tails[0].open[0];
    assert_eq!(o.transactional_id.as_deref(), Some(tid.as_str()));
    assert_eq!((o.coordinator_state.as_deref(), o.hanging, o.txn_start_offset), (Some("Ongoing"), false, 0));
    assert_eq!(o.producer_id, p.producer_id_and_epoch().0);
    p.abort().await.unwrap();
    // EndTxn returns once the abort is prepared; the markers follow. Until
    // they are written the coordinator says PrepareAbort: open, not hanging.
    let mut tails = tail();
    for _ in 0..100 {
        tails = tail();
        sinkhole_checker::open_txn::explain(&servers, &t_open, &mut tails).await;
        assert!(tails[0].open.iter().all(|o| !o.hanging), "an abort under way is not hanging: {tails:?}");
        if tails[0].open.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(tails[0].open.is_empty(), "nothing open once the abort's markers are written: {tails:?}");
}
