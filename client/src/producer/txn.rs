//! The producer's transactional bookkeeping, without I/O: Kafka's Java
//! `TransactionManager` (state, producer id and epoch, the partitions of the
//! transaction, `transactionStarted`, `epochBumpRequired`, sequences), so the
//! rules can be tested without a broker. [`TxnProducer`](super::TxnProducer)
//! does the requests and calls in here before and after each.

use std::collections::BTreeSet;

use super::accumulator::{Sequences, Tp};
use super::errors::{classify, Api, ErrorClass, ErrorContext};
use super::state::{is_transition_valid, StateKind};
use super::{ProducerError, TxnState};
use crate::wire::{KafkaCode, WireError};
use sinkhole_model::TxnProtocol;

/// V2 when the cluster finalized `transaction.version` ≥ 2 and V1 is not
/// forced (Java `TransactionManager.isTransactionV2Enabled`).
pub fn choose_protocol(transaction_version: i16, force_v1: bool) -> TxnProtocol {
    if transaction_version >= 2 && !force_v1 {
        TxnProtocol::V2
    } else {
        TxnProtocol::V1
    }
}

/// Produce versions to offer. V2: exactly v12 (the leader adds the partition
/// implicitly from v12; v13 addresses topics by id, which this client does
/// not do). V1: up to v11 (`ProduceRequest.Builder` caps TV1 clients there).
pub fn produce_versions(protocol: TxnProtocol) -> (i16, i16) {
    match protocol {
        TxnProtocol::V2 => (12, 12),
        TxnProtocol::V1 => (3, 11),
    }
}

/// The EndTxn version to send: an explicit one exactly (Flink's recovery
/// producer sends ≤ v4 even on a V2 cluster), else v5 for V2 and the
/// broker's highest up to v4 for V1 (`EndTxnRequest.Builder`).
pub fn end_txn_version(protocol: TxnProtocol, explicit: Option<i16>, broker_max: i16) -> i16 {
    match (explicit, protocol) {
        (Some(v), _) => v,
        (None, TxnProtocol::V2) => 5,
        (None, TxnProtocol::V1) => broker_max.min(4),
    }
}

/// V1 adds partitions with AddPartitionsToTxn before producing to them.
pub fn needs_add_partitions(protocol: TxnProtocol) -> bool {
    protocol == TxnProtocol::V1
}

#[derive(Debug)]
pub struct TxnManager {
    pub transactional_id: Option<String>,
    state: TxnState,
    /// The code of the error that put us in an error state.
    error_code: Option<KafkaCode>,
    pub producer_id: i64,
    pub epoch: i16,
    pub protocol: TxnProtocol,
    /// InitProducerId carried Enable2Pc (KIP-939): `prepare` is allowed, and
    /// an epoch-bump InitProducerId carries it again.
    pub enable_2pc: bool,
    /// The coordinator can bump the epoch after an abort (InitProducerId ≥ v3
    /// or TV2): Java's `coordinatorSupportsBumpingEpoch`.
    pub can_bump_epoch: bool,
    /// Something was added to the transaction, so EndTxn must be sent
    /// (Java's `transactionStarted`).
    pub transaction_started: bool,
    /// V1: abort must be followed by InitProducerId(pid, epoch) (KIP-360).
    pub epoch_bump_required: bool,
    /// V1: partitions added with AddPartitionsToTxn; V2: partitions written.
    pub partitions_in_txn: BTreeSet<Tp>,
    /// V1: partitions written to but not yet added.
    pub pending_partitions: BTreeSet<Tp>,
    pub seqs: Sequences,
}

impl TxnManager {
    pub fn new(transactional_id: Option<String>, protocol: TxnProtocol) -> TxnManager {
        TxnManager {
            transactional_id,
            state: TxnState::Uninitialized,
            error_code: None,
            producer_id: -1,
            epoch: -1,
            protocol,
            enable_2pc: false,
            can_bump_epoch: false,
            transaction_started: false,
            epoch_bump_required: false,
            partitions_in_txn: BTreeSet::new(),
            pending_partitions: BTreeSet::new(),
            seqs: Sequences::new(-1, -1),
        }
    }

    pub fn state(&self) -> &TxnState {
        &self.state
    }

