//! KIP-939's TWO_PHASE_COMMIT ACL on a real 1-node Kafka 4.4.0 running the
//! StandardAuthorizer (the local backend with `LocalSpec::sink_sasl`): the
//! rig's PLAINTEXT clients are the super user `User:ANONYMOUS`, the "sink"
//! connects as `User:sink` over SASL/PLAIN on a listener of its own.
//!
//! Wire-level checks: SASL/PLAIN works (and a wrong password is refused), a
//! plain transactional InitProducerId works for User:sink with WRITE on the
//! id, Enable2Pc is refused without TWO_PHASE_COMMIT and accepted once
//! CreateAcls adds it; and what eager partition registration
//! (AddPartitionsToTxn at begin) gets from the broker under the cluster's
//! transaction protocol. Broker answers are printed (`--nocapture`).
#![allow(clippy::await_holding_lock)]

use crate::common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sinkhole_client::producer::{Bytes, InitOptions, ProducerConfig, TxnProducer};
use sinkhole_client::wire::acls::{self, op, resource, AclBinding};
use sinkhole_client::wire::{Client, ClientConfig, InitProducerIdParams, KafkaCode, SaslPlain};
use sinkhole_cluster::local::LocalCluster;
use sinkhole_cluster::Cluster;
use sinkhole_cluster::ClusterNodes;

fn unique(prefix: &str) -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    format!("{prefix}-{}-{}", std::process::id(), nanos % 1_000_000_000)
}

fn params(tid: &str, enable_2pc: bool) -> InitProducerIdParams {
    InitProducerIdParams {
        transactional_id: Some(tid.to_string()),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
        enable_2pc,
        keep_prepared_txn: false,
    }
}

/// InitProducerId with the client's retries (a fresh cluster answers
/// NOT_COORDINATOR while `__transaction_state` loads): the outcome, or the
/// Kafka code of the non-retriable answer.
async fn init(c: &mut Client, p: &InitProducerIdParams, version: Option<i16>) -> Result<(i64, i16), Option<KafkaCode>> {
    match c.init_producer_id(p, version).await {
        Ok(o) => Ok((o.producer_id, o.producer_epoch)),
        Err(e) => {
            println!("InitProducerId {:?} enable2Pc={}: {e}", p.transactional_id, p.enable_2pc);
            Err(e.kafka_code())
        }
    }
}

