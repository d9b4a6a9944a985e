//! The two-phase modes on the rig's own transactional producer: `legacy`,
//! `kip939` and `twopc-inject` (the "Sink modes" table of docs/GUIDE.md, docs/PROTOCOL.md §4).
//!
//! One transactional id per checkpoint (Flink's INCREMENTING strategy), so
//! one [`TxnProducer`] per transaction: it is created and initialised when
//! the transaction is opened (Flink's `ExactlyOnceKafkaWriter` gets a
//! producer for `checkpointId + 1` in `snapshotState`), pre-committed at the
//! barrier, and kept until its checkpoint is complete so that the live commit
//! goes through the producer that wrote it (Flink's committer reuses the
//! writer's producer for live committables; only restored committables go
//! through `resumeTransaction`).
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use tracing::{error, info, warn};

use super::mutants;
use super::naming::{self, LingeringProbe, ProbeResult};
use super::{
    classify_commit_error, drop_meaning, error_text, latency_samples, CommitErrorClass, Precommitted, Sink, SinkError,
    COMMIT_ATTEMPTS,
};
use crate::source::Record;
use sinkhole_client::producer::{InitInfo, InitOptions, ProducerConfig, ProducerError, TxnProducer};
use sinkhole_client::wire::{KafkaCode, RequestCounts, WireError};
use sinkhole_model::{
    metric, CommitOutcome, Committable, EventKind, Mutant, PartitionRegistration, SinkMode, TxnProtocol, WorkerConfig,
};

/// The open transaction.
struct OpenTxn {
    checkpoint: u64,
    tid: String,
    producer: TxnProducer,
    records: u64,
    first_seq: Option<u64>,
    last_seq: Option<u64>,
}

pub struct TwoPhaseSink {
    /// The faithful mode (a mutant's base).
    mode: SinkMode,
    /// The deviation, for a mutant (`sink::mutants`).
    mutant: Option<Mutant>,
    cfg: WorkerConfig,
    open: Option<OpenTxn>,
    /// The last checkpoint offset whose id was initialised, to fill gaps
    /// (Flink's `TransactionNamingStrategyImpl`: the PROBING abort stops at
    /// the first unused id, so no id may be skipped).
    last_initialised: Option<u64>,
    /// Pre-committed transactions awaiting their checkpoint, by checkpoint.
    live: BTreeMap<u64, TxnProducer>,
    events: Vec<EventKind>,
    /// Requests and retries of every producer since the last barrier.
    counts: RequestCounts,
    /// `legacy~reuse-tid-no-fence`: the recovery producer of the last
    /// restored committable it committed, kept for the first transaction.
    recovered: Option<(String, TxnProducer)>,
}

impl TwoPhaseSink {
    pub fn new(cfg: &WorkerConfig) -> TwoPhaseSink {
        assert!(cfg.mode.two_phase(), "TwoPhaseSink runs legacy, kip939 and twopc-inject, not {}", cfg.mode);
        TwoPhaseSink {
            mode: cfg.mode.base(),
            mutant: cfg.mode.mutant(),
            cfg: cfg.clone(),
            open: None,
            last_initialised: None,
            live: BTreeMap::new(),
            events: Vec::new(),
            counts: RequestCounts::default(),
            recovered: None,
        }
    }

    fn producer_config(&self, tid: &str) -> ProducerConfig {
        ProducerConfig {
            bootstrap: self.cfg.bootstrap.clone(),
            transactional_id: Some(tid.to_string()),
            transaction_timeout_ms: self.cfg.transaction_timeout_ms,
            linger: Duration::from_millis(self.cfg.linger_ms),
            batch_size: self.cfg.batch_size,
            request_timeout: Duration::from_secs(30),
            delivery_timeout: Duration::from_secs(120),
            force_v1: self.cfg.force_transactions_v1,
            client_id: format!("sinkhole-{}-{}-{}", self.cfg.mode, self.cfg.subtask, self.cfg.attempt),
        }
    }

