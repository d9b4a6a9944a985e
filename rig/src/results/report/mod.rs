//! `results/<run-id>/report.html`: one self-contained page a person reads in
//! a browser — inline CSS and SVG, no script, nothing fetched.
//!
//! It is rebuilt from the results directory alone (`summary.json`,
//! `scenario.yaml`, each `<mode>/verdict.json`, `<mode>/history.jsonl`,
//! `<mode>/latency.hlog` or the run's `latency.hlog`), so `sinkhole check` on
//! a copied directory rewrites the same page. The modes of the run stand
//! side by side in every section, on shared scales:
//! - the verdict table (the terminal's columns: what happened to the data,
//!   then whether it was expected) with each mode's reason, the scenario,
//!   cluster and job settings; every mode's heading carries the same words;
//! - latency over time per metric, fault intervals shaded and labelled (as
//!   Jepsen's latency plots draw the nemesis), the job's down time in grey;
//! - latency distributions (percentile curves) and their summaries;
//! - committed and acknowledged records per second;
//! - the checkpoint timeline with failures and restores, and the job's log;
//! - the anomaly counts and the checker's examples.
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use sinkhole_base::rundir::RunDir;
use sinkhole_model::anomaly::Anomaly;
use sinkhole_model::{EventKind, SinkMode};

use crate::results::summary::{self, ModeSummary, Summary};
use sinkhole_checker::latency::{self, Latencies, Metric};
use sinkhole_checker::verdict::{Outcome, Verdict};
use sinkhole_scenario::Scenario;

mod anomalies;
pub mod charts;
mod checkpoints;
pub mod data;
mod reads;
mod settings;
mod share;

#[cfg(test)]
mod tests;

use anomalies::anomaly_section;
pub use anomalies::fault_evidence;
use charts::{Layer, Shading, Shape};
use checkpoints::checkpoint_section;
use data::Timeline;
use settings::settings_section;

/// One mode, as read from its directory.
#[derive(Debug, Clone)]
pub struct ModeData {
    pub mode: SinkMode,
    pub row: Option<ModeSummary>,
    pub verdict: Option<Verdict>,
    pub timeline: Timeline,
    pub latencies: Latencies,
    /// Transactional id → the checkpoint of its latest transaction, from the
    /// history (for examples of verdicts that do not name it).
    pub tid_checkpoints: HashMap<String, u64>,
    /// Files that could not be read, said on the page.
    pub problems: Vec<String>,
}

/// A run directory, as read.
#[derive(Debug, Clone)]
pub struct RunData {
    pub dir: PathBuf,
    pub summary: Option<Summary>,
    pub scenario: Option<Scenario>,
    pub scenario_yaml: Option<String>,
    pub modes: Vec<ModeData>,
    pub problems: Vec<String>,
    /// Each judged mode's story ([`crate::story`]): the page's first screen when a mode has an
    /// anomaly to explain.
    pub stories: Vec<crate::story::Story>,
}

impl RunData {
    fn run_id(&self) -> String {
        if let Some(s) = &self.summary {
            return s.run_id.clone();
        }
        self.modes.iter().find_map(|m| m.verdict.as_ref().map(|v| v.run_id.clone())).unwrap_or_default()
    }

    fn scenario_name(&self) -> String {
        if let Some(s) = &self.summary {
            return s.scenario.clone();
        }
        if let Some(s) = &self.scenario {
            return s.name.clone();
        }
        self.modes.iter().find_map(|m| m.verdict.as_ref().map(|v| v.scenario.clone())).unwrap_or_default()
    }
}

