//! How a producer is set up: its connection, transactional id and timeouts, with the Java
//! producer's defaults (`ProducerConfig`), and the KIP-939 flags of its `InitProducerId`.
use std::time::Duration;

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

impl ProducerConfig {
    /// Java producer defaults: `transaction.timeout.ms` 60 s, `linger.ms`
    /// 5 ms, `batch.size` 16 KiB, `request.timeout.ms` 30 s,
    /// `delivery.timeout.ms` 120 s.
    pub fn new(bootstrap: Vec<String>, transactional_id: Option<String>) -> ProducerConfig {
        ProducerConfig {
            bootstrap,
            transactional_id,
            transaction_timeout_ms: 60_000,
            linger: Duration::from_millis(5),
            batch_size: 16_384,
            request_timeout: Duration::from_secs(30),
            delivery_timeout: Duration::from_secs(120),
            force_v1: false,
            client_id: "sinkhole-producer".to_string(),
        }
    }
}
