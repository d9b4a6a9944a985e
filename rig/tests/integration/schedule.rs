//! Seeded random schedules: the same seed gives the same faults (in the
//! library and through `sinkhole schedule`), faults never overlap, stay in
//! the window, and every generated fault is a valid scenario fault.
use std::collections::BTreeSet;

use sinkhole_scenario::schedule::{self, Resolved};
use sinkhole_scenario::{FaultKind, Mix, Scenario, When};

fn scenario_text(mix: &str, brokers: usize, extra_cluster: &str) -> String {
    format!(
        "\
name: sched
cluster:
  brokers: {brokers}
  kafka: 4.4.0
{extra_cluster}topic: {{partitions: 3, replication_factor: 1}}
job:
  parallelism: 3
  records_per_subtask: 100000
  rate_per_subtask: 1000
  checkpoint_interval_ms: 1000
  transaction_timeout_ms: 60000
  restart_delay_ms: 500
modes: [legacy, twopc-inject]
faults:
  - {{name: kill-first, kind: kill-workers, target: [0], when: {{at_ms: 1000}}}}
schedule:
  mix: {mix}
  start_ms: 2000
  end_ms: 60000
  quiet_ms: [500, 2000]
  duration_ms: [300, 3000]
"
    )
}

fn load(text: &str) -> Scenario {
    sinkhole_scenario::from_str(text, "sched.yaml").unwrap_or_else(|e| panic!("{}", e.render()))
}

/// The scenario with the resolved faults in place of the schedule, through
/// YAML and the validator: what `sinkhole run` writes as scenario.yaml.
fn revalidate(s: &Scenario, r: &Resolved) {
    let mut t = s.clone();
    t.faults = r.faults.clone();
    t.schedule = None;
    let yaml = serde_saphyr::to_string(&t).unwrap();
    let back = sinkhole_scenario::from_str(&yaml, "resolved.yaml").unwrap_or_else(|e| panic!("{}\n{yaml}", e.render()));
    assert_eq!(back.faults, r.faults);
}

fn check_shape(s: &Scenario, r: &Resolved) {
    let sched = s.schedule.as_ref().unwrap();
    assert_eq!(r.faults.len(), s.faults.len() + r.generated);
    assert_eq!(r.faults[..s.faults.len()], s.faults[..], "explicit faults first, unchanged");
    assert_eq!(r.spans.len(), r.generated);
    let mut prev_end = 0;
    for (i, (f, span)) in r.generated_faults().iter().zip(&r.spans).enumerate() {
        let [start, end] = *span;
        assert_eq!(f.when, When::AtMs(start), "{f:?}");
        assert!(start >= sched.start_ms && end <= sched.end_ms, "span {span:?} outside the window");
        assert!(start < end);
        assert!(start > prev_end || i == 0, "fault {i} at {start} overlaps the previous one ending at {prev_end}");
        if i > 0 {
            assert!(start - prev_end >= sched.quiet_ms[0], "quiet period kept");
        }
        if let Some(d) = f.duration_ms {
            assert!(start + d <= end, "the fault's duration fits its span");
        }
        let name = f.name.as_deref().unwrap();
        assert_eq!(name, format!("random-{}-{}", i + 1, f.kind.name()));
        prev_end = end;
    }
}

#[test]
fn the_same_seed_gives_the_same_schedule() {
    let s = load(&scenario_text("all", 3, ""));
    let a = schedule::resolve(&s, 42);
    let b = schedule::resolve(&s, 42);
    assert_eq!(a, b);
    assert_eq!(a.seed, 42);
    assert!(a.generated >= 10, "60 s of window holds many faults: {}", a.generated);
    let c = schedule::resolve(&s, 43);
    assert_ne!(a.faults, c.faults, "another seed, another schedule");
    check_shape(&s, &a);
    check_shape(&s, &c);
    revalidate(&s, &a);
    revalidate(&s, &c);
    // `all` interleaves the families.
    let kinds: BTreeSet<FaultKind> = a.generated_faults().iter().map(|f| f.kind.kind()).collect();
    assert!(kinds.len() >= 5, "{kinds:?}");
}

#[test]
fn the_schedule_seed_overrides_the_run_seed() {
    let s = load(&scenario_text("workers", 1, "").replace("  mix: workers\n", "  mix: workers\n  seed: 9\n"));
    let a = schedule::resolve(&s, 1);
    let b = schedule::resolve(&s, 2);
    assert_eq!(a, b);
    assert_eq!(a.seed, 9);
}

#[test]
fn every_mix_draws_only_its_kinds_and_validates() {
    use FaultKind::*;
    let cases: [(&str, &[FaultKind]); 5] = [
        ("workers", &[KillWorkers, PauseWorkers]),
        ("brokers", &[BrokerKill, BrokerPause, BrokerRestart]),
        ("network", &[NetPartition, NetDelay, NetLoss, NetReset]),
        ("protocol", &[ProtocolDrop, ProtocolDelay, ProtocolError]),
        ("coordinator", &[DropNotification, DelayNotification, DeclineCheckpoint]),
    ];
    for brokers in [1, 3] {
        for (mix, allowed) in cases {
            let s = load(&scenario_text(mix, brokers, ""));
            for seed in 0..20 {
                let r = schedule::resolve(&s, seed);
                assert!(r.generated > 0, "{mix}");
                for f in r.generated_faults() {
                    assert!(allowed.contains(&f.kind.kind()), "{mix}: {f:?}");
                }
                check_shape(&s, &r);
                revalidate(&s, &r);
            }
        }
    }
    let s = load(&scenario_text("none", 1, ""));
    let r = schedule::resolve(&s, 5);
    assert_eq!((r.generated, r.faults.len(), r.mix), (0, 1, Some(Mix::None)));
}

