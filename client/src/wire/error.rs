//! Errors of the wire client, Kafka error codes, and the retry classification.
//!
//! Two kinds of failure travel through [`WireError`]:
//!
//! * transport failures (I/O, timeouts, a peer that hung up, a reply that does
//!   not belong to the request): the connection is unusable afterwards and the
//!   [`client`](super::client) drops and reopens it;
//! * Kafka error codes in a well-formed reply ([`WireError::Kafka`]): the
//!   connection is fine; whether to retry is decided per code by
//!   [`coordinator_retry`], which mirrors the coordinator-request handlers of
//!   Kafka's Java `TransactionManager`.
//!
//! A run's verdict depends on telling `PRODUCER_FENCED` from
//! `INVALID_TXN_STATE` from `CONCURRENT_TRANSACTIONS`, so Kafka codes are never
//! collapsed into strings: [`KafkaCode`] (from `sinkhole-kafka`, the rig's one
//! name table) keeps the number and renders Kafka's own name for it.

use std::fmt;

use sinkhole_kafka::FrameError;

pub use sinkhole_kafka::KafkaCode;

/// Everything that can go wrong talking to a broker.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// A socket read or write failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),

    /// Connecting, or a whole request/response exchange, took too long.
    /// Like Java's `NetworkClient` on a request timeout, the connection is
    /// considered broken afterwards: the late reply may still arrive.
    #[error("timed out: {what}")]
    Timeout { what: String },

    /// The peer closed the connection before a whole reply arrived.
    #[error("connection to {peer} closed by the peer")]
    Disconnected { peer: String },

    /// The TLS handshake was refused: the broker's certificate does not chain to the CA or
    /// does not name the host, or the two sides share no protocol version or cipher. No retry
    /// changes that (Java's `SslAuthenticationException` is fatal to the client too).
    #[error("TLS with {peer} failed: {detail}")]
    Tls { peer: String, detail: String },

    /// A frame or message could not be encoded or decoded.
    #[error("codec error: {0}")]
    Codec(String),

    /// The reply carried another request's correlation id (Java's
    /// `NetworkClient` treats this as a broken connection too).
    #[error("correlation id mismatch: expected {expected}, got {got}")]
    CorrelationMismatch { expected: i32, got: i32 },

    /// The reply does not answer the request: it names a partition the
    /// request did not, or one twice. The byte stream is in step (the
    /// correlation id matched), but no answer in the reply can be trusted.
    #[error("{api} reply does not match the request: {detail}")]
    ReplyMismatch { api: String, detail: String },

    /// No version of `api` is supported by both sides. `broker` is `None`
    /// when the broker does not advertise the API at all.
    #[error("{api}: no common version (broker {}, client {}..={})", fmt_range(.broker), .client.0, .client.1)]
    UnsupportedVersion { api: String, broker: Option<(i16, i16)>, client: (i16, i16) },

    /// The broker answered with a Kafka error code.
    #[error("{api} failed: {code}{}", .message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Kafka { api: String, code: KafkaCode, message: Option<String> },

    /// No address in the bootstrap list (or the known brokers) answered.
    #[error("no broker reachable (tried {}): {last}", .tried.join(", "))]
    NoBrokerReachable { tried: Vec<String>, last: String },

    /// A retriable condition persisted past the retry deadline.
    #[error("{what}: gave up after {attempts} attempts; last error: {last}")]
    RetriesExhausted { what: String, attempts: u32, last: Box<WireError> },
}

fn fmt_range(r: &Option<(i16, i16)>) -> String {
    match r {
        Some((lo, hi)) => format!("{lo}..={hi}"),
        None => "does not advertise it".to_string(),
    }
}

impl WireError {
    /// The Kafka error code carried by this error, looking through
    /// [`WireError::RetriesExhausted`].
    pub fn kafka_code(&self) -> Option<KafkaCode> {
        match self {
            WireError::Kafka { code, .. } => Some(*code),
            WireError::RetriesExhausted { last, .. } => last.kafka_code(),
            _ => None,
        }
    }

    /// True when the connection that produced this error cannot be used
    /// again: the exchange was cut off, so the byte stream is out of step.
    pub fn is_connection_error(&self) -> bool {
        matches!(
            self,
            WireError::Io(_)
                | WireError::Timeout { .. }
                | WireError::Disconnected { .. }
                | WireError::CorrelationMismatch { .. }
        )
    }

    pub(crate) fn kafka(api: &str, code: KafkaCode, message: Option<String>) -> Self {
        WireError::Kafka { api: api.to_string(), code, message }
    }

    pub fn codec(context: &str, err: impl fmt::Display) -> Self {
        WireError::Codec(format!("{context}: {err}"))
    }
}

/// A frame that cannot be cut or written is a codec error; its message says
/// which (e.g. "frame of 1025 bytes exceeds the maximum of 1024").
impl From<FrameError> for WireError {
    fn from(e: FrameError) -> Self {
        WireError::Codec(e.to_string())
    }
}

/// What the retry layer does with an error code from a coordinator request
/// (FindCoordinator, InitProducerId, AddPartitionsToTxn, EndTxn, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoordinatorAction {
    /// Back off and send the same request to the same broker again.
    Retry,
    /// Forget the coordinator, look it up again (FindCoordinator), back off,
    /// then resend.
    RediscoverAndRetry,
    /// Not retriable: hand the exact code to the caller.
    Fail,
}

