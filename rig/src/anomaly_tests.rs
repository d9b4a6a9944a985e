//! The anomaly table (`sinkhole_model::anomaly`) held to every renderer a person reads counts
//! in: each shows exactly the anomalies the table says it shows — always, only when not zero,
//! or never — under the name the table gives it there, and nothing the table does not list.
//! The expectation vocabulary, the checks and the docs are held to the table in the checker
//! (`checker/src/anomaly_tests.rs`).
use std::collections::BTreeMap;

use sinkhole_checker::reads::ReadReport;
use sinkhole_checker::share::ShareView;
use sinkhole_checker::verdict::{self, words, Verdict, VerdictInput};
use sinkhole_checker::{CheckReport, Counts};
use sinkhole_history::{JobOutcome, ModeOutcome};
use sinkhole_model::anomaly::{Anomaly, Renderer, Severity, Show};
use sinkhole_model::SinkMode;
use sinkhole_scenario::Expectation;

use crate::results::report::{self, data::Timeline, ModeData, RunData};
use crate::results::summary::{self, ModeSummary};

/// A mode's counts with `a` at `n` and every other anomaly at 0.
fn counts(a: Anomaly, n: u64) -> Counts {
    let mut c = Counts { expected: 100, committed: 100, ..Counts::default() };
    *c.get_mut(a) = n;
    c
}

/// A verdict of those counts, with live readers and a share group, so the report has a place
/// for every group.
fn verdict_of(c: Counts) -> Verdict {
    let outcome = ModeOutcome {
        job: JobOutcome::Finished,
        attempts: 1,
        checkpoints_completed: 3,
        history: "h.jsonl".into(),
        faults: vec![],
        committables_dropped: 0,
        wall_ms: 5_000,
    };
    let report = CheckReport { counts: c, ..CheckReport::default() };
    let mut v = verdict::build(VerdictInput {
        scenario: "s",
        run_id: "s-1",
        mode: SinkMode::Legacy,
        expectation: None,
        premises: vec![],
        outcome: &outcome,
        report: Some(&report),
        kafka: "4.4.0",
        seed: 1,
        drained: "d.bin".into(),
    });
    v.reads = Some(ReadReport::default());
    v.share = Some(ShareView::default());
    v
}

fn row(c: Counts) -> ModeSummary {
    summary::summarize(&verdict_of(c), None)
}

/// The text between `start` and the next `end`.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let rest = &text[text.find(start).unwrap_or_else(|| panic!("no {start:?} in {text}")) + start.len()..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}

/// The report's page for one mode of these counts.
fn report_page(c: Counts) -> String {
    let mode = ModeData {
        mode: SinkMode::Legacy,
        row: None,
        verdict: Some(verdict_of(c)),
        timeline: Timeline::default(),
        latencies: Default::default(),
        tid_checkpoints: Default::default(),
        problems: vec![],
    };
    let d = RunData {
        dir: "r".into(),
        summary: None,
        scenario: None,
        scenario_yaml: None,
        modes: vec![mode],
        problems: vec![],
        stories: vec![],
    };
    report::render(&d)
}

