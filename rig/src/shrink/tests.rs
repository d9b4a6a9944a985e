//! The shrinking search on synthetic failing predicates (no cluster), the
//! failure a candidate must reproduce, and the minimal scenario's file.
use sinkhole_model::{Mutant, SinkMode};

use super::*;
use sinkhole_checker::Counts;
use sinkhole_scenario::{Shape, When};

const FILE: &str = "\
name: shrink-test
cluster: {brokers: 1, kafka: 4.4.0}
topic: {partitions: 3, replication_factor: 1}
job: {parallelism: 2, records_per_subtask: 1000, rate_per_subtask: 1000,
      checkpoint_interval_ms: 1000, transaction_timeout_ms: 60000, restart_delay_ms: 300}
modes: [legacy, legacy~restore-off-by-one]
faults:
  - {name: a, kind: pause-workers, target: [0], when: {at_ms: 3000}, duration_ms: 2000}
  - {name: b, kind: kill-workers, target: [1], when: {at_ms: 6000}}
  - {name: c, kind: pause-workers, target: [1], when: {at_ms: 9000}, duration_ms: 1000}
  - {name: d, kind: kill-workers, target: all, when: {at_ms: 12000}}
  - {name: e, kind: pause-workers, target: [0], when: {at_ms: 15000}, duration_ms: 1500}
expect:
  legacy: clean
  legacy~restore-off-by-one: clean
";

fn scenario() -> Scenario {
    sinkhole_scenario::from_str(FILE, "shrink-test.yaml").unwrap_or_else(|e| panic!("{}", e.render()))
}

fn names(f: &[FaultSpec]) -> Vec<&str> {
    f.iter().map(|f| f.name.as_deref().unwrap()).collect()
}

fn at(f: &FaultSpec) -> u64 {
    match f.when {
        When::AtMs(t) => t,
        _ => panic!("not at_ms"),
    }
}

#[test]
fn two_culprits_out_of_five_are_found_and_moved_earlier() {
    let faults = scenario().faults;
    let mut calls = 0;
    let s = shrink_with(faults, 100, |f| {
        calls += 1;
        let n = names(f);
        n.contains(&"b") && n.contains(&"d")
    });
    assert_eq!(names(s.current()), ["b", "d"]);
    assert_eq!(s.stop(), Stop::Minimal);
    assert_eq!(s.runs, calls);
    // Moved earlier while it gained at least MIN_EARLIER_MS, never before
    // the fault before it (b is instantaneous: d may come right after it).
    let (b, d) = (at(&s.current()[0]), at(&s.current()[1]));
    assert!(b < 6000 && d < 12000, "{b} {d}");
    assert!(d >= b, "{b} {d}");
    assert!(s.accepted.iter().any(|x| x.starts_with("drop ")), "{:?}", s.accepted);
    assert!(s.accepted.iter().any(|x| x.starts_with("move b to at_ms")), "{:?}", s.accepted);
    // A local minimum: no candidate of the result fails.
    assert!(candidates(s.current()).iter().all(|c| !{
        let n = names(&c.faults);
        n.contains(&"b") && n.contains(&"d")
    }));
}

#[test]
fn a_duration_is_halved_while_the_failure_holds() {
    // Fails when fault a lasts at least 400 ms: 2000 → 1000 → 500, and 250 no longer fails.
    let s = shrink_with(scenario().faults, 100, |f| {
        f.iter().any(|f| f.name.as_deref() == Some("a") && f.duration_ms >= Some(400))
    });
    assert_eq!(names(s.current()), ["a"]);
    assert_eq!(s.current()[0].duration_ms, Some(500));
    assert!(s.accepted.contains(&"halve a to 1000 ms".to_string()), "{:?}", s.accepted);
}

#[test]
fn the_search_is_bounded_by_runs() {
    let s = shrink_with(scenario().faults, 3, |_| false);
    assert_eq!((s.runs, s.stop(), s.current().len()), (3, Stop::Runs, 5));
    // Without a budget it ends too: every step makes the list smaller.
    let s = shrink_with(scenario().faults, u32::MAX, |_| true);
    assert!(s.current().is_empty(), "an always-failing predicate keeps nothing");
    assert_eq!(s.stop(), Stop::Minimal);
}

#[test]
fn the_first_candidates_keep_one_half_then_drop_one_fault() {
    let c = candidates(&scenario().faults);
    assert_eq!(c[0].step, "keep faults 1–2 of 5");
    assert_eq!(names(&c[1].faults), ["c", "d", "e"]);
    assert_eq!(c[2].step, "drop e");
    assert!(c.iter().any(|c| c.step == "halve e to 750 ms"));
    // a starts at 3000 with nothing before it: halfway to 0.
    assert!(c.iter().any(|c| c.step == "move a to at_ms 1500"));
    // Below MIN_DURATION_MS twice over, nothing to halve.
    let mut f = scenario().faults;
    f.truncate(1);
    f[0].duration_ms = Some(300);
    f[0].when = When::AtMs(400);
    assert_eq!(candidates(&f).iter().map(|c| c.step.as_str()).collect::<Vec<_>>(), ["drop a"]);
}

