//! `rdkafka-txn`: librdkafka's transactional producer, committing at the
//! checkpoint itself (one phase). A negative control: the commit happens
//! before the checkpoint is persisted, so a crash in between makes the
//! restored job replay records that are already committed — duplicates the
//! checker must report.
//!
//! One transactional id per subtask (`{prefix}-{subtask}`), kept across
//! attempts: `init_transactions` on restore fences the previous incarnation
//! and aborts its open transaction (librdkafka's `rd_kafka_init_transactions`,
//! InitProducerId v≤4 under the V1 protocol).
use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::error::KafkaError;
use rdkafka::producer::Producer as _;
use tracing::{error, info, warn};

use super::rdkafka_common::{self, Producer};
use super::{Precommitted, Sink, SinkError};
use crate::source::Record;
use sinkhole_model::{metric, CommitOutcome, Committable, EventKind, WorkerConfig};

/// Bound on each blocking librdkafka transaction call.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Retries of a commit that librdkafka calls retriable.
const COMMIT_ATTEMPTS: u32 = 10;

pub struct RdkafkaTxnSink {
    cfg: WorkerConfig,
    tid: String,
    producer: Option<Arc<Producer>>,
    open: Option<u64>,
    records: u64,
    events: Vec<EventKind>,
}

impl RdkafkaTxnSink {
    pub fn new(cfg: &WorkerConfig) -> Result<RdkafkaTxnSink, SinkError> {
        let tid = super::naming::transactional_id_of(cfg.mode, &cfg.tid_prefix, cfg.subtask, 0);
        let mut c = rdkafka_common::client_config(cfg);
        // librdkafka refuses a message timeout above the transaction timeout.
        let message_timeout = cfg.transaction_timeout_ms.clamp(1, 120_000);
        c.set("transactional.id", &tid)
            .set("transaction.timeout.ms", cfg.transaction_timeout_ms.to_string())
            .set("message.timeout.ms", message_timeout.to_string());
        let producer = rdkafka_common::create(&c)?;
        Ok(RdkafkaTxnSink {
            cfg: cfg.clone(),
            tid,
            producer: Some(producer),
            open: None,
            records: 0,
            events: Vec::new(),
        })
    }

    fn producer(&self) -> Result<Arc<Producer>, SinkError> {
        self.producer.clone().ok_or_else(|| SinkError::Failed("the producer is closed".into()))
    }

    fn begin(&mut self, checkpoint: u64) -> Result<(), SinkError> {
        // `txn-begin`: librdkafka begins locally (its InitProducerId ran once,
        // in `init_transactions` on restore), so this is only the local call.
        let started = Instant::now();
        self.producer()?
            .begin_transaction()
            .map_err(|e| SinkError::failed(&format!("begin_transaction for checkpoint {checkpoint}"), e))?;
        self.open = Some(checkpoint);
        self.records = 0;
        self.events.push(EventKind::TxnOpened { transactional_id: self.tid.clone(), checkpoint });
        self.events.extend(super::latency_samples(metric::TXN_BEGIN, &[started.elapsed().as_micros() as u64]));
        Ok(())
    }

    /// `commit_transaction`, retried while librdkafka says retriable; an
    /// error that requires an abort aborts and fails (the job fails over).
    async fn commit_open(&mut self) -> Result<(), String> {
        let p = self.producer().map_err(|e| e.to_string())?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let q = p.clone();
            let r = rdkafka_common::blocking("commit_transaction", move || q.commit_transaction(CALL_TIMEOUT))
                .await
                .map_err(|e| e.to_string())?;
            let e = match r {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            let txn = match &e {
                KafkaError::Transaction(t) => Some(t),
                _ => None,
            };
            if txn.is_some_and(|t| t.is_retriable()) && attempt < COMMIT_ATTEMPTS {
                warn!(tid = self.tid, attempt, error = %e, "commit_transaction: retriable, retrying");
                continue;
            }
            if txn.is_some_and(|t| t.txn_requires_abort()) {
                let q = p.clone();
                let _ = rdkafka_common::blocking("abort_transaction", move || q.abort_transaction(CALL_TIMEOUT)).await;
            }
            return Err(e.to_string());
        }
    }
}

