//! How the stability over seeds ([`crate::matrix::stability`]) looks: a
//! table scenario @kafka × mode in the terminal and in `matrix.html`, and the
//! summary line under both. A section of its own beside the matrix's table,
//! which shows one row per seed.
use std::fmt::Write as _;

use sinkhole_base::rundir::RunDir;
use sinkhole_model::SinkMode;

use super::rel_link;
use crate::matrix::stability::{summary_line, Group, Status};
use crate::matrix::{CellStatus, Matrix};
use crate::results::report::esc;
use sinkhole_checker::verdict::words::expectation_word;

/// The rows of a stability table: scenario and Kafka version in the order of
/// the groups (the matrix's cell order).
fn rows(m: &Matrix) -> Vec<(&str, &str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for g in &m.stability.groups {
        if !out.contains(&(g.scenario.as_str(), g.kafka.as_str())) {
            out.push((&g.scenario, &g.kafka));
        }
    }
    out
}

fn group<'a>(m: &'a Matrix, scenario: &str, kafka: &str, mode: SinkMode) -> Option<&'a Group> {
    m.stability.groups.iter().find(|g| g.mode == mode && g.scenario == scenario && g.kafka == kafka)
}

/// One cell of the terminal's stability table, the outcomes said as whether
/// the expectation was met: `stable: as expected`, `FLAKY: 3 as expected, 2
/// NOT as expected`, `incomplete: 1 as expected, 1 not run`, and one seed's
/// own words: `1 seed: LOST 4031 (expected)`.
pub fn stability_cell_text(g: &Group) -> String {
    let agreed = g.agreed().map(expectation_word).unwrap_or("no verdict");
    match g.status {
        Status::Stable => format!("stable: {agreed}"),
        Status::Flaky => format!("FLAKY: {}", g.tally()),
        Status::Incomplete => format!("incomplete: {}", g.tally()),
        Status::OneSeed => format!("1 seed: {}", g.seeds[0].words()),
    }
}

/// Columns padded to their widest cell, ` | ` between them, a rule under the head.
fn aligned(head: &[String], rows: &[Vec<String>]) -> String {
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, cell) in r.iter().enumerate() {
            w[i] = w[i].max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let padded: Vec<String> =
            cells.iter().enumerate().map(|(i, c)| format!("{c}{}", " ".repeat(w[i] - c.chars().count()))).collect();
        format!("{}\n", padded.join(" | ").trim_end())
    };
    let mut out = line(head);
    out.push_str(&w.iter().map(|n| "-".repeat(*n)).collect::<Vec<_>>().join("-|-"));
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

/// The terminal's stability section: with several seeds a blank line and a
/// table (rows scenario @kafka, columns modes), then always the summary line.
pub fn stability_text(m: &Matrix) -> String {
    let mut out = String::new();
    if m.stability.measured() {
        out.push('\n');
        let cols = m.columns();
        let mut head = vec![format!("stability over {} seeds", m.stability.seeds)];
        head.extend(cols.iter().map(|c| c.name().to_string()));
        let table: Vec<Vec<String>> = rows(m)
            .into_iter()
            .map(|(scenario, kafka)| {
                let mut r = vec![format!("{scenario} @{kafka}")];
                r.extend(
                    cols.iter().map(|&mode| group(m, scenario, kafka, mode).map_or("-".into(), stability_cell_text)),
                );
                r
            })
            .collect();
        out.push_str(&aligned(&head, &table));
    }
    out.push_str(&summary_line(m));
    out.push('\n');
    out
}

/// The stability section's rules, added to the page's style sheet.
pub const STABILITY_CSS: &str = r#"
td.st{font-size:12px} td.st b{display:block}
td.st-stable{background:#fff} td.st-one-seed{background:#fafafa;color:#666}
td.st-incomplete{background:#f3f3f3;color:#555}
td.st-flaky{background:#f3e5f5;color:#6a1b9a;outline:2px solid #8e24aa;outline-offset:-2px}
span.sd{display:inline-block;margin:1px 4px 1px 0;padding:0 3px;border-radius:3px;font-size:11px;white-space:nowrap}
span.sd a{color:inherit} span.sd.pass{background:#dff2e1;color:#1d6e2b} span.sd.fail{background:#fbe0e0;color:#b71c1c}
span.sd.inconclusive{background:#fff3d6;color:#8a5d00} span.sd.observed{background:#eee;color:#444}
span.sd.error{background:#f3e0f7;color:#8e24aa} span.sd.not-run{background:#fff;color:#999;border:1px dashed #ccc}
p.stability{font-weight:600} p.stability.flaky{color:#6a1b9a}
"#;

/// One seed in a page cell: `11: LOST 4031 (expected)`, coloured by its
/// outcome, linking to the cell's `report.html` when its run finished (as the
/// matrix's table does).
fn seed_html(m: &Matrix, g: &Group, i: usize) -> String {
    let s = &g.seeds[i];
    let class = s.outcome.map(|o| o.name()).unwrap_or("not-run");
    let text = format!("{}: {}", s.seed, s.words());
    let cell = m.cells.iter().find(|c| c.seed == s.seed && c.scenario == g.scenario && c.kafka == g.kafka);
    let link = cell
        .filter(|c| c.status == CellStatus::Done)
        .and_then(|c| c.dir.as_ref())
        .map(|d| rel_link(&m.dir, &RunDir::at(d).report()));
    let inner = match link {
        Some(l) => format!("<a href=\"{}\">{}</a>", esc(&l), esc(&text)),
        None => esc(&text),
    };
    format!("<span class=\"sd {class}\" title=\"seed {}: {}\">{inner}</span>", s.seed, esc(s.words()))
}

/// `matrix.html`'s stability section: the summary line, and with several
/// seeds a table scenario × Kafka version × mode, flaky groups outlined,
/// each seed's outcome linking to its run.
pub fn stability_html(m: &Matrix) -> String {
    let mut h = String::from("<h2>Stability over seeds</h2>\n");
    let flaky = if m.stability.totals.flaky > 0 { " flaky" } else { "" };
    let _ = writeln!(h, "<p class=\"stability{flaky}\">{}</p>", esc(&summary_line(m)));
    if !m.stability.measured() {
        return h;
    }
    let cols = m.columns();
    h.push_str("<table class=\"stability\"><tr><th>scenario</th><th>kafka</th>");
    for c in &cols {
        let _ = write!(h, "<th>{}</th>", esc(c.name()));
    }
    h.push_str("</tr>\n");
    for (scenario, kafka) in rows(m) {
        let _ = write!(h, "<tr><td>{}</td><td>{}</td>", esc(scenario), esc(kafka));
        for &mode in &cols {
            let Some(g) = group(m, scenario, kafka, mode) else {
                h.push_str("<td class=\"st none\">-</td>");
                continue;
            };
            let head = match g.status {
                Status::Flaky => format!("flaky: {}", g.tally()),
                Status::Incomplete => format!("incomplete: {}", g.tally()),
                Status::Stable => format!("stable: {}", g.agreed().map(expectation_word).unwrap_or("")),
                Status::OneSeed => "1 seed".to_string(),
            };
            let seeds: String = (0..g.seeds.len()).map(|i| seed_html(m, g, i)).collect();
            let _ = write!(
                h,
                "<td class=\"st st-{}\" title=\"{}\"><b>{}</b>{seeds}</td>",
                g.status.name(),
                esc(&g.label()),
                esc(&head)
            );
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    h
}
