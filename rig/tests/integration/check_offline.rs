//! `sinkhole check` on a copied results directory: a small real run (Kafka
//! 4.4.0, a worker kill and restore, legacy and at-least-once), copied
//! elsewhere without the cluster, re-checked offline: the same verdicts,
//! summary and junit.xml. Then damaged inputs: a bad history line is an
//! error naming the file and the line (exit 2), a torn last line a warning,
//! a truncated drained.bin an error naming the record.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const SCENARIO: &str = r#"
name: check-offline
cluster: {brokers: 1}
topic: {partitions: 3}
job:
  parallelism: 2
  records_per_subtask: 3000
  rate_per_subtask: 3000
  checkpoint_interval_ms: 300
  transaction_timeout_ms: 10000
modes: [legacy, at-least-once]
faults:
  - {name: kill, kind: kill-workers, target: all, when: {at_ms: 500}}
expect:
  legacy: clean
"#;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == "cluster" {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(&name));
        } else {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn check(dir: &Path) -> Output {
    Command::new(common::bin()).arg("check").arg(dir).output().expect("run sinkhole check")
}

/// What must not change between the run and the re-check.
fn judged(v: &Value) -> Value {
    serde_json::json!([v["outcome"], v["expected_met"], v["reason"], v["counts"], v["examples"], v["uncommitted_tail"]])
}

#[test]
fn check_reproduces_a_copied_run_and_names_damage() {
    let _turn = common::serial();
    common::dist("4.4.0");
    let base = common::test_dir("check-offline");
    std::fs::create_dir_all(&base).unwrap();
    let file = base.join("check-offline.yaml");
    std::fs::write(&file, SCENARIO).unwrap();
    let out = Command::new(common::bin())
        .arg("run")
        .arg(&file)
        .args(["--seed", "5", "--results"])
        .arg(base.join("results"))
        .output()
        .expect("run sinkhole");
    let table = String::from_utf8_lossy(&out.stdout).to_string();
    eprintln!("{table}\n{}", String::from_utf8_lossy(&out.stderr));
    let run_dir: PathBuf = std::fs::read_dir(base.join("results")).unwrap().next().unwrap().unwrap().path();
    let exit = out.status.code();
    assert!(run_dir.join("junit.xml").is_file(), "sinkhole run writes junit.xml");

    let copy = base.join("copy");
    copy_dir(&run_dir, &copy);
    let again = check(&copy);
    assert_eq!(again.status.code(), exit, "{}", String::from_utf8_lossy(&again.stderr));
    // The same table, but for the results line.
    let strip = |t: &str| t.lines().filter(|l| !l.starts_with("results: ")).collect::<Vec<_>>().join("\n");
    assert_eq!(strip(&String::from_utf8_lossy(&again.stdout)), strip(&table));
    for mode in ["legacy", "at-least-once"] {
        let a = json(&run_dir.join(mode).join("verdict.json"));
        let b = json(&copy.join(mode).join("verdict.json"));
        assert_eq!(judged(&a), judged(&b), "{mode}");
        assert_eq!(b["history"], copy.join(mode).join("history.jsonl").to_str().unwrap());
    }
    let (a, b) = (json(&run_dir.join("summary.json")), json(&copy.join("summary.json")));
    assert_eq!(a["modes"].as_array().unwrap().len(), b["modes"].as_array().unwrap().len());
    for (x, y) in a["modes"].as_array().unwrap().iter().zip(b["modes"].as_array().unwrap()) {
        assert_eq!((&x["outcome"], &x["counts"], &x["reason"]), (&y["outcome"], &y["counts"], &y["reason"]));
    }
    assert_eq!(
        std::fs::read_to_string(run_dir.join("junit.xml")).unwrap(),
        std::fs::read_to_string(copy.join("junit.xml")).unwrap()
    );
    // One mode directory alone works too.
    assert_eq!(check(&copy.join("legacy")).status.code(), Some(0));

    // A damaged line in the middle of the history: exit 2, file and line named.
    let hist = copy.join("legacy").join("history.jsonl");
    let text = std::fs::read_to_string(&hist).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 10);
    let good = lines[4].to_string();
    lines[4] = &good[..good.len() / 2];
    std::fs::write(&hist, lines.join("\n") + "\n").unwrap();
    let bad = check(&copy);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{}:5:", hist.display())), "{err}");
    eprintln!("damaged history: {err}");

    // A torn last line (a writer killed mid-line): tolerated, with a warning.
    std::fs::write(&hist, text.clone() + &good[..good.len() / 2]).unwrap();
    let torn = check(&copy);
    let err = String::from_utf8_lossy(&torn.stderr);
    assert_eq!(torn.status.code(), exit, "{err}");
    assert!(err.contains("warning") && err.contains("the last line is torn"), "{err}");

    // A truncated drain file.
    std::fs::write(&hist, &text).unwrap();
    let drained = copy.join("legacy").join("drained.bin");
    let bytes = std::fs::read(&drained).unwrap();
    std::fs::write(&drained, &bytes[..bytes.len() - 3]).unwrap();
    let cut = check(&copy);
    let err = String::from_utf8_lossy(&cut.stderr);
    assert_eq!(cut.status.code(), Some(2), "{err}");
    assert!(err.contains("drained.bin: record ") && err.contains(": truncated"), "{err}");

    // Not a results directory at all.
    let none = check(&base);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("not a results directory"));
    let _ = std::fs::remove_dir_all(&base);
}
