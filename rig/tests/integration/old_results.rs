//! Results written by an older sinkhole stay readable: `sinkhole check` on
//! the checked-in run `tests/fixtures/old-results/` (made by the binary of an
//! earlier commit; its README says which and how) judges it the same way
//! again, keeps every fault record exactly as stored, and the report it
//! re-renders shows the faults' evidence. No cluster is needed.
//!
//! The fault effects are typed (`sinkhole_history::fault`): every effect
//! of the old run reads back into a known type, none as raw JSON, and
//! serialises to exactly the JSON that was stored.
//!
//! The run predates the verdict's words: its rows and verdicts get them from
//! what they hold, and the check writes them.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::files::{copy_dir, read_json};
use serde_json::Value;
use sinkhole_checker::verdict::Verdict;
use sinkhole_history::fault::{End, FaultRecord, Start};
use sinkhole_rig::results::summary::Summary;

fn fixture() -> PathBuf {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/old-results");
    let runs: Vec<PathBuf> = std::fs::read_dir(&base)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("summary.json").is_file())
        .collect();
    assert_eq!(runs.len(), 1, "one run under {}", base.display());
    runs.into_iter().next().unwrap()
}

/// What a fault record says: its name, kind, whether it fired and was
/// confirmed, and its effect, exactly.
fn fault_records(v: &Value) -> Vec<Value> {
    v["faults"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| serde_json::json!([f["name"], f["kind"], f["fired"], f["confirmed"], f["effect"]]))
        .collect()
}

fn fault<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["faults"].as_array().unwrap().iter().find(|f| f["name"] == name).unwrap_or_else(|| panic!("fault {name}"))
}

