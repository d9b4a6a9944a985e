//! Client security against a real Kafka broker's TLS listeners: one 1-node Kafka 4.4.0 cluster
//! with, besides the rig's PLAINTEXT listener, an `SSL` listener and a `SASL_SSL` one (`SECURE`,
//! PLAIN and SCRAM-SHA-512), its certificate signed by a CA made for the test (`openssl`; Kafka
//! reads it as a PEM keystore, `ssl.keystore.type=PEM`). Through `backend: external` pointed at
//! those listeners:
//! - a `sinkhole run` over SASL_SSL/SCRAM-SHA-512 with `legacy` (the rig's wire client: login,
//!   TLS, transactional produce and commit) and `rdkafka-txn` (librdkafka), the checker's drain
//!   (librdkafka, read_committed) on the same listener, judged clean with every record counted;
//! - a `sinkhole run` over SSL alone, the same two modes;
//! - PLAIN over SASL_SSL for the wire client and librdkafka;
//! - a CA that did not sign the broker's certificate, refused with the TLS error named;
//! - a wrong password, refused at login and never printed or written.
//!
//! The Java side is `SslFactory`/`DefaultSslEngineFactory` (PEM keystore) and
//! `SaslServerAuthenticator` on the broker; on the client, rustls for the wire client and
//! OpenSSL for librdkafka.
// The serial guard is held for the whole test on purpose: clusters take turns.
#![allow(clippy::await_holding_lock)]
use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::AlterUserScramCredentialsRequest;
use kafka_protocol::protocol::StrBytes;
use rdkafka::producer::{BaseProducer, Producer};
use serde_json::Value;
use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_client::wire::scram::{salted_password, Hash};
use sinkhole_client::wire::security::{Mechanism, Protocol, ResolveSecurity, Security};
use sinkhole_client::wire::Connection;
use sinkhole_cluster::local::LocalCluster;
use sinkhole_cluster::ClusterNodes;
use sinkhole_testkit::tls::{ca, leaf};

const SCRAM_USER: &str = "alice";
const SCRAM_PASSWORD: &str = "alice-Scram-9d2c";
const PLAIN_USER: &str = "bob";
const PLAIN_PASSWORD: &str = "bob-Plain-4e1a";
const WRONG_PASSWORD: &str = "not-Alices-7b55";
const PASSWORD_ENV: &str = "SINKHOLE_TLS_LIVE_PASSWORD";
const RECORDS: u64 = 3000;

/// The broker's certificate for 127.0.0.1 and localhost signed by `ca`, and the PEM keystore
/// Kafka reads (`broker-keystore.pem`: the PKCS#8 key, then the certificate).
fn broker_keystore(dir: &Path, ca: &str) -> PathBuf {
    leaf(dir, ca, "broker", "IP:127.0.0.1,DNS:localhost");
    let key = std::fs::read_to_string(dir.join("broker.key")).unwrap();
    assert!(key.contains("BEGIN PRIVATE KEY"), "Kafka's PEM keystore wants a PKCS#8 key: {key}");
    let keystore = dir.join("broker-keystore.pem");
    std::fs::write(&keystore, key + &std::fs::read_to_string(dir.join("broker.pem")).unwrap()).unwrap();
    keystore
}

/// Gives user `alice` a SCRAM-SHA-512 credential through the PLAINTEXT listener (no authorizer:
/// every principal may), as `kafka-configs --add-config SCRAM-SHA-512=[…]` does.
async fn add_scram_user(cluster: &LocalCluster) {
    let salt = b"sinkhole-tls-live-salt".to_vec();
    let mut up = ScramCredentialUpsertion::default();
    up.name = StrBytes::from_static_str(SCRAM_USER);
    up.mechanism = 2; // SCRAM-SHA-512 (ScramMechanism.type)
    up.iterations = 4096;
    up.salt = Bytes::from(salt.clone());
    up.salted_password = Bytes::from(salted_password(Hash::Sha512, SCRAM_PASSWORD, &salt, 4096));
    let mut req = AlterUserScramCredentialsRequest::default();
    req.upsertions = vec![up];
    let t = Duration::from_secs(10);
    let mut conn = Connection::connect(&cluster.bootstrap_list()[0], "sinkhole-tls-live", t).await.unwrap();
    let resp = conn.send(&req, 0, t).await.unwrap();
    assert_eq!(resp.results[0].error_code, 0, "{:?}", resp.results[0].error_message);
}