#[test]
fn without_the_proxy_all_leaves_out_network_and_protocol() {
    let s = load(&scenario_text("all", 3, "  proxy: false\n"));
    for seed in 0..20 {
        let r = schedule::resolve(&s, seed);
        assert!(r.generated_faults().iter().all(|f| !f.kind.kind().needs_proxy()), "{r:?}");
        revalidate(&s, &r);
    }
}

#[test]
fn no_schedule_means_the_explicit_faults() {
    let s = load(scenario_text("all", 1, "").split("schedule:").next().unwrap());
    let r = schedule::resolve(&s, 3);
    assert_eq!((r.generated, r.mix, r.faults.clone()), (0, None, s.faults.clone()));
}

#[test]
fn schedule_json_holds_the_seed_and_the_faults_in_yaml_names() {
    let s = load(&scenario_text("network", 3, ""));
    let r = schedule::resolve(&s, 11);
    let dir = std::env::temp_dir().join(format!("sinkhole-sched-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = schedule::write(&sinkhole_base::rundir::RunDir::at(&dir), &r).unwrap();
    assert_eq!(path, dir.join("schedule.json"));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["seed"], 11);
    assert_eq!(v["mix"], "network");
    assert_eq!(v["generated"], r.generated);
    assert_eq!(v["faults"][0]["kind"], "kill-workers");
    assert_eq!(v["faults"][0]["when"]["at_ms"], 1000);
    assert!(v["faults"][1]["from"].is_array(), "{}", v["faults"][1]);
    let back: Resolved = serde_json::from_value(v).unwrap();
    assert_eq!(back, r);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_plan_resolves_the_schedule_into_the_faults() {
    let dir = std::env::temp_dir().join(format!("sinkhole-sched-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.yaml");
    std::fs::write(&file, scenario_text("all", 3, "")).unwrap();
    let args = sinkhole_rig::run::RunArgs { file, seed: Some(42), results: dir.join("r"), ..Default::default() };
    let Ok(p) = sinkhole_rig::run::plan(&args, 0) else { panic!("plan failed") };
    let s = load(&scenario_text("all", 3, ""));
    assert_eq!(p.scenario.faults, schedule::resolve(&s, 42).faults);
    assert!(p.scenario.schedule.is_none(), "resolved once: scenario.yaml must not generate again");
    assert_eq!(p.schedule, schedule::resolve(&s, 42));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn sinkhole(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_sinkhole")).args(args).output().expect("run sinkhole")
}

#[test]
fn schedule_command_replays_by_seed() {
    let dir = std::env::temp_dir().join(format!("sinkhole-sched-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.yaml");
    std::fs::write(&file, scenario_text("all", 3, "")).unwrap();
    let f = file.to_str().unwrap();
    let a = sinkhole(&["schedule", f, "--seed", "42", "--json"]);
    let b = sinkhole(&["schedule", f, "--seed", "42", "--json"]);
    let c = sinkhole(&["schedule", f, "--seed", "43", "--json"]);
    assert_eq!(a.status.code(), Some(0), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout);
    assert_ne!(a.stdout, c.stdout);
    let r: Resolved = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(r, schedule::resolve(&load(&scenario_text("all", 3, "")), 42));
    // Beside the schedule, each mode's premises as a run with that seed resolves them.
    let j: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(j["premises"][0]["mode"], "legacy", "{j}");
    assert_eq!(j["premises"][0]["source"], "none", "no expectation, nothing rests on anything: {j}");

    let t = sinkhole(&["schedule", f, "--seed", "42"]);
    let text = String::from_utf8_lossy(&t.stdout);
    let (faults, premises) = text.split_once("premises:\n").expect("the premises follow the faults");
    assert_eq!(premises.lines().count(), 2, "one line per mode: {premises}");
    assert!(premises.lines().all(|l| l.contains("none") && l.contains("no expectation")), "{premises}");
    let lines: Vec<&str> = faults.lines().collect();
    assert!(lines[0].starts_with("seed 42, mix all, 1 explicit + "), "{text}");
    assert_eq!(lines.len(), 1 + r.faults.len(), "{text}");
    assert!(lines[1].starts_with("at 1000 ms") && lines[1].contains("kill-first") && lines[1].contains("target [0]"));
    assert!(lines[2].contains("random-1-"), "{text}");

    std::fs::write(&file, scenario_text("all", 3, "").replace("end_ms: 60000", "end_ms: 1000")).unwrap();
    let e = sinkhole(&["schedule", f]);
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr).contains("schedule.end_ms"));
    std::fs::remove_dir_all(&dir).unwrap();
}