/// Reads everything the report shows. Missing or damaged files become
/// problems printed on the page; only a directory with no mode at all is
/// an error.
pub fn load(run_dir: &RunDir) -> anyhow::Result<RunData> {
    let mut problems = Vec::new();
    let mut summary: Option<Summary> =
        read_opt(&run_dir.summary(), &mut problems, |t| serde_json::from_str(t).map_err(|e| anyhow!("{e}")));
    if let Some(s) = summary.as_mut() {
        s.upgrade();
    }
    let yaml_path = run_dir.scenario();
    let scenario_yaml = std::fs::read_to_string(&yaml_path).ok();
    let scenario = match &scenario_yaml {
        Some(_) => match sinkhole_scenario::load(&yaml_path) {
            Ok(s) => Some(s),
            Err(e) => {
                problems.push(format!("{}: {}", yaml_path.display(), e.render()));
                None
            }
        },
        None => None,
    };
    // The modes in the run's order: the summary's, else the scenario's,
    // else every directory with a verdict.
    let mut modes: Vec<SinkMode> = match (&summary, &scenario) {
        (Some(s), _) if !s.modes.is_empty() => s.modes.iter().map(|m| m.mode).collect(),
        (_, Some(s)) => s.modes.clone(),
        _ => Vec::new(),
    };
    if modes.is_empty() {
        modes = SinkMode::ALL.into_iter().filter(|m| run_dir.mode(m.name()).has_verdict()).collect();
    }
    if modes.is_empty() {
        return Err(anyhow!(
            "{}: no mode to report (no summary.json, scenario.yaml or <mode>/verdict.json)",
            run_dir.path().display()
        ));
    }
    let run_log = run_dir.latency();
    let run_intervals = if run_log.is_file() {
        match latency::read_log(&run_log) {
            Ok(i) => Some(i),
            Err(e) => {
                problems.push(e.to_string());
                None
            }
        }
    } else {
        None
    };
    let modes: Vec<ModeData> = modes
        .into_iter()
        .map(|m| {
            let row = summary.as_ref().and_then(|s| s.modes.iter().find(|r| r.mode == m).cloned());
            load_mode(run_dir, m, row, run_intervals.as_deref())
        })
        .collect();
    // A story that cannot be told (an older run's verdicts) leaves the page as it was; a run
    // with nothing to tell (every mode clean) is not read for one.
    let to_tell = modes.iter().any(|m| m.verdict.as_ref().is_some_and(crate::story::has_story));
    let stories = if to_tell { crate::story::explain(run_dir, None).unwrap_or_default() } else { Vec::new() };
    Ok(RunData { dir: run_dir.path().to_path_buf(), summary, scenario, scenario_yaml, modes, problems, stories })
}

fn read_opt<T>(path: &Path, problems: &mut Vec<String>, parse: impl FnOnce(&str) -> anyhow::Result<T>) -> Option<T> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            problems.push(format!("{}: {e}", path.display()));
            return None;
        }
    };
    match parse(&text) {
        Ok(v) => Some(v),
        Err(e) => {
            problems.push(format!("{}: {e}", path.display()));
            None
        }
    }
}

fn load_mode(
    run_dir: &RunDir,
    mode: SinkMode,
    row: Option<ModeSummary>,
    run_intervals: Option<&[latency::Interval]>,
) -> ModeData {
    let dir = run_dir.mode(mode.name());
    let mut problems = Vec::new();
    let verdict: Option<Verdict> =
        read_opt(&dir.verdict(), &mut problems, |t| serde_json::from_str(t).map_err(|e| anyhow!("{e}")));
    let hpath = dir.history();
    let events = if hpath.is_file() {
        match sinkhole_history::read(&hpath) {
            Ok(h) => {
                if h.torn_tail {
                    problems.push(format!("{}: the last line is torn; skipped", hpath.display()));
                }
                h.events
            }
            Err(e) => {
                problems.push(e.to_string());
                Vec::new()
            }
        }
    } else {
        problems.push(format!("{}: missing", hpath.display()));
        Vec::new()
    };
    let mut latencies = Latencies::from_history(mode, &events);
    // `visibility` is only in the logs: the mode's own, else the run's.
    let mode_log = dir.latency();
    let seen = if mode_log.is_file() {
        match latency::read_log(&mode_log) {
            Ok(i) => Some(Latencies::from_intervals(mode, &i)),
            Err(e) => {
                problems.push(e.to_string());
                None
            }
        }
    } else {
        run_intervals.map(|i| Latencies::from_intervals(mode, i))
    };
    if let Some(v) = seen.as_ref().and_then(|s| s.get(Metric::Visibility)) {
        latencies.series(Metric::Visibility).merge(v);
    }
    let mut tid_checkpoints = HashMap::new();
    for e in &events {
        let (tid, c) = match &e.kind {
            EventKind::TxnOpened { transactional_id, checkpoint } => (transactional_id, *checkpoint),
            EventKind::TxnPrecommitted { committable, .. } => (&committable.transactional_id, committable.checkpoint),
            EventKind::CommitFinished { transactional_id, checkpoint, .. } => (transactional_id, *checkpoint),
            _ => continue,
        };
        tid_checkpoints.insert(tid.clone(), c);
    }
    let timeline = Timeline::from_events(&events);
    // A row written before the words: its verdict knows them better than the row can guess.
    let row = row.map(|mut r| {
        if let (true, Some(v)) = (r.words.is_empty(), &verdict) {
            r.words = v.words();
            r.inconclusive_cause = v.cause();
        }
        r
    });
    ModeData { mode, row, verdict, timeline, latencies, tid_checkpoints, problems }
}

