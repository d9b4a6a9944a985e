//! The share-group source end to end, by the real binary against Kafka
//! 4.4.0 (the shipped scenarios, legacy mode only to keep it short):
//! - acknowledged at the barrier, killed before the commit: records lost,
//!   and the kill really landed in the window (the fault fired on the
//!   `acknowledged` event, the job restored);
//! - committed, killed before the acknowledgement: nothing lost, the group
//!   redelivered committed records (delivery count 2) and they are
//!   duplicated;
//! - a stall past two locks at the lowest delivery limit: the group archives
//!   records (seen by the sampler while the job ran) and hands none out a
//!   third time, and the default premises (`delivery_limit`, `redelivery`) held;
//! - no fault: clean, and the group's own view ends with lag 0.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

struct Run {
    dir: PathBuf,
    summary: Value,
}

impl Run {
    fn legacy(&self) -> &Value {
        self.summary["modes"].as_array().unwrap().iter().find(|m| m["mode"] == "legacy").unwrap()
    }

    fn count(&self, key: &str) -> u64 {
        self.legacy()["counts"][key].as_u64().unwrap_or(0)
    }

    fn verdict(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.dir.join("legacy").join("verdict.json")).unwrap()).unwrap()
    }
}

fn run(file: &str, seed: u64) -> Run {
    common::dist("4.4.0");
    let results = common::test_dir(&format!("share-source-{seed}"));
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("scenarios").join(file);
    let out = Command::new(common::bin())
        .arg("run")
        .arg(&scenario)
        .args(["--mode", "legacy", "--seed", &seed.to_string(), "--results"])
        .arg(&results)
        .output()
        .expect("run sinkhole");
    eprintln!("{file}:\n{}", String::from_utf8_lossy(&out.stdout));
    let dir = common::run_dir(&results, &out);
    let summary = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(out.status.code(), Some(0), "{file}: {}", String::from_utf8_lossy(&out.stderr));
    Run { dir, summary }
}

fn fired_on(v: &Value, event: &str) {
    let f = &v["faults"][0];
    assert_eq!((f["fired"].as_bool(), f["confirmed"].as_bool()), (Some(true), Some(true)), "{f}");
    assert!(f["effect"]["start"]["trigger"][event].is_object(), "the fault fired on {event}: {f}");
    assert!(v["attempts"].as_u64().unwrap() >= 2, "the job restored: {v}");
}

#[test]
fn acknowledging_before_the_commit_loses_records_under_a_kill_between_them() {
    let _turn = common::serial();
    let r = run("share-ack-before-commit-kill.yaml", 1201);
    assert_eq!(r.legacy()["outcome"], "pass", "{}", r.legacy());
    assert!(r.count("lost") > 0, "{}", r.legacy());
    assert_eq!(r.count("unexpected"), 0);
    let v = r.verdict();
    fired_on(&v, "acknowledged");
    assert_eq!(v["share"]["ack"], "before-commit");
    assert_eq!(v["share"]["lag"], 0, "every input record was acknowledged: {}", v["share"]);
    // The evidence: the lost records were acknowledged before the commit that never came.
    let evidence = v["share"]["lost_evidence"].as_array().unwrap();
    assert!(!evidence.is_empty(), "{}", v["share"]);
    assert!(evidence.iter().any(|e| e.as_str().unwrap().contains("(before-commit)")), "{evidence:?}");
}

#[test]
fn committing_before_the_acknowledgement_duplicates_under_a_kill_between_them() {
    let _turn = common::serial();
    let r = run("share-ack-after-commit-kill.yaml", 1202);
    assert_eq!(r.legacy()["outcome"], "pass", "{}", r.legacy());
    assert_eq!(r.count("lost"), 0);
    assert!(r.count("duplicated") > 0, "{}", r.legacy());
    let v = r.verdict();
    fired_on(&v, "committed");
    let s = &v["share"];
    assert!(s["redelivered"].as_u64().unwrap() > 0 && s["max_delivery_count"].as_i64().unwrap() >= 2, "{s}");
    assert!(!s["redelivery_examples"].as_array().unwrap().is_empty(), "{s}");
}

#[test]
fn without_faults_a_share_group_source_is_clean() {
    let _turn = common::serial();
    let r = run("share-clean.yaml", 1203);
    assert_eq!(r.legacy()["outcome"], "pass", "{}", r.legacy());
    assert_eq!((r.count("lost"), r.count("duplicated")), (0, 0));
    assert_eq!(r.count("committed"), r.count("expected"));
    let s = &r.verdict()["share"];
    assert_eq!(
        (s["lag"].as_i64(), s["redelivered"].as_u64(), s["ack_refused"].as_u64()),
        (Some(0), Some(0), Some(0)),
        "{s}"
    );
    assert_eq!(s["acknowledged"], s["delivered"], "{s}");
    assert_eq!(s["archived"], 0, "{s}");
    assert!(s["state_samples"].as_u64().unwrap() > 0, "the state was sampled while the job ran: {s}");
    let report = std::fs::read_to_string(r.dir.join("report.html")).unwrap();
    assert!(report.contains("share group sinkhole-"), "the report shows the group's view");
}

#[test]
fn the_delivery_limit_archives_what_a_stall_kept_past_two_locks() {
    let _turn = common::serial();
    let r = run("share-delivery-limit.yaml", 1204);
    assert_eq!(r.legacy()["outcome"], "pass", "{}", r.legacy());
    assert_eq!(r.count("lost"), 0, "a committed transaction carried every archived record");
    assert!(r.count("archived") > 0, "{}", r.legacy());
    let s = &r.verdict()["share"];
    assert_eq!(s["max_delivery_count"], 2, "nothing was handed out past the limit: {s}");
    assert!(s["archived_while_running"].as_u64().unwrap() > 0, "{s}");
    assert!(!s["archived_ranges"].as_array().unwrap().is_empty(), "{s}");
    // The expectation rests on the group's reaction, by default: both premises held, with evidence.
    let v = r.verdict();
    let held: Vec<(&str, &str)> = v["premises"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["premise"].as_str().unwrap(), p["held"].as_str().unwrap()))
        .collect();
    assert_eq!(held, [("delivery_limit", "met"), ("redelivery", "met")], "{v}");
    assert!(v["premises"][0]["evidence"].as_str().unwrap().contains("of limit 2"), "{v}");
}
