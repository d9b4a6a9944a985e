//! `sinkhole probe --kafka V --json` against real brokers. The values are what
//! the broker answered; the test checks the contract (keys, types) and the
//! probe's own consistency rules, and prints the report for the record.
use crate::common;

use std::process::Command;

use serde_json::Value;

fn probe(version: &str) -> Value {
    common::dist(version);
    let o =
        Command::new(common::bin()).args(["probe", "--kafka", version, "--json"]).output().expect("run sinkhole probe");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "probe {version} failed: {err}");
    let v: Value = serde_json::from_slice(&o.stdout).expect("probe --json prints one JSON object");
    eprintln!("probe {version}:\n{}", serde_json::to_string_pretty(&v).unwrap());
    v
}

fn acceptance(v: &Value, key: &str) -> (bool, Option<String>) {
    let a = &v[key];
    let accepted = a["accepted"].as_bool().unwrap_or_else(|| panic!("{key}.accepted is a bool: {a}"));
    let error = match &a["error"] {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => panic!("{key}.error must be a string or null, got {other}"),
    };
    // Accepted ⇔ no error.
    assert_eq!(accepted, error.is_none(), "{key}: {a}");
    (accepted, error)
}

fn check_contract(v: &Value) -> (bool, bool) {
    assert!(v["transaction_version"].is_i64(), "{v}");
    assert!(v["init_producer_id_max_version"].is_i64(), "{v}");
    assert!(v["survives_timeout"].is_boolean() || v["survives_timeout"].is_null());
    let (e2pc, _) = acceptance(v, "enable2pc");
    let (keep, _) = acceptance(v, "keep_prepared_txn");
    // Survival can only be known when a 2PC transaction could be opened.
    if !e2pc {
        assert!(v["survives_timeout"].is_null(), "{v}");
    }
    // Share groups: a bool, and TxnShareAcknowledge known absent or undetermined.
    let share = &v["share_groups"];
    assert!(share["enabled"].is_boolean(), "{share}");
    assert!(share["txn_share_acknowledge"].is_null() || share["txn_share_acknowledge"] == false, "{share}");
    assert_eq!(share["api_93"].is_null(), share["txn_share_acknowledge"] == false, "{share}");
    // Every answer has evidence behind it.
    assert!(v["evidence"].as_array().is_some_and(|e| e.len() >= 3), "{v}");
    (e2pc, keep)
}

#[test]
fn probe_kafka_4_4_0() {
    let _turn = common::serial();
    let v = probe("4.4.0");
    let (e2pc, _) = check_contract(&v);
    // 4.4.0 with unstable APIs enabled advertises InitProducerId v6.
    assert_eq!(v["init_producer_id_max_version"], 6, "{v}");
    assert_eq!(v["broker_version"]["release"], "4.4.0");
    // Share groups on by default (share.version finalized 2 of 0..2); key 93
    // is advertised, but 4.4.0 uses it for StreamsGroupTopologyDescriptionUpdate.
    let share = &v["share_groups"];
    assert_eq!(share["enabled"], true, "{share}");
    assert_eq!(share["share_version_finalized"], 2, "{share}");
    assert_eq!(share["share_version_supported"], serde_json::json!([0, 2]), "{share}");
    assert_eq!(share["share_fetch"], serde_json::json!([1, 2]), "{share}");
    assert_eq!(share["share_acknowledge"], serde_json::json!([1, 2]), "{share}");
    assert_eq!(share["share_group_heartbeat"], serde_json::json!([1, 1]), "{share}");
    assert_eq!(share["api_93"], serde_json::json!([0, 0]), "{share}");
    assert!(share["txn_share_acknowledge"].is_null(), "{share}");
    if e2pc {
        // A known answer about survival needs the control abort to have happened.
        if !v["survives_timeout"].is_null() {
            assert!(v["survives_timeout_detail"].as_str().unwrap().contains("aborted the control"), "{v}");
        }
    }
}

#[test]
fn probe_kafka_4_0_2() {
    let _turn = common::serial();
    let v = probe("4.0.2");
    let (e2pc, keep) = check_contract(&v);
    // 4.0 stops at InitProducerId v5: neither flag can be sent.
    assert_eq!(v["init_producer_id_max_version"], 5, "{v}");
    assert!(!e2pc && !keep, "{v}");
    assert!(v["enable2pc"]["error"].as_str().unwrap().contains("max v5"), "{v}");
}

#[test]
fn probe_kafka_4_2_0() {
    let _turn = common::serial();
    let v = probe("4.2.0");
    check_contract(&v);
    // 4.2: share groups generally available (share.version 0..1, finalized 1),
    // and API key 93 not yet assigned.
    let share = &v["share_groups"];
    assert_eq!(share["enabled"], true, "{share}");
    assert_eq!(share["share_version_finalized"], 1, "{share}");
    assert_eq!(share["share_version_supported"], serde_json::json!([0, 1]), "{share}");
    assert_eq!(share["share_fetch"], serde_json::json!([1, 2]), "{share}");
    assert!(share["api_93"].is_null(), "{share}");
    assert_eq!(share["txn_share_acknowledge"], false, "{share}");
}
