//! Error classification per API: retry, abortable or fatal.
//!
//! The table is `docs/PROTOCOL.md` §2, taken from the handlers of Kafka's Java
//! `TransactionManager` (`InitProducerIdHandler`, `AddPartitionsToTxnHandler`,
//! `EndTxnHandler`, `maybeTransitionToErrorState`) and `Sender.completeBatch`
//! / `canRetry` for Produce. The wire client already retries the retriable
//! coordinator codes ([`coordinator_retry`](crate::wire::coordinator_retry));
//! what reaches [`classify`] for a coordinator request is the final code, but
//! the function answers for every code so the whole table is testable here.

use crate::wire::{KafkaCode, WireError};

/// The request whose error is classified. EndTxn is split because
/// TRANSACTION_ABORTABLE is abortable on commit but fatal on abort (4.1+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    InitProducerId,
    AddPartitionsToTxn,
    Produce,
    EndTxnCommit,
    EndTxnAbort,
}

/// What the producer does with an error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Not an error for this request (NONE; DUPLICATE_SEQUENCE_NUMBER on Produce).
    Success,
    /// Back off and resend (Produce: after refreshing metadata).
    Retry,
    /// Look the coordinator up again, back off, resend.
    Rediscover,
    /// ABORTABLE_ERROR: the transaction must be aborted.
    Abortable,
    /// FATAL_ERROR: the producer is unusable.
    Fatal,
}

/// Facts that decide the codes whose class depends on the situation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ErrorContext {
    /// The producer speaks Transactions V2 (Produce v12+, EndTxn v5).
    pub protocol_v2: bool,
    /// The epoch can be bumped after an abort (InitProducerId ≥ v3, or TV2):
    /// Java's `canBumpEpoch` / `coordinatorSupportsBumpingEpoch`.
    pub can_bump_epoch: bool,
    /// Produce OUT_OF_ORDER_SEQUENCE_NUMBER: an earlier batch of the same
    /// partition is still in flight, so this one is not the next expected
    /// (Java `Sender.canRetry` → `TransactionManager.canRetry`).
    pub earlier_batch_in_flight: bool,
    /// Produce UNKNOWN_PRODUCER_ID: the broker's log start offset is unknown
    /// (-1) or past our last acked offset, i.e. the producer state was lost
    /// to retention/truncation (Java `TransactionManager.canRetry`).
    pub producer_state_lost: bool,
}

