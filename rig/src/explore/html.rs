//! `explore.html`: the campaign on one self-contained page (no script, no external file),
//! written beside `explore.json` after every run. What a person opens in the morning: the
//! budget and why the campaign stopped, the findings (each with its file, its seed and the
//! command that replays it), the coverage as a grid fault kind × trigger kind (runs with a
//! finding over runs with that kind at that trigger, the cells with a finding marked), the
//! protocol states (each with the runs that reached it, the runs aimed at it, and the states
//! never reached set apart), then every run with its schedule, the state it was aimed at, the
//! states it reached and each mode's verdict in words.
use std::collections::BTreeSet;
use std::fmt::Write as _;

use sinkhole_base::rundir::RunDir;
use sinkhole_checker::verdict::Outcome;

use super::report::{Explored, Stop};
use crate::matrix::{human_duration, rel_link, PAGE_CSS};
use crate::results::report::esc;

/// The file's name in the campaign's directory.
pub const HTML_FILE: &str = "explore.html";

const CSS: &str = r#"
td.hit{background:#fbe0e0;color:#b71c1c;font-weight:700}
td.tried{background:#dff2e1;color:#1d6e2b}
td.none{color:#aaa}
span.fail{color:#b71c1c;font-weight:700} span.inconclusive{color:#8a5d00} span.pass{color:#1d6e2b}
span.error{color:#8e24aa;font-weight:700} span.observed{color:#444}
code{font-size:12px}
"#;

/// The page.
pub fn render_html(e: &Explored) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>sinkhole explore {}</title>\
         <style>{PAGE_CSS}{CSS}</style></head><body>\n<h1>sinkhole explore: {}</h1>\n",
        esc(&e.scenario),
        esc(&e.scenario)
    );
    if !e.merged_from.is_empty() {
        let from: Vec<String> = e.merged_from.iter().map(|d| esc(&d.display().to_string())).collect();
        let _ = writeln!(h, "<p class=\"meta\">{} shards merged: {}</p>", from.len(), from.join(", "));
    } else if let Some(s) = e.shard {
        let _ = writeln!(h, "<p class=\"meta\">shard {s} of a campaign across hosts</p>");
    }
    let stop = match e.stop {
        Stop::Running => "still running (written after every run)",
        Stop::Runs => "every run of the budget made",
        Stop::Time => "the time budget ran out",
        Stop::Found => "every mutant judged was found (--until-found)",
    };
    let _ = writeln!(
        h,
        "<p class=\"meta\">{} · modes {} · {} of at most {} runs in {} (budget {}) · {stop} · seeds from {} · \
         {} finding(s), {} inconclusive mode run(s) (the rig's own distortion, never findings), {} rig error(s)</p>",
        esc(&e.source.display().to_string()),
        esc(&e.modes.join(", ")),
        e.runs_done,
        e.runs_budget,
        human_duration(e.wall_ms),
        human_duration(e.time_budget_ms),
        e.first_seed,
        e.findings.len(),
        e.inconclusive,
        e.rig_errors
    );
    if let Some(m) = super::report::memory_line(e) {
        let _ = writeln!(h, "<p class=\"meta\">{}</p>", esc(&m));
    }
    findings(&mut h, e);
    detection(&mut h, e);
    coverage(&mut h, e);
    states(&mut h, e);
    runs(&mut h, e);
    h.push_str("</body></html>\n");
    h
}

fn findings(h: &mut String, e: &Explored) {
    h.push_str("<h2>Findings</h2>\n");
    if e.findings.is_empty() {
        h.push_str("<p>None: no mode failed its expectation in any run.</p>\n");
        return;
    }
    h.push_str(
        "<table><tr><th>#</th><th>signature</th><th>verdict</th><th>faults</th><th>runs</th><th>replay</th></tr>\n",
    );
    for f in &e.findings {
        let shrunk = match (&f.not_shrunk, f.shrink_runs) {
            (Some(why), _) => format!("not shrunk: {why}"),
            (None, n) => format!("shrunk in {n} run(s)"),
        };
        // Saved as the campaign's directory joined with `found/NN-….yaml`: where a replay finds it.
        let file = &f.path;
        let job = if f.job.is_empty() { String::new() } else { format!("<br>job <code>{}</code>", esc(&f.job)) };
        let _ = writeln!(
            h,
            "<tr><td>{:02}</td><td>{}</td><td><span class=\"fail\">{}</span></td><td>{} → {} ({}){job}</td><td>{}</td>\
             <td><a href=\"{}\">{}</a><br><code>sinkhole run {} --seed {}</code>{}</td></tr>",
            f.n,
            esc(&f.signature.text()),
            esc(&f.words),
            f.faults_before,
            f.faults_after,
            esc(&shrunk),
            f.runs.len(),
            esc(&rel_link(&e.dir, file)),
            esc(&f.path.display().to_string()),
            esc(&file.display().to_string()),
            f.seed,
            f.replay.as_ref().map(|r| format!("<br>{}", esc(&super::report::replay_words(r)))).unwrap_or_default()
        );
    }
    h.push_str("</table>\n");
}

/// Each mode judged and how long the campaign took to find it: a mutant's row is the
/// exploration's detection power, a faithful mode's should say "no finding".
fn detection(h: &mut String, e: &Explored) {
    h.push_str("<h2>Detection</h2>\n<table><tr><th>mode</th><th>first finding</th></tr>\n");
    for d in &e.detection {
        let class = if d.first.is_some() { "hit" } else { "none" };
        let _ = writeln!(h, "<tr><td>{}</td><td class=\"{class}\">{}</td></tr>", esc(&d.mode), esc(&d.words()));
    }
    h.push_str("</table>\n");
}

fn coverage(h: &mut String, e: &Explored) {
    h.push_str(
        "<h2>Coverage</h2>\n<p class=\"meta\">runs with a finding / runs with the fault kind at that trigger</p>\n",
    );
    if e.coverage.is_empty() {
        h.push_str("<p>No fault ran yet.</p>\n");
        return;
    }
    let kinds: BTreeSet<&str> = e.coverage.iter().map(|c| c.fault_kind.as_str()).collect();
    let triggers: BTreeSet<&str> = e.coverage.iter().map(|c| c.trigger.as_str()).collect();
    h.push_str("<table><tr><th>fault kind</th>");
    for t in &triggers {
        let _ = write!(h, "<th>{}</th>", esc(t));
    }
    h.push_str("</tr>\n");
    for k in &kinds {
        let _ = write!(h, "<tr><th>{}</th>", esc(k));
        for t in &triggers {
            match e.coverage.iter().find(|c| c.fault_kind == *k && c.trigger == *t) {
                Some(c) => {
                    let class = if c.hits > 0 { "hit" } else { "tried" };
                    let _ = write!(h, "<td class=\"{class}\">{}/{}</td>", c.hits, c.runs);
                }
                None => h.push_str("<td class=\"none\">-</td>"),
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

/// Every protocol state: reached (with a finding marked) or never reached, and how often the
/// campaign aimed at it.
fn states(h: &mut String, e: &Explored) {
    h.push_str(
        "<h2>Protocol states</h2>\n<p class=\"meta\">runs with a finding / runs where a mode reached the state; \
         a state never reached is one no bug needing it could have shown in</p>\n",
    );
    if e.states.is_empty() {
        h.push_str("<p>None recorded.</p>\n");
        return;
    }
    let never = e.states.iter().filter(|c| c.runs == 0).count();
    let _ =
        writeln!(h, "<p>{} of {} states reached, {never} never reached.</p>", e.states.len() - never, e.states.len());
    h.push_str("<table><tr><th>state</th><th>runs</th><th>aimed at in</th><th>reached when</th></tr>\n");
    for c in &e.states {
        let (class, runs) = match (c.runs, c.hits) {
            (0, _) => ("none", "never reached".to_string()),
            (r, 0) => ("tried", format!("0/{r}")),
            (r, k) => ("hit", format!("{k}/{r}")),
        };
        let _ = writeln!(
            h,
            "<tr><th><code>{}</code></th><td class=\"{class}\">{runs}</td><td>{}</td><td>{}</td></tr>",
            esc(c.state.name()),
            c.aimed,
            esc(c.state.when())
        );
    }
    h.push_str("</table>\n");
}

fn runs(h: &mut String, e: &Explored) {
    h.push_str(
        "<h2>Runs</h2>\n<table><tr><th>run</th><th>seed</th><th>job</th><th>schedule</th><th>states reached</th><th>verdicts</th></tr>\n",
    );
    for r in &e.runs {
        let verdicts = match &r.error {
            Some(err) => format!("<span class=\"error\">rig error: {}</span>", esc(err)),
            None => r
                .modes
                .iter()
                .map(|m| format!("{}: <span class=\"{}\">{}</span>", esc(&m.mode), class(m.outcome), esc(&m.words)))
                .collect::<Vec<_>>()
                .join("<br>"),
        };
        let schedule = if r.schedule.is_empty() { "no fault".to_string() } else { r.schedule.join(", ") };
        let left_out = match (r.refused, r.spaced) {
            (0, 0) => String::new(),
            (a, b) => format!(" <small>({a} refused, {b} spaced)</small>"),
        };
        let aimed = match r.aimed_at {
            Some(s) => {
                format!("<br><small>aimed at <code>{}</code> ({} drawn left out)</small>", esc(s.name()), r.cleared)
            }
            None => String::new(),
        };
        let states: Vec<String> = r.states().iter().map(|s| esc(s.name())).collect();
        let run = match &r.dir {
            Some(d) => format!("<a href=\"{}\">{}</a>", esc(&rel_link(&e.dir, &RunDir::at(d).report())), r.i),
            None => r.i.to_string(),
        };
        let _ = writeln!(
            h,
            "<tr><td>{run}</td><td>{}</td><td><code>{}</code></td><td><code>{}</code>{left_out}{aimed}</td><td><small>{}</small></td><td>{verdicts}</td></tr>",
            r.seed,
            esc(if r.shape.is_empty() { "as written" } else { &r.shape }),
            esc(&schedule),
            states.join(", ")
        );
    }
    h.push_str("</table>\n");
}

fn class(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Fail => "fail",
        Outcome::Inconclusive => "inconclusive",
        Outcome::Error => "error",
        Outcome::Observed => "observed",
    }
}
