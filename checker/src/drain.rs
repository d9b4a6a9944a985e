//! Draining the output topic (blocking; run it on a blocking thread).
//!
//! 1. High-water marks with `isolation.level=read_uncommitted`: a
//!    read_committed ListOffsets would answer the last stable offset instead,
//!    which hides exactly the hanging transactions the drain must report.
//! 2. `read_committed` from the beginning of every partition until the
//!    consumer's position reaches the high-water mark. The position moves past
//!    aborted batches and control markers too (librdkafka advances the app
//!    position over control records, as Kafka's Java `Fetcher` does), so it
//!    reaches the mark once every transaction below it is decided. A partition
//!    that stays below it when the timeout ends holds an open transaction:
//!    reported, never skipped.
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};
use sinkhole_model::record;

use super::{CheckerError, Drain, DrainedRecord, PartitionDrain};

fn consumer(bootstrap: &str, isolation: &str) -> Result<BaseConsumer, KafkaError> {
    // An external cluster's security, as installed for this process.
    sinkhole_client::wire::security::rdkafka_config(&mut ClientConfig::new())
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "sinkhole-checker")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("isolation.level", isolation)
        .set("enable.partition.eof", "true")
        .set("client.id", "sinkhole-checker")
        .create()
}

/// Reads every committed record of `topic`; see the module docs. The partitions in `for_good`
/// are held by a transaction that nothing will end (Ongoing under Enable2Pc, which the broker
/// never times out, once the job is over): the drain reads them up to where they stop and does
/// not wait out `timeout` for them.
pub fn drain(bootstrap: &str, topic: &str, timeout: Duration, for_good: &BTreeSet<i32>) -> Result<Drain, CheckerError> {
    let t0 = Instant::now();
    let kafka = |source| CheckerError::Kafka { topic: topic.to_string(), source };
    let request = Duration::from_secs(15);

    let uncommitted = consumer(bootstrap, "read_uncommitted").map_err(kafka)?;
    let md = uncommitted.fetch_metadata(Some(topic), request).map_err(kafka)?;
    let mut ids: Vec<i32> = md
        .topics()
        .iter()
        .filter(|t| t.name() == topic && t.error().is_none())
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect();
    ids.sort();
    if ids.is_empty() {
        return Err(CheckerError::NoTopic(topic.to_string()));
    }
    let mut parts: BTreeMap<i32, PartitionDrain> = BTreeMap::new();
    for &p in &ids {
        let (low, high) = uncommitted.fetch_watermarks(topic, p, request).map_err(kafka)?;
        parts.insert(
            p,
            PartitionDrain { partition: p, low_watermark: low, high_watermark: high, position: low, records: 0 },
        );
    }
    drop(uncommitted);

    let committed = consumer(bootstrap, "read_committed").map_err(kafka)?;
    let mut tpl = TopicPartitionList::new();
    for (&p, d) in &parts {
        if d.high_watermark > d.low_watermark {
            tpl.add_partition_offset(topic, p, Offset::Offset(d.low_watermark)).map_err(kafka)?;
        }
    }
    let mut records = Vec::new();
    if tpl.count() > 0 {
        committed.assign(&tpl).map_err(kafka)?;
        let deadline = t0 + timeout;
        let mut since_check = 0usize;
        // Partitions read up to where the consumer stops (its end: the last stable offset).
        let mut at_end: BTreeSet<i32> = BTreeSet::new();
        loop {
            let msg = committed.poll(Duration::from_millis(100));
            let mut check_now = msg.is_none();
            match msg {
                Some(Ok(m)) => {
                    let mut tid = None;
                    let mut produced_us = None;
                    if let Some(h) = m.headers() {
                        for hd in h.iter() {
                            let v = hd.value.map(|v| String::from_utf8_lossy(v).into_owned());
                            match hd.key {
                                record::H_TID => tid = v,
                                record::H_TIME_US => produced_us = v.and_then(|v| v.parse().ok()),
                                _ => {}
                            }
                        }
                    }
                    at_end.remove(&m.partition());
                    let d = parts.get_mut(&m.partition()).expect("assigned partition");
                    d.records += 1;
                    records.push(DrainedRecord {
                        partition: m.partition(),
                        offset: m.offset(),
                        value: m.payload().unwrap_or_default().to_vec(),
                        tid,
                        produced_us,
                    });
                    since_check += 1;
                    if since_check >= 1000 {
                        check_now = true;
                    }
                }
                Some(Err(KafkaError::PartitionEOF(p))) => {
                    at_end.insert(p);
                    check_now = true;
                }
                Some(Err(e)) => {
                    // Transient fetch errors (a leader moving) are retried by
                    // librdkafka; only the deadline ends the drain.
                    tracing::debug!(error = %e, "drain: consumer error");
                }
                None => {}
            }
            if check_now {
                since_check = 0;
                let pos = committed.position().map_err(kafka)?;
                for el in pos.elements() {
                    if let (Some(d), Some(o)) = (parts.get_mut(&el.partition()), el.offset().to_raw()) {
                        if o >= 0 {
                            d.position = d.position.max(o);
                        }
                    }
                }
                let waiting_for_nothing = |d: &PartitionDrain| {
                    d.complete() || (for_good.contains(&d.partition) && at_end.contains(&d.partition))
                };
                if parts.values().all(waiting_for_nothing) || Instant::now() >= deadline {
                    break;
                }
            }
        }
    }
    Ok(Drain {
        topic: topic.to_string(),
        records,
        partitions: parts.into_values().collect(),
        elapsed_ms: t0.elapsed().as_millis() as u64,
    })
}