/// A mode's row with `lost` and `dup` counted (the replays' tests use it too).
pub(crate) fn row(mode: SinkMode, outcome: Outcome, lost: u64, dup: u64, reason: &str) -> ModeSummary {
    ModeSummary {
        mode,
        outcome,
        words: String::new(),
        inconclusive_cause: None,
        expected_met: None,
        expected: "clean".into(),
        reason: reason.into(),
        counts: Counts { lost, duplicated: dup, ..Counts::default() },
        verdict: None,
        wall_ms: 1,
        checked: true,
    }
}

#[test]
fn the_same_failure_is_the_same_mode_failing_with_the_first_anomaly_kind() {
    let m = SinkMode::Mutant(Mutant::RestoreOffByOne);
    let t = Target::of(&row(m, Outcome::Fail, 12, 3, "expected clean")).unwrap();
    assert_eq!((t.kind.as_str(), t.original.as_str()), ("lost", "lost=12 dup=3"));
    assert!(t.same(&row(m, Outcome::Fail, 1, 0, "expected clean")));
    assert!(!t.same(&row(m, Outcome::Fail, 0, 5, "expected clean")), "another kind");
    assert!(!t.same(&row(m, Outcome::Inconclusive, 1, 0, "premise not met")), "not a failure");
    assert!(!t.same(&row(SinkMode::Legacy, Outcome::Fail, 1, 0, "x")), "another mode");
    let job = Target::of(&row(m, Outcome::Fail, 0, 0, "the job failed 11 times")).unwrap();
    assert_eq!(job.kind, "job-failed");
    assert!(Target::of(&row(m, Outcome::Pass, 0, 0, "clean")).unwrap_err().contains("did not fail"));
}

#[test]
fn the_minimal_scenario_runs_only_the_target_mode_and_loads_again() {
    let m = SinkMode::Mutant(Mutant::RestoreOffByOne);
    let base = scenario();
    let s = candidate_scenario(&base, m, &base.faults[1..2]);
    let text = scenario_yaml(&s, &["shrunk: 1 of 5 faults".into(), "seed: 7".into()]).unwrap();
    assert!(text.starts_with("# shrunk: 1 of 5 faults\n# seed: 7\n"), "{text}");
    let back = sinkhole_scenario::from_str(&text, "minimal.yaml").unwrap_or_else(|e| panic!("{}\n{text}", e.render()));
    assert_eq!(back.modes, [m]);
    assert_eq!(back.expect.keys().copied().collect::<Vec<_>>(), [m]);
    assert_eq!(names(&back.faults), ["b"]);
    assert!(back.schedule.is_none());
}

#[test]
fn a_list_already_run_is_not_run_again() {
    // One culprit that fails wherever its trigger is: after each move earlier
    // the empty list (drop it) would come up again; it runs once.
    let mut lists: Vec<Vec<FaultSpec>> = Vec::new();
    let s = shrink_with(scenario().faults, 100, |f| {
        assert!(!lists.contains(&f.to_vec()), "ran twice: {:?}", names(f));
        lists.push(f.to_vec());
        names(f).contains(&"d")
    });
    assert_eq!(names(s.current()), ["d"]);
    assert!(at(&s.current()[0]) < 1000, "moved as early as it goes: {}", at(&s.current()[0]));
    assert_eq!(lists.iter().filter(|l| l.is_empty()).count(), 1);
}

/// The shrink test's scenario with a `shape:`: its own job p2 cc1 ci1000 r1000@1000 tt60000 V2,
/// pulled into these bounds (records 10000 to 20000).
fn shaped() -> (Scenario, Toward) {
    let text = FILE.replace(
        "expect:",
        "shape: {parallelism: [1, 3], max_concurrent_checkpoints: [1, 3], checkpoint_interval_ms: [200, 1000],\n        \
         records_per_subtask: [10000, 20000], rate_per_subtask: [1000, 2000]}\nexpect:",
    );
    let s = sinkhole_scenario::from_str(&text, "shaped.yaml").unwrap_or_else(|e| panic!("{}", e.render()));
    let bounds = s.shape_bounds();
    let shape = bounds.clamp(&Shape::of(&s));
    (s, Toward { bounds, shape })
}