    pub fn kind(&self) -> StateKind {
        self.state.kind()
    }

    pub fn is_transactional(&self) -> bool {
        self.transactional_id.is_some()
    }

    fn require_transactional(&self, what: &str) -> Result<(), ProducerError> {
        if self.is_transactional() {
            Ok(())
        } else {
            Err(ProducerError::IllegalState(format!("{what}: the producer has no transactional id")))
        }
    }

    /// Moves to `target` if legal; otherwise IllegalState and no change
    /// (Java `transitionTo` on an application thread).
    pub fn transition(&mut self, target: TxnState) -> Result<(), ProducerError> {
        let (from, to) = (self.kind(), target.kind());
        if !is_transition_valid(from, to) {
            return Err(ProducerError::IllegalState(format!("invalid transition {from:?} -> {to:?}")));
        }
        if from != to {
            tracing::debug!(transactional_id = self.transactional_id.as_deref().unwrap_or("-"), ?from, ?to, "state");
        }
        self.state = target;
        Ok(())
    }

    /// Checks a path of transitions first and then takes them all, so an
    /// illegal path changes nothing.
    fn transition_path(&mut self, path: &[TxnState]) -> Result<(), ProducerError> {
        let mut from = self.kind();
        for t in path {
            if !is_transition_valid(from, t.kind()) {
                return Err(ProducerError::IllegalState(format!(
                    "invalid transition {from:?} -> {:?} (from {:?})",
                    t.kind(),
                    self.kind()
                )));
            }
            from = t.kind();
        }
        for t in path {
            self.transition(t.clone())?;
        }
        Ok(())
    }

    /// The stored error when in an error state (Java `maybeFailWithError`).
    pub fn maybe_fail_with_error(&self) -> Result<(), ProducerError> {
        match &self.state {
            TxnState::AbortableError { error } => Err(ProducerError::Abortable(
                format!("the transaction must be aborted first: {error}"),
                self.error_code,
            )),
            TxnState::FatalError { error } => {
                Err(ProducerError::Fatal(format!("the producer is in a fatal error state: {error}"), self.error_code))
            }
            _ => Ok(()),
        }
    }

    fn illegal<T>(&self, what: &str) -> Result<T, ProducerError> {
        Err(ProducerError::IllegalState(format!("{what} is not allowed in state {:?}", self.kind())))
    }

    /// Adopts a producer id and epoch; a changed pair restarts every
    /// partition's sequence at 0.
    pub fn set_producer(&mut self, producer_id: i64, epoch: i16) {
        if (producer_id, epoch) != self.seqs.producer() {
            self.seqs.reset(producer_id, epoch);
        }
        self.producer_id = producer_id;
        self.epoch = epoch;
    }

    pub fn error_context(&self) -> ErrorContext {
        ErrorContext {
            protocol_v2: self.protocol == TxnProtocol::V2,
            can_bump_epoch: self.can_bump_epoch || self.protocol == TxnProtocol::V2,
            ..Default::default()
        }
    }

    // ----- calls -----------------------------------------------------------

    /// `initTransactions` (or an idempotent producer's first InitProducerId):
    /// UNINITIALIZED → INITIALIZING; again from INITIALIZING after a timeout.
    pub fn begin_init(&mut self) -> Result<(), ProducerError> {
        self.maybe_fail_with_error()?;
        match self.kind() {
            StateKind::Uninitialized => self.transition(TxnState::Initializing),
            StateKind::Initializing => Ok(()),
            _ => self.illegal("init"),
        }
    }

    /// InitProducerId succeeded. `ongoing`: KeepPreparedTxn found a prepared
    /// transaction, which becomes ours in PREPARED (KIP-939, KAFKA-19272).
    pub fn complete_init(&mut self, producer_id: i64, epoch: i16, ongoing: Option<(i64, i16)>) {
        self.partitions_in_txn.clear();
        self.pending_partitions.clear();
        self.epoch_bump_required = false;
        match ongoing {
            Some((pid, e)) if self.is_transactional() => {
                self.set_producer(pid, e);
                self.transaction_started = true;
                self.state = TxnState::Prepared;
            }
            _ => {
                self.set_producer(producer_id, epoch);
                self.transaction_started = false;
                self.state = TxnState::Ready;
            }
        }
    }