/// The class of `code` in a reply to `api`.
pub fn classify(api: Api, code: KafkaCode, ctx: &ErrorContext) -> ErrorClass {
    use Api::*;
    use ErrorClass::*;
    if code.is_ok() {
        return Success;
    }
    let coordinator_api = matches!(api, InitProducerId | AddPartitionsToTxn | EndTxnCommit | EndTxnAbort);
    match code {
        KafkaCode::NOT_COORDINATOR | KafkaCode::COORDINATOR_NOT_AVAILABLE => {
            // Produce: the leader maps a coordinator failure of its implicit
            // add (TV2) to NOT_ENOUGH_REPLICAS; the raw codes are retriable too.
            if coordinator_api {
                Rediscover
            } else {
                Retry
            }
        }
        KafkaCode::COORDINATOR_LOAD_IN_PROGRESS => Retry,
        KafkaCode::CONCURRENT_TRANSACTIONS => match api {
            // Only a TV2 leader (implicit add) can answer it to Produce.
            Produce if !ctx.protocol_v2 => Abortable,
            _ => Retry,
        },
        KafkaCode::REQUEST_TIMED_OUT | KafkaCode::NOT_LEADER_OR_FOLLOWER | KafkaCode::NOT_ENOUGH_REPLICAS => Retry,
        KafkaCode::PRODUCER_FENCED => Fatal,
        KafkaCode::INVALID_PRODUCER_EPOCH => match api {
            // The leader reports a coordinator-side fence as INVALID_PRODUCER_EPOCH.
            Produce => Abortable,
            _ => Fatal,
        },
        KafkaCode::INVALID_TXN_STATE => match api {
            Produce => Abortable,
            _ => Fatal,
        },
        KafkaCode::UNKNOWN_PRODUCER_ID => match api {
            InitProducerId => Fatal,
            Produce if ctx.producer_state_lost => Retry,
            Produce => Abortable,
            _ if ctx.can_bump_epoch => Abortable,
            _ => Fatal,
        },
        KafkaCode::TRANSACTION_ABORTABLE => match api {
            EndTxnAbort => Fatal,
            _ => Abortable,
        },
        KafkaCode::INVALID_PRODUCER_ID_MAPPING => Fatal,
        KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER => match api {
            Produce if ctx.earlier_batch_in_flight => Retry,
            Produce => Abortable,
            _ => unexpected(api),
        },
        KafkaCode::DUPLICATE_SEQUENCE_NUMBER => match api {
            // The broker already has this batch (a retry of an appended one).
            Produce => Success,
            _ => unexpected(api),
        },
        KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED => match api {
            // Java: initTransactions throws, the state is ABORTABLE_ERROR.
            InitProducerId => Abortable,
            _ => Fatal,
        },
        // Java makes INVALID_TRANSACTION_TIMEOUT on Produce abortable (it is
        // not in `maybeTransitionToErrorState`'s fatal list); no broker
        // answers a Produce with it, and fatal here is the stricter reading.
        KafkaCode::UNSUPPORTED_VERSION | KafkaCode::INVALID_TRANSACTION_TIMEOUT => match api {
            AddPartitionsToTxn => Abortable,
            _ => Fatal,
        },
        // CLUSTER_AUTHORIZATION_FAILED: fatal for every API here. Java's
        // `maybeTransitionToErrorState` makes it fatal for Produce and the
        // EndTxnHandler treats it as unexpected (fatal), but the
        // InitProducerIdHandler and AddPartitionsToTxnHandler make it
        // abortable (docs/PROTOCOL.md §2 lists the differences).
        KafkaCode(31) => Fatal,
        // Produce: other retriable codes (LEADER_NOT_AVAILABLE,
        // UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        // KAFKA_STORAGE_ERROR, …) are retried by `Sender.canRetry`.
        _ if api == Produce && code.response_error().is_some_and(|e| e.is_retriable()) => Retry,
        _ => unexpected(api),
    }
}

/// Codes outside the table: InitProducerId and EndTxn fail fatally with a
/// generic KafkaException; AddPartitionsToTxn and Produce make the
/// transaction abortable (Java's handlers' `else` branches).
fn unexpected(api: Api) -> ErrorClass {
    match api {
        Api::InitProducerId | Api::EndTxnCommit | Api::EndTxnAbort => ErrorClass::Fatal,
        Api::AddPartitionsToTxn | Api::Produce => ErrorClass::Abortable,
    }
}

#[cfg(test)]
mod tests {
    use super::Api::*;
    use super::ErrorClass::*;
    use super::*;

    const APIS: [Api; 5] = [InitProducerId, AddPartitionsToTxn, Produce, EndTxnCommit, EndTxnAbort];

    /// One row of docs/PROTOCOL.md §2: the class per API, in the order of `APIS`.
    fn row(code: KafkaCode, ctx: &ErrorContext, expected: [ErrorClass; 5]) {
        for (api, want) in APIS.iter().zip(expected) {
            assert_eq!(classify(*api, code, ctx), want, "{code} on {api:?} with {ctx:?}");
        }
    }

