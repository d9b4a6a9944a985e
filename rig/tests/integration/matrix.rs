//! `sinkhole matrix`: the pure parts on synthetic summaries (cell order,
//! inputs, validation, table, exit code, JSON, JUnit, HTML), then one live
//! matrix over a tiny scenario with two seeds on a real Kafka 4.4.0.
use crate::common;

use std::path::{Path, PathBuf};
use std::time::Instant;

use sinkhole_checker::verdict::{Cause, Outcome};
use sinkhole_checker::Counts;
use sinkhole_model::SinkMode;
use sinkhole_rig::matrix::{
    self, expand_cells, expand_inputs, prepare, render_html, render_junit, render_table, Campaign, CellResult,
    CellStatus, Matrix, MatrixArgs, Seeds,
};
use sinkhole_rig::results::summary::ModeSummary;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn library(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios").join(name)
}

fn mode(m: SinkMode, outcome: Outcome, lost: u64, dup: u64, reason: &str) -> ModeSummary {
    ModeSummary {
        mode: m,
        outcome,
        words: String::new(),
        // Inconclusive in these samples: the broker could not run the mode.
        inconclusive_cause: (outcome == Outcome::Inconclusive).then_some(Cause::BrokerCannotRun),
        expected_met: match outcome {
            Outcome::Pass => Some(true),
            Outcome::Fail => Some(false),
            _ => None,
        },
        expected: "clean".into(),
        reason: reason.into(),
        counts: Counts { expected: 6000, committed: 6000 - lost, lost, duplicated: dup, ..Counts::default() },
        verdict: None,
        wall_ms: 2500,
        checked: outcome != Outcome::Inconclusive,
    }
}

fn cell(scenario: &str, kafka: &str, seed: u64, modes: Vec<ModeSummary>) -> CellResult {
    CellResult {
        index: 0,
        scenario: scenario.into(),
        file: format!("scenarios/{scenario}.yaml").into(),
        kafka: kafka.into(),
        seed,
        status: CellStatus::Done,
        modes_planned: modes.iter().map(|m| m.mode).collect(),
        run_id: Some(format!("{scenario}-20261129T220000-{seed}")),
        dir: Some(PathBuf::from(format!("/r/{scenario}-20261129T220000-{seed}"))),
        modes,
        error: None,
        wall_ms: 30_000,
        cluster_reused_from: None,
        cluster_fresh_because: None,
    }
}

fn matrix(cells: Vec<CellResult>) -> Matrix {
    let mut m = Matrix {
        complete: true,
        seeds: vec![1, 2],
        cells,
        wall_ms: 125_000,
        ..Matrix::new(
            "matrix-20261129T220000".into(),
            "/r/matrix-20261129T220000".into(),
            "2026-11-29T22:00:00Z".into(),
        )
    };
    m.refresh();
    m
}

/// Two scenarios, two versions; a failure, an inconclusive, an observed and a
/// rig error among them.
fn sample() -> Matrix {
    use Outcome::*;
    use SinkMode::*;
    matrix(vec![
        cell(
            "flip319",
            "4.4.0",
            1,
            vec![
                mode(Legacy, Fail, 4019, 0, "expected clean, got 4019 lost"),
                mode(TwopcInject, Pass, 0, 0, "clean as expected"),
                mode(Kip939, Inconclusive, 0, 0, "the broker cannot run this mode: UNSUPPORTED_VERSION (35)"),
            ],
        ),
        cell(
            "kill-restore",
            "4.4.0",
            1,
            vec![mode(Legacy, Pass, 0, 0, "clean as expected"), mode(AtLeastOnce, Observed, 0, 12, "no expectation")],
        ),
        CellResult {
            status: CellStatus::Error,
            modes: vec![],
            modes_planned: vec![Legacy, AtLeastOnce],
            error: Some("starting the cluster: broker 1 exited".into()),
            ..cell("kill-restore", "4.0.2", 1, vec![])
        },
    ])
}

#[test]
fn cells_are_scenario_major_then_version_then_seed() {
    let a = sinkhole_scenario::load(&data("matrix-tiny.yaml")).unwrap();
    let mut b = a.clone();
    b.name = "other".into();
    b.cluster.kafka = "4.0.2".into();
    let list = vec![(PathBuf::from("a.yaml"), a), (PathBuf::from("b.yaml"), b)];
    let got: Vec<(String, String, u64)> = expand_cells(&list, &["4.4.0".into(), "4.1.0".into()], &[7, 8])
        .into_iter()
        .map(|c| (c.scenario, c.kafka, c.seed))
        .collect();
    let want: Vec<(String, String, u64)> = [
        ("matrix-tiny", "4.4.0", 7),
        ("matrix-tiny", "4.4.0", 8),
        ("matrix-tiny", "4.1.0", 7),
        ("matrix-tiny", "4.1.0", 8),
        ("other", "4.4.0", 7),
        ("other", "4.4.0", 8),
        ("other", "4.1.0", 7),
        ("other", "4.1.0", 8),
    ]
    .iter()
    .map(|(s, k, n)| (s.to_string(), k.to_string(), *n))
    .collect();
    assert_eq!(got, want);
    // No --kafka: each scenario on its own version.
    let own: Vec<String> = expand_cells(&list, &[], &[1]).into_iter().map(|c| c.kafka).collect();
    assert_eq!(own, vec!["4.4.0", "4.0.2"]);
}

