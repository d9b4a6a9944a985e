//! Sink modes: the subjects the rig compares (docs/GUIDE.md, "Sink modes").
//!
//! A [`Sink`] is the writer + committer pair of one subtask, in the shape of
//! Flink's KafkaSink: `ExactlyOnceKafkaWriter` writes records into the open
//! transaction and pre-commits it at a checkpoint barrier
//! ([`Sink::precommit`]), `KafkaCommitter` commits the committables once the
//! checkpoint is complete ([`Sink::commit`]), and `ExactlyOnceKafkaWriter`'s
//! initialisation aborts lingering transactions on restore
//! ([`Sink::restore`]). The worker drives the calls in Flink's order and
//! forwards the sink's history events ([`Sink::take_events`]).
//!
//! Families, one file each:
//! - [`two_phase`]: `legacy`, `kip939`, `twopc-inject`, on the rig's own
//!   transactional producer ([`sinkhole_client::producer::TxnProducer`]);
//! - [`rdkafka_txn`]: librdkafka's transactional producer committing at the
//!   checkpoint itself (negative control);
//! - [`plain_txn`]: the rig's transactional producer as an application uses Kafka's Java
//!   producer, one id per subtask, committing at the checkpoint itself (negative control; the
//!   shape KAFKA-17754 needs);
//! - [`at_least_once`]: librdkafka's idempotent producer, flushed at the
//!   checkpoint (negative control);
//! - [`mutants`]: the one decision each mutant makes differently, consulted
//!   by the two-phase sink and the worker.
use std::future::Future;

use crate::source::Record;
use sinkhole_client::producer::ProducerError;
use sinkhole_client::wire::{KafkaCode, WireError};
use sinkhole_model::{CommitOutcome, Committable, EventKind, SinkMode, WorkerConfig};

pub mod at_least_once;
pub mod mutants;
pub mod naming;
pub mod plain_txn;
mod rdkafka_common;
pub mod rdkafka_txn;
pub mod two_phase;

pub use at_least_once::AtLeastOnceSink;
pub use plain_txn::PlainTxnSink;
pub use rdkafka_txn::RdkafkaTxnSink;
pub use two_phase::TwoPhaseSink;

/// Why a sink cannot go on.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// The broker refused what the mode needs (e.g. KeepPreparedTxn →
    /// UNSUPPORTED_VERSION): the run is inconclusive for this mode, never a
    /// pass. `error` is the exact error text.
    #[error("{what}: {error}")]
    Unsupported { what: String, error: String },
    /// Anything else: the subtask fails and the job fails over.
    #[error("{0}")]
    Failed(String),
}

impl SinkError {
    pub fn failed(context: &str, err: impl std::fmt::Display) -> SinkError {
        SinkError::Failed(format!("{context}: {err}"))
    }
}

/// What a checkpoint barrier produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Precommitted {
    /// The pre-committed transaction, for the two-phase modes when it has
    /// records (Flink emits no committable for an empty transaction).
    pub committable: Option<Committable>,
    /// Time spent flushing (and preparing) the transaction.
    pub flush_us: u64,
}

/// One subtask's sink. Futures are `Send` so a worker can run in a spawned
/// task.
pub trait Sink: Send {
    /// After the restored committables were committed (by the worker, with
    /// [`Sink::commit`]`(_, true)`): fence and abort what a previous attempt
    /// left behind. `restored` is the checkpoint restored from (None when
    /// fresh); `committables` are the ones that were stored in it.
    fn restore(
        &mut self,
        restored: Option<u64>,
        committables: &[Committable],
    ) -> impl Future<Output = Result<(), SinkError>> + Send;

    /// Opens the transaction that the barrier of `checkpoint` will
    /// pre-commit.
    fn open(&mut self, checkpoint: u64) -> impl Future<Output = Result<(), SinkError>> + Send;

    fn write(&mut self, record: Record) -> impl Future<Output = Result<(), SinkError>> + Send;

    /// Drives background work (sending lingering batches, collecting acks).
    fn poll(&mut self) -> impl Future<Output = Result<(), SinkError>> + Send;

    /// At the barrier of `checkpoint`: flush (and pre-commit) the open
    /// transaction, then open the next one, for `checkpoint + 1`.
    fn precommit(&mut self, checkpoint: u64) -> impl Future<Output = Result<Precommitted, SinkError>> + Send;

