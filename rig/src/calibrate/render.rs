//! What a calibration looks like: the terminal table (one row per mutant
//! and faithful mode: which scenarios caught it, with what) and
//! `calibrate.html` (the whole detection matrix, each cell linking to its
//! runs' report.html). Pure functions of a [`Calibration`].
use std::fmt::Write as _;

use sinkhole_base::rundir::RunDir;

use super::{Calibration, Detection, DetectionCell, Row};
use crate::matrix::{human_duration, rel_link};
use crate::results::report::esc;
use sinkhole_checker::verdict::words::expectation_word;
use sinkhole_checker::verdict::Outcome;

pub use crate::matrix::anomalies;

/// At most `n` characters, with an ellipsis when cut.
pub fn shorten(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `scenario (lost=1006)`, `scenario (2/3: dup=12)` when timing decided it.
fn caught_text(c: &DetectionCell) -> String {
    let what = c.runs.iter().find(|r| r.outcome == Outcome::Fail).map(|r| r.detail.clone()).unwrap_or_default();
    let what = shorten(&what, 60);
    if c.by_luck() {
        format!("{} ({}/{}: {what})", c.scenario, c.caught, c.runs.len())
    } else {
        format!("{} ({what})", c.scenario)
    }
}

/// A mutant no scenario caught: whether it passed everywhere it ran, or some of the runs that
/// might have caught it were inconclusive (a fault that took no effect is not a pass).
fn nobody(r: &Row) -> String {
    let unjudged: Vec<&str> =
        r.cells.iter().filter(|c| c.detection == Detection::Inconclusive).map(|c| c.scenario.as_str()).collect();
    match unjudged.len() {
        0 => "NOBODY (it passed every scenario)".to_string(),
        n => format!(
            "NOBODY (passed the others; inconclusive in {n}: {}{})",
            unjudged.iter().take(3).copied().collect::<Vec<_>>().join(", "),
            if n > 3 { ", …" } else { "" }
        ),
    }
}

fn row_cells(r: &Row) -> [String; 5] {
    let caught: Vec<String> = r.cells.iter().filter(|c| c.detection == Detection::Caught).map(caught_text).collect();
    let caught = if caught.is_empty() {
        if r.is_mutant() {
            nobody(r)
        } else {
            "none".to_string()
        }
    } else {
        caught.join("; ")
    };
    [
        r.mode.name().to_string(),
        caught,
        r.count(Detection::Escaped).to_string(),
        r.count(Detection::Inconclusive).to_string(),
        r.count(Detection::NotRun).to_string(),
    ]
}

/// The table printed at the end, then the totals.
pub fn render_table(c: &Calibration) -> String {
    let head = ["mode", "caught by (a mutant) / flagged by (a faithful mode)", "passed", "inconclusive", "n/a"];
    let rows: Vec<[String; 5]> = c.mutant_rows().chain(c.faithful_rows()).map(row_cells).collect();
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (i, cell) in r.iter().enumerate() {
            w[i] = w[i].max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells.iter().enumerate().map(|(i, s)| format!("{s:<width$}", width = w[i])).collect::<Vec<_>>().join(" | ")
    };
    let mut out = String::new();
    out.push_str(&line(&head.map(str::to_string)));
    out.push('\n');
    out.push_str(&w.iter().map(|n| "-".repeat(*n)).collect::<Vec<_>>().join("-|-"));
    out.push('\n');
    let mutants = c.mutant_rows().count();
    for (i, r) in rows.iter().enumerate() {
        if i == mutants && mutants > 0 {
            out.push_str(&w.iter().map(|n| "-".repeat(*n)).collect::<Vec<_>>().join("-|-"));
            out.push('\n');
        }
        out.push_str(line(r).trim_end());
        out.push('\n');
    }
    let t = &c.totals;
    let _ = writeln!(
        out,
        "{} mutants: {} caught, {} caught by no scenario; faithful modes flagged: {}; {} scenarios; wall time {}{}",
        t.mutants,
        t.caught,
        t.uncaught,
        t.faithful_flagged,
        c.scenarios.len(),
        human_duration(c.wall_ms),
        if t.rig_errors > 0 { format!("; the rig failed in {} cells", t.rig_errors) } else { String::new() }
    );
    let luck: Vec<String> = c
        .mutant_rows()
        .flat_map(|r| r.cells.iter().filter(|x| x.by_luck()).map(move |x| format!("{} in {}", r.mode, x.scenario)))
        .collect();
    if !luck.is_empty() {
        let _ = writeln!(out, "caught only in some runs (timing): {}", luck.join(", "));
    }
    out
}

fn class(d: Detection, mutant: bool) -> &'static str {
    match (d, mutant) {
        (Detection::Caught, true) => "caught",
        (Detection::Caught, false) => "flagged",
        (Detection::Escaped, true) => "escaped",
        (Detection::Escaped, false) => "clean",
        (Detection::Inconclusive, _) => "inconclusive",
        (Detection::NotRun, _) | (Detection::Pending, _) => "na",
    }
}

