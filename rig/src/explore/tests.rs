use std::path::Path;
use std::time::Duration;

use sinkhole_checker::verdict::Outcome;
use sinkhole_scenario::{FaultKind, FaultSpec, Scenario, When};

use super::draw::{checkpoint_of, draw, schedule_of, trigger_kind, Outages};
use super::findings::{file_name, Coverage, Findings, Signature};
use super::states::StateCoverage;
use super::{check, check_scenario, ExploreArgs};
use sinkhole_checker::reached::State;

pub(crate) fn scenario(text: &str) -> Scenario {
    sinkhole_scenario::from_str(text, "s.yaml").unwrap_or_else(|e| panic!("{}", e.render()))
}

/// One broker, two subtasks, 40 s of records at 1 s checkpoints, the proxy allowed.
pub(crate) const ONE_BROKER: &str = "name: s\ncluster: {brokers: 1, kafka: 4.4.0}\ntopic: {partitions: 3}\n\
    job: {parallelism: 2, records_per_subtask: 40000, rate_per_subtask: 1000, checkpoint_interval_ms: 1000, \
    transaction_timeout_ms: 60000, restart_delay_ms: 300}\nmodes: [legacy, twopc-inject, at-least-once]\n\
    faults:\n  - {kind: kill-workers, target: [0], when: {at_ms: 2500}}\n\
    expect: {legacy: clean, twopc-inject: clean}\n";

pub(crate) const THREE_BROKERS: &str = "name: s\ncluster: {brokers: 3, kafka: 4.4.0}\n\
    topic: {partitions: 3, replication_factor: 3, min_insync_replicas: 2}\n\
    job: {parallelism: 3, records_per_subtask: 60000, rate_per_subtask: 1000, checkpoint_interval_ms: 1000, \
    transaction_timeout_ms: 60000, restart_delay_ms: 300}\nmodes: [legacy]\nexpect: {legacy: clean}\n";

#[test]
fn the_same_seed_draws_the_same_schedule_and_another_seed_another() {
    let s = scenario(ONE_BROKER);
    for seed in [0, 1, 42, u64::MAX] {
        assert_eq!(draw(&s, seed, Outages::Short), draw(&s, seed, Outages::Short), "seed {seed}");
    }
    let lists: Vec<Vec<FaultSpec>> = (0..10).map(|seed| draw(&s, seed, Outages::Short).faults).collect();
    let distinct = lists.iter().filter(|l| lists.iter().filter(|m| m == l).count() == 1).count();
    assert!(distinct >= 9, "ten seeds gave only {distinct} distinct schedules");
    assert!(lists.iter().all(|l| !l.is_empty()), "a seed drew no fault over 30 s of job time");
}

#[test]
fn live_readers_get_one_or_two_reader_faults_of_their_own_and_the_rest_is_drawn_as_before() {
    let s = scenario(ONE_BROKER);
    let with = scenario(&ONE_BROKER.replace("modes:", "readers: {count: 2, mode: subscribe}\nmodes:"));
    let mut kinds = std::collections::BTreeSet::new();
    for seed in 0..20 {
        let (plain, d) = (draw(&s, seed, Outages::Short), draw(&with, seed, Outages::Short));
        let readers: Vec<&FaultSpec> = d.faults.iter().filter(|f| f.kind.name().ends_with("-readers")).collect();
        assert!((1..=2).contains(&readers.len()), "seed {seed}: {readers:?}");
        assert_eq!(d.faults[..d.faults.len() - readers.len()], plain.faults[..], "seed {seed}: the rest as before");
        assert!(plain.faults.iter().all(|f| !f.kind.name().ends_with("-readers")), "no readers, no reader fault");
        // Each on a checkpoint no other fault of the run took.
        let on: Vec<u64> = d.faults.iter().filter_map(|f| checkpoint_of(&f.when)).collect();
        assert!(on.iter().all(|n| on.iter().filter(|m| *m == n).count() == 1), "seed {seed}: {on:?}");
        let mut whole = with.clone();
        whole.faults = d.faults.clone();
        let yaml = serde_saphyr::to_string(&whole).unwrap();
        sinkhole_scenario::from_str(&yaml, "drawn.yaml").unwrap_or_else(|e| panic!("seed {seed}: {}", e.render()));
        kinds.extend(readers.iter().map(|f| f.kind.name()));
    }
    assert_eq!(kinds.len(), 3, "kill, pause and restart all drawn over 20 seeds: {kinds:?}");
}

#[test]
fn the_scenarios_own_faults_are_not_kept() {
    let s = scenario(ONE_BROKER);
    for seed in 0..10 {
        let d = draw(&s, seed, Outages::Short);
        assert!(d.faults.iter().all(|f| f.name.as_deref().is_some_and(|n| n.starts_with("explore-"))), "seed {seed}");
    }
}

