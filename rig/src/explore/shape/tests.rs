//! The shape's draw over the library's scenarios: a seed replays its job and faults, every
//! drawn job is a point of its bounds and a scenario the loader accepts, a scenario drawn at its
//! own shape draws the faults it always drew, and a faithful one-phase sink's drawn timeout
//! outlives every fault drawn beside it.
use std::collections::BTreeSet;
use std::path::Path;

use sinkhole_scenario::expect_by::Protocol;
use sinkhole_scenario::schedule::UNANSWERED_REQUEST_MS;
use sinkhole_scenario::shape::{job_ms, BROKER_BACK_MS};
use sinkhole_scenario::{Family, FaultKind, FaultSpec, Scenario, ShapeSpec, When};

use super::*;
use crate::explore::draw::{checkpoint_of, draw, Outages};

fn library(name: &str) -> Scenario {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(name);
    sinkhole_scenario::load(&file).unwrap_or_else(|e| panic!("{}", e.render()))
}

/// Every scenario of the library.
fn all() -> Vec<(String, Scenario)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    names.sort();
    names.into_iter().map(|n| (n.clone(), library(&n))).collect()
}

#[test]
fn a_seed_replays_its_job_and_its_faults_and_seeds_spread_over_the_bounds() {
    let s = library("random-mix.yaml");
    let b = s.shape_bounds();
    for seed in [0, 7, u64::MAX] {
        assert_eq!(run_of(&s, seed, Outages::Short), run_of(&s, seed, Outages::Short), "seed {seed}");
    }
    let (mut p, mut cc, mut v, mut ci) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for seed in 0..200 {
        let shape = draw_shape(&b, seed);
        b.admits(&shape).unwrap_or_else(|e| panic!("seed {seed}: {e}: {shape:?}"));
        assert_eq!(shape.checkpoint_interval_ms % 10, 0, "on round steps: {shape:?}");
        assert_eq!(shape.records_per_subtask % 1_000, 0, "{shape:?}");
        p.insert(shape.parallelism);
        cc.insert(shape.max_concurrent_checkpoints);
        v.insert(format!("{:?}", shape.transactions));
        ci.insert(shape.checkpoint_interval_ms);
    }
    assert_eq!((p.len(), cc.len(), v.len()), (3, 3, 2), "every parallelism, concurrency and protocol drawn");
    assert!(ci.len() > 50, "{} intervals in 200 seeds", ci.len());
}

#[test]
fn a_scenario_drawn_at_its_own_shape_draws_the_faults_it_always_drew() {
    for name in ["random-mix.yaml", "concurrent-checkpoints.yaml"] {
        let s = library(name);
        let j = &s.job;
        let mut pinned = s.clone();
        pinned.shape = Some(ShapeSpec {
            parallelism: Some([j.parallelism; 2]),
            max_concurrent_checkpoints: Some([j.max_concurrent_checkpoints; 2]),
            checkpoint_interval_ms: Some([j.checkpoint_interval_ms; 2]),
            transaction_timeout_ms: Some([j.transaction_timeout_ms; 2]),
            records_per_subtask: Some([j.records_per_subtask; 2]),
            rate_per_subtask: Some([j.rate_per_subtask; 2]),
            transactions: Some(vec![Protocol::V2]),
            naming: None,
        });
        let text = serde_saphyr::to_string(&pinned).unwrap();
        let pinned = sinkhole_scenario::from_str(&text, "pinned.yaml").unwrap_or_else(|e| panic!("{}", e.render()));
        for seed in 0..10 {
            let run = run_of(&pinned, seed, Outages::Short);
            assert_eq!(run.shape, Shape::of(&s), "{name} seed {seed}");
            assert_eq!(run.drawn, draw(&s, seed, Outages::Short), "{name} seed {seed}: the faults it always drew");
            assert_eq!((&run.scenario.job, run.scenario.shape.as_ref()), (&s.job, None));
        }
    }
}

/// The checkpoint-phase faults: the job time their checkpoint is due at.
fn due_ms(f: &FaultSpec, interval: u64) -> Option<u64> {
    match f.when {
        When::AtMs(t) => Some(t),
        ref w => checkpoint_of(w).map(|n| n * interval),
    }
}