/// Reads `run_dir` and writes its `report.html`; returns its path.
pub fn write_report(run_dir: &RunDir) -> anyhow::Result<PathBuf> {
    let data = load(run_dir)?;
    let html = render(&data);
    let path = run_dir.report();
    std::fs::write(&path, html).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:16px 24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc;padding-bottom:3px}
h3{font-size:14px;margin:14px 0 4px}
table{border-collapse:collapse;font-size:13px;background:#fff}
th,td{border:1px solid #ddd;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f0f0f0} td.num{text-align:right;font-variant-numeric:tabular-nums}
.kvs{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}
.kvs caption{font-weight:600;text-align:left;padding:2px 0;font-size:13px}
.modes{display:grid;gap:12px}
.mode{background:#fff;border:1px solid #ddd;border-radius:4px;padding:6px;min-width:0;overflow-x:auto}
.mode-head{font-weight:600;font-size:14px;margin-bottom:4px}
.mode svg{width:100%;height:auto;display:block}
.badge{display:inline-block;padding:1px 7px;border-radius:9px;font-size:12px;font-weight:600;color:#fff}
.badge.pass{background:#2a8f3c}.badge.fail{background:#c62828}.badge.inconclusive{background:#c98a00}.badge.observed{background:#777}.badge.error{background:#8e24aa}
tr.pass td.outcome{color:#1d6e2b;font-weight:600} tr.fail td.outcome{color:#c62828;font-weight:600}
tr.inconclusive td.outcome{color:#a06e00;font-weight:600} tr.observed td.outcome{color:#555}
tr.error td.outcome{color:#8e24aa;font-weight:700}
.reasons li{margin:2px 0;font-size:13px}
.legend{font-size:12px;color:#444;margin:2px 0 6px}
.sw{display:inline-block;width:11px;height:11px;vertical-align:-1px;margin:0 3px 0 10px;border:1px solid #0002}
.empty{color:#888;font-size:13px;padding:30px 8px;text-align:center}
.clean{color:#1d6e2b;font-weight:600;font-size:13px} .anomaly{color:#c62828;font-weight:600}
.problem{color:#c62828;font-size:13px}
ol.log{font-size:12px;padding-left:22px;margin:4px 0} ol.log li{margin:1px 0}
table.examples{margin:6px 0;font-size:12px;width:100%}
table.story{margin:6px 0;font-size:12px;width:100%}
table.story td{vertical-align:top;padding:2px 6px;border-bottom:1px solid #eee}
table.story td:first-child,table.story td:nth-child(2),table.story td:nth-child(3){white-space:nowrap}
#story ul{font-size:13px;margin:4px 0}
table.story tr.fault td{background:#fff4e5} table.story tr.broker-log td{background:#eef4ff}
table.story tr.flink-log td{background:#f1f8ee} ul.missing li{color:#8a5a00}
td.tid{word-break:break-all;font-family:ui-monospace,monospace;font-size:11px}
table.lat{font-size:11px} table.lat td,table.lat th{white-space:nowrap;padding:2px 4px}
caption{text-align:left} table.examples caption{text-align:left;font-weight:600;font-size:13px;padding:3px 0}
td.detail{font-size:11px;color:#444;word-break:break-word}
pre{font-size:12px;background:#fff;border:1px solid #ddd;padding:8px;overflow-x:auto}
.note{font-size:12px;color:#555;margin:2px 0}
"#;

/// The whole page.
pub fn render(d: &RunData) -> String {
    let mut h = String::new();
    let name = d.scenario_name();
    let run_id = d.run_id();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>sinkhole: {} — {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(&name),
        esc(&run_id)
    );
    header(&mut h, d, &name, &run_id);
    let cols = format!("grid-template-columns:repeat({},minmax(0,1fr))", d.modes.len().max(1));
    latency_section(&mut h, d, &cols);
    distribution_section(&mut h, d, &cols);
    throughput_section(&mut h, d, &cols);
    checkpoint_section(&mut h, d, &cols);
    anomaly_section(&mut h, d, &cols);
    h.push_str("<footer class=\"note\">Written by sinkhole from this results directory; <code>sinkhole check</code> rewrites it.</footer>\n</body>\n</html>\n");
    h
}

/// A mode's heading: its name and its verdict in words, coloured by the
/// outcome (expected or not).
fn mode_head(m: &ModeData) -> String {
    match verdict_of(m) {
        Some((o, words)) => format!(
            "<div class=\"mode-head\">{} <span class=\"badge {}\">{}</span></div>",
            esc(m.mode.name()),
            o.name(),
            esc(&words)
        ),
        None => format!("<div class=\"mode-head\">{}</div>", esc(m.mode.name())),
    }
}

fn verdict_of(m: &ModeData) -> Option<(Outcome, String)> {
    m.row.as_ref().map(|r| (r.outcome, r.words())).or(m.verdict.as_ref().map(|v| (v.outcome, v.words())))
}

/// A row of the side-by-side grid: one cell per mode.
fn grid(h: &mut String, d: &RunData, cols: &str, id: &str, mut cell: impl FnMut(usize, &ModeData) -> String) {
    let _ = writeln!(h, "<div class=\"modes\" style=\"{cols}\">");
    for (i, m) in d.modes.iter().enumerate() {
        let _ = writeln!(h, "<div class=\"mode\" id=\"{}-{}\">{}", esc(id), esc(m.mode.name()), mode_head(m));
        h.push_str(&cell(i, m));
        h.push_str("\n</div>\n");
    }
    h.push_str("</div>\n");
}

/// The top of the page: the run's head, the verdict, each anomaly's story and the settings.
fn header(h: &mut String, d: &RunData, name: &str, run_id: &str) {
    page_head(h, d, name, run_id);
    verdict_section(h, d);
    // What happened, right under the verdict: each anomaly's chain.
    if d.stories.iter().any(|s| !s.chains.is_empty()) {
        h.push_str(&crate::story::render::html(&d.stories));
    }
    settings_section(h, d);
}

/// The scenario's name and description, the run's facts as a table, and what could not be read.
fn page_head(h: &mut String, d: &RunData, name: &str, run_id: &str) {
    let _ = writeln!(h, "<header>\n<h1>sinkhole: {}</h1>", esc(name));
    if let Some(desc) = d.scenario.as_ref().and_then(|s| s.description.as_deref()) {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(desc));
    }
    h.push_str("<table class=\"kv\">");
    for (k, v) in run_facts(d, run_id) {
        let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    }
    h.push_str("</table>\n</header>\n");
    for p in &d.problems {
        let _ = writeln!(h, "<p class=\"problem\">{}</p>", esc(p));
    }
}

/// Run id, Kafka, seed, and what summary.json says of the run; then where its results are.
fn run_facts(d: &RunData, run_id: &str) -> Vec<(&'static str, String)> {
    let first_verdict = d.modes.iter().find_map(|m| m.verdict.as_ref());
    let kafka = d
        .summary
        .as_ref()
        .map(|s| s.kafka.clone())
        .or_else(|| d.scenario.as_ref().map(|s| s.cluster.kafka.clone()))
        .or_else(|| first_verdict.map(|v| v.kafka.clone()))
        .unwrap_or_default();
    let seed = d.summary.as_ref().map(|s| s.seed).or(first_verdict.map(|v| v.seed));
    let mut kv = vec![("run id", run_id.to_string()), ("Kafka", kafka)];
    if let Some(s) = seed {
        kv.push(("seed", s.to_string()));
    }
    if let Some(s) = &d.summary {
        kv.push(("scenario file", s.source.display().to_string()));
        kv.push(("exit code", s.exit_code.to_string()));
        if s.modes.len() > 1 {
            kv.push(("modes ran", modes_ran(s)));
        }
        if let Some(t) = &s.timings {
            kv.push(("time", t.line()));
        }
    }
    kv.push(("results", d.dir.display().to_string()));
    kv
}

/// The verdict table (the terminal's columns), then each mode's reason.
fn verdict_section(h: &mut String, d: &RunData) {
    h.push_str("<section id=\"verdict\">\n<h2>Verdict</h2>\n<table class=\"verdict\">\n<tr>");
    let rows: Vec<ModeSummary> = d
        .modes
        .iter()
        .filter_map(|m| {
            m.row.clone().or_else(|| m.verdict.as_ref().map(|v| crate::results::summary::summarize(v, None)))
        })
        .collect();
    let columns = summary::table_columns(&rows);
    for c in summary::table_head(&columns) {
        let _ = write!(h, "<th>{c}</th>");
    }
    h.push_str("</tr>\n");
    for r in &rows {
        verdict_row(h, r, &columns);
    }
    h.push_str("</table>\n<ul class=\"reasons\">\n");
    for r in &rows {
        let _ = writeln!(h, "<li><b>{}</b>: {}</li>", esc(r.mode.name()), esc(&r.reason));
    }
    h.push_str("</ul>\n</section>\n");
}

/// One mode's row, the terminal's cells; counts of an output that was not checked show as `-`.
fn verdict_row(h: &mut String, r: &ModeSummary, columns: &[Anomaly]) {
    let cells = summary::table_row(r, columns);
    let _ = write!(h, "<tr class=\"{}\">", r.outcome.name());
    for (i, c) in cells.iter().enumerate() {
        if i == 0 {
            let _ = write!(h, "<td>{}</td>", esc(c));
        } else if i + 1 < cells.len() {
            let _ = write!(h, "<td class=\"num\">{}</td>", esc(c));
        } else {
            let _ = write!(h, "<td class=\"outcome\" title=\"expected: {}\">{}</td>", esc(&r.expected), esc(c));
        }
    }
    h.push_str("</tr>\n");
}

/// How the modes of a run shared the cluster, in words.
fn modes_ran(s: &Summary) -> String {
    if !s.side_by_side {
        return "one after another, each alone on the cluster".into();
    }
    let lead = match s.lead.as_deref() {
        None | Some("first") => "the first mode to reach its event".to_string(),
        Some(m) => format!("{m}'s events (lead: {m})"),
    };
    format!("side by side on one cluster; an event-triggered cluster fault fires on {lead}")
}

/// How one series of a metric is drawn, by the name `data` gives it.
fn style_of(name: &str) -> (plotters::style::RGBColor, Shape) {
    match name {
        "committed on restore" => (charts::RESTORE, Shape::Triangle),
        "dropped / failed" | "aborted" => (charts::BAD, Shape::Cross),
        "p50" => (charts::COMMITTED, Shape::Line),
        "p99" => (charts::ACKED, Shape::Line),
        "max" => (plotters::style::RGBColor(90, 90, 90), Shape::Dot),
        _ => (charts::COMMITTED, Shape::Dot),
    }
}

/// A series of a plot: its name and points (s, µs).
type NamedPoints = (&'static str, Vec<(f64, u64)>);

/// A metric's series for one mode.
fn metric_series(m: &ModeData, metric: Metric) -> Vec<NamedPoints> {
    if let Some(s) = m.timeline.samples.get(&metric) {
        return s.iter().map(|p| (p.name, p.points.clone())).collect();
    }
    let w = data::windows(&m.latencies, metric, m.timeline.t0_ms);
    if w.is_empty() {
        return Vec::new();
    }
    vec![
        ("p50", w.iter().map(|x| (x.0, x.1)).collect()),
        ("p99", w.iter().map(|x| (x.0, x.2)).collect()),
        ("max", w.iter().map(|x| (x.0, x.3)).collect()),
    ]
}

fn shared_x_max(d: &RunData) -> f64 {
    let mut x = 1.0f64;
    for m in &d.modes {
        x = x.max(m.timeline.duration_s);
        for metric in Metric::ALL {
            for w in data::windows(&m.latencies, metric, m.timeline.t0_ms) {
                x = x.max(w.0 + 0.5);
            }
        }
    }
    (x * 1.02).ceil()
}

fn swatch(color: plotters::style::RGBColor, alpha: f64, label: &str) -> String {
    format!(
        "<span class=\"sw\" style=\"background:rgba({},{},{},{alpha})\"></span>{}",
        color.0,
        color.1,
        color.2,
        esc(label)
    )
}

fn band_legend() -> String {
    format!(
        "{}{}",
        swatch(charts::FAULT, 0.25, "fault (labelled)"),
        swatch(charts::DOWN, 0.2, "job down (failure → restart)")
    )
}

fn svg_or_problem(r: anyhow::Result<String>) -> String {
    match r {
        Ok(svg) => svg,
        Err(e) => format!("<p class=\"problem\">{}</p>", esc(&format!("{e:#}"))),
    }
}

fn latency_section(h: &mut String, d: &RunData, cols: &str) {
    h.push_str("<section id=\"latency\">\n<h2>Latency over time</h2>\n");
    h.push_str("<p class=\"note\">Log scale. Commits, checkpoints and pre-commits: one point per sample from the history; the other metrics: p50, p99 and max per one-second window of the latency log.</p>\n");
    let x_max = shared_x_max(d);
    let mut any = false;
    for metric in Metric::ALL {
        let per_mode: Vec<Vec<NamedPoints>> = d.modes.iter().map(|m| metric_series(m, metric)).collect();
        if per_mode.iter().all(|s| s.is_empty()) {
            continue;
        }
        any = true;
        let y = charts::log_range_ms(per_mode.iter().flatten().flat_map(|(_, p)| p.iter().map(|x| x.1)));
        let mut names: Vec<&'static str> = Vec::new();
        for (n, _) in per_mode.iter().flatten() {
            if !names.contains(n) {
                names.push(n);
            }
        }
        let legend: String = names
            .iter()
            .map(|n| {
                let (c, _) = style_of(n);
                swatch(c, 1.0, n)
            })
            .collect();
        let _ = writeln!(
            h,
            "<h3 id=\"latency-{m}\">{m}</h3>\n<div class=\"legend\">{legend}{}</div>",
            band_legend(),
            m = metric.name()
        );
        let id = format!("latency-{}", metric.name());
        grid(h, d, cols, &id, |i, m| {
            let series = &per_mode[i];
            if series.is_empty() {
                return "<div class=\"empty\">no samples</div>".to_string();
            }
            let layers: Vec<Layer> = series
                .iter()
                .map(|(n, p)| {
                    let (color, shape) = style_of(n);
                    Layer { color, shape, points: p.iter().map(|(x, v)| (*x, (*v as f64 / 1000.0).max(y.0))).collect() }
                })
                .collect();
            let s = Shading { faults: &m.timeline.faults, down: &m.timeline.down };
            svg_or_problem(charts::latency_over_time(&layers, x_max, y, s))
        });
    }
    if !any {
        h.push_str("<p class=\"empty\">No latency was recorded.</p>\n");
    }
    h.push_str("</section>\n");
}

const METRIC_COLORS: [plotters::style::RGBColor; 7] = [
    plotters::style::RGBColor(38, 139, 210),
    plotters::style::RGBColor(133, 153, 0),
    plotters::style::RGBColor(108, 113, 196),
    plotters::style::RGBColor(42, 161, 152),
    plotters::style::RGBColor(203, 75, 22),
    plotters::style::RGBColor(211, 54, 130),
    plotters::style::RGBColor(88, 88, 88),
];

fn metric_color(m: Metric) -> plotters::style::RGBColor {
    METRIC_COLORS[Metric::ALL.iter().position(|x| *x == m).unwrap_or(0)]
}

fn distribution_section(h: &mut String, d: &RunData, cols: &str) {
    h.push_str("<section id=\"distributions\">\n<h2>Latency distributions</h2>\n");
    h.push_str(
        "<p class=\"note\">Percentile curves of each metric over the whole job (HdrHistogram, log scales).</p>\n",
    );
    let totals: Vec<Vec<(Metric, hdrhistogram::Histogram<u64>)>> = d
        .modes
        .iter()
        .map(|m| {
            Metric::ALL
                .iter()
                .filter_map(|x| m.latencies.get(*x).filter(|s| s.count() > 0).map(|s| (*x, s.total())))
                .collect()
        })
        .collect();
    let max_count = totals.iter().flatten().map(|(_, t)| t.len()).max().unwrap_or(0);
    if max_count == 0 {
        h.push_str("<p class=\"empty\">No latency was recorded.</p>\n</section>\n");
        return;
    }
    let x_max = (max_count as f64).log10().ceil().clamp(1.0, 5.0);
    let y = charts::log_range_ms(totals.iter().flatten().flat_map(|(_, t)| [t.min(), t.max()]));
    let present: Vec<Metric> =
        Metric::ALL.into_iter().filter(|m| totals.iter().flatten().any(|(x, _)| x == m)).collect();
    let legend: String = present.iter().map(|m| swatch(metric_color(*m), 1.0, m.name())).collect();
    let _ = writeln!(h, "<div class=\"legend\">{legend}</div>");
    grid(h, d, cols, "distribution", |i, _| {
        let t = &totals[i];
        if t.is_empty() {
            return "<div class=\"empty\">no samples</div>".to_string();
        }
        let layers: Vec<Layer> = t
            .iter()
            .map(|(metric, hist)| Layer {
                color: metric_color(*metric),
                shape: Shape::Line,
                points: curve(hist, x_max, y.0),
            })
            .collect();
        let mut out = svg_or_problem(charts::percentiles(&layers, x_max, y));
        out.push_str("<table class=\"lat\"><tr><th>metric</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th><th>count</th></tr>");
        for (metric, hist) in t {
            let s = latency::Summary::of(hist);
            let f = |v: u64| charts::fmt_ms(v as f64 / 1000.0);
            let _ = write!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                metric.name(),
                f(s.p50),
                f(s.p90),
                f(s.p99),
                f(s.p99_9),
                f(s.max),
                s.count
            );
        }
        out.push_str("</table>");
        out
    });
    h.push_str("</section>\n");
}

/// A percentile curve: (log10(1 / (1 − q)), ms), up to the resolution the
/// sample count allows, ending at the maximum.
fn curve(hist: &hdrhistogram::Histogram<u64>, x_max: f64, y_lo: f64) -> Vec<(f64, f64)> {
    let n = hist.len().max(1) as f64;
    let x_end = n.log10().min(x_max);
    let mut out = Vec::new();
    let steps = 200;
    for i in 0..=steps {
        let x = x_end * f64::from(i) / f64::from(steps);
        let q = 1.0 - 10f64.powf(-x);
        out.push((x, (hist.value_at_quantile(q) as f64 / 1000.0).max(y_lo)));
    }
    out.push((x_end, (hist.max() as f64 / 1000.0).max(y_lo)));
    out
}

fn throughput_section(h: &mut String, d: &RunData, cols: &str) {
    h.push_str("<section id=\"throughput\">\n<h2>Throughput</h2>\n");
    let _ = writeln!(
        h,
        "<div class=\"legend\">{}{}{}</div>",
        swatch(charts::COMMITTED, 0.75, "committed records/s (commit finished, records of its committable)"),
        swatch(charts::ACKED, 1.0, "acknowledged records/s (produce acks)"),
        band_legend()
    );
    let x_max = shared_x_max(d);
    let y_max = d
        .modes
        .iter()
        .flat_map(|m| m.timeline.committed_per_s.iter().chain(&m.timeline.acked_per_s))
        .copied()
        .max()
        .unwrap_or(0)
        .max(1) as f64
        * 1.1;
    grid(h, d, cols, "throughput", |_, m| {
        let t = &m.timeline;
        if t.acked_per_s.is_empty() && t.committed_per_s.is_empty() {
            return "<div class=\"empty\">no records</div>".to_string();
        }
        let mut out = svg_or_problem(charts::throughput(
            &t.committed_per_s,
            &t.acked_per_s,
            x_max,
            y_max,
            Shading { faults: &t.faults, down: &t.down },
        ));
        if !t.has_commits {
            out.push_str("<p class=\"note\">No transactions: records are durable once acknowledged.</p>");
        }
        out
    });
    h.push_str("</section>\n");
}