fn client_config(security: &Security) -> ClientConfig {
    ClientConfig {
        client_id: "sinkhole-tls-live".into(),
        request_timeout: Duration::from_secs(10),
        retry_deadline: Duration::from_secs(5),
        security: Some(Arc::new(security.resolve().unwrap())),
        ..ClientConfig::default()
    }
}

/// librdkafka with `security`'s keys (as every librdkafka client of the rig gets them) lists
/// the broker in Metadata: the TLS handshake and the SASL login passed.
fn rdkafka_sees_the_broker(bootstrap: &str, security: &Security) {
    let mut c = rdkafka::ClientConfig::new();
    c.set("bootstrap.servers", bootstrap).set("client.id", "sinkhole-tls-live");
    for (k, v) in security.resolve().unwrap().rdkafka() {
        c.set(k, v);
    }
    let p: BaseProducer = c.create().expect("librdkafka producer");
    let md = p.client().fetch_metadata(None, Duration::from_secs(15)).unwrap_or_else(|e| {
        panic!("librdkafka over {} at {bootstrap}: {e}", security.protocol.name());
    });
    assert_eq!(md.brokers().len(), 1, "{bootstrap}");
}

/// What librdkafka reported through its log and error callbacks (the rig's librdkafka clients
/// forward both to their log, `rdkafka_common::AckContext`).
#[derive(Default)]
struct Captured(std::sync::Mutex<Vec<String>>);

impl rdkafka::ClientContext for Captured {
    fn log(&self, _: rdkafka::config::RDKafkaLogLevel, fac: &str, message: &str) {
        self.0.lock().unwrap().push(format!("{fac} {message}"));
    }
    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        self.0.lock().unwrap().push(format!("{error}: {reason}"));
    }
}

impl rdkafka::producer::ProducerContext for Captured {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &rdkafka::message::DeliveryResult<'_>, _: ()) {}
}

/// librdkafka with `security`'s keys is refused: Metadata fails, and what it reported holds
/// `needle` (the reason) and never `secret`.
fn rdkafka_is_refused(bootstrap: &str, security: &Security, needle: &str, secret: &str) {
    let mut c = rdkafka::ClientConfig::new();
    c.set("bootstrap.servers", bootstrap).set("client.id", "sinkhole-tls-live");
    for (k, v) in security.resolve().unwrap().rdkafka() {
        c.set(k, v);
    }
    let p: BaseProducer<Captured> = c.create_with_context(Captured::default()).expect("librdkafka producer");
    let md = p.client().fetch_metadata(None, Duration::from_secs(3));
    assert!(md.is_err(), "librdkafka was let in at {bootstrap}");
    for _ in 0..10 {
        p.poll(Duration::from_millis(50));
    }
    let said = p.context().0.lock().unwrap().join("\n");
    assert!(said.contains(needle), "librdkafka did not say {needle:?}:\n{said}");
    assert!(!said.contains(secret), "librdkafka showed the password:\n{said}");
    eprintln!("librdkafka refused: {}", said.lines().find(|l| l.contains(needle)).unwrap_or_default());
}

/// A short scenario without faults on `backend: external` at `bootstrap` with `security`
/// (YAML flow mapping), modes legacy and rdkafka-txn, both expected clean.
fn scenario(dir: &Path, name: &str, bootstrap: &str, security: &str) -> PathBuf {
    let text = format!(
        "name: {name}\ncluster:\n  brokers: 1\n  backend: external\n  external:\n    bootstrap: [{bootstrap}]\n    \
         security: {security}\ntopic: {{partitions: 2, replication_factor: 1}}\njob: {{parallelism: 1, \
         records_per_subtask: {RECORDS}, rate_per_subtask: 0, checkpoint_interval_ms: 500, \
         transaction_timeout_ms: 60000, restart_delay_ms: 0}}\nmodes: [legacy, rdkafka-txn]\n\
         expect:\n  legacy: clean\n  rdkafka-txn: clean\n"
    );
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(&file, text).unwrap();
    file
}

fn sinkhole_run(file: &Path, results: &Path, password: &str) -> Output {
    Command::new(common::bin())
        .arg("run")
        .arg(file)
        .args(["--seed", "7", "--results"])
        .arg(results)
        .env(PASSWORD_ENV, password)
        .output()
        .expect("run sinkhole")
}