impl Sink for RdkafkaTxnSink {
    async fn restore(&mut self, restored: Option<u64>, _committables: &[Committable]) -> Result<(), SinkError> {
        let p = self.producer()?;
        let start = Instant::now();
        rdkafka_common::blocking("init_transactions", move || p.init_transactions(CALL_TIMEOUT))
            .await?
            .map_err(|e| SinkError::failed(&format!("init_transactions for {}", self.tid), e))?;
        info!(tid = self.tid, ?restored, elapsed_ms = start.elapsed().as_millis() as u64, "init_transactions done");
        self.events.push(EventKind::Note {
            text: format!(
                "{}: librdkafka init_transactions (fences any previous incarnation){}",
                self.tid,
                restored.map(|n| format!("; rewinding to checkpoint {n}")).unwrap_or_default()
            ),
        });
        Ok(())
    }

    async fn open(&mut self, checkpoint: u64) -> Result<(), SinkError> {
        self.begin(checkpoint)
    }

    async fn write(&mut self, record: Record) -> Result<(), SinkError> {
        let p = self.producer()?;
        rdkafka_common::send(&p, &self.cfg.topic, &record, Some(&self.tid)).await?;
        self.records += 1;
        Ok(())
    }

    async fn poll(&mut self) -> Result<(), SinkError> {
        Ok(()) // the ThreadedProducer polls on its own thread
    }

    async fn precommit(&mut self, checkpoint: u64) -> Result<Precommitted, SinkError> {
        let Some(opened) = self.open.take() else {
            return Err(SinkError::Failed(format!("checkpoint {checkpoint}: no open transaction")));
        };
        let records = self.records;
        let start = Instant::now();
        // `CommitStarted` was recorded by the worker before this call (`commits_at_barrier`).
        // One phase: the commit happens here, before the coordinator has
        // persisted the checkpoint. That window is what this control exposes.
        let result = self.commit_open().await;
        let latency_us = start.elapsed().as_micros() as u64;
        let acks = self.producer()?.context().take();
        if acks.acked > 0 {
            self.events.push(EventKind::ProduceAcked { records: acks.acked, latency_us: acks.max_latency_us });
        }
        if let Some(h) = &acks.latencies_us {
            self.events.extend(super::latency_event(metric::PRODUCE_ACK, h));
        }
        if records > 0 {
            self.events.push(super::one_phase_finished(
                &self.tid,
                checkpoint,
                result.as_ref().err().cloned(),
                latency_us,
            ));
        }
        if let Err(e) = result {
            error!(tid = self.tid, checkpoint, opened, error = %e, "commit_transaction failed");
            return Err(SinkError::Failed(format!(
                "commit_transaction of {} at checkpoint {checkpoint}: {e}",
                self.tid
            )));
        }
        if let Some(f) = acks.failure {
            return Err(SinkError::Failed(format!("a record of checkpoint {checkpoint} was not delivered: {f}")));
        }
        self.begin(checkpoint + 1)?;
        Ok(Precommitted { committable: None, flush_us: latency_us })
    }

    async fn commit(&mut self, committable: &Committable, _restored: bool) -> CommitOutcome {
        super::no_committables(self.cfg.mode, committable)
    }

    async fn close(&mut self) {
        if let Some(p) = self.producer.take() {
            let abort = self.open.take().is_some() && self.records > 0;
            let tid = self.tid.clone();
            // Dropping a librdkafka producer blocks (purge, flush, join).
            let r = tokio::task::spawn_blocking(move || {
                if abort {
                    if let Err(e) = p.abort_transaction(CALL_TIMEOUT) {
                        warn!(tid, error = %e, "abort_transaction on close failed");
                    }
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

    fn commits_at_barrier(&self) -> Option<String> {
        (self.open.is_some() && self.records > 0).then(|| self.tid.clone())
    }
}
