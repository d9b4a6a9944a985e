//! Scenario loading: the shipped scenarios load, and each kind of mistake
//! gets one error naming the file, the line and the field.
use std::path::PathBuf;

use sinkhole_rig::scenario::{self, ExpectWord, Expectation, FaultKind, Problem, When};
use sinkhole_workloads::model::SinkMode;

fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios")
}

const GOOD: &str = "\
name: t
cluster:
  brokers: 1
  kafka: 4.4.0
  broker_config:
    transaction.max.timeout.ms: 60000
topic:
  partitions: 3
  replication_factor: 1
job:
  parallelism: 2
  records_per_subtask: 100
  checkpoint_interval_ms: 1000
  transaction_timeout_ms: 5000
modes: [legacy, kip939]
faults:
  - kind: job-outage
    when: {after_checkpoint_persisted: 3}
    duration_ms: 12000
expect:
  legacy: {lost: \">0\"}
  kip939: clean
";

/// `GOOD` with line `line` (1-based) replaced.
fn with_line(line: usize, text: &str) -> String {
    let mut lines: Vec<&str> = GOOD.lines().collect();
    lines[line - 1] = text;
    lines.join("\n") + "\n"
}

fn problems(text: &str) -> Vec<Problem> {
    match scenario::from_str(text, "bad.yaml") {
        Ok(s) => panic!("accepted: {s:?}"),
        Err(e) => {
            eprintln!("{}", e.render());
            e.problems().to_vec()
        }
    }
}

/// Exactly one problem, at `line`, about `field`, saying `needle`.
#[track_caller]
fn one(text: &str, line: u64, field: &str, needle: &str) -> Problem {
    let ps = problems(text);
    assert_eq!(ps.len(), 1, "one problem expected: {ps:#?}");
    let p = ps.into_iter().next().unwrap();
    assert_eq!(p.file, "bad.yaml");
    assert_eq!((p.line, p.field.as_str()), (line, field), "{p}");
    assert!(p.message.contains(needle), "{p} should say {needle:?}");
    assert!(p.to_string().starts_with(&format!("bad.yaml:{line}:")), "{p}");
    p
}

#[test]
fn the_good_one_loads() {
    let s = scenario::from_str(GOOD, "good.yaml").expect("valid");
    assert_eq!(s.modes, vec![SinkMode::Legacy, SinkMode::Kip939]);
    assert_eq!(s.faults[0].when, When::CheckpointPersisted(3));
}

#[test]
fn shipped_scenarios_load() {
    let long = scenario::load(&scenarios_dir().join("flip319-long-outage.yaml")).expect("long outage");
    // `4.4.0` looks like a float to YAML 1.1 readers: it must stay a string.
    assert_eq!(long.cluster.kafka, "4.4.0");
    assert_eq!(long.job.transaction_timeout_ms, 5000);
    assert_eq!(long.faults[0].kind, FaultKind::JobOutage);
    assert_eq!(long.faults[0].duration_ms, Some(12000));
    assert_eq!(long.expect[&SinkMode::TwopcInject], Expectation::Word(ExpectWord::Clean));
    assert_eq!(
        long.cluster.broker_config["transaction.abort.timed.out.transaction.cleanup.interval.ms"].to_string(),
        "500"
    );
    let short = scenario::load(&scenarios_dir().join("flip319-short-outage.yaml")).expect("short outage");
    assert!(short.faults[0].duration_ms.unwrap() < short.job.transaction_timeout_ms as u64);
    assert!(short.expect.values().all(|e| *e == Expectation::Word(ExpectWord::Clean)));
    let kr = scenario::load(&scenarios_dir().join("kill-restore.yaml")).expect("kill-restore");
    assert_eq!(kr.modes.len(), 5);
    assert!(kr.faults.iter().any(|f| f.kind == FaultKind::BrokerRestart));
    assert!(kr.faults.iter().filter(|f| f.kind == FaultKind::KillWorkers).count() >= 2);
    assert!(!kr.expect.contains_key(&SinkMode::RdkafkaTxn));
}

#[test]
fn a_missing_file_names_the_file() {
    let e = scenario::load(std::path::Path::new("/no/such/scenario.yaml")).unwrap_err();
    assert!(e.to_string().contains("/no/such/scenario.yaml"), "{e}");
}

#[test]
fn yaml_syntax_error() {
    // The parser notices the unclosed list at the next key.
    let p = one(&with_line(15, "modes: [legacy, kip939"), 16, "faults", "':'");
    assert!(p.column > 0);
    one(&with_line(11, "  parallelism: 2: 3"), 11, "job.parallelism", "");
}

#[test]
fn wrong_type() {
    one(&with_line(11, "  parallelism: two"), 11, "job.parallelism", "u32");
}

#[test]
fn unknown_field() {
    one(&with_line(12, "  records_per_subtsk: 100"), 12, "job.records_per_subtsk", "unknown field");
}

#[test]
fn missing_field() {
    one(&with_line(12, "  # records_per_subtask: 100"), 10, "job", "missing field `records_per_subtask`");
    one(&GOOD.replace("modes: [legacy, kip939]\n", ""), 1, "(document)", "missing field `modes`");
}

#[test]
fn unknown_mode_name() {
    one(&with_line(15, "modes: [legacy, flink]"), 15, "modes[1]", "flink");
}

#[test]
fn unknown_mode_in_expect() {
    one(&with_line(22, "  kip-939: clean"), 22, "expect.kip-939", "kip-939");
}

#[test]
fn expectation_for_a_mode_not_run() {
    one(&with_line(22, "  twopc-inject: clean"), 22, "expect.twopc-inject", "not in modes");
}

#[test]
fn bad_condition() {
    one(&with_line(21, "  legacy: {lost: \"more than 0\"}"), 21, "expect.legacy.lost", "does not parse");
}

#[test]
fn bad_expectation_shape() {
    one(&with_line(21, "  legacy: dirty"), 21, "expect.legacy", "clean");
}

#[test]
fn zero_parallelism() {
    one(&with_line(11, "  parallelism: 0"), 11, "job.parallelism", "≥ 1");
}

#[test]
fn zero_records() {
    one(&with_line(12, "  records_per_subtask: 0"), 12, "job.records_per_subtask", "≥ 1");
}

#[test]
fn checkpoint_interval_too_small() {
    one(&with_line(13, "  checkpoint_interval_ms: 5"), 13, "job.checkpoint_interval_ms", "≥ 10");
}

#[test]
fn transaction_timeout_above_broker_max() {
    // The scenario's broker max is 60000 (line 6).
    one(
        &with_line(14, "  transaction_timeout_ms: 70000"),
        14,
        "job.transaction_timeout_ms",
        "transaction.max.timeout.ms",
    );
    one(&with_line(14, "  transaction_timeout_ms: 0"), 14, "job.transaction_timeout_ms", "> 0");
}

#[test]
fn broker_count() {
    one(&with_line(3, "  brokers: 2"), 3, "cluster.brokers", "1, 3 or 5");
}

#[test]
fn replication_factor_above_brokers() {
    one(&with_line(9, "  replication_factor: 3"), 9, "topic.replication_factor", "number of brokers");
}

#[test]
fn min_insync_above_rf() {
    one(
        &with_line(9, "  replication_factor: 1\n  min_insync_replicas: 2"),
        10,
        "topic.min_insync_replicas",
        "replication_factor",
    );
}

#[test]
fn rig_owned_broker_config() {
    one(&with_line(6, "    node.id: 7"), 6, "cluster.broker_config[node.id]", "set by sinkhole");
}

#[test]
fn empty_and_duplicate_modes() {
    one(
        &with_line(15, "modes: []\nexpect: {}").replace("expect:\n  legacy: {lost: \">0\"}\n  kip939: clean\n", ""),
        15,
        "modes",
        "at least one",
    );
    // (the `expect` block above is dropped with the modes)
    one(&with_line(15, "modes: [legacy, kip939, legacy]"), 15, "modes[2]", "twice");
}

#[test]
fn fault_without_duration() {
    one(&with_line(19, "    name: outage"), 17, "faults[0].duration_ms", "needs duration_ms");
}

#[test]
fn worker_fault_on_a_subtask_that_does_not_exist() {
    let t = with_line(17, "  - kind: kill-workers\n    target: [0, 2]").replace("    duration_ms: 12000\n", "");
    one(&t, 18, "faults[0].target[1]", "subtask 2 does not exist");
}

#[test]
fn coordinator_target_on_a_worker_fault() {
    let t = with_line(17, "  - kind: pause-workers\n    target: txn-coordinator");
    one(&t, 18, "faults[0].target", "txn-coordinator is a broker");
}

#[test]
fn broker_fault_on_a_node_that_does_not_exist() {
    let t = with_line(17, "  - kind: broker-pause\n    target: [2]");
    one(&t, 18, "faults[0].target[0]", "node 2 does not exist");
}

#[test]
fn checkpoint_zero() {
    one(
        &with_line(18, "    when: {after_checkpoint_persisted: 0}"),
        18,
        "faults[0].when.after_checkpoint_persisted",
        "≥ 1",
    );
}

#[test]
fn unknown_fault_kind() {
    one(&with_line(17, "  - kind: broker-explode"), 17, "faults[0].kind", "broker-explode");
}

#[test]
fn several_problems_each_reported() {
    let t = with_line(11, "  parallelism: 0").replace("  brokers: 1", "  brokers: 4");
    let ps = problems(&t);
    let fields: Vec<(&str, u64)> = ps.iter().map(|p| (p.field.as_str(), p.line)).collect();
    assert_eq!(fields, vec![("cluster.brokers", 3), ("job.parallelism", 11)], "{ps:#?}");
}

#[test]
fn alias_bombs_are_stopped() {
    let mut t = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    let mut prev = 'a';
    for c in 'b'..='k' {
        t.push_str(&format!(
            "{c}: &{c} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
        ));
        prev = c;
    }
    let e = scenario::from_str(&t, "bomb.yaml").unwrap_err();
    assert_eq!(e.problems().len(), 1, "{e}");
}

fn sinkhole(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_sinkhole")).args(args).output().expect("run sinkhole")
}

#[test]
fn run_refuses_a_bad_scenario_with_exit_2_and_one_line_per_problem() {
    let dir = std::env::temp_dir().join(format!("sinkhole-run-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.yaml");
    std::fs::write(&file, with_line(11, "  parallelism: 0").replace("  brokers: 1", "  brokers: 4")).unwrap();
    let results = dir.join("results");
    let o = sinkhole(&["run", file.to_str().unwrap(), "--results", results.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let f = file.display();
    assert!(
        err.contains(&format!("sinkhole: error: {f}:3:12: cluster.brokers: 4: use 1, 3 or 5 KRaft nodes\n")),
        "{err}"
    );
    assert!(err.contains(&format!("\n{f}:11:16: job.parallelism: must be ≥ 1")), "{err}");
    assert!(!results.exists(), "nothing is written for bad input");

    let o = sinkhole(&["run", scenarios_dir().join("flip319-long-outage.yaml").to_str().unwrap(), "--mode", "flink"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--mode flink: unknown mode"));
    let o = sinkhole(&["run", dir.join("missing.yaml").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.yaml: cannot read the scenario"));
    std::fs::remove_dir_all(&dir).unwrap();
}