#[test]
fn an_old_run_is_checked_the_same_and_its_evidence_is_shown() {
    let src = fixture();
    let dir = common::test_dir("old-results").join(src.file_name().unwrap());
    copy_dir(&src, &dir);
    let stored_summary = read_json(&src.join("summary.json"));
    let modes: Vec<String> =
        stored_summary["modes"].as_array().unwrap().iter().map(|m| m["mode"].as_str().unwrap().to_string()).collect();
    assert_eq!(modes, ["legacy", "twopc-inject"]);

    let out = Command::new(common::bin()).arg("check").arg(&dir).output().expect("run sinkhole check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{}\n{stderr}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(out.status.code(), stored_summary["exit_code"].as_i64().map(|c| c as i32), "{stderr}");
    assert!(!stderr.contains("report.html not rewritten"), "{stderr}");

    for mode in &modes {
        let before = read_json(&src.join(mode).join("verdict.json"));
        let after = read_json(&dir.join(mode).join("verdict.json"));
        for key in ["outcome", "expected_met", "reason", "counts", "uncommitted_tail", "job"] {
            assert_eq!(after[key], before[key], "{mode}: {key}");
        }
        assert_eq!(fault_records(&after), fault_records(&before), "{mode}: the fault records");
        assert_eq!(fault_records(&after).len(), 6, "{mode}");
        for f in after["faults"].as_array().unwrap() {
            assert_eq!((&f["fired"], &f["confirmed"]), (&Value::Bool(true), &Value::Bool(true)), "{mode}: {f}");
        }
        // Typed, not kept raw: each stored effect is one of the shapes the rig writes.
        let records: Vec<FaultRecord> = serde_json::from_value(before["faults"].clone()).unwrap();
        for r in &records {
            assert!(!matches!(r.effect.start(), Some(Start::Other(_))), "{mode} {}: start not typed", r.name);
            assert!(!matches!(r.effect.end(), Some(End::Other(_))), "{mode} {}: end not typed", r.name);
            assert_eq!(serde_json::to_value(r).unwrap()["effect"], fault(&before, &r.name)["effect"], "{}", r.name);
        }
    }
    let summary = read_json(&dir.join("summary.json"));
    for (a, b) in stored_summary["modes"].as_array().unwrap().iter().zip(summary["modes"].as_array().unwrap()) {
        assert_eq!((&a["outcome"], &a["counts"], &a["reason"]), (&b["outcome"], &b["counts"], &b["reason"]));
    }

    // The words: none stored; made from the old files as they are, then written by the check.
    let words = ["LOST 306, UNCOMMITTED TAIL (no expectation)", "clean (expected)"];
    let old: Summary = serde_json::from_value(stored_summary.clone()).unwrap();
    for ((row, mode), want) in old.modes.iter().zip(&modes).zip(words) {
        assert!(row.words.is_empty(), "{mode}: the fixture predates the words");
        assert_eq!(row.words(), want, "{mode}: from the old row");
        let v: Verdict = serde_json::from_value(read_json(&src.join(mode).join("verdict.json"))).unwrap();
        assert!(v.words.is_empty(), "{mode}");
        assert_eq!(v.words(), want, "{mode}: from the old verdict");
        assert_eq!(read_json(&dir.join(mode).join("verdict.json"))["words"], want, "{mode}: written by the check");
    }
    let written: Vec<&Value> = summary["modes"].as_array().unwrap().iter().map(|m| &m["words"]).collect();
    assert_eq!(written, words, "summary.json");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("| LOST 306, UNCOMMITTED TAIL (no expectation)\n"), "{table}");

    // The re-rendered report shows each kind of evidence, as the stored
    // effects state it.
    let report = std::fs::read_to_string(dir.join("report.html")).expect("report.html rewritten by the check");
    for mode in &modes {
        let v = read_json(&dir.join(mode).join("verdict.json"));
        // The role the killed node held (the restart states it too, in its end record).
        let kill = &fault(&v, "kill-coordinator")["effect"]["start"]["role"]["statement"];
        let statement = kill.as_str().unwrap_or_else(|| panic!("{mode}: a role statement: {kill}"));
        assert!(statement.contains(" was the txn-coordinator of "), "{statement}");
        assert!(report.contains(statement), "{mode}: the report states {statement:?}");
        let restart = &fault(&v, "restart-coordinator")["effect"]["end"]["role"]["statement"];
        assert!(restart.as_str().is_some_and(|s| s.contains(" was the txn-coordinator of ")), "{mode}: {restart}");
        // The proxy's counts and its frame sample.
        let stats = &fault(&v, "drop-commit-answer")["effect"]["end"]["stats"];
        assert_eq!((&stats["matched"], &stats["dropped"]), (&Value::from(1), &Value::from(1)), "{mode}: {stats}");
        let sample = stats["samples"][0].as_str().unwrap();
        assert!(sample.starts_with("EndTxn v") && sample.ends_with(": dropped"), "{sample}");
        assert!(report.contains(&sample.replace('>', "&gt;")) || report.contains(sample), "{mode}: {sample}");
        // The broker's view of the frozen workers' transactions.
        let frozen = &fault(&v, "freeze-all")["effect"]["start"]["while_frozen"];
        let after_ms = frozen["after_ms"].as_i64().unwrap();
        let txns = frozen["transactions"].as_array().unwrap();
        assert_eq!(txns.len(), 2, "{mode}: {frozen}");
        for t in txns {
            let line = format!(
                "{after_ms} ms into the pause, {} was {} (epoch {})",
                t["transactional_id"].as_str().unwrap(),
                t["state"].as_str().unwrap(),
                t["producer_epoch"]
            );
            assert!(report.contains(&line), "{mode}: the report says {line:?}");
        }
        let states: Vec<&str> = txns.iter().map(|t| t["state"].as_str().unwrap()).collect();
        let want = if mode == "legacy" { "CompleteAbort" } else { "Ongoing" };
        assert!(states.iter().all(|s| *s == want), "{mode}: {states:?}");
    }
    assert!(report.contains("proxy: matched 1, dropped 1, delayed 0, errors injected 0, connections reset 0"));
    for w in words {
        assert!(report.contains(&format!(">{w}</td>")), "the report's verdict table says {w:?}");
    }
    let _ = std::fs::remove_dir_all(dir.parent().unwrap());
}
