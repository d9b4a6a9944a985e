//! `sinkhole bench-producers` end to end, small (1 broker, 2 subtasks × 3000 records, 1 round):
//! the warm-up run of the rig, then Kafka's own perf test and the rig on the warm-up's cluster,
//! the table on stdout and bench.json with its provenance and every sample; nothing of it left
//! running afterwards. A scenario with faults is refused before any cluster starts (exit 2).
use crate::common;

use std::process::{Command, Output};

use serde_json::Value;

const SCENARIO: &str = "\
name: bench-small
cluster: {brokers: 1}
topic: {partitions: 3, replication_factor: 1}
job: {parallelism: 2, records_per_subtask: 3000, rate_per_subtask: 0, checkpoint_interval_ms: 300,
      transaction_timeout_ms: 60000, restart_delay_ms: 0}
modes: [twopc-inject]
expect: {twopc-inject: clean}
";

fn bench(args: &[&str]) -> Output {
    Command::new(common::bin()).arg("bench-producers").args(args).output().expect("run sinkhole")
}

/// Processes whose command line holds `needle`.
fn running(needle: &str) -> Vec<String> {
    let mut found = vec![];
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(needle) {
                found.push(cmd);
            }
        }
    }
    found
}

#[test]
fn the_wire_producer_and_the_java_perf_test_share_one_cluster_and_leave_nothing() {
    let _serial = common::serial();
    common::dist("4.4.0");
    let dir = common::test_dir("bench");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bench-small.yaml");
    std::fs::write(&file, SCENARIO).unwrap();
    let results = dir.join("results");
    let out = bench(&[file.to_str().unwrap(), "--rounds", "1", "--seed", "5", "--results", results.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("wire producer (twopc-inject)    |    6000 |"), "{stdout}");
    assert!(stdout.contains("Kafka Java producer (perf test) |    6000 |"), "{stdout}");
    assert!(stdout.contains("round by round: median"), "{stdout}");

    let bench_dir = std::fs::read_dir(&results).unwrap().next().expect("a bench directory").unwrap().path();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(bench_dir.join("bench.json")).unwrap()).unwrap();
    assert_eq!(v["schema_version"], 1, "{v}");
    assert_eq!(v["transaction_ms"], 300);
    let samples = v["samples"].as_array().unwrap();
    let kinds: Vec<(u64, bool, &str)> = samples
        .iter()
        .map(|s| (s["round"].as_u64().unwrap(), s["warmup"].as_bool().unwrap(), s["producer"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (0, true, "wire producer (twopc-inject)"),
            (1, false, "Kafka Java producer (perf test)"),
            (1, false, "wire producer (twopc-inject)"),
        ],
        "a warm-up, then round 1 with Java first"
    );
    for s in samples {
        assert_eq!(s["records"], 6000, "{s}");
        assert!(s["records_per_sec"].as_f64().unwrap() > 0.0, "{s}");
    }
    assert_eq!(samples[2]["outcome"], "pass", "{}", samples[2]);
    // Two perf tests, one per subtask, each with its own transactional id and the record size.
    let java = samples[1]["java"].as_array().unwrap();
    assert_eq!(java.len(), 2);
    assert_ne!(java[0]["transactional_id"], java[1]["transactional_id"]);
    let size = v["record"]["java_record_size"].as_u64().unwrap();
    for j in java {
        assert_eq!(j["total"]["records"], 3000, "{j}");
        let log = std::fs::read_to_string(j["log"].as_str().unwrap()).unwrap();
        assert!(log.contains(&format!("transactional.id = {}", j["transactional_id"].as_str().unwrap())), "{log}");
        // The perf test reports MB/s of its values: records × record size.
        let mb = j["total"]["mb_per_sec"].as_f64().unwrap();
        let rate = j["total"]["records_per_sec"].as_f64().unwrap();
        assert!((mb - rate * size as f64 / 1048576.0).abs() < 0.02, "{j}");
    }
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["ratio_to_reference"], 1.0);
    // Nothing of the bench is still running: no broker of its cluster, no perf test.
    let name = bench_dir.file_name().unwrap().to_str().unwrap();
    assert_eq!(running(name), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_scenario_with_faults_is_refused_before_anything_starts() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/flip319-long-outage.yaml");
    let results = common::test_dir("bench-refused");
    let out = bench(&[file.to_str().unwrap(), "--results", results.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the bench compares producers without faults"), "{stderr}");
    assert!(!results.exists(), "nothing written");
}
