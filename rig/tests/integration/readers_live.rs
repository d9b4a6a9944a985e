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
//! - `faulted_faithful_readers_stay_clean`: scenarios/readers-faults.yaml, whose reader faults
//!   restart one subscribe reader, kill another (no close) and pause a third past
//!   `max.poll.interval.ms`: each fault confirmed by what the reader did (a new incarnation, the
//!   partitions of the paused one handed to another), and no read-side anomaly.
//! - `a_reader_committing_before_processing_is_caught_as_poll_skip`,
//!   `a_reader_skipping_after_a_rebalance_is_caught_as_poll_skip`: the same faults with the
//!   mutant readers; the sink's output is clean and the group passed over committed records.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/readers-kill-restore.yaml")
}

fn faults_scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/readers-faults.yaml")
}

/// `readers.jsonl` of a mode, parsed.
fn reads(run: &Path, mode: &str) -> Vec<Value> {
    std::fs::read_to_string(run.join(mode).join("readers.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The fault named `name` of a verdict: fired and confirmed, its start's reader answers.
fn reader_fault<'a>(v: &'a Value, name: &str) -> &'a Vec<Value> {
    let f = v["faults"].as_array().unwrap().iter().find(|f| f["name"] == name).unwrap();
    assert_eq!((f["fired"].as_bool(), f["confirmed"].as_bool()), (Some(true), Some(true)), "{name}: {f}");
    f["effect"]["start"]["readers"].as_array().unwrap()
}

/// scenarios/readers-faults.yaml with `mode` readers, run with twopc-inject.
fn faulted(mode: &str, name: &str) -> Value {
    let text = std::fs::read_to_string(faults_scenario()).unwrap();
    let mutant = text.replace("readers: {count: 3, mode: subscribe}", &format!("readers: {{count: 3, mode: {mode}}}"));
    assert_ne!(mutant, text, "the scenario's readers line moved");
    let dir = common::test_dir(&format!("{name}-scenario"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("readers-faults.yaml");
    std::fs::write(&file, mutant).unwrap();
    let v = verdict(&run(&file, name, &[]), "twopc-inject");
    // The output itself is clean: only the readers went wrong.
    assert_eq!(
        (v["counts"]["lost"].as_u64(), v["counts"]["duplicated"].as_u64()),
        (Some(0), Some(0)),
        "{}",
        v["reason"]
    );
    assert_eq!(v["reads"]["G1a"].as_u64(), Some(0), "{}", v["reads"]);
    v
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

#[test]
fn faulted_faithful_readers_stay_clean() {
    let dir = run(&faults_scenario(), "readers-faulted", &[]);
    let v = verdict(&dir, "twopc-inject");
    assert_eq!(v["outcome"], "pass", "{}", v["reason"]);
    let reads = &v["reads"];
    for a in ANOMALIES {
        assert_eq!(reads[a].as_u64(), Some(0), "{a} in {reads}");
    }
    assert_eq!(reads["unseen"].as_u64(), Some(0), "the readers ran to the end: {reads}");
    assert!(reads["polls"].as_u64().unwrap() >= v["counts"]["committed"].as_u64().unwrap(), "{reads}");
    // Three readers, two of them started again: five consumers.
    assert_eq!((reads["readers"].as_u64(), reads["incarnations"].as_u64()), (Some(3), Some(5)), "{reads}");

    // Each fault acted, as the readers' own lines show.
    let lines = reads_of(&dir);
    let restart = reader_fault(&v, "restart-2");
    assert_eq!((restart[0]["incarnation"].as_u64(), restart[0]["started"].as_u64()), (Some(0), Some(1)), "{restart:?}");
    let kill = reader_fault(&v, "kill-0");
    assert!(kill[0]["did"].as_str().unwrap().contains("without consumer_close"), "{kill:?}");
    let of = |reader: u64, kind: &str| -> Vec<&Value> {
        lines.iter().filter(|l| l["reader"].as_u64() == Some(reader) && l["type"] == kind).collect()
    };
    assert!(of(0, "stopped")[0]["reason"].as_str().unwrap().starts_with("killed by fault kill-0"));
    assert!(of(0, "started").iter().any(|l| l["incarnation"] == 1), "reader 0 started again");
    reader_fault(&v, "pause-1");
    // The paused reader was put out of the group: while it polled nothing (past the 6 s poll
    // interval), another reader was assigned the partitions it held.
    let mut polls1: Vec<u64> = of(1, "polled").iter().map(|l| l["wall_ms"].as_u64().unwrap()).collect();
    polls1.sort_unstable();
    let (gap_from, gap_to) = polls1.windows(2).map(|w| (w[0], w[1])).max_by_key(|(a, b)| b - a).unwrap();
    assert!(gap_to - gap_from >= 7_000, "reader 1 stopped polling for {} ms", gap_to - gap_from);
    let held: Vec<i64> = of(1, "assigned")
        .iter()
        .rfind(|l| l["wall_ms"].as_u64().unwrap() <= gap_from)
        .map(|l| l["partitions"].as_array().unwrap().iter().map(|p| p.as_i64().unwrap()).collect())
        .unwrap();
    let taken = lines.iter().any(|l| {
        l["type"] == "assigned"
            && l["reader"] != 1
            && (gap_from..gap_to).contains(&l["wall_ms"].as_u64().unwrap())
            && held.iter().all(|p| l["partitions"].as_array().unwrap().iter().any(|q| q.as_i64() == Some(*p)))
    });
    assert!(taken, "reader 1's partitions {held:?} went to another reader during its pause");
}

fn reads_of(dir: &Path) -> Vec<Value> {
    reads(dir, "twopc-inject")
}

#[test]
fn a_reader_committing_before_processing_is_caught_as_poll_skip() {
    let v = faulted("subscribe~commit-before-process", "readers-commit-before-process");
    let kill = reader_fault(&v, "kill-0");
    let did = kill[0]["did"].as_str().unwrap();
    // The kill lands in a batch's processing (a second, against a 200 ms collection) unless the
    // topic was idle then; it says how many committed records it lost.
    let lost: u64 = did
        .split("; ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("the kill lost no batch, so this run could not catch the mutant: {did}"));
    let skips = v["reads"]["poll_skip"].as_u64().unwrap();
    assert!(skips >= lost && lost > 0, "{lost} records lost by the kill, poll-skip {skips}: {}", v["reads"]);
    assert_eq!(v["outcome"], "fail", "{}", v["reason"]);
    assert!(v["words"].as_str().unwrap().starts_with(&format!("POLL SKIP {skips}")), "{}", v["words"]);
}

#[test]
fn a_reader_skipping_after_a_rebalance_is_caught_as_poll_skip() {
    let v = faulted("subscribe~skip-after-rebalance", "readers-skip-after-rebalance");
    let skips = v["reads"]["poll_skip"].as_u64().unwrap();
    assert!(skips > 0, "{}", v["reads"]);
    assert_eq!(v["outcome"], "fail", "{}", v["reason"]);
    assert!(v["words"].as_str().unwrap().starts_with(&format!("POLL SKIP {skips}")), "{}", v["words"]);
    let example = v["reads"]["examples"]["poll-skip"][0].as_str().unwrap();
    assert!(example.contains("across a rebalance or restart"), "{example}");
}
