//! What the two librdkafka-based modes share: the producer context that
//! counts delivery reports, client configuration, and an async `send` that
//! waits out a full local queue.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DeliveryResult, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;

use super::SinkError;
use crate::source::Record;
use sinkhole_model::WorkerConfig;

/// Delivery bookkeeping, updated on librdkafka's polling thread.
#[derive(Default)]
pub(crate) struct AckContext {
    acked: AtomicU64,
    max_latency_us: AtomicU64,
    /// Every delivered record's latency (µs), from `send` to its delivery
    /// report: librdkafka reports per record, not per Produce request, so this
    /// includes the time a record waited in its batch (`linger.ms`).
    latencies_us: Mutex<Option<hdrhistogram::Histogram<u64>>>,
    /// The first delivery failure since the last [`AckContext::take`].
    failure: Mutex<Option<String>>,
}

pub(crate) struct AckSnapshot {
    pub acked: u64,
    pub max_latency_us: u64,
    pub failure: Option<String>,
    /// Delivery latencies since the last take (µs), None when nothing was delivered.
    pub latencies_us: Option<hdrhistogram::Histogram<u64>>,
}

impl AckContext {
    /// Counts since the last call, and resets them.
    pub fn take(&self) -> AckSnapshot {
        AckSnapshot {
            acked: self.acked.swap(0, Ordering::SeqCst),
            max_latency_us: self.max_latency_us.swap(0, Ordering::SeqCst),
            failure: self.failure.lock().unwrap_or_else(|p| p.into_inner()).take(),
            latencies_us: self.latencies_us.lock().unwrap_or_else(|p| p.into_inner()).take(),
        }
    }
}

impl ClientContext for AckContext {
    // librdkafka logs through the `log` crate by default, which the rig does
    // not collect: forward to `tracing` so they land in the worker's log.
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        match level {
            RDKafkaLogLevel::Emerg | RDKafkaLogLevel::Alert | RDKafkaLogLevel::Critical | RDKafkaLogLevel::Error => {
                tracing::error!(target: "librdkafka", "{fac} {log_message}")
            }
            RDKafkaLogLevel::Warning => tracing::warn!(target: "librdkafka", "{fac} {log_message}"),
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(target: "librdkafka", "{fac} {log_message}")
            }
            RDKafkaLogLevel::Debug => tracing::debug!(target: "librdkafka", "{fac} {log_message}"),
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        tracing::error!(target: "librdkafka", "{error}: {reason}");
    }
}

impl ProducerContext for AckContext {
    /// When the record was handed to librdkafka.
    type DeliveryOpaque = Box<Instant>;

    fn delivery(&self, result: &DeliveryResult<'_>, sent: Box<Instant>) {
        match result {
            Ok(_) => {
                let us = sent.elapsed().as_micros() as u64;
                self.acked.fetch_add(1, Ordering::SeqCst);
                self.max_latency_us.fetch_max(us, Ordering::SeqCst);
                let mut h = self.latencies_us.lock().unwrap_or_else(|p| p.into_inner());
                super::record_latency(h.get_or_insert_with(super::latency_histogram), us, 1);
            }
            Err((e, _)) => {
                let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
                if f.is_none() {
                    *f = Some(e.to_string());
                }
            }
        }
    }
}

pub(crate) type Producer = ThreadedProducer<AckContext>;

/// Settings common to both modes: acks=all and idempotence (implied by a
/// transactional id, explicit for `at-least-once`), the worker's linger and
/// batch size.
pub(crate) fn client_config(cfg: &WorkerConfig) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", cfg.bootstrap.join(","))
        .set("client.id", format!("sinkhole-{}-{}-{}", cfg.mode, cfg.subtask, cfg.attempt))
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("linger.ms", cfg.linger_ms.to_string())
        .set("batch.size", cfg.batch_size.max(1).to_string())
        .set("message.timeout.ms", "120000");
    // A real cluster's listener security, as installed for this worker process.
    sinkhole_client::wire::security::rdkafka_config(&mut c);
    if let Some(sasl) = &cfg.sasl {
        // The sink's own principal on the cluster's SASL listener (ACL
        // scenarios); librdkafka implements PLAIN itself.
        c.set("security.protocol", "SASL_PLAINTEXT")
            .set("sasl.mechanism", "PLAIN")
            .set("sasl.username", &sasl.username)
            .set("sasl.password", &sasl.password);
    }
    c
}

pub(crate) fn create(config: &ClientConfig) -> Result<Arc<Producer>, SinkError> {
    config
        .create_with_context(AckContext::default())
        .map(Arc::new)
        .map_err(|e| SinkError::failed("creating the librdkafka producer", e))
}

/// Hands `record` to librdkafka, waiting while its local queue is full.
pub(crate) async fn send(
    producer: &Producer,
    topic: &str,
    record: &Record,
    tid: Option<&str>,
) -> Result<(), SinkError> {
    let mut headers = OwnedHeaders::new();
    for (k, v) in record.headers(tid) {
        headers = headers.insert(Header { key: &k, value: Some(&v[..]) });
    }
    let mut rec = BaseRecord::with_opaque_to(topic, Box::new(Instant::now()))
        .partition(record.partition)
        .key(&record.key[..])
        .payload(&record.value[..])
        .headers(headers);
    loop {
        match producer.send(rec) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                rec = back;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            Err((e, _)) => return Err(SinkError::failed(&format!("producing {}-{}", record.subtask, record.seq), e)),
        }
    }
}

/// Runs a blocking librdkafka call off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> Result<T, KafkaError> + Send + 'static,
) -> Result<Result<T, KafkaError>, SinkError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| SinkError::failed(what, e))
}