    /// The InitProducerId flavour of the mode when opening (and probing).
    fn init_options(&self) -> InitOptions {
        let enable_2pc = mutants::enable_2pc(self.mutant, self.mode != SinkMode::Legacy);
        InitOptions { enable_2pc, keep_prepared_txn: false }
    }

    async fn connect(&self, tid: &str) -> Result<TxnProducer, SinkError> {
        TxnProducer::connect_with(self.producer_config(tid), self.cfg.sasl.clone())
            .await
            .map_err(|e| SinkError::failed(&format!("connecting the producer for {tid}"), e))
    }

    /// A fresh producer for `tid`, initialised. A refusal of what the mode
    /// needs from the broker (v6, Enable2Pc, KeepPreparedTxn) is
    /// [`SinkError::Unsupported`] with the exact error.
    async fn init_producer(&mut self, tid: &str, opts: InitOptions) -> Result<(TxnProducer, InitInfo), SinkError> {
        let mut p = self.connect(tid).await?;
        let result = p.init(opts).await;
        self.counts.merge(p.take_request_counts());
        match result {
            Ok(info) => {
                self.events.push(EventKind::ProducerInit {
                    transactional_id: tid.to_string(),
                    producer_id: info.producer_id,
                    epoch: info.epoch,
                    version: info.version,
                    enable_2pc: opts.enable_2pc,
                    keep_prepared_txn: opts.keep_prepared_txn,
                    protocol: info.protocol,
                });
                Ok((p, info))
            }
            Err(e) if (opts.enable_2pc || opts.keep_prepared_txn) && is_refusal(&e) => {
                let what = if opts.keep_prepared_txn {
                    "InitProducerId v6 KeepPreparedTxn=true"
                } else {
                    "InitProducerId v6 Enable2Pc=true"
                };
                error!(tid, mode = %self.mode, error = %e, "the broker refuses {what}: this mode cannot run here");
                Err(SinkError::Unsupported { what: what.to_string(), error: error_text(&e) })
            }
            Err(e) => Err(SinkError::failed(&format!("InitProducerId for {tid}"), e)),
        }
    }

    fn tid(&self, checkpoint: u64) -> String {
        naming::transactional_id(&self.cfg.tid_prefix, self.cfg.subtask, checkpoint)
    }

    /// The checkpoint offset encoded in one of this subtask's ids.
    fn offset_of(&self, tid: &str) -> Option<u64> {
        let own = format!("{}-{}-", self.cfg.tid_prefix, self.cfg.subtask);
        tid.strip_prefix(&own)?.parse().ok()
    }

    /// Commits a restored committable with a recovery producer, as the mode
    /// recovers.
    async fn recovery_commit(&mut self, c: &Committable) -> Result<(), ProducerError> {
        let tid = c.transactional_id.as_str();
        let mut p = match TxnProducer::connect_with(self.producer_config(tid), self.cfg.sasl.clone()).await {
            Ok(p) => p,
            Err(e) => return Err(e),
        };
        let result = self.recovery_commit_with(&mut p, c).await;
        self.counts.merge(p.take_request_counts());
        if result.is_ok() && mutants::reuses_recovery_producer(self.mutant) {
            self.recovered = Some((tid.to_string(), p));
        }
        result
    }

