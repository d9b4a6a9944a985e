//! The pages `sinkhole serve` writes itself: the index (runs newest first,
//! the matrices, forms to compare two runs of a scenario), a directory's
//! listing, the diff of two runs, and error messages. Plain HTML and inline
//! CSS; every text from the results is escaped.
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use super::discover::{Found, RunEntry};
use crate::matrix::human_duration;
use crate::results::report::{esc, fault_evidence};
use crate::results::summary::{ModeSummary, Summary};
use sinkhole_base::rundir::{names, MatrixDir, RunDir};
use sinkhole_checker::verdict::Verdict;
use sinkhole_checker::Counts;
use sinkhole_history::fault::FaultRecord;
use sinkhole_model::anomaly::{Anomaly, Renderer, Show};

const CSS: &str = r#"
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:16px 24px;color:#222;background:#fafafa}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:24px 0 8px;border-bottom:1px solid #ccc;padding-bottom:3px}
h3{font-size:15px;margin:16px 0 6px}
.meta{color:#555;font-size:13px}
table{border-collapse:collapse;font-size:13px;background:#fff;margin:4px 0}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0} td.num{text-align:right;font-variant-numeric:tabular-nums}
.o{display:inline-block;padding:1px 6px;margin:1px 2px;border-radius:8px;font-size:12px;font-weight:600;white-space:nowrap}
.o.pass{background:#dff2e1;color:#1d6e2b}.o.fail{background:#fbe0e0;color:#b71c1c}
.o.inconclusive{background:#fff3d6;color:#8a5d00}.o.observed{background:#eee;color:#444}.o.error{background:#f3e0f7;color:#8e24aa}
td.changed{background:#fff7d1}
form{margin:4px 0;font-size:13px} select{font-size:12px;max-width:26em}
ul.ev{margin:0;padding-left:16px;font-size:12px}
.problem{color:#c62828;font-size:13px}
"#;

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}</style></head><body>\n{body}<p class=\"meta\">sinkhole {} ({})</p>\n</body></html>\n",
        esc(title),
        esc(sinkhole_base::provenance::VERSION),
        esc(sinkhole_base::provenance::GIT_COMMIT)
    )
}

/// A short page saying what went wrong.
pub fn message(title: &str, text: &str) -> String {
    page(
        &format!("sinkhole: {title}"),
        &format!("<h1>{}</h1>\n<p>{}</p>\n<p><a href=\"/\">all runs</a></p>\n", esc(title), esc(text)),
    )
}

/// `/a b/c` → `/a%20b/c`: a path of the results directory as a URL path.
pub fn href(rel: &str) -> String {
    let mut out = String::from("/");
    for ch in rel.chars() {
        match ch {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '-' | '_' | '.' | '~' | '/' => out.push(ch),
            c => {
                let mut b = [0u8; 4];
                for byte in c.encode_utf8(&mut b).bytes() {
                    let _ = write!(out, "%{byte:02X}");
                }
            }
        }
    }
    out
}

/// A mode's verdict in words (`legacy: LOST 4002 (expected)`), coloured by
/// the outcome (expected or not); the reason on hover.
fn badge(m: &ModeSummary) -> String {
    format!(
        "<span class=\"o {}\" title=\"{}\">{}: {}</span>",
        m.outcome.name(),
        esc(&m.reason),
        esc(m.mode.name()),
        esc(&m.words())
    )
}

fn dir_href(rel: &str) -> String {
    if rel.is_empty() {
        "/".to_string()
    } else {
        format!("{}/", href(rel))
    }
}

/// `/`: every run, newest first; the compare forms; the matrices.
pub fn index(root: &Path, found: &Found) -> String {
    let mut b = String::new();
    let _ = writeln!(b, "<h1>sinkhole results</h1>\n<p class=\"meta\">{}</p>", esc(&root.display().to_string()));
    for p in &found.problems {
        let _ = writeln!(b, "<p class=\"problem\">{}</p>", esc(p));
    }
    let _ = writeln!(b, "<h2>Runs ({})</h2>", found.runs.len());
    if found.runs.is_empty() {
        b.push_str("<p>No run here yet (a run is a directory with a summary.json).</p>\n");
    } else {
        b.push_str("<table id=\"runs\"><tr><th>started (UTC)</th><th>run</th><th>scenario</th><th>modes</th><th>Kafka</th><th>seed</th><th>wall time</th><th>exit</th><th>sinkhole</th></tr>\n");
        for r in &found.runs {
            let s = &r.summary;
            let modes: String = s.modes.iter().map(badge).collect();
            let report = format!("{}report.html", dir_href(&r.rel));
            let _ = writeln!(
                b,
                "<tr class=\"run\"><td>{}</td><td><a href=\"{}\">{}</a> <small>(<a href=\"{}\">files</a>)</small></td><td>{}</td><td>{modes}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                esc(&r.started),
                esc(&report),
                esc(&s.run_id),
                esc(&dir_href(&r.rel)),
                esc(&s.scenario),
                esc(&s.kafka),
                s.seed,
                human_duration(r.wall_ms),
                s.exit_code,
                esc(&r.provenance.version)
            );
        }
        b.push_str("</table>\n");
    }
    compare_forms(&mut b, &found.runs);
    let _ = writeln!(b, "<h2>Matrices ({})</h2>", found.matrices.len());
    if found.matrices.is_empty() {
        b.push_str("<p>No matrix here (a matrix is a directory with a matrix.json).</p>\n");
    } else {
        b.push_str("<table id=\"matrices\"><tr><th>started (UTC)</th><th>matrix</th><th>cells</th><th>as expected</th><th>NOT as expected</th><th>inconclusive</th><th>observed</th><th>rig errors</th><th>wall time</th><th>exit</th><th>state</th></tr>\n");
        for e in &found.matrices {
            let m = &e.matrix;
            let t = &m.totals;
            let state = match (&m.shard, m.merged_from.len(), m.complete, m.interrupted) {
                (_, _, _, true) => "interrupted".to_string(),
                (Some(sh), _, c, _) => format!("shard {}/{}{}", sh.index, sh.count, if c { "" } else { ", partial" }),
                (None, n, c, _) if n > 0 => format!("merged from {n} shards{}", if c { "" } else { ", partial" }),
                (None, _, true, _) => "complete".to_string(),
                (None, _, false, _) => "running or partial".to_string(),
            };
            let _ = writeln!(
                b,
                "<tr class=\"matrix\"><td>{}</td><td><a href=\"{}{}\">{}</a> <small>(<a href=\"{}\">files</a>)</small></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                esc(&m.started),
                esc(&dir_href(&e.rel)),
                names::MATRIX_HTML,
                esc(&m.matrix_id),
                esc(&dir_href(&e.rel)),
                t.cells,
                t.pass,
                t.fail,
                t.inconclusive,
                t.observed,
                t.cells_error + t.error,
                human_duration(m.wall_ms),
                m.exit_code,
                esc(&state)
            );
        }
        b.push_str("</table>\n");
    }
    page("sinkhole results", &b)
}

/// One form per scenario with two runs or more: pick two, see the diff (a
/// plain GET form; the newest two are chosen).
fn compare_forms(b: &mut String, runs: &[RunEntry]) {
    let mut by: BTreeMap<&str, Vec<&RunEntry>> = BTreeMap::new();
    for r in runs {
        by.entry(r.summary.scenario.as_str()).or_default().push(r);
    }
    by.retain(|_, v| v.len() > 1);
    if by.is_empty() {
        return;
    }
    b.push_str("<h2>Compare two runs of a scenario</h2>\n");
    for (scenario, rs) in by {
        let options = |selected: usize| {
            rs.iter()
                .enumerate()
                .map(|(i, r)| {
                    format!(
                        "<option value=\"{}\"{}>{} (seed {}, Kafka {})</option>",
                        esc(&r.rel),
                        if i == selected { " selected" } else { "" },
                        esc(&r.summary.run_id),
                        r.summary.seed,
                        esc(&r.summary.kafka)
                    )
                })
                .collect::<String>()
        };
        let _ = writeln!(
            b,
            "<form action=\"/-/diff\" method=\"get\"><b>{}</b>: <select name=\"a\">{}</select> vs <select name=\"b\">{}</select> <button type=\"submit\">diff</button> <a class=\"newest\" href=\"/-/diff?a={}&amp;b={}\">newest two</a></form>",
            esc(scenario),
            options(1),
            options(0),
            esc(&query_value(&rs[1].rel)),
            esc(&query_value(&rs[0].rel))
        );
    }
}

fn query_value(rel: &str) -> String {
    href(rel).trim_start_matches('/').to_string()
}

/// A directory of the results: its entries, directories first; a run's
/// directory leads with its report.
pub fn listing(root: &Path, dir: &Path) -> String {
    let rel = dir.strip_prefix(root).map(|p| p.to_string_lossy().replace('\\', "/")).unwrap_or_default();
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<h1>/{}</h1>\n<p><a href=\"/\">all runs</a>{}</p>",
        esc(&rel),
        if rel.is_empty() { "" } else { " · <a href=\"../\">up</a>" }
    );
    if RunDir::at(dir).report().is_file() {
        let _ = writeln!(b, "<p><a href=\"{0}\"><b>{0}</b></a>: the run's report</p>", names::REPORT);
    }
    if MatrixDir::at(dir).html().is_file() {
        let _ = writeln!(b, "<p><a href=\"{0}\"><b>{0}</b></a>: the matrix</p>", names::MATRIX_HTML);
    }
    let mut entries: Vec<(bool, String, u64)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name.starts_with('.') {
                        return None;
                    }
                    let meta = std::fs::metadata(e.path()).ok()?;
                    Some((meta.is_dir(), name, meta.len()))
                })
                .collect()
        })
        .unwrap_or_default();
    entries.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    b.push_str("<table id=\"files\"><tr><th>name</th><th>bytes</th></tr>\n");
    for (is_dir, name, len) in entries {
        let link = format!("{}{}", href(&name).trim_start_matches('/'), if is_dir { "/" } else { "" });
        let _ = writeln!(
            b,
            "<tr><td><a href=\"{}\">{}{}</a></td><td class=\"num\">{}</td></tr>",
            esc(&link),
            esc(&name),
            if is_dir { "/" } else { "" },
            if is_dir { String::new() } else { len.to_string() }
        );
    }
    b.push_str("</table>\n");
    page(&format!("sinkhole: /{rel}"), &b)
}

