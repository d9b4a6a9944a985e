//! `at-least-once`: librdkafka's idempotent producer, non-transactional,
//! flushed at every checkpoint (Flink's KafkaSink with
//! `DeliveryGuarantee.AT_LEAST_ONCE`: `flush` in `prepareSnapshotPreBarrier`).
//! A negative control: records written after the restored checkpoint are
//! visible at once and written again after a restore — duplicates the
//! checker must report. Idempotence removes only the duplicates of producer
//! retries within one producer session.
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::producer::Producer as _;
use tracing::warn;

use super::rdkafka_common::{self, Producer};
use super::{Precommitted, Sink, SinkError};
use crate::source::Record;
use sinkhole_model::{metric, CommitOutcome, Committable, EventKind, WorkerConfig};

const FLUSH_TIMEOUT: Duration = Duration::from_secs(120);

pub struct AtLeastOnceSink {
    cfg: WorkerConfig,
    producer: Option<Arc<Producer>>,
    events: Vec<EventKind>,
}

impl AtLeastOnceSink {
    pub fn new(cfg: &WorkerConfig) -> Result<AtLeastOnceSink, SinkError> {
        let producer = rdkafka_common::create(&rdkafka_common::client_config(cfg))?;
        Ok(AtLeastOnceSink { cfg: cfg.clone(), producer: Some(producer), events: Vec::new() })
    }

    fn producer(&self) -> Result<Arc<Producer>, SinkError> {
        self.producer.clone().ok_or_else(|| SinkError::Failed("the producer is closed".into()))
    }
}

impl Sink for AtLeastOnceSink {
    async fn restore(&mut self, restored: Option<u64>, _committables: &[Committable]) -> Result<(), SinkError> {
        if let Some(n) = restored {
            self.events.push(EventKind::Note { text: format!("at-least-once: rewinding to checkpoint {n}") });
        }
        Ok(())
    }

    async fn open(&mut self, _checkpoint: u64) -> Result<(), SinkError> {
        Ok(())
    }

    async fn write(&mut self, record: Record) -> Result<(), SinkError> {
        let p = self.producer()?;
        rdkafka_common::send(&p, &self.cfg.topic, &record, None).await
    }

    async fn poll(&mut self) -> Result<(), SinkError> {
        Ok(()) // the ThreadedProducer polls on its own thread
    }

    async fn precommit(&mut self, checkpoint: u64) -> Result<Precommitted, SinkError> {
        let p = self.producer()?;
        let start = Instant::now();
        let q = p.clone();
        rdkafka_common::blocking("flush", move || q.flush(FLUSH_TIMEOUT))
            .await?
            .map_err(|e| SinkError::failed(&format!("flush at checkpoint {checkpoint}"), e))?;
        let flush_us = start.elapsed().as_micros() as u64;
        // No committable carries this flush (no TxnPrecommitted event): it is
        // this sink's whole pre-commit, so it is recorded here.
        self.events.extend(super::latency_samples(metric::PRE_COMMIT, &[flush_us]));
        let acks = p.context().take();
        if acks.acked > 0 {
            self.events.push(EventKind::ProduceAcked { records: acks.acked, latency_us: acks.max_latency_us });
        }
        if let Some(h) = &acks.latencies_us {
            self.events.extend(super::latency_event(metric::PRODUCE_ACK, h));
        }
        if let Some(f) = acks.failure {
            return Err(SinkError::Failed(format!("a record before checkpoint {checkpoint} was not delivered: {f}")));
        }
        Ok(Precommitted { committable: None, flush_us })
    }

    async fn commit(&mut self, committable: &Committable, _restored: bool) -> CommitOutcome {
        CommitOutcome::Failed { error: format!("at-least-once has no committables (got {committable:?})") }
    }

    async fn close(&mut self) {
        if let Some(p) = self.producer.take() {
            let r = tokio::task::spawn_blocking(move || {
                if let Err(e) = p.flush(FLUSH_TIMEOUT) {
                    warn!(error = %e, "flush on close failed");
                }
                drop(p);
            })
            .await;
            if let Err(e) = r {
                warn!(error = %e, "closing the librdkafka producer");
            }
        }
    }

    fn take_events(&mut self) -> Vec<EventKind> {
        std::mem::take(&mut self.events)
    }
}