    async fn recovery_commit_with(&mut self, p: &mut TxnProducer, c: &Committable) -> Result<(), ProducerError> {
        let tid = c.transactional_id.as_str();
        match self.mode {
            // Flink's `FlinkKafkaInternalProducer.resumeTransaction`: inject
            // pid/epoch, no InitProducerId; a fresh Java producer has not
            // read `transaction.version` yet, so EndTxn goes out at ≤ v4
            // (TV1 handling) even on a Transactions V2 cluster.
            SinkMode::Legacy => {
                p.resume(c.producer_id, c.producer_epoch, TxnProtocol::V1)?;
                p.commit(Some(4)).await
            }
            // Same injection, but with the protocol the transaction ran
            // under, so a V2 transaction gets the EndTxn v5 it expects.
            SinkMode::TwopcInject => {
                p.resume(c.producer_id, c.producer_epoch, c.protocol)?;
                let v = match c.protocol {
                    TxnProtocol::V1 => 4,
                    TxnProtocol::V2 => 5,
                };
                p.commit(Some(v)).await
            }
            // KIP-939: InitProducerId v6 with KeepPreparedTxn=true hands the
            // prepared transaction to the new producer, which commits it
            // (trunk `TransactionManager.initializeTransactions(true)`).
            SinkMode::Kip939 => {
                let opts = InitOptions { enable_2pc: true, keep_prepared_txn: true };
                let info = match p.init(opts).await {
                    Ok(info) => info,
                    Err(e) => {
                        if is_refusal(&e) {
                            self.events.push(EventKind::Unsupported {
                                what: "InitProducerId v6 KeepPreparedTxn=true".into(),
                                error: error_text(&e),
                            });
                        }
                        return Err(e);
                    }
                };
                self.events.push(EventKind::ProducerInit {
                    transactional_id: tid.to_string(),
                    producer_id: info.producer_id,
                    epoch: info.epoch,
                    version: info.version,
                    enable_2pc: true,
                    keep_prepared_txn: true,
                    protocol: info.protocol,
                });
                match info.ongoing {
                    Some(_) => p.commit(None).await,
                    None => {
                        // Nothing prepared under this id: an earlier attempt
                        // already completed it (a committable stays in every
                        // checkpoint taken before its commit was known).
                        info!(tid, "KeepPreparedTxn: no prepared transaction; already completed");
                        self.events.push(EventKind::Note {
                            text: format!("{tid}: no prepared transaction kept on restore (already completed)"),
                        });
                        Ok(())
                    }
                }
            }
            m => unreachable!("{m} is not a two-phase mode"),
        }
    }
}

