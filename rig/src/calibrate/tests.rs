//! The detection matrix and the exit code, from synthetic matrices (no cluster).
use std::path::PathBuf;

use sinkhole_model::{Mutant, SinkMode};

use super::*;
use crate::matrix::{CellKey, CellResult};
use sinkhole_checker::Counts;

const LEGACY: SinkMode = SinkMode::Legacy;
const ACK: SinkMode = SinkMode::Mutant(Mutant::AssumeCommitted);
const OFF: SinkMode = SinkMode::Mutant(Mutant::RestoreOffByOne);

fn row(mode: SinkMode, outcome: Outcome, lost: u64, reason: &str) -> ModeSummary {
    ModeSummary {
        mode,
        outcome,
        words: String::new(),
        inconclusive_cause: None,
        expected_met: None,
        expected: "clean".into(),
        reason: reason.into(),
        counts: Counts { expected: 20_000, committed: 20_000 - lost, lost, ..Counts::default() },
        verdict: None,
        wall_ms: 1,
        checked: true,
    }
}

fn cell(scenario: &str, seed: u64, modes: Vec<ModeSummary>) -> CellResult {
    let key = CellKey { scenario: scenario.into(), file: PathBuf::from("x.yaml"), kafka: "4.4.0".into(), seed };
    let mut c = CellResult::pending(&key, modes.iter().map(|m| m.mode).collect());
    c.status = CellStatus::Done;
    c.dir = Some(PathBuf::from(format!("/r/{scenario}-{seed}")));
    c.modes = modes;
    c
}

fn matrix(cells: Vec<CellResult>) -> Matrix {
    Matrix {
        complete: true,
        kafka: vec!["4.4.0".into()],
        seeds: vec![1, 2],
        cells,
        ..Matrix::new("matrix-20261201T000000".into(), PathBuf::from("/r/calibrate-x"), "2026-12-01T00:00:00Z".into())
    }
}

fn pass(m: SinkMode) -> ModeSummary {
    row(m, Outcome::Pass, 0, "clean as expected")
}

#[test]
fn a_mutant_is_caught_where_its_verdict_fails_and_a_faithful_mode_never_is() {
    let m = matrix(vec![
        cell("kill-restore", 1, vec![pass(LEGACY), pass(ACK), row(OFF, Outcome::Fail, 2, "expected clean")]),
        cell("kill-restore", 2, vec![pass(LEGACY), pass(ACK), row(OFF, Outcome::Fail, 3, "expected clean")]),
        cell("endtxn-request-dropped", 1, vec![pass(LEGACY), row(ACK, Outcome::Fail, 1006, "x"), pass(OFF)]),
        cell("endtxn-request-dropped", 2, vec![pass(LEGACY), pass(ACK), pass(OFF)]),
        cell("acl", 1, vec![pass(SinkMode::TwopcInject)]),
    ]);
    let c = Calibration::of(&m, &[Mutant::AssumeCommitted, Mutant::RestoreOffByOne]);
    assert_eq!(c.scenarios, ["kill-restore", "endtxn-request-dropped", "acl"]);
    let r = |mode| c.rows.iter().find(|r| r.mode == mode).unwrap();
    // Caught, with what and how often; timing decided the assume-committed catch.
    assert_eq!(r(OFF).caught_by, ["kill-restore"]);
    assert_eq!(r(OFF).cells[0].caught, 2);
    assert_eq!(r(OFF).cells[0].runs[0].detail, "lost=2");
    assert_eq!(r(OFF).cells[1].detection, Detection::Escaped);
    assert_eq!(r(ACK).caught_by, ["endtxn-request-dropped"]);
    assert!(r(ACK).cells[1].by_luck() && !r(OFF).cells[0].by_luck());
    assert_eq!(r(ACK).cells[2].detection, Detection::NotRun, "the scenario has no legacy");
    assert_eq!(r(ACK).bug_class, Mutant::AssumeCommitted.bug_class());
    // Faithful rows: every faithful mode the matrix ran, flagged by nobody.
    assert_eq!(c.faithful_rows().map(|r| r.mode).collect::<Vec<_>>(), [LEGACY, SinkMode::TwopcInject]);
    assert!(c.faithful_rows().all(|r| r.caught_by.is_empty()));
    assert_eq!(c.totals, CalibrationTotals { mutants: 2, caught: 2, uncaught: 0, faithful_flagged: 0, rig_errors: 0 });
    assert_eq!(c.exit_code, 0);
    let table = render::render_table(&c);
    assert!(table.contains("endtxn-request-dropped (1/2: lost=1006)"), "{table}");
    assert!(
        table.contains("caught only in some runs (timing): legacy~assume-committed in endtxn-request-dropped"),
        "{table}"
    );
    let html = render::render_html(&c);
    assert!(html.contains("href=\"../kill-restore-1/report.html\""), "{html}");
    assert!(html.contains("class=\"caught\"") && html.contains("caught 1/2"), "{html}");
}