    /// Flink's `FlinkKafkaInternalProducer.resumeTransaction`: by reflection,
    /// INITIALIZING, reset the partition map, set the pair, READY,
    /// IN_TRANSACTION, `transactionStarted = true`. No request.
    pub fn resume(&mut self, producer_id: i64, epoch: i16, protocol: TxnProtocol) -> Result<(), ProducerError> {
        self.require_transactional("resume")?;
        self.maybe_fail_with_error()?;
        let path = match self.kind() {
            StateKind::Uninitialized => {
                vec![TxnState::Initializing, TxnState::Ready, TxnState::InTransaction]
            }
            StateKind::Ready => {
                vec![TxnState::Uninitialized, TxnState::Initializing, TxnState::Ready, TxnState::InTransaction]
            }
            _ => return self.illegal("resume"),
        };
        self.transition_path(&path)?;
        self.protocol = protocol;
        self.partitions_in_txn.clear();
        self.pending_partitions.clear();
        self.seqs.reset(producer_id, epoch);
        self.producer_id = producer_id;
        self.epoch = epoch;
        self.transaction_started = true;
        self.epoch_bump_required = false;
        Ok(())
    }

    /// `beginTransaction`: local only.
    pub fn begin(&mut self) -> Result<(), ProducerError> {
        self.require_transactional("begin")?;
        self.maybe_fail_with_error()?;
        self.transition(TxnState::InTransaction)?;
        self.transaction_started = false;
        self.partitions_in_txn.clear();
        self.pending_partitions.clear();
        Ok(())
    }

    /// `send` → `maybeAddPartition`: checks the state and records the
    /// partition (V1: to be added; V2: the transaction has started).
    pub fn on_send(&mut self, tp: &Tp) -> Result<(), ProducerError> {
        self.maybe_fail_with_error()?;
        if !self.is_transactional() {
            return match self.kind() {
                StateKind::Ready => Ok(()),
                _ => self.illegal("send"),
            };
        }
        if self.kind() != StateKind::InTransaction {
            return self.illegal("send");
        }
        if self.partitions_in_txn.contains(tp) || self.pending_partitions.contains(tp) {
            return Ok(());
        }
        if needs_add_partitions(self.protocol) {
            self.pending_partitions.insert(tp.clone());
        } else {
            self.partitions_in_txn.insert(tp.clone());
            self.transaction_started = true;
        }
        Ok(())
    }

    /// V1: AddPartitionsToTxn of the pending partitions succeeded.
    pub fn on_partitions_added(&mut self, added: &[Tp]) {
        for tp in added {
            self.pending_partitions.remove(tp);
            self.partitions_in_txn.insert(tp.clone());
        }
        if !added.is_empty() {
            self.transaction_started = true;
        }
    }

    /// `flush` is allowed while a transaction is open (or being completed);
    /// an idempotent producer flushes when ready.
    pub fn check_flush(&self) -> Result<(), ProducerError> {
        self.maybe_fail_with_error()?;
        match (self.is_transactional(), self.kind()) {
            (false, StateKind::Ready) => Ok(()),
            (true, StateKind::InTransaction | StateKind::Prepared | StateKind::CommittingTransaction) => Ok(()),
            _ => self.illegal("flush"),
        }
    }

    /// KIP-939 `prepareTransaction`: needs 2PC (Java throws
    /// InvalidTxnStateException otherwise) and an open transaction.
    pub fn check_prepare(&self) -> Result<(), ProducerError> {
        self.require_transactional("prepare")?;
        self.maybe_fail_with_error()?;
        if !self.enable_2pc {
            return Err(ProducerError::IllegalState(
                "prepare needs a producer initialised with enable_2pc (KIP-939)".to_string(),
            ));
        }
        if !is_transition_valid(self.kind(), StateKind::Prepared) || self.kind() == StateKind::Initializing {
            return self.illegal("prepare");
        }
        Ok(())
    }