#[test]
fn directories_expand_sorted_minus_their_exclude_list() {
    let d = std::env::temp_dir().join(format!("sinkhole-matrix-inputs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    for f in ["b.yaml", "a.yml", "bench.yaml", "notes.txt"] {
        std::fs::write(d.join(f), "x").unwrap();
    }
    std::fs::write(d.join(matrix::EXCLUDE_FILE), "bench.yaml # a benchmark\n").unwrap();
    let (files, problems) = expand_inputs(&[d.clone(), d.join("b.yaml"), d.join("bench.yaml"), "no/such".into()]);
    assert_eq!(files, vec![d.join("a.yml"), d.join("b.yaml"), d.join("bench.yaml")]);
    assert_eq!(problems, vec!["no/such: no such file or directory".to_string()]);
    let _ = std::fs::remove_dir_all(&d);

    // The library's own exclude list leaves the benchmark out.
    let (files, problems) = expand_inputs(&[library("")]);
    assert!(problems.is_empty(), "{problems:?}");
    assert!(files.iter().any(|f| f.ends_with("kill-restore.yaml")), "{files:?}");
    assert!(!files.iter().any(|f| f.ends_with("throughput.yaml")), "{files:?}");
}

#[test]
fn validation_reports_every_problem_of_every_file_at_once() {
    let d = std::env::temp_dir().join(format!("sinkhole-matrix-bad-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let good = std::fs::read_to_string(data("matrix-tiny.yaml")).unwrap();
    std::fs::write(d.join("one.yaml"), good.replace("parallelism: 2", "parallelism: 0")).unwrap();
    std::fs::write(d.join("two.yaml"), good.replace("brokers: 1", "brokers: 1, racks: 2")).unwrap();
    let args = MatrixArgs {
        campaign: Campaign {
            inputs: vec![d.join("one.yaml"), d.join("two.yaml"), data("matrix-tiny.yaml"), "missing.yaml".into()],
            kafka: vec!["4.4.0".into(), "four".into()],
            ..Campaign::default()
        },
        modes: vec!["legacy".into(), "flink".into()],
        ..MatrixArgs::default()
    };
    let problems = prepare(&args, 1).unwrap_err();
    let all = problems.join("\n");
    assert!(all.contains("missing.yaml: no such file or directory"), "{all}");
    assert!(all.contains("--modes flink: unknown mode"), "{all}");
    assert!(all.contains("--kafka"), "{all}");
    assert!(all.contains("one.yaml:") && all.contains("job.parallelism"), "{all}");
    assert!(all.contains("two.yaml:") && all.contains("racks"), "{all}");
    let _ = std::fs::remove_dir_all(&d);

    // Valid input: the cells, each with the modes `sinkhole run` would run.
    let args = MatrixArgs {
        campaign: Campaign {
            inputs: vec![data("matrix-tiny.yaml"), library("flip319-short-outage.yaml")],
            kafka: vec!["4.4.0".into()],
            seeds: Seeds::Count { n: 2, base: Some(5) },
            ..Campaign::default()
        },
        modes: vec![],
        ..MatrixArgs::default()
    };
    let p = prepare(&args, 1).unwrap();
    assert_eq!(p.seeds, vec![5, 6]);
    assert_eq!(p.cells.len(), 4);
    assert_eq!(p.cells[0].1, vec![SinkMode::Legacy, SinkMode::AtLeastOnce]);
    assert_eq!(p.cells[2].1, vec![SinkMode::Legacy, SinkMode::TwopcInject, SinkMode::Kip939]);
    let args = MatrixArgs { modes: vec!["legacy".into()], ..args };
    assert!(prepare(&args, 1).unwrap().cells.iter().all(|c| c.1 == vec![SinkMode::Legacy]));
}

#[test]
fn terminal_table_rows_scenarios_columns_modes() {
    let m = sample();
    let t = render_table(&m);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(
        lines[..5],
        [
            "scenario            | legacy                     | twopc-inject     | kip939                                    | at-least-once",
            "--------------------|----------------------------|------------------|-------------------------------------------|-------------------------------",
            "flip319 @4.4.0      | LOST 4019 — expected clean | clean (expected) | inconclusive — broker cannot run the mode | -",
            "kill-restore @4.4.0 | clean (expected)           | -                | -                                         | DUPLICATED 12 (no expectation)",
            "kill-restore @4.0.2 | rig error                  | -                | -                                         | rig error",
        ]
    );
    assert_eq!(lines[5], "flip319 @4.4.0 legacy: LOST 4019 — expected clean — expected clean, got 4019 lost");
    assert!(
        t.contains(
            "flip319 @4.4.0 kip939: inconclusive — broker cannot run the mode — the broker cannot run this mode"
        ),
        "{t}"
    );
    assert!(t.contains("kill-restore @4.0.2: error — starting the cluster: broker 1 exited"), "{t}");
    assert!(
        t.contains("3 cells (2 done, 1 rig errors, 0 not run), 5 mode verdicts: 2 as expected, 1 NOT as expected, 1 inconclusive, 1 observed; wall time 2m05s (1 inconclusive"),
        "{t}"
    );
    assert!(!t.contains("pass"), "no word of comfort beside the lost records: {t}");

    // Several seeds of one scenario and version: the rows name the seed.
    let two = matrix(vec![
        cell("s", "4.4.0", 1, vec![mode(SinkMode::Legacy, Outcome::Pass, 0, 0, "ok")]),
        cell("s", "4.4.0", 2, vec![mode(SinkMode::Legacy, Outcome::Pass, 0, 0, "ok")]),
    ]);
    let t = render_table(&two);
    assert!(
        t.contains("s @4.4.0 seed 1 | clean (expected)") && t.contains("s @4.4.0 seed 2 | clean (expected)"),
        "{t}"
    );
}

#[test]
fn exit_code_fails_on_fail_or_rig_error_not_on_inconclusive() {
    use Outcome::*;
    let ok = matrix(vec![cell(
        "s",
        "4.4.0",
        1,
        vec![
            mode(SinkMode::Legacy, Pass, 0, 0, ""),
            mode(SinkMode::Kip939, Inconclusive, 0, 0, ""),
            mode(SinkMode::AtLeastOnce, Observed, 0, 3, ""),
        ],
    )]);
    assert_eq!(ok.exit_code, 0);
    assert_eq!(matrix::exit_code(&ok.cells), 0);
    let failed = matrix(vec![cell("s", "4.4.0", 1, vec![mode(SinkMode::Legacy, Fail, 1, 0, "")])]);
    assert_eq!(failed.exit_code, 1);
    let mut err = ok.clone();
    err.cells[0].status = CellStatus::Error;
    err.refresh();
    // The rig failing is exit 3 (it was 1 before exit codes told it apart from a failed expectation).
    assert_eq!(err.exit_code, 3);
    // A finding beats a rig failure.
    let mut both = failed.clone();
    both.cells.push(err.cells[0].clone());
    both.refresh();
    assert_eq!(both.exit_code, 1);
    // --fail-on-inconclusive: the inconclusive kip939 fails the matrix.
    let mut strict = ok.clone();
    strict.fail_on_inconclusive = true;
    strict.refresh();
    assert_eq!(strict.exit_code, 1);
    // Cells not run are neither failures nor passes.
    let mut skipped = ok;
    skipped.cells.push(CellResult { status: CellStatus::Skipped, modes: vec![], ..skipped.cells[0].clone() });
    skipped.refresh();
    assert_eq!((skipped.exit_code, skipped.totals.cells_not_run), (0, 1));
}

#[test]
fn json_names_every_cell_and_mode() {
    let m = sample();
    let v: serde_json::Value = serde_json::to_value(&m).unwrap();
    assert_eq!(v["cells"].as_array().unwrap().len(), 3);
    let c0 = &v["cells"][0];
    assert_eq!(c0["scenario"], "flip319");
    assert_eq!(c0["kafka"], "4.4.0");
    assert_eq!(c0["seed"], 1);
    assert_eq!(c0["status"], "done");
    assert_eq!(c0["run_id"], "flip319-20261129T220000-1");
    assert_eq!(c0["modes"][0]["mode"], "legacy");
    assert_eq!(c0["modes"][0]["outcome"], "fail");
    assert_eq!(c0["modes"][0]["words"], "LOST 4019 — expected clean");
    assert_eq!(c0["modes"][2]["inconclusive_cause"], "broker-cannot-run");
    assert_eq!(c0["modes"][0]["expected"], "clean");
    assert_eq!(c0["modes"][0]["expected_met"], false);
    assert_eq!(c0["modes"][0]["counts"]["lost"], 4019);
    assert_eq!(c0["modes"][0]["wall_ms"], 2500);
    assert_eq!(v["cells"][2]["status"], "error");
    assert_eq!(v["totals"]["fail"], 1);
    assert_eq!(v["totals"]["inconclusive"], 1);
    assert_eq!(v["totals"]["cells_error"], 1);
    assert_eq!(v["wall_ms"], 125_000);
    assert_eq!(v["exit_code"], 1);
    let back: Matrix = serde_json::from_value(v).unwrap();
    assert_eq!(back.cells.len(), 3);
    assert_eq!(back.totals, m.totals);
}

#[test]
fn junit_one_case_per_scenario_version_seed_mode() {
    let x = render_junit(&sample());
    assert!(
        x.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"sinkhole matrix-20261129T220000\" tests=\"7\" failures=\"1\" errors=\"2\" skipped=\"1\""
        ),
        "{x}"
    );
    assert_eq!(x.matches("<testcase ").count(), 7);
    assert_eq!(x.matches("<testcase ").count(), x.matches("</testcase>").count());
    assert_eq!(x.matches("<testsuite ").count(), 3);
    assert!(x.contains(r#"<testcase classname="flip319" name="legacy @ kafka 4.4.0 seed 1" time="2.500">"#), "{x}");
    assert!(
        x.contains(r#"<failure message="LOST 4019 — expected clean — expected clean, got 4019 lost" type="expectation-not-met">"#),
        "{x}"
    );
    assert!(
        x.contains(r#"<skipped message="inconclusive — broker cannot run the mode — the broker cannot run this mode: UNSUPPORTED_VERSION (35)"/>"#),
        "{x}"
    );
    assert!(x.contains(r#"<error message="starting the cluster: broker 1 exited" type="rig"/>"#), "{x}");
    assert!(x.contains(r#"<property name="run_id" value="kill-restore-20261129T220000-1"/>"#), "{x}");
    assert!(x.ends_with("</testsuites>\n"));
}

#[test]
fn html_escapes_links_runs_and_colours_outcomes() {
    let mut m = sample();
    m.cells[0].scenario = "<script>alert(1)</script>".into();
    m.cells[0].modes[0].reason = "lost \"4019\" & more <b>".into();
    let h = render_html(&m);
    assert!(h.starts_with("<!DOCTYPE html>") && h.ends_with("</body></html>\n"));
    assert!(!h.contains("<script>"), "unescaped markup");
    assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(h.contains("lost &quot;4019&quot; &amp; more &lt;b&gt;"));
    assert!(!h.contains("<link") && !h.contains("src=\"http"), "not self-contained");
    // One table per Kafka version.
    assert!(h.contains("<h2>Kafka 4.4.0</h2>") && h.contains("<h2>Kafka 4.0.2</h2>"));
    // Cells link to their run's report, relative to the matrix directory.
    assert!(h.contains(r#"<a href="../flip319-20261129T220000-1/report.html">"#), "{h}");
    // Each cell in words, coloured by the outcome; the words and the reason on hover.
    assert!(h.contains("class=\"o fail\" title=\"LOST 4019 — expected clean\nexpected: clean\n"), "{h}");
    assert!(h.contains(">LOST 4019 — expected clean</a></td>"), "{h}");
    assert!(h.contains(r#"class="o pass""#) && h.contains(">clean (expected)</a></td>"));
    assert!(h.contains(r#"class="o inconclusive""#) && h.contains(">inconclusive — broker cannot run the mode</a>"));
    assert!(h.contains(r#"class="o observed""#) && h.contains(">DUPLICATED 12 (no expectation)</a>"));
    assert!(h.contains(r#"class="o error""#) && h.contains(">rig error</td>"));
    assert!(h.contains("5 mode verdicts: 2 as expected, 1 NOT as expected, 1 inconclusive, 1 observed, 1 rig errors"));
    // Counts and the reason on hover.
    assert!(h.contains("1981 of 6000 committed; lost 4019, duplicated 0"), "{h}");
}

/// Three seeds of one scenario, twopc-inject failing on the second: a
/// stable group and a flaky one.
fn three_seeds() -> Matrix {
    use Outcome::*;
    use SinkMode::*;
    let mut m = matrix(
        (1..=3)
            .map(|seed| {
                let twopc = if seed == 2 { Fail } else { Pass };
                cell(
                    "share-delivery-limit",
                    "4.4.0",
                    seed,
                    vec![
                        mode(Legacy, Pass, 0, 0, "clean"),
                        mode(TwopcInject, twopc, 2 * u64::from(twopc == Fail), 0, "x"),
                    ],
                )
            })
            .collect(),
    );
    m.seeds = vec![1, 2, 3];
    for (i, c) in m.cells.iter_mut().enumerate() {
        c.index = i;
    }
    m.refresh();
    m
}

#[test]
fn stability_in_the_table_the_page_and_one_line() {
    let m = three_seeds();
    let line = "stable 1 of 2 cells over 3 seeds; flaky: share-delivery-limit/twopc-inject@4.4.0 (2 as expected, 1 NOT as expected)";
    assert_eq!(matrix::stability::summary_line(&m), line);
    // The table: after the cells, one row per scenario @kafka, then the line.
    let t = render_table(&m);
    let tail: Vec<&str> = t.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
    assert_eq!(
        tail,
        [
            "",
            "stability over 3 seeds      | legacy              | twopc-inject",
            "----------------------------|---------------------|----------------------------------------",
            "share-delivery-limit @4.4.0 | stable: as expected | FLAKY: 2 as expected, 1 NOT as expected",
            line,
        ],
        "{t}"
    );
    // The page: the line, the flaky group outlined, each seed linking to its run.
    let h = render_html(&m);
    assert!(h.contains("<h2>Stability over seeds</h2>"), "{h}");
    assert!(h.contains(&format!("<p class=\"stability flaky\">{line}</p>")), "{h}");
    assert!(
        h.contains(
            r#"<td class="st st-flaky" title="share-delivery-limit/twopc-inject@4.4.0"><b>flaky: 2 as expected, 1 NOT as expected</b>"#
        ),
        "{h}"
    );
    assert!(
        h.contains(r#"<td class="st st-stable" title="share-delivery-limit/legacy@4.4.0"><b>stable: as expected</b>"#),
        "{h}"
    );
    assert!(
        h.contains(r#"<span class="sd fail" title="seed 2: LOST 2 — expected clean"><a href="../share-delivery-limit-20261129T220000-2/report.html">2: LOST 2 — expected clean</a></span>"#),
        "{h}"
    );
    // A seed whose cell did not run: no link, said so.
    let mut partial = m.clone();
    partial.cells[2] =
        CellResult { status: CellStatus::Skipped, modes: vec![], run_id: None, dir: None, ..m.cells[2].clone() };
    partial.refresh();
    let h = render_html(&partial);
    assert!(h.contains(r#"<span class="sd not-run" title="seed 3: not run">3: not run</span>"#), "{h}");
    assert!(render_table(&partial).contains("| FLAKY: 1 as expected, 1 NOT as expected, 1 not run"));

    // One seed: no stability table, the line says it was not measured.
    let one = sample();
    let t = render_table(&one);
    assert!(!t.contains("stability over"), "{t}");
    // (its cell on 4.0.2 did not start: no verdict for that one seed)
    assert!(
        t.ends_with("stability not measured: 7 cells over 1 seed each (one seed cannot disagree with itself; --seed-count N runs N); incomplete: kill-restore/legacy@4.0.2 (1 rig error), kill-restore/at-least-once@4.0.2 (1 rig error)\n"),
        "{t}"
    );
    assert!(!render_html(&one).contains("<table class=\"stability\">"));
}

/// `sinkhole merge` of a campaign whose seeds disagree across the shards:
/// the merged stability names the flaky group; `--fail-on-flaky` makes it
/// exit 1, which it does not without the flag (pass against observed is no
/// failure).
#[test]
fn merge_measures_stability_over_every_shards_seeds() {
    use sinkhole_rig::matrix::merge;
    let base = common::test_dir("merge-stability");
    let mut full = three_seeds();
    for c in &mut full.cells {
        if c.seed == 2 {
            c.modes[1] = mode(SinkMode::TwopcInject, Outcome::Observed, 0, 0, "no expectation");
        }
    }
    full.refresh();
    assert_eq!(full.exit_code, 0);
    let dirs: Vec<PathBuf> = (1..=2)
        .map(|i| {
            let d = base.join(format!("shard-{i}"));
            matrix::write_all(&shard_of(&full, i, 2, &d)).unwrap();
            d
        })
        .collect();
    let m = merge::merge_into(&dirs, &base.join("merged"), merge::MergePolicy::default()).unwrap();
    assert_eq!(m.stability, full.stability);
    let on_disk: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(base.join("merged/matrix.json")).unwrap()).unwrap();
    assert_eq!(on_disk["stability"]["totals"]["flaky"], 1);
    assert_eq!(on_disk["stability"]["groups"][1]["seeds"].as_array().unwrap().len(), 3);
    let line =
        "stable 1 of 2 cells over 3 seeds; flaky: share-delivery-limit/twopc-inject@4.4.0 (2 as expected, 1 observed)";
    let merge_cli = |extra: &[&str], out: &str| {
        std::process::Command::new(common::bin())
            .arg("merge")
            .args(extra)
            .arg("--out")
            .arg(base.join(out))
            .args(&dirs)
            .output()
            .unwrap()
    };
    let o = merge_cli(&[], "cli");
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains(&format!("{line}\n")),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let o = merge_cli(&["--fail-on-flaky"], "cli-strict");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("1 scenario × mode × version cell is flaky over the seeds (--fail-on-flaky)"), "{stderr}");
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn links_are_relative_and_url_safe() {
    assert_eq!(matrix::rel_link(Path::new("/r/matrix-1"), Path::new("/r/run-1/report.html")), "../run-1/report.html");
    assert_eq!(matrix::rel_link(Path::new("/a/b/m"), Path::new("/a/x y#/report.html")), "../../x%20y%23/report.html");
    assert_eq!(matrix::rel_link(Path::new("/r/m"), Path::new("/r/m/./../run/r.html")), "../run/r.html");
}

/// Two seeds of a tiny scenario (legacy + at-least-once, one worker kill) on
/// a real Kafka 4.4.0: every file names both cells, the outcomes are the
/// runs' own verdicts, the exit code follows them.
/// `sinkhole matrix tests/data/<file> --kafka 4.4.0 --seeds <seeds>`, its runs under `dir`, the matrix in `out`.
fn live_matrix(file: &str, seeds: &str, dir: &Path, out: &Path) -> std::process::Output {
    std::process::Command::new(common::bin())
        .arg("matrix")
        .arg(data(file))
        .args(["--kafka", "4.4.0", "--seeds", seeds, "--results"])
        .arg(dir)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn live_matrix_two_seeds() {
    let _g = common::serial();
    common::dist("4.4.0");
    let dir = common::test_dir("matrix");
    let out = dir.join("m");
    let t0 = Instant::now();
    let o = live_matrix("matrix-tiny.yaml", "11,12", &dir, &out);
    let took = t0.elapsed();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    eprintln!("{stdout}\n{stderr}\n(took {:.1} s)", took.as_secs_f64());

    let m: Matrix = serde_json::from_str(&std::fs::read_to_string(out.join("matrix.json")).unwrap()).unwrap();
    assert!(m.complete && !m.interrupted);
    assert_eq!(m.cells.len(), 2);
    assert_eq!(m.cells.iter().map(|c| c.seed).collect::<Vec<_>>(), vec![11, 12]);
    for c in &m.cells {
        assert_eq!(c.status, CellStatus::Done, "{c:?}");
        assert_eq!(c.modes.iter().map(|s| s.mode).collect::<Vec<_>>(), vec![SinkMode::Legacy, SinkMode::AtLeastOnce]);
        let run_dir = c.dir.as_ref().unwrap();
        assert!(run_dir.starts_with(&dir), "{run_dir:?}");
        // The outcome is the run's own verdict, not the matrix's invention.
        for s in &c.modes {
            let v: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(run_dir.join(s.mode.name()).join("verdict.json")).unwrap(),
            )
            .unwrap();
            assert_eq!(v["outcome"], s.outcome.name(), "{}", s.mode);
            assert!(s.checked && s.counts.expected == 6000, "{s:?}");
            assert_eq!(v["counts"]["committed"], s.counts.committed);
        }
        assert!(run_dir.join("report.html").exists());
    }
    let failed = m.cells.iter().any(|c| c.modes.iter().any(|s| s.outcome == Outcome::Fail));
    assert_eq!(o.status.code(), Some(if failed { 1 } else { 0 }), "{stderr}");
    assert_eq!(m.exit_code, u8::from(failed));

    let html = std::fs::read_to_string(out.join("matrix.html")).unwrap();
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    for c in &m.cells {
        let id = c.run_id.as_ref().unwrap();
        assert!(html.contains(&format!("../{id}/report.html")), "{html}");
        assert!(junit.contains(id.as_str()), "{junit}");
    }
    assert_eq!(junit.matches("<testcase ").count(), 4);
    for seed in [11, 12] {
        for mode in ["legacy", "at-least-once"] {
            assert!(junit.contains(&format!("name=\"{mode} @ kafka 4.4.0 seed {seed}\"")), "{junit}");
        }
    }
    // The table: one row per seed, the modes as columns, the wall time.
    assert!(stdout.contains("scenario") && stdout.contains("legacy") && stdout.contains("at-least-once"));
    assert!(stdout.contains("matrix-tiny @4.4.0 seed 11") && stdout.contains("matrix-tiny @4.4.0 seed 12"));
    assert!(stdout.contains("wall time"), "{stdout}");
    // Stability over the two seeds: in matrix.json, the table and one line.
    assert_eq!(m.stability.seeds, 2);
    assert_eq!(m.stability.groups.len(), 2);
    for g in &m.stability.groups {
        assert_eq!(g.seeds.iter().map(|s| s.seed).collect::<Vec<_>>(), [11, 12]);
        let outcomes: Vec<_> = m.cells.iter().map(|c| c.mode(g.mode).map(|s| s.outcome)).collect();
        assert_eq!(g.seeds.iter().map(|s| s.outcome).collect::<Vec<_>>(), outcomes);
    }
    let line = matrix::stability::summary_line(&m);
    assert!(line.starts_with(&format!("stable {} of 2 cells over 2 seeds", m.stability.totals.stable)), "{line}");
    assert!(stdout.contains("stability over 2 seeds") && stdout.contains(&format!("{line}\n")), "{stdout}");
    assert!(html.contains("<h2>Stability over seeds</h2>"), "{html}");
    // Without a terminal: plain progress lines.
    assert!(stderr.contains("matrix: [1/2] matrix-tiny @4.4.0 seed 11: starting"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A finished cell where the rig failed one mode: `error` is its own outcome
/// in the totals, the table, the page and junit.xml (`<error>`), and exit 3.
#[test]
fn a_mode_the_rig_failed_is_an_error_everywhere() {
    let mut m = matrix(vec![cell(
        "s",
        "4.4.0",
        1,
        vec![
            mode(SinkMode::Legacy, Outcome::Pass, 0, 0, "clean as expected"),
            ModeSummary {
                wall_ms: 0,
                ..sinkhole_rig::results::summary::rig_failed(
                    SinkMode::Kip939,
                    "clean".into(),
                    "checking mode kip939: drain failed",
                )
            },
        ],
    )]);
    m.refresh();
    assert_eq!((m.totals.error, m.totals.fail, m.exit_code), (1, 0, 3));
    assert!(m.cells[0].rig_failed() && m.cells[0].failed());
    let t = render_table(&m);
    assert!(t.contains("s @4.4.0 | clean (expected) | rig error"), "{t}");
    assert!(t.contains("1 as expected, 0 NOT as expected, 0 inconclusive, 0 observed, 1 rig error;"), "{t}");
    let x = render_junit(&m);
    assert!(
        x.contains(r#"errors="1""#)
            && x.contains(
                r#"<error message="rig error — the rig failed: checking mode kip939: drain failed" type="rig"/>"#
            ),
        "{x}"
    );
    assert!(render_html(&m).contains(r#"class="o error""#));
}

/// One shard's matrix as `sinkhole matrix --shard I/N` writes it.
fn shard_of(full: &Matrix, index: u32, count: u32, dir: &Path) -> Matrix {
    let mut m = full.clone();
    m.dir = dir.to_path_buf();
    m.matrix_id = format!("matrix-20261129T220000-shard-{index}-of-{count}");
    m.shard = Some(matrix::ShardInfo { index, count, cells_total: full.cells.len() });
    let sh = matrix::Shard { index, count };
    m.cells.retain(|c| sh.takes(c.index));
    m.wall_ms = 1000 * u64::from(index);
    m.refresh();
    m
}

fn sample_indexed() -> Matrix {
    let mut m = sample();
    for (i, c) in m.cells.iter_mut().enumerate() {
        c.index = i;
    }
    m.library = vec![matrix::LibraryEntry {
        scenario: "flip319".into(),
        file: "scenarios/flip319.yaml".into(),
        digest: matrix::shard::digest(b"flip319"),
    }];
    m
}

fn without_run(m: &Matrix) -> Vec<serde_json::Value> {
    m.cells
        .iter()
        .map(|c| {
            let modes: Vec<_> =
                c.modes.iter().map(|s| serde_json::json!([s.mode, s.outcome, s.counts, s.reason])).collect();
            serde_json::json!([c.index, c.scenario, c.kafka, c.seed, c.status, c.modes_planned, modes])
        })
        .collect()
}

#[test]
fn shards_merge_into_the_whole_and_refuse_what_does_not_fit() {
    use sinkhole_rig::matrix::merge;
    let base = common::test_dir("merge-synthetic");
    let full = sample_indexed();
    let write = |name: &str, m: &Matrix| {
        let d = base.join(name);
        let mut m = m.clone();
        m.dir = d.clone();
        matrix::write_all(&m).unwrap();
        d
    };
    let one = write("one", &shard_of(&full, 1, 2, &base.join("one")));
    let two = write("two", &shard_of(&full, 2, 2, &base.join("two")));
    assert_eq!(shard_of(&full, 1, 2, &one).cells.iter().map(|c| c.index).collect::<Vec<_>>(), vec![0, 2]);

    // Merged: every cell in the unsharded order, the same totals and exit code.
    let out = base.join("merged");
    let m = merge::merge_into(&[two.clone(), one.clone()], &out, merge::MergePolicy::default()).unwrap();
    assert_eq!(without_run(&m), without_run(&full));
    assert_eq!((m.totals, m.exit_code), (full.totals, full.exit_code));
    assert_eq!(m.wall_ms, 3000, "the sum of the shards' wall times");
    assert_eq!(m.merged_from.iter().map(|s| s.shard.as_str()).collect::<Vec<_>>(), ["1/2", "2/2"]);
    assert!(m.shard.is_none() && m.complete);
    let on_disk: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("matrix.json")).unwrap()).unwrap();
    assert_eq!(on_disk["git_commit"], sinkhole_base::provenance::GIT_COMMIT);
    assert_eq!(std::fs::read_to_string(out.join("junit.xml")).unwrap(), render_junit(&m));
    assert!(std::fs::read_to_string(out.join("matrix.html")).unwrap().contains("merged from 2 shards"));

    let refused = |dirs: &[PathBuf]| match merge::merge_into(dirs, &base.join("never"), merge::MergePolicy::default()) {
        Err(Ok(problems)) => problems.join("\n"),
        Err(Err(e)) => panic!("a failure, not bad input: {e:#}"),
        Ok(_) => panic!("merged {dirs:?}"),
    };
    let all = refused(std::slice::from_ref(&one));
    assert!(all.contains("shard 2/2 is missing"), "{all}");
    let all = refused(&[one.clone(), one.clone()]);
    assert!(all.contains("shard 1/2 is given twice") && all.contains("shard 2/2 is missing"), "{all}");
    // Each way a shard can belong to another campaign, named.
    let variant = |name: &str, f: &dyn Fn(&mut Matrix)| {
        let mut m = shard_of(&full, 2, 2, &base.join(name));
        f(&mut m);
        write(name, &m)
    };
    let cases: Vec<(PathBuf, &str)> = vec![
        (variant("seeds", &|m| m.seeds = vec![1, 3]), "different seeds"),
        (variant("kafka", &|m| m.kafka = vec!["4.0.2".into()]), "different versions"),
        (variant("modes", &|m| m.modes = vec!["legacy".into()]), "different modes"),
        (variant("library", &|m| m.library[0].digest = matrix::shard::digest(b"edited")), "ran another library"),
        (variant("count", &|m| m.shard.as_mut().unwrap().count = 3), "different shard counts"),
        (variant("cells", &|m| m.cells[0].index = 2), "is not shard 2/2's"),
        (variant("policy", &|m| m.fail_on_inconclusive = true), "--fail-on-inconclusive"),
    ];
    for (dir, want) in cases {
        let all = refused(&[one.clone(), dir.clone()]);
        assert!(all.contains(want), "{}: {all}", dir.display());
    }
    // Another rig (its commit, as matrix.json says it).
    let other_rig = write("rig", &shard_of(&full, 2, 2, &base.join("rig")));
    let p = other_rig.join("matrix.json");
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(
        &p,
        text.replacen(sinkhole_base::provenance::GIT_COMMIT, "0000000000000000000000000000000000000000", 1),
    )
    .unwrap();
    let all = refused(&[one.clone(), other_rig]);
    assert!(all.contains("different rig versions") && all.contains("0000000000"), "{all}");
    // Not a shard; not a matrix at all.
    let whole = write("whole", &full);
    assert!(refused(&[whole]).contains("not a shard"));
    assert!(refused(&[base.join("nothing")]).contains("not a matrix directory"));

    // Through the binary: exit 2 naming the difference; a good merge exits
    // with the merged verdicts (the sample has a failure: 1).
    let o = std::process::Command::new(common::bin()).arg("merge").arg(&one).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("shard 2/2 is missing"));
    let o = std::process::Command::new(common::bin())
        .args(["merge", "--out"])
        .arg(base.join("merged-cli"))
        .arg(&one)
        .arg(&two)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(i32::from(full.exit_code)), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("flip319 @4.4.0"));
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn shards_take_every_cell_once_whatever_the_count() {
    let inputs = vec![data("matrix-tiny.yaml"), data("shard-tiny.yaml"), library("flip319-short-outage.yaml")];
    let args = MatrixArgs {
        campaign: Campaign {
            inputs,
            kafka: vec!["4.4.0".into(), "4.0.2".into()],
            seeds: Seeds::List(vec![1, 2]),
            ..Campaign::default()
        },
        ..MatrixArgs::default()
    };
    let whole = prepare(&args, 0).unwrap();
    assert_eq!((whole.cells.len(), whole.cells_total), (12, 12));
    assert_eq!(
        whole.library.iter().map(|l| l.scenario.as_str()).collect::<Vec<_>>(),
        ["matrix-tiny", "shard-tiny", "flip319-short-outage"]
    );
    for n in 1..=5u32 {
        let mut seen: Vec<(usize, matrix::CellKey)> = Vec::new();
        for i in 1..=n {
            let p =
                prepare(&MatrixArgs { shard: Some(matrix::Shard { index: i, count: n }), ..args.clone() }, 0).unwrap();
            assert_eq!(p.cells_total, 12);
            assert_eq!(p.library, whole.library, "every shard records the whole library");
            seen.extend(p.indexes.iter().copied().zip(p.cells.iter().map(|c| c.0.clone())));
        }
        seen.sort_by_key(|(i, _)| *i);
        let want: Vec<(usize, matrix::CellKey)> = whole.cells.iter().map(|c| c.0.clone()).enumerate().collect();
        assert_eq!(seen, want, "{n} shards");
    }
    // Shards need the seeds named: a random one would differ per shard.
    let random = MatrixArgs {
        campaign: Campaign { seeds: Seeds::default(), ..args.campaign.clone() },
        shard: Some(matrix::Shard { index: 1, count: 2 }),
        ..args
    };
    assert!(prepare(&random, 0).unwrap_err().join("\n").contains("name the seeds"));
}

/// Three seeds of a tiny fault-free scenario (its counts do not depend on
/// timing) on a real Kafka 4.4.0: the unsharded matrix, then shards 1/2 and
/// 2/2 one after the other, merged: the same cells in the same order with
/// the same outcomes and counts, the same totals and exit code.
#[test]
fn live_shards_merged_equal_the_unsharded_matrix() {
    let _g = common::serial();
    common::dist("4.4.0");
    let dir = common::test_dir("shards");
    let matrix_of = |out: &Path, extra: &[&str]| {
        let o = std::process::Command::new(common::bin())
            .arg("matrix")
            .arg(data("shard-tiny.yaml"))
            .args(["--kafka", "4.4.0", "--seeds", "21,22,23", "--results"])
            .arg(dir.join("results"))
            .arg("--out")
            .arg(out)
            .args(extra)
            .output()
            .unwrap();
        eprintln!("{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        o
    };
    let t0 = Instant::now();
    let whole = matrix_of(&dir.join("whole"), &[]);
    let s1 = matrix_of(&dir.join("shard-1"), &["--shard", "1/2"]);
    let s2 = matrix_of(&dir.join("shard-2"), &["--shard", "2/2"]);
    let merged = std::process::Command::new(common::bin())
        .arg("merge")
        .arg(dir.join("shard-2"))
        .arg(dir.join("shard-1"))
        .arg("--out")
        .arg(dir.join("merged"))
        .output()
        .unwrap();
    eprintln!("(matrices took {:.1} s)", t0.elapsed().as_secs_f64());
    let read = |d: &str| -> Matrix {
        serde_json::from_str(&std::fs::read_to_string(dir.join(d).join("matrix.json")).unwrap()).unwrap()
    };
    let (w, a, b, m) = (read("whole"), read("shard-1"), read("shard-2"), read("merged"));
    assert_eq!(a.cells.iter().map(|c| c.seed).collect::<Vec<_>>(), vec![21, 23], "round robin: cells 0 and 2");
    assert_eq!(b.cells.iter().map(|c| c.seed).collect::<Vec<_>>(), vec![22]);
    assert!(w.cells.iter().all(|c| c.status == CellStatus::Done && c.modes[0].outcome == Outcome::Pass), "{w:?}");
    assert_eq!(without_run(&m), without_run(&w));
    assert_eq!(m.totals, w.totals);
    // A fault-free cell leaves the cluster healthy: the whole matrix's later
    // cells ran on the first cell's cluster, and matrix.json says so.
    let first = w.cells[0].run_id.clone();
    assert_eq!(w.cells[0].cluster_reused_from, None, "{:?}", w.cells[0]);
    for c in &w.cells[1..] {
        assert_eq!(c.cluster_reused_from, first, "{c:?}");
        assert_eq!(c.cluster_fresh_because, None, "{c:?}");
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(c.dir.as_ref().unwrap().join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(s["cluster_reused_from"], serde_json::json!(first), "{s}");
    }
    assert_eq!(m.exit_code, w.exit_code);
    for o in [&whole, &s1, &s2, &merged] {
        assert_eq!(o.status.code(), Some(i32::from(w.exit_code)), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // The merged page links every cell's report, which is where the shard left it.
    let html = std::fs::read_to_string(dir.join("merged").join("matrix.html")).unwrap();
    for c in &m.cells {
        assert!(c.dir.as_ref().unwrap().join("report.html").is_file());
        assert!(html.contains(&format!("../results/{}/report.html", c.run_id.as_ref().unwrap())), "{html}");
    }
    let junit = std::fs::read_to_string(dir.join("merged").join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase ").count(), 3);
    // Each shard saw some of the seeds; the merge sees the three, as the
    // whole did (the same outcomes, from other runs, whose counts and so
    // words may differ).
    let mut whole_stability = w.stability.clone();
    for (g, merged) in whole_stability.groups.iter_mut().zip(&m.stability.groups) {
        for (s, t) in g.seeds.iter_mut().zip(&merged.seeds) {
            s.run_id.clone_from(&t.run_id);
            s.words.clone_from(&t.words);
        }
    }
    assert_eq!(m.stability, whole_stability);
    assert_eq!(m.stability.totals.stable, 1);
    let line = "stable 1 of 1 cells over 3 seeds";
    for o in [&whole, &merged] {
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(&format!("{line}\n")),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
    let shard_line = "stable 1 of 1 cells over 2 seeds (shard 1/2: its own seeds of each cell";
    assert!(String::from_utf8_lossy(&s1.stdout).contains(shard_line), "{}", String::from_utf8_lossy(&s1.stdout));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run that leaves transactions open hands on a cluster without them. kip939's
/// killed attempt leaves Enable2Pc transactions open (the broker refuses the
/// restore, and such transactions never time out); before the tidy step the next
/// cell found them in its health check and started a fresh cluster.
#[test]
fn live_a_cell_that_left_2pc_transactions_open_hands_on_a_tidied_cluster() {
    let (_g, dir) = (common::serial(), common::test_dir("tidy"));
    common::dist("4.4.0");
    let out = dir.join("m");
    let o = live_matrix("tidy-kip939.yaml", "1,2", &dir, &out);
    let stderr = String::from_utf8_lossy(&o.stderr);
    eprintln!("{}\n{stderr}", String::from_utf8_lossy(&o.stdout));
    let m: Matrix = serde_json::from_str(&std::fs::read_to_string(out.join("matrix.json")).unwrap()).unwrap();
    assert_eq!(m.cells.len(), 2);
    for c in &m.cells {
        let k = &c.modes[0];
        // The premise of the test: the broker refused the restore, with the attempt's transactions open.
        assert_eq!(
            (k.outcome, k.words.as_str()),
            (Outcome::Inconclusive, "inconclusive — broker cannot run the mode"),
            "{c:?}"
        );
    }
    assert!(
        stderr.contains("aborted ") && stderr.contains(" transaction(s) the run left open (e.g. sinkhole-"),
        "{stderr}"
    );
    assert!(!stderr.contains(" not ended, e.g. "), "{stderr}");
    assert_eq!(m.cells[1].cluster_fresh_because, None, "{:?}", m.cells[1]);
    assert_eq!(m.cells[1].cluster_reused_from, m.cells[0].run_id, "{:?}", m.cells[1]);
    let _ = std::fs::remove_dir_all(&dir);
}