#[test]
fn every_drawn_run_is_a_scenario_the_loader_accepts_with_its_faults_inside_its_job() {
    for name in ["random-mix.yaml", "concurrent-checkpoints.yaml", "kill-restore.yaml", "readers-faults.yaml"] {
        let s = library(name);
        for seed in 0..12 {
            let run = run_of(&s, seed, Outages::for_modes(&s.modes));
            let text = serde_saphyr::to_string(&run.scenario).unwrap();
            let back = sinkhole_scenario::from_str(&text, "run.yaml")
                .unwrap_or_else(|e| panic!("{name} seed {seed}: {}\n{text}", e.render()));
            assert_eq!(back, run.scenario, "{name} seed {seed}: the saved schedule replays the run");
            assert_eq!(Shape::of(&back), run.shape);
            let (job, interval) = (job_ms(&back), back.job.checkpoint_interval_ms);
            assert!(back.job.parallelism <= back.topic.partitions, "{name} seed {seed}");
            for f in &run.drawn.faults {
                let at = due_ms(f, interval).unwrap_or(0);
                assert!(at < job, "{name} seed {seed}: {} due at {at} ms of a {job} ms job", f.kind.name());
            }
        }
    }
}

/// What `f` keeps a transaction from its commit at most (its own hold, not the checkpoints
/// around it): its duration (a kill: the restart delay), a worker's heartbeat and restart delay,
/// a broker's return, a dropped request's timeout.
fn hold_ms(s: &Scenario, f: &FaultSpec) -> u64 {
    let j = &s.job;
    let own = f.duration_ms.unwrap_or(0).max(j.restart_delay_ms);
    own + match f.kind.kind().family() {
        // A pause shorter than the heartbeat timeout holds for itself; a longer one, a kill or
        // an outage until the restore.
        Family::Workers => j.heartbeat_timeout_ms.saturating_sub(own) + j.restart_delay_ms,
        Family::Brokers => BROKER_BACK_MS,
        Family::Protocol if f.kind.kind() == FaultKind::ProtocolDrop => UNANSWERED_REQUEST_MS,
        Family::Coordinator => j.checkpoint_interval_ms,
        _ => 0,
    }
}

/// The hard constraint of swarm testing here: a finding must be a bug. Over the whole library,
/// every scenario with a mode the broker aborts at its timeout, its drawn runs (a few seeds
/// each, more for the two exploration scenarios): the drawn timeout outlives the drawn
/// checkpoints and each drawn fault's hold.
#[test]
fn a_one_phase_sinks_drawn_timeout_outlives_every_fault_drawn_beside_it() {
    let mut checked = 0;
    for (name, s) in all() {
        let b = s.shape_bounds();
        let Some(floor) = b.floor.filter(|f| f.one_phase) else { continue };
        let seeds = if matches!(name.as_str(), "random-mix.yaml" | "concurrent-checkpoints.yaml") { 10 } else { 3 };
        for seed in 0..seeds {
            let run = run_of(&s, seed, Outages::for_modes(&s.modes));
            let sh = run.shape;
            let pending = (u64::from(sh.max_concurrent_checkpoints) + 1) * sh.checkpoint_interval_ms;
            let tt = u64::try_from(sh.transaction_timeout_ms).unwrap();
            assert!(tt >= floor.ms(sh.checkpoint_interval_ms, sh.max_concurrent_checkpoints), "{name} {seed}");
            for f in run.drawn.faults.iter().filter(|f| !f.kind.name().ends_with("-readers")) {
                let hold = hold_ms(&run.scenario, f);
                assert!(
                    tt > pending + hold,
                    "{name} seed {seed} ({}): a {} holding {hold} ms after {pending} ms of checkpoints outlives the \
                     {tt} ms timeout",
                    sh.text(),
                    f.kind.name()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 120, "{checked} runs checked");
}

#[test]
fn the_explore_test_scenario_keeps_its_short_job_and_varies_the_rest() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/explore-tiny.yaml");
    let s = sinkhole_scenario::load(&file).unwrap_or_else(|e| panic!("{}", e.render()));
    let mut concurrency = BTreeSet::new();
    for seed in 0..40 {
        let run = run_of(&s, seed, Outages::Short);
        let j = &run.scenario.job;
        assert_eq!(
            (j.parallelism, j.checkpoint_interval_ms, j.records_per_subtask, j.rate_per_subtask),
            (2, 1000, 6000, 1000)
        );
        assert_eq!(run.drawn.window_ms, [1500, 4500], "the scenario's own window: the job's length is its own");
        concurrency.insert(j.max_concurrent_checkpoints);
    }
    assert_eq!(concurrency.len(), 2, "{concurrency:?}");
}

#[test]
fn a_shrink_moves_toward_the_scenarios_own_job_within_its_bounds() {
    let s = library("concurrent-checkpoints.yaml");
    let t = toward(&s);
    assert_eq!(t.shape, Shape::of(&s), "its own job is inside its default bounds");
    t.bounds.admits(&t.shape).unwrap();
    // A short timeout of the scenario's is pulled up to the floor.
    let short = library("flip319-short-outage.yaml");
    let t = toward(&short);
    assert!(t.shape.transaction_timeout_ms > short.job.transaction_timeout_ms, "{:?}", t.shape);
    t.bounds.admits(&t.shape).unwrap();
}
