//! Stability from synthetic matrices (no cluster): each status, `error` as
//! its own value, one seed, a merged campaign, the line and the exit code.
use std::path::{Path, PathBuf};

use sinkhole_base::provenance::Provenance;
use sinkhole_checker::verdict::Outcome;
use sinkhole_model::SinkMode;

use super::*;
use crate::matrix::merge::{self, Loaded, MergePolicy};
use crate::matrix::{CellKey, CellResult, CellStatus, Matrix, ShardInfo};
use crate::results::summary::{rig_failed, ModeSummary};

const LEGACY: SinkMode = SinkMode::Legacy;
const TWOPC: SinkMode = SinkMode::TwopcInject;

fn verdict(mode: SinkMode, outcome: Outcome) -> ModeSummary {
    // Rows as an older matrix.json holds them (no words): the rows make theirs from the outcome.
    ModeSummary {
        outcome,
        words: String::new(),
        checked: true,
        reason: outcome.name().into(),
        ..rig_failed(mode, "clean".into(), "")
    }
}

/// A finished cell: scenario on 4.4.0 with one seed, each mode's outcome.
fn cell(scenario: &str, seed: u64, modes: &[(SinkMode, Outcome)]) -> CellResult {
    let key = CellKey { scenario: scenario.into(), file: PathBuf::from("x.yaml"), kafka: "4.4.0".into(), seed };
    let mut c = CellResult::pending(&key, modes.iter().map(|m| m.0).collect());
    c.status = CellStatus::Done;
    c.run_id = Some(format!("{scenario}-{seed}"));
    c.dir = Some(PathBuf::from(format!("/r/{scenario}-{seed}")));
    c.modes = modes.iter().map(|(m, o)| verdict(*m, *o)).collect();
    c
}

/// The same cell, not run (`--fail-fast` skipped it).
fn skipped(scenario: &str, seed: u64, modes: &[SinkMode]) -> CellResult {
    let key = CellKey { scenario: scenario.into(), file: PathBuf::from("x.yaml"), kafka: "4.4.0".into(), seed };
    CellResult { status: CellStatus::Skipped, ..CellResult::pending(&key, modes.to_vec()) }
}

fn matrix(seeds: &[u64], cells: Vec<CellResult>) -> Matrix {
    let mut m = Matrix {
        complete: true,
        seeds: seeds.to_vec(),
        cells,
        ..Matrix::new("matrix-20261201T000000".into(), PathBuf::from("/r/m"), "2026-12-01T00:00:00Z".into())
    };
    for (i, c) in m.cells.iter_mut().enumerate() {
        c.index = i;
    }
    m.refresh();
    m
}

fn group<'a>(m: &'a Matrix, scenario: &str, mode: SinkMode) -> &'a Group {
    m.stability.groups.iter().find(|g| g.scenario == scenario && g.mode == mode).expect("a group")
}

use Outcome::*;

#[test]
fn seeds_that_agree_are_stable_and_seeds_that_differ_are_flaky() {
    let m = matrix(
        &[1, 2, 3],
        (1..=3)
            .map(|s| cell("share-delivery-limit", s, &[(LEGACY, Pass), (TWOPC, if s == 2 { Fail } else { Pass })]))
            .collect(),
    );
    let st = &m.stability;
    assert_eq!(st.seeds, 3);
    assert_eq!(st.groups.len(), 2);
    let legacy = group(&m, "share-delivery-limit", LEGACY);
    assert_eq!(legacy.status, Status::Stable);
    assert_eq!(legacy.agreed(), Some(Pass));
    assert_eq!(
        legacy.seeds.iter().map(|s| (s.seed, s.outcome)).collect::<Vec<_>>(),
        [(1, Some(Pass)), (2, Some(Pass)), (3, Some(Pass))]
    );
    assert_eq!(legacy.seeds[1].run_id.as_deref(), Some("share-delivery-limit-2"));
    let twopc = group(&m, "share-delivery-limit", TWOPC);
    assert_eq!((twopc.status, twopc.tally()), (Status::Flaky, "2 as expected, 1 NOT as expected".to_string()));
    assert_eq!(twopc.label(), "share-delivery-limit/twopc-inject@4.4.0");
    assert_eq!(twopc.agreed(), None);
    assert_eq!(st.totals, StabilityTotals { groups: 2, stable: 1, flaky: 1, incomplete: 0, one_seed: 0 });
    assert_eq!(
        summary_line(&m),
        "stable 1 of 2 cells over 3 seeds; flaky: share-delivery-limit/twopc-inject@4.4.0 (2 as expected, 1 NOT as expected)"
    );
    // Any difference is flakiness, not only pass against fail.
    let m = matrix(&[1, 2], vec![cell("s", 1, &[(LEGACY, Pass)]), cell("s", 2, &[(LEGACY, Inconclusive)])]);
    assert_eq!(group(&m, "s", LEGACY).status, Status::Flaky);
    let m = matrix(&[1, 2], vec![cell("s", 1, &[(LEGACY, Fail)]), cell("s", 2, &[(LEGACY, Fail)])]);
    assert_eq!(group(&m, "s", LEGACY).status, Status::Stable, "failing every time is stable");
    assert_eq!(summary_line(&m), "stable 1 of 1 cells over 2 seeds");
}

