//! Scenario loading: the shipped scenarios load, and each kind of mistake
//! gets one error naming the file, the line and the field.
use std::path::PathBuf;

use sinkhole_model::SinkMode;
use sinkhole_scenario::{ExpectWord, Expectation, FaultKind, Problem, When};

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
    match sinkhole_scenario::from_str(text, "bad.yaml") {
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
    assert!(p.column > 0, "{p}: a column");
    assert!(p.to_string().starts_with(&format!("bad.yaml:{line}:")), "{p}");
    p
}

#[test]
fn the_good_one_loads() {
    let s = sinkhole_scenario::from_str(GOOD, "good.yaml").expect("valid");
    assert_eq!(s.modes, vec![SinkMode::Legacy, SinkMode::Kip939]);
    assert_eq!(s.faults[0].when, When::CheckpointPersisted(3));
}

#[test]
fn shipped_scenarios_load() {
    let long = sinkhole_scenario::load(&scenarios_dir().join("flip319-long-outage.yaml")).expect("long outage");
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
    let short = sinkhole_scenario::load(&scenarios_dir().join("flip319-short-outage.yaml")).expect("short outage");
    assert!(short.faults[0].duration_ms.unwrap() < short.job.transaction_timeout_ms as u64);
    assert!(short.expect.values().all(|e| *e == Expectation::Word(ExpectWord::Clean)));
    let kr = sinkhole_scenario::load(&scenarios_dir().join("kill-restore.yaml")).expect("kill-restore");
    assert_eq!(kr.modes.len(), 5);
    assert!(kr.faults.iter().any(|f| f.kind == FaultKind::BrokerRestart));
    assert!(kr.faults.iter().filter(|f| f.kind == FaultKind::KillWorkers).count() >= 2);
    assert!(!kr.expect.contains_key(&SinkMode::RdkafkaTxn));
}