    /// Commits one committable: `restored` ones come from a checkpoint and
    /// are committed by a recovery producer, live ones by the producer that
    /// wrote them. Errors are classified as Flink's `KafkaCommitter` does.
    fn commit(&mut self, committable: &Committable, restored: bool) -> impl Future<Output = CommitOutcome> + Send;

    /// Closes the producers. Nothing pre-committed is aborted (it belongs to
    /// the checkpoint); an open transaction the broker knows (records, or
    /// partitions registered) is aborted, as Flink's writer does on close.
    fn close(&mut self) -> impl Future<Output = ()> + Send;

    /// History events since the last call.
    fn take_events(&mut self) -> Vec<EventKind>;

    /// For a sink that commits inside [`Sink::precommit`] (one phase): the id of the open
    /// transaction when it holds records, so that the worker records `CommitStarted` before the
    /// call. The events a sink buffers reach the history, and get their time, only after the
    /// call returns, after the commit: a reader that polled the committed records meanwhile
    /// would seem to have read them before their commit was issued (precommitted-read).
    fn commits_at_barrier(&self) -> Option<String> {
        None
    }
}

/// The modes' sinks behind one type, so the worker is written once.
pub enum AnySink {
    TwoPhase(Box<TwoPhaseSink>),
    RdkafkaTxn(Box<RdkafkaTxnSink>),
    PlainTxn(Box<PlainTxnSink>),
    AtLeastOnce(Box<AtLeastOnceSink>),
}

impl AnySink {
    /// The sink of `config.mode`. Nothing is sent to the cluster yet.
    pub fn new(config: &WorkerConfig) -> Result<AnySink, SinkError> {
        // A mutant runs on its base mode's sink, which consults `mutants`.
        Ok(match config.mode.base() {
            SinkMode::Legacy | SinkMode::Kip939 | SinkMode::TwopcInject => {
                AnySink::TwoPhase(Box::new(TwoPhaseSink::new(config)))
            }
            SinkMode::RdkafkaTxn => AnySink::RdkafkaTxn(Box::new(RdkafkaTxnSink::new(config)?)),
            SinkMode::PlainTxn => AnySink::PlainTxn(Box::new(PlainTxnSink::new(config))),
            SinkMode::AtLeastOnce => AnySink::AtLeastOnce(Box::new(AtLeastOnceSink::new(config)?)),
            SinkMode::FlinkKafkasink => {
                return Err(SinkError::Failed(
                    "flink-kafkasink runs on a Flink cluster, never in a sinkhole worker".into(),
                ))
            }
            SinkMode::Mutant(m) => unreachable!("{m:?}: a base mode is faithful"),
        })
    }
}

macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            AnySink::TwoPhase($s) => $e,
            AnySink::RdkafkaTxn($s) => $e,
            AnySink::PlainTxn($s) => $e,
            AnySink::AtLeastOnce($s) => $e,
        }
    };
}

impl Sink for AnySink {
    async fn restore(&mut self, restored: Option<u64>, committables: &[Committable]) -> Result<(), SinkError> {
        each!(self, s => s.restore(restored, committables).await)
    }
    async fn open(&mut self, checkpoint: u64) -> Result<(), SinkError> {
        each!(self, s => s.open(checkpoint).await)
    }
    async fn write(&mut self, record: Record) -> Result<(), SinkError> {
        each!(self, s => s.write(record).await)
    }
    async fn poll(&mut self) -> Result<(), SinkError> {
        each!(self, s => s.poll().await)
    }
    async fn precommit(&mut self, checkpoint: u64) -> Result<Precommitted, SinkError> {
        each!(self, s => s.precommit(checkpoint).await)
    }
    async fn commit(&mut self, committable: &Committable, restored: bool) -> CommitOutcome {
        each!(self, s => s.commit(committable, restored).await)
    }
    async fn close(&mut self) {
        each!(self, s => s.close().await)
    }
    fn take_events(&mut self) -> Vec<EventKind> {
        each!(self, s => s.take_events())
    }
    fn commits_at_barrier(&self) -> Option<String> {
        each!(self, s => s.commits_at_barrier())
    }
}

/// The `CommitFinished` of a one-phase sink's commit at the barrier (`error`: None when it
/// committed). Its `CommitStarted` the worker records before the barrier's call
/// ([`Sink::commits_at_barrier`]).
pub fn one_phase_finished(tid: &str, checkpoint: u64, error: Option<String>, latency_us: u64) -> EventKind {
    let outcome = match error {
        None => CommitOutcome::Committed,
        Some(error) => CommitOutcome::Failed { error },
    };
    EventKind::CommitFinished { transactional_id: tid.to_string(), checkpoint, restored: false, outcome, latency_us }
}

