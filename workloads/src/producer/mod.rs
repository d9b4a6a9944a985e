//! The rig's transactional producer on the wire. STUB: the contract other
//! modules code against; the implementation replaces every `todo!()`.
use std::time::Duration;

use bytes::Bytes;

use crate::model::TxnProtocol;
use crate::wire::error::{KafkaCode, WireError};

/// A transactional id's state machine, after Kafka's Java `TransactionManager.State`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnState {
    Uninitialized,
    Initializing,
    Ready,
    InTransaction,
    /// Flushed and (KIP-939) prepared: only commit or abort are allowed.
    Prepared,
    CommittingTransaction,
    AbortingTransaction,
    AbortableError { error: String },
    FatalError { error: String },
}

#[derive(Debug, Clone)]
pub struct ProducerConfig {
    pub bootstrap: Vec<String>,
    /// None: an idempotent, non-transactional producer.
    pub transactional_id: Option<String>,
    pub transaction_timeout_ms: i32,
    pub linger: Duration,
    pub batch_size: usize,
    pub request_timeout: Duration,
    /// Give up on a batch after this long (Java's delivery.timeout.ms).
    pub delivery_timeout: Duration,
    /// Force transactions V1 even on a Transactions V2 cluster.
    pub force_v1: bool,
    pub client_id: String,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct InitOptions {
    pub enable_2pc: bool,
    pub keep_prepared_txn: bool,
}

#[derive(Debug, Clone)]
pub struct InitInfo {
    pub producer_id: i64,
    pub epoch: i16,
    /// KeepPreparedTxn: the prepared transaction the broker kept.
    pub ongoing: Option<(i64, i16)>,
    pub version: i16,
    pub protocol: TxnProtocol,
}

#[derive(Debug, Clone)]
pub struct FlushInfo {
    pub records: u64,
    pub batches: u64,
    pub duration: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum ProducerError {
    /// The transaction must be aborted; the producer can go on afterwards.
    #[error("abortable: {0}")]
    Abortable(String, Option<KafkaCode>),
    /// The producer is unusable (fenced, invalid state, ...).
    #[error("fatal: {0}")]
    Fatal(String, Option<KafkaCode>),
    /// An operation not allowed in the current state (a bug in the caller).
    #[error("illegal state: {0}")]
    IllegalState(String),
    #[error(transparent)]
    Wire(#[from] WireError),
}

impl ProducerError {
    pub fn kafka_code(&self) -> Option<KafkaCode> {
        match self {
            ProducerError::Abortable(_, c) | ProducerError::Fatal(_, c) => *c,
            ProducerError::Wire(w) => w.kafka_code(),
            ProducerError::IllegalState(_) => None,
        }
    }
}

pub struct TxnProducer {
    _private: (),
}

impl TxnProducer {
    pub async fn connect(_cfg: ProducerConfig) -> Result<TxnProducer, ProducerError> {
        todo!()
    }
    pub async fn init(&mut self, _opts: InitOptions) -> Result<InitInfo, ProducerError> {
        todo!()
    }
    pub fn resume(&mut self, _producer_id: i64, _epoch: i16, _protocol: TxnProtocol) -> Result<(), ProducerError> {
        todo!()
    }
    pub fn begin(&mut self) -> Result<(), ProducerError> {
        todo!()
    }
    pub async fn send(
        &mut self,
        _topic: &str,
        _partition: i32,
        _key: Bytes,
        _value: Bytes,
        _headers: Vec<(String, Bytes)>,
    ) -> Result<(), ProducerError> {
        todo!()
    }
    pub async fn poll(&mut self) -> Result<(), ProducerError> {
        todo!()
    }
    pub async fn flush(&mut self) -> Result<FlushInfo, ProducerError> {
        todo!()
    }
    pub async fn prepare(&mut self) -> Result<(i64, i16), ProducerError> {
        todo!()
    }
    pub async fn commit(&mut self, _end_txn_version: Option<i16>) -> Result<(), ProducerError> {
        todo!()
    }
    pub async fn abort(&mut self) -> Result<(), ProducerError> {
        todo!()
    }
    pub fn state(&self) -> &TxnState {
        todo!()
    }
    pub fn producer_id_and_epoch(&self) -> (i64, i16) {
        todo!()
    }
    pub fn protocol(&self) -> TxnProtocol {
        todo!()
    }
    pub fn transactional_id(&self) -> Option<&str> {
        todo!()
    }
    pub fn take_ack_latencies_us(&mut self) -> Vec<u64> {
        todo!()
    }
}
