//! The rig's transactional producer on the wire.
//!
//! [`TxnProducer`] is Kafka's Java producer cut down to what the sink modes
//! need, with the same semantics:
//!
//! * [`txn::TxnManager`] is `TransactionManager`: the state machine
//!   ([`state`]), producer id and epoch, the partitions of the transaction,
//!   `transactionStarted`, the KIP-360 epoch bump, sequences;
//! * [`accumulator`] is `RecordAccumulator` + `ProducerBatch`: batches per
//!   partition up to `batch_size` or `linger`, sequence fixed at first drain;
//! * the drain loop here is `Sender`: one Produce request per leader with
//!   every ready partition and, as Java's `RecordAccumulator.drain`, the
//!   head batch of every other partition of that leader that may go out,
//!   acks=-1, retries with exponential backoff within
//!   `delivery_timeout`; unlike Java's background thread it runs inside
//!   `send` (when a batch fills), `poll` and `flush`, with one request in
//!   flight per broker, awaited;
//! * [`errors`] is the error table of `docs/PROTOCOL.md` §2.
//!
//! Transactions V1 and V2 (KIP-890) are both spoken: V1 adds partitions with
//! AddPartitionsToTxn, produces with v≤11 and ends with EndTxn v≤4 keeping the
//! epoch; V2 produces with v12 (the leader adds the partition) and ends with
//! EndTxn v5, adopting the bumped epoch it returns. [`TxnProducer::resume`]
//! is what Flink's `FlinkKafkaInternalProducer.resumeTransaction` does by
//! reflection, and [`TxnProducer::prepare`] is KIP-939's
//! `prepareTransaction` (flush, no RPC).
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Re-exported so callers need no `bytes` dependency of their own.
pub use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::PartitionProduceResponse;
use kafka_protocol::messages::{ProduceRequest, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use crate::wire::error::{KafkaCode, WireError};
use crate::wire::{Client, ClientConfig, InitProducerIdParams, RequestCounts, SaslPlain};
use sinkhole_model::TxnProtocol;

pub mod accumulator;
pub mod config;
pub mod errors;
pub mod state;
pub mod txn;

use accumulator::{encode_batch, last_offset, Accumulator, Batch, PendingRecord, Tp};
pub use config::{InitOptions, ProducerConfig};
pub use errors::ProducerError;
use errors::{classify, Api, ErrorClass, ErrorContext};
pub use state::StateKind;
use txn::TxnManager;

/// A Produce request's partitions, by topic.
type ByTopic = BTreeMap<String, Vec<PartitionProduceData>>;

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
    AbortableError {
        error: String,
    },
    FatalError {
        error: String,
    },
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

/// A transactional (or idempotent) producer speaking the Kafka protocol
/// itself. See the module docs.
pub struct TxnProducer {
    cfg: ProducerConfig,
    client: Client,
    txn: TxnManager,
    acc: Accumulator,
    /// Partition → leader node id, from Metadata; forgotten on errors.
    leaders: HashMap<Tp, i32>,
    /// The cluster's finalized `transaction.version`.
    transaction_version: i16,
    /// The broker's highest EndTxn version.
    end_txn_max: i16,
    ack_latencies_us: Vec<u64>,
    /// Acknowledged since the last `flush`.
    acked_records: u64,
    acked_batches: u64,
    /// Produce retries by error code (the coordinator requests' own counts
    /// are kept by the client); see [`TxnProducer::take_request_counts`].
    produce_counts: RequestCounts,
}

/// The first error of a round of Produce replies, to apply after the round.
fn keep_first(slot: &mut Option<ProducerError>, err: ProducerError) {
    if slot.is_none() {
        *slot = Some(err);
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

impl TxnProducer {
    /// Bootstraps the client and reads the cluster's `transaction.version`
    /// (ApiVersions) to choose the protocol. Sends no transactional request.
    pub async fn connect(cfg: ProducerConfig) -> Result<TxnProducer, ProducerError> {
        TxnProducer::connect_with(cfg, None).await
    }

    /// [`connect`](Self::connect), authenticating every connection with
    /// SASL/PLAIN when `sasl` is given (a `SASL_PLAINTEXT` listener).
    pub async fn connect_with(cfg: ProducerConfig, sasl: Option<SaslPlain>) -> Result<TxnProducer, ProducerError> {
        let client_cfg = ClientConfig {
            sasl,
            client_id: cfg.client_id.clone(),
            request_timeout: cfg.request_timeout,
            // Coordinator requests are retried up to the delivery timeout
            // (Java bounds the blocking calls by max.block.ms instead).
            retry_deadline: cfg.delivery_timeout,
            ..Default::default()
        };
        let mut client = Client::connect(&cfg.bootstrap, client_cfg).await?;
        let info = client.api_versions(None).await?;
        let transaction_version = info.transaction_version();
        let end_txn_max = info.max_version(kafka_protocol::messages::ApiKey::EndTxn).unwrap_or(0);
        let protocol = txn::choose_protocol(transaction_version, cfg.force_v1);
        let mut manager = TxnManager::new(cfg.transactional_id.clone(), protocol);
        manager.can_bump_epoch = info.max_version(kafka_protocol::messages::ApiKey::InitProducerId).unwrap_or(0) >= 3;
        debug!(
            transactional_id = cfg.transactional_id.as_deref().unwrap_or("-"),
            transaction_version,
            ?protocol,
            "producer connected"
        );
        Ok(TxnProducer {
            acc: Accumulator::new(cfg.batch_size, cfg.linger),
            cfg,
            client,
            txn: manager,
            leaders: HashMap::new(),
            transaction_version,
            end_txn_max,
            ack_latencies_us: Vec::new(),
            acked_records: 0,
            acked_batches: 0,
            produce_counts: RequestCounts::default(),
        })
    }

    /// InitProducerId (`initTransactions`; for an idempotent producer the
    /// id-less variant). V6 is sent only when a KIP-939 flag is set. With
    /// KeepPreparedTxn and a prepared transaction kept by the broker, the
    /// producer takes over that transaction in state Prepared.
    pub async fn init(&mut self, opts: InitOptions) -> Result<InitInfo, ProducerError> {
        if !self.txn.is_transactional() && (opts.enable_2pc || opts.keep_prepared_txn) {
            return Err(ProducerError::IllegalState("2PC options need a transactional id".to_string()));
        }
        self.txn.begin_init()?;
        // Java reads the finalized transaction.version after
        // initTransactions (`maybeUpdateTransactionV2Enabled`).
        if let Ok(info) = self.client.api_versions(None).await {
            self.transaction_version = info.transaction_version();
            self.txn.protocol = txn::choose_protocol(self.transaction_version, self.cfg.force_v1);
        }
        let params = InitProducerIdParams {
            transactional_id: self.cfg.transactional_id.clone(),
            // Java's idempotent producer asks for Integer.MAX_VALUE.
            transaction_timeout_ms: if self.txn.is_transactional() {
                self.cfg.transaction_timeout_ms
            } else {
                i32::MAX
            },
            producer_id: -1,
            producer_epoch: -1,
            enable_2pc: opts.enable_2pc,
            keep_prepared_txn: opts.keep_prepared_txn,
        };
        let out = match self.client.init_producer_id(&params, None).await {
            Ok(o) => o,
            Err(e) => {
                let err = self.txn.coordinator_error(Api::InitProducerId, e);
                return Err(self.txn.fail(err));
            }
        };
        self.txn.enable_2pc = opts.enable_2pc;
        self.txn.can_bump_epoch = self.txn.can_bump_epoch || out.version >= 3;
        let ongoing =
            (out.ongoing_txn_producer_id >= 0).then_some((out.ongoing_txn_producer_id, out.ongoing_txn_producer_epoch));
        self.acc.clear();
        self.txn.complete_init(out.producer_id, out.producer_epoch, ongoing);
        info!(
            transactional_id = self.cfg.transactional_id.as_deref().unwrap_or("-"),
            producer_id = out.producer_id,
            epoch = out.producer_epoch,
            version = out.version,
            protocol = ?self.txn.protocol,
            ?ongoing,
            "producer initialised"
        );
        Ok(InitInfo {
            producer_id: out.producer_id,
            epoch: out.producer_epoch,
            ongoing,
            version: out.version,
            protocol: self.txn.protocol,
        })
    }

    /// Takes over a transaction by producer id and epoch without any request,
    /// like Flink's `FlinkKafkaInternalProducer.resumeTransaction`: state
    /// InTransaction with the transaction marked started, so [`commit`]
    /// sends EndTxn. `protocol` decides the EndTxn version of a plain
    /// `commit(None)` (V1: ≤ v4, V2: v5).
    ///
    /// [`commit`]: Self::commit
    pub fn resume(&mut self, producer_id: i64, epoch: i16, protocol: TxnProtocol) -> Result<(), ProducerError> {
        if !self.acc.is_empty() {
            return Err(ProducerError::IllegalState("resume with unsent records".to_string()));
        }
        self.txn.resume(producer_id, epoch, protocol)
    }

    /// `beginTransaction`: local only.
    pub fn begin(&mut self) -> Result<(), ProducerError> {
        self.txn.begin()
    }

    /// Eager registration: adds `partitions` of `topic` to the open
    /// transaction now, in one AddPartitionsToTxn (client form, v≤3), instead
    /// of before each partition's first batch. Flink users get this by
    /// writing to every partition early; here it is explicit, to compare the
    /// first-record latency and the coordinator's CONCURRENT_TRANSACTIONS
    /// answers of both ways (the retry rules are the same as for a lazy add:
    /// Java's `AddPartitionsToTxnHandler`).
    ///
    /// Under Transactions V1 this is exactly what a lazy add would send
    /// later. Under V2 the Java client never sends AddPartitionsToTxn (the
    /// leader adds partitions on Produce v12+); the request is sent anyway,
    /// and the broker's answer decides whether eager registration exists
    /// under V2 (the broker's AddPartitionsToTxn handler still serves v≤3
    /// clients). Returns the number of partitions added (0 if all were in).
    pub async fn register_partitions(&mut self, topic: &str, partitions: &[i32]) -> Result<usize, ProducerError> {
        self.txn.maybe_fail_with_error()?;
        if !self.txn.is_transactional() || self.txn.kind() != StateKind::InTransaction {
            return Err(ProducerError::IllegalState(format!(
                "registering partitions needs an open transaction (state {:?})",
                self.txn.state()
            )));
        }
        let tps: Vec<Tp> = partitions
            .iter()
            .map(|p| Tp::new(topic, *p))
            .filter(|tp| !self.txn.partitions_in_txn.contains(tp))
            .collect();
        if tps.is_empty() {
            return Ok(0);
        }
        let tid = self.cfg.transactional_id.clone().unwrap_or_default();
        let parts: Vec<(String, i32)> = tps.iter().map(|tp| (tp.topic.clone(), tp.partition)).collect();
        match self.client.add_partitions_to_txn(&tid, self.txn.producer_id, self.txn.epoch, &parts).await {
            Ok(()) => {
                self.txn.on_partitions_added(&tps);
                Ok(tps.len())
            }
            Err(e) => {
                let err = self.txn.coordinator_error(Api::AddPartitionsToTxn, e);
                Err(self.txn.fail(err))
            }
        }
    }

    /// Requests sent through the client's retry loop and retries by error
    /// code (coordinator requests, and Produce retries) since the last call.
    pub fn take_request_counts(&mut self) -> RequestCounts {
        let mut c = self.client.take_counts();
        c.merge(std::mem::take(&mut self.produce_counts));
        c
    }

    /// Appends a record to its partition's batch; sends full batches.
    pub async fn send(
        &mut self,
        topic: &str,
        partition: i32,
        key: Bytes,
        value: Bytes,
        headers: Vec<(String, Bytes)>,
    ) -> Result<(), ProducerError> {
        let tp = Tp::new(topic, partition);
        self.txn.on_send(&tp)?;
        let record = PendingRecord { key, value, headers, timestamp: now_ms() };
        if self.acc.append(tp, record, Instant::now()) {
            self.drain(false).await?;
        }
        Ok(())
    }

    /// Sends the batches that are full or whose linger has expired.
    pub async fn poll(&mut self) -> Result<(), ProducerError> {
        self.txn.maybe_fail_with_error()?;
        if self.acc.is_empty() && self.txn.pending_partitions.is_empty() {
            return Ok(());
        }
        self.drain(false).await
    }

    /// Sends everything and waits for every ack (V1: adds pending partitions too).
    pub async fn flush(&mut self) -> Result<FlushInfo, ProducerError> {
        self.txn.check_flush()?;
        let started = Instant::now();
        self.drain(true).await?;
        let info = FlushInfo { records: self.acked_records, batches: self.acked_batches, duration: started.elapsed() };
        self.acked_records = 0;
        self.acked_batches = 0;
        Ok(info)
    }

    /// KIP-939 `prepareTransaction`: flush, then state Prepared (no RPC).
    /// Needs a producer initialised with `enable_2pc`. Returns the pair a
    /// later commit must use.
    pub async fn prepare(&mut self) -> Result<(i64, i16), ProducerError> {
        self.txn.check_prepare()?;
        self.flush().await?;
        self.txn.transition(TxnState::Prepared)?;
        Ok((self.txn.producer_id, self.txn.epoch))
    }

    /// Flushes, then EndTxn(commit) unless nothing was added to the
    /// transaction. `end_txn_version`: send exactly this EndTxn version
    /// (legacy recovery sends ≤ v4 even on a V2 cluster); `None` follows the
    /// protocol (V2: v5, V1: ≤ v4).
    pub async fn commit(&mut self, end_txn_version: Option<i16>) -> Result<(), ProducerError> {
        self.txn.begin_commit()?;
        if !self.acc.is_empty() || !self.txn.pending_partitions.is_empty() {
            self.drain(true).await?;
        }
        if self.txn.transaction_started {
            self.end_txn(true, end_txn_version).await?;
        } else {
            self.txn.complete_end_txn(0, self.txn.producer_id, self.txn.epoch);
        }
        self.txn.complete_transaction()
    }

    /// Drops unsent records, EndTxn(abort) if the transaction started, and
    /// under V1 after an abortable error bumps the epoch with
    /// InitProducerId(pid, epoch) (KIP-360).
    pub async fn abort(&mut self) -> Result<(), ProducerError> {
        self.txn.begin_abort()?;
        let dropped = self.acc.clear();
        if dropped > 0 {
            debug!(dropped, "abort: unsent records dropped");
        }
        if self.txn.transaction_started {
            self.end_txn(false, None).await?;
        } else {
            self.txn.complete_end_txn(0, self.txn.producer_id, self.txn.epoch);
        }
        if self.txn.epoch_bump_required && self.txn.protocol == TxnProtocol::V1 {
            self.bump_epoch().await?;
            return Ok(());
        }
        self.txn.complete_transaction()
    }

    pub fn state(&self) -> &TxnState {
        self.txn.state()
    }

    pub fn producer_id_and_epoch(&self) -> (i64, i16) {
        (self.txn.producer_id, self.txn.epoch)
    }

    pub fn protocol(&self) -> TxnProtocol {
        self.txn.protocol
    }

    pub fn transactional_id(&self) -> Option<&str> {
        self.cfg.transactional_id.as_deref()
    }

    /// Produce-ack latencies (µs, one per Produce request) since the last call.
    pub fn take_ack_latencies_us(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.ack_latencies_us)
    }

    /// The cluster's finalized `transaction.version`, as last read.
    pub fn transaction_version(&self) -> i16 {
        self.transaction_version
    }

    /// The underlying wire client (e.g. for DescribeTransactions in tests).
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    // ----- requests ------------------------------------------------------------

    async fn end_txn(&mut self, commit: bool, explicit: Option<i16>) -> Result<(), ProducerError> {
        let tid = self.cfg.transactional_id.clone().unwrap_or_default();
        let version = txn::end_txn_version(self.txn.protocol, explicit, self.end_txn_max);
        let (pid, epoch) = (self.txn.producer_id, self.txn.epoch);
        match self.client.end_txn(&tid, pid, epoch, commit, Some(version)).await {
            Ok(out) => {
                debug!(transactional_id = tid, commit, version, pid, epoch, new_epoch = out.producer_epoch, "EndTxn");
                self.txn.complete_end_txn(out.version, out.producer_id, out.producer_epoch);
                Ok(())
            }
            Err(e) => {
                let api = if commit { Api::EndTxnCommit } else { Api::EndTxnAbort };
                let err = self.txn.coordinator_error(api, e);
                Err(self.txn.fail(err))
            }
        }
    }

    /// KIP-360 epoch bump after an abort (Java `beginCompletingTransaction`
    /// with `epochBumpRequired`): ABORTING → INITIALIZING → READY.
    async fn bump_epoch(&mut self) -> Result<(), ProducerError> {
        self.txn.transition(TxnState::Initializing)?;
        let params = InitProducerIdParams {
            transactional_id: self.cfg.transactional_id.clone(),
            transaction_timeout_ms: self.cfg.transaction_timeout_ms,
            producer_id: self.txn.producer_id,
            producer_epoch: self.txn.epoch,
            enable_2pc: self.txn.enable_2pc,
            keep_prepared_txn: false,
        };
        match self.client.init_producer_id(&params, None).await {
            Ok(out) => {
                info!(producer_id = out.producer_id, epoch = out.producer_epoch, "epoch bumped after abort");
                self.txn.complete_init(out.producer_id, out.producer_epoch, None);
                Ok(())
            }
            Err(e) => {
                let err = self.txn.coordinator_error(Api::InitProducerId, e);
                Err(self.txn.fail(err))
            }
        }
    }

    /// V1: AddPartitionsToTxn for every partition written to but not added.
    async fn add_pending_partitions(&mut self) -> Result<(), ProducerError> {
        let pending: Vec<Tp> = self.txn.pending_partitions.iter().cloned().collect();
        if pending.is_empty() {
            return Ok(());
        }
        let tid = self.cfg.transactional_id.clone().unwrap_or_default();
        let parts: Vec<(String, i32)> = pending.iter().map(|tp| (tp.topic.clone(), tp.partition)).collect();
        match self.client.add_partitions_to_txn(&tid, self.txn.producer_id, self.txn.epoch, &parts).await {
            Ok(()) => {
                self.txn.on_partitions_added(&pending);
                Ok(())
            }
            Err(e) => {
                let err = self.txn.coordinator_error(Api::AddPartitionsToTxn, e);
                Err(self.txn.fail(err))
            }
        }
    }

    /// The `Sender` loop: sends ready batches, one Produce request per
    /// leader, until nothing is ready (`flush`: until every batch is acked,
    /// sleeping through retry backoffs).
    async fn drain(&mut self, flush: bool) -> Result<(), ProducerError> {
        loop {
            if self.txn.is_transactional() && txn::needs_add_partitions(self.txn.protocol) {
                // Java holds a partition's batches until its add succeeded
                // (`isSendToPartitionAllowed`); adding every new partition
                // first has the same effect.
                self.add_pending_partitions().await?;
            }
            let now = Instant::now();
            let ready = self.acc.ready(now, flush);
            if ready.is_empty() {
                if !flush || self.acc.is_empty() {
                    return Ok(());
                }
                if let Some(at) = self.acc.next_wakeup(true) {
                    tokio::time::sleep_until(at.max(now)).await;
                }
                continue;
            }
            self.refresh_leaders(&ready).await;
            let mut by_leader: BTreeMap<i32, Vec<Tp>> = BTreeMap::new();
            let mut first_err = None;
            for tp in &ready {
                match self.leaders.get(tp) {
                    Some(&node) => by_leader.entry(node).or_default().push(tp.clone()),
                    None => {
                        if let Err(e) = self.retry_batch(tp, "no leader known".to_string(), None) {
                            keep_first(&mut first_err, e);
                        }
                    }
                }
            }
            self.acc.add_sendable_heads(&mut by_leader, &self.leaders, &ready, now);
            for (node, tps) in by_leader {
                if let Err(e) = self.produce_to(node, &tps).await {
                    keep_first(&mut first_err, e);
                }
            }
            if let Some(e) = first_err {
                return Err(self.txn.fail(e));
            }
        }
    }

    /// Metadata for the topics of partitions without a known leader.
    async fn refresh_leaders(&mut self, tps: &[Tp]) {
        let mut topics: Vec<String> =
            tps.iter().filter(|tp| !self.leaders.contains_key(tp)).map(|tp| tp.topic.clone()).collect();
        topics.sort();
        topics.dedup();
        if topics.is_empty() {
            return;
        }
        match self.client.metadata(Some(&topics)).await {
            Ok(md) => {
                for t in &md.topics {
                    for p in &t.partitions {
                        let tp = Tp::new(&t.name, p.partition);
                        if p.leader >= 0 {
                            self.leaders.insert(tp, p.leader);
                        } else {
                            self.leaders.remove(&tp);
                        }
                    }
                }
            }
            Err(e) => debug!(error = %e, "metadata refresh failed"),
        }
    }

    /// A retriable failure of `tp`'s head batch: back off exponentially
    /// (100 ms → 1 s) and forget the leader; past `delivery_timeout` the
    /// batch expires and the transaction becomes abortable (Java's batch
    /// expiry; 4.1+ wraps it as TransactionAbortableException, KAFKA-19176).
    fn retry_batch(&mut self, tp: &Tp, why: String, code: Option<KafkaCode>) -> Result<(), ProducerError> {
        if let Some(c) = code {
            self.produce_counts.retried("Produce", c);
        }
        self.leaders.remove(tp);
        let (base, max) = (self.client.config().retry_backoff, self.client.config().retry_backoff_max);
        let delivery_timeout = self.cfg.delivery_timeout;
        let Some(batch) = self.acc.head_mut(tp) else { return Ok(()) };
        batch.attempts += 1;
        batch.last_error = Some(why.clone());
        let now = Instant::now();
        let delay = Batch::backoff(batch.attempts, base, max);
        if now + delay > batch.created + delivery_timeout {
            return Err(ProducerError::Abortable(
                format!(
                    "{tp}: batch of {} records expired after {} attempts within the delivery timeout; last error: {why}",
                    batch.records.len(),
                    batch.attempts
                ),
                code,
            ));
        }
        debug!(%tp, attempt = batch.attempts, delay_ms = delay.as_millis() as u64, why, "produce retry");
        batch.retry_at = Some(now + delay);
        Ok(())
    }

    /// One Produce request to `node` with the head batch of each partition.
    async fn produce_to(&mut self, node: i32, tps: &[Tp]) -> Result<(), ProducerError> {
        let (topics, counts) = self.drain_heads(tps)?;
        let request = self.produce_request(topics);
        let (min_v, max_v) = txn::produce_versions(self.txn.protocol);
        let sent = Instant::now();
        let response = match self.client.produce(node, &request, min_v, max_v).await {
            Ok((r, _)) => r,
            Err(e @ WireError::UnsupportedVersion { .. }) => {
                return Err(ProducerError::Fatal(format!("Produce: {e}"), Some(KafkaCode::UNSUPPORTED_VERSION)))
            }
            Err(e) if e.is_connection_error() || matches!(e, WireError::NoBrokerReachable { .. }) => {
                // The request may or may not have been appended; the retry
                // with the same sequence is deduplicated by the broker.
                let mut first_err = None;
                for tp in counts.keys() {
                    if let Err(err) = self.retry_batch(tp, e.to_string(), None) {
                        keep_first(&mut first_err, err);
                    }
                }
                return first_err.map_or(Ok(()), Err);
            }
            Err(e) => return Err(ProducerError::Wire(e)),
        };
        self.ack_latencies_us.push(sent.elapsed().as_micros() as u64);

        let mut first_err = None;
        let mut answered = Vec::new();
        for topic in &response.responses {
            for p in &topic.partition_responses {
                let tp = Tp::new(topic.name.0.as_str(), p.index);
                // `Client::produce` refuses a reply that answers a partition
                // not sent, or one twice (`WireError::ReplyMismatch`).
                let Some(&count) = counts.get(&tp) else {
                    warn!(%tp, "Produce reply for a partition that was not sent");
                    continue;
                };
                answered.push(tp.clone());
                if let Err(e) = self.on_partition_response(&tp, count, p) {
                    keep_first(&mut first_err, e);
                }
            }
        }
        for tp in counts.keys() {
            if !answered.contains(tp) {
                if let Err(e) = self.retry_batch(tp, "partition missing from the Produce reply".to_string(), None) {
                    keep_first(&mut first_err, e);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// The head batch of each partition, encoded under its producer and base
    /// sequence, by topic; and each partition's record count.
    fn drain_heads(&mut self, tps: &[Tp]) -> Result<(ByTopic, HashMap<Tp, i32>), ProducerError> {
        let transactional = self.txn.is_transactional();
        let (pid, epoch) = (self.txn.producer_id, self.txn.epoch);
        let mut topics: ByTopic = BTreeMap::new();
        let mut counts: HashMap<Tp, i32> = HashMap::new();
        for tp in tps {
            let next = self.txn.seqs.next(tp);
            let Some(batch) = self.acc.head_mut(tp) else { continue };
            // The sequence is fixed when the batch is first drained and kept
            // on every retry (`RecordAccumulator.drain`).
            if batch.base_sequence.is_none() {
                batch.base_sequence = Some(next);
                batch.producer = Some((pid, epoch));
            }
            let (bpid, bepoch) = batch.producer.unwrap_or((pid, epoch));
            let records =
                encode_batch(&batch.records, bpid, bepoch, batch.base_sequence.unwrap_or(next), transactional)
                    .map_err(|e| ProducerError::Wire(WireError::Codec(e)))?;
            counts.insert(tp.clone(), batch.record_count());
            topics
                .entry(tp.topic.clone())
                .or_default()
                .push(PartitionProduceData::default().with_index(tp.partition).with_records(Some(records)));
        }
        Ok((topics, counts))
    }

    /// The Produce request: acks=all, under the transactional id.
    fn produce_request(&self, topics: ByTopic) -> ProduceRequest {
        ProduceRequest::default()
            .with_transactional_id(
                self.cfg.transactional_id.as_ref().map(|t| TransactionalId(StrBytes::from_string(t.clone()))),
            )
            .with_acks(-1)
            .with_timeout_ms(i32::try_from(self.cfg.request_timeout.as_millis()).unwrap_or(i32::MAX))
            .with_topic_data(
                topics
                    .into_iter()
                    .map(|(name, parts)| {
                        TopicProduceData::default()
                            .with_name(TopicName(StrBytes::from_string(name)))
                            .with_partition_data(parts)
                    })
                    .collect(),
            )
    }

    /// One partition's answer (Java's `Sender.handleProduceResponse`): the
    /// batch acked and its sequence advanced, retried, or the error that
    /// makes the transaction abortable or the producer fatal.
    fn on_partition_response(
        &mut self,
        tp: &Tp,
        count: i32,
        p: &PartitionProduceResponse,
    ) -> Result<(), ProducerError> {
        let code = KafkaCode(p.error_code);
        let ctx = ErrorContext {
            // One request per partition at a time: no earlier batch
            // is ever in flight behind this one.
            earlier_batch_in_flight: false,
            producer_state_lost: code == KafkaCode::UNKNOWN_PRODUCER_ID
                && (p.log_start_offset < 0
                    || self.txn.seqs.last_acked_offset(tp).is_some_and(|o| o < p.log_start_offset)),
            ..self.txn.error_context()
        };
        let detail = || {
            let msg = p.error_message.as_ref().map(|m| format!(": {m}")).unwrap_or_default();
            format!("Produce {tp} failed: {code}{msg}")
        };
        match classify(Api::Produce, code, &ctx) {
            ErrorClass::Success => {
                if code == KafkaCode::DUPLICATE_SEQUENCE_NUMBER {
                    debug!(%tp, "duplicate sequence: the batch was already written");
                }
                self.acc.pop_head(tp);
                self.txn.seqs.advance(tp, count);
                if p.base_offset >= 0 {
                    self.txn.seqs.set_last_acked_offset(tp, last_offset(p.base_offset, count));
                }
                self.acked_records += count as u64;
                self.acked_batches += 1;
                Ok(())
            }
            ErrorClass::Retry | ErrorClass::Rediscover => self.retry_batch(tp, detail(), Some(code)),
            ErrorClass::Abortable => Err(ProducerError::Abortable(detail(), Some(code))),
            ErrorClass::Fatal => {
                let what = if code == KafkaCode::PRODUCER_FENCED { "ProducerFencedException: " } else { "" };
                Err(ProducerError::Fatal(format!("{what}{}", detail()), Some(code)))
            }
        }
    }
}
