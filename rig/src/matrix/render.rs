//! What a matrix looks like: the terminal table, `matrix.html` and
//! `junit.xml`. Pure functions of a [`Matrix`].
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use sinkhole_base::rundir::RunDir;
use sinkhole_model::SinkMode;

use super::{human_duration, CellResult, CellStatus, Matrix};
use crate::results::junit::{escape as xml, message as junit_message};
use crate::results::report::esc;
use crate::results::summary::ModeSummary;
use sinkhole_checker::verdict::words::{expectation_word, RIG_ERROR};
use sinkhole_checker::verdict::Outcome;
use sinkhole_checker::Counts;
use sinkhole_model::anomaly::{Anomaly, Renderer, Show};
use stability::STABILITY_CSS;
pub use stability::{stability_cell_text, stability_html, stability_text};

mod stability;

/// Every anomaly a matrix cell can show (the anomaly table's `cells` renderer) under its
/// short name, with its count, group by group: the order cells say them in, and the order
/// shrink and explore take a failure's kinds in.
pub fn anomaly_counts(c: &Counts) -> Vec<(&'static str, u64)> {
    Anomaly::by_group()
        .into_iter()
        .filter(|a| a.shown(Renderer::Cells) != Show::Never)
        .map(|a| (a.short(), c.get(a)))
        .collect()
}

/// The anomalies a cell shows, short: `lost=4019 dup=12`.
pub fn anomalies(c: &Counts) -> String {
    anomaly_counts(c).iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{k}={n}")).collect::<Vec<_>>().join(" ")
}

/// The counts a cell's title compares (the table's `compare` renderer), by key:
/// `lost 4019, duplicated 0, …`.
pub fn compared(c: &Counts) -> String {
    c.shown(Renderer::Compare).map(|(a, n)| format!("{a} {n}")).collect::<Vec<_>>().join(", ")
}

/// One cell of the terminal table: the verdict's words (`LOST 4019 —
/// expected clean`, `clean (expected)`, `inconclusive — premise unmet`,
/// `DUPLICATED 12 (no expectation)`, `rig error`); `-` for a mode the cell
/// does not run.
pub fn cell_text(m: Option<&ModeSummary>, status: CellStatus) -> String {
    let Some(m) = m else {
        return match status {
            CellStatus::Done => "-".to_string(),
            CellStatus::Error => RIG_ERROR.to_string(),
            CellStatus::Pending => "not run".to_string(),
            other => other.name().to_string(),
        };
    };
    m.words()
}

/// The totals in words: how many met their expectation, how many did not, …
/// (`pass` and `fail` stay the machine's names, in matrix.json).
pub fn totals_text(t: &super::Totals) -> String {
    let said = |o| expectation_word(o);
    format!(
        "{} mode verdicts: {} {}, {} {}, {} {}, {} {}",
        t.mode_runs,
        t.pass,
        said(Outcome::Pass),
        t.fail,
        said(Outcome::Fail),
        t.inconclusive,
        said(Outcome::Inconclusive),
        t.observed,
        said(Outcome::Observed)
    )
}

fn row_label(m: &Matrix, c: &CellResult) -> String {
    if m.several_seeds(&c.scenario, &c.kafka) {
        format!("{} @{} seed {}", c.scenario, c.kafka, c.seed)
    } else {
        format!("{} @{}", c.scenario, c.kafka)
    }
}

/// The table printed at the end: rows = scenario @kafka (seed when several),
/// columns = modes; then the reason of every cell that is not a plain pass,
/// the totals and the wall time.
pub fn render_table(m: &Matrix) -> String {
    let cols = m.columns();
    let mut head = vec!["scenario".to_string()];
    head.extend(cols.iter().map(|c| c.name().to_string()));
    let rows: Vec<Vec<String>> = m
        .cells
        .iter()
        .map(|c| {
            let mut r = vec![row_label(m, c)];
            for &mode in &cols {
                let planned = c.modes_planned.contains(&mode);
                r.push(if planned || c.mode(mode).is_some() { cell_text(c.mode(mode), c.status) } else { "-".into() });
            }
            r
        })
        .collect();
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (i, cell) in r.iter().enumerate() {
            w[i] = w[i].max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c}{}", " ".repeat(w[i] - c.chars().count())))
            .collect::<Vec<_>>()
            .join(" | ")
            .trim_end()
            .to_string()
    };
    let mut out = line(&head);
    out.push('\n');
    out.push_str(&w.iter().map(|n| "-".repeat(*n)).collect::<Vec<_>>().join("-|-"));
    out.push('\n');
    for r in &rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    for c in &m.cells {
        let label = row_label(m, c);
        match c.status {
            CellStatus::Done => {
                for s in c.modes.iter().filter(|s| s.outcome != Outcome::Pass) {
                    out.push_str(&format!(
                        "{label} {}: {} — {}\n",
                        s.mode.name(),
                        cell_text(Some(s), c.status),
                        s.reason
                    ));
                }
            }
            CellStatus::Pending => {}
            st => out.push_str(&format!("{label}: {} — {}\n", st.name(), c.error.as_deref().unwrap_or(""))),
        }
    }
    let t = &m.totals;
    let mut summary = format!(
        "{} cells ({} done, {} rig errors, {} not run), {}",
        t.cells,
        t.cells_done,
        t.cells_error,
        t.cells_not_run,
        totals_text(t)
    );
    if t.error > 0 {
        summary.push_str(&format!(", {} rig error", t.error));
    }
    summary.push_str(&format!("; wall time {}", human_duration(m.wall_ms)));
    if t.inconclusive > 0 {
        summary.push_str(&format!(" ({} inconclusive: neither met nor failed)", t.inconclusive));
    }
    out.push_str(&summary);
    out.push('\n');
    if let Some(line) = reuse_line(m) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&stability_text(m));
    out
}

