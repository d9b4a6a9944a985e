//! Kafka API and error names as scenarios write them, and back.
//!
//! Protocol faults name the frames they act on (`apis: [EndTxn]`) and the
//! error they answer with (`error: CONCURRENT_TRANSACTIONS`); validation, the
//! proxy and reports go through these functions so every part of the rig
//! spells a name the same way.
//!
//! * API names are the message names of Kafka's JSON schemas (`EndTxn`,
//!   `InitProducerId`), which are the variant names of `kafka-protocol`'s
//!   [`ApiKey`]; Java's `ApiKeys` enum spells the same keys `END_TXN`, so the
//!   match ignores case, `_` and `-`.
//! * Error names are those of Java's `org.apache.kafka.common.protocol.Errors`
//!   (`NOT_COORDINATOR`), rendered by the wire client's [`KafkaCode::name`]:
//!   one name table for the whole rig.
use kafka_protocol::messages::ApiKey;
use sinkhole_workloads::wire::error::KafkaCode;

use crate::scenario::ErrorName;

/// Upper-case letters and digits only: `END_TXN`, `end-txn` and `EndTxn` all
/// become `ENDTXN`.
fn fold(s: &str) -> String {
    s.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_uppercase()).collect()
}

/// The API key of a Kafka API named as Kafka spells it (`EndTxn`, or Java's
/// `END_TXN`); case, `_` and `-` do not matter.
pub fn api_key(name: &str) -> Option<i16> {
    let want = fold(name);
    if want.is_empty() {
        return None;
    }
    ApiKey::iter().find(|k| fold(&format!("{k:?}")) == want).map(|k| k as i16)
}

/// The name of an API key (`26` → `EndTxn`).
pub fn api_name(key: i16) -> Option<&'static str> {
    // `ApiKey`'s Debug output is its variant name; leak-free static names
    // come from the table below, built once from it.
    static NAMES: std::sync::OnceLock<Vec<(i16, &'static str)>> = std::sync::OnceLock::new();
    let names = NAMES
        .get_or_init(|| ApiKey::iter().map(|k| (k as i16, &*Box::leak(format!("{k:?}").into_boxed_str()))).collect());
    names.iter().find(|(k, _)| *k == key).map(|(_, n)| *n)
}

/// Every API name `kafka-protocol` knows, in key order (for error messages).
pub fn api_names() -> Vec<&'static str> {
    ApiKey::iter().filter_map(|k| api_name(k as i16)).collect()
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
            if is_known(*c) {
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

fn is_known(code: i16) -> bool {
    code != 0 && !KafkaCode(code).name().starts_with("UNKNOWN_ERROR_CODE_")
}

/// Known error names that contain the folded input or are contained in it.
fn suggestions(want: &str) -> Vec<String> {
    if want.len() < 4 {
        return Vec::new();
    }
    (-1..=MAX_CODE)
        .filter(|c| is_known(*c))
        .map(|c| KafkaCode(c).name())
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

    #[test]
    fn api_names_as_kafka_spells_them() {
        for (name, key) in [
            ("Produce", 0),
            ("Fetch", 1),
            ("Metadata", 3),
            ("FindCoordinator", 10),
            ("ApiVersions", 18),
            ("InitProducerId", 22),
            ("AddPartitionsToTxn", 24),
            ("AddOffsetsToTxn", 25),
            ("EndTxn", 26),
            ("WriteTxnMarkers", 27),
            ("TxnOffsetCommit", 28),
            ("DescribeTransactions", 65),
            ("ListTransactions", 66),
        ] {
            assert_eq!(api_key(name), Some(key), "{name}");
            assert_eq!(api_name(key), Some(name), "{key}");
        }
    }

    #[test]
    fn api_names_ignore_case_and_java_style() {
        assert_eq!(api_key("END_TXN"), Some(26));
        assert_eq!(api_key("endtxn"), Some(26));
        assert_eq!(api_key("init-producer-id"), Some(22));
        assert_eq!(api_key("ADD_PARTITIONS_TO_TXN"), Some(24));
        assert_eq!(api_key("EndTransaction"), None);
        assert_eq!(api_key(""), None);
        assert_eq!(api_key("_"), None);
        assert_eq!(api_name(-1), None);
        assert_eq!(api_name(88), None, "88 is not assigned in kafka-protocol 0.18");
        assert!(api_names().len() > 80);
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
