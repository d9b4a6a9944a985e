//! Kafka error codes and their names: one name table for the whole rig.
//!
//! A run's verdict depends on telling `PRODUCER_FENCED` from
//! `INVALID_TXN_STATE` from `CONCURRENT_TRANSACTIONS`, so codes are never
//! collapsed into strings: [`KafkaCode`] keeps the number and renders Kafka's
//! own name for it, the names of Java's `org.apache.kafka.common.protocol.Errors`.
//! The wire client's errors carry it, the proxy answers with it, and scenarios
//! name the error a protocol fault injects by it ([`ErrorName`],
//! [`error_code`]), so every part of the rig spells a code the same way.
use std::fmt;

use kafka_protocol::error::ResponseError;
use serde::{Deserialize, Serialize};

use crate::api::fold;

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
    pub const UNSUPPORTED_SASL_MECHANISM: KafkaCode = KafkaCode(33);
    pub const ILLEGAL_SASL_STATE: KafkaCode = KafkaCode(34);
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
    pub const SASL_AUTHENTICATION_FAILED: KafkaCode = KafkaCode(58);
    pub const UNKNOWN_PRODUCER_ID: KafkaCode = KafkaCode(59);
    pub const PRODUCER_FENCED: KafkaCode = KafkaCode(90);
    pub const TRANSACTIONAL_ID_NOT_FOUND: KafkaCode = KafkaCode(105);
    pub const TRANSACTION_ABORTABLE: KafkaCode = KafkaCode(120);
    // Share groups (KIP-932): the codes the share consumer acts on.
    pub const UNKNOWN_MEMBER_ID: KafkaCode = KafkaCode(25);
    pub const GROUP_ID_NOT_FOUND: KafkaCode = KafkaCode(69);
    pub const UNKNOWN_TOPIC_ID: KafkaCode = KafkaCode(100);
    pub const FENCED_MEMBER_EPOCH: KafkaCode = KafkaCode(110);
    pub const INVALID_RECORD_STATE: KafkaCode = KafkaCode(121);
    pub const SHARE_SESSION_NOT_FOUND: KafkaCode = KafkaCode(122);
    pub const INVALID_SHARE_SESSION_EPOCH: KafkaCode = KafkaCode(123);
    pub const SHARE_SESSION_LIMIT_REACHED: KafkaCode = KafkaCode(133);

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

    /// A code Kafka defines (and not NONE).
    pub fn is_known(self) -> bool {
        self.0 != 0 && !self.name().starts_with("UNKNOWN_ERROR_CODE_")
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

/// A Kafka error by name (`NOT_COORDINATOR`) or code (`16`), as a scenario
/// writes the error a protocol fault answers with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ErrorName {
    Code(i16),
    Name(String),
}

/// The highest error code searched when resolving a name. Kafka 4.4.0's
/// `Errors` ends at 136; the margin covers codes `kafka-protocol` learns later.
const MAX_CODE: i16 = 400;

/// The code of a Kafka error given by name (`NOT_COORDINATOR`, also
/// `not-coordinator` or `NotCoordinator`) or by code (`16`). `NONE` (0) and
/// codes Kafka does not define are errors: a protocol fault answering "no
/// error", or an error no client knows, tests nothing the scenario says.
pub fn error_code(e: &ErrorName) -> Result<i16, String> {
    match e {
        ErrorName::Code(0) => Err("0 is NONE (no error): name an error code".to_string()),
        ErrorName::Code(c) => {
            if KafkaCode(*c).is_known() {
                Ok(*c)
            } else {
                Err(format!("{c} is not a Kafka error code"))
            }
        }
        ErrorName::Name(n) => {
            let trimmed = n.trim();
            if let Ok(c) = trimmed.parse::<i16>() {
                return error_code(&ErrorName::Code(c));
            }
            let want = fold(trimmed);
            if want == "NONE" {
                return Err("NONE is no error: name an error code".to_string());
            }
            (-1..=MAX_CODE).filter(|c| *c != 0).find(|c| fold(&KafkaCode(*c).name()) == want).ok_or_else(|| {
                let near = suggestions(&want);
                if near.is_empty() {
                    format!("{n:?} is not a Kafka error name (e.g. NOT_COORDINATOR, CONCURRENT_TRANSACTIONS)")
                } else {
                    format!("{n:?} is not a Kafka error name; did you mean {}?", near.join(" or "))
                }
            })
        }
    }
}

/// Known error names that contain the folded input or are contained in it.
fn suggestions(want: &str) -> Vec<String> {
    if want.len() < 4 {
        return Vec::new();
    }
    (-1..=MAX_CODE)
        .map(KafkaCode)
        .filter(|c| c.is_known())
        .map(KafkaCode::name)
        .filter(|n| {
            let f = fold(n);
            f.contains(want) || want.contains(&f)
        })
        .take(3)
        .collect()
}