/// A line of the diff's run table: how to read it from a summary.
type SummaryField = dyn Fn(&Summary) -> String;

/// A run as the diff reads it: the summary and each mode's verdict.
struct Side {
    rel: String,
    summary: Option<Summary>,
    verdicts: BTreeMap<String, Verdict>,
    provenance: sinkhole_base::provenance::Provenance,
}

fn side(root: &Path, dir: &Path) -> Side {
    let run = RunDir::at(dir);
    let text = std::fs::read_to_string(run.summary()).unwrap_or_default();
    let mut summary: Option<Summary> = serde_json::from_str(&text).ok();
    if let Some(s) = summary.as_mut() {
        s.upgrade();
    }
    let mut verdicts = BTreeMap::new();
    for m in summary.iter().flat_map(|s| s.modes.iter()) {
        let p = run.mode(m.mode.name()).verdict();
        if let Some(v) = std::fs::read_to_string(&p).ok().and_then(|t| serde_json::from_str::<Verdict>(&t).ok()) {
            verdicts.insert(m.mode.name().to_string(), v);
        }
    }
    Side {
        rel: dir.strip_prefix(root).map(|p| p.to_string_lossy().into_owned()).unwrap_or_default(),
        summary,
        verdicts,
        provenance: sinkhole_base::provenance::Provenance::of_json(&text)
            .unwrap_or_else(|| sinkhole_base::provenance::Provenance::of_json("{}").expect("an object")),
    }
}

