//! The Anomalies section: what the checker counted on the output read with
//! read_committed (with its examples), what the job did, and the evidence
//! that each fault hit what it was meant to hit.
use std::fmt::Write as _;

use super::{esc, grid, RunData};

pub(super) fn anomaly_section(h: &mut String, d: &RunData, cols: &str) {
    h.push_str("<section id=\"anomalies\">\n<h2>Anomalies</h2>\n");
    h.push_str("<p class=\"note\">Counted by the checker on the output read with read_committed; examples name records, partitions, offsets, transactional ids and checkpoints (anomaly names after Jepsen's Kafka checker).</p>\n");
    grid(h, d, cols, "anomalies", |_, m| {
        let mut out = String::new();
        for p in &m.problems {
            let _ = write!(out, "<p class=\"problem\">{}</p>", esc(p));
        }
        let Some(v) = &m.verdict else {
            out.push_str("<p class=\"empty\">no verdict.json</p>");
            return out;
        };
        let c = &v.counts;
        if !v.checked {
            let _ = write!(out, "<p class=\"note\">The output was not checked: {}</p>", esc(&v.reason));
        } else {
            let anomalies = [
                ("lost", c.lost),
                ("duplicated", c.duplicated),
                ("unexpected", c.unexpected),
                ("nonmonotonic", c.nonmonotonic),
                ("aborted-read", c.aborted_read),
                ("torn-transaction", c.torn_transaction),
                ("uncommitted-tail", c.uncommitted_tail.max(v.uncommitted_tail.len() as u64)),
            ];
            if anomalies.iter().all(|(_, n)| *n == 0) {
                let _ = write!(
                    out,
                    "<p class=\"clean\">clean: no anomalies — {} of {} records committed exactly once</p>",
                    c.committed, c.expected
                );
            }
            out.push_str("<table class=\"counts\"><tr><th>count</th><th>value</th></tr>");
            let _ = write!(out, "<tr><td>expected</td><td class=\"num\">{}</td></tr>", c.expected);
            let _ = write!(out, "<tr><td>committed</td><td class=\"num\">{}</td></tr>", c.committed);
            for (k, n) in anomalies {
                let (name, num) = if n > 0 { (" class=\"anomaly\"", "num anomaly") } else { ("", "num") };
                let _ = write!(out, "<tr><td{name}>{k}</td><td class=\"{num}\">{n}</td></tr>");
            }
            out.push_str("</table>");
            let e = &v.examples;
            for (kind, list, count) in [
                ("lost", &e.lost, c.lost),
                ("duplicated", &e.duplicated, c.duplicated),
                ("unexpected", &e.unexpected, c.unexpected),
                ("nonmonotonic", &e.nonmonotonic, c.nonmonotonic),
                ("aborted-read", &e.aborted_read, c.aborted_read),
                ("torn-transaction", &e.torn_transaction, c.torn_transaction),
            ] {
                if list.is_empty() {
                    continue;
                }
                let _ = write!(
                    out,
                    "<table class=\"examples\" data-kind=\"{kind}\"><caption>{kind}: {count} ({} example{})</caption><tr><th>subtask</th><th>seq</th><th>partition</th><th>offset</th><th>checkpoint</th><th>transactional id</th></tr>",
                    list.len(),
                    if list.len() == 1 { "" } else { "s" }
                );
                for x in list {
                    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
                    let seq = match (x.seq, x.seq_end) {
                        (Some(a), Some(b)) if b != a => format!("{a}–{b}"),
                        (Some(a), _) => a.to_string(),
                        _ => "-".into(),
                    };
                    let ckpt = x
                        .checkpoint
                        .or_else(|| x.transactional_id.as_ref().and_then(|t| m.tid_checkpoints.get(t).copied()));
                    let _ = write!(
                        out,
                        "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"tid\">{}</td></tr><tr><td colspan=\"6\" class=\"detail\">{}</td></tr>",
                        opt(x.subtask.map(|s| s.to_string())),
                        esc(&seq),
                        opt(x.partition.map(|p| p.to_string())),
                        opt(x.offset.map(|o| o.to_string())),
                        opt(ckpt.map(|c| c.to_string())),
                        esc(x.transactional_id.as_deref().unwrap_or("-")),
                        esc(&x.detail)
                    );
                }
                out.push_str("</table>");
            }
            if !v.uncommitted_tail.is_empty() {
                out.push_str("<table class=\"examples\" data-kind=\"uncommitted-tail\"><caption>uncommitted tail (a transaction left open)</caption><tr><th>partition</th><th>read_committed position</th><th>high-water mark</th></tr>");
                for t in &v.uncommitted_tail {
                    let _ = write!(
                        out,
                        "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                        t.partition, t.position, t.high_watermark
                    );
                }
                out.push_str("</table>");
            }
        }
        // What the job did, for reading the counts.
        out.push_str("<table class=\"job\"><caption>job</caption>");
        let job = match &v.job {
            crate::runner::JobOutcome::Finished => "finished".to_string(),
            crate::runner::JobOutcome::Failed { reason } => format!("failed: {reason}"),
            crate::runner::JobOutcome::Unsupported { error } => format!("unsupported: {error}"),
        };
        let rows = [
            ("outcome", job),
            ("attempts", v.attempts.to_string()),
            ("checkpoints completed", v.checkpoints_completed.to_string()),
            ("committables dropped", v.committables_dropped.to_string()),
        ];
        for (k, val) in rows {
            let _ = write!(out, "<tr><th>{k}</th><td>{}</td></tr>", esc(&val));
        }
        for f in &v.faults {
            let state = match (f.fired, f.confirmed) {
                (true, true) => "fired, effect confirmed",
                (true, false) => "fired, effect NOT confirmed",
                _ => "did not fire",
            };
            let _ = write!(out, "<tr><th>fault {}</th><td>{} — {}", esc(&f.name), esc(&f.kind), state);
            for line in fault_evidence(&f.effect) {
                let _ = write!(out, "<br><small>{}</small>", esc(&line));
            }
            out.push_str("</td></tr>");
        }
        out.push_str("</table>");
        out
    });
    h.push_str("</section>\n");
}

