//! The recipe table against scenarios that can and cannot host it, and the aimed draw's
//! determinism, room and replay.
use std::collections::BTreeSet;

use sinkhole_checker::reached::State;
use sinkhole_model::{Mutant, SinkMode};
use sinkhole_scenario::{Family, FaultSpec, Scenario};

use super::super::draw::{checkpoint_of, Outages, BROKER_SETTLE_MS};
use super::super::tests::{scenario, ONE_BROKER, THREE_BROKERS};
use super::{hostable, recipe_of, window, Aim, Aims, RECIPES, UNAIMED};

const LEGACY_AND_2PC: [SinkMode; 3] = [SinkMode::Legacy, SinkMode::TwopcInject, SinkMode::AtLeastOnce];
const ENABLE_2PC: [SinkMode; 2] = [SinkMode::TwopcInject, SinkMode::Kip939];

/// The scenario a run aimed with `aim` runs: `base` with `faults` and the recipe's shape, as
/// the campaign writes it to the run's schedule file, read back.
fn as_run(base: &Scenario, faults: &[FaultSpec], aim: Option<&Aim>) -> Scenario {
    let mut s = base.clone();
    s.faults = faults.to_vec();
    s.schedule = None;
    if let Some(a) = aim {
        a.needs.apply(&mut s.job);
    }
    let yaml = serde_saphyr::to_string(&s).unwrap();
    sinkhole_scenario::from_str(&yaml, "run.yaml").unwrap_or_else(|e| panic!("{}", e.render()))
}

#[test]
fn every_state_has_one_recipe_or_says_why_it_has_none() {
    for &s in State::ALL {
        let recipes = RECIPES.iter().filter(|r| r.state == s).count();
        let unaimed = UNAIMED.iter().filter(|(u, why)| *u == s && !why.is_empty()).count();
        assert_eq!(recipes + unaimed, 1, "{s}: {recipes} recipe(s), {unaimed} reason(s) for none");
    }
}

#[test]
fn each_recipe_fits_a_scenario_that_can_host_it_at_every_checkpoint_it_may_take() {
    let one = scenario(ONE_BROKER);
    let three = scenario(THREE_BROKERS);
    let hosts: [(&Scenario, &[SinkMode]); 3] =
        [(&one, &LEGACY_AND_2PC), (&one, &ENABLE_2PC), (&three, &[SinkMode::Legacy])];
    for r in RECIPES {
        let base = hosts
            .iter()
            .find(|(s, m)| hostable(s, m, r))
            .map(|(s, _)| *s)
            .unwrap_or_else(|| panic!("{}: no scenario of the test hosts it", r.state));
        let (lo, hi) = window(base, r).unwrap();
        for n in [lo, hi] {
            let faults = super::faults_at(base, r, n).unwrap_or_else(|| panic!("{} at {n}", r.state));
            assert_eq!(faults.len(), r.faults.len(), "{}", r.state);
            let aim = Aim { state: r.state, needs: r.needs, checkpoint: n, faults: faults.clone(), cleared: 0 };
            let run = as_run(base, &faults, Some(&aim));
            assert_eq!(run.faults, faults, "{}: read back as written", r.state);
            if let Some(k) = r.needs.min_concurrent {
                assert!(run.job.max_concurrent_checkpoints >= k, "{}", r.state);
            }
            if let Some(p) = r.needs.min_parallelism {
                assert!(run.job.parallelism >= p, "{}", r.state);
            }
            for f in &faults {
                assert!(checkpoint_of(&f.when).is_none_or(|c| c >= 1), "{}: {f:?}", r.state);
            }
        }
    }
}