/// Kafka's name for an error code (`16` → `NOT_COORDINATOR`); unknown codes
/// render as `UNKNOWN_ERROR_CODE_<n>`.
pub fn error_name(code: i16) -> String {
    KafkaCode(code).name()
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

    /// The named constants carry the codes Kafka gives those names.
    #[test]
    fn constants_are_named_as_kafka_names_them() {
        for (c, name) in [
            (KafkaCode::LEADER_NOT_AVAILABLE, "LEADER_NOT_AVAILABLE"),
            (KafkaCode::UNSUPPORTED_SASL_MECHANISM, "UNSUPPORTED_SASL_MECHANISM"),
            (KafkaCode::ILLEGAL_SASL_STATE, "ILLEGAL_SASL_STATE"),
            (KafkaCode::SASL_AUTHENTICATION_FAILED, "SASL_AUTHENTICATION_FAILED"),
            (KafkaCode::NOT_CONTROLLER, "NOT_CONTROLLER"),
            (KafkaCode::INVALID_REQUEST, "INVALID_REQUEST"),
            (KafkaCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
            (KafkaCode::UNKNOWN_MEMBER_ID, "UNKNOWN_MEMBER_ID"),
            (KafkaCode::GROUP_ID_NOT_FOUND, "GROUP_ID_NOT_FOUND"),
            (KafkaCode::UNKNOWN_TOPIC_ID, "UNKNOWN_TOPIC_ID"),
            (KafkaCode::FENCED_MEMBER_EPOCH, "FENCED_MEMBER_EPOCH"),
            (KafkaCode::INVALID_RECORD_STATE, "INVALID_RECORD_STATE"),
            (KafkaCode::SHARE_SESSION_NOT_FOUND, "SHARE_SESSION_NOT_FOUND"),
            (KafkaCode::INVALID_SHARE_SESSION_EPOCH, "INVALID_SHARE_SESSION_EPOCH"),
            (KafkaCode::SHARE_SESSION_LIMIT_REACHED, "SHARE_SESSION_LIMIT_REACHED"),
        ] {
            assert_eq!(c.name(), name);
        }
    }

    #[test]
    fn unknown_codes_keep_their_number() {
        assert_eq!(KafkaCode(30000).name(), "UNKNOWN_ERROR_CODE_30000");
        assert_eq!(KafkaCode(-7).name(), "UNKNOWN_ERROR_CODE_-7");
        assert!(!KafkaCode(30000).is_known());
        assert!(!KafkaCode::NONE.is_known());
        assert!(KafkaCode(136).is_known());
    }

    #[test]
    fn display_is_name_and_code() {
        assert_eq!(KafkaCode::CONCURRENT_TRANSACTIONS.to_string(), "CONCURRENT_TRANSACTIONS (51)");
        assert_eq!(KafkaCode(35).to_string(), "UNSUPPORTED_VERSION (35)");
        assert_eq!(KafkaCode(40).to_string(), "INVALID_CONFIG (40)");
    }

    #[test]
    fn camel_case_conversion() {
        assert_eq!(camel_to_screaming_snake("NotCoordinator"), "NOT_COORDINATOR");
        assert_eq!(camel_to_screaming_snake("Enable2Pc"), "ENABLE2_PC");
        assert_eq!(camel_to_screaming_snake("ABCDef"), "ABC_DEF");
        assert_eq!(camel_to_screaming_snake("X"), "X");
    }

    #[test]
    fn error_names_and_codes() {
        for (name, code) in [
            ("UNKNOWN_SERVER_ERROR", -1),
            ("REQUEST_TIMED_OUT", 7),
            ("NETWORK_EXCEPTION", 13),
            ("COORDINATOR_LOAD_IN_PROGRESS", 14),
            ("COORDINATOR_NOT_AVAILABLE", 15),
            ("NOT_COORDINATOR", 16),
            ("INVALID_PRODUCER_EPOCH", 47),
            ("INVALID_TXN_STATE", 48),
            ("CONCURRENT_TRANSACTIONS", 51),
            ("UNKNOWN_PRODUCER_ID", 59),
            ("PRODUCER_FENCED", 90),
            ("TRANSACTION_ABORTABLE", 120),
        ] {
            assert_eq!(error_code(&ErrorName::Name(name.into())), Ok(code), "{name}");
            assert_eq!(error_name(code), name);
            assert_eq!(error_code(&ErrorName::Code(code)), Ok(code));
        }
        assert_eq!(error_code(&ErrorName::Name("not-coordinator".into())), Ok(16));
        assert_eq!(error_code(&ErrorName::Name("NotCoordinator".into())), Ok(16));
        assert_eq!(error_code(&ErrorName::Name("51".into())), Ok(51));
    }

    #[test]
    fn bad_error_names_are_refused_with_a_reason() {
        let e = error_code(&ErrorName::Name("NOT_A_COORDINATOR_ERROR".into())).unwrap_err();
        assert!(e.contains("not a Kafka error name"), "{e}");
        let e = error_code(&ErrorName::Name("PRODUCER_FENCE".into())).unwrap_err();
        assert!(e.contains("PRODUCER_FENCED"), "a suggestion: {e}");
        assert!(error_code(&ErrorName::Code(0)).unwrap_err().contains("NONE"));
        assert!(error_code(&ErrorName::Name("NONE".into())).is_err());
        assert!(error_code(&ErrorName::Code(9999)).unwrap_err().contains("not a Kafka error code"));
        assert_eq!(error_name(9999), "UNKNOWN_ERROR_CODE_9999");
    }
}