/// What `r` shows for counts `c`, one item per anomaly (and per count the renderer lists
/// beside them), each said as [`said`] says an anomaly there.
fn shown(r: Renderer, c: Counts) -> Vec<String> {
    let split = |text: &str, sep: &str| text.split(sep).map(|s| s.trim().to_string()).collect::<Vec<_>>();
    match r {
        Renderer::Reason => {
            let (_, reason) = verdict::evaluate(&Expectation::Counts(BTreeMap::new()), &c);
            split(between(&reason, " committed, ", "\n"), ", ")
        }
        Renderer::Words => words::anomalies(&c, false),
        Renderer::Table => {
            // The terminal's table and the report's verdict table: the same columns.
            let terminal = summary::render_table(&[row(c)]);
            let html = between(&report_page(c), "<table class=\"verdict\">", "</tr>").to_string();
            let html: Vec<String> =
                html.split("<th>").skip(1).map(|h| h.trim_end_matches("</th>").to_string()).collect();
            let head = split(terminal.lines().next().unwrap(), "|");
            assert_eq!(head, html, "the report's verdict table has the terminal's columns");
            // `column=cell` of the mode's row.
            let cells = split(terminal.lines().nth(2).unwrap(), "|");
            head.iter().zip(cells).map(|(h, c)| format!("{h}={c}")).collect()
        }
        Renderer::Report => {
            // `name=count`, and `!` before a row marked as an anomaly.
            let page = report_page(c);
            let table = between(&page, "<table class=\"counts\">", "</table>");
            table
                .split("<tr><td")
                .skip(1)
                .map(|cells| {
                    let mark = if cells.starts_with(" class=\"anomaly\"") { "!" } else { "" };
                    let name = between(cells, ">", "</td>");
                    let n = between(between(cells, "</td><td", "</td>"), ">", "<");
                    format!("{mark}{name}={n}")
                })
                .collect()
        }
        Renderer::Cells => split(&crate::matrix::anomalies(&c), " ").into_iter().filter(|s| !s.is_empty()).collect(),
        Renderer::Compare => {
            // A matrix cell's title, and serve's comparison of two runs (by field): the same rows.
            let title = split(&crate::matrix::compared(&c), ", ");
            let mut diff = String::new();
            crate::serve::pages::counts_diff(&mut diff, &Some(row(c)), &Some(row(c)));
            let fields: Vec<String> =
                diff.split("<tr><th>").skip(2).map(|r| between(r, "", "</th>").to_string()).collect();
            let by_key: Vec<String> = title.iter().map(|t| t.split(' ').next().unwrap_or("").to_string()).collect();
            let keys: Vec<String> = fields
                .iter()
                .filter(|f| !["expected", "committed"].contains(&f.as_str()))
                .map(|f| Anomaly::ALL.iter().find(|a| a.field() == f).map_or(f.clone(), |a| a.key().to_string()))
                .collect();
            assert_eq!(keys, by_key, "serve's comparison lists the title's counts");
            title
        }
    }
}

/// How `r` says anomaly `a` at count `n`.
fn said(r: Renderer, a: Anomaly, n: u64) -> String {
    match r {
        Renderer::Reason => format!("{n} {}", a.key()),
        Renderer::Words if a.shown(r) == Show::Named => a.said().to_string(),
        Renderer::Words => format!("{} {n}", a.said()),
        Renderer::Table => format!("{}={n}", a.key()),
        Renderer::Report => {
            let mark = if n > 0 && a.severity().is_anomaly() { "!" } else { "" };
            format!("{mark}{}={n}", a.key())
        }
        Renderer::Cells => format!("{}={n}", a.short()),
        Renderer::Compare => format!("{} {n}", a.key()),
    }
}

#[test]
fn every_renderer_shows_each_anomaly_as_the_table_declares_and_nothing_else() {
    for r in Renderer::ALL {
        // With every anomaly at 0: exactly the anomalies shown always, in the renderer's order.
        let zero = shown(r, Counts { expected: 100, committed: 100, ..Counts::default() });
        let always: Vec<String> =
            Anomaly::ALL.iter().filter(|a| a.shown(r) == Show::Always).map(|a| said(r, *a, 0)).collect();
        let listed: Vec<&String> = zero.iter().filter(|s| Anomaly::ALL.iter().any(|a| **s == said(r, *a, 0))).collect();
        assert_eq!(listed.len(), always.len(), "{r:?}: {zero:?}");
        for s in &always {
            assert!(zero.contains(s), "{r:?} shows {s:?} always: {zero:?}");
        }
        for &a in Anomaly::ALL {
            let seen = shown(r, counts(a, 7));
            let want = said(r, a, 7);
            assert_eq!(
                seen.contains(&want),
                a.shown(r).shows(7),
                "{r:?} and {a:?} (declared {:?}): {seen:?}",
                a.shown(r)
            );
            // No other anomaly appears at 7 where only `a` is 7.
            for &b in Anomaly::ALL.iter().filter(|b| **b != a) {
                assert!(!seen.contains(&said(r, b, 7)), "{r:?} shows {b:?} for {a:?}: {seen:?}");
            }
        }
    }
}

#[test]
fn every_anomaly_is_shown_somewhere_and_evidence_is_never_marked() {
    for &a in Anomaly::ALL {
        assert!(Renderer::ALL.iter().any(|r| a.shown(*r) != Show::Never), "{a:?} is shown nowhere");
        if a.severity() == Severity::Evidence {
            let page = report_page(counts(a, 7));
            assert!(!page.contains(&format!("class=\"anomaly\">{}<", a.key())), "{a:?} marked as an anomaly");
        }
    }
}