    /// `commitTransaction`: IN_TRANSACTION or PREPARED → COMMITTING; calling
    /// again while COMMITTING retries the same commit (Java returns the
    /// pending result).
    pub fn begin_commit(&mut self) -> Result<(), ProducerError> {
        self.require_transactional("commit")?;
        self.maybe_fail_with_error()?;
        match self.kind() {
            StateKind::CommittingTransaction => Ok(()),
            _ => self.transition(TxnState::CommittingTransaction),
        }
    }

    /// `abortTransaction`: allowed from an abortable error too; again while
    /// ABORTING retries the same abort.
    pub fn begin_abort(&mut self) -> Result<(), ProducerError> {
        self.require_transactional("abort")?;
        if self.kind() != StateKind::AbortableError {
            self.maybe_fail_with_error()?;
        }
        match self.kind() {
            StateKind::AbortingTransaction => {}
            _ => self.transition(TxnState::AbortingTransaction)?,
        }
        // Nothing more is added to a transaction being aborted.
        self.pending_partitions.clear();
        Ok(())
    }

    /// EndTxn succeeded (or was skipped). v5 replies carry the bumped pair,
    /// which is adopted with fresh sequences (Java `EndTxnHandler`); v≤4
    /// keeps the pair and the sequences.
    pub fn complete_end_txn(&mut self, version: i16, producer_id: i64, epoch: i16) {
        if version >= 5 {
            self.seqs.reset(producer_id, epoch);
            self.producer_id = producer_id;
            self.epoch = epoch;
        }
        self.partitions_in_txn.clear();
        self.pending_partitions.clear();
        self.transaction_started = false;
    }

    /// Back to READY after a commit or abort.
    pub fn complete_transaction(&mut self) -> Result<(), ProducerError> {
        self.transition(TxnState::Ready)
    }

    // ----- errors ----------------------------------------------------------

    /// Classifies an error of a coordinator request (the wire client has
    /// already retried the retriable codes until its deadline).
    pub fn coordinator_error(&self, api: Api, err: WireError) -> ProducerError {
        let ctx = self.error_context();
        match &err {
            WireError::Kafka { code, .. } => {
                let code = *code;
                let fenced = matches!(code, KafkaCode::PRODUCER_FENCED | KafkaCode::INVALID_PRODUCER_EPOCH);
                match classify(api, code, &ctx) {
                    ErrorClass::Fatal if fenced => {
                        ProducerError::Fatal(format!("ProducerFencedException: {err}"), Some(code))
                    }
                    ErrorClass::Fatal => ProducerError::Fatal(err.to_string(), Some(code)),
                    ErrorClass::Abortable => ProducerError::Abortable(err.to_string(), Some(code)),
                    _ => ProducerError::Wire(err),
                }
            }
            // No version both sides support (e.g. InitProducerId v6 not
            // advertised): Java's UnsupportedVersionException, fatal.
            WireError::UnsupportedVersion { .. } => {
                ProducerError::Fatal(format!("{err} (client side)"), Some(KafkaCode::UNSUPPORTED_VERSION))
            }
            _ => ProducerError::Wire(err),
        }
    }

