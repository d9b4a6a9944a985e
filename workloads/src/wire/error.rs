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
//! collapsed into strings: [`KafkaCode`] keeps the number and renders Kafka's
//! own name for it (the names of Java's `org.apache.kafka.common.protocol.Errors`).

use std::fmt;

use kafka_protocol::error::ResponseError;

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

    /// A frame or message could not be encoded or decoded.
    #[error("codec error: {0}")]
    Codec(String),

    /// The reply carried another request's correlation id (Java's
    /// `NetworkClient` treats this as a broken connection too).
    #[error("correlation id mismatch: expected {expected}, got {got}")]
    CorrelationMismatch { expected: i32, got: i32 },

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

    pub(crate) fn codec(context: &str, err: impl fmt::Display) -> Self {
        WireError::Codec(format!("{context}: {err}"))
    }
}

/// A Kafka protocol error code (`0` = no error).
///
/// [`KafkaCode::name`] gives the name Kafka itself uses (Java's
/// `Errors` enum), e.g. `CONCURRENT_TRANSACTIONS`; `Display` is
/// `"NAME (code)"`, e.g. `CONCURRENT_TRANSACTIONS (51)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaCode(pub i16);

impl KafkaCode {
    pub const NONE: KafkaCode = KafkaCode(0);
    pub const UNKNOWN_SERVER_ERROR: KafkaCode = KafkaCode(-1);
    pub const UNKNOWN_TOPIC_OR_PARTITION: KafkaCode = KafkaCode(3);
    pub const LEADER_NOT_AVAILABLE: KafkaCode = KafkaCode(5);
    pub const NOT_LEADER_OR_FOLLOWER: KafkaCode = KafkaCode(6);
    pub const REQUEST_TIMED_OUT: KafkaCode = KafkaCode(7);
    pub const COORDINATOR_LOAD_IN_PROGRESS: KafkaCode = KafkaCode(14);
    pub const COORDINATOR_NOT_AVAILABLE: KafkaCode = KafkaCode(15);
    pub const NOT_COORDINATOR: KafkaCode = KafkaCode(16);
    pub const NOT_ENOUGH_REPLICAS: KafkaCode = KafkaCode(19);
    pub const UNSUPPORTED_VERSION: KafkaCode = KafkaCode(35);
    pub const TOPIC_ALREADY_EXISTS: KafkaCode = KafkaCode(36);
    pub const NOT_CONTROLLER: KafkaCode = KafkaCode(41);
    pub const INVALID_REQUEST: KafkaCode = KafkaCode(42);
    pub const OUT_OF_ORDER_SEQUENCE_NUMBER: KafkaCode = KafkaCode(45);
    pub const DUPLICATE_SEQUENCE_NUMBER: KafkaCode = KafkaCode(46);
    pub const INVALID_PRODUCER_EPOCH: KafkaCode = KafkaCode(47);
    pub const INVALID_TXN_STATE: KafkaCode = KafkaCode(48);
    pub const INVALID_PRODUCER_ID_MAPPING: KafkaCode = KafkaCode(49);
    pub const INVALID_TRANSACTION_TIMEOUT: KafkaCode = KafkaCode(50);
    pub const CONCURRENT_TRANSACTIONS: KafkaCode = KafkaCode(51);
    pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: KafkaCode = KafkaCode(53);
    pub const OPERATION_NOT_ATTEMPTED: KafkaCode = KafkaCode(55);
    pub const UNKNOWN_PRODUCER_ID: KafkaCode = KafkaCode(59);
    pub const PRODUCER_FENCED: KafkaCode = KafkaCode(90);
    pub const TRANSACTIONAL_ID_NOT_FOUND: KafkaCode = KafkaCode(105);
    pub const TRANSACTION_ABORTABLE: KafkaCode = KafkaCode(120);

    /// `None` for 0 (no error), else the code.
    pub fn from_code(code: i16) -> Option<KafkaCode> {
        (code != 0).then_some(KafkaCode(code))
    }

    pub fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// The `kafka-protocol` crate's view of the code (`None` for 0).
    pub fn response_error(self) -> Option<ResponseError> {
        ResponseError::try_from_code(self.0)
    }

    /// Kafka's name for the code, e.g. `NOT_COORDINATOR`.
    ///
    /// Derived from the variant names of `kafka-protocol`'s [`ResponseError`]
    /// (CamelCase → SCREAMING_SNAKE); checked against every code of Kafka
    /// 4.4.0's `Errors` enum that the crate knows. Codes newer than the crate
    /// come from a short table; anything else is `UNKNOWN_ERROR_CODE_<n>`.
    pub fn name(self) -> String {
        match ResponseError::try_from_code(self.0) {
            None => "NONE".to_string(),
            Some(ResponseError::Unknown(code)) => match newer_code_name(code) {
                Some(name) => name.to_string(),
                None => format!("UNKNOWN_ERROR_CODE_{code}"),
            },
            Some(known) => camel_to_screaming_snake(&known.to_string()),
        }
    }
}

