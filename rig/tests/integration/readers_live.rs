//! Live readers (`readers:`) end to end on real Kafka 4.4.0, through the binary:
//! scenarios/readers-kill-restore.yaml, whose kills leave aborted transactions in the log
//! between committed ones.
//!
//! - `faithful_readers_see_no_anomaly_and_the_offline_check_agrees`: two subscribe readers
//!   poll every committed record of twopc-inject and of at-least-once through the kills, and
//!   none of the read-side anomalies is found; `sinkhole check` re-judges `readers.jsonl`
//!   offline to the same counts.
//! - `a_read_uncommitted_reader_is_caught_as_g1a`: the calibration: the same scenario with the
//!   mutant reader (`assign~read-uncommitted`) polls the aborted records, and the checker says
//!   G1a, failing the clean expectation.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/readers-kill-restore.yaml")
}

/// Runs `file` with `--mode twopc-inject` (and `extra`); the run directory.
fn run(file: &Path, name: &str, extra: &[&str]) -> PathBuf {
    common::dist("4.4.0");
    let results = common::test_dir(name);
    let out = Command::new(common::bin())
        .arg("run")
        .arg(file)
        .args(["--seed", "7", "--mode", "twopc-inject", "--results"])
        .arg(&results)
        .args(extra)
        .output()
        .expect("run sinkhole");
    eprintln!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("summary.json").exists())
        .unwrap_or_else(|| panic!("no run under {}", results.display()))
}

fn verdict(run: &Path, mode: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join(mode).join("verdict.json")).unwrap()).unwrap()
}

const ANOMALIES: [&str; 5] = ["G1a", "inconsistent_offsets", "precommitted_read", "poll_skip", "nonmonotonic_poll"];

#[test]
fn faithful_readers_see_no_anomaly_and_the_offline_check_agrees() {
    let dir = run(&scenario(), "readers-faithful", &["--mode", "at-least-once"]);
    for mode in ["twopc-inject", "at-least-once"] {
        let v = verdict(&dir, mode);
        assert_eq!(v["outcome"], "pass", "{mode}: {}", v["reason"]);
        let reads = &v["reads"];
        assert_eq!((reads["readers"].as_u64(), reads["incarnations"].as_u64()), (Some(2), Some(2)), "{mode}: {reads}");
        assert!(reads["polls"].as_u64().unwrap() >= v["counts"]["committed"].as_u64().unwrap(), "{mode}: {reads}");
        for a in ANOMALIES {
            assert_eq!(reads[a].as_u64(), Some(0), "{mode}: {a} in {reads}");
        }
        assert_eq!(reads["unseen"].as_u64(), Some(0), "the readers ran to the end: {reads}");
        assert!(reads["lag_ms"]["samples"].as_u64().unwrap() > 0 || mode == "at-least-once", "{mode}: {reads}");
        assert!(dir.join(mode).join("readers.jsonl").exists());
    }
    // The kills replayed records: duplicates in the output, polled by the readers as well.
    assert!(verdict(&dir, "at-least-once")["counts"]["duplicated"].as_u64().unwrap() > 0);

    let before = verdict(&dir, "twopc-inject")["reads"].clone();
    let out = Command::new(common::bin()).arg("check").arg(&dir).output().expect("sinkhole check");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(verdict(&dir, "twopc-inject")["reads"], before, "offline, the same judgement");
}

#[test]
fn a_read_uncommitted_reader_is_caught_as_g1a() {
    let text = std::fs::read_to_string(scenario()).unwrap();
    let mutant =
        text.replace("readers: {count: 2, mode: subscribe}", "readers: {count: 1, mode: assign~read-uncommitted}");
    assert_ne!(mutant, text, "the scenario's readers line moved");
    let dir = common::test_dir("readers-mutant-scenario");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("readers-read-uncommitted.yaml");
    std::fs::write(&file, mutant).unwrap();
    let run = run(&file, "readers-mutant", &[]);
    let v = verdict(&run, "twopc-inject");
    // The output itself is clean: only the reader went wrong.
    assert_eq!(v["counts"]["lost"].as_u64(), Some(0), "{}", v["reason"]);
    assert_eq!(v["counts"]["duplicated"].as_u64(), Some(0), "{}", v["reason"]);
    let g1a = v["reads"]["G1a"].as_u64().unwrap();
    assert!(g1a > 0, "the aborted records polled: {}", v["reads"]);
    assert_eq!(v["counts"]["G1a"].as_u64(), Some(g1a));
    assert_eq!(v["outcome"], "fail", "{}", v["reason"]);
    assert!(v["words"].as_str().unwrap().starts_with(&format!("G1a {g1a}")), "{}", v["words"]);
    let example = v["reads"]["examples"]["G1a"][0].as_str().unwrap();
    assert!(example.contains("where nothing was committed"), "{example}");
}