    /// Applies an error to the state (Java `transitionToAbortableError` /
    /// `transitionToFatalError` / `maybeTransitionToErrorState`) and returns it.
    pub fn fail(&mut self, err: ProducerError) -> ProducerError {
        match &err {
            // An abort in progress stays an abort (Java skips the transition).
            ProducerError::Abortable(msg, code)
                if self.is_transactional()
                    && self.kind() != StateKind::AbortingTransaction
                    && is_transition_valid(self.kind(), StateKind::AbortableError) =>
            {
                let completing = self.kind() == StateKind::CommittingTransaction;
                if self.protocol == TxnProtocol::V1 && self.can_bump_epoch && !completing {
                    self.epoch_bump_required = true;
                }
                self.state = TxnState::AbortableError { error: msg.clone() };
                self.error_code = *code;
            }
            ProducerError::Fatal(msg, code) => {
                self.state = TxnState::FatalError { error: msg.clone() };
                self.error_code = *code;
            }
            _ => {}
        }
        err
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(protocol: TxnProtocol) -> TxnManager {
        let mut m = TxnManager::new(Some("tid".into()), protocol);
        m.can_bump_epoch = true;
        m.begin_init().unwrap();
        m.complete_init(10, 0, None);
        assert_eq!(m.kind(), StateKind::Ready);
        m
    }

    fn is_illegal(r: Result<(), ProducerError>) -> bool {
        matches!(r, Err(ProducerError::IllegalState(_)))
    }

    #[test]
    fn protocol_and_version_choice() {
        assert_eq!(choose_protocol(2, false), TxnProtocol::V2);
        assert_eq!(choose_protocol(2, true), TxnProtocol::V1);
        assert_eq!(choose_protocol(1, false), TxnProtocol::V1);
        assert_eq!(choose_protocol(0, false), TxnProtocol::V1);
        assert_eq!(produce_versions(TxnProtocol::V2), (12, 12));
        assert_eq!(produce_versions(TxnProtocol::V1), (3, 11));
        assert_eq!(end_txn_version(TxnProtocol::V2, None, 5), 5);
        assert_eq!(end_txn_version(TxnProtocol::V1, None, 5), 4);
        assert_eq!(end_txn_version(TxnProtocol::V1, None, 3), 3);
        // Legacy recovery: exactly the version asked for, even on V2.
        assert_eq!(end_txn_version(TxnProtocol::V2, Some(4), 5), 4);
        assert!(needs_add_partitions(TxnProtocol::V1));
        assert!(!needs_add_partitions(TxnProtocol::V2));
    }

    #[test]
    fn v1_adds_partitions_before_producing_v2_does_not() {
        let tp = Tp::new("t", 0);
        let mut m = ready(TxnProtocol::V1);
        m.begin().unwrap();
        m.on_send(&tp).unwrap();
        assert!(m.pending_partitions.contains(&tp));
        assert!(!m.transaction_started, "started only once the add succeeded");
        m.on_partitions_added(std::slice::from_ref(&tp));
        assert!(m.transaction_started && m.partitions_in_txn.contains(&tp) && m.pending_partitions.is_empty());

        let mut m = ready(TxnProtocol::V2);
        m.begin().unwrap();
        m.on_send(&tp).unwrap();
        assert!(m.pending_partitions.is_empty());
        assert!(m.transaction_started);
    }

    #[test]
    fn illegal_calls_change_nothing() {
        let mut m = TxnManager::new(Some("tid".into()), TxnProtocol::V2);
        assert!(is_illegal(m.begin()));
        assert!(is_illegal(m.begin_commit()));
        assert!(is_illegal(m.begin_abort()));
        assert!(is_illegal(m.on_send(&Tp::new("t", 0))));
        assert!(is_illegal(m.check_flush()));
        assert_eq!(m.kind(), StateKind::Uninitialized);

        let mut m = ready(TxnProtocol::V2);
        assert!(is_illegal(m.begin_commit()), "commit without begin");
        assert!(is_illegal(m.begin_abort()), "abort without begin");
        assert!(is_illegal(m.on_send(&Tp::new("t", 0))), "send without begin");
        assert!(is_illegal(m.begin_init()), "init twice");
        assert_eq!(m.kind(), StateKind::Ready);
        m.begin().unwrap();
        assert!(is_illegal(m.begin()), "begin twice");
        assert!(is_illegal(m.resume(1, 1, TxnProtocol::V1)), "resume inside a transaction");
        assert!(is_illegal(m.check_prepare()), "prepare without 2PC");
        assert_eq!(m.kind(), StateKind::InTransaction);
    }

    #[test]
    fn prepared_allows_only_commit_or_abort() {
        let mut m = ready(TxnProtocol::V2);
        m.enable_2pc = true;
        m.begin().unwrap();
        m.check_prepare().unwrap();
        m.transition(TxnState::Prepared).unwrap();
        assert!(is_illegal(m.on_send(&Tp::new("t", 0))));
        assert!(is_illegal(m.begin()));
        assert!(is_illegal(m.check_prepare()));
        assert_eq!(m.kind(), StateKind::Prepared);
        m.begin_commit().unwrap();
        assert_eq!(m.kind(), StateKind::CommittingTransaction);
        let mut m2 = ready(TxnProtocol::V2);
        m2.enable_2pc = true;
        m2.begin().unwrap();
        m2.transition(TxnState::Prepared).unwrap();
        m2.begin_abort().unwrap();
        assert_eq!(m2.kind(), StateKind::AbortingTransaction);
    }

    #[test]
    fn keep_prepared_init_enters_prepared_with_the_ongoing_pair() {
        let mut m = TxnManager::new(Some("tid".into()), TxnProtocol::V2);
        m.begin_init().unwrap();
        m.complete_init(10, 3, Some((7, 2)));
        assert_eq!(m.kind(), StateKind::Prepared);
        assert_eq!((m.producer_id, m.epoch), (7, 2));
        assert!(m.transaction_started, "a commit must send EndTxn");
    }

    #[test]
    fn resume_is_local_and_starts_the_transaction() {
        let tp = Tp::new("t", 0);
        let mut m = ready(TxnProtocol::V2);
        m.begin().unwrap();
        m.on_send(&tp).unwrap();
        m.seqs.advance(&tp, 5);
        m.begin_commit().unwrap();
        m.complete_end_txn(4, 10, 0);
        m.complete_transaction().unwrap();
        // A reused producer (READY) and a fresh one (UNINITIALIZED) resume.
        m.resume(99, 4, TxnProtocol::V1).unwrap();
        assert_eq!(m.kind(), StateKind::InTransaction);
        assert_eq!((m.producer_id, m.epoch, m.protocol), (99, 4, TxnProtocol::V1));
        assert!(m.transaction_started && m.partitions_in_txn.is_empty());
        assert_eq!(m.seqs.next(&tp), 0);
        let mut fresh = TxnManager::new(Some("tid".into()), TxnProtocol::V2);
        fresh.resume(1, 0, TxnProtocol::V2).unwrap();
        assert_eq!(fresh.kind(), StateKind::InTransaction);
        let mut idem = TxnManager::new(None, TxnProtocol::V2);
        assert!(is_illegal(idem.resume(1, 0, TxnProtocol::V2)));
    }

    #[test]
    fn end_txn_v5_adopts_the_pair_and_resets_sequences_v4_keeps_them() {
        let tp = Tp::new("t", 1);
        let mut m = ready(TxnProtocol::V1);
        m.begin().unwrap();
        m.seqs.advance(&tp, 7);
        m.begin_commit().unwrap();
        m.complete_end_txn(4, -1, -1);
        m.complete_transaction().unwrap();
        assert_eq!((m.producer_id, m.epoch), (10, 0), "v4 keeps the pair");
        assert_eq!(m.seqs.next(&tp), 7, "V1 sequences carry on across commits");

        let mut m = ready(TxnProtocol::V2);
        m.begin().unwrap();
        m.seqs.advance(&tp, 7);
        m.begin_commit().unwrap();
        m.complete_end_txn(5, 10, 1);
        m.complete_transaction().unwrap();
        assert_eq!((m.producer_id, m.epoch), (10, 1));
        assert_eq!(m.seqs.next(&tp), 0, "a new epoch starts at 0");
        m.set_producer(10, 1);
        m.seqs.advance(&tp, 3);
        m.set_producer(10, 1);
        assert_eq!(m.seqs.next(&tp), 3, "same pair: kept");
        m.set_producer(10, 2);
        assert_eq!(m.seqs.next(&tp), 0, "epoch change: reset");
    }

    #[test]
    fn abortable_error_allows_only_abort_and_requires_a_v1_epoch_bump() {
        let mut m = ready(TxnProtocol::V1);
        m.begin().unwrap();
        let e = m.fail(ProducerError::Abortable("x".into(), Some(KafkaCode::INVALID_PRODUCER_EPOCH)));
        assert!(matches!(e, ProducerError::Abortable(..)));
        assert_eq!(m.kind(), StateKind::AbortableError);
        assert!(m.epoch_bump_required);
        for r in [m.begin(), m.begin_commit(), m.on_send(&Tp::new("t", 0)), m.check_flush()] {
            let err = r.unwrap_err();
            assert!(matches!(err, ProducerError::Abortable(..)), "{err}");
            assert_eq!(err.kafka_code(), Some(KafkaCode::INVALID_PRODUCER_EPOCH));
        }
        assert_eq!(m.kind(), StateKind::AbortableError);
        m.begin_abort().unwrap();
        assert_eq!(m.kind(), StateKind::AbortingTransaction);
        // An abortable error while aborting keeps the abort going.
        m.fail(ProducerError::Abortable("y".into(), None));
        assert_eq!(m.kind(), StateKind::AbortingTransaction);
        m.transition(TxnState::Initializing).unwrap();
        m.complete_init(10, 1, None);
        assert_eq!(m.kind(), StateKind::Ready);
        assert!(!m.epoch_bump_required);

        let mut v2 = ready(TxnProtocol::V2);
        v2.begin().unwrap();
        v2.fail(ProducerError::Abortable("x".into(), None));
        assert!(!v2.epoch_bump_required, "TV2: EndTxn v5 bumps anyway");
    }

    #[test]
    fn fatal_error_allows_nothing() {
        let mut m = ready(TxnProtocol::V2);
        m.begin().unwrap();
        m.fail(ProducerError::Fatal("fenced".into(), Some(KafkaCode::PRODUCER_FENCED)));
        assert_eq!(m.kind(), StateKind::FatalError);
        for r in [m.begin(), m.begin_commit(), m.begin_abort(), m.begin_init(), m.resume(1, 1, TxnProtocol::V1)] {
            let err = r.unwrap_err();
            assert!(matches!(err, ProducerError::Fatal(..)), "{err}");
            assert_eq!(err.kafka_code(), Some(KafkaCode::PRODUCER_FENCED));
        }
        assert_eq!(m.kind(), StateKind::FatalError);
    }

    #[test]
    fn coordinator_errors_map_to_classes() {
        let m = ready(TxnProtocol::V1);
        let k = |code| WireError::Kafka { api: "EndTxn".into(), code, message: None };
        let e = m.coordinator_error(Api::EndTxnCommit, k(KafkaCode::PRODUCER_FENCED));
        assert!(
            matches!(&e, ProducerError::Fatal(msg, Some(KafkaCode::PRODUCER_FENCED)) if msg.contains("ProducerFenced"))
        );
        let e = m.coordinator_error(Api::EndTxnCommit, k(KafkaCode::INVALID_PRODUCER_EPOCH));
        assert!(
            matches!(&e, ProducerError::Fatal(msg, Some(KafkaCode::INVALID_PRODUCER_EPOCH)) if msg.contains("ProducerFenced"))
        );
        let e = m.coordinator_error(Api::EndTxnCommit, k(KafkaCode::INVALID_TXN_STATE));
        assert!(matches!(e, ProducerError::Fatal(_, Some(KafkaCode::INVALID_TXN_STATE))));
        let e = m.coordinator_error(Api::EndTxnCommit, k(KafkaCode::UNKNOWN_PRODUCER_ID));
        assert!(matches!(e, ProducerError::Abortable(_, Some(KafkaCode::UNKNOWN_PRODUCER_ID))));
        let e = m.coordinator_error(Api::EndTxnCommit, k(KafkaCode::INVALID_PRODUCER_ID_MAPPING));
        assert!(matches!(e, ProducerError::Fatal(_, Some(KafkaCode::INVALID_PRODUCER_ID_MAPPING))));
        let e = m.coordinator_error(Api::InitProducerId, k(KafkaCode::UNSUPPORTED_VERSION));
        assert!(matches!(e, ProducerError::Fatal(_, Some(KafkaCode::UNSUPPORTED_VERSION))));
        let client_side =
            WireError::UnsupportedVersion { api: "InitProducerId".into(), broker: Some((0, 5)), client: (6, 6) };
        let e = m.coordinator_error(Api::InitProducerId, client_side);
        assert_eq!(e.kafka_code(), Some(KafkaCode::UNSUPPORTED_VERSION));
        // Retriable codes that outlived the retry deadline stay wire errors
        // (Java: TimeoutException, the call may be repeated).
        let exhausted = WireError::RetriesExhausted {
            what: "EndTxn".into(),
            attempts: 3,
            last: Box::new(k(KafkaCode::CONCURRENT_TRANSACTIONS)),
        };
        let e = m.coordinator_error(Api::EndTxnCommit, exhausted);
        assert!(matches!(e, ProducerError::Wire(_)));
        assert_eq!(e.kafka_code(), Some(KafkaCode::CONCURRENT_TRANSACTIONS));
    }
}