#[test]
fn every_drawn_fault_is_one_the_scenario_accepts_within_the_window() {
    for text in [ONE_BROKER, THREE_BROKERS] {
        let s = scenario(text);
        let r = schedule_of(&s);
        for seed in 0..15 {
            let d = draw(&s, seed, Outages::Short);
            let mut whole = s.clone();
            whole.faults = d.faults.clone();
            let yaml = serde_saphyr::to_string(&whole).unwrap();
            sinkhole_scenario::from_str(&yaml, "drawn.yaml").unwrap_or_else(|e| panic!("seed {seed}: {}", e.render()));
            for f in &d.faults {
                if let When::AtMs(t) = f.when {
                    assert!(t >= r.start_ms && t <= r.end_ms, "seed {seed}: {t} outside {:?}", d.window_ms);
                }
                if f.kind.kind() == FaultKind::CoordinatorCrash {
                    assert!(matches!(f.when, When::CheckpointPersisted(_)), "seed {seed}: {f:?}");
                }
            }
        }
    }
}

#[test]
fn draws_spread_over_kinds_and_checkpoint_phases_the_cluster_can_host() {
    let kinds_and_triggers = |text: &str| {
        let s = scenario(text);
        let mut kinds = std::collections::BTreeSet::new();
        let mut triggers = std::collections::BTreeSet::new();
        for seed in 0..40 {
            for f in draw(&s, seed, Outages::Short).faults {
                kinds.insert(f.kind.kind());
                triggers.insert(trigger_kind(&f.when));
            }
        }
        (kinds, triggers)
    };
    let (kinds, triggers) = kinds_and_triggers(ONE_BROKER);
    for k in [
        FaultKind::KillWorkers,
        FaultKind::JobOutage,
        FaultKind::BrokerKill,
        FaultKind::BrokerStop,
        FaultKind::NetPartition,
        FaultKind::NetBlackhole,
        FaultKind::ProtocolError,
        FaultKind::DropNotification,
        FaultKind::CoordinatorCrash,
    ] {
        assert!(kinds.contains(&k), "{k:?} never drawn on one broker: {kinds:?}");
    }
    // A rolling restart needs brokers to roll through.
    assert!(!kinds.contains(&FaultKind::RollingRestart), "{kinds:?}");
    for t in [
        "at_ms",
        "checkpoint_triggered",
        "checkpoint_acked",
        "checkpoint_persisted",
        "checkpoint_notified",
        "commit_started",
        "txn_opened",
    ] {
        assert!(triggers.contains(t), "trigger {t} never drawn: {triggers:?}");
    }
    let (kinds, _) = kinds_and_triggers(THREE_BROKERS);
    assert!(kinds.contains(&FaultKind::RollingRestart), "{kinds:?}");
}

#[test]
fn without_the_proxy_no_network_or_protocol_fault_is_drawn() {
    let s = scenario(&ONE_BROKER.replace("kafka: 4.4.0}", "kafka: 4.4.0, proxy: false}"));
    for seed in 0..20 {
        for f in draw(&s, seed, Outages::Short).faults {
            assert!(!f.kind.kind().needs_proxy(), "seed {seed}: {:?}", f.kind.kind());
        }
    }
}

fn fault(yaml: &str) -> FaultSpec {
    let text = ONE_BROKER.replace(
        "faults:\n  - {kind: kill-workers, target: [0], when: {at_ms: 2500}}\n",
        &format!("faults:\n  - {yaml}\n"),
    );
    scenario(&text).faults.remove(0)
}

#[test]
fn a_signature_is_mode_anomaly_kinds_and_triggers_not_times_or_targets() {
    let a = [
        fault("{kind: kill-workers, target: [0], when: {checkpoint_persisted: 4}}"),
        fault("{kind: net-delay, from: [workers], to: [brokers], delay_ms: 50, when: {at_ms: 9000}, duration_ms: 500}"),
    ];
    let b = [
        fault(
            "{kind: net-delay, from: [workers], to: [broker-1], delay_ms: 200, when: {at_ms: 3000}, duration_ms: 900}",
        ),
        fault("{kind: kill-workers, target: all, when: {checkpoint_persisted: 7}}"),
        fault("{kind: kill-workers, target: [1], when: {checkpoint_persisted: 9}}"),
    ];
    let sa = Signature::of("legacy", "lost", &a);
    assert_eq!(sa, Signature::of("legacy", "lost", &b));
    assert_eq!(sa.text(), "legacy: lost × kill-workers+net-delay × at_ms+checkpoint_persisted");
    assert_ne!(sa, Signature::of("kip939", "lost", &a), "another mode is another finding");
    assert_ne!(sa, Signature::of("legacy", "dup", &a), "another anomaly is another finding");
    assert_ne!(sa, Signature::of("legacy", "lost", &a[..1]), "another set of kinds is another finding");
    let c = [fault("{kind: kill-workers, target: [0], when: {checkpoint_notified: 4}}"), a[1].clone()];
    assert_ne!(sa, Signature::of("legacy", "lost", &c), "another phase is another finding");
    assert_eq!(Signature::of("legacy", "lost", &[]).text(), "legacy: lost × no-faults × no-faults");
}