fn quick(sasl: Option<SaslPlain>) -> ClientConfig {
    ClientConfig {
        client_id: "sinkhole-acl-live".into(),
        request_timeout: Duration::from_secs(10),
        retry_deadline: Duration::from_secs(20),
        sasl,
        ..ClientConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_phase_commit_acl_gates_enable_2pc() {
    let _serial = common::serial();
    let mut spec = common::two_pc_spec("acl-live");
    let sink = SaslPlain::new("sink", "sink-pw-1");
    spec.sink_sasl = Some(sink.clone());
    let mut cluster = LocalCluster::start(spec).await.expect("cluster with a SASL listener and an authorizer");
    let listener = cluster.sink_listener().expect("the sink listener is read back from server.properties");
    assert_eq!(listener.sasl, sink);
    assert_ne!(listener.bootstrap, cluster.bootstrap_list(), "a listener of its own");

    // The rig's client (PLAINTEXT, User:ANONYMOUS = super user) can still do
    // everything: the authorizer did not lock the rig out.
    let mut admin = Client::connect(&cluster.bootstrap_list(), quick(None)).await.expect("admin bootstrap");
    let topic = unique("acl-it-topic");
    admin.create_topic(&topic, 3, 1, &[]).await.expect("the super user creates topics");

    let prefix = unique("acl-it");
    let user = sink.principal();
    let base = vec![
        AclBinding::allow_prefixed(&user, resource::TRANSACTIONAL_ID, &prefix, op::WRITE),
        AclBinding::allow_prefixed(&user, resource::TRANSACTIONAL_ID, &prefix, op::DESCRIBE),
        AclBinding::allow_prefixed(&user, resource::TOPIC, "acl-it-topic", op::WRITE),
        AclBinding::allow_prefixed(&user, resource::TOPIC, "acl-it-topic", op::DESCRIBE),
    ];
    acls::create_acls(&mut admin, &base).await.expect("CreateAcls");
    acls::await_acls(&mut admin, &base, Duration::from_secs(20)).await.expect("the broker enforces the ACLs");

    // A wrong password: the broker refuses the SASL exchange, and the client
    // gives up at once instead of retrying until its deadline.
    let started = std::time::Instant::now();
    let err = Client::connect(&listener.bootstrap, quick(Some(SaslPlain::new("sink", "wrong"))))
        .await
        .expect_err("a wrong password is refused");
    println!("wrong password: {err} (after {:?})", started.elapsed());
    assert!(err.is_authentication_error(), "{err}");
    assert_eq!(err.kafka_code(), Some(KafkaCode(58)), "SASL_AUTHENTICATION_FAILED: {err}");
    assert!(started.elapsed() < Duration::from_secs(5), "not retried: {:?}", started.elapsed());

    let mut c = Client::connect(&listener.bootstrap, quick(Some(sink.clone()))).await.expect("SASL/PLAIN bootstrap");
    let md = c.metadata(Some(std::slice::from_ref(&topic))).await.expect("metadata as User:sink");
    assert_eq!(md.topics[0].partitions.len(), 3, "DESCRIBE on the topic lets the sink see it");
    assert!(
        md.brokers.iter().all(|b| listener.bootstrap.contains(&b.addr())),
        "metadata on the SASL listener advertises the SASL listener: {:?}",
        md.brokers
    );

    // A plain transactional InitProducerId: WRITE on the id is enough.
    let plain = init(&mut c, &params(&format!("{prefix}-plain"), false), None).await;
    println!("plain InitProducerId as User:sink: {plain:?}");
    assert!(plain.expect("a plain transactional InitProducerId is allowed").0 >= 0);

    // An id outside the granted prefix: refused even without 2PC.
    let other = init(&mut c, &params(&unique("other"), false), None).await;
    assert_eq!(other, Err(Some(KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)));

    // Enable2Pc without TWO_PHASE_COMMIT: refused.
    let tid = format!("{prefix}-2pc");
    let denied = init(&mut c, &params(&tid, true), Some(6)).await;
    println!("Enable2Pc InitProducerId v6 without TWO_PHASE_COMMIT: {denied:?}");
    assert_eq!(denied, Err(Some(KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)));

    // Grant it; the same request is accepted.
    let grant = vec![AclBinding::allow_prefixed(&user, resource::TRANSACTIONAL_ID, &prefix, op::TWO_PHASE_COMMIT)];
    acls::create_acls(&mut admin, &grant).await.expect("CreateAcls TWO_PHASE_COMMIT");
    acls::await_acls(&mut admin, &grant, Duration::from_secs(20)).await.expect("enforced");
    let accepted = init(&mut c, &params(&tid, true), Some(6)).await;
    println!("Enable2Pc InitProducerId v6 with TWO_PHASE_COMMIT: {accepted:?} (pid, epoch)");
    assert!(accepted.expect("Enable2Pc is accepted with the ACL").0 >= 0);

    // Eager registration: AddPartitionsToTxn for every partition at begin,
    // through the producer as User:sink, then records and a commit.
    let cfg = ProducerConfig {
        request_timeout: Duration::from_secs(10),
        delivery_timeout: Duration::from_secs(30),
        ..ProducerConfig::new(listener.bootstrap.clone(), Some(format!("{prefix}-eager")))
    };
    let mut p = TxnProducer::connect_with(cfg, Some(sink.clone())).await.expect("producer over SASL");
    let info = p.init(InitOptions::default()).await.expect("init");
    p.begin().expect("begin");
    let eager = p.register_partitions(&topic, &[0, 1, 2]).await;
    println!(
        "eager AddPartitionsToTxn under {:?} (transaction.version {}): {:?}",
        info.protocol,
        p.transaction_version(),
        eager.as_ref().map_err(|e| e.to_string())
    );
    assert_eq!(eager.expect("the broker accepts AddPartitionsToTxn at begin"), 3);
    for i in 0..6 {
        p.send(&topic, i % 3, Bytes::from(format!("k{i}")), Bytes::from_static(b"v"), vec![]).await.expect("send");
    }
    p.commit(None).await.expect("commit after eager registration");
    let counts = p.take_request_counts();
    println!("requests {:?} retries {:?}", counts.requests, counts.retries);
    assert_eq!(counts.requests.get("AddPartitionsToTxn"), Some(&1), "one AddPartitionsToTxn: {counts:?}");
    // EndTxn returns in PrepareCommit; the markers go out after it.
    let started = std::time::Instant::now();
    loop {
        let d = admin.describe_transactions(&[format!("{prefix}-eager")]).await.expect("DescribeTransactions");
        println!("after commit: {} {:?}", d[0].state, d[0].partitions);
        if d[0].state == "CompleteCommit" {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "still {} after 10 s", d[0].state);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    cluster.teardown();
}
