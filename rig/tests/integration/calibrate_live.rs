//! `sinkhole calibrate` end to end on real Kafka 4.4.0: mutants beside the
//! faithful mode on one small scenario (a crash before checkpoint 4 is
//! durable, after a declined checkpoint 3), the detection matrix and its
//! exit code.
use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[test]
fn calibrate_catches_what_the_scenario_can_see_and_exits_1_for_what_escapes() {
    let _turn = common::serial();
    common::dist("4.4.0");
    let results = common::test_dir("calibrate");
    let out_dir = results.join("cal");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/calibrate-tiny.yaml");
    let out = Command::new(common::bin())
        .arg("calibrate")
        .arg(&file)
        .args(["--mutants", "legacy~commit-before-persist,legacy~restore-off-by-one,legacy~assume-committed"])
        .args(["--seeds", "5", "--results"])
        .arg(&results)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .expect("run sinkhole calibrate");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}\n{stderr}");
    // assume-committed needs a commit whose answer never comes: this scenario cannot see it.
    assert_eq!(out.status.code(), Some(1), "a mutant no scenario caught");
    assert!(
        stdout.contains("legacy~assume-committed") && stdout.contains("NOBODY (it passed every scenario)"),
        "{stdout}"
    );
    let c: Value = serde_json::from_str(&std::fs::read_to_string(out_dir.join("calibrate.json")).unwrap()).unwrap();
    assert_eq!(c["schema_version"], 1, "provenance first");
    assert!(c["git_commit"].is_string() && c["version"].is_string());
    let row = |mode: &str| c["rows"].as_array().unwrap().iter().find(|r| r["mode"] == mode).unwrap().clone();
    let commit = row("legacy~commit-before-persist");
    assert_eq!(commit["caught_by"], serde_json::json!(["calibrate-tiny"]), "{commit}");
    assert!(commit["cells"][0]["runs"][0]["detail"].as_str().unwrap().contains("dup="), "{commit}");
    let off = row("legacy~restore-off-by-one");
    assert!(off["cells"][0]["runs"][0]["detail"].as_str().unwrap().starts_with("lost="), "{off}");
    assert_eq!(row("legacy~assume-committed")["cells"][0]["detection"], "escaped");
    // The faithful mode is clean: no scenario blames it.
    assert_eq!(row("legacy")["caught_by"], serde_json::json!([]));
    assert_eq!(c["totals"]["uncaught"], 1);
    assert_eq!(c["exit_code"], 1);
    // Beside it: the runs' matrix, and the page links each cell to its run's report.
    assert!(out_dir.join("matrix.json").is_file());
    let html = std::fs::read_to_string(out_dir.join("calibrate.html")).unwrap();
    assert!(html.contains("/report.html\"") && html.contains("class=\"caught\""), "{html}");
}
