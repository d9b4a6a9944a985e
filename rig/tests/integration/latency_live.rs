//! Latency end to end: a small real run (1 broker, 2 subtasks × 2000 records,
//! one kill of every worker) in `legacy` and `at-least-once`, through the
//! binary. It must leave `latency.hlog` (an interval log the hdrhistogram
//! crate reads back) and, in each verdict, a latency summary with samples for
//! every metric the mode has — `recovery` included, since the kill forced a
//! restore.
use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;
use sinkhole_checker::latency::{self, Metric};

const SCENARIO: &str = "\
name: latency-small
cluster:
  brokers: 1
  broker_config:
    transaction.abort.timed.out.transaction.cleanup.interval.ms: 500
topic: {partitions: 2}
job:
  parallelism: 2
  records_per_subtask: 2000
  rate_per_subtask: 1000
  checkpoint_interval_ms: 300
  transaction_timeout_ms: 10000
  restart_delay_ms: 200
modes: [legacy, at-least-once]
faults:
  - {name: kill-all, kind: kill-workers, target: all, when: {at_ms: 1000}}
";

#[test]
fn a_run_with_a_kill_measures_every_latency() {
    let _serial = common::serial();
    common::dist("4.4.0");
    let dir = common::test_dir("latency");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("latency-small.yaml");
    std::fs::write(&file, SCENARIO).unwrap();
    let results = dir.join("results");
    let out = Command::new(env!("CARGO_BIN_EXE_sinkhole"))
        .arg("run")
        .arg(&file)
        .args(["--seed", "11", "--results"])
        .arg(&results)
        .output()
        .expect("run sinkhole");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stdout}");
    assert!(matches!(out.status.code(), Some(0 | 1)), "sinkhole run: {:?}\n{stderr}", out.status);
    let run = std::fs::read_dir(&results).unwrap().next().expect("a run directory").unwrap().path();

    // The interval log: parses, and is tagged <mode>/<metric>.
    let hlog = latency::read_log(&run.join(latency::FILE_NAME)).expect("latency.hlog parses");
    let mut in_log: BTreeMap<String, u64> = BTreeMap::new();
    for i in &hlog {
        assert_eq!(i.duration_ms, latency::WINDOW_MS, "{}", i.tag);
        *in_log.entry(i.tag.clone()).or_default() += i.histogram.len();
    }

    let wanted: [(&str, &[Metric]); 2] = [
        // A two-phase mode with a kill has every metric.
        ("legacy", &Metric::ALL),
        (
            "at-least-once",
            &[Metric::ProduceAck, Metric::PreCommit, Metric::Checkpoint, Metric::Visibility, Metric::Recovery],
        ),
    ];
    for (mode, metrics) in wanted {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(run.join(mode).join("verdict.json")).unwrap()).unwrap();
        assert_eq!(v["job"]["status"], "finished", "{mode}: {}", v["job"]);
        let lat = &v["latency"];
        for m in metrics {
            let s = &lat[m.name()];
            let count = s["count"].as_u64().unwrap_or(0);
            assert!(count > 0, "{mode}: no {m} samples: {lat}");
            let (p50, p99, max) = (s["p50"].as_u64().unwrap(), s["p99"].as_u64().unwrap(), s["max"].as_u64().unwrap());
            assert!(p50 <= s["p90"].as_u64().unwrap() && p99 <= s["p99.9"].as_u64().unwrap() && p99 <= max, "{s}");
            // The log holds the same samples as the summary.
            assert_eq!(in_log.get(&format!("{mode}/{m}")), Some(&count), "{mode}/{m}");
        }
        // The kill forced one restore: exactly one recovery, at least the restart delay long.
        assert_eq!(lat["recovery"]["count"], 1, "{mode}: {lat}");
        assert!(lat["recovery"]["p50"].as_u64().unwrap() >= 200_000, "{mode}: {lat}");
        // The tail saw every record that ended up committed.
        assert!(lat["visibility"]["count"].as_u64().unwrap() >= v["counts"]["committed"].as_u64().unwrap(), "{v}");
        assert!(stdout.contains(&format!("{mode} latency µs p50/p99/max: produce-ack ")), "{stdout}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
