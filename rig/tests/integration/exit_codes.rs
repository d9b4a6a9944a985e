//! The exit-code table, through the binary (README.md, "Exit codes"):
//! 0 every expectation met (inconclusive counted, not failed), 1 an
//! expectation failed (or an inconclusive mode with --fail-on-inconclusive),
//! 2 bad input, 3 the rig itself failed. The judged codes come from
//! `sinkhole check` on copies of the stored run in tests/fixtures/old-results
//! with their expectations edited (no cluster needed); the rig's failure from
//! a cluster that cannot start (Kafka refuses its settings), for `run` and
//! for `matrix`. Every JSON file written carries the provenance.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::files::{copy_dir, read_json};
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/old-results/old-results-20261201T105322-7")
}

fn write_json(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

/// A copy of the stored run, `edit` applied to its directory.
fn stored_run(base: &Path, name: &str, edit: impl FnOnce(&Path)) -> PathBuf {
    let dir = base.join(name);
    copy_dir(&fixture(), &dir);
    edit(&dir);
    dir
}

fn set_expectation(run: &Path, mode: &str, e: Value) {
    let p = run.join(mode).join("verdict.json");
    let mut v = read_json(&p);
    v["expectation"] = e;
    write_json(&p, &v);
}

fn sinkhole(args: &[&str]) -> Output {
    Command::new(common::bin()).args(args).output().expect("run sinkhole")
}

fn check(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["check", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    sinkhole(&args)
}

fn code(o: &Output) -> Option<i32> {
    o.status.code()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn assert_provenance(v: &Value, what: &str) {
    assert_eq!(v["schema_version"], sinkhole_base::provenance::SCHEMA_VERSION, "{what}: {v}");
    assert_eq!(v["version"], sinkhole_base::provenance::VERSION, "{what}");
    assert_eq!(v["git_commit"], sinkhole_base::provenance::GIT_COMMIT, "{what}");
}

#[test]
fn judged_exit_codes_through_check() {
    let base = common::test_dir("exit-codes-check");

    // 0: legacy observed, twopc-inject clean as expected.
    let ok = stored_run(&base, "ok", |_| {});
    let o = check(&ok, &[]);
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    let summary = read_json(&ok.join("summary.json"));
    assert_provenance(&summary, "summary.json");
    assert_provenance(&read_json(&ok.join("legacy").join("verdict.json")), "verdict.json");
    assert_eq!(summary["exit_code"], 0);
    let junit = std::fs::read_to_string(ok.join("junit.xml")).unwrap();
    assert!(junit.contains(&format!("value=\"{}\"", sinkhole_base::provenance::GIT_COMMIT)), "{junit}");

    // 1: twopc-inject expected to lose records, and lost none.
    let failed = stored_run(&base, "failed", |d| set_expectation(d, "twopc-inject", serde_json::json!({"lost": ">0"})));
    let o = check(&failed, &[]);
    assert_eq!(code(&o), Some(1), "{}", err(&o));
    assert!(err(&o).contains("at least one mode did not meet its expectation"), "{}", err(&o));
    let row = &read_json(&failed.join("summary.json"))["modes"][1];
    assert_eq!((&row["outcome"], &row["words"]), (&Value::from("fail"), &Value::from("clean — expected lost>0")));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.lines().any(|l| l.starts_with("twopc-inject") && l.ends_with("| clean — expected lost>0")),
        "{table}"
    );

    // 0, or 1 with --fail-on-inconclusive: legacy expected clean, but its
    // transaction was left open (an uncommitted tail): inconclusive.
    let inconclusive = stored_run(&base, "inconclusive", |d| set_expectation(d, "legacy", "clean".into()));
    let o = check(&inconclusive, &[]);
    assert_eq!(code(&o), Some(0), "inconclusive is counted, not failed: {}", err(&o));
    let row = &read_json(&inconclusive.join("summary.json"))["modes"][0];
    assert_eq!(row["outcome"], "inconclusive");
    assert_eq!(row["inconclusive_cause"], "transaction-left-open");
    assert_eq!(row["words"], "LOST 306, inconclusive — stuck tail, holder unknown", "the lost records first");
    let verdict = read_json(&inconclusive.join("legacy").join("verdict.json"));
    assert_eq!((&verdict["words"], &verdict["inconclusive_cause"]), (&row["words"], &row["inconclusive_cause"]));
    let o = check(&inconclusive, &["--fail-on-inconclusive"]);
    assert_eq!(code(&o), Some(1), "{}", err(&o));
    assert!(err(&o).contains("--fail-on-inconclusive"), "{}", err(&o));
    let s = read_json(&inconclusive.join("summary.json"));
    assert_eq!((&s["exit_code"], &s["fail_on_inconclusive"]), (&Value::from(1), &Value::Bool(true)));

    // 3: a mode the rig failed to run (no verdict, outcome error), beside two
    // that met their expectations. Rows written before the `error` outcome
    // said `fail` with the reason "the rig failed: …": read as error too.
    for (name, outcome) in [("rig-error", "error"), ("rig-error-old", "fail")] {
        let dir = stored_run(&base, name, |d| {
            let p = d.join("summary.json");
            let mut s = read_json(&p);
            let mut row = s["modes"][1].clone();
            row["mode"] = "kip939".into();
            row["outcome"] = outcome.into();
            row["expected_met"] = Value::Null;
            row["reason"] = "the rig failed: running mode kip939: the worker launcher crashed".into();
            row["verdict"] = Value::Null;
            row["checked"] = Value::Bool(false);
            s["modes"].as_array_mut().unwrap().push(row);
            write_json(&p, &s);
        });
        let o = check(&dir, &[]);
        assert_eq!(code(&o), Some(3), "{name}: {}", err(&o));
        assert!(err(&o).contains("the rig itself failed for at least one mode"), "{}", err(&o));
        let s = read_json(&dir.join("summary.json"));
        assert_eq!(s["modes"][2]["outcome"], "error", "{name}");
        let table = String::from_utf8_lossy(&o.stdout);
        assert!(table.lines().any(|l| l.starts_with("kip939") && l.ends_with("| rig error")), "{table}");
        let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
        assert!(junit.contains(r#"errors="1""#) && junit.contains(r#"type="rig""#), "{junit}");
        // A finding beats the rig's failure: 1.
        set_expectation(&dir, "twopc-inject", serde_json::json!({"lost": ">0"}));
        assert_eq!(code(&check(&dir, &[])), Some(1), "{name}");
    }

    // 2: not a results directory; an unknown flag.
    let o = check(&base, &[]);
    assert_eq!(code(&o), Some(2), "{}", err(&o));
    assert_eq!(code(&sinkhole(&["check", "--no-such-flag"])), Some(2));
    let _ = std::fs::remove_dir_all(&base);
}

const BROKEN: &str = r#"
name: exit-broken-cluster
cluster: {brokers: 1, kafka: 4.4.0, broker_config: {num.io.threads: 0}}
topic: {partitions: 1, replication_factor: 1}
job: {parallelism: 1, records_per_subtask: 100, rate_per_subtask: 1000, checkpoint_interval_ms: 200, transaction_timeout_ms: 10000}
modes: [legacy]
expect:
  legacy: clean
"#;

/// A cluster that would not start (Kafka refuses `num.io.threads: 0` before
/// it listens): `run` exits 3 naming the cause, `matrix` records the cell as
/// the rig's error (junit `<error>`) and exits 3; bad input is still 2.
#[test]
fn the_rig_failing_is_exit_3() {
    let _turn = common::serial();
    common::dist("4.4.0");
    let base = common::test_dir("exit-codes-rig");
    std::fs::create_dir_all(&base).unwrap();
    let file = base.join("broken.yaml");
    std::fs::write(&file, BROKEN).unwrap();
    let f = file.to_str().unwrap();
    let results = base.join("results");
    let r = results.to_str().unwrap();

    let o = sinkhole(&["run", f, "--seed", "1", "--results", r]);
    assert_eq!(code(&o), Some(3), "{}", err(&o));
    assert!(err(&o).contains("starting the cluster") && err(&o).contains("num.io.threads"), "{}", err(&o));

    let out = base.join("m");
    let o = sinkhole(&["matrix", f, "--seeds", "1", "--results", r, "--out", out.to_str().unwrap(), "--json"]);
    assert_eq!(code(&o), Some(3), "{}", err(&o));
    let m: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_provenance(&m, "matrix --json");
    assert_eq!(m["cells"][0]["status"], "error");
    assert_eq!(m["exit_code"], 3);
    let on_disk = read_json(&out.join("matrix.json"));
    assert_provenance(&on_disk, "matrix.json");
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert!(junit.contains(r#"<error message="starting the cluster"#), "{junit}");
    // The run's schedule.json, written before the cluster started.
    let run_dir =
        std::fs::read_dir(&results).unwrap().flatten().map(|e| e.path()).find(|p| p.join("schedule.json").is_file());
    assert_provenance(&read_json(&run_dir.expect("a run directory").join("schedule.json")), "schedule.json");

    // 2: bad input, before anything starts.
    let o = sinkhole(&["run", f, "--mode", "flink", "--results", r]);
    assert_eq!(code(&o), Some(2), "{}", err(&o));
    let o = sinkhole(&["matrix", f, "--shard", "3/2", "--seeds", "1", "--results", r]);
    assert_eq!(code(&o), Some(2), "{}", err(&o));
    assert!(err(&o).contains("--shard 3/2: expected I/N"), "{}", err(&o));
    let o = sinkhole(&["matrix", f, "--shard", "1/2", "--results", r]);
    assert_eq!(code(&o), Some(2), "{}", err(&o));
    assert!(err(&o).contains("name the seeds"), "{}", err(&o));
    let _ = std::fs::remove_dir_all(&base);
}

/// `--json` outputs that need no cluster carry the provenance too, and
/// `--version` names the commit.
#[test]
fn json_outputs_and_version_carry_the_provenance() {
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/kill-restore.yaml");
    let s = scenario.to_str().unwrap();
    let o = sinkhole(&["schedule", s, "--seed", "3", "--json"]);
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    assert_provenance(&serde_json::from_slice(&o.stdout).unwrap(), "schedule --json");
    let o = sinkhole(&["validate", s, "--json"]);
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_provenance(&v[0], "validate --json");
    assert_eq!(v[0]["ok"], true);
    let o = sinkhole(&["bench-checker", "--records", "1000", "--json"]);
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    assert_provenance(&serde_json::from_slice(&o.stdout).unwrap(), "bench-checker --json");
    let o = sinkhole(&["--version"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.trim(), format!("sinkhole {}", sinkhole_base::provenance::LONG_VERSION));
}

/// `explain`, `bundle` and `bisect` through the binary: a stored run of the marker bug on 3
/// brokers is told and bundled (exit 0); a directory that is not a run, a run from an older
/// rig, a range with nothing installable and a range that runs backwards are bad input (exit
/// 2), each with its reason. No cluster: bisect refuses before it runs anything.
#[test]
fn explain_bundle_and_bisect_take_a_run_and_refuse_bad_input() {
    let marker_run = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/markers-skipped-leader-dies/markers-skipped-leader-dies-20261207T212037-1");
    let o = sinkhole(&["explain", marker_run.to_str().unwrap()]);
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    let md = String::from_utf8_lossy(&o.stdout);
    let (kill, fencing, skipped) = (
        md.find("kill-leader (broker-kill) fired").expect("the kill"),
        md.find("Fencing broker 1").expect("the fencing"),
        md.find("likely deleted").expect("the skipped markers"),
    );
    assert!(kill < fencing && fencing < skipped, "in order");
    let tmp = common::test_dir("bundle-cli");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = tmp.join("b.tar.gz");
    let o = sinkhole(&["bundle", marker_run.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(code(&o), Some(0), "{}", err(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("replay, from the unpacked bundle: sinkhole setup --kafka 4.4.0")
    );
    assert!(std::fs::metadata(&out).unwrap().len() < 5 * 1024 * 1024);

    for cmd in ["explain", "bundle"] {
        let o = sinkhole(&[cmd, tmp.to_str().unwrap()]);
        assert_eq!(code(&o), Some(2), "{cmd}: {}", err(&o));
        assert!(err(&o).contains("not a run directory"), "{cmd}: {}", err(&o));
        let o = sinkhole(&[cmd, fixture().to_str().unwrap()]);
        assert_eq!(code(&o), Some(2), "{cmd} of an older rig's run: {}", err(&o));
        assert!(err(&o).contains("older sinkhole") && err(&o).contains("sinkhole check"), "{}", err(&o));
    }
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/markers-skipped-after-crash.yaml");
    let s = scenario.to_str().unwrap();
    for (range, why) in [
        ("4.5.0..4.6.0", "no released version in that range"),
        ("4.4.0..4.0.0", "backwards"),
        ("4.4.0", "write a range"),
    ] {
        let o = sinkhole(&["bisect", s, "--kafka", range, "--results", tmp.to_str().unwrap()]);
        assert_eq!(code(&o), Some(2), "{range}: {}", err(&o));
        assert!(err(&o).contains(why), "{range}: {}", err(&o));
    }
    let o = sinkhole(&["bisect", s, "--connector", "5.0.0-2.2..5.0.0-2.2", "--results", tmp.to_str().unwrap()]);
    assert_eq!(code(&o), Some(2), "{}", err(&o));
    assert!(err(&o).contains("runs no flink-kafkasink mode"), "{}", err(&o));
}