/// The job an exploration drew for the failing run: every field away from the scenario's.
fn drawn_job() -> Shape {
    Shape {
        parallelism: 3,
        max_concurrent_checkpoints: 3,
        checkpoint_interval_ms: 200,
        rate_per_subtask: 2000,
        records_per_subtask: 20_000,
        transaction_timeout_ms: 50_000,
        transactions: sinkhole_scenario::expect_by::Protocol::V1,
        naming: None,
    }
}

#[test]
fn a_findings_job_moves_toward_the_scenarios_own_except_where_the_failure_needs_it() {
    let (s, toward) = shaped();
    assert_eq!(toward.shape.text(), "p2 cc1 ci1000 tt60000 r10000@1000 V2");
    toward.bounds.admits(&drawn_job()).unwrap();
    // A bug that needs fault d and several pending checkpoints (a restore's later committables).
    let needs = |c: &Candidate| names(&c.faults).contains(&"d") && c.shape.unwrap().max_concurrent_checkpoints >= 2;
    let mut job_runs = 0;
    let mut fault_lists: Vec<Vec<FaultSpec>> = Vec::new();
    let search = Search::with_job(s.faults.clone(), drawn_job(), toward.clone(), 200);
    let done = run_search(
        search,
        |_| true,
        |c| {
            job_runs += usize::from(c.moves != search::Moves::Faults);
            if c.moves == search::Moves::Faults {
                // A fault list that did not fail is not run again once the job is simpler.
                assert!(!fault_lists.contains(&c.faults), "ran again after a job step: {}", c.step);
                fault_lists.push(c.faults.clone());
            }
            needs(c)
        },
    );
    assert_eq!(names(done.current()), ["d"]);
    let job = done.shape().unwrap();
    assert_eq!(job.text(), "p2 cc3 ci1000 tt60000 r10000@1000 V2", "{:?}", done.accepted);
    toward.bounds.admits(job).unwrap();
    // The whole job at once first (it lost the failure), then a field at a time, each once.
    assert!(job_runs <= sinkhole_scenario::shape::FIELDS.len() + 1, "{job_runs} job steps run");
    assert!(done.accepted.contains(&"job parallelism 3 → 2".to_string()), "{:?}", done.accepted);
    assert!(!done.accepted.iter().any(|a| a.starts_with("job max_concurrent_checkpoints")), "{:?}", done.accepted);
    assert_eq!(done.stop(), Stop::Minimal);
}

#[test]
fn a_job_the_failure_does_not_need_becomes_the_scenarios_in_one_step() {
    let (s, toward) = shaped();
    let done = run_search(
        Search::with_job(s.faults.clone(), drawn_job(), toward.clone(), 200),
        |_| true,
        |c| names(&c.faults).contains(&"b"),
    );
    assert_eq!((names(done.current()), done.shape()), (vec!["b"], Some(&toward.shape)));
    assert!(done.accepted.iter().any(|a| a == "job as the scenario's: p2 cc1 ci1000 tt60000 r10000@1000 V2"));
}

#[test]
fn a_longer_interval_raises_the_timeout_to_its_floor_and_a_case_the_scenario_refuses_is_not_run() {
    let (s, toward) = shaped();
    // At 200 ms the drawn timeout may be 43 s; the scenario's 1000 ms interval with three
    // pending checkpoints needs 46 s (4 × 1000 + a dropped request's 32 s + 10 s).
    let low = Shape { transaction_timeout_ms: 43_000, ..drawn_job() };
    toward.bounds.admits(&low).unwrap();
    let search = Search::with_job(vec![], low, toward.clone(), 200);
    let mut steps = Vec::new();
    run_search(
        search,
        |_| true,
        |c| {
            steps.push(c.step.clone());
            c.moves == search::Moves::JobField("checkpoint_interval_ms")
        },
    );
    assert!(
        steps.contains(&"job checkpoint_interval_ms 200 → 1000 (transaction_timeout_ms 43000 → 46000)".to_string()),
        "{steps:?}"
    );
    // One subtask cannot keep a fault on subtask 1: that case is passed over, not run.
    let one_subtask = |c: &Candidate| c.shape.is_none_or(|j| j.parallelism > 1 || !names(&c.faults).contains(&"b"));
    let mut ran = Vec::new();
    let done = run_search(
        Search::with_job(s.faults.clone(), Shape { parallelism: 3, ..toward.shape }, toward.clone(), 200),
        one_subtask,
        |c| {
            ran.push(c.clone());
            names(&c.faults).contains(&"b")
        },
    );
    assert!(ran.iter().all(&one_subtask), "a refused case ran");
    assert_eq!(done.runs as usize, ran.len());
    assert_eq!(done.shape().unwrap().parallelism, 2);
}