#[test]
fn a_seed_not_run_or_errored_leaves_the_group_incomplete_never_stable() {
    let m = matrix(
        &[1, 2, 3],
        vec![
            cell("s", 1, &[(LEGACY, Pass), (TWOPC, Pass)]),
            // The rig failed for one mode only: `error`, its own value.
            cell("s", 2, &[(LEGACY, Pass), (TWOPC, Error)]),
            skipped("s", 3, &[LEGACY, TWOPC]),
        ],
    );
    let legacy = group(&m, "s", LEGACY);
    assert_eq!((legacy.status, legacy.tally()), (Status::Incomplete, "2 as expected, 1 not run".to_string()));
    assert_eq!(
        legacy.seeds[2],
        SeedOutcome { seed: 3, outcome: None, cell: CellStatus::Skipped, run_id: None, words: None }
    );
    let twopc = group(&m, "s", TWOPC);
    assert_eq!(
        (twopc.status, twopc.tally()),
        (Status::Incomplete, "1 as expected, 1 rig error, 1 not run".to_string())
    );
    assert_eq!(
        summary_line(&m),
        "stable 0 of 2 cells over 3 seeds; incomplete: s/legacy@4.4.0 (2 as expected, 1 not run), s/twopc-inject@4.4.0 (1 as expected, 1 rig error, 1 not run)"
    );

    // A cell whose cluster never started: every mode's seed is `error`.
    let mut broken = skipped("s", 2, &[LEGACY]);
    broken.status = CellStatus::Error;
    let m = matrix(&[1, 2], vec![cell("s", 1, &[(LEGACY, Pass)]), broken]);
    let g = group(&m, "s", LEGACY);
    assert_eq!(g.seeds[1].outcome, Some(Error));
    assert_eq!((g.status, g.tally()), (Status::Incomplete, "1 as expected, 1 rig error".to_string()));

    // Verdicts that differ are flaky even with a seed missing.
    let m = matrix(
        &[1, 2, 3],
        vec![cell("s", 1, &[(LEGACY, Pass)]), cell("s", 2, &[(LEGACY, Fail)]), skipped("s", 3, &[LEGACY])],
    );
    assert_eq!(group(&m, "s", LEGACY).status, Status::Flaky);

    // Many incomplete groups: the first five named, the rest counted.
    let cells: Vec<CellResult> = (0..7)
        .flat_map(|i| {
            let name = format!("s{i}");
            [cell(&name, 1, &[(LEGACY, Pass)]), skipped(&name, 2, &[LEGACY])]
        })
        .collect();
    let line = summary_line(&matrix(&[1, 2], cells));
    assert!(
        line.starts_with("stable 0 of 7 cells over 2 seeds; incomplete: s0/legacy@4.4.0 (1 as expected, 1 not run), "),
        "{line}"
    );
    assert!(line.contains("s4/legacy@4.4.0") && !line.contains("s5/") && line.ends_with(" and 2 more"), "{line}");
}

#[test]
fn one_seed_is_shown_as_one_seed_not_as_proof_of_stability() {
    let m = matrix(&[7], vec![cell("a", 7, &[(LEGACY, Pass), (TWOPC, Fail)]), cell("b", 7, &[(LEGACY, Pass)])]);
    let st = &m.stability;
    assert!(!st.measured());
    assert!(st.groups.iter().all(|g| g.status == Status::OneSeed && g.seeds.len() == 1));
    assert_eq!(st.totals, StabilityTotals { groups: 3, stable: 0, flaky: 0, incomplete: 0, one_seed: 3 });
    let line = summary_line(&m);
    assert_eq!(
        line,
        "stability not measured: 3 cells over 1 seed each (one seed cannot disagree with itself; --seed-count N runs N)"
    );
    assert!(!line.starts_with("stable"), "{line}");
    // One seed that did not run is incomplete, not one-seed.
    let m = matrix(&[7], vec![skipped("a", 7, &[LEGACY])]);
    assert_eq!(m.stability.groups[0].status, Status::Incomplete);
}

fn loaded(full: &Matrix, index: u32, count: u32) -> Loaded {
    let dir = PathBuf::from(format!("/r/shard-{index}"));
    let sh = crate::matrix::Shard { index, count };
    let mut m = full.clone();
    m.dir = dir.clone();
    m.matrix_id = format!("matrix-x-shard-{index}-of-{count}");
    m.shard = Some(ShardInfo { index, count, cells_total: full.cells.len() });
    m.cells.retain(|c| sh.takes(c.index));
    m.refresh();
    Loaded { dir, matrix: m, provenance: Provenance::of_json("{}").expect("an empty object") }
}