/// Finding 1 of `sig` (a legacy mode's LOST 3, shrunk from 4 faults to 1 in 2 runs), first seen
/// in `runs[0]` with `seed`, saved at `path`.
fn finding(sig: &Signature, seed: u64, path: &str, runs: &[&str]) -> super::findings::Finding {
    super::findings::Finding {
        n: 1,
        run: 1,
        at_ms: 42_000,
        signature: sig.clone(),
        seed,
        run_id: runs[0].into(),
        path: path.into(),
        words: "LOST 3 — expected clean".into(),
        faults_before: 4,
        faults_after: 1,
        job: "p1 cc3 ci400 tt60000 r12000@2000 V2".into(),
        shrink_runs: 2,
        shrink_stop: Some("minimal".into()),
        not_shrunk: None,
        runs: runs.iter().map(|r| r.to_string()).collect(),
        replay: None,
    }
}

#[test]
fn findings_are_kept_once_per_signature_with_every_run_that_showed_them() {
    let k = [fault("{kind: kill-workers, target: [0], when: {checkpoint_persisted: 4}}")];
    let sig = Signature::of("legacy", "lost", &k);
    let mut f = Findings::default();
    assert!(f.seen(&sig, "run-1"), "a first signature is new");
    assert_eq!(f.next_number(), 1);
    f.push(finding(&sig, 7, "found/01-lost.yaml", &["run-1"]));
    assert!(!f.seen(&sig, "run-2"));
    assert!(!f.seen(&sig, "run-2"), "one run counts once");
    assert_eq!(f.list[0].runs, ["run-1", "run-2"]);
    assert!(f.seen(&Signature::of("legacy", "dup", &k), "run-3"), "another anomaly is new");
    assert_eq!(f.next_number(), 2);
    assert_eq!(file_name(3, "lost"), "03-lost.yaml");
    assert_eq!(file_name(12, "G1a"), "12-g1a.yaml");
    assert_eq!(file_name(1, "job failed/x"), "01-job-failed-x.yaml");
}

#[test]
fn coverage_counts_each_pair_once_per_run_and_hits_for_failed_runs() {
    let kill = fault("{kind: kill-workers, target: [0], when: {checkpoint_persisted: 4}}");
    let kill2 = fault("{kind: kill-workers, target: [1], when: {checkpoint_persisted: 6}}");
    let pause = fault("{kind: pause-workers, target: [0], when: {at_ms: 3000}, duration_ms: 500}");
    let mut c = Coverage::default();
    c.add(&[kill.clone(), kill2], true);
    c.add(&[kill, pause.clone()], false);
    c.add(&[pause], false);
    let cells: Vec<(String, String, u32, u32)> =
        c.cells().into_iter().map(|x| (x.fault_kind, x.trigger, x.runs, x.hits)).collect();
    assert_eq!(
        cells,
        [
            ("kill-workers".to_string(), "checkpoint_persisted".to_string(), 2, 1),
            ("pause-workers".to_string(), "at_ms".to_string(), 2, 0),
        ]
    );
    let text = c.render();
    assert!(text.lines().any(|l| l.starts_with("kill-workers") && l.contains("1/2") && l.contains('-')), "{text}");
}

/// A scenario file `ONE_BROKER` in a directory of its own (removed by the caller).
fn scenario_file(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("sinkhole-explore-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.yaml");
    std::fs::write(&file, ONE_BROKER).unwrap();
    (dir, file)
}

fn args(file: &Path) -> ExploreArgs {
    ExploreArgs {
        scenario: file.to_path_buf(),
        runs: 3,
        time: Duration::from_secs(300),
        seed: Some(1),
        results: "results".into(),
        modes: vec![],
        shrink_runs: 2,
        until_found: false,
        keep_data: false,
        replay: 0,
        shard: None,
    }
}