#[test]
fn a_state_whose_recipe_the_scenario_cannot_host_is_never_aimed_at() {
    let hosted = |s: &Scenario, modes: &[SinkMode], state: State| hostable(s, modes, recipe_of(state).unwrap());
    let one = scenario(ONE_BROKER);
    let no_proxy = scenario(&ONE_BROKER.replace("kafka: 4.4.0}", "kafka: 4.4.0, proxy: false}"));
    let slow = scenario(&ONE_BROKER.replace("checkpoint_interval_ms: 1000", "checkpoint_interval_ms: 3000"));
    let legacy = [SinkMode::Legacy];
    // Without the proxy no protocol fault; legacy alone loses past the timeout by design and
    // has committables in every restore; Flink's JobManager cannot be held at a notification;
    // a pause of one and a half intervals of 3 s outlasts four fifths of the heartbeat timeout.
    let refused = [
        (&no_proxy, &LEGACY_AND_2PC[..], State::CommitRetried),
        (&no_proxy, &LEGACY_AND_2PC[..], State::CommitFailedOver),
        (&no_proxy, &LEGACY_AND_2PC[..], State::CommitInFlightAtKill),
        (&one, &legacy[..], State::RestoredCommitAfterTimeout),
        (&one, &LEGACY_AND_2PC[..], State::RestoredCommitAfterTimeout),
        (&one, &legacy[..], State::RestorePending0),
        (&one, &[SinkMode::AtLeastOnce][..], State::RestorePending1),
        (&one, &[SinkMode::AtLeastOnce][..], State::FencedOnRestore),
        // A kill on a commit or a transaction never fires in at-least-once beside them.
        (&one, &LEGACY_AND_2PC[..], State::CommitInFlightAtKill),
        (&one, &LEGACY_AND_2PC[..], State::FencedOnRestore),
        (&one, &[SinkMode::Legacy, SinkMode::FlinkKafkasink][..], State::RestorePending2),
        (&one, &[SinkMode::Legacy, SinkMode::FlinkKafkasink][..], State::CheckpointDeclined),
        (&slow, &legacy[..], State::ConcurrentPending2),
    ];
    for (s, modes, state) in refused {
        assert!(!hosted(s, modes, state), "{state} on {modes:?}");
    }
    for (s, modes, state) in [
        (&one, &legacy[..], State::CommitRetried),
        (&one, &[SinkMode::Legacy, SinkMode::RdkafkaTxn][..], State::CommitInFlightAtKill),
        (&one, &[SinkMode::TwopcInject, SinkMode::Mutant(Mutant::Drop2pcFlag)][..], State::RestoredCommitAfterTimeout),
        (&one, &[SinkMode::Legacy, SinkMode::FlinkKafkasink][..], State::RestorePending1),
        (&slow, &legacy[..], State::SeveralRestores),
    ] {
        assert!(hosted(s, modes, state), "{state} on {modes:?}");
    }
    // Over many seeds with nothing reached, a campaign aims often, and never at those.
    for (s, modes, never) in [
        (&no_proxy, &LEGACY_AND_2PC[..], &[State::CommitRetried, State::CommitFailedOver, State::FencedOnRestore][..]),
        (&one, &legacy[..], &[State::RestoredCommitAfterTimeout, State::RestorePending0][..]),
        (
            &one,
            &[SinkMode::Legacy, SinkMode::FlinkKafkasink][..],
            &[State::RestorePending2, State::NotificationLost][..],
        ),
    ] {
        let aims = Aims::new(s, modes);
        assert!(never.iter().all(|n| !aims.hosts(*n)), "{modes:?}");
        let aimed: Vec<State> =
            (0..100).filter_map(|seed| aims.choose(s, seed, &BTreeSet::new())).map(|a| a.state).collect();
        assert!(aimed.len() > 30, "{modes:?}: {} aims", aimed.len());
        assert!(aimed.iter().all(|a| !never.contains(a)), "{modes:?}: {aimed:?}");
    }
    // A state without a recipe is never aimed at, whatever else is reached.
    let all_but: BTreeSet<State> = State::ALL.iter().copied().filter(|s| *s != State::CommitDropped).collect();
    let aims = Aims::new(&one, &LEGACY_AND_2PC);
    assert!(!aims.hosts(State::CommitDropped));
    assert!((0..50).all(|seed| aims.choose(&one, seed, &all_but).is_none()));
}

#[test]
fn the_aim_is_drawn_from_the_seed_and_the_coverage_so_far() {
    let s = scenario(ONE_BROKER);
    let (aims, other) = (Aims::new(&s, &LEGACY_AND_2PC), Aims::new(&s, &LEGACY_AND_2PC));
    let none = BTreeSet::new();
    // About half the runs aimed, over many states; with its state reached, the same seed aims
    // elsewhere or not at all.
    let chosen: Vec<(u64, Aim)> = (0..160).filter_map(|seed| Some((seed, aims.choose(&s, seed, &none)?))).collect();
    assert!((56..=104).contains(&chosen.len()), "about half of 160 runs aimed: {}", chosen.len());
    let states: BTreeSet<State> = chosen.iter().map(|(_, a)| a.state).collect();
    assert!(states.len() >= 12, "aims spread over the states: {states:?}");
    for (seed, aim) in &chosen {
        let again = aims.choose(&s, *seed, &BTreeSet::from([aim.state]));
        assert!(again.as_ref().is_none_or(|a| a.state != aim.state), "seed {seed}: {again:?}");
    }
    for seed in 0..24 {
        let (d, aim) = aims.draw(&s, seed, &none);
        assert_eq!(
            (d.clone(), aim.clone()),
            other.draw(&s, seed, &none),
            "seed {seed}: replays, in another campaign too"
        );
        let plain = super::super::draw::draw(&s, seed, Outages::for_modes(&LEGACY_AND_2PC));
        let Some(aim) = aim else {
            assert_eq!(d, plain, "seed {seed}: a run not aimed draws what it drew before aiming existed");
            continue;
        };
        // The drawn faults left are the draw's, in order, and the recipe's follow them.
        let kept = &d.faults[..d.faults.len() - aim.faults.len()];
        assert_eq!(kept.len() + aim.cleared, plain.faults.len(), "seed {seed}");
        let mut rest = plain.faults.iter();
        assert!(kept.iter().all(|f| rest.any(|g| g == f)), "seed {seed}: kept faults are the draw's, in order");
        let unnamed = |f: &FaultSpec| FaultSpec { name: None, ..f.clone() };
        let added: Vec<FaultSpec> = d.faults[kept.len()..].iter().map(unnamed).collect();
        assert_eq!(added, aim.faults.iter().map(unnamed).collect::<Vec<_>>(), "seed {seed}");
    }
    // Everything reached: nothing left to aim at.
    let all: BTreeSet<State> = State::ALL.iter().copied().collect();
    assert!((0..40).all(|seed| aims.choose(&s, seed, &all).is_none()));
}

