//! The external backend against a real 3-node cluster: `sinkhole cluster up` starts it, and
//! the scenario's command templates call `sinkhole cluster kill|stop|start|pause|resume … {id}`
//! where a real deployment would call `ssh` or `kubectl`. `tc-kill-during-commit` and
//! `kill-restore` must give the verdicts the local backend gives them, with every node fault
//! confirmed through the protocol:
//! - `tc-kill-during-commit` is run on the local backend too, with the same seed, and compared
//!   (no other test runs it locally);
//! - `kill-restore` must meet its expectations in every mode judged, which is what
//!   scenarios_live.rs requires of the local backend on that scenario (two-phase modes clean,
//!   at-least-once duplicating, every verdict `pass`): running it locally a second time here
//!   would cost a shared lane a minute and a half and check nothing more.
use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The broker settings the two scenarios ask for, plus the two-phase commit ones the rig sets on
/// the clusters it starts (`run::broker_config`).
const BROKER_CONFIG: &[&str] = &[
    "transaction.abort.timed.out.transaction.cleanup.interval.ms=500",
    "broker.session.timeout.ms=3000",
    "broker.heartbeat.interval.ms=500",
    "transaction.two.phase.commit.enable=true",
    "unstable.api.versions.enable=true",
];

fn sinkhole(args: &[&str]) -> Output {
    Command::new(common::bin()).args(args).output().expect("run sinkhole")
}

/// `sinkhole cluster down` when the test ends, however it ends.
struct Down(String);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = sinkhole(&["cluster", "down", "--name", &self.0]);
    }
}

/// `scenarios/<name>.yaml` with `backend: external` and templates for cluster `cluster`.
fn external_scenario(name: &str, cluster: &str, bootstrap: &str, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(format!("{name}.yaml")),
    )
    .unwrap();
    let bin = common::bin();
    let cmd = |action: &str| format!("{} cluster {action} {{id}} --name {cluster}", bin.display());
    let section = format!(
        "cluster:\n  backend: external\n  external:\n    bootstrap: [{bootstrap}]\n    commands:\n      \
         kill: {}\n      stop: {}\n      start: {}\n      pause: {}\n      resume: {}\n      \
         status: {} cluster status --name {cluster}\n",
        cmd("kill"),
        cmd("stop"),
        cmd("start"),
        cmd("pause"),
        cmd("resume"),
        bin.display(),
    );
    assert!(text.contains("\ncluster:\n"), "{name}: no cluster section");
    let out = dir.join(format!("{name}-external.yaml"));
    std::fs::write(&out, text.replacen("\ncluster:\n", &format!("\n{section}"), 1)).unwrap();
    out
}

/// Runs `file` and returns its summary.json.
fn run(file: &Path, results: &Path, extra: &[&str]) -> Value {
    let out = Command::new(common::bin())
        .arg("run")
        .arg(file)
        .args(["--seed", "13", "--results"])
        .arg(results)
        .args(extra)
        .output()
        .expect("run sinkhole");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{}:\n{stdout}", file.display());
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(results).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort_by_key(|d| std::fs::metadata(d).and_then(|m| m.modified()).ok());
    let dir = dirs.pop().expect("a run directory");
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// One mode's verdict: (mode, outcome, expected_met, reason).
type Verdict = (String, String, Value, String);

fn verdicts(summary: &Value) -> Vec<Verdict> {
    summary["modes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let s = |k: &str| m[k].as_str().unwrap_or_default().to_string();
            (s("mode"), s("outcome"), m["expected_met"].clone(), s("reason"))
        })
        .collect()
}

/// The rig's own refusal to judge a run whose fault fired late or unconfirmed on a loaded
/// machine (`verdict`): a statement about the run, not about the backend.
fn timing_inconclusive(v: &Verdict) -> bool {
    v.1 == "inconclusive" && v.3.contains("the result does not show what the scenario tests")
}

/// Every node fault of the run's first mode, as recorded: each with its commands confirmed.
fn node_commands(results: &Path, mode: &str) -> Vec<Value> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(results).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.sort_by_key(|d| std::fs::metadata(d).and_then(|m| m.modified()).ok());
    let history = std::fs::read_to_string(dirs.last().unwrap().join(mode).join("history.jsonl")).unwrap();
    let mut out = Vec::new();
    for line in history.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let effect = &v["effect"];
        for n in effect["nodes"].as_array().into_iter().flatten().chain(std::iter::once(effect)) {
            if let Some(cmds) = n["effect"]["commands"].as_array() {
                out.extend(cmds.iter().cloned());
            }
        }
    }
    out
}

