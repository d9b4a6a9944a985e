//! `plain-txn`: the rig's own transactional producer used the way an application uses Kafka's
//! Java `KafkaProducer` with a `transactional.id`: one id per subtask, kept from one
//! transaction to the next, `commitTransaction` at the checkpoint itself (one phase, like
//! `rdkafka-txn`). A negative control for crashes between the commit and the checkpoint (the
//! restored job replays records already committed), and the shape KAFKA-17754 needs.
//!
//! Why it exists beside `rdkafka-txn`: a late EndTxn can only end the *next* transaction when
//! the client gave up on it and sent it again on a new connection. Java's producer does that
//! (its `NetworkClient` drops a connection whose request timed out, and `TransactionManager`
//! enqueues the EndTxn again), and so does the rig's producer (`request.timeout.ms` 30 s, as
//! Java's default); librdkafka keeps waiting on the same connection, so its retry never
//! overtakes the held request (docs/PROTOCOL.md §1.9). Under Transactions V1 every commit of
//! the id is at the same epoch, so the held commit, delivered late, ends whatever transaction
//! is open then; under V2 each commit bumps the epoch and the late request is fenced.
//!
//! `restore` initialises the id (InitProducerId): it fences the previous incarnation and aborts
//! its open transaction, as `initTransactions` does.
use std::time::{Duration, Instant};

use tracing::{error, info, warn};

use super::{
    classify_commit_error, error_text, latency_samples, CommitErrorClass, Precommitted, Sink, SinkError,
    COMMIT_ATTEMPTS,
};
use crate::source::Record;
use sinkhole_client::producer::{InitOptions, ProducerConfig, ProducerError, TxnProducer};
use sinkhole_model::{metric, CommitOutcome, Committable, EventKind, WorkerConfig};

/// Java's default `request.timeout.ms`: how long a request waits before the connection is
/// dropped and the request is sent again on a new one.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

pub struct PlainTxnSink {
    cfg: WorkerConfig,
    tid: String,
    producer: Option<TxnProducer>,
    /// The checkpoint whose barrier will commit the open transaction.
    open: Option<u64>,
    records: u64,
    events: Vec<EventKind>,
}

impl PlainTxnSink {
    pub fn new(cfg: &WorkerConfig) -> PlainTxnSink {
        PlainTxnSink {
            cfg: cfg.clone(),
            tid: super::naming::transactional_id_of(cfg.mode, &cfg.tid_prefix, cfg.subtask, 0),
            producer: None,
            open: None,
            records: 0,
            events: Vec::new(),
        }
    }

    fn producer_config(&self) -> ProducerConfig {
        ProducerConfig {
            bootstrap: self.cfg.bootstrap.clone(),
            transactional_id: Some(self.tid.clone()),
            transaction_timeout_ms: self.cfg.transaction_timeout_ms,
            linger: Duration::from_millis(self.cfg.linger_ms),
            batch_size: self.cfg.batch_size,
            request_timeout: REQUEST_TIMEOUT,
            delivery_timeout: Duration::from_secs(120),
            force_v1: self.cfg.force_transactions_v1,
            client_id: format!("sinkhole-{}-{}-{}", self.cfg.mode, self.cfg.subtask, self.cfg.attempt),
        }
    }

    fn producer(&mut self) -> Result<&mut TxnProducer, SinkError> {
        self.producer.as_mut().ok_or_else(|| SinkError::Failed(format!("{}: no producer (not restored)", self.tid)))
    }

    fn begin(&mut self, checkpoint: u64) -> Result<(), SinkError> {
        let started = Instant::now();
        let tid = self.tid.clone();
        self.producer()?.begin().map_err(|e| SinkError::failed(&format!("beginning a transaction of {tid}"), e))?;
        self.open = Some(checkpoint);
        self.records = 0;
        self.events.push(EventKind::TxnOpened { transactional_id: tid, checkpoint });
        self.events.extend(latency_samples(metric::TXN_BEGIN, &[started.elapsed().as_micros() as u64]));
        Ok(())
    }

    /// Flush and commit, the commit retried while Flink's committer would call its error
    /// retriable (the producer has already sent a timed-out EndTxn again on a new connection);
    /// any error aborts the transaction (`KafkaProducer.abortTransaction`, as an application does
    /// after a failed flush or commit), recorded when the broker accepts the abort, and fails
    /// the subtask.
    async fn flush_and_commit(&mut self) -> Result<(), ProducerError> {
        let result = self.try_flush_and_commit().await;
        if let Err(e) = &result {
            self.abort(format!("the flush or the commit failed: {}", error_text(e))).await;
        }
        result
    }

    /// `abortTransaction`, in the history when the broker accepts it (after a transaction the
    /// coordinator already ended, it answers INVALID_TXN_STATE: nothing was aborted).
    async fn abort(&mut self, reason: String) {
        let Some(p) = self.producer.as_mut() else { return };
        let (pid, epoch) = p.producer_id_and_epoch();
        match p.abort().await {
            Ok(()) => self.events.push(EventKind::TxnAborted {
                transactional_id: self.tid.clone(),
                producer_id: pid,
                epoch,
                reason,
            }),
            Err(e) => warn!(tid = self.tid, error = %e, reason, "abortTransaction failed"),
        }
    }