/// Classification of a coordinator-request error code.
///
/// Mirrors the `TxnRequestHandler` subclasses of Kafka's Java
/// `TransactionManager` (InitProducerIdHandler, AddPartitionsToTxnHandler,
/// EndTxnHandler; table in `docs/PROTOCOL.md` §2): `NOT_COORDINATOR` and
/// `COORDINATOR_NOT_AVAILABLE` trigger `lookupCoordinator` + `reenqueue`;
/// `COORDINATOR_LOAD_IN_PROGRESS` and `CONCURRENT_TRANSACTIONS` just
/// `reenqueue`; `REQUEST_TIMED_OUT`, `NOT_ENOUGH_REPLICAS` and
/// `NOT_LEADER_OR_FOLLOWER` are retriable exceptions that are re-enqueued
/// too. Everything else (fenced, invalid state, unknown producer id,
/// authorization, unsupported version, …) is returned to the caller, who
/// decides between abortable and fatal the way its sink mode requires.
pub fn coordinator_retry(code: KafkaCode) -> CoordinatorAction {
    match code {
        KafkaCode::NOT_COORDINATOR | KafkaCode::COORDINATOR_NOT_AVAILABLE => CoordinatorAction::RediscoverAndRetry,
        KafkaCode::COORDINATOR_LOAD_IN_PROGRESS
        | KafkaCode::CONCURRENT_TRANSACTIONS
        | KafkaCode::REQUEST_TIMED_OUT
        | KafkaCode::NOT_ENOUGH_REPLICAS
        | KafkaCode::NOT_LEADER_OR_FOLLOWER => CoordinatorAction::Retry,
        _ => CoordinatorAction::Fail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_name_and_code() {
        let e = WireError::kafka("EndTxn", KafkaCode::PRODUCER_FENCED, None);
        assert_eq!(e.to_string(), "EndTxn failed: PRODUCER_FENCED (90)");
        let e = WireError::kafka("CreateTopics", KafkaCode(40), Some("bad config".into()));
        assert_eq!(e.to_string(), "CreateTopics failed: INVALID_CONFIG (40): bad config");
    }

    #[test]
    fn coordinator_retry_table() {
        use CoordinatorAction::*;
        let table: &[(KafkaCode, CoordinatorAction)] = &[
            (KafkaCode::NOT_COORDINATOR, RediscoverAndRetry),
            (KafkaCode::COORDINATOR_NOT_AVAILABLE, RediscoverAndRetry),
            (KafkaCode::COORDINATOR_LOAD_IN_PROGRESS, Retry),
            (KafkaCode::CONCURRENT_TRANSACTIONS, Retry),
            (KafkaCode::REQUEST_TIMED_OUT, Retry),
            (KafkaCode::NOT_ENOUGH_REPLICAS, Retry),
            (KafkaCode::NOT_LEADER_OR_FOLLOWER, Retry),
            (KafkaCode::PRODUCER_FENCED, Fail),
            (KafkaCode::INVALID_PRODUCER_EPOCH, Fail),
            (KafkaCode::INVALID_TXN_STATE, Fail),
            (KafkaCode::UNKNOWN_PRODUCER_ID, Fail),
            (KafkaCode::INVALID_PRODUCER_ID_MAPPING, Fail),
            (KafkaCode::TRANSACTION_ABORTABLE, Fail),
            (KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Fail),
            (KafkaCode::UNSUPPORTED_VERSION, Fail),
            (KafkaCode::INVALID_TRANSACTION_TIMEOUT, Fail),
            (KafkaCode::UNKNOWN_SERVER_ERROR, Fail),
            (KafkaCode(30000), Fail),
        ];
        for &(code, action) in table {
            assert_eq!(coordinator_retry(code), action, "{code}");
        }
    }

    #[test]
    fn kafka_code_looks_through_retries_exhausted() {
        let e = WireError::RetriesExhausted {
            what: "EndTxn".into(),
            attempts: 3,
            last: Box::new(WireError::kafka("EndTxn", KafkaCode::CONCURRENT_TRANSACTIONS, None)),
        };
        assert_eq!(e.kafka_code(), Some(KafkaCode::CONCURRENT_TRANSACTIONS));
        assert!(!e.is_connection_error());
        assert!(WireError::Disconnected { peer: "x".into() }.is_connection_error());
    }

    #[test]
    fn frame_errors_are_codec_errors() {
        let e = WireError::from(FrameError::TooLarge { size: 1025, max: 1024 });
        assert!(matches!(e, WireError::Codec(ref m) if m.contains("1025")), "{e}");
        let e = WireError::from(FrameError::NegativeSize(-2));
        assert!(matches!(e, WireError::Codec(ref m) if m.contains("-2")), "{e}");
        assert!(!e.is_connection_error());
    }

    #[test]
    fn unsupported_version_display() {
        let e = WireError::UnsupportedVersion { api: "InitProducerId".into(), broker: Some((0, 5)), client: (6, 6) };
        assert_eq!(e.to_string(), "InitProducerId: no common version (broker 0..=5, client 6..=6)");
    }
}