#[test]
fn a_missing_file_names_the_file() {
    let e = sinkhole_scenario::load(std::path::Path::new("/no/such/scenario.yaml")).unwrap_err();
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
    // The flink section's subtask and parallelism bounds follow job.parallelism: with none to
    // follow, the one problem is job.parallelism's own (not a panic on `0 - 1`).
    let flink = with_flink("flink: {resubmit_parallelism: 1, slow_snapshot: {subtask: 0, checkpoint: 4, ms: 5000}}")
        .replace("  parallelism: 2\n", "  parallelism: 0\n");
    one(&flink, 11, "job.parallelism", "≥ 1");
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
    let e = sinkhole_scenario::from_str(&t, "bomb.yaml").unwrap_err();
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

// ---------------------------------------------------------------------------
// Fault parameters, targets, triggers and schedules (docs/SCENARIOS.md)

/// `GOOD` with its one fault (lines 17-19) replaced by `fault` (a YAML list
/// item starting at line 17).
fn with_fault(fault: &str) -> String {
    let mut lines: Vec<&str> = GOOD.lines().collect();
    lines.splice(16..19, fault.lines());
    lines.join("\n") + "\n"
}

#[test]
fn every_shipped_scenario_validates() {
    let mut n = 0;
    for e in std::fs::read_dir(scenarios_dir()).unwrap() {
        let path = e.unwrap().path();
        if !matches!(path.extension().and_then(|x| x.to_str()), Some("yaml" | "yml")) {
            continue;
        }
        if let Err(e) = sinkhole_scenario::load(&path) {
            panic!("{} does not validate:\n{}", path.display(), e.render());
        }
        n += 1;
    }
    assert!(n >= 4, "only {n} scenarios found");
}

#[test]
fn the_new_fault_kinds_load() {
    let t = with_fault(
        "  - {kind: net-partition, from: [workers], to: [broker-1], direction: one-way, when: {at_ms: 1000}, duration_ms: 500}
  - {kind: net-delay, from: [worker-1], to: [brokers], delay_ms: 200, jitter_ms: 50, when: {every_ms: 5000}, times: 2, duration_ms: 1000}
  - {kind: net-loss, from: [workers], to: [brokers], probability: 0.2, when: {at_ms: 1000}}
  - {kind: net-blackhole, target: txn-coordinator, when: {checkpoint_triggered: 2}, duration_ms: 800}
  - {kind: net-reset, from: [workers], to: [broker-1], when: {commit_started: 3}}
  - {kind: protocol-error, apis: [END_TXN, AddPartitionsToTxn], error: CONCURRENT_TRANSACTIONS, transactional_id: {subtask: 1}, nth: 2, when: {txn_opened: {subtask: 0, checkpoint: 2}}}
  - {kind: protocol-drop, apis: [EndTxn], frames: response, when: {checkpoint_acked: {checkpoint: 3, subtask: 1}}, duration_ms: 100}
  - {kind: protocol-delay, apis: [Produce], delay_ms: 300, probability: 0.5, when: {at_ms: 100}}
  - {kind: protocol-error, apis: [InitProducerId], error: 15, when: {at_ms: 100}}
  - {kind: drop-notification, target: [1], checkpoint: 3, when: {checkpoint_persisted: 3}}
  - {kind: delay-notification, delay_ms: 2000, when: {at_ms: 3000}}
  - {kind: decline-checkpoint, target: all, when: {checkpoint_triggered: 4}}
  - {kind: coordinator-crash, when: {after_checkpoint_persisted: 5}}
  - {kind: broker-kill, target: {leader: 2}, when: {at_ms: 100}, duration_ms: 1000}
  - {kind: broker-stop, target: controller, when: {at_ms: 100}, duration_ms: 1000}
  - {kind: broker-pause, target: {txn-coordinator: 1}, when: {at_ms: 100}, duration_ms: 1000}
  - {kind: rolling-restart, when: {checkpoint_notified: 4}}",
    );
    let s = sinkhole_scenario::from_str(&t, "new.yaml").unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!(s.faults.len(), 17);
    assert_eq!(s.faults[12].kind, FaultKind::CoordinatorCrash);
}

#[test]
fn missing_required_parameter() {
    let t = with_fault("  - kind: net-delay\n    from: [workers]\n    to: [brokers]\n    when: {at_ms: 1000}");
    one(&t, 17, "faults[0].delay_ms", "net-delay needs delay_ms");
    let t = with_fault("  - kind: net-partition\n    to: [brokers]\n    when: {at_ms: 1000}");
    one(&t, 17, "faults[0].from", "needs from and to");
    let t = with_fault("  - kind: protocol-drop\n    when: {at_ms: 1000}");
    one(&t, 17, "faults[0].apis", "needs apis");
    let t = with_fault("  - kind: protocol-error\n    apis: [EndTxn]\n    when: {at_ms: 1000}");
    one(&t, 17, "faults[0].error", "needs error");
    let t = with_fault("  - kind: net-loss\n    from: [workers]\n    to: [brokers]\n    when: {at_ms: 1000}");
    one(&t, 17, "faults[0].probability", "needs probability");
    let t = with_fault("  - kind: net-blackhole\n    when: {at_ms: 1000}");
    one(&t, 17, "faults[0].target", "needs target");
    let t = with_fault("  - kind: delay-notification\n    when: {at_ms: 1000}");
    one(&t, 17, "faults[0].delay_ms", "needs delay_ms");
}

#[test]
fn parameter_of_another_kind() {
    let t = with_fault("  - kind: kill-workers\n    when: {at_ms: 1000}\n    delay_ms: 100");
    let p = one(&t, 19, "faults[0].delay_ms", "kill-workers does not take delay_ms");
    assert!(p.message.contains("net-delay, protocol-delay, delay-notification"), "names the kinds that take it: {p}");
    let t = with_fault("  - kind: broker-kill\n    target: [1]\n    frames: request\n    when: {at_ms: 1000}");
    one(&t, 19, "faults[0].frames", "protocol-drop, protocol-delay, protocol-error");
    let t = with_fault("  - kind: rolling-restart\n    target: [1]\n    when: {at_ms: 1000}");
    sinkhole_scenario::from_str(&with_fault("  - {kind: rolling-restart, target: all, when: {at_ms: 1}}"), "r.yaml")
        .expect("all is every broker");
    one(&t, 18, "faults[0].target", "rolling-restart does not take target");
    let t = with_fault("  - kind: coordinator-crash\n    when: {after_checkpoint_persisted: 2}\n    duration_ms: 10");
    one(&t, 19, "faults[0].duration_ms", "does not take duration_ms");
}

#[test]
fn group_that_does_not_exist() {
    let t = with_fault("  - kind: net-partition\n    from: [workers]\n    to: [broker-7]\n    when: {at_ms: 1000}")
        .replace("  brokers: 1", "  brokers: 3");
    let p = one(&t, 19, "faults[0].to[0]", "broker-7: no such broker");
    assert!(p.message.contains("broker-1..broker-3"), "{p}");
    let t = with_fault("  - kind: net-reset\n    from: [worker-2]\n    to: [brokers]\n    when: {at_ms: 1000}");
    one(&t, 18, "faults[0].from[0]", "worker-2: no such worker");
    let t = with_fault("  - kind: net-reset\n    from: [workers]\n    to: [worker-0]\n    when: {at_ms: 1000}");
    one(&t, 19, "faults[0].to", "no broker on either side");
}

#[test]
fn unknown_api_name() {
    let t = with_fault("  - kind: protocol-drop\n    apis: [EndTxn, EndTransaction]\n    when: {at_ms: 1000}");
    let p = one(&t, 18, "faults[0].apis[1]", "\"EndTransaction\" is not a Kafka API");
    assert!(p.column > 10, "points at the second name: {p}");
}

#[test]
fn unknown_error_name() {
    let t =
        with_fault("  - kind: protocol-error\n    apis: [EndTxn]\n    error: NOT_A_COORDINATOR\n    when: {at_ms: 1}");
    one(&t, 19, "faults[0].error", "not a Kafka error name");
    let t = with_fault("  - kind: protocol-error\n    apis: [EndTxn]\n    error: 0\n    when: {at_ms: 1}");
    one(&t, 19, "faults[0].error", "NONE");
}

#[test]
fn probability_out_of_range() {
    let t = with_fault(
        "  - kind: net-loss\n    from: [workers]\n    to: [brokers]\n    probability: 1.5\n    when: {at_ms: 1}",
    );
    one(&t, 20, "faults[0].probability", "(0, 1]");
    let t = with_fault("  - kind: protocol-drop\n    apis: [Produce]\n    probability: 0\n    when: {at_ms: 1}");
    one(&t, 19, "faults[0].probability", "(0, 1]");
}

#[test]
fn checkpoint_zero_and_missing_subtask_in_event_triggers() {
    let t = with_fault("  - kind: kill-workers\n    when: {checkpoint_acked: {checkpoint: 0, subtask: 1}}");
    one(&t, 18, "faults[0].when.checkpoint_acked.checkpoint", "≥ 1");
    let t = with_fault("  - kind: kill-workers\n    when: {checkpoint_acked: {checkpoint: 2, subtask: 2}}");
    one(&t, 18, "faults[0].when.checkpoint_acked.subtask", "subtask 2 does not exist");
    let t = with_fault("  - kind: kill-workers\n    when: {commit_started: 0}");
    one(&t, 18, "faults[0].when.commit_started", "≥ 1");
    let t = with_fault("  - kind: drop-notification\n    checkpoint: 0\n    when: {at_ms: 1}");
    one(&t, 18, "faults[0].checkpoint", "≥ 1");
}

#[test]
fn leader_partition_out_of_range() {
    let t = with_fault("  - kind: broker-kill\n    target: {leader: 3}\n    when: {at_ms: 1000}");
    one(&t, 18, "faults[0].target.leader", "partition 3, but the topic has 3 partition(s)");
}

#[test]
fn proxy_off_with_a_network_fault() {
    let t = with_fault("  - name: slow\n    kind: net-delay\n    from: [workers]\n    to: [brokers]\n    delay_ms: 100\n    when: {at_ms: 1}")
        .replace("  kafka: 4.4.0\n", "  kafka: 4.4.0\n  proxy: false\n");
    let p = one(&t, 5, "cluster.proxy", "faults[0] (slow) is a network fault");
    assert!(p.message.contains("only the proxy"), "{p}");
}

#[test]
fn after_ms_goes_with_event_triggers_only() {
    let t = with_fault("  - kind: kill-workers\n    when: {at_ms: 1000}\n    after_ms: 500");
    one(&t, 19, "faults[0].after_ms", "add it to the time");
    let ok = with_fault(
        "  - kind: kill-workers\n    when: {checkpoint_acked: {checkpoint: 2, subtask: 1}}\n    after_ms: 500",
    );
    let s = sinkhole_scenario::from_str(&ok, "f.yaml").unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!(s.faults.last().unwrap().after_ms, Some(500));
}

#[test]
fn times_without_every_ms() {
    let t = with_fault("  - kind: kill-workers\n    when: {at_ms: 1000}\n    times: 3");
    one(&t, 19, "faults[0].times", "every_ms");
    let t = with_fault("  - kind: kill-workers\n    when: {every_ms: 50}");
    one(&t, 18, "faults[0].when.every_ms", "≥ 100");
    let t = with_fault("  - kind: pause-workers\n    when: {every_ms: 1000}\n    duration_ms: 1000");
    one(&t, 19, "faults[0].duration_ms", "must end before it fires again");
}

#[test]
fn schedule_end_before_start() {
    let t = GOOD.replace("expect:", "schedule:\n  mix: workers\n  start_ms: 5000\n  end_ms: 4000\nexpect:");
    one(&t, 23, "schedule.end_ms", "must be after start_ms");
    let t = GOOD.replace("expect:", "schedule:\n  mix: all\n  end_ms: 9000\n  quiet_ms: [3000, 1000]\nexpect:");
    one(&t, 23, "schedule.quiet_ms", "minimum is above the maximum");
    let t = GOOD
        .replace("expect:", "schedule: {mix: network, end_ms: 9000}\nexpect:")
        .replace("  kafka: 4.4.0\n", "  kafka: 4.4.0\n  proxy: false\n");
    one(&t, 21, "schedule.mix", "need the proxy");
}

#[test]
fn coordinator_crash_needs_the_persist_trigger() {
    let t = with_fault("  - kind: coordinator-crash\n    when: {at_ms: 1000}");
    one(&t, 18, "faults[0].when", "after_checkpoint_persisted");
}

#[test]
fn image_without_containers() {
    let t = GOOD.replace("  kafka: 4.4.0\n", "  kafka: 4.4.0\n  image: sinkhole/kafka:4.4.0\n");
    one(&t, 5, "cluster.image", "containers");
    let t = GOOD.replace("  kafka: 4.4.0\n", "  kafka: 4.4.0\n  backend: containers\n  image: sinkhole/kafka:4.4.0\n");
    sinkhole_scenario::from_str(&t, "c.yaml").expect("an image with the containers backend");
}

#[test]
fn transactional_id_of_a_subtask_that_does_not_exist() {
    let t = with_fault(
        "  - kind: protocol-drop\n    apis: [EndTxn]\n    transactional_id: {subtask: 2}\n    when: {at_ms: 1}",
    );
    one(&t, 19, "faults[0].transactional_id.subtask", "subtask 2 does not exist");
}

#[test]
fn validate_command_reports_every_file() {
    let dir = std::env::temp_dir().join(format!("sinkhole-validate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.yaml");
    let bad = dir.join("bad.yaml");
    std::fs::write(&good, GOOD).unwrap();
    std::fs::write(
        &bad,
        with_fault(
            "  - kind: net-delay\n    from: [workers]\n    to: [broker-7]\n    delay_ms: 10\n    when: {at_ms: 1}",
        ),
    )
    .unwrap();

    let o = sinkhole(&["validate", good.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out, format!("{}: ok (1 faults, modes legacy, kip939)\n", good.display()));

    let o = sinkhole(&["validate", good.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].ends_with(": ok (1 faults, modes legacy, kip939)"), "{out}");
    assert_eq!(
        lines[1],
        format!("{}:19:10: faults[0].to[0]: broker-7: no such broker (brokers are broker-1..broker-1)", bad.display())
    );
    // the excerpt: the line and a caret under column 10
    assert_eq!(lines[3], "19 |     to: [broker-7]", "{out}");
    assert_eq!(lines[4], "   |          ^", "{out}");

    let o = sinkhole(&["validate", "--json", good.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["ok"], true);
    assert_eq!(v[1]["ok"], false);
    assert_eq!(v[1]["problems"][0]["field"], "faults[0].to[0]");
    assert_eq!(v[1]["problems"][0]["line"], 19);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `sinkhole validate --explain`: each mode's premises once resolved, the defaults with why,
/// the scenario's own as its own, an empty entry as none; in text and in JSON.
#[test]
fn validate_explain_says_what_each_expectation_rests_on() {
    let dir = std::env::temp_dir().join(format!("sinkhole-validate-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let bare = data.join("flip319-no-premise.yaml");
    let text = std::fs::read_to_string(&bare).unwrap().replace("modes: [legacy]", "modes: [legacy, twopc-inject]")
        + "  twopc-inject: clean\npremise:\n  twopc-inject: {}\n";
    let off = dir.join("off.yaml");
    std::fs::write(&off, text).unwrap();

    let o = sinkhole(&["validate", "--explain", bare.to_str().unwrap(), off.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].ends_with("flip319-no-premise.yaml: ok (1 faults, modes legacy)"), "{out}");
    assert_eq!(lines[1], "premises:");
    assert!(lines[2].starts_with("  legacy  timeout_abort {checkpoint: 3}"), "{out}");
    assert!(
        lines[2]
            .contains("default: job-outage-0 keeps the job down for 6000 ms, past the transaction timeout (3000 ms)"),
        "{out}"
    );
    assert!(lines[3].ends_with("off.yaml: ok (1 faults, modes legacy, twopc-inject)"), "{out}");
    assert!(lines[5].starts_with("  legacy        timeout_abort {checkpoint: 3}"), "{out}");
    assert!(lines[6].starts_with("  twopc-inject  none") && lines[6].contains("not even the defaults"), "{out}");
    assert!(lines[7].contains("the default would be outlives_timeout {checkpoint: 3}"), "{out}");
    // Without --explain, as before.
    let o = sinkhole(&["validate", bare.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);

    let o = sinkhole(&["validate", "--explain", "--json", bare.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &v[0]["premises"][0];
    assert_eq!((p["mode"].as_str(), p["source"].as_str()), (Some("legacy"), Some("defaults")), "{v}");
    assert_eq!(p["premises"][0]["premise"], "timeout_abort {checkpoint: 3}");
    assert_eq!(p["premises"][0]["default"], true);
    let o = sinkhole(&["validate", "--json", bare.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v[0].get("premises").is_none(), "only with --explain: {v}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `GOOD` with the flink-kafkasink mode and a flink section of `flink` (line 23).
fn with_flink(flink: &str) -> String {
    GOOD.replace("modes: [legacy, kip939]", "modes: [legacy, kip939, flink-kafkasink]") + flink + "\n"
}

#[test]
fn flink_versions_naming_and_connector_jars_are_checked_at_their_field() {
    let ok =
        sinkhole_scenario::from_str(&with_flink("flink: {version: 2.2.1, naming: POOLING, taskmanagers: 2}"), "f.yaml")
            .unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!(ok.flink_spec().connector(), "5.0.0-2.2");
    // The defaults, without a section.
    let d = sinkhole_scenario::from_str(&with_flink(""), "f.yaml").unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!((d.flink_spec().version.as_str(), d.flink_spec().taskmanagers), ("2.2.1", 1));
    one(&with_flink("flink: {version: 2.9}"), 23, "flink.version", "three dot-separated numbers");
    one(
        &with_flink("flink: {version: 2.1.0}"),
        23,
        "flink.version",
        "no flink-connector-kafka is known for Flink 2.1.0",
    );
    one(&with_flink("flink: {version: 2.0.1, connector: 5.0.0-2.2}"), 23, "flink.connector", "built for Flink 2.2");
    one(&with_flink("flink: {version: 1.20.3, naming: POOLING}"), 23, "flink.naming", "no POOLING naming");
    one(&with_flink("flink: {taskmanagers: 3}"), 23, "flink.taskmanagers", "some would run no subtask");
    // FLINK-40689's precondition: an epoch the InitProducerId driver can stop on.
    let e = sinkhole_scenario::from_str(&with_flink("flink: {naming: POOLING, drive_epoch: 32765}"), "f.yaml")
        .unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!(e.flink_spec().drive_epoch, Some(32765));
    one(&with_flink("flink: {drive_epoch: 32766}"), 23, "flink.drive_epoch", "would rotate the producer id");
    one(&with_flink("flink: {drive_epoch: 0}"), 23, "flink.drive_epoch", "use 1 to 32765");
    // FLINK-40626's setting: a downscaled resubmission, a checkpoint held pending.
    let r = sinkhole_scenario::from_str(
        &with_flink(
            "flink: {naming: POOLING, resubmit_parallelism: 1, slow_snapshot: {subtask: 0, checkpoint: 4, ms: 5000}}",
        ),
        "f.yaml",
    )
    .unwrap_or_else(|e| panic!("{}", e.render()));
    assert_eq!(r.flink_spec().resubmit_parallelism, Some(1));
    assert_eq!(r.flink_spec().slow_snapshot.map(|s| s.arg()), Some("0:4:5000".to_string()));
    one(&with_flink("flink: {resubmit_parallelism: 3}"), 23, "flink.resubmit_parallelism", "not upscale");
    one(&with_flink("flink: {resubmit_parallelism: 0}"), 23, "flink.resubmit_parallelism", "use 1 to");
    one(
        &with_flink("flink: {slow_snapshot: {subtask: 2, checkpoint: 4, ms: 5000}}"),
        23,
        "flink.slow_snapshot.subtask",
        "subtasks 0 to 1",
    );
    one(
        &with_flink("flink: {slow_snapshot: {subtask: 0, checkpoint: 4, ms: 60000}}"),
        23,
        "flink.slow_snapshot.ms",
        "or the checkpoint expires",
    );
    one(
        &with_flink("flink: {slow_snapshot: {subtask: 0, checkpoint: 0, ms: 10}}"),
        23,
        "flink.slow_snapshot.checkpoint",
        "numbered from 1",
    );
    // A known bug's failure: job-failed with the cause it must name.
    let t = with_flink("flink: {naming: POOLING}")
        .replace("expect:\n", "expect:\n  flink-kafkasink: {job_failed: InvalidPidMappingException}\n");
    let s = sinkhole_scenario::from_str(&t, "f.yaml").unwrap_or_else(|e| panic!("{}", e.render()));
    assert!(s.expect[&sinkhole_model::SinkMode::FlinkKafkasink].wants_failure());
    let p = problems(&with_flink("flink: {naming: pooled}"));
    assert_eq!(p[0].field, "flink.naming", "{p:?}");
    let dir = std::env::temp_dir().join(format!("sinkhole-scenario-jar-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.jar"), b"PK\x03\x04 nothing of Flink's").unwrap();
    let t = with_flink("flink: {connector_jar: notes.jar}");
    let e = sinkhole_scenario::from_str(&t, dir.join("s.yaml").to_str().unwrap()).unwrap_err();
    let p = &e.problems()[0];
    assert_eq!((p.line, p.field.as_str()), (23, "flink.connector_jar"), "{p}");
    assert!(p.message.contains("not a flink-connector-kafka jar") && p.message.contains("KafkaSink.class"), "{p}");
    let _ = std::fs::remove_dir_all(&dir);
    one(&(GOOD.to_string() + "flink: {version: 2.2.1}\n"), 23, "flink", "modes has no flink-kafkasink");
}

#[test]
fn flink_workers_are_the_taskmanagers_and_then_the_jobmanager() {
    let t = with_flink("flink: {taskmanagers: 1}")
        .replace("  - kind: job-outage\n", "  - kind: kill-workers\n    target: [1]\n")
        .replace("    duration_ms: 12000\n", "");
    sinkhole_scenario::from_str(&t, "f.yaml").unwrap_or_else(|e| panic!("{}", e.render()));
    let t = t.replace("target: [1]", "target: [2]");
    let p = problems(&t);
    assert!(p[0].message.contains("worker 2 does not exist (valid: 0..=1)"), "{p:?}");
}

/// `GOOD` with a `source:` line after its last line (line 23).
fn with_source(source: &str) -> String {
    format!("{GOOD}source: {source}\n")
}

#[test]
fn a_share_group_source_loads_with_its_defaults() {
    let s =
        sinkhole_scenario::from_str(&with_source("{type: share-group, ack: before-commit, lock_ms: 4000}"), "s.yaml")
            .expect("valid");
    let sh = s.share_source().expect("a share-group source");
    assert_eq!((sh.ack.name(), sh.batch, sh.lock_ms, sh.partitions), ("before-commit", 500, 4000, 2));
    assert!(sinkhole_scenario::from_str(GOOD, "g.yaml").unwrap().share_source().is_none());
}

#[test]
fn share_group_source_mistakes_name_their_field() {
    one(&with_source("{type: share-group, ack: sometimes}"), 23, "source.ack", "before-commit, after-commit, at-poll");
    one(
        &with_source("{type: share-group, lock_ms: 1000}"),
        23,
        "source.lock_ms",
        "not above job.checkpoint_interval_ms",
    );
    one(&with_source("{type: share-group, lock_ms: 500}"), 23, "source.lock_ms", "1000 to 3600000 ms");
    one(&with_source("{type: share-group, delivery_limit: 1}"), 23, "source.delivery_limit", "2 to 10");
    one(&with_source("{type: share-group, partitions: 3}"), 23, "source.partitions", "1 to job.parallelism");
    one(&with_source("{type: generated, batch: 5}"), 23, "source.batch", "share-group setting");
    // A broker without share groups, and a mode that cannot read one.
    let old = with_source("{type: share-group}").replace("kafka: 4.4.0", "kafka: 4.0.2");
    one(&old, 4, "cluster.kafka", "no usable share groups");
    let rdk = with_source("{type: share-group}")
        .replace("[legacy, kip939]", "[legacy, rdkafka-txn]")
        .replace("  kip939: clean\n", "");
    one(&rdk, 15, "modes[1]", "rdkafka-txn cannot read a share-group source");
}

#[test]
fn share_group_triggers_and_targets_need_a_share_group_source() {
    let acked =
        GOOD.replace("when: {after_checkpoint_persisted: 3}", "when: {acknowledged: {subtask: 0, checkpoint: 3}}");
    one(&acked, 18, "faults[0].when.acknowledged", "share-group source's event");
    let s = sinkhole_scenario::from_str(&format!("{acked}source: {{type: share-group}}\n"), "s.yaml")
        .expect("valid with one");
    assert_eq!(s.faults[0].when, When::Acknowledged { subtask: 0, checkpoint: Some(3) });
    let committed = GOOD.replace("when: {after_checkpoint_persisted: 3}", "when: {committed: {subtask: 1}}");
    let s = sinkhole_scenario::from_str(&committed, "c.yaml").expect("committed is any job's event");
    assert_eq!(s.faults[0].when, When::Committed { subtask: 1, checkpoint: None });
    let gc = GOOD
        .replace("kind: job-outage", "kind: broker-kill\n    target: group-coordinator")
        .replace("duration_ms: 12000", "duration_ms: 2000");
    one(&gc, 18, "faults[0].target", "add source: {type: share-group}");
    let ok = format!("{gc}source: {{type: share-group, lock_ms: 5000}}\n");
    sinkhole_scenario::from_str(&ok, "gc.yaml").expect("group-coordinator with a share-group source");
}
