//! Kafka API names and keys, as Kafka spells them.
//!
//! API names are the message names of Kafka's JSON schemas (`EndTxn`,
//! `InitProducerId`), which are the variant names of `kafka-protocol`'s
//! [`ApiKey`]; Java's `ApiKeys` enum spells the same keys `END_TXN`, so the
//! lookup by name ignores case, `_` and `-`. Scenarios name the frames a
//! protocol fault acts on this way (`apis: [EndTxn]`), and the proxy describes
//! the frames it acted on with the same names.
use std::sync::OnceLock;

use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::Request;

use crate::frame::FrameError;

/// Upper-case letters and digits only: `END_TXN`, `end-txn` and `EndTxn` all
/// become `ENDTXN`.
pub(crate) fn fold(s: &str) -> String {
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
    // `ApiKey`'s Debug output is its variant name; static names come from
    // this table, built (and leaked) once from it.
    static NAMES: OnceLock<Vec<(i16, &'static str)>> = OnceLock::new();
    let names = NAMES
        .get_or_init(|| ApiKey::iter().map(|k| (k as i16, &*Box::leak(format!("{k:?}").into_boxed_str()))).collect());
    names.iter().find(|(k, _)| *k == key).map(|(_, n)| *n)
}

/// Every API name `kafka-protocol` knows, in key order (for error messages).
pub fn api_names() -> Vec<&'static str> {
    ApiKey::iter().filter_map(|k| api_name(k as i16)).collect()
}

/// The API name of a frame's key, or `api <n>` for a key Kafka does not define.
pub fn describe_api(key: i16) -> String {
    api_name(key).map_or_else(|| format!("api {key}"), str::to_string)
}

/// The `ApiKey` of a request type.
pub fn api_key_of<R: Request>() -> Result<ApiKey, FrameError> {
    ApiKey::try_from(R::KEY).map_err(|_| FrameError::Codec(format!("unknown api key {}", R::KEY)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{EndTxnRequest, ProduceRequest};

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
    fn frames_describe_their_api() {
        assert_eq!(describe_api(26), "EndTxn");
        assert_eq!(describe_api(-4), "api -4");
        assert_eq!(api_key_of::<EndTxnRequest>().unwrap(), ApiKey::EndTxn);
        assert_eq!(api_key_of::<ProduceRequest>().unwrap(), ApiKey::Produce);
    }
}
