//! Shared helpers for the integration tests: real brokers, started by the test.
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

use sinkhole_client::wire::client::ClientConfig;
use sinkhole_install::KafkaDist;

#[cfg(feature = "containers")]
pub mod containers;
pub mod files;

/// Clusters are heavy on a 2-core machine: tests that start one take turns.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: OnceLock<Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| Mutex::new(())).lock().unwrap_or_else(|p| p.into_inner())
}

/// Kafka 4.4.0 from the cache, installed on first use.
pub fn dist(version: &str) -> KafkaDist {
    sinkhole_install::ensure(version, &mut |l| eprintln!("setup: {l}")).expect("install Kafka")
}

/// The run directory `sinkhole run --results RESULTS` made (the one holding a summary.json);
/// the panic names the run's stderr when there is none.
pub fn run_dir(results: &Path, out: &std::process::Output) -> PathBuf {
    std::fs::read_dir(results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("summary.json").exists())
        .unwrap_or_else(|| panic!("no summary.json: {}", String::from_utf8_lossy(&out.stderr)))
}

/// A fresh directory for one test's cluster.
pub fn test_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sinkhole-it-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A wire client that gives up within two seconds: for a node that may be down, paused or
/// moving its coordinators.
pub fn quick_client() -> ClientConfig {
    ClientConfig {
        request_timeout: std::time::Duration::from_secs(2),
        retry_deadline: std::time::Duration::from_secs(2),
        ..ClientConfig::default()
    }
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_sinkhole"))
}

/// A throwaway 1-node Kafka 4.4.0 spec as the transactional tests want it:
/// KIP-939's broker settings on (2PC and unstable API versions, so
/// InitProducerId v6 is advertised) and a 500 ms timeout-abort scan, so a
/// transaction past its timeout is aborted within a second.
pub fn two_pc_spec(name: &str) -> sinkhole_cluster::local::LocalSpec {
    let mut spec = sinkhole_cluster::local::LocalSpec::new(dist("4.4.0"), 1, test_dir(name));
    spec.remove_dir_on_teardown = true;
    for (k, v) in [
        ("transaction.two.phase.commit.enable", "true"),
        ("unstable.api.versions.enable", "true"),
        ("transaction.abort.timed.out.transaction.cleanup.interval.ms", "500"),
    ] {
        spec.broker_config.insert(k.into(), v.into());
    }
    spec
}

/// Reads `topic`'s partitions `0..partitions` with librdkafka's `read_committed` consumer from
/// the beginning, handing each record to `each`, until the position of every partition reaches
/// the high watermark taken first (librdkafka moves past aborted batches and control markers;
/// an empty partition is at its end) or `timeout` passes. Whether it reached the end.
pub fn drain_read_committed(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    timeout: std::time::Duration,
    mut each: impl FnMut(&rdkafka::message::BorrowedMessage<'_>),
) -> bool {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::{ClientConfig, Offset, TopicPartitionList};
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", format!("{topic}-read-committed-{}", std::process::id()))
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    let mut high = Vec::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning).unwrap();
        let (_, h) = consumer.fetch_watermarks(topic, p, std::time::Duration::from_secs(10)).expect("watermarks");
        high.push(h);
    }
    consumer.assign(&tpl).expect("assign");
    let deadline = std::time::Instant::now() + timeout;
    while std::time::Instant::now() < deadline {
        if let Some(m) = consumer.poll(std::time::Duration::from_millis(200)) {
            each(&m.expect("consume"));
            continue;
        }
        let pos = consumer.position().expect("position");
        let at_end = (0..partitions).all(|p| {
            let off = pos.find_partition(topic, p).map(|e| e.offset());
            high[p as usize] == 0 || matches!(off, Some(Offset::Offset(o)) if o >= high[p as usize])
        });
        if at_end {
            return true;
        }
    }
    false
}
