//! The checker against a real Kafka 4.4.0 broker: records written by
//! librdkafka's transactional producer (committed, aborted, duplicated,
//! foreign, and one transaction left open) are drained with read_committed
//! and counted exactly.
// Each #[tokio::test] runs on a runtime of its own thread, so holding the
// std mutex that serialises cluster tests across awaits cannot deadlock.
#![allow(clippy::await_holding_lock)]
use crate::common;

use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig as RdConfig;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use sinkhole_base::rundir::ModeDir;
use sinkhole_checker::{store, CheckSpec, Counts, Expected, UncommittedTail};
use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_cluster::local::{LocalCluster, LocalSpec};
use sinkhole_cluster::ClusterNodes;
use sinkhole_model::{record, CommitOutcome, Committable, Event, EventKind, SinkMode, Source, TxnProtocol};

const RUN: &str = "it-run";
const TOPIC: &str = "checker-out";

fn producer(bootstrap: &str, tid: &str) -> BaseProducer {
    let p: BaseProducer = RdConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("transactional.id", tid)
        .set("transaction.timeout.ms", "60000")
        .set("linger.ms", "0")
        .create()
        .expect("producer");
    p.init_transactions(Duration::from_secs(30)).expect("init_transactions");
    p
}

/// Sends `value` to `partition` with the rig's headers.
fn send(p: &BaseProducer, partition: i32, value: &str, tid: &str) {
    let headers = OwnedHeaders::new()
        .insert(Header { key: record::H_TID, value: Some(tid) })
        .insert(Header { key: record::H_TIME_US, value: Some("1") });
    let key = value.to_string();
    let rec = BaseRecord::to(TOPIC).partition(partition).key(&key).payload(value).headers(headers);
    p.send(rec).map_err(|(e, _)| e).expect("send");
}