    #[test]
    fn table_rows() {
        let v1 = ErrorContext { can_bump_epoch: true, ..Default::default() };
        let v2 = ErrorContext { protocol_v2: true, can_bump_epoch: true, ..Default::default() };
        row(KafkaCode::NOT_COORDINATOR, &v1, [Rediscover, Rediscover, Retry, Rediscover, Rediscover]);
        row(KafkaCode::COORDINATOR_NOT_AVAILABLE, &v1, [Rediscover, Rediscover, Retry, Rediscover, Rediscover]);
        row(KafkaCode::COORDINATOR_LOAD_IN_PROGRESS, &v1, [Retry; 5]);
        row(KafkaCode::CONCURRENT_TRANSACTIONS, &v2, [Retry; 5]);
        row(KafkaCode::CONCURRENT_TRANSACTIONS, &v1, [Retry, Retry, Abortable, Retry, Retry]);
        for code in [KafkaCode::REQUEST_TIMED_OUT, KafkaCode::NOT_LEADER_OR_FOLLOWER, KafkaCode::NOT_ENOUGH_REPLICAS] {
            row(code, &v1, [Retry; 5]);
        }
        row(KafkaCode::PRODUCER_FENCED, &v1, [Fatal; 5]);
        row(KafkaCode::INVALID_PRODUCER_EPOCH, &v1, [Fatal, Fatal, Abortable, Fatal, Fatal]);
        row(KafkaCode::INVALID_TXN_STATE, &v1, [Fatal, Fatal, Abortable, Fatal, Fatal]);
        row(KafkaCode::TRANSACTION_ABORTABLE, &v1, [Abortable, Abortable, Abortable, Abortable, Fatal]);
        row(KafkaCode::INVALID_PRODUCER_ID_MAPPING, &v1, [Fatal; 5]);
        row(KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, &v1, [Abortable, Fatal, Fatal, Fatal, Fatal]);
        row(KafkaCode::UNSUPPORTED_VERSION, &v1, [Fatal, Abortable, Fatal, Fatal, Fatal]);
        row(KafkaCode::INVALID_TRANSACTION_TIMEOUT, &v1, [Fatal, Abortable, Fatal, Fatal, Fatal]);
    }

    #[test]
    fn unknown_producer_id_depends_on_epoch_bump_and_log_state() {
        let bump = ErrorContext { can_bump_epoch: true, ..Default::default() };
        let no_bump = ErrorContext::default();
        row(KafkaCode::UNKNOWN_PRODUCER_ID, &bump, [Fatal, Abortable, Abortable, Abortable, Abortable]);
        row(KafkaCode::UNKNOWN_PRODUCER_ID, &no_bump, [Fatal, Fatal, Abortable, Fatal, Fatal]);
        let lost = ErrorContext { producer_state_lost: true, ..bump };
        assert_eq!(classify(Produce, KafkaCode::UNKNOWN_PRODUCER_ID, &lost), Retry);
    }

    #[test]
    fn produce_sequence_codes() {
        let ctx = ErrorContext::default();
        assert_eq!(classify(Produce, KafkaCode::DUPLICATE_SEQUENCE_NUMBER, &ctx), Success);
        assert_eq!(classify(Produce, KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER, &ctx), Abortable);
        let behind = ErrorContext { earlier_batch_in_flight: true, ..ctx };
        assert_eq!(classify(Produce, KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER, &behind), Retry);
        // Not expected from coordinators: treated as any unexpected code.
        assert_eq!(classify(EndTxnCommit, KafkaCode::DUPLICATE_SEQUENCE_NUMBER, &ctx), Fatal);
        assert_eq!(classify(AddPartitionsToTxn, KafkaCode::OUT_OF_ORDER_SEQUENCE_NUMBER, &ctx), Abortable);
    }

    #[test]
    fn other_codes() {
        let ctx = ErrorContext::default();
        assert_eq!(classify(Produce, KafkaCode::NONE, &ctx), Success);
        assert_eq!(classify(EndTxnAbort, KafkaCode::NONE, &ctx), Success);
        // Retriable per the crate (Sender.canRetry): metadata refresh + retry.
        assert_eq!(classify(Produce, KafkaCode::UNKNOWN_TOPIC_OR_PARTITION, &ctx), Retry);
        assert_eq!(classify(Produce, KafkaCode::LEADER_NOT_AVAILABLE, &ctx), Retry);
        // Unknown codes: generic fatal on IPI/EndTxn, abortable on Add/Produce.
        row(KafkaCode::UNKNOWN_SERVER_ERROR, &ctx, [Fatal, Abortable, Abortable, Fatal, Fatal]);
        row(KafkaCode(31), &ctx, [Fatal; 5]);
    }
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