fn cell(a: &str, b: &str) -> String {
    let class = if a == b { "" } else { " class=\"changed\"" };
    format!("<td{class}>{}</td><td{class}>{}</td>", esc(a), esc(b))
}

fn num_row(h: &mut String, name: &str, a: Option<u64>, b: Option<u64>) {
    let s = |x: Option<u64>| x.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
    let delta = match (a, b) {
        (Some(x), Some(y)) if x != y => format!("{:+}", y as i128 - x as i128),
        _ => String::new(),
    };
    let class = if a == b { "" } else { " class=\"num changed\"" };
    let _ = writeln!(
        h,
        "<tr><th>{}</th><td{class}>{}</td><td{class}>{}</td><td class=\"num\">{delta}</td></tr>",
        esc(name),
        s(a),
        s(b)
    );
}

fn faults_list(faults: &[FaultRecord], name: &str) -> String {
    let Some(f) = faults.iter().find(|f| f.name == name) else { return "<i>not in this run</i>".to_string() };
    let mut out = format!(
        "{} · {} · {}",
        esc(&f.kind),
        if f.fired { "fired" } else { "did not fire" },
        if f.confirmed { "confirmed" } else { "not confirmed" }
    );
    let ev = fault_evidence(&f.effect);
    if !ev.is_empty() {
        out.push_str("<ul class=\"ev\">");
        for l in ev {
            let _ = write!(out, "<li>{}</li>", esc(&l));
        }
        out.push_str("</ul>");
    }
    out
}