/// Every file under `dir`, read as text where it is text.
fn files_text(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_text(&p));
        } else if let Ok(bytes) = std::fs::read(&p) {
            out.push((p, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    out
}

/// Runs `file`, which must pass with both modes clean and every record committed once; no
/// output and no file of the run holds `password`.
fn run_clean(file: &Path, results: &Path, password: &str) {
    let started = Instant::now();
    let out = sinkhole_run(file, results, password);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("{} ({:.1} s):\n{stdout}", file.display(), started.elapsed().as_secs_f64());
    assert_eq!(out.status.code(), Some(0), "{}:\n{stdout}\n{stderr}", file.display());
    let run_dir = std::fs::read_dir(results).unwrap().map(|e| e.unwrap().path()).find(|p| p.is_dir()).unwrap();
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap()).unwrap();
    let modes = summary["modes"].as_array().unwrap();
    assert_eq!(modes.len(), 2, "{summary}");
    for m in modes {
        assert_eq!((&m["outcome"], &m["expected_met"]), (&Value::from("pass"), &Value::from(true)), "{m}");
        assert_eq!(m["expected"], "clean", "{m}");
        assert!(m["reason"].as_str().unwrap().starts_with("clean as expected"), "{m}");
        let c = &m["counts"];
        assert_eq!((&c["expected"], &c["committed"]), (&Value::from(RECORDS), &Value::from(RECORDS)), "{m}");
        assert_eq!((&c["lost"], &c["duplicated"], &c["unexpected"]), (&0.into(), &0.into(), &0.into()), "{m}");
        // The latency tail (librdkafka, read_committed) saw every committed record on the listener.
        let mode = m["mode"].as_str().unwrap();
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(run_dir.join(mode).join("verdict.json")).unwrap()).unwrap();
        assert!(v["latency"]["visibility"]["count"].as_u64().unwrap_or(0) >= RECORDS, "{mode}: {}", v["latency"]);
    }
    assert!(!stdout.contains(password) && !stderr.contains(password));
    for (p, text) in files_text(results) {
        assert!(!text.contains(password), "{} holds the password", p.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_sasl_ssl_listeners_of_a_real_broker() {
    let _serial = common::serial();
    let started = Instant::now();
    let dir = common::test_dir("tls-live");
    let certs = dir.join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    ca(&certs, "ca");
    ca(&certs, "other-ca");
    let keystore = broker_keystore(&certs, "ca");

    let mut spec = common::two_pc_spec("tls-live-cluster");
    spec.listeners = vec![("SSL".into(), "SSL".into()), ("SECURE".into(), "SASL_SSL".into())];
    let scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;".to_string();
    let plain = format!(
        "org.apache.kafka.common.security.plain.PlainLoginModule required user_{PLAIN_USER}=\"{PLAIN_PASSWORD}\";"
    );
    for (k, v) in [
        // Both TLS listeners serve the one PEM keystore (key and chain in one file).
        ("ssl.keystore.type", "PEM".to_string()),
        ("ssl.keystore.location", keystore.display().to_string()),
        ("listener.name.secure.sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512".into()),
        ("listener.name.secure.scram-sha-512.sasl.jaas.config", scram),
        ("listener.name.secure.plain.sasl.jaas.config", plain),
    ] {
        spec.broker_config.insert(k.into(), v);
    }
    let mut cluster = LocalCluster::start(spec).await.expect("a broker with SSL and SASL_SSL listeners");
    let ssl = cluster.listener_bootstrap("SSL");
    let secure = cluster.listener_bootstrap("SECURE");
    assert_eq!((ssl.len(), secure.len()), (1, 1), "{ssl:?} {secure:?}");
    add_scram_user(&cluster).await;
    eprintln!("broker up with SSL at {ssl:?}, SASL_SSL at {secure:?}: {:.1} s", started.elapsed().as_secs_f64());

    let ca_pem = certs.join("ca.pem");
    let pw_file = dir.join("password");
    std::fs::write(&pw_file, format!("{SCRAM_PASSWORD}\n")).unwrap();
    let scram_sec = Security {
        protocol: Protocol::SaslSsl,
        mechanism: Some(Mechanism::ScramSha512),
        username: Some(SCRAM_USER.into()),
        password_file: Some(pw_file.clone()),
        ca_file: Some(ca_pem.clone()),
        ..Security::default()
    };
    // The SCRAM credential reaches the listener through the metadata log: allow it a moment.
    let mut last = String::new();
    let mut ok = false;
    for _ in 0..50 {
        match Client::connect(&secure, client_config(&scram_sec)).await {
            Ok(mut c) => {
                assert_eq!(c.metadata(Some(&[])).await.expect("Metadata over SASL_SSL").brokers.len(), 1);
                ok = true;
                break;
            }
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(ok, "SCRAM-SHA-512 over SASL_SSL never authenticated: {last}");
    rdkafka_sees_the_broker(&secure[0], &scram_sec);

    // PLAIN on the same listener, for both clients.
    std::fs::write(dir.join("plain-password"), PLAIN_PASSWORD).unwrap();
    let plain_sec = Security {
        mechanism: Some(Mechanism::Plain),
        username: Some(PLAIN_USER.into()),
        password_file: Some(dir.join("plain-password")),
        ..scram_sec.clone()
    };
    let mut c = Client::connect(&secure, client_config(&plain_sec)).await.expect("PLAIN over SASL_SSL");
    assert_eq!(c.metadata(Some(&[])).await.unwrap().brokers.len(), 1);
    rdkafka_sees_the_broker(&secure[0], &plain_sec);
    // TLS alone, for both clients.
    let ssl_sec = Security { protocol: Protocol::Ssl, ca_file: Some(ca_pem.clone()), ..Security::default() };
    let mut c = Client::connect(&ssl, client_config(&ssl_sec)).await.expect("the wire client over SSL");
    assert_eq!(c.metadata(Some(&[])).await.unwrap().brokers.len(), 1);
    rdkafka_sees_the_broker(&ssl[0], &ssl_sec);
    eprintln!("wire client and librdkafka logged in: {:.1} s", started.elapsed().as_secs_f64());

    // Whole runs through `backend: external`: the workers, the rig's lookups and the checker
    // reach the broker on the secure listener only.
    let ca_yaml = ca_pem.display().to_string();
    let sasl_yaml = format!(
        "{{protocol: SASL_SSL, mechanism: SCRAM-SHA-512, username: {SCRAM_USER}, password_env: {PASSWORD_ENV}, \
         ca_file: {ca_yaml}}}"
    );
    let file = scenario(&dir, "tls-sasl-ssl-clean", &secure[0], &sasl_yaml);
    run_clean(&file, &dir.join("results-sasl-ssl"), SCRAM_PASSWORD);
    eprintln!("run over SASL_SSL: {:.1} s", started.elapsed().as_secs_f64());
    let file = scenario(&dir, "tls-ssl-clean", &ssl[0], &format!("{{protocol: SSL, ca_file: {ca_yaml}}}"));
    run_clean(&file, &dir.join("results-ssl"), SCRAM_PASSWORD);
    eprintln!("run over SSL: {:.1} s", started.elapsed().as_secs_f64());

    // A CA that did not sign the broker's certificate: refused at the first connection, with the
    // reason named (exit 3: the rig could not reach the cluster).
    let wrong_ca = certs.join("other-ca.pem").display().to_string();
    let file = scenario(&dir, "tls-wrong-ca", &ssl[0], &format!("{{protocol: SSL, ca_file: {wrong_ca}}}"));
    let out = sinkhole_run(&file, &dir.join("results-wrong-ca"), SCRAM_PASSWORD);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("TLS with") && stderr.contains("UnknownIssuer"), "{stderr}");
    eprintln!("wrong CA: {}", stderr.trim());
    let e = Client::connect(&ssl, client_config(&Security { ca_file: Some(wrong_ca.into()), ..ssl_sec.clone() }))
        .await
        .unwrap_err();
    assert!(e.is_authentication_error(), "a refused certificate is not retried: {e}");
    let wrong_ca_sec = Security { ca_file: Some(certs.join("other-ca.pem")), ..ssl_sec.clone() };
    rdkafka_is_refused(&ssl[0], &wrong_ca_sec, "certificate verify failed", SCRAM_PASSWORD);

    // A wrong password: refused at login, and shown nowhere.
    let file = scenario(&dir, "tls-wrong-password", &secure[0], &sasl_yaml);
    let results = dir.join("results-wrong-password");
    let out = sinkhole_run(&file, &results, WRONG_PASSWORD);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stderr.contains("SaslAuthenticate"), "{stderr}");
    assert!(!stdout.contains(WRONG_PASSWORD) && !stderr.contains(WRONG_PASSWORD), "{stdout}\n{stderr}");
    for (p, text) in files_text(&results) {
        assert!(!text.contains(WRONG_PASSWORD), "{} holds the password", p.display());
    }
    eprintln!("wrong password: {}", stderr.trim());
    std::fs::write(&pw_file, WRONG_PASSWORD).unwrap();
    rdkafka_is_refused(&secure[0], &scram_sec, "Authentication failed", WRONG_PASSWORD);

    cluster.teardown();
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("external_tls_live: {:.1} s", started.elapsed().as_secs_f64());
}
