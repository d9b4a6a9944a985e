//! Premises end to end, by the real binary against Kafka 4.4.0: the cases a
//! nightly must not call a failure of the sink.
//! - FLIP-319 with its premise written (`tests/data/flip319-slow-abort-scan.yaml`) on a broker
//!   whose abort scan (60 s) is slower than the outage: inconclusive with the unmet premise,
//!   exit 0;
//! - FLIP-319 written without a `premise:` block, on a broker whose abort
//!   scan is slower than the outage: the broker never aborts checkpoint 3's
//!   transactions, legacy loses nothing, and its verdict is inconclusive with
//!   the default premise's evidence (the run's scenario.yaml carries that
//!   premise, so a replay judges the same);
//! - a share group whose delivery limit the fault cannot reach (a pause
//!   shorter than one lock) with `archived: ">0"`: inconclusive with the
//!   highest delivery count, and `sinkhole check` judges the stored run the same.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Runs a fixture of `tests/data` whose legacy premise is a default; its run directory and
/// legacy's verdict.
fn run(fixture: &str, seed: u64) -> (PathBuf, Value) {
    let (dir, v, stderr) = run_legacy(fixture, seed);
    assert!(stderr.contains("legacy: premise ") && stderr.contains(" by default ("), "the run says so: {stderr}");
    (dir, v)
}

/// Runs a fixture of `tests/data` in legacy mode, which must exit 0; its run directory,
/// legacy's verdict and the run's stderr.
fn run_legacy(fixture: &str, seed: u64) -> (PathBuf, Value, String) {
    common::dist("4.4.0");
    let results = common::test_dir(&format!("premises-{seed}"));
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(fixture);
    let out = Command::new(common::bin())
        .arg("run")
        .arg(&file)
        .args(["--mode", "legacy", "--seed", &seed.to_string(), "--results"])
        .arg(&results)
        .output()
        .expect("run sinkhole");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    eprintln!("{fixture}:\n{}{stderr}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), Some(0), "inconclusive is not a failure: {stderr}");
    let dir = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("summary.json").exists())
        .unwrap_or_else(|| panic!("no summary.json: {stderr}"));
    let v = serde_json::from_str(&std::fs::read_to_string(dir.join("legacy/verdict.json")).unwrap()).unwrap();
    (dir, v, stderr)
}

/// FLIP-319 with the broker's abort scan at 60 s: the broker never aborts checkpoint 3's
/// transactions during the outage and legacy loses nothing. Not the sink's fault: inconclusive
/// with the premise the file writes, unmet, exit 0.
#[test]
fn flip319_with_a_slow_abort_scan_is_inconclusive_not_a_failure_of_legacy() {
    let _turn = common::serial();
    let (_dir, v, _) = run_legacy("flip319-slow-abort-scan.yaml", 318);
    assert_eq!(v["outcome"], "inconclusive", "{v}");
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.starts_with("premise timeout_abort {checkpoint: 3} not met:"), "{reason}");
    assert!(reason.contains("Ongoing") && reason.contains("expected lost >0, got 0"), "{reason}");
    assert_eq!(v["premises"][0]["held"], "unmet", "{v}");
}

#[test]
fn flip319_without_a_premise_block_and_a_slow_abort_scan_is_inconclusive_not_fail() {
    let _turn = common::serial();
    let (dir, v) = run("flip319-no-premise.yaml", 3190);
    assert_eq!(v["outcome"], "inconclusive", "{v}");
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.starts_with("premise timeout_abort {checkpoint: 3} not met:"), "{reason}");
    assert!(reason.contains("Ongoing") && reason.contains("expected lost >0, got 0"), "{reason}");
    assert_eq!(v["premises"][0]["held"], "unmet", "{v}");
    // The outage really outlasted the timeout: the fault fired and was confirmed.
    let f = &v["faults"][0];
    assert_eq!((f["fired"].as_bool(), f["confirmed"].as_bool()), (Some(true), Some(true)), "{f}");
    // The run's scenario.yaml carries the default, so a replay has the same premise.
    let resolved = sinkhole_scenario::load(&dir.join("scenario.yaml")).unwrap();
    let p = &resolved.premise[&sinkhole_model::SinkMode::Legacy];
    assert_eq!(p.timeout_abort.as_ref().and_then(|o| o.checkpoint), Some(3), "{p:?}");
}

#[test]
fn a_delivery_limit_a_short_pause_cannot_reach_is_inconclusive_not_fail() {
    let _turn = common::serial();
    let (dir, v) = run("share-limit-not-reached.yaml", 1205);
    assert_eq!(v["outcome"], "inconclusive", "{v}");
    let reason = v["reason"].as_str().unwrap();
    assert!(reason.starts_with("premise delivery_limit not met: "), "{reason}");
    assert!(reason.contains("of limit 2") || reason.contains("of 2;"), "the highest delivery count: {reason}");
    assert!(reason.contains("expected archived >0, got 0"), "{reason}");
    assert_eq!(v["counts"]["lost"], 0, "{v}");
    let p = &v["premises"][0];
    assert_eq!((p["premise"].as_str(), p["held"].as_str()), (Some("delivery_limit"), Some("unmet")), "{p}");
    // Re-judged offline from what the run stored: the same verdict, the group's counts kept.
    let out = Command::new(common::bin()).arg("check").arg(&dir).output().expect("sinkhole check");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let again: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("legacy/verdict.json")).unwrap()).unwrap();
    assert_eq!((&again["outcome"], &again["reason"]), (&v["outcome"], &v["reason"]), "{again}");
    assert_eq!(again["counts"]["redelivered"], v["counts"]["redelivered"]);
}
