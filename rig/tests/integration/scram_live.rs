//! The wire client's SCRAM-SHA-512 against a real broker: a 1-node cluster with the sink's
//! SASL listener (which takes PLAIN and SCRAM-SHA-512), a SCRAM credential set through
//! AlterUserScramCredentials (API 51, as `kafka-configs --add-config SCRAM-SHA-512=[…]` does),
//! then a client that authenticates with it — the password read from a file, never shown — and
//! one with a wrong password, refused for good and without the password in the error.
// The serial guard is held for the whole test on purpose: clusters take turns.
#![allow(clippy::await_holding_lock)]
use crate::common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::AlterUserScramCredentialsRequest;
use kafka_protocol::protocol::StrBytes;
use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_client::wire::scram::{salted_password, Hash};
use sinkhole_client::wire::security::{Mechanism, Protocol, ResolveSecurity, Security};
use sinkhole_client::wire::{Connection, SaslPlain};
use sinkhole_cluster::local::LocalCluster;
use sinkhole_cluster::Cluster;
use sinkhole_cluster::ClusterNodes;

const PASSWORD: &str = "scram-Pw-7f3e";

fn config(security: &Security) -> ClientConfig {
    ClientConfig {
        client_id: "sinkhole-scram-live".into(),
        request_timeout: Duration::from_secs(10),
        retry_deadline: Duration::from_secs(5),
        security: Some(Arc::new(security.resolve().unwrap())),
        ..ClientConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_sha_512_authenticates_against_a_real_broker() {
    let _serial = common::serial();
    let mut spec = common::two_pc_spec("scram-live");
    spec.sink_sasl = Some(SaslPlain::new("sink", "plain-pw-1"));
    let mut cluster = LocalCluster::start(spec).await.expect("cluster with the sink's SASL listener");
    let listener = cluster.sink_listener().unwrap();

    // The rig's PLAINTEXT listener is the super user: it sets user `scram`'s credential.
    let salt = b"sinkhole-scram-live-salt".to_vec();
    let mut up = ScramCredentialUpsertion::default();
    up.name = StrBytes::from_static_str("scram");
    up.mechanism = 2; // SCRAM-SHA-512 (ScramMechanism.type)
    up.iterations = 4096;
    up.salt = Bytes::from(salt.clone());
    up.salted_password = Bytes::from(salted_password(Hash::Sha512, PASSWORD, &salt, 4096));
    let mut req = AlterUserScramCredentialsRequest::default();
    req.upsertions = vec![up];
    let mut conn = Connection::connect(&cluster.bootstrap_list()[0], "sinkhole-scram-live", Duration::from_secs(10))
        .await
        .unwrap();
    let resp = conn.send(&req, 0, Duration::from_secs(10)).await.unwrap();
    assert_eq!(resp.results.len(), 1);
    assert_eq!(resp.results[0].error_code, 0, "{:?}", resp.results[0].error_message);

    let dir = common::test_dir("scram-pw");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("pw"), format!("{PASSWORD}\n")).unwrap();
    let security = Security {
        protocol: Protocol::SaslPlaintext,
        mechanism: Some(Mechanism::ScramSha512),
        username: Some("scram".into()),
        password_file: Some(dir.join("pw")),
        ..Security::default()
    };
    // The credential reaches the broker through the metadata log: allow it a moment.
    let mut last = String::new();
    let mut ok = false;
    for _ in 0..50 {
        match Client::connect(&listener.bootstrap, config(&security)).await {
            Ok(mut c) => {
                let md = c.metadata(Some(&[])).await.expect("Metadata as the SCRAM user");
                assert_eq!(md.brokers.len(), 1);
                ok = true;
                break;
            }
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(ok, "SCRAM-SHA-512 never authenticated: {last}");

    std::fs::write(dir.join("pw"), "not-the-password\n").unwrap();
    let e = Client::connect(&listener.bootstrap, config(&security)).await.unwrap_err();
    assert!(e.is_authentication_error(), "{e}");
    let text = e.to_string();
    assert!(text.contains("SaslAuthenticate") && !text.contains("not-the-password"), "{text}");

    cluster.teardown();
    let _ = std::fs::remove_dir_all(&dir);
}