#[test]
fn an_aimed_run_makes_room_for_its_faults_and_replays_from_its_file() {
    for text in [ONE_BROKER, THREE_BROKERS] {
        let s = scenario(text);
        let interval = s.job.checkpoint_interval_ms;
        let at = |f: &FaultSpec| match f.when {
            sinkhole_scenario::When::AtMs(t) => t,
            ref w => checkpoint_of(w).unwrap() * interval,
        };
        let aims = Aims::new(&s, &[SinkMode::Legacy]);
        let mut seen = 0;
        for seed in 0..30 {
            let (d, Some(aim)) = aims.draw(&s, seed, &BTreeSet::new()) else { continue };
            seen += 1;
            let run = as_run(&s, &d.faults, Some(&aim));
            assert_eq!(run.faults, d.faults, "seed {seed}: the file holds the faults as they run");
            let names: BTreeSet<&str> = d.faults.iter().filter_map(|f| f.name.as_deref()).collect();
            assert_eq!(names.len(), d.faults.len(), "seed {seed}: names unique");
            let (kept, added) = d.faults.split_at(d.faults.len() - aim.faults.len());
            assert!(added.iter().all(|f| f.name.as_deref().is_some_and(|n| n.ends_with("-aimed"))), "seed {seed}");
            let on: Vec<u64> = added.iter().filter_map(|f| checkpoint_of(&f.when)).collect();
            let (lo, hi) = (on.iter().min().copied().unwrap_or(0), on.iter().max().copied().unwrap_or(0));
            for f in kept {
                assert!(
                    checkpoint_of(&f.when).is_none_or(|c| c < lo || c > hi),
                    "seed {seed}: {f:?} on the aim's checkpoints"
                );
                for g in added.iter().filter(|g| g.kind.kind().family() == Family::Brokers) {
                    let (a, b) = (at(f), at(g));
                    assert!(
                        f.kind.kind().family() != Family::Brokers || a.abs_diff(b) >= BROKER_SETTLE_MS,
                        "seed {seed}: broker faults at {a} and {b}"
                    );
                }
            }
        }
        assert!(seen > 6, "{seen} aimed runs of 30");
    }
}

/// docs/GUIDE.md's table of recipes: a row per recipe, in the table's order, with its modes,
/// shape and faults as written here.
#[test]
fn the_guide_lists_every_recipe_as_the_table_has_it() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/GUIDE.md")).unwrap();
    let rest = &doc[doc.find("**Aiming at what was not reached.**").expect("the aiming paragraph")..];
    let rows: Vec<String> = rest
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(String::from)
        .collect();
    let table: Vec<String> = RECIPES
        .iter()
        .map(|r| {
            let job = r.needs.words();
            let faults: Vec<String> = r.faults.iter().map(|f| format!("`{f}`")).collect();
            format!("| `{}` | {} | {job} | {} |", r.state, r.by.words(), faults.join("<br>"))
        })
        .collect();
    assert_eq!(rows, table, "docs/GUIDE.md's recipes table, row for row");
    for (state, _) in UNAIMED {
        assert!(rest.contains(&format!("`{state}` has no recipe")), "{state}");
    }
}

#[test]
fn a_campaign_run_draws_its_job_then_its_faults_and_aim_over_it() {
    let s = scenario(ONE_BROKER);
    let aims = Aims::new(&s, &LEGACY_AND_2PC);
    let none = BTreeSet::new();
    let (mut aimed, mut plain) = (0, 0);
    for seed in 0..24 {
        let (run, aim) = aims.run_of(&s, seed, &none);
        assert_eq!(aims.run_of(&s, seed, &none), (run.clone(), aim.clone()), "seed {seed}: replays");
        let unaimed = super::super::shape::run_of(&s, seed, Outages::for_modes(&LEGACY_AND_2PC));
        let Some(aim) = aim else {
            assert_eq!(run, unaimed, "seed {seed}: a run not aimed is the shape's run");
            plain += 1;
            continue;
        };
        aimed += 1;
        // The job is the drawn one, with what the aim needs of it; the faults are the aimed draw's
        // over that job.
        let mut job = unaimed.scenario.job.clone();
        aim.needs.apply(&mut job);
        assert_eq!(run.scenario.job, job, "seed {seed}");
        assert_eq!(run.scenario.faults, run.drawn.faults, "seed {seed}");
        assert_eq!(run.shape.text(), sinkhole_scenario::shape::Shape::of(&run.scenario).text(), "seed {seed}");
    }
    assert!(aimed > 0 && plain > 0, "{aimed} aimed, {plain} not");
}