/// `/-/diff?a=&b=`: two runs side by side — the runs, then per mode the
/// outcome, the counts with their difference, the p99 of every latency
/// metric, and the faults' effects.
pub fn diff(root: &Path, a: &Path, b: &Path) -> String {
    let (a, b) = (side(root, a), side(root, b));
    let mut h = String::new();
    let name = |s: &Side| s.summary.as_ref().map(|x| x.scenario.clone()).unwrap_or_default();
    let _ = writeln!(h, "<h1>diff: {}</h1>\n<p><a href=\"/\">all runs</a></p>", esc(&name(&a)));
    if name(&a) != name(&b) {
        let _ = writeln!(
            h,
            "<p class=\"problem\">These are runs of two scenarios ({} and {}): their counts compare different tests.</p>",
            esc(&name(&a)),
            esc(&name(&b))
        );
    }
    runs_table(&mut h, &a, &b);
    for mode in &modes_of(&a, &b) {
        mode_diff(&mut h, mode, &a, &b);
    }
    page(&format!("sinkhole diff: {}", name(&a)), &h)
}

/// The two runs: what summary.json says of each, the rig that ran them, their reports.
fn runs_table(h: &mut String, a: &Side, b: &Side) {
    h.push_str("<table id=\"runs\"><tr><th></th><th>A</th><th>B</th></tr>\n");
    let field = |s: &Side, f: &dyn Fn(&Summary) -> String| s.summary.as_ref().map(f).unwrap_or_default();
    let rows: [(&str, &SummaryField); 7] = [
        ("run", &|s| s.run_id.clone()),
        ("Kafka", &|s| s.kafka.clone()),
        ("seed", &|s| s.seed.to_string()),
        ("started", &|s| {
            s.started.clone().or_else(|| super::discover::started_from_run_id(&s.run_id)).unwrap_or_default()
        }),
        ("wall time", &|s| human_duration(s.wall_ms.unwrap_or_else(|| s.modes.iter().map(|m| m.wall_ms).sum()))),
        ("exit code", &|s| s.exit_code.to_string()),
        ("scenario file", &|s| s.source.display().to_string()),
    ];
    for (k, f) in rows {
        let _ = writeln!(h, "<tr><th>{k}</th>{}</tr>", cell(&field(a, f), &field(b, f)));
    }
    let _ = writeln!(h, "<tr><th>sinkhole</th>{}</tr>", cell(&a.provenance.rig(), &b.provenance.rig()));
    let _ = writeln!(
        h,
        "<tr><th>files</th><td><a href=\"{}\">{}</a></td><td><a href=\"{}\">{}</a></td></tr>\n</table>",
        esc(&format!("{}report.html", dir_href(&a.rel))),
        esc(&a.rel),
        esc(&format!("{}report.html", dir_href(&b.rel))),
        esc(&b.rel)
    );
}

/// The modes either run ran, A's first, in their order.
fn modes_of(a: &Side, b: &Side) -> Vec<String> {
    let mut modes: Vec<String> = Vec::new();
    for s in [a, b] {
        for m in s.summary.iter().flat_map(|x| x.modes.iter()) {
            if !modes.contains(&m.mode.name().to_string()) {
                modes.push(m.mode.name().to_string());
            }
        }
    }
    modes
}

