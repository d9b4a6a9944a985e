//! `report.html` from a small real run (Kafka 4.4.0): a job outage longer
//! than the transaction timeout, legacy and twopc-inject side by side. The
//! page must exist, draw every latency plot as inline SVG with the outage
//! shaded and labelled, and show legacy's lost records with their
//! transactional id and checkpoint next to twopc-inject's clean result —
//! and `sinkhole check` on a copy must write it again without a cluster.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const SCENARIO: &str = r#"
name: report-outage
cluster: {brokers: 1, broker_config: {transaction.abort.timed.out.transaction.cleanup.interval.ms: 500}}
topic: {partitions: 2}
job:
  parallelism: 2
  records_per_subtask: 3000
  rate_per_subtask: 1500
  checkpoint_interval_ms: 500
  transaction_timeout_ms: 2000
modes: [legacy, twopc-inject]
faults:
  - {name: long-outage, kind: job-outage, when: {after_checkpoint_persisted: 2}, duration_ms: 4000}
expect:
  legacy: {lost: ">0"}
  twopc-inject: clean
"#;

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The grid cell with this id, up to the next cell or the end of its section.
fn cell<'a>(html: &'a str, id: &str) -> Option<&'a str> {
    let start = html.find(&format!("id=\"{id}\""))?;
    let rest = &html[start..];
    let end = rest.find("<div class=\"mode\" ").or_else(|| rest.find("</section>")).unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The run directory without its brokers' log segments (`cluster/node-*/data`): their own logs
/// stay, which each anomaly's story on the page cites.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_name() == "data" && from.parent().is_some_and(|p| p.ends_with("cluster")) {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else if e.file_name() != "report.html" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn report_shows_the_outage_and_the_modes_side_by_side() {
    let _turn = common::serial();
    common::dist("4.4.0");
    let base = common::test_dir("report");
    std::fs::create_dir_all(&base).unwrap();
    let file = base.join("report-outage.yaml");
    std::fs::write(&file, SCENARIO).unwrap();
    let out = Command::new(common::bin())
        .arg("run")
        .arg(&file)
        .args(["--seed", "3", "--results"])
        .arg(base.join("results"))
        .output()
        .expect("run sinkhole");
    eprintln!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "both expectations met");
    let run_dir: PathBuf = std::fs::read_dir(base.join("results")).unwrap().next().unwrap().unwrap().path();
    let report = run_dir.join("report.html");
    assert!(report.is_file(), "sinkhole run writes report.html");
    let html = std::fs::read_to_string(&report).unwrap();

    // Every latency plot drawn, on both sides, each with the outage band's label.
    let metrics: Vec<&str> = html
        .match_indices("<h3 id=\"latency-")
        .map(|(i, _)| {
            let rest = &html[i + "<h3 id=\"latency-".len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    for m in ["commit", "checkpoint", "visibility"] {
        assert!(metrics.contains(&m), "no latency plot of {m}: {metrics:?}");
    }
    for m in &metrics {
        for mode in ["legacy", "twopc-inject"] {
            let c = cell(&html, &format!("latency-{m}-{mode}")).unwrap_or_else(|| panic!("no cell {m}/{mode}"));
            if c.contains("no samples") {
                continue;
            }
            assert!(c.contains("<svg") && c.contains("</svg>"), "{m}/{mode}: no svg");
            assert!(c.contains("long-outage (job-outage)"), "{m}/{mode}: the outage is not labelled");
        }
    }
    for m in ["commit", "checkpoint"] {
        for mode in ["legacy", "twopc-inject"] {
            assert!(cell(&html, &format!("latency-{m}-{mode}")).unwrap().contains("<svg"), "{m}/{mode}");
        }
    }

    // The anomaly tables agree with the verdicts.
    let legacy = json(&run_dir.join("legacy/verdict.json"));
    let lost = legacy["counts"]["lost"].as_u64().unwrap();
    assert!(lost > 0);
    let a = cell(&html, "anomalies-legacy").unwrap();
    assert!(a.contains("data-kind=\"lost\""), "{a}");
    assert!(a.contains(&format!("lost: {lost} (")), "{a}");
    for ex in legacy["examples"]["lost"].as_array().unwrap() {
        let tid = ex["transactional_id"].as_str().unwrap();
        assert!(a.contains(tid), "{tid} missing");
        if let Some(c) = ex["checkpoint"].as_u64() {
            assert!(a.contains(&format!("<td class=\"num\">{c}</td><td class=\"tid\">{tid}</td>")), "{a}");
        }
    }
    let twopc = json(&run_dir.join("twopc-inject/verdict.json"));
    assert_eq!(twopc["counts"]["lost"], 0);
    let b = cell(&html, "anomalies-twopc-inject").unwrap();
    assert!(b.contains("class=\"clean\"") && !b.contains("data-kind="), "{b}");

    // Offline: the copy gets the same page without a cluster.
    let copy = base.join("copy");
    copy_dir(&run_dir, &copy);
    let out = Command::new(common::bin()).arg("check").arg(&copy).output().expect("run sinkhole check");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let again = std::fs::read_to_string(copy.join("report.html")).expect("sinkhole check writes report.html");
    let strip = |h: &str| h.replace(&run_dir.display().to_string(), "").replace(&copy.display().to_string(), "");
    assert_eq!(strip(&again), strip(&html), "the re-checked report differs");
    let _ = std::fs::remove_dir_all(&base);
}