fn event(subtask: u32, kind: EventKind) -> Event {
    Event { wall_ms: 0, mono_us: 0, mode: SinkMode::Legacy, source: Source::Worker { subtask }, kind }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_aborted_duplicated_foreign_and_an_open_transaction() {
    let _turn = common::serial();
    let dir = common::test_dir("checker");
    let mut spec = LocalSpec::new(common::dist("4.4.0"), 1, dir.join("cluster"));
    spec.remove_dir_on_teardown = false;
    let mut cluster = LocalCluster::start(spec).await.expect("1-node cluster");
    let bootstrap = cluster.bootstrap();
    let mut client = Client::connect(&cluster.bootstrap_list(), ClientConfig::default()).await.unwrap();
    client.create_topic(TOPIC, 3, 1, &[]).await.expect("topic");

    let b2 = bootstrap.clone();
    // librdkafka's API blocks: produce on a blocking thread. The open
    // transaction's producer is handed back so it stays open during the drain.
    let open_producer = tokio::task::spawn_blocking(move || {
        // Committed: subtask 0 seq 0..10, subtask 1 seq 0..8, two duplicates
        // (subtask 0 seq 3 and 4 again) and one record of another run.
        let a = producer(&b2, "it-a");
        a.begin_transaction().unwrap();
        for s in 0..2u32 {
            let n = if s == 0 { 10 } else { 8 };
            for q in 0..n {
                send(&a, (q % 3) as i32, &record::value(RUN, s, q), "it-a");
            }
        }
        send(&a, 0, &record::value(RUN, 0, 3), "it-a");
        send(&a, 1, &record::value(RUN, 0, 4), "it-a");
        send(&a, 2, &record::value("another-run", 0, 1), "it-a");
        a.commit_transaction(Duration::from_secs(30)).expect("commit");

        // Aborted: subtask 1 seq 8 and 9, invisible to read_committed.
        let b = producer(&b2, "it-b");
        b.begin_transaction().unwrap();
        send(&b, 0, &record::value(RUN, 1, 8), "it-b");
        send(&b, 1, &record::value(RUN, 1, 9), "it-b");
        b.flush(Duration::from_secs(30)).unwrap();
        b.abort_transaction(Duration::from_secs(30)).expect("abort");

        // Left open on partition 2: the last stable offset stays below the
        // high-water mark; this record (a third duplicate) must not be counted.
        let c = producer(&b2, "it-0-3");
        c.begin_transaction().unwrap();
        send(&c, 2, &record::value(RUN, 0, 5), "it-0-3");
        c.flush(Duration::from_secs(30)).unwrap();
        c
    })
    .await
    .unwrap();

    // The history attributes the aborted records to a dropped committable.
    let history = dir.join("history.jsonl");
    let lines = [
        event(
            1,
            EventKind::TxnPrecommitted {
                committable: Committable {
                    checkpoint: 2,
                    transactional_id: "it-b".into(),
                    producer_id: 1,
                    producer_epoch: 0,
                    protocol: TxnProtocol::V1,
                    records: 2,
                    first_seq: Some(8),
                    last_seq: Some(9),
                },
                flush_us: 1,
            },
        ),
        event(
            1,
            EventKind::CommitFinished {
                transactional_id: "it-b".into(),
                checkpoint: 2,
                restored: true,
                outcome: CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() },
                latency_us: 1,
            },
        ),
    ];
    std::fs::write(&history, lines.iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect::<String>())
        .unwrap();

    let spec = CheckSpec {
        bootstrap: bootstrap.clone(),
        topic: TOPIC.into(),
        expected: Expected { run_id: RUN.into(), parallelism: 2, records_per_subtask: 10 },
        history: Some(history),
        dir: ModeDir::at(&dir),
        timeout: Duration::from_secs(6),
        tid_prefix: Some("it".into()),
    };
    let t0 = Instant::now();
    let r = sinkhole_checker::check_mode(&spec).await.expect("check");
    eprintln!("drain + check in {} ms: {}", t0.elapsed().as_millis(), serde_json::to_string_pretty(&r).unwrap());
    drop(open_producer);

    // The two duplicates land after higher seqs of subtask 0 in partitions 0
    // and 1 (a step back each); partition 2 holds an open transaction.
    assert_eq!(
        r.counts,
        Counts {
            expected: 20,
            committed: 18,
            lost: 2,
            duplicated: 2,
            unexpected: 1,
            nonmonotonic: 2,
            uncommitted_tail: 1,
            hanging_transaction: 1,
            ..Counts::default()
        }
    );
    assert_eq!(r.examples.lost.len(), 1);
    assert_eq!(
        r.examples.lost[0].detail,
        "subtask 1 seq 8–9 lost: transaction it-b (checkpoint 2), committable dropped: PRODUCER_FENCED (90)"
    );
    assert_eq!(r.examples.unexpected[0].partition, Some(2));
    assert!(r.examples.unexpected[0].detail.contains("another run (another-run)"));
    assert_eq!(r.examples.duplicated.len(), 2);
    assert_eq!(r.examples.duplicated[0].transactional_id.as_deref(), Some("it-a"));
    // Partitions 0 and 1 were read up to their high-water marks, past the
    // aborted batches and their markers; partition 2 is held by it-0-3.
    for p in &r.partitions[..2] {
        assert!(p.complete(), "{p:?}");
    }
    let p2 = &r.partitions[2];
    assert_eq!(r.uncommitted_tail.len(), 1);
    let tail = &r.uncommitted_tail[0];
    assert_eq!(
        UncommittedTail { open: vec![], ..tail.clone() },
        UncommittedTail { partition: 2, position: p2.position, high_watermark: p2.high_watermark, open: vec![] }
    );
    // The brokers name what holds it: it-0-3, still Ongoing at its coordinator.
    assert_eq!(tail.open.len(), 1, "{tail:?}");
    assert_eq!(tail.open[0].transactional_id.as_deref(), Some("it-0-3"), "{tail:?}");
    assert_eq!((tail.open[0].coordinator_state.as_deref(), tail.open[0].hanging), (Some("Ongoing"), false));
    assert!(p2.position < p2.high_watermark);
    // The look before the drain listed it open, under the prefix, with its partition; nothing
    // ended it, so it is the sink's: counted, and the tail it holds is explained.
    assert!(r.end_look.taken && r.end_look.error.is_none(), "{:?}", r.end_look);
    let listed: Vec<(&str, &str, &[i32])> = r
        .end_look
        .transactions
        .iter()
        .map(|t| (t.transactional_id.as_str(), t.state.as_str(), t.partitions.as_slice()))
        .collect();
    assert_eq!(listed, [("it-0-3", "Ongoing", &[2][..])]);
    assert_eq!(r.hanging.len(), 1, "{:?}", r.hanging);
    assert_eq!(r.hanging[0].whose, sinkhole_checker::hanging::Whose::Sink);
    assert_eq!(r.hanging[0].stuck, [(2, p2.position)]);
    assert!(r.hanging[0].describe().contains("no transaction under this id is in the history"));
    // read_committed saw 18 distinct + 2 duplicates + 1 foreign record
    assert_eq!(r.records_read, 21);
    let saved = store::read(&dir.join(store::FILE_NAME)).expect("drained.bin");
    assert_eq!(saved.len(), 21);
    assert!(saved.iter().all(|s| s.tid.as_deref() == Some("it-a")));

    // Offline re-check from the saved drain, with the brokers' looks the check stored, gives the
    // same counts.
    let mut again = sinkhole_checker::recheck(&ModeDir::at(&dir), &spec.expected, spec.history.as_deref()).unwrap();
    again.adopt_looks(&r.end_look, &r.uncommitted_tail);
    again.judge_open_transactions(&sinkhole_history::read(spec.history.as_ref().unwrap()).unwrap().events);
    assert_eq!(again.counts, r.counts);
    assert_eq!(again.hanging, r.hanging);

    cluster.teardown();
    let _ = std::fs::remove_dir_all(&dir);
}