#[test]
fn exit_1_when_a_mutant_escapes_everywhere_or_a_faithful_mode_is_flagged() {
    // The mutant passed or was inconclusive everywhere.
    let m = matrix(vec![
        cell("a", 1, vec![pass(LEGACY), pass(ACK)]),
        cell("b", 1, vec![pass(LEGACY), row(ACK, Outcome::Inconclusive, 0, "fault did not fire")]),
    ]);
    let c = Calibration::of(&m, &[Mutant::AssumeCommitted]);
    assert_eq!((c.totals.uncaught, c.exit_code), (1, exit::FAILED));
    let table = render::render_table(&c);
    assert!(table.contains("NOBODY (passed the others; inconclusive in 1: b)"), "{table}");
    assert!(table.contains("1 caught by no scenario"), "{table}");
    assert_eq!(c.rows[0].cells[1].detection, Detection::Inconclusive);
    // Passed everywhere: said so.
    let m = matrix(vec![cell("a", 1, vec![pass(LEGACY), pass(ACK)])]);
    let c = Calibration::of(&m, &[Mutant::AssumeCommitted]);
    assert!(render::render_table(&c).contains("NOBODY (it passed every scenario)"));
    // A faithful mode that fails: the scenario blames a correct sink.
    let m = matrix(vec![cell(
        "a",
        1,
        vec![row(LEGACY, Outcome::Fail, 1, "expected clean"), row(ACK, Outcome::Fail, 9, "expected clean")],
    )]);
    let c = Calibration::of(&m, &[Mutant::AssumeCommitted]);
    assert_eq!((c.totals.faithful_flagged, c.totals.uncaught, c.exit_code), (1, 0, exit::FAILED));
    assert_eq!(c.faithful_rows().next().unwrap().caught_by, ["a"]);
    // The rig failed in a cell, nothing else wrong: 3; every mutant caught and
    // every faithful mode clean: 0.
    let mut broken = cell("b", 1, vec![]);
    broken.status = CellStatus::Error;
    broken.modes_planned = vec![LEGACY, ACK];
    broken.error = Some("the cluster did not start".into());
    let m = matrix(vec![cell("a", 1, vec![pass(LEGACY), row(ACK, Outcome::Fail, 9, "x")]), broken]);
    let c = Calibration::of(&m, &[Mutant::AssumeCommitted]);
    assert_eq!(c.rows[0].cells[1].runs[0].outcome, Outcome::Error);
    assert_eq!(c.rows[0].cells[1].detection, Detection::Inconclusive);
    assert_eq!((c.totals.rig_errors, c.exit_code), (1, exit::RIG_FAILED));
    assert_eq!(exit_code(&CalibrationTotals { mutants: 1, caught: 1, ..Default::default() }), exit::OK);
}

#[test]
fn a_job_that_failed_is_caught_by_its_last_error() {
    let r = row(
        SinkMode::Mutant(Mutant::ReuseTidNoFence),
        Outcome::Fail,
        12648,
        "the job failed (no expectation allows that; `job-failed` would): the job failed 11 times, more than restart_limit 10; last: subtask 0 failed: producing in x-0-3: OUT_OF_ORDER_SEQUENCE_NUMBER (45)",
    );
    let mut unchecked = r.clone();
    unchecked.checked = false;
    assert_eq!(
        detail_of(&unchecked),
        "job failed: subtask 0 failed: producing in x-0-3: OUT_OF_ORDER_SEQUENCE_NUMBER (45)"
    );
    assert_eq!(detail_of(&r), "lost=12648", "the counts say more when there are some");
}

#[test]
fn mutants_are_named_or_all() {
    assert_eq!(parse_mutants(&[]).unwrap(), Mutant::ALL.to_vec());
    assert_eq!(
        parse_mutants(&["legacy~assume-committed".into(), "legacy~assume-committed".into()]).unwrap(),
        vec![Mutant::AssumeCommitted]
    );
    let e = parse_mutants(&["legacy".into(), "legacy~x".into()]).unwrap_err();
    assert_eq!(e.len(), 2);
    assert!(e[0].starts_with("--mutants legacy: unknown mutant; mutants: legacy~assume-committed"), "{e:?}");
}

#[test]
fn a_cell_not_run_yet_is_pending_not_inconclusive() {
    let mut waiting = cell("b", 1, vec![]);
    waiting.status = CellStatus::Pending;
    waiting.modes_planned = vec![LEGACY, ACK];
    let m = matrix(vec![cell("a", 1, vec![pass(LEGACY), row(ACK, Outcome::Fail, 9, "x")]), waiting]);
    let c = Calibration::of(&m, &[Mutant::AssumeCommitted]);
    assert_eq!(c.rows[0].cells[1].detection, Detection::Pending);
    assert!(render::render_html(&c).contains("<b>pending</b>"));
}