/// The broker does not run what the mode asks of it: no InitProducerId v6
/// (not advertised; unstable versions off), UNSUPPORTED_VERSION
/// (KeepPreparedTxn on brokers ≤ 4.3), or TRANSACTIONAL_ID_AUTHORIZATION_FAILED
/// (`transaction.two.phase.commit.enable=false`, or no TWO_PHASE_COMMIT ACL).
fn is_refusal(e: &ProducerError) -> bool {
    if matches!(e, ProducerError::Wire(WireError::UnsupportedVersion { .. })) {
        return true;
    }
    matches!(
        e.kafka_code(),
        Some(KafkaCode::UNSUPPORTED_VERSION) | Some(KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    )
}

fn max_latency(samples: &[u64]) -> Option<u64> {
    samples.iter().copied().max()
}

impl Sink for TwoPhaseSink {
    async fn restore(&mut self, restored: Option<u64>, committables: &[Committable]) -> Result<(), SinkError> {
        if !mutants::aborts_lingering(self.mutant) {
            // legacy~skip-lingering-abort (`sink::mutants`).
            return Ok(());
        }
        // Flink's `TransactionAbortStrategyImpl` PROBING: initialise ids
        // restored+1, +2, … of this subtask; an InitProducerId fences the
        // previous incarnation and aborts what was ongoing (or prepared,
        // without KeepPreparedTxn); epoch 0 means the id was never used.
        let uncommitted: BTreeSet<u64> =
            committables.iter().filter_map(|c| self.offset_of(&c.transactional_id)).collect();
        let mut probe = LingeringProbe::new(restored, uncommitted);
        let opts = self.init_options();
        while let Some(offset) = probe.next_checkpoint() {
            let tid = self.tid(offset);
            let (_p, init) = self.init_producer(&tid, opts).await?;
            match probe.observe(init.epoch) {
                ProbeResult::Unused => info!(tid, "probe: unused id, no more lingering transactions"),
                ProbeResult::Used => {
                    warn!(tid, epoch = init.epoch, "probe: lingering transaction fenced and aborted");
                    self.events.push(EventKind::LingeringAborted { transactional_id: tid, epoch: init.epoch });
                }
            }
        }
        Ok(())
    }

    async fn open(&mut self, checkpoint: u64) -> Result<(), SinkError> {
        if let Some(old) = &self.open {
            return Err(SinkError::Failed(format!(
                "opening a transaction for checkpoint {checkpoint} while {} is open",
                old.tid
            )));
        }
        let opts = self.init_options();
        // `txn-begin`: from here to the transaction begun, InitProducerId of
        // the fresh id (and of any gap) included.
        let started = Instant::now();
        if let Some((tid, mut producer)) = self.recovered.take() {
            // legacy~reuse-tid-no-fence (`sink::mutants`): the recovery
            // producer goes on writing under the restored committable's id,
            // with the producer id and epoch it injected; no InitProducerId.
            producer.begin().map_err(|e| SinkError::failed(&format!("beginning the transaction of {tid}"), e))?;
            self.last_initialised = Some(checkpoint);
            self.events.push(EventKind::TxnOpened { transactional_id: tid.clone(), checkpoint });
            self.open = Some(OpenTxn { checkpoint, tid, producer, records: 0, first_seq: None, last_seq: None });
            return Ok(());
        }
        // Fill gaps with initialised empty transactions, so a later probe
        // does not stop short of ids that were used after the gap.
        if let Some(last) = self.last_initialised {
            for gap in last + 1..checkpoint {
                let tid = self.tid(gap);
                info!(tid, "filling a gap in the transactional ids");
                self.init_producer(&tid, opts).await?;
            }
        }
        let tid = self.tid(checkpoint);
        let (mut producer, _) = self.init_producer(&tid, opts).await?;
        producer.begin().map_err(|e| SinkError::failed(&format!("beginning the transaction of {tid}"), e))?;
        if self.cfg.register_partitions == PartitionRegistration::Eager {
            // Every output partition in one AddPartitionsToTxn before the
            // first record; `txn-begin` then includes that round trip, which
            // the lazy way pays in the first flush instead.
            let all: Vec<i32> = (0..self.cfg.partitions as i32).collect();
            let added = producer.register_partitions(&self.cfg.topic, &all).await;
            self.counts.merge(producer.take_request_counts());
            added.map_err(|e| SinkError::failed(&format!("registering the partitions of {tid} (eager)"), e))?;
        }
        self.last_initialised = Some(checkpoint);
        self.events.push(EventKind::TxnOpened { transactional_id: tid.clone(), checkpoint });
        self.events.extend(latency_samples(metric::TXN_BEGIN, &[started.elapsed().as_micros() as u64]));
        self.open = Some(OpenTxn { checkpoint, tid, producer, records: 0, first_seq: None, last_seq: None });
        Ok(())
    }

    async fn write(&mut self, record: Record) -> Result<(), SinkError> {
        let Some(txn) = self.open.as_mut() else {
            return Err(SinkError::Failed("write without an open transaction".into()));
        };
        let headers = record.headers(Some(&txn.tid));
        txn.producer
            .send(&self.cfg.topic, record.partition, record.key, record.value, headers)
            .await
            .map_err(|e| SinkError::failed(&format!("producing in {}", txn.tid), e))?;
        txn.records += 1;
        // A share-group source hands out records of every subtask in no
        // order: the transaction's ids are reported apart (TxnRecords), a
        // seq range of one subtask would claim records it never carried.
        if self.cfg.share.is_none() {
            txn.first_seq.get_or_insert(record.seq);
            txn.last_seq = Some(record.seq);
        }
        Ok(())
    }

    async fn poll(&mut self) -> Result<(), SinkError> {
        if let Some(txn) = self.open.as_mut() {
            txn.producer.poll().await.map_err(|e| SinkError::failed(&format!("producing in {}", txn.tid), e))?;
        }
        Ok(())
    }

    async fn precommit(&mut self, checkpoint: u64) -> Result<Precommitted, SinkError> {
        let Some(mut txn) = self.open.take() else {
            return Err(SinkError::Failed(format!("checkpoint {checkpoint}: no open transaction")));
        };
        if checkpoint < txn.checkpoint {
            return Err(SinkError::Failed(format!(
                "checkpoint {checkpoint} arrived while the open transaction {} belongs to checkpoint {}",
                txn.tid, txn.checkpoint
            )));
        }
        let start = Instant::now();
        let committable = if txn.records == 0 {
            // Flink emits no committable for an empty transaction. Lazily
            // registered, nothing was added at the broker and there is
            // nothing to end; eagerly registered, the broker holds it
            // Ongoing, so it is aborted here rather than left to its timeout.
            if self.cfg.register_partitions == PartitionRegistration::Eager {
                let (pid, epoch) = txn.producer.producer_id_and_epoch();
                match txn.producer.abort().await {
                    Ok(()) => self.events.push(EventKind::TxnAborted {
                        transactional_id: txn.tid.clone(),
                        producer_id: pid,
                        epoch,
                        reason: "empty at the barrier, its partitions registered eagerly".into(),
                    }),
                    Err(e) => {
                        warn!(tid = txn.tid, error = %e, "aborting an empty, eagerly registered transaction failed")
                    }
                }
            }
            None
        } else {
            let flushed =
                txn.producer.flush().await.map_err(|e| SinkError::failed(&format!("flushing {}", txn.tid), e))?;
            let acks = txn.producer.take_ack_latencies_us();
            if let Some(lat) = max_latency(&acks) {
                self.events
                    .push(EventKind::ProduceAcked { records: flushed.records.max(txn.records), latency_us: lat });
            }
            // Every Produce request's ack latency, batched per barrier.
            self.events.extend(latency_samples(metric::PRODUCE_ACK, &acks));
            let (pid, epoch) = if self.mode == SinkMode::Kip939 {
                // KIP-939 `prepareTransaction`: flush, then PREPARED (no RPC);
                // the committable keeps only the id, recovery finds the
                // prepared transaction through KeepPreparedTxn.
                txn.producer.prepare().await.map_err(|e| SinkError::failed(&format!("preparing {}", txn.tid), e))?;
                (-1, -1)
            } else {
                txn.producer.producer_id_and_epoch()
            };
            Some(Committable {
                checkpoint,
                transactional_id: txn.tid.clone(),
                producer_id: pid,
                producer_epoch: epoch,
                protocol: txn.producer.protocol(),
                records: txn.records,
                first_seq: txn.first_seq,
                last_seq: txn.last_seq,
            })
        };
        let flush_us = start.elapsed().as_micros() as u64;
        self.counts.merge(txn.producer.take_request_counts());
        if !self.counts.is_empty() {
            let c = std::mem::take(&mut self.counts);
            self.events.push(EventKind::RequestCounts { requests: c.requests, retries: c.retries });
        }
        if committable.is_some() {
            self.live.insert(checkpoint, txn.producer);
        }
        self.open(checkpoint + 1).await?;
        Ok(Precommitted { committable, flush_us })
    }

    async fn commit(&mut self, c: &Committable, restored: bool) -> CommitOutcome {
        let mut live = if restored { None } else { self.live.remove(&c.checkpoint) };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let wait = mutants::commit_wait(self.mutant, self.producer_config(&c.transactional_id).request_timeout);
            let attempt_commit = async {
                match live.as_mut() {
                    Some(p) => {
                        let r = p.commit(None).await;
                        self.counts.merge(p.take_request_counts());
                        r
                    }
                    None => self.recovery_commit(c).await,
                }
            };
            let result = match wait {
                // A mutant that stops waiting (`sink::mutants::commit_wait`).
                Some(d) => {
                    tokio::time::timeout(d, attempt_commit).await.unwrap_or_else(|_| Err(mutants::commit_timed_out(d)))
                }
                None => attempt_commit.await,
            };
            let err = match result {
                Ok(()) => return CommitOutcome::Committed,
                Err(e) => e,
            };
            if let Some(outcome) = mutants::on_commit_error(self.mutant, &err) {
                // legacy~assume-committed, legacy~discard-retriable (`sink::mutants`).
                warn!(tid = c.transactional_id, error = %err, ?outcome, "mutant: commit error taken as {outcome:?}");
                return outcome;
            }
            match classify_commit_error(&err) {
                CommitErrorClass::Drop => {
                    // Flink's `KafkaCommitter`: logged, the committable is
                    // dropped and the job goes on.
                    error!(
                        tid = c.transactional_id,
                        checkpoint = c.checkpoint,
                        producer_id = c.producer_id,
                        epoch = c.producer_epoch,
                        restored,
                        error = %err,
                        "committing the transaction failed, committable dropped: {}",
                        drop_meaning(&err)
                    );
                    return CommitOutcome::Dropped { error: error_text(&err) };
                }
                CommitErrorClass::Retriable if attempt < COMMIT_ATTEMPTS => {
                    warn!(tid = c.transactional_id, attempt, error = %err, "commit failed with a retriable error; retrying");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                _ => {
                    error!(
                        tid = c.transactional_id,
                        checkpoint = c.checkpoint,
                        restored,
                        error = %err,
                        "committing the transaction failed; data is potentially lost; failing over"
                    );
                    return CommitOutcome::Failed { error: error_text(&err) };
                }
            }
        }
    }

    async fn close(&mut self) {
        // Pre-committed transactions belong to their checkpoints and are
        // left alone; the open one is aborted if the broker knows it (it
        // holds records, or its partitions were registered eagerly), as
        // Flink's writer does on close (`abortCurrentProducer`; the Java
        // producer sends EndTxn only for a transaction that has started).
        // An eagerly registered transaction left open would stay Ongoing on
        // the broker until its timeout.
        if let Some(mut txn) = self.open.take() {
            if txn.records > 0 || self.cfg.register_partitions == PartitionRegistration::Eager {
                let (pid, epoch) = txn.producer.producer_id_and_epoch();
                match txn.producer.abort().await {
                    Ok(()) => self.events.push(EventKind::TxnAborted {
                        transactional_id: txn.tid.clone(),
                        producer_id: pid,
                        epoch,
                        reason: "closed with an open transaction".into(),
                    }),
                    Err(e) => warn!(tid = txn.tid, error = %e, "aborting the open transaction on close failed"),
                }
            }
        }
        self.live.clear();
    }

    fn take_events(&mut self) -> Vec<EventKind> {
        std::mem::take(&mut self.events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_model::Partitioning;

    #[test]
    fn refusals_are_unsupported() {
        assert!(is_refusal(&ProducerError::Fatal("x".into(), Some(KafkaCode::UNSUPPORTED_VERSION))));
        assert!(is_refusal(&ProducerError::Wire(WireError::UnsupportedVersion {
            api: "InitProducerId".into(),
            broker: Some((0, 5)),
            client: (6, 6)
        })));
        assert!(is_refusal(&ProducerError::Fatal("x".into(), Some(KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED))));
        assert!(!is_refusal(&ProducerError::Fatal("x".into(), Some(KafkaCode::PRODUCER_FENCED))));
    }

    #[test]
    fn ids_parse_back_to_offsets() {
        let mut cfg = crate::source::test_config(10, 0, 1, Partitioning::RoundRobin);
        cfg.tid_prefix = "sh-r-legacy".into();
        let s = TwoPhaseSink::new(&cfg);
        assert_eq!(s.tid(4), "sh-r-legacy-3-4");
        assert_eq!(s.offset_of("sh-r-legacy-3-4"), Some(4));
        assert_eq!(s.offset_of("sh-r-legacy-31-4"), None, "another subtask");
        assert_eq!(s.offset_of("other-3-4"), None);
        assert!(!s.init_options().enable_2pc);
        cfg.mode = SinkMode::TwopcInject;
        assert!(TwoPhaseSink::new(&cfg).init_options().enable_2pc);
    }
}
