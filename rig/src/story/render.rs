//! A story in Markdown (`sinkhole explain`, a bundle's `story.md`, what one pastes into a
//! JIRA) and in HTML (the report's first screen): the same lines, in the same order.
use std::fmt::Write;

use sinkhole_base::utc::Utc;

use super::chain::{clock, Chain, Entry};
use super::Story;

/// `+16.521 s` after the chain's first timed entry.
fn offset(ms: u64, first: Option<u64>) -> String {
    match first {
        Some(f) if ms >= f => format!("+{:.3} s", (ms - f) as f64 / 1000.0),
        Some(f) => format!("-{:.3} s", (f - ms) as f64 / 1000.0),
        None => String::new(),
    }
}

fn when(e: &Entry, first: Option<u64>) -> (String, String) {
    match e.wall_ms {
        Some(ms) => (clock(ms), offset(ms, first)),
        None => ("after the job".to_string(), String::new()),
    }
}

fn date_of(s: &Story) -> String {
    s.chains
        .iter()
        .flat_map(|c| c.timeline.iter())
        .find_map(|e| e.wall_ms)
        .map(|ms| Utc::from_unix(ms / 1000).rfc3339()[..10].to_string())
        .unwrap_or_default()
}

/// A Markdown table cell: no pipe, no line break.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The story as Markdown.
pub fn markdown(s: &Story) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# What happened: {} — {}\n", s.scenario, s.mode);
    let _ = writeln!(
        o,
        "Run `{}`, Kafka {}, seed {}. Times are UTC{}; brokers' log times are read as UTC.\n",
        s.run_id,
        s.kafka,
        s.seed,
        match date_of(s) {
            d if d.is_empty() => String::new(),
            d => format!(", on {d}"),
        }
    );
    let _ = writeln!(o, "**{}** — {}\n", s.words, s.reason);
    if s.chains.is_empty() && s.behind.is_empty() {
        o.push_str("No anomaly to explain: the checker found nothing wrong with the data.\n");
    }
    for (n, c) in s.chains.iter().enumerate() {
        chain_markdown(&mut o, n + 1, c);
    }
    if !s.behind.is_empty() {
        o.push_str("## Also lost\n\n");
        for b in &s.behind {
            let _ = writeln!(o, "- {b}");
        }
        o.push('\n');
    }
    if !s.logs_read.is_empty() {
        let _ =
            writeln!(o, "Logs read: {}.", s.logs_read.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", "));
    }
    o
}

fn chain_markdown(o: &mut String, n: usize, c: &Chain) {
    let _ = writeln!(o, "## {n}. {}\n", c.txn.title());
    for f in &c.found {
        let _ = writeln!(o, "- {f}");
    }
    if !c.records.is_empty() {
        let _ = writeln!(o, "- records: {}", c.records.join("; "));
    }
    o.push('\n');
    if !c.timeline.is_empty() {
        let first = c.timeline.iter().find_map(|e| e.wall_ms);
        o.push_str("| time (UTC) | since | link | what | where |\n|---|---|---|---|---|\n");
        for e in &c.timeline {
            let (t, since) = when(e, first);
            let _ = writeln!(o, "| {t} | {since} | {} | {} | `{}` |", e.link.name(), cell(&e.text), e.cite);
        }
        o.push('\n');
    }
    if !c.missing.is_empty() {
        o.push_str("Missing links:\n");
        for m in &c.missing {
            let _ = writeln!(o, "- {m}");
        }
        o.push('\n');
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The stories of a run's modes as one HTML section (the report puts it first).
pub fn html(stories: &[Story]) -> String {
    let mut h = String::from("<section id=\"story\">\n<h2>What happened</h2>\n");
    h.push_str("<p class=\"note\">Each anomaly's chain: the records, the transaction, the faults that touched it, the requests and answers, the coordinator's view and the brokers' own log lines, on one clock (UTC). <code>sinkhole explain</code> prints the same in Markdown.</p>\n");
    for s in stories {
        let _ = writeln!(h, "<h3>{}: {}</h3>", esc(&s.mode), esc(&s.words));
        if s.chains.is_empty() && s.behind.is_empty() {
            h.push_str("<p>No anomaly to explain.</p>\n");
        }
        for (n, c) in s.chains.iter().enumerate() {
            chain_html(&mut h, n + 1, c);
        }
        if !s.behind.is_empty() {
            h.push_str("<p>Also lost:</p><ul>");
            for b in &s.behind {
                let _ = write!(h, "<li>{}</li>", esc(b));
            }
            h.push_str("</ul>\n");
        }
    }
    h.push_str("</section>\n");
    h
}

fn chain_html(h: &mut String, n: usize, c: &Chain) {
    let _ = writeln!(h, "<h4>{n}. {}</h4>\n<ul>", esc(&c.txn.title()));
    for f in &c.found {
        let _ = write!(h, "<li>{}</li>", esc(f));
    }
    if !c.records.is_empty() {
        let _ = write!(h, "<li>records: {}</li>", esc(&c.records.join("; ")));
    }
    h.push_str("</ul>\n");
    if !c.timeline.is_empty() {
        let first = c.timeline.iter().find_map(|e| e.wall_ms);
        h.push_str("<table class=\"story\"><tr><th>time (UTC)</th><th>since</th><th>link</th><th>what</th><th>where</th></tr>\n");
        for e in &c.timeline {
            let (t, since) = when(e, first);
            let _ = writeln!(
                h,
                "<tr class=\"{}\"><td>{t}</td><td>{since}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
                e.link.name().replace(' ', "-"),
                e.link.name(),
                esc(&e.text),
                esc(&e.cite)
            );
        }
        h.push_str("</table>\n");
    }
    if !c.missing.is_empty() {
        h.push_str("<p>Missing links:</p><ul class=\"missing\">");
        for m in &c.missing {
            let _ = write!(h, "<li>{}</li>", esc(m));
        }
        h.push_str("</ul>\n");
    }
}