/// The lines of a fault's effect a reader needs to trust it: the role a node
/// held when it was hit, the signals and what the kernel showed after them,
/// what the proxy matched and did (with its samples). The full effect is in
/// verdict.json and history.jsonl; this is the part worth a glance.
pub fn fault_evidence(effect: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    let start = effect.get("start").unwrap_or(effect);
    if let Some(s) = start.pointer("/role/statement").and_then(|v| v.as_str()) {
        out.push(s.to_string());
    }
    if let Some(nodes) = start.get("nodes").and_then(|v| v.as_array()) {
        for n in nodes {
            let node = n.get("node").and_then(|v| v.as_i64()).unwrap_or(-1);
            let action = n.pointer("/effect/action").and_then(|v| v.as_str()).unwrap_or("?");
            let signals: Vec<String> = n
                .pointer("/effect/signals")
                .and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .map(|s| {
                            format!(
                                "{} → {}",
                                s.get("signal").and_then(|v| v.as_str()).unwrap_or("?"),
                                s.get("observed").and_then(|v| v.as_str()).unwrap_or("?")
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let confirmed = n.get("confirmed").and_then(|v| v.as_bool()) == Some(true);
            out.push(format!(
                "node {node}: {action}{}{}",
                if signals.is_empty() { String::new() } else { format!(" ({})", signals.join(", ")) },
                if confirmed { ", confirmed" } else { ", not confirmed" }
            ));
        }
    }
    if let Some(workers) = start.get("workers").and_then(|v| v.as_array()) {
        let hit: Vec<String> = workers
            .iter()
            .map(|w| {
                let s = w.get("subtask").and_then(|v| v.as_u64()).unwrap_or(0);
                match (w.pointer("/signal/signal").and_then(|v| v.as_str()), w.get("error").and_then(|v| v.as_str())) {
                    (Some(sig), _) => format!(
                        "subtask {s} {sig} → {}",
                        w.pointer("/signal/observed").and_then(|v| v.as_str()).unwrap_or("?")
                    ),
                    (None, Some(e)) => format!("subtask {s}: {e}"),
                    _ => format!("subtask {s}"),
                }
            })
            .collect();
        if !hit.is_empty() {
            out.push(hit.join("; "));
        }
    }
    if let Some(stats) = effect.pointer("/end/stats") {
        let n = |k: &str| stats.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
        out.push(format!(
            "proxy: matched {}, dropped {}, delayed {}, errors injected {}, connections reset {}",
            n("matched"),
            n("dropped"),
            n("delayed"),
            n("errors_injected"),
            n("connections_reset")
        ));
        if let Some(samples) = stats.get("samples").and_then(|v| v.as_array()) {
            out.extend(samples.iter().take(3).filter_map(|s| s.as_str()).map(str::to_string));
        }
    }
    if let Some(txns) = start.pointer("/while_frozen/transactions").and_then(|v| v.as_array()) {
        let after = start.pointer("/while_frozen/after_ms").and_then(|v| v.as_i64()).unwrap_or(0);
        for t in txns {
            out.push(format!(
                "{after} ms into the pause, {} was {} (epoch {})",
                t.get("transactional_id").and_then(|v| v.as_str()).unwrap_or("?"),
                t.get("state").and_then(|v| v.as_str()).unwrap_or("?"),
                t.get("producer_epoch").and_then(|v| v.as_i64()).unwrap_or(-1)
            ));
        }
    }
    if let Some(w) = effect.pointer("/end/why_unconfirmed").and_then(|v| v.as_str()) {
        out.push(format!("not confirmed: {w}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fault_evidence;
    use serde_json::json;

    #[test]
    fn evidence_names_the_role_the_signals_and_the_proxy_counts() {
        let kill = json!({"start": {
            "role": {"statement": "node 1 was the txn-coordinator of t-0-3 at 2026-11-29T22:07:47.681Z"},
            "nodes": [{"node": 1, "confirmed": true,
                       "effect": {"action": "kill", "signals": [{"signal": "SIGKILL", "observed": "zombie"}]}}]}});
        let lines = fault_evidence(&kill);
        assert_eq!(lines[0], "node 1 was the txn-coordinator of t-0-3 at 2026-11-29T22:07:47.681Z");
        assert_eq!(lines[1], "node 1: kill (SIGKILL → zombie), confirmed");

        let drop = json!({"start": {"rule_id": 1}, "end": {"acted": true, "stats": {
            "matched": 2, "dropped": 1, "delayed": 0, "errors_injected": 0, "connections_reset": 0,
            "samples": ["EndTxn v5 response corr 79 tid t-0-3 worker-0 → broker-1: dropped"]}}});
        let lines = fault_evidence(&drop);
        assert_eq!(lines[0], "proxy: matched 2, dropped 1, delayed 0, errors injected 0, connections reset 0");
        assert!(lines[1].starts_with("EndTxn v5 response"), "{lines:?}");

        let frozen = json!({"start": {"while_frozen": {"after_ms": 5500, "transactions": [
            {"transactional_id": "t-0-3", "state": "CompleteAbort", "producer_epoch": 1}]}}});
        assert_eq!(fault_evidence(&frozen), vec!["5500 ms into the pause, t-0-3 was CompleteAbort (epoch 1)"]);

        let missed = json!({"start": {"workers": [{"subtask": 0, "error": "no worker running"}]},
                            "end": {"why_unconfirmed": "the rule matched no frame it could act on"}});
        let lines = fault_evidence(&missed);
        assert_eq!(
            lines,
            vec!["subtask 0: no worker running", "not confirmed: the rule matched no frame it could act on"]
        );
    }
}