/// How many cells ran on a cluster kept from the cell before, and why the
/// others that were offered one started fresh.
pub fn reuse_line(m: &Matrix) -> Option<String> {
    let reused = m.cells.iter().filter(|c| c.cluster_reused_from.is_some()).count();
    let fresh: Vec<String> = m
        .cells
        .iter()
        .filter_map(|c| c.cluster_fresh_because.as_ref().map(|why| format!("{}: {why}", c.scenario)))
        .collect();
    if reused == 0 && fresh.is_empty() {
        return None;
    }
    let mut line = format!("{reused} of {} cells reused the previous cell's cluster", m.cells.len());
    if !fresh.is_empty() {
        line.push_str(&format!("; a fresh one for {}", fresh.join("; ")));
    }
    Some(line)
}

/// A link from the matrix directory to `target` (relative when both are on
/// one tree, so the matrix and its runs can be copied together), with the
/// characters that would end or bend a URL percent-encoded.
pub fn rel_link(from_dir: &Path, target: &Path) -> String {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (from, to) = (normalize(&abs(from_dir)), normalize(&abs(target)));
    let fc: Vec<Component> = from.components().collect();
    let tc: Vec<Component> = to.components().collect();
    let common = fc.iter().zip(&tc).take_while(|(a, b)| a == b).count();
    let mut rel = PathBuf::new();
    for _ in common..fc.len() {
        rel.push("..");
    }
    for c in &tc[common..] {
        rel.push(c.as_os_str());
    }
    let mut out = String::new();
    for ch in rel.to_string_lossy().chars() {
        match ch {
            '%' => out.push_str("%25"),
            ' ' => out.push_str("%20"),
            '#' => out.push_str("%23"),
            '?' => out.push_str("%3F"),
            '"' => out.push_str("%22"),
            c => out.push(c),
        }
    }
    out
}

/// Drops `.` and folds `x/..` without touching the file system.
pub(super) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c.as_os_str()),
        }
    }
    out
}