#[test]
fn bad_input_is_refused_with_what_is_wrong() {
    let (dir, file) = scenario_file("test");
    // Without --mode: the modes that have an expectation (at-least-once has none).
    let ok = check(&args(&file)).unwrap();
    assert_eq!(ok.modes.iter().map(|m| m.name()).collect::<Vec<_>>(), ["legacy", "twopc-inject"]);

    let e = check(&ExploreArgs { runs: 0, ..args(&file) }).unwrap_err();
    assert!(e.contains("--runs 0"), "{e}");
    let e = check(&ExploreArgs { time: Duration::ZERO, ..args(&file) }).unwrap_err();
    assert!(e.contains("--time 0"), "{e}");
    let e = check(&ExploreArgs { scenario: dir.join("none.yaml"), ..args(&file) }).unwrap_err();
    assert!(e.contains("none.yaml"), "{e}");

    // at-least-once has no expectation: named, it is refused; a scenario with no expectation at all is.
    let s = scenario(ONE_BROKER);
    let mut none = s.clone();
    none.expect.clear();
    let e = check_scenario(none, &[], &file).unwrap_err();
    assert!(e.contains("none of its modes (legacy, twopc-inject, at-least-once) has an expectation"), "{e}");
    let e = check_scenario(s.clone(), &["at-least-once".into()], &file).unwrap_err();
    assert!(e.contains("no expectation for at-least-once"), "{e}");
    // A mode the scenario does not run, a mutant of one it does not run, a name that is no mode.
    let e = check_scenario(s.clone(), &["kip939".into()], &file).unwrap_err();
    assert!(e.contains("--mode kip939") && e.contains("does not run it"), "{e}");
    let e = check_scenario(s.clone(), &["twopc-inject~drop-2pc-flag".into(), "nope".into()], &file).unwrap_err();
    assert!(e.contains("--mode nope") && e.contains("unknown mode"), "{e}");
    // A mutant of a mode it runs is judged by its base's expectation.
    let ok = check_scenario(s, &["legacy~restore-off-by-one".into(), "legacy".into()], &file).unwrap();
    assert_eq!(ok.modes.iter().map(|m| m.name()).collect::<Vec<_>>(), ["legacy~restore-off-by-one", "legacy"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn broker_faults_are_drawn_far_enough_apart_for_the_broker_to_come_back() {
    use super::draw::BROKER_SETTLE_MS;
    let s = scenario(THREE_BROKERS);
    let interval = s.job.checkpoint_interval_ms;
    let mut spaced = 0;
    let mut pairs = 0;
    for seed in 0..40 {
        let d = draw(&s, seed, Outages::Short);
        spaced += d.spaced;
        // A fault on checkpoint n's event was drawn within one interval after n × interval.
        let times: Vec<(u64, u64)> = d
            .faults
            .iter()
            .filter(|f| f.kind.kind().family() == sinkhole_scenario::Family::Brokers)
            .map(|f| {
                let t = match f.when {
                    When::AtMs(t) => t,
                    When::CheckpointTriggered(n)
                    | When::CheckpointPersisted(n)
                    | When::CheckpointNotified(n)
                    | When::CommitStarted(n)
                    | When::CheckpointAcked { checkpoint: n, .. }
                    | When::TxnOpened { checkpoint: Some(n), .. } => n * interval,
                    other => panic!("seed {seed}: {other:?}"),
                };
                (t, f.duration_ms.unwrap_or(0))
            })
            .collect();
        for w in times.windows(2) {
            pairs += 1;
            let ((a, dur), (b, _)) = (w[0], w[1]);
            assert!(b + interval >= a + dur + BROKER_SETTLE_MS, "seed {seed}: broker faults at {a} (+{dur}) and {b}");
        }
    }
    assert!(spaced > 0, "no broker fault was ever left out: the test shows nothing");
    assert!(pairs > 0, "no two broker faults in one run: the test shows nothing");
}

#[test]
fn the_table_lists_each_finding_with_its_replay_and_the_coverage() {
    use super::report::{render, Explored, ModeRow, RunRow, Stop};
    let k = [fault("{kind: kill-workers, target: [0], when: {checkpoint_persisted: 4}}")];
    let sig = Signature::of("legacy", "lost", &k);
    let mut cov = Coverage::default();
    cov.add(&k, true);
    let mut states = StateCoverage::default();
    states.add(&[(&[State::RestorePending1, State::FencedOnRestore], true)], Some(State::RestorePending2));
    let e = Explored {
        scenario: "s".into(),
        source: "s.yaml".into(),
        dir: "results/explore-x".into(),
        modes: vec!["legacy".into()],
        first_seed: 7,
        shard: None,
        merged_from: vec![],
        runs_budget: 3,
        time_budget_ms: 60_000,
        shrink_runs: 2,
        rss_start_bytes: Some(41 << 20),
        stop: Stop::Time,
        wall_ms: 61_000,
        runs_done: 2,
        inconclusive: 1,
        rig_errors: 0,
        findings: vec![finding(&sig, 8, "results/explore-x/found/01-lost.yaml", &["s-1-8", "s-2-9"])],
        detection: super::report::detection(
            &[sinkhole_model::SinkMode::Legacy, sinkhole_model::SinkMode::TwopcInject],
            &[finding(&sig, 8, "results/explore-x/found/01-lost.yaml", &["s-1-8"])],
            2,
        ),
        coverage: cov.cells(),
        coverage_text: cov.render(),
        states: states.cells(),
        runs: vec![RunRow {
            i: 1,
            seed: 8,
            shape: "p3 cc3 ci400 tt60000 r12000@2000 V1".into(),
            faults: 1,
            refused: 0,
            spaced: 1,
            schedule: vec!["kill-workers@checkpoint_persisted".into()],
            aimed_at: Some(State::RestorePending2),
            cleared: 2,
            run_id: Some("s-1-8".into()),
            dir: Some("results/explore-x/runs/s-1-8".into()),
            modes: vec![ModeRow {
                mode: "legacy".into(),
                outcome: Outcome::Fail,
                words: "LOST 3 — expected <clean>".into(),
                states: vec![State::RestorePending1, State::FencedOnRestore],
            }],
            findings: vec![1],
            error: None,
            cluster_reused_from: None,
            cluster_fresh_because: None,
            rss_bytes: Some(63 << 20),
            heap_bytes: Some(20 << 20),
        }],
    };
    let t = render(&e);
    assert!(t.starts_with("2 runs of s in 1m01s (the time budget ran out): 1 finding(s), 1 inconclusive"), "{t}");
    assert!(t.contains("01  legacy: lost × kill-workers × checkpoint_persisted"), "{t}");
    assert!(
        t.contains(
            "seed 8, seen in 2 run(s), faults 4 → 1 (shrunk in 2 run(s)), job p1 cc3 ci400 tt60000 r12000@2000 V2: \
             results/explore-x/found/01-lost.yaml"
        ),
        "{t}"
    );
    assert!(t.lines().any(|l| l.starts_with("kill-workers") && l.ends_with("1/1")), "{t}");
    // Detection: the mode found, with its run and time, and the one never found.
    assert!(t.contains("  legacy        finding 01 in run 1 of 2 (seed 8), after 42.0s\n"), "{t}");
    assert!(t.contains("  twopc-inject  no finding in 2 run(s)\n"), "{t}");
    assert!(
        t.contains("memory between runs: 41 MB at the start, 63 MB after run 1 (20 MB in use), 63 MB after run 1 (20 MB in use) (at most 63 MB)"),
        "{t}"
    );
    // The protocol states: each reached with its runs, the ones never reached named.
    assert!(t.contains("\nprotocol states: runs with a finding / runs that reached the state\n"), "{t}");
    assert!(t.lines().any(|l| l.trim_start().starts_with("restore-pending-1") && l.ends_with(" 1/1")), "{t}");
    let never = t.lines().find(|l| l.contains("never reached (19 of 21): ")).unwrap_or_else(|| panic!("{t}"));
    assert!(never.contains("restore-fresh, restore-pending-0, restore-pending-2 (aimed at in 1),"), "{never}");
    assert!(!never.contains("restore-pending-1,") && !never.contains("fenced-on-restore"), "{never}");

    // explore.html: the same findings with their replay, the grid with the hit marked, each run
    // with its verdicts in words and a link to its report; user text escaped.
    let h = super::html::render_html(&e);
    assert!(h.starts_with("<!DOCTYPE html>") && h.ends_with("</body></html>\n"), "{h}");
    assert!(h.contains("the time budget ran out") && h.contains("1 finding(s), 1 inconclusive"), "{h}");
    assert!(h.contains("legacy: lost × kill-workers × checkpoint_persisted"), "{h}");
    assert!(h.contains("<code>sinkhole run results/explore-x/found/01-lost.yaml --seed 8</code>"), "{h}");
    assert!(h.contains("<a href=\"found/01-lost.yaml\">"), "{h}");
    assert!(h.contains("<th>checkpoint_persisted</th>") && h.contains("<td class=\"hit\">1/1</td>"), "{h}");
    assert!(h.contains("<a href=\"runs/s-1-8/report.html\">1</a>"), "{h}");
    assert!(h.contains("(0 refused, 1 spaced)"), "{h}");
    // Each run's drawn job, and the finding's job as saved (shrunk toward the scenario's).
    assert!(h.contains("<td><code>p3 cc3 ci400 tt60000 r12000@2000 V1</code></td>"), "{h}");
    assert!(h.contains("<br>job <code>p1 cc3 ci400 tt60000 r12000@2000 V2</code>"), "{h}");
    assert!(h.contains("<td>legacy</td><td class=\"hit\">finding 01 in run 1 of 2 (seed 8), after 42.0s</td>"), "{h}");
    assert!(h.contains("<td>twopc-inject</td><td class=\"none\">no finding in 2 run(s)</td>"), "{h}");
    assert!(h.contains("memory between runs: 41 MB at the start"), "{h}");
    assert!(h.contains("legacy: <span class=\"fail\">LOST 3 — expected &lt;clean&gt;</span>"), "{h}");
    // The states: reached with a finding marked, never reached set apart, the aim on the run.
    assert!(h.contains("<h2>Protocol states</h2>") && h.contains("2 of 21 states reached, 19 never reached"), "{h}");
    assert!(h.contains("<tr><th><code>restore-pending-1</code></th><td class=\"hit\">1/1</td><td>0</td>"), "{h}");
    assert!(
        h.contains("<tr><th><code>restore-pending-2</code></th><td class=\"none\">never reached</td><td>1</td>"),
        "{h}"
    );
    assert!(h.contains("aimed at <code>restore-pending-2</code> (2 drawn left out)"), "{h}");
    assert!(h.contains("<td><small>restore-pending-1, fenced-on-restore</small></td>"), "{h}");
    assert!(!h.contains("<clean>"), "escaped");
    assert!(!t.contains("replays ") && !t.contains("does not replay"), "no replay line when not replayed: {t}");

    // Replayed: the count, and what the tries that did not reproduce it showed.
    let mut e = e;
    e.findings[0].replay = Some(super::replay::Replay {
        tries: 3,
        reproduced: 2,
        other: vec!["try 2: clean (expected)".into()],
        cut: None,
    });
    let t = render(&e);
    assert!(
        t.contains("results/explore-x/found/01-lost.yaml\n      does not replay: 2/3 (try 2: clean (expected))\n"),
        "{t}"
    );
    let h = super::html::render_html(&e);
    assert!(h.contains("--seed 8</code><br>does not replay: 2/3 (try 2: clean (expected))</td>"), "{h}");
}

#[test]
fn protocol_faults_wait_for_a_checkpoint_event_on_any_init_id_and_no_two_faults_share_one() {
    let s = scenario(ONE_BROKER);
    let (mut protocol, mut inits) = (0, 0);
    for seed in 0..30 {
        let d = draw(&s, seed, Outages::Short);
        let mut events = Vec::new();
        for f in &d.faults {
            if f.kind.kind().family() == sinkhole_scenario::Family::Protocol {
                protocol += 1;
                assert_ne!(trigger_kind(&f.when), "at_ms", "seed {seed}: {f:?}");
                let init = f.kind.apis().is_some_and(|a| a.iter().any(|a| a == "InitProducerId"));
                inits += usize::from(init);
                assert!(
                    !init || f.kind.transactional_id().is_none(),
                    "seed {seed}: one subtask's InitProducerId: {f:?}"
                );
            }
            if let Some(n) = match f.when {
                When::AtMs(_) => None,
                When::CheckpointTriggered(n)
                | When::CheckpointPersisted(n)
                | When::CheckpointNotified(n)
                | When::CommitStarted(n)
                | When::CheckpointAcked { checkpoint: n, .. }
                | When::TxnOpened { checkpoint: Some(n), .. } => Some(n),
                other => panic!("seed {seed}: {other:?}"),
            } {
                assert!(!events.contains(&n), "seed {seed}: two faults on checkpoint {n}");
                events.push(n);
            }
        }
    }
    assert!(protocol > 0 && inits > 0, "no protocol fault on InitProducerId drawn: the test shows nothing");
}

#[test]
fn outages_past_the_timeout_only_when_every_mode_judged_opens_with_enable_2pc() {
    use sinkhole_model::{Mutant, SinkMode};
    let drop_flag = SinkMode::Mutant(Mutant::Drop2pcFlag);
    assert_eq!(Outages::for_modes(&[SinkMode::TwopcInject, drop_flag, SinkMode::Kip939]), Outages::PastTimeout);
    assert_eq!(Outages::for_modes(&[SinkMode::TwopcInject, SinkMode::Legacy]), Outages::Short);
    assert_eq!(Outages::for_modes(&[SinkMode::Mutant(Mutant::AssumeCommitted)]), Outages::Short);
    assert_eq!(Outages::for_modes(&[SinkMode::PlainTxn]), Outages::Short);
    assert_eq!(Outages::for_modes(&[]), Outages::Short);
}

#[test]
fn an_outage_past_the_timeout_is_drawn_one_run_in_three_on_a_persisted_checkpoint_with_its_premise() {
    let s = scenario(&ONE_BROKER.replace("transaction_timeout_ms: 60000", "transaction_timeout_ms: 10000"));
    let timing = sinkhole_scenario::Timing::of(&s);
    let mut long = 0;
    for seed in 0..60 {
        let (short, d) = (draw(&s, seed, Outages::Short), draw(&s, seed, Outages::PastTimeout));
        let outages: Vec<&FaultSpec> =
            d.faults.iter().filter(|f| f.name.as_deref().is_some_and(|n| n.ends_with("-past-timeout"))).collect();
        assert!(outages.len() <= 1, "seed {seed}: {outages:?}");
        assert!(short.faults.iter().all(|f| f.kind.kind() != FaultKind::JobOutage || f.duration_ms < Some(timing.transaction_timeout_ms())), "seed {seed}: short outages only");
        let Some(o) = outages.first() else {
            assert_eq!(d.faults, short.faults, "seed {seed}: without the outage, the draw is what it was");
            continue;
        };
        long += 1;
        assert_eq!(o.kind.kind(), FaultKind::JobOutage, "seed {seed}");
        let n = match o.when {
            When::CheckpointPersisted(n) => n,
            ref w => panic!("seed {seed}: {w:?}"),
        };
        let ms = o.duration_ms.unwrap();
        assert!(ms > timing.look_after_ms() && ms <= timing.look_after_ms() + 5_000, "seed {seed}: {ms} ms");
        // No other fault on its checkpoint, and no timed fault while the job is down.
        assert!(d.faults.iter().filter(|f| checkpoint_of(&f.when) == Some(n)).count() == 1, "seed {seed}");
        let start = (n - 1) * s.job.checkpoint_interval_ms;
        for f in &d.faults {
            if let When::AtMs(t) = f.when {
                assert!(
                    t < start || t > n * 1000 + ms,
                    "seed {seed}: a fault at {t} ms inside the outage from checkpoint {n}"
                );
            }
        }
        // The drawn scenario is valid, and the default premise gives twopc-inject
        // `outlives_timeout` of the outage's checkpoint.
        let mut whole = s.clone();
        whole.faults = d.faults.clone();
        let yaml = serde_saphyr::to_string(&whole).unwrap();
        let loaded =
            sinkhole_scenario::from_str(&yaml, "drawn.yaml").unwrap_or_else(|e| panic!("seed {seed}: {}", e.render()));
        let p = sinkhole_scenario::premise::defaults::explain(&loaded);
        let twopc = p.iter().find(|m| m.mode == sinkhole_model::SinkMode::TwopcInject).unwrap();
        assert!(
            twopc.premises.iter().any(|r| r.premise == format!("outlives_timeout {{checkpoint: {n}}}")),
            "seed {seed}: {twopc:?}"
        );
    }
    assert!((10..=30).contains(&long), "about one run in three of 60 drew it: {long}");
}

#[test]
fn net_bandwidth_is_drawn_now_and_then_in_place_of_a_net_delay() {
    let s = scenario(ONE_BROKER);
    let mut n = 0;
    for seed in 0..200 {
        for f in draw(&s, seed, Outages::Short).faults {
            if let sinkhole_scenario::Fault::NetBandwidth(b) = &f.kind {
                assert!((4_096..=32_768).contains(&b.bytes_per_sec), "seed {seed}: {b:?}");
                n += 1;
            }
        }
    }
    assert!(n > 0, "no net-bandwidth in 200 seeds");
}

#[test]
fn a_shard_takes_every_nth_seed_and_needs_a_first_seed() {
    let (dir, file) = scenario_file("shard");
    let shard = |s: &str| Some(s.parse::<crate::matrix::shard::Shard>().unwrap());
    let (a, b) =
        (ExploreArgs { shard: shard("1/3"), ..args(&file) }, ExploreArgs { shard: shard("3/3"), ..args(&file) });
    assert_eq!((0..3).map(|i| a.seed_of(100, i)).collect::<Vec<_>>(), [100, 103, 106]);
    assert_eq!((0..3).map(|i| b.seed_of(100, i)).collect::<Vec<_>>(), [102, 105, 108]);
    assert_eq!((0..3).map(|i| args(&file).seed_of(100, i)).collect::<Vec<_>>(), [100, 101, 102]);
    let e = check(&ExploreArgs { seed: None, ..a }).unwrap_err();
    assert!(e.contains("--shard 1/3 needs --seed"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A shard's explore.json as a host leaves it: `runs` (seed, finding numbers), its findings.
fn shard_of(index: u32, runs: &[(u64, &[usize])], findings: Vec<super::findings::Finding>) -> super::report::Explored {
    use super::report::{Explored, RunRow, Stop};
    let mut cov = Coverage::default();
    let mut states = StateCoverage::default();
    let kill = [fault("{kind: kill-workers, target: [0], when: {checkpoint_persisted: 4}}")];
    let rows: Vec<RunRow> = runs
        .iter()
        .enumerate()
        .map(|(i, (seed, f))| {
            cov.add(&kill, !f.is_empty());
            // Every run restores one committable; each shard's first is aimed at a fresh restore.
            states.add(&[(&[State::RestorePending1], !f.is_empty())], (i == 0).then_some(State::RestoreFresh));
            RunRow {
                i: i as u32 + 1,
                seed: *seed,
                shape: "p2 cc1 ci1000 tt60000 r40000@1000 V2".into(),
                faults: 1,
                refused: 0,
                spaced: 0,
                schedule: vec!["kill-workers@checkpoint_persisted".into()],
                aimed_at: None,
                cleared: 0,
                run_id: Some(format!("s-{seed}")),
                dir: None,
                modes: vec![],
                findings: f.to_vec(),
                error: None,
                cluster_reused_from: None,
                cluster_fresh_because: None,
                rss_bytes: None,
                heap_bytes: None,
            }
        })
        .collect();
    Explored {
        scenario: "s".into(),
        source: "s.yaml".into(),
        dir: format!("host{index}/explore-x").into(),
        modes: vec!["legacy~assume-committed".into(), "legacy~restore-off-by-one".into()],
        first_seed: 100,
        shard: Some(crate::matrix::shard::Shard { index, count: 2 }),
        merged_from: vec![],
        runs_budget: 10,
        time_budget_ms: 600_000,
        shrink_runs: 2,
        rss_start_bytes: None,
        stop: Stop::Time,
        wall_ms: 600_000 + u64::from(index),
        runs_done: rows.len() as u32,
        inconclusive: index as usize,
        rig_errors: 0,
        detection: vec![],
        findings,
        coverage: cov.cells(),
        coverage_text: cov.render(),
        states: states.cells(),
        runs: rows,
    }
}

#[test]
fn merged_shards_keep_each_signature_once_the_earliest_with_every_hosts_runs() {
    let k = [fault("{kind: kill-workers, target: [0], when: {checkpoint_persisted: 4}}")];
    let lost = Signature::of("legacy~assume-committed", "lost", &k);
    let off = Signature::of("legacy~restore-off-by-one", "lost", &k);
    let at = |mut f: super::findings::Finding, n: usize, at_ms: u64, run: u32| {
        (f.n, f.at_ms, f.run) = (n, at_ms, run);
        f
    };
    // Host 1 (seeds 100, 102, 104) found assume-committed in its 2nd run, after 5 min; host 2
    // (101, 103) found it too, later, and restore-off-by-one first.
    let one = shard_of(
        1,
        &[(100, &[]), (102, &[1]), (104, &[1])],
        vec![at(finding(&lost, 102, "h1/found/01-lost.yaml", &["s-102", "s-104"]), 1, 300_000, 2)],
    );
    let two = shard_of(
        2,
        &[(101, &[1]), (103, &[2])],
        vec![
            at(finding(&off, 101, "h2/found/01-lost.yaml", &["s-101"]), 1, 60_000, 1),
            at(finding(&lost, 103, "h2/found/02-lost.yaml", &["s-103"]), 2, 400_000, 2),
        ],
    );
    let m = super::merge::merge(&[one.clone(), two.clone()], Path::new("out")).unwrap();
    assert_eq!(
        m.runs.iter().map(|r| (r.i, r.seed)).collect::<Vec<_>>(),
        [(1, 100), (2, 101), (3, 102), (4, 103), (5, 104)]
    );
    assert_eq!(m.findings.len(), 2, "one finding per signature");
    let f = &m.findings;
    assert_eq!((f[0].n, f[0].signature.clone(), f[0].seed, f[0].run), (1, off.clone(), 101, 2));
    assert_eq!((f[1].n, f[1].signature.clone(), f[1].seed, f[1].run, f[1].at_ms), (2, lost.clone(), 102, 3, 300_000));
    assert_eq!(f[1].runs, ["s-102", "s-104", "s-103"], "every host's runs of it");
    assert_eq!(f[1].path, Path::new("h1/found/01-lost.yaml"), "the file stays where its shard saved it");
    // Each run points at the merged numbers.
    assert_eq!(
        m.runs.iter().map(|r| r.findings.clone()).collect::<Vec<_>>(),
        [vec![], vec![1], vec![2], vec![2], vec![2]]
    );
    assert_eq!(
        m.coverage,
        [super::findings::Cell {
            fault_kind: "kill-workers".into(),
            trigger: "checkpoint_persisted".into(),
            runs: 5,
            hits: 4
        }]
    );
    assert_eq!((m.runs_done, m.inconclusive, m.wall_ms, m.merged_from.len()), (5, 3, 600_002, 2));
    // The states add up as the faults do: every state listed, the aims of both shards counted.
    let cell = |s: State| m.states.iter().find(|c| c.state == s).map(|c| (c.runs, c.hits, c.aimed));
    assert_eq!(m.states.len(), State::ALL.len());
    assert_eq!((cell(State::RestorePending1), cell(State::RestoreFresh)), (Some((5, 4, 0)), Some((0, 0, 2))));
    let d: Vec<(String, Option<(usize, u64)>)> =
        m.detection.iter().map(|d| (d.mode.clone(), d.first.as_ref().map(|x| (x.finding, x.at_ms)))).collect();
    assert_eq!(
        d,
        [
            ("legacy~assume-committed".to_string(), Some((2, 300_000))),
            ("legacy~restore-off-by-one".to_string(), Some((1, 60_000)))
        ]
    );
    assert!(
        super::report::render(&m).starts_with("5 runs of s [2 shards merged] in 10m00s"),
        "{}",
        super::report::render(&m)
    );

    // What keeps shards from being one campaign, each said.
    let mut other = two.clone();
    other.scenario = "t".into();
    other.first_seed = 7;
    let e = super::merge::merge(&[one.clone(), other], Path::new("out")).unwrap_err();
    assert!(
        e.iter().any(|l| l.contains("scenario t, not s")) && e.iter().any(|l| l.contains("--seed 7, not 100")),
        "{e:?}"
    );
    let e = super::merge::merge(&[one.clone(), one.clone()], Path::new("out")).unwrap_err();
    assert!(e.iter().any(|l| l.contains("shard 1/2 given twice")), "{e:?}");
    let mut plain = two;
    plain.shard = None;
    let e = super::merge::merge(&[one, plain], Path::new("out")).unwrap_err();
    assert!(e.iter().any(|l| l.contains("not a shard")), "{e:?}");
}

/// Under `--until-found` a mode's later findings are kept unshrunk, so the budget goes to the
/// modes not found yet; without it, and for a mode's first finding, they are shrunk. The other
/// reasons stay as they were.
#[test]
fn until_found_shrinks_only_a_modes_first_finding() {
    let (dir, file) = scenario_file("until-found");
    let lost = vec!["lost".to_string()];
    let sig = Signature::of("legacy~restore-off-by-one", "lost", &[]);
    let found = [finding(&sig, 1, "found/01-lost.yaml", &["r1"])];
    let hour = Duration::from_secs(3600);
    let until = ExploreArgs { until_found: true, ..args(&file) };
    let why = |a: &ExploreArgs, mode: &str, kinds: &[String], left: Duration| {
        super::why_not_shrunk(a, mode, "r", kinds, &found, left)
    };
    assert_eq!(
        why(&until, "legacy~restore-off-by-one", &lost, hour).as_deref(),
        Some("--until-found: legacy~restore-off-by-one was found before; the time goes to the modes not found yet")
    );
    assert_eq!(why(&until, "legacy~assume-committed", &lost, hour), None, "a mode's first finding");
    assert_eq!(why(&args(&file), "legacy~restore-off-by-one", &lost, hour), None, "without --until-found");
    assert_eq!(
        why(&until, "legacy~assume-committed", &[], hour).as_deref(),
        Some("no anomaly or job failure to shrink for (r)")
    );
    assert_eq!(
        why(&until, "legacy~assume-committed", &lost, Duration::ZERO).as_deref(),
        Some("the time budget was spent")
    );
    let off = ExploreArgs { shrink_runs: 0, ..until };
    assert_eq!(why(&off, "legacy~assume-committed", &lost, hour).as_deref(), Some("--shrink-runs 0"));
    let _ = std::fs::remove_dir_all(&dir);
}