/// What a one-phase sink answers a committable: it has none, it committed at the barrier.
pub fn no_committables(mode: SinkMode, committable: &Committable) -> CommitOutcome {
    CommitOutcome::Failed {
        error: format!("{mode} commits at the checkpoint and has no committables (got {committable:?})"),
    }
}

/// Significant digits of the worker's latency histograms (and the rig's).
pub const LATENCY_SIGFIG: u8 = 3;

/// An empty latency histogram (µs), auto-resizing.
pub fn latency_histogram() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new(LATENCY_SIGFIG).expect("3 significant digits are valid")
}

/// Records `count` samples of `value`, growing the histogram as needed
/// (`saturating_record` would clamp to the current range instead of growing).
pub fn record_latency(h: &mut hdrhistogram::Histogram<u64>, value: u64, count: u64) {
    if h.record_n(value, count).is_err() {
        // Beyond what any histogram can track (> 2^63): clamp.
        h.saturating_record_n(value, count);
    }
}

/// One [`EventKind::LatencySamples`] for a batch of samples (µs), or None
/// when there are none. The samples go through a histogram so that an event
/// carries one `[value, count]` pair per distinct bucket, not one per sample.
pub fn latency_samples(metric: &str, values: &[u64]) -> Option<EventKind> {
    let mut h = latency_histogram();
    for &v in values {
        record_latency(&mut h, v, 1);
    }
    latency_event(metric, &h)
}

/// [`latency_samples`] for samples already in a histogram.
pub fn latency_event(metric: &str, h: &hdrhistogram::Histogram<u64>) -> Option<EventKind> {
    if h.is_empty() {
        return None;
    }
    // `value_iterated_to` is the bucket's highest equivalent value: recorded
    // again into a histogram of the same precision it lands in the same bucket.
    let buckets = h.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect();
    Some(EventKind::LatencySamples { metric: metric.to_string(), buckets })
}

/// The exact error text for history events: Kafka's name and code (e.g.
/// `UNSUPPORTED_VERSION (35)`) when the broker answered with one, else the
/// error's own text.
pub fn error_text(err: &ProducerError) -> String {
    match err.kafka_code() {
        Some(code) => code.to_string(),
        None => err.to_string(),
    }
}

/// How Flink's `KafkaCommitter` treats a failed commit (docs/PROTOCOL.md §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitErrorClass {
    /// Retried (`retryLater`): timeouts, transport errors, coordinator moves.
    Retriable,
    /// Logged and the committable dropped (`signalFailedWithKnownReason`):
    /// fenced, invalid state, unknown producer id.
    Drop,
    /// `signalFailedWithUnknownReason`: the job fails over.
    Fail,
}

pub fn classify_commit_error(err: &ProducerError) -> CommitErrorClass {
    if let Some(code) = err.kafka_code() {
        return match code {
            KafkaCode::PRODUCER_FENCED
            | KafkaCode::INVALID_PRODUCER_EPOCH
            | KafkaCode::INVALID_TXN_STATE
            | KafkaCode::UNKNOWN_PRODUCER_ID => CommitErrorClass::Drop,
            // Retriable codes that outlived the wire client's own retries
            // (Java: a RetriableException such as a TimeoutException).
            KafkaCode::NOT_COORDINATOR
            | KafkaCode::COORDINATOR_NOT_AVAILABLE
            | KafkaCode::COORDINATOR_LOAD_IN_PROGRESS
            | KafkaCode::CONCURRENT_TRANSACTIONS
            | KafkaCode::REQUEST_TIMED_OUT
            | KafkaCode::NOT_ENOUGH_REPLICAS
            | KafkaCode::NOT_LEADER_OR_FOLLOWER => CommitErrorClass::Retriable,
            _ => CommitErrorClass::Fail,
        };
    }
    match err {
        ProducerError::Wire(w) if is_transient(w) => CommitErrorClass::Retriable,
        _ => CommitErrorClass::Fail,
    }
}

fn is_transient(w: &WireError) -> bool {
    match w {
        WireError::RetriesExhausted { last, .. } => is_transient(last) || last.kafka_code().is_some(),
        WireError::NoBrokerReachable { .. } => true,
        other => other.is_connection_error(),
    }
}