/// The look the campaign pages share (`matrix.html`, `explore.html`): page, headings, tables.
pub const PAGE_CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:16px 24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:26px 0 8px;border-bottom:1px solid #ccc;padding-bottom:3px}
.meta{color:#555;font-size:13px}
table{border-collapse:collapse;font-size:13px;background:#fff}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}
"#;

const CSS: &str = r#"
td.o a{color:inherit;text-decoration:none;display:block} td.o a:hover{text-decoration:underline}
td.o small{display:block;font-weight:400;font-size:11px}
td.pass{background:#dff2e1;color:#1d6e2b;font-weight:600}
td.fail{background:#fbe0e0;color:#b71c1c;font-weight:700}
td.inconclusive{background:#fff3d6;color:#8a5d00;font-weight:600}
td.observed{background:#eee;color:#444;font-weight:600}
td.error{background:#f3e0f7;color:#8e24aa;font-weight:700}
td.none{color:#aaa}
ul.reasons{font-size:13px} ul.reasons li{margin:3px 0}
"#;

/// `matrix.html`: one self-contained page (no script, no external file): per
/// Kafka version a table scenario × mode, each cell coloured by its outcome,
/// linking to that run's `report.html`, counts inline and on hover, then the
/// reasons of everything that is not a plain pass.
pub fn render_html(m: &Matrix) -> String {
    let cols = m.columns();
    let t = &m.totals;
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>sinkhole {}</title><style>{PAGE_CSS}{CSS}{STABILITY_CSS}</style></head><body>\n",
        esc(&m.matrix_id)
    );
    let _ = writeln!(h, "<h1>sinkhole matrix {}</h1>", esc(&m.matrix_id));
    if let Some(sh) = &m.shard {
        let _ = writeln!(
            h,
            "<p class=\"meta\">shard {}/{} of a matrix of {} cells</p>",
            sh.index, sh.count, sh.cells_total
        );
    }
    if !m.merged_from.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"meta\">merged from {} shards: {}</p>",
            m.merged_from.len(),
            esc(&m.merged_from.iter().map(|s| s.dir.display().to_string()).collect::<Vec<_>>().join(", "))
        );
    }
    let state = if m.interrupted {
        "interrupted (partial)"
    } else if m.complete {
        "complete"
    } else {
        "running (partial)"
    };
    let _ = writeln!(
        h,
        "<p class=\"meta\">started {} · {state} · wall time {} · seeds {} · {} cells, {}, {} rig errors · exit code {} · sinkhole {} ({})</p>",
        esc(&m.started),
        human_duration(m.wall_ms),
        esc(&m.seeds.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")),
        t.cells,
        esc(&totals_text(t)),
        t.cells_error + t.error,
        m.exit_code,
        esc(sinkhole_base::provenance::VERSION),
        esc(sinkhole_base::provenance::GIT_COMMIT)
    );
    if let Some(line) = reuse_line(m) {
        let _ = writeln!(h, "<p class=\"meta\">{}</p>", esc(&line));
    }
    for v in m.versions() {
        let _ = writeln!(h, "<h2>Kafka {}</h2>", esc(&v));
        let _ = write!(h, "<table><tr><th>scenario</th><th>seed</th><th>run</th>");
        for c in &cols {
            let _ = write!(h, "<th>{}</th>", esc(c.name()));
        }
        let _ = writeln!(h, "</tr>");
        for c in m.cells.iter().filter(|c| c.kafka == v) {
            let report = c.dir.as_ref().map(|d| rel_link(&m.dir, &RunDir::at(d).report()));
            let run = match (&c.run_id, &report) {
                (Some(id), Some(link)) if c.status == CellStatus::Done => {
                    format!("<a href=\"{}\">{}</a> <small>{}</small>", esc(link), esc(id), human_duration(c.wall_ms))
                }
                (Some(id), _) => format!("{} <small>{}</small>", esc(id), esc(c.status.name())),
                (None, _) => esc(c.status.name()),
            };
            let _ = write!(
                h,
                "<tr><td title=\"{}\">{}</td><td>{}</td><td>{run}</td>",
                esc(&c.file.display().to_string()),
                esc(&c.scenario),
                c.seed
            );
            for &mode in &cols {
                h.push_str(&html_cell(c, mode, report.as_deref()));
            }
            let _ = writeln!(h, "</tr>");
        }
        let _ = writeln!(h, "</table>");
    }
    h.push_str(&stability_html(m));
    let mut reasons = String::new();
    for c in &m.cells {
        let label = format!("{} @{} seed {}", c.scenario, c.kafka, c.seed);
        match c.status {
            CellStatus::Done => {
                for s in c.modes.iter().filter(|s| s.outcome != Outcome::Pass) {
                    let _ = writeln!(
                        reasons,
                        "<li><b>{}</b> {}: <span class=\"{}\">{}</span> — {}</li>",
                        esc(&label),
                        esc(s.mode.name()),
                        s.outcome.name(),
                        esc(&cell_text(Some(s), c.status)),
                        esc(&s.reason)
                    );
                }
            }
            CellStatus::Pending => {}
            st => {
                let _ = writeln!(
                    reasons,
                    "<li><b>{}</b>: {} — {}</li>",
                    esc(&label),
                    esc(st.name()),
                    esc(c.error.as_deref().unwrap_or(""))
                );
            }
        }
    }
    if !reasons.is_empty() {
        let _ = writeln!(h, "<h2>Reasons</h2>\n<ul class=\"reasons\">\n{reasons}</ul>");
    }
    h.push_str("</body></html>\n");
    h
}

fn html_cell(c: &CellResult, mode: SinkMode, report: Option<&str>) -> String {
    let Some(s) = c.mode(mode) else {
        let (class, text) = match c.status {
            CellStatus::Error if c.modes_planned.contains(&mode) => ("error", RIG_ERROR.to_string()),
            _ if !c.modes_planned.contains(&mode) => ("none", "-".to_string()),
            st => ("none", cell_text(None, st)),
        };
        let title = c.error.as_deref().unwrap_or("");
        return format!("<td class=\"o {class}\" title=\"{}\">{}</td>", esc(title), esc(&text));
    };
    let n = &s.counts;
    let counts = if s.checked {
        format!("{} of {} committed; {}", n.committed, n.expected, compared(n))
    } else {
        "output not counted".to_string()
    };
    let words = s.words();
    let title = format!("{words}\nexpected: {}\n{counts}\n{}", s.expected, s.reason);
    let inner = esc(&words);
    let inner = match report {
        Some(link) if c.status == CellStatus::Done => format!("<a href=\"{}\">{inner}</a>", esc(link)),
        _ => inner,
    };
    format!("<td class=\"o {}\" title=\"{}\">{inner}</td>", s.outcome.name(), esc(&title))
}

/// `junit.xml`: a test suite per cell, a test case per mode (scenario as the
/// class name, `mode @ kafka V seed S` as the name): `fail` → `<failure>`,
/// `inconclusive` → `<skipped>` with the reason, a rig error → `<error>` on
/// each of the cell's modes, a cell not run → `<skipped>`.
pub fn render_junit(m: &Matrix) -> String {
    let time = |ms: u64| format!("{:.3}", ms as f64 / 1000.0);
    let mut suites = String::new();
    let (mut tests, mut failures, mut errors, mut skipped) = (0, 0, 0, 0);
    for c in &m.cells {
        let (mut st, mut sf, mut se, mut ss) = (0, 0, 0, 0);
        let mut cases = String::new();
        let modes: Vec<SinkMode> =
            if c.modes.is_empty() { c.modes_planned.clone() } else { c.modes.iter().map(|s| s.mode).collect() };
        for mode in modes {
            st += 1;
            let name = format!("{} @ kafka {} seed {}", mode.name(), c.kafka, c.seed);
            let s = c.mode(mode);
            let _ = writeln!(
                cases,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{}\">",
                xml(&c.scenario),
                xml(&name),
                time(s.map(|s| s.wall_ms).unwrap_or(0))
            );
            match (s, c.status) {
                (Some(s), _) => {
                    let text = format!("{}\nexpected: {}\n{}", s.words(), s.expected, s.reason);
                    let message = xml(&junit_message(s));
                    match s.outcome {
                        Outcome::Fail => {
                            sf += 1;
                            let _ = writeln!(
                                cases,
                                "      <failure message=\"{message}\" type=\"{}\">{}</failure>",
                                if s.expected_met == Some(false) { "expectation-not-met" } else { "failed" },
                                xml(&text)
                            );
                        }
                        Outcome::Inconclusive => {
                            ss += 1;
                            let _ = writeln!(cases, "      <skipped message=\"{message}\"/>");
                        }
                        Outcome::Error => {
                            se += 1;
                            let _ = writeln!(cases, "      <error message=\"{message}\" type=\"rig\"/>");
                        }
                        Outcome::Pass | Outcome::Observed => {
                            let _ = writeln!(cases, "      <system-out>{}</system-out>", xml(&text));
                        }
                    }
                }
                (None, CellStatus::Error) => {
                    se += 1;
                    let e = c.error.as_deref().unwrap_or("the rig failed");
                    let _ = writeln!(cases, "      <error message=\"{}\" type=\"rig\"/>", xml(e));
                }
                (None, st) => {
                    ss += 1;
                    let why = c.error.clone().unwrap_or_else(|| format!("not run ({})", st.name()));
                    let _ = writeln!(cases, "      <skipped message=\"{}\"/>", xml(&why));
                }
            }
            cases.push_str("    </testcase>\n");
        }
        let _ = writeln!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{st}\" failures=\"{sf}\" errors=\"{se}\" skipped=\"{ss}\" time=\"{}\">",
            xml(&format!("{} @ kafka {} seed {}", c.scenario, c.kafka, c.seed)),
            time(c.wall_ms)
        );
        suites.push_str("    <properties>\n");
        let props = [
            ("scenario", c.scenario.clone()),
            ("file", c.file.display().to_string()),
            ("kafka", c.kafka.clone()),
            ("seed", c.seed.to_string()),
            ("run_id", c.run_id.clone().unwrap_or_default()),
            ("status", c.status.name().to_string()),
        ];
        for (k, v) in props {
            let _ = writeln!(suites, "      <property name=\"{k}\" value=\"{}\"/>", xml(&v));
        }
        suites.push_str("    </properties>\n");
        suites.push_str(&cases);
        suites.push_str("  </testsuite>\n");
        tests += st;
        failures += sf;
        errors += se;
        skipped += ss;
    }
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{}\">",
        xml(&format!("sinkhole {}", m.matrix_id)),
        time(m.wall_ms)
    );
    x.push_str(&suites);
    x.push_str("</testsuites>\n");
    x
}