    async fn try_flush_and_commit(&mut self) -> Result<(), ProducerError> {
        let p = self.producer.as_mut().expect("a transaction is open, so a producer is there");
        if self.records > 0 {
            let flushed = p.flush().await?;
            let acks = p.take_ack_latencies_us();
            if let Some(lat) = acks.iter().copied().max() {
                self.events
                    .push(EventKind::ProduceAcked { records: flushed.records.max(self.records), latency_us: lat });
            }
            self.events.extend(latency_samples(metric::PRODUCE_ACK, &acks));
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            match p.commit(None).await {
                Ok(()) => return Ok(()),
                Err(e) if classify_commit_error(&e) == CommitErrorClass::Retriable && attempt < COMMIT_ATTEMPTS => {
                    warn!(tid = self.tid, attempt, error = %e, "commitTransaction: retriable, retrying");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Sink for PlainTxnSink {
    async fn restore(&mut self, restored: Option<u64>, _committables: &[Committable]) -> Result<(), SinkError> {
        let mut p = TxnProducer::connect_with(self.producer_config(), self.cfg.sasl.clone())
            .await
            .map_err(|e| SinkError::failed(&format!("connecting the producer for {}", self.tid), e))?;
        let info = p
            .init(InitOptions::default())
            .await
            .map_err(|e| SinkError::failed(&format!("InitProducerId for {}", self.tid), e))?;
        info!(tid = self.tid, ?restored, producer_id = info.producer_id, epoch = info.epoch, "initTransactions done");
        self.events.push(EventKind::ProducerInit {
            transactional_id: self.tid.clone(),
            producer_id: info.producer_id,
            epoch: info.epoch,
            version: info.version,
            enable_2pc: false,
            keep_prepared_txn: false,
            protocol: info.protocol,
        });
        self.producer = Some(p);
        Ok(())
    }

    async fn open(&mut self, checkpoint: u64) -> Result<(), SinkError> {
        self.begin(checkpoint)
    }

    async fn write(&mut self, record: Record) -> Result<(), SinkError> {
        let (topic, tid) = (self.cfg.topic.clone(), self.tid.clone());
        let headers = record.headers(Some(&tid));
        self.producer()?
            .send(&topic, record.partition, record.key, record.value, headers)
            .await
            .map_err(|e| SinkError::failed(&format!("producing in {tid}"), e))?;
        self.records += 1;
        Ok(())
    }

    async fn poll(&mut self) -> Result<(), SinkError> {
        let tid = self.tid.clone();
        match self.producer.as_mut() {
            Some(p) => p.poll().await.map_err(|e| SinkError::failed(&format!("producing in {tid}"), e)),
            None => Ok(()),
        }
    }

    async fn precommit(&mut self, checkpoint: u64) -> Result<Precommitted, SinkError> {
        let Some(opened) = self.open.take() else {
            return Err(SinkError::Failed(format!("checkpoint {checkpoint}: no open transaction")));
        };
        let records = self.records;
        let start = Instant::now();
        // One phase: committed here, before the checkpoint is persisted. An empty transaction
        // was never started at the broker, and committing it sends nothing.
        let result = self.flush_and_commit().await;
        let latency_us = start.elapsed().as_micros() as u64;
        let counts = self.producer()?.take_request_counts();
        if !counts.is_empty() {
            self.events.push(EventKind::RequestCounts { requests: counts.requests, retries: counts.retries });
        }
        if records > 0 {
            let error = result.as_ref().err().map(error_text);
            self.events.push(super::one_phase_finished(&self.tid, checkpoint, error, latency_us));
        }
        if let Err(e) = result {
            error!(tid = self.tid, checkpoint, opened, error = %e, "commitTransaction failed");
            return Err(SinkError::failed(&format!("commitTransaction of {} at checkpoint {checkpoint}", self.tid), e));
        }
        self.begin(checkpoint + 1)?;
        Ok(Precommitted { committable: None, flush_us: latency_us })
    }

    async fn commit(&mut self, committable: &Committable, _restored: bool) -> CommitOutcome {
        super::no_committables(self.cfg.mode, committable)
    }

    async fn close(&mut self) {
        // An open transaction with records is aborted, as `KafkaProducer.close` after
        // `abortTransaction` would leave it; an empty one was never started at the broker.
        if self.open.take().is_some() && self.records > 0 {
            self.abort("closed with an open transaction".into()).await;
        }
        self.producer = None;
    }

    fn take_events(&mut self) -> Vec<EventKind> {
        std::mem::take(&mut self.events)
    }

    fn commits_at_barrier(&self) -> Option<String> {
        (self.open.is_some() && self.records > 0).then(|| self.tid.clone())
    }
}