/// Flink's meaning of a dropped committable, for the ERROR log line.
pub fn drop_meaning(err: &ProducerError) -> &'static str {
    match err.kafka_code() {
        Some(KafkaCode::PRODUCER_FENCED) | Some(KafkaCode::INVALID_PRODUCER_EPOCH) => {
            "producer fenced: another producer took over the transactional id, or recovery took longer than \
             transaction.timeout.ms and the broker aborted the transaction; likely data loss"
        }
        Some(KafkaCode::INVALID_TXN_STATE) => {
            "invalid transaction state: the transaction was most likely aborted by the broker; likely data loss"
        }
        Some(KafkaCode::UNKNOWN_PRODUCER_ID) => {
            "unknown producer id (KAFKA-9310): the broker forgot the producer; the committable is dropped; \
             likely data loss"
        }
        _ => "commit failed; likely data loss",
    }
}

/// Commit attempts, 100 ms apart, before a retriable error fails the job.
/// Flink's `sink.committer.retries` (default 10, `SinkOptions`) counts
/// retries after the first call, so Flink calls up to 11 times, with no
/// pause between them (docs/PROTOCOL.md §4.2).
pub const COMMIT_ATTEMPTS: u32 = 10;

#[cfg(test)]
mod tests {
    use super::*;

    fn kafka(code: KafkaCode) -> ProducerError {
        ProducerError::Wire(WireError::Kafka { api: "EndTxn".into(), code, message: None })
    }

    #[test]
    fn committer_classification_follows_flink() {
        use CommitErrorClass::*;
        for (code, class) in [
            (KafkaCode::PRODUCER_FENCED, Drop),
            (KafkaCode::INVALID_PRODUCER_EPOCH, Drop),
            (KafkaCode::INVALID_TXN_STATE, Drop),
            (KafkaCode::UNKNOWN_PRODUCER_ID, Drop),
            (KafkaCode::CONCURRENT_TRANSACTIONS, Retriable),
            (KafkaCode::NOT_COORDINATOR, Retriable),
            (KafkaCode::INVALID_PRODUCER_ID_MAPPING, Fail),
            (KafkaCode::TRANSACTION_ABORTABLE, Fail),
            (KafkaCode::UNSUPPORTED_VERSION, Fail),
        ] {
            assert_eq!(classify_commit_error(&kafka(code)), class, "{code}");
        }
        let fenced = ProducerError::Fatal("fenced".into(), Some(KafkaCode::PRODUCER_FENCED));
        assert_eq!(classify_commit_error(&fenced), Drop);
        let timeout = ProducerError::Wire(WireError::Timeout { what: "EndTxn".into() });
        assert_eq!(classify_commit_error(&timeout), Retriable);
        let exhausted = ProducerError::Wire(WireError::RetriesExhausted {
            what: "EndTxn".into(),
            attempts: 5,
            last: Box::new(WireError::Disconnected { peer: "b".into() }),
        });
        assert_eq!(classify_commit_error(&exhausted), Retriable);
        assert_eq!(classify_commit_error(&ProducerError::IllegalState("x".into())), Fail);
        assert!(drop_meaning(&fenced).contains("likely data loss"));
    }

    #[test]
    fn latency_samples_are_bucketed() {
        assert_eq!(latency_samples("produce-ack", &[]), None);
        let Some(EventKind::LatencySamples { metric, buckets }) = latency_samples("produce-ack", &[7, 7, 900, 123_456])
        else {
            panic!("no event")
        };
        assert_eq!(metric, "produce-ack");
        // below 2048 values are exact; 123456 falls in a bucket of width 64
        assert_eq!(buckets[..2], [(7, 2), (900, 1)]);
        assert_eq!(buckets.len(), 3);
        assert_eq!(buckets[2].1, 1);
        assert!((123_456..123_456 + 64).contains(&buckets[2].0), "{buckets:?}");
        let json = serde_json::to_string(&latency_samples("txn-begin", &[5]).unwrap()).unwrap();
        assert_eq!(json, r#"{"type":"latency-samples","metric":"txn-begin","buckets":[[5,1]]}"#);
    }

    #[test]
    fn error_text_is_the_kafka_code() {
        let e = ProducerError::Fatal("init".into(), Some(KafkaCode::UNSUPPORTED_VERSION));
        assert_eq!(error_text(&e), "UNSUPPORTED_VERSION (35)");
        assert_eq!(error_text(&ProducerError::IllegalState("nope".into())), "illegal state: nope");
    }
}
