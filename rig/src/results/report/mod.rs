//! `results/<run-id>/report.html`: one self-contained page a person reads in
//! a browser — inline CSS and SVG, no script, nothing fetched.
//!
//! It is rebuilt from the results directory alone (`summary.json`,
//! `scenario.yaml`, each `<mode>/verdict.json`, `<mode>/history.jsonl`,
//! `<mode>/latency.hlog` or the run's `latency.hlog`), so `sinkhole check` on
//! a copied directory rewrites the same page. The modes of the run stand
//! side by side in every section, on shared scales:
//! - the verdict table (the terminal's columns) with each mode's reason, the
//!   scenario, cluster and job settings;
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
use sinkhole_workloads::model::{EventKind, SinkMode};

use crate::latency::{self, Latencies, Metric};
use crate::results::summary::{ModeSummary, Summary};
use crate::scenario::Scenario;
use crate::verdict::{Outcome, Verdict};

mod anomalies;
pub mod charts;
mod checkpoints;
pub mod data;
mod share;

#[cfg(test)]
mod tests;

use anomalies::anomaly_section;
pub use anomalies::fault_evidence;
use charts::{Layer, Shading, Shape};
use checkpoints::checkpoint_section;
use data::Timeline;

/// The page's name in the run directory.
pub const FILE_NAME: &str = "report.html";

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
pub fn load(run_dir: &Path) -> anyhow::Result<RunData> {
    let mut problems = Vec::new();
    let mut summary: Option<Summary> =
        read_opt(&run_dir.join("summary.json"), &mut problems, |t| serde_json::from_str(t).map_err(|e| anyhow!("{e}")));
    if let Some(s) = summary.as_mut() {
        s.upgrade();
    }
    let yaml_path = run_dir.join("scenario.yaml");
    let scenario_yaml = std::fs::read_to_string(&yaml_path).ok();
    let scenario = match &scenario_yaml {
        Some(_) => match crate::scenario::load(&yaml_path) {
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
        modes = SinkMode::ALL.into_iter().filter(|m| run_dir.join(m.name()).join("verdict.json").is_file()).collect();
    }
    if modes.is_empty() {
        return Err(anyhow!(
            "{}: no mode to report (no summary.json, scenario.yaml or <mode>/verdict.json)",
            run_dir.display()
        ));
    }
    let run_log = run_dir.join(latency::FILE_NAME);
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
    let modes = modes
        .into_iter()
        .map(|m| {
            let row = summary.as_ref().and_then(|s| s.modes.iter().find(|r| r.mode == m).cloned());
            load_mode(run_dir, m, row, run_intervals.as_deref())
        })
        .collect();
    Ok(RunData { dir: run_dir.to_path_buf(), summary, scenario, scenario_yaml, modes, problems })
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
    run_dir: &Path,
    mode: SinkMode,
    row: Option<ModeSummary>,
    run_intervals: Option<&[latency::Interval]>,
) -> ModeData {
    let dir = run_dir.join(mode.name());
    let mut problems = Vec::new();
    let verdict: Option<Verdict> =
        read_opt(&dir.join("verdict.json"), &mut problems, |t| serde_json::from_str(t).map_err(|e| anyhow!("{e}")));
    let hpath = dir.join("history.jsonl");
    let events = if hpath.is_file() {
        match crate::history::read(&hpath) {
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
    let mode_log = dir.join(latency::FILE_NAME);
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
    ModeData { mode, row, verdict, timeline, latencies, tid_checkpoints, problems }
}

/// Reads `run_dir` and writes `run_dir/report.html`; returns its path.
pub fn write_report(run_dir: &Path) -> anyhow::Result<PathBuf> {
    let data = load(run_dir)?;
    let html = render(&data);
    let path = run_dir.join(FILE_NAME);
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
.badge.pass{background:#2a8f3c}.badge.fail{background:#c62828}.badge.inconclusive{background:#c98a00}.badge.observed{background:#777}.badge.error{background:#7f0000}
tr.pass td.outcome{color:#1d6e2b;font-weight:600} tr.fail td.outcome{color:#c62828;font-weight:600}
tr.inconclusive td.outcome{color:#a06e00;font-weight:600} tr.observed td.outcome{color:#555}
tr.error td.outcome{color:#7f0000;font-weight:700}
.reasons li{margin:2px 0;font-size:13px}
.legend{font-size:12px;color:#444;margin:2px 0 6px}
.sw{display:inline-block;width:11px;height:11px;vertical-align:-1px;margin:0 3px 0 10px;border:1px solid #0002}
.empty{color:#888;font-size:13px;padding:30px 8px;text-align:center}
.clean{color:#1d6e2b;font-weight:600;font-size:13px} .anomaly{color:#c62828;font-weight:600}
.problem{color:#c62828;font-size:13px}
ol.log{font-size:12px;padding-left:22px;margin:4px 0} ol.log li{margin:1px 0}
table.examples{margin:6px 0;font-size:12px;width:100%}
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

fn mode_head(m: &ModeData) -> String {
    let outcome = outcome_of(m);
    match outcome {
        Some(o) => format!(
            "<div class=\"mode-head\">{} <span class=\"badge {}\">{}</span></div>",
            esc(m.mode.name()),
            o.name(),
            o.name()
        ),
        None => format!("<div class=\"mode-head\">{}</div>", esc(m.mode.name())),
    }
}

fn outcome_of(m: &ModeData) -> Option<Outcome> {
    m.row.as_ref().map(|r| r.outcome).or(m.verdict.as_ref().map(|v| v.outcome))
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

fn header(h: &mut String, d: &RunData, name: &str, run_id: &str) {
    let _ = writeln!(h, "<header>\n<h1>sinkhole: {}</h1>", esc(name));
    if let Some(desc) = d.scenario.as_ref().and_then(|s| s.description.as_deref()) {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(desc));
    }
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
    h.push_str("<table class=\"kv\">");
    for (k, v) in kv {
        let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    }
    h.push_str("</table>\n</header>\n");
    for p in &d.problems {
        let _ = writeln!(h, "<p class=\"problem\">{}</p>", esc(p));
    }

    // The verdict table: the terminal's columns.
    h.push_str("<section id=\"verdict\">\n<h2>Verdict</h2>\n<table class=\"verdict\">\n<tr>");
    for c in ["mode", "records", "committed", "lost", "duplicated", "job s", "committed/s", "outcome", "expected"] {
        let _ = write!(h, "<th>{c}</th>");
    }
    h.push_str("</tr>\n");
    let rows: Vec<ModeSummary> = d
        .modes
        .iter()
        .filter_map(|m| {
            m.row.clone().or_else(|| m.verdict.as_ref().map(|v| crate::results::summary::summarize(v, None)))
        })
        .collect();
    for r in &rows {
        let expected = match r.expected_met {
            Some(true) => format!("{} (met)", r.expected),
            Some(false) => format!("{} (NOT met)", r.expected),
            None => r.expected.clone(),
        };
        let counted = |n: u64| if r.checked { n.to_string() } else { "-".to_string() };
        let _ = writeln!(
            h,
            "<tr class=\"{o}\"><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1}</td><td class=\"num\">{}</td><td class=\"outcome\">{o}</td><td>{}</td></tr>",
            esc(r.mode.name()),
            r.counts.expected,
            counted(r.counts.committed),
            counted(r.counts.lost),
            counted(r.counts.duplicated),
            r.wall_ms as f64 / 1000.0,
            counted(r.committed_per_sec()),
            esc(&expected),
            o = r.outcome.name(),
        );
    }
    h.push_str("</table>\n<ul class=\"reasons\">\n");
    for r in &rows {
        let _ = writeln!(h, "<li><b>{}</b>: {}</li>", esc(r.mode.name()), esc(&r.reason));
    }
    h.push_str("</ul>\n</section>\n");

    // Settings.
    h.push_str("<section id=\"settings\">\n<h2>Scenario and cluster</h2>\n");
    if let Some(s) = &d.scenario {
        h.push_str("<div class=\"kvs\">\n");
        let mut cluster = serde_json::to_value(&s.cluster).unwrap_or_default();
        if let Some(o) = cluster.as_object_mut() {
            // Shown as a table of its own.
            o.remove("broker_config");
        }
        kv_table(h, "cluster", &cluster);
        let bc: serde_json::Map<String, serde_json::Value> = s
            .cluster
            .broker_config
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.to_string())))
            .collect();
        if !bc.is_empty() {
            kv_table(h, "broker config", &serde_json::Value::Object(bc));
        }
        kv_table(h, "topic", &serde_json::to_value(&s.topic).unwrap_or_default());
        kv_table(h, "job", &serde_json::to_value(&s.job).unwrap_or_default());
        let ex: serde_json::Map<String, serde_json::Value> = s
            .modes
            .iter()
            .map(|m| {
                (m.name().to_string(), serde_json::Value::String(crate::verdict::expectation_text(s.expect.get(m))))
            })
            .collect();
        kv_table(h, "expected", &serde_json::Value::Object(ex));
        h.push_str("</div>\n");
        if !s.faults.is_empty() {
            let side_by_side = d.summary.as_ref().is_some_and(|s| s.side_by_side);
            h.push_str(
                "<h3>faults</h3>\n<table><tr><th>name</th><th>kind</th><th>target</th><th>when</th><th>duration</th>",
            );
            if side_by_side {
                h.push_str("<th>fires</th>");
            }
            h.push_str("</tr>\n");
            for (i, f) in s.faults.iter().enumerate() {
                let kind = serde_json::to_value(f.kind.kind())
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default();
                let name = f.name.clone().unwrap_or_else(|| format!("{kind}-{i}"));
                let fires = if side_by_side { format!("<td>{}</td>", esc(&fires(d, f, &name))) } else { String::new() };
                let _ = writeln!(
                    h,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{fires}</tr>",
                    esc(&name),
                    esc(&kind),
                    esc(&f
                        .kind
                        .target()
                        .map(|t| compact(&serde_json::to_value(t).unwrap_or_default()))
                        .unwrap_or_else(|| "default".into())),
                    esc(&compact(&serde_json::to_value(f.when).unwrap_or_default())),
                    esc(&f.duration_ms.map(|d| format!("{d} ms")).unwrap_or_else(|| "-".into())),
                );
            }
            h.push_str("</table>\n");
        }
    }
    if let Some(y) = &d.scenario_yaml {
        let _ = writeln!(h, "<details><summary>scenario.yaml</summary><pre>{}</pre></details>", esc(y));
    }
    h.push_str("</section>\n");
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

/// Side by side: whether a fault fired per mode or once for all, and for a
/// cluster fault that fired, which mode's event or clock set it off.
fn fires(d: &RunData, f: &crate::scenario::FaultSpec, name: &str) -> String {
    if f.job_scoped() {
        return "per mode, on its own events".into();
    }
    let by = d.modes.iter().filter_map(|m| m.verdict.as_ref()).find_map(|v| {
        let r = v.faults.iter().find(|r| r.name == name)?;
        r.effect.start()?.trigger()?.mode.clone()
    });
    match by {
        Some(m) => format!("once for all modes, set off by {m}"),
        None => "once for all modes".into(),
    }
}

/// A value as one short line: strings bare, the rest as compact JSON.
fn compact(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "-".into(),
        v => v.to_string(),
    }
}

fn kv_table(h: &mut String, caption: &str, v: &serde_json::Value) {
    let _ = write!(h, "<table><caption>{}</caption>", esc(caption));
    if let Some(o) = v.as_object() {
        for (k, v) in o {
            let _ = write!(h, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&compact(v)));
        }
    }
    h.push_str("</table>\n");
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