/// The seeds of a group are spread over the shards (round robin over cells
/// in seed order): each shard alone sees part of them; the merge sees all.
#[test]
fn a_merged_campaign_has_the_stability_of_every_shards_seeds() {
    let outcome = |s: u64| if s == 3 { Fail } else { Pass };
    let full = matrix(&[1, 2, 3, 4], (1..=4).map(|s| cell("s", s, &[(LEGACY, Pass), (TWOPC, outcome(s))])).collect());
    assert_eq!(full.stability.totals.flaky, 1);
    let (one, two) = (loaded(&full, 1, 2), loaded(&full, 2, 2));
    assert_eq!(one.matrix.cells.iter().map(|c| c.seed).collect::<Vec<_>>(), [1, 3]);
    // Shard 1 has seeds 1 and 3 (flaky already), shard 2 seeds 2 and 4 (both pass).
    assert_eq!(one.matrix.stability.totals.flaky, 1);
    assert!(summary_line(&one.matrix).starts_with(
        "stable 1 of 2 cells over 2 seeds; flaky: s/twopc-inject@4.4.0 (1 as expected, 1 NOT as expected) (shard 1/2"
    ));
    assert_eq!(two.matrix.stability.totals, StabilityTotals { groups: 2, stable: 2, ..StabilityTotals::default() });
    assert!(summary_line(&two.matrix)
        .ends_with("(shard 2/2: its own seeds of each cell; the merge of the shards has the campaign's)"));

    let merged = merge::merge(&[two, one], Path::new("/r/merged"), MergePolicy::default()).expect("one campaign");
    assert_eq!(merged.stability, full.stability);
    let g = group(&merged, "s", TWOPC);
    assert_eq!(g.seeds.iter().map(|s| s.seed).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(g.tally(), "3 as expected, 1 NOT as expected");
    assert_eq!(
        summary_line(&merged),
        "stable 1 of 2 cells over 4 seeds; flaky: s/twopc-inject@4.4.0 (3 as expected, 1 NOT as expected)"
    );
    // The exit code is the verdicts' (the failing seed: 1) unless asked.
    assert_eq!(merged.exit_code, 1);
}

#[test]
fn fail_on_flaky_exits_1_for_a_flaky_group_and_says_why() {
    let mut m = matrix(&[1, 2], vec![cell("s", 1, &[(LEGACY, Pass)]), cell("s", 2, &[(LEGACY, Observed)])]);
    assert_eq!(m.exit_code, 0, "the exit code rules are unchanged without the flag");
    m.fail_on_flaky = true;
    m.refresh();
    assert_eq!(m.exit_code, 1);
    assert_eq!(m.explain_exit(), "1 scenario × mode × version cell is flaky over the seeds (--fail-on-flaky)");
    // A real failure keeps its own explanation.
    let mut f = matrix(&[1, 2], vec![cell("s", 1, &[(LEGACY, Pass)]), cell("s", 2, &[(LEGACY, Fail)])]);
    f.fail_on_flaky = true;
    f.refresh();
    assert_eq!((f.exit_code, f.explain_exit()), (1, "at least one cell did not meet its expectation".to_string()));
    // Stable matrices are untouched by the flag.
    let mut s = matrix(&[1, 2], vec![cell("s", 1, &[(LEGACY, Pass)]), cell("s", 2, &[(LEGACY, Pass)])]);
    s.fail_on_flaky = true;
    s.refresh();
    assert_eq!(s.exit_code, 0);
    // A flaky group beats a rig failure elsewhere, as a failure does.
    let mut broken = skipped("t", 1, &[LEGACY]);
    broken.status = CellStatus::Error;
    let mut r = matrix(&[1, 2], vec![cell("s", 1, &[(LEGACY, Pass)]), cell("s", 2, &[(LEGACY, Inconclusive)]), broken]);
    assert_eq!(r.exit_code, 3);
    r.fail_on_flaky = true;
    r.refresh();
    assert_eq!(r.exit_code, 1);
}

#[test]
fn matrix_json_has_the_stability_section() {
    let m = matrix(&[1, 2], vec![cell("s", 1, &[(LEGACY, Pass)]), skipped("s", 2, &[LEGACY])]);
    let v = serde_json::to_value(&m).unwrap();
    let s = &v["stability"];
    assert_eq!(s["seeds"], 2);
    assert_eq!(s["totals"], serde_json::json!({"groups": 1, "stable": 0, "flaky": 0, "incomplete": 1, "one_seed": 0}));
    let g = &s["groups"][0];
    assert_eq!(
        (g["scenario"].as_str(), g["mode"].as_str(), g["kafka"].as_str()),
        (Some("s"), Some("legacy"), Some("4.4.0"))
    );
    assert_eq!(g["status"], "incomplete");
    assert_eq!(
        g["seeds"][0],
        serde_json::json!({"seed": 1, "outcome": "pass", "cell": "done", "run_id": "s-1", "words": "clean (expected)"})
    );
    assert_eq!(g["seeds"][1], serde_json::json!({"seed": 2, "outcome": null, "cell": "skipped"}));
    assert_eq!(v["fail_on_flaky"], false);
    // A matrix.json written before stability was measured still reads.
    let mut old = v.clone();
    old.as_object_mut().unwrap().remove("stability");
    old.as_object_mut().unwrap().remove("fail_on_flaky");
    let back: Matrix = serde_json::from_value(old).unwrap();
    assert!(back.stability.groups.is_empty() && !back.fail_on_flaky);
}