#[test]
fn external_backend_gives_the_local_verdicts_through_command_templates() {
    let _turn = common::serial();
    common::dist("4.4.0");
    let name = format!("it-ext-{}", std::process::id());
    let dir = common::test_dir("external");
    std::fs::create_dir_all(&dir).unwrap();
    let mut up = vec!["cluster", "up", "--name", &name, "--nodes", "3", "--json"];
    for c in BROKER_CONFIG {
        up.extend(["--broker-config", c]);
    }
    let o = sinkhole(&up);
    let down = Down(name.clone());
    assert!(o.status.success(), "up: {}", String::from_utf8_lossy(&o.stderr));
    let state: Value = serde_json::from_slice(&o.stdout).unwrap();
    let bootstrap = state["bootstrap"].as_str().unwrap().to_string();

    // kill-restore with three of its modes: the two-phase ones and the negative control (five
    // modes side by side on two cores make the nemesis late more often than not).
    let scenarios: [(&str, &[&str]); 2] = [
        ("tc-kill-during-commit", &[]),
        ("kill-restore", &["--mode", "legacy", "--mode", "twopc-inject", "--mode", "at-least-once"]),
    ];
    let mut external = Vec::new();
    for (s, modes) in scenarios {
        let file = external_scenario(s, &name, &bootstrap, &dir);
        let results = dir.join(format!("ext-{s}"));
        external.push(verdicts(&run(&file, &results, modes)));
        let cmds = node_commands(&results, "legacy");
        assert!(!cmds.is_empty(), "{s}: no node command recorded");
        for c in &cmds {
            assert_eq!(c["exit"], 0, "{s}: {c}");
            assert_eq!(c["confirmed"], true, "{s}: {c}");
        }
        // Every node the run took down is answering again: the cluster is left as found.
        let st: Value =
            serde_json::from_slice(&sinkhole(&["cluster", "status", "--name", &name, "--json"]).stdout).unwrap();
        for n in st["nodes"].as_array().unwrap() {
            assert_eq!(n["intent"], "running", "{s}: {n}");
        }
    }
    // The command line's --bootstrap selects the backend: the file's bootstrap is replaced.
    let bad = sinkhole(&["run", dir.join("kill-restore-external.yaml").to_str().unwrap(), "--bootstrap", "nohost"]);
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("\"nohost\": use host:port"));
    drop(down);

    let (tc, kill_restore) = (&external[0], &external[1]);
    let mut judged = 0;
    for v in kill_restore {
        eprintln!("kill-restore {}: external {} {} {}", v.0, v.1, v.2, v.3);
        if timing_inconclusive(v) {
            continue;
        }
        assert_eq!((v.1.as_str(), &v.2), ("pass", &Value::Bool(true)), "kill-restore on the external backend: {v:?}");
        judged += 1;
    }
    assert!(judged >= 2, "kill-restore: too few modes judged on the external backend: {kill_restore:?}");

    // tc-kill-during-commit on the local backend, the same seed: the same verdicts.
    let (s, modes) = scenarios[0];
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(format!("{s}.yaml"));
    let local = verdicts(&run(&file, &dir.join(format!("local-{s}")), modes));
    assert_eq!(tc.len(), local.len(), "{s}");
    let mut compared = 0;
    for (e, l) in tc.iter().zip(&local) {
        eprintln!("{s} {}: external {} {} | local {} {}", e.0, e.1, e.2, l.1, l.2);
        if timing_inconclusive(e) || timing_inconclusive(l) {
            eprintln!("{s} {}: not compared (a fault fired late): {} | {}", e.0, e.3, l.3);
            continue;
        }
        assert_eq!((&e.0, &e.1, &e.2), (&l.0, &l.1, &l.2), "{s}: external and local verdicts differ: {e:?} {l:?}");
        compared += 1;
    }
    assert!(compared >= 2, "{s}: too few modes judged on both backends to compare: {tc:?} {local:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