fn cell_html(c: &Calibration, r: &Row, cell: &DetectionCell) -> String {
    let cls = class(cell.detection, r.is_mutant());
    if cell.detection == Detection::NotRun {
        return "<td class=\"na\">-</td>".to_string();
    }
    let mut inner = String::new();
    let word = match (cell.detection, r.is_mutant()) {
        (Detection::Caught, false) => "FLAGGED".to_string(),
        (Detection::Caught, true) if cell.by_luck() => format!("caught {}/{}", cell.caught, cell.runs.len()),
        (d, _) => d.name().to_string(),
    };
    let _ = write!(inner, "<b>{}</b>", esc(&word));
    for run in &cell.runs {
        // A calibrate.json of an older rig has no words: whether the expectation was met.
        let words = if run.words.is_empty() { expectation_word(run.outcome) } else { run.words.as_str() };
        let label = format!("@{} seed {}: {words}", run.kafka, run.seed);
        let link = run.dir.as_ref().map(|d| rel_link(&c.dir, &RunDir::at(d).report()));
        let text = match link {
            Some(href) => format!("<a href=\"{}\">{}</a>", esc(&href), esc(&label)),
            None => esc(&label),
        };
        let _ = write!(
            inner,
            "<br><small title=\"{}\">{text}<br>{}</small>",
            esc(&run.detail),
            esc(&shorten(&run.detail, 80))
        );
    }
    format!("<td class=\"{cls}\">{inner}</td>")
}

/// `calibrate.html`: one self-contained page (no script).
pub fn render_html(c: &Calibration) -> String {
    let mut h = String::new();
    h.push_str("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>sinkhole calibration</title>\n<style>\n");
    h.push_str(
        "body{font:13px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}\
         td,th{border:1px solid #ccc;padding:4px 6px;vertical-align:top}th{background:#f4f4f4;text-align:left}\
         .caught{background:#d8f5d8}.flagged{background:#f8c8c8}.escaped{background:#f8d8b0}.clean{background:#eef8ee}\
         .inconclusive{background:#eee}.na{color:#aaa;text-align:center}small{color:#333}\
         th.rotate{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}",
    );
    h.push_str("\n</style></head><body>\n<h1>Calibration: what the scenario library catches</h1>\n");
    let t = &c.totals;
    let _ = writeln!(
        h,
        "<p>{} mutants: <b>{} caught</b>, <b>{} caught by no scenario</b>; faithful modes flagged: <b>{}</b>. \
         Kafka {}; seeds {}; {} scenarios; wall time {}{}. Exit code {}. The runs: <a href=\"{}\">matrix.html</a>.</p>",
        t.mutants,
        t.caught,
        t.uncaught,
        t.faithful_flagged,
        esc(&if c.kafka.is_empty() { "each scenario's own".to_string() } else { c.kafka.join(", ") }),
        esc(&c.seeds.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")),
        c.scenarios.len(),
        human_duration(c.wall_ms),
        if c.complete { "" } else { " (not complete)" },
        c.exit_code,
        esc(sinkhole_base::rundir::names::MATRIX_HTML)
    );
    h.push_str("<p>A mutant is a faithful sink with one deliberate deviation, judged against its base mode's expectation and premises: <span class=\"caught\">caught</span> = its verdict failed (what caught it below), <span class=\"escaped\">escaped</span> = it passed, <span class=\"inconclusive\">inconclusive</span> = not judged. A faithful mode must never be <span class=\"flagged\">flagged</span>.</p>\n");
    h.push_str("<table>\n<tr><th>mode</th><th>bug class</th>");
    for s in &c.scenarios {
        let _ = write!(h, "<th class=\"rotate\">{}</th>", esc(s));
    }
    h.push_str("</tr>\n");
    for r in c.mutant_rows().chain(c.faithful_rows()) {
        let _ = write!(
            h,
            "<tr><th>{}</th><td><small>{}</small></td>",
            esc(r.mode.name()),
            esc(if r.bug_class.is_empty() { "faithful" } else { &r.bug_class })
        );
        for cell in &r.cells {
            h.push_str(&cell_html(c, r, cell));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n<h2>Caught by</h2>\n<ul>\n");
    for r in c.mutant_rows() {
        let by: Vec<String> = r.cells.iter().filter(|x| x.detection == Detection::Caught).map(caught_text).collect();
        let _ = writeln!(
            h,
            "<li><b>{}</b>: {}</li>",
            esc(r.mode.name()),
            esc(&if by.is_empty() { "no scenario (escaped)".to_string() } else { by.join("; ") })
        );
    }
    h.push_str("</ul>\n</body></html>\n");
    h
}