impl fmt::Display for KafkaCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

impl From<i16> for KafkaCode {
    fn from(code: i16) -> Self {
        KafkaCode(code)
    }
}

/// Codes added to Kafka after the `kafka-protocol` release we build with
/// (present in Kafka 4.4.0's `Errors`).
fn newer_code_name(code: i16) -> Option<&'static str> {
    Some(match code {
        134 => "GROUP_DELETION_FAILED",
        135 => "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED",
        136 => "CONTROLLER_ID_NOT_REGISTERED",
        _ => return None,
    })
}

/// `ConcurrentTransactions` → `CONCURRENT_TRANSACTIONS`. An underscore goes
/// before an upper-case letter that follows a lower-case letter or digit, or
/// that starts a new word after an acronym (`ABCDef` → `ABC_DEF`).
fn camel_to_screaming_snake(camel: &str) -> String {
    let chars: Vec<char> = camel.chars().collect();
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_ascii_uppercase() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase() || prev.is_ascii_digit() || (prev.is_ascii_uppercase() && next_lower) {
                out.push('_');
            }
        }
        out.push(c.to_ascii_uppercase());
    }
    out
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
/// EndTxnHandler; table in `PROTOCOL.md` §2): `NOT_COORDINATOR` and
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

    /// Transaction-relevant codes and the names Kafka 4.4.0's
    /// `org.apache.kafka.common.protocol.Errors` gives them.
    const KNOWN: &[(i16, &str)] = &[
        (-1, "UNKNOWN_SERVER_ERROR"),
        (0, "NONE"),
        (3, "UNKNOWN_TOPIC_OR_PARTITION"),
        (6, "NOT_LEADER_OR_FOLLOWER"),
        (7, "REQUEST_TIMED_OUT"),
        (14, "COORDINATOR_LOAD_IN_PROGRESS"),
        (15, "COORDINATOR_NOT_AVAILABLE"),
        (16, "NOT_COORDINATOR"),
        (17, "INVALID_TOPIC_EXCEPTION"),
        (19, "NOT_ENOUGH_REPLICAS"),
        (35, "UNSUPPORTED_VERSION"),
        (36, "TOPIC_ALREADY_EXISTS"),
        (45, "OUT_OF_ORDER_SEQUENCE_NUMBER"),
        (46, "DUPLICATE_SEQUENCE_NUMBER"),
        (47, "INVALID_PRODUCER_EPOCH"),
        (48, "INVALID_TXN_STATE"),
        (49, "INVALID_PRODUCER_ID_MAPPING"),
        (50, "INVALID_TRANSACTION_TIMEOUT"),
        (51, "CONCURRENT_TRANSACTIONS"),
        (52, "TRANSACTION_COORDINATOR_FENCED"),
        (53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
        (55, "OPERATION_NOT_ATTEMPTED"),
        (59, "UNKNOWN_PRODUCER_ID"),
        (90, "PRODUCER_FENCED"),
        (105, "TRANSACTIONAL_ID_NOT_FOUND"),
        (120, "TRANSACTION_ABORTABLE"),
        (135, "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED"),
    ];

    #[test]
    fn names_match_kafka() {
        for &(code, name) in KNOWN {
            assert_eq!(KafkaCode(code).name(), name, "code {code}");
        }
    }

    #[test]
    fn unknown_codes_keep_their_number() {
        assert_eq!(KafkaCode(30000).name(), "UNKNOWN_ERROR_CODE_30000");
        assert_eq!(KafkaCode(-7).name(), "UNKNOWN_ERROR_CODE_-7");
    }

    #[test]
    fn display_is_name_and_code() {
        assert_eq!(KafkaCode::CONCURRENT_TRANSACTIONS.to_string(), "CONCURRENT_TRANSACTIONS (51)");
        assert_eq!(KafkaCode(35).to_string(), "UNSUPPORTED_VERSION (35)");
        let e = WireError::kafka("EndTxn", KafkaCode::PRODUCER_FENCED, None);
        assert_eq!(e.to_string(), "EndTxn failed: PRODUCER_FENCED (90)");
        let e = WireError::kafka("CreateTopics", KafkaCode(40), Some("bad config".into()));
        assert_eq!(e.to_string(), "CreateTopics failed: INVALID_CONFIG (40): bad config");
    }

    #[test]
    fn camel_case_conversion() {
        assert_eq!(camel_to_screaming_snake("NotCoordinator"), "NOT_COORDINATOR");
        assert_eq!(camel_to_screaming_snake("Enable2Pc"), "ENABLE2_PC");
        assert_eq!(camel_to_screaming_snake("ABCDef"), "ABC_DEF");
        assert_eq!(camel_to_screaming_snake("X"), "X");
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
    fn unsupported_version_display() {
        let e = WireError::UnsupportedVersion { api: "InitProducerId".into(), broker: Some((0, 5)), client: (6, 6) };
        assert_eq!(e.to_string(), "InitProducerId: no common version (broker 0..=5, client 6..=6)");
    }
}