/// One mode in both runs: outcome and reason, counts, latency, faults.
fn mode_diff(h: &mut String, mode: &str, a: &Side, b: &Side) {
    let row = |s: &Side| s.summary.as_ref().and_then(|x| x.modes.iter().find(|m| m.mode.name() == mode).cloned());
    let (ra, rb) = (row(a), row(b));
    let (va, vb) = (a.verdicts.get(mode), b.verdicts.get(mode));
    let _ = writeln!(h, "<h2 id=\"mode-{0}\">{0}</h2>", esc(mode));
    let outcome = |r: &Option<ModeSummary>| r.as_ref().map(badge).unwrap_or_else(|| "-".into());
    let reason = |r: &Option<ModeSummary>| r.as_ref().map(|m| m.reason.clone()).unwrap_or_default();
    let _ = writeln!(
        h,
        "<table class=\"outcome\"><tr><th></th><th>A</th><th>B</th></tr><tr><th>verdict</th><td>{}</td><td>{}</td></tr><tr><th>reason</th>{}</tr></table>",
        outcome(&ra),
        outcome(&rb),
        cell(&reason(&ra), &reason(&rb))
    );
    counts_diff(h, &ra, &rb);
    latency_diff(h, va, vb);
    faults_diff(h, va, vb);
}

/// The counts of each side (of an output that was checked) and B − A.
pub(crate) fn counts_diff(h: &mut String, ra: &Option<ModeSummary>, rb: &Option<ModeSummary>) {
    h.push_str("<h3>Counts</h3>\n<table class=\"counts\"><tr><th>count</th><th>A</th><th>B</th><th>B − A</th></tr>\n");
    let counted = |r: &Option<ModeSummary>| r.as_ref().filter(|m| m.checked).map(|m| m.counts);
    let (ca, cb) = (counted(ra), counted(rb));
    let of = |c: &Option<Counts>, f: &dyn Fn(&Counts) -> u64| c.as_ref().map(f);
    num_row(h, "expected", of(&ca, &|c| c.expected), of(&cb, &|c| c.expected));
    num_row(h, "committed", of(&ca, &|c| c.committed), of(&cb, &|c| c.committed));
    // The anomaly table's `compare` renderer, by the names the counts are stored under.
    for &a in Anomaly::ALL {
        let show = a.shown(Renderer::Compare);
        let (na, nb) = (of(&ca, &|c| c.get(a)), of(&cb, &|c| c.get(a)));
        if show == Show::Always || [na, nb].into_iter().flatten().any(|n| show.shows(n)) {
            num_row(h, a.field(), na, nb);
        }
    }
    h.push_str("</table>\n");
}

/// The p99 of every latency metric either side recorded, and B − A.
fn latency_diff(h: &mut String, va: Option<&Verdict>, vb: Option<&Verdict>) {
    h.push_str("<h3>Latency p99 (µs)</h3>\n");
    let mut metrics: Vec<&String> = Vec::new();
    for v in [va, vb].into_iter().flatten() {
        for k in v.latency.keys() {
            if !metrics.contains(&k) {
                metrics.push(k);
            }
        }
    }
    if metrics.is_empty() {
        h.push_str("<p class=\"meta\">no latency recorded</p>\n");
    } else {
        h.push_str("<table class=\"latency\"><tr><th>metric</th><th>A</th><th>B</th><th>B − A</th></tr>\n");
        for k in metrics {
            let p99 = |v: Option<&Verdict>| v.and_then(|v| v.latency.get(k)).map(|s| s.p99);
            num_row(h, k, p99(va), p99(vb));
        }
        h.push_str("</table>\n");
    }
}

/// Each fault of either side, with what it did on each.
fn faults_diff(h: &mut String, va: Option<&Verdict>, vb: Option<&Verdict>) {
    h.push_str("<h3>Faults</h3>\n");
    let mut names: Vec<&str> = Vec::new();
    for v in [va, vb].into_iter().flatten() {
        for f in &v.faults {
            if !names.contains(&f.name.as_str()) {
                names.push(&f.name);
            }
        }
    }
    if names.is_empty() {
        h.push_str("<p class=\"meta\">no faults</p>\n");
        return;
    }
    h.push_str("<table class=\"faults\"><tr><th>fault</th><th>A</th><th>B</th></tr>\n");
    for n in names {
        let list =
            |v: Option<&Verdict>| v.map(|v| faults_list(&v.faults, n)).unwrap_or_else(|| "<i>no verdict</i>".into());
        let _ = writeln!(h, "<tr><th>{}</th><td>{}</td><td>{}</td></tr>", esc(n), list(va), list(vb));
    }
    h.push_str("</table>\n");
}
