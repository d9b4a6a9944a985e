//! The FLIP-319 scenario (scenarios/flip319-long-outage.yaml) run by the real binary with
//! `--backend containers`: the same verdicts as on local brokers — legacy loses the records of
//! the checkpoint whose committable it dropped, twopc-inject is clean, kip939 is clean or
//! honestly inconclusive with the broker's refusal — and afterwards the engine holds nothing of
//! the run (no container, network or volume with its label), the brokers' logs are in the run
//! directory.
//!
//! Without an engine the test prints why and returns (see containers_live.rs).
#![allow(clippy::await_holding_lock)]
mod common;

use std::path::Path;

use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containers_flip319_long_outage_same_verdicts_as_local_and_nothing_left() {
    let Some(_turn) = common::containers::turn("containers_flip319_…").await else { return };
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/flip319-long-outage.yaml");
    let (out, results, dir) =
        common::containers::run_on_containers("containers-flip319", scenario, &["--seed", "319"]).await;
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let mode = |name: &str| -> Value {
        summary["modes"].as_array().unwrap().iter().find(|m| m["mode"] == name).cloned().unwrap()
    };
    let count = |name: &str, key: &str| mode(name)["counts"][key].as_u64().unwrap();

    let legacy = mode("legacy");
    assert_eq!(legacy["outcome"], "pass", "{legacy}");
    assert!(count("legacy", "lost") > 0, "{legacy}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("legacy/verdict.json")).unwrap()).unwrap();
    assert!(v["committables_dropped"].as_u64().unwrap() >= 1, "{v}");
    assert!(v["faults"].as_array().unwrap().iter().all(|f| f["fired"] == true && f["confirmed"] == true), "{v}");

    let twopc = mode("twopc-inject");
    assert_eq!(twopc["outcome"], "pass", "{twopc}");
    assert_eq!(count("twopc-inject", "lost"), 0);
    assert_eq!(count("twopc-inject", "duplicated"), 0);
    assert_eq!(count("twopc-inject", "committed"), count("twopc-inject", "expected"));

    let kip = mode("kip939");
    match kip["outcome"].as_str().unwrap() {
        "pass" => assert_eq!(count("kip939", "lost") + count("kip939", "duplicated"), 0),
        "inconclusive" => {
            let reason = kip["reason"].as_str().unwrap();
            assert!(reason.contains("UNSUPPORTED_VERSION"), "{kip}");
        }
        other => panic!("kip939: {other}: {kip}"),
    }
    assert_eq!(out.status.code(), Some(0));

    // Nothing of the run is left on the engine; the brokers' log was collected.
    let run_id = summary["run_id"].as_str().unwrap();
    common::containers::assert_nothing_left(run_id).await;
    let log = std::fs::read_to_string(dir.join("cluster/node-1/server.log")).unwrap();
    assert!(log.contains("formatted; starting the broker"), "broker log collected");
    let _ = std::fs::remove_dir_all(&results);
}
