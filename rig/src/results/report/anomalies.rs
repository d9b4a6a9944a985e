//! The Anomalies section: what the checker counted on the output read with
//! read_committed (with its examples), what the job did, and the evidence
//! that each fault hit what it was meant to hit.
use std::fmt::Write as _;

use super::{esc, grid, ModeData, RunData};
use crate::subject::WorkerHit;
use sinkhole_checker::verdict::Verdict;
use sinkhole_checker::{Counts, Example};
use sinkhole_history::fault::{End, FaultEffect, Isolated, NodeResult, RuleEnd, Start, Transactions, WorkersStart};
use sinkhole_model::anomaly::{Anomaly, Group, Renderer};

pub(super) fn anomaly_section(h: &mut String, d: &RunData, cols: &str) {
    h.push_str("<section id=\"anomalies\">\n<h2>Anomalies</h2>\n");
    h.push_str("<p class=\"note\">Counted by the checker on the output read with read_committed; examples name records, partitions, offsets, transactional ids and checkpoints (anomaly names after Jepsen's Kafka checker).</p>\n");
    grid(h, d, cols, "anomalies", |_, m| mode_anomalies(m));
    h.push_str("</section>\n");
}

/// One mode's cell: what could not be read, the counts and their examples
/// (when the output was checked), a share group's own view, and the job.
fn mode_anomalies(m: &ModeData) -> String {
    let mut out = String::new();
    for p in &m.problems {
        let _ = write!(out, "<p class=\"problem\">{}</p>", esc(p));
    }
    let Some(v) = &m.verdict else {
        out.push_str("<p class=\"empty\">no verdict.json</p>");
        return out;
    };
    if !v.checked {
        let _ = write!(out, "<p class=\"note\">The output was not checked: {}</p>", esc(&v.reason));
    } else {
        counts_table(&mut out, v);
        example_tables(&mut out, v, m);
        uncommitted_tail_table(&mut out, v);
    }
    if let Some(s) = &v.share {
        super::share::share_table(&mut out, s);
    }
    if let Some(r) = &v.reads {
        super::reads::reads_table(&mut out, r);
    }
    job_table(&mut out, v);
    out
}

/// The counts (the anomaly table's `report` renderer): the output's, the live readers' when
/// the scenario has readers, a share group's when the source is one (evidence, after the
/// anomalies); each anomaly marked when it is not 0, with "clean" above them when none is.
fn counts_table(out: &mut String, v: &Verdict) {
    // A tail listed but not counted (a verdict written before the count) is shown too.
    let c = &Counts { uncommitted_tail: v.counts.uncommitted_tail.max(v.uncommitted_tail.len() as u64), ..v.counts };
    let has_source = |a: &Anomaly| match a.group() {
        Group::Readers => v.reads.is_some(),
        Group::Input => v.share.is_some(),
        Group::Output | Group::Order => true,
    };
    let mut rows: Vec<(&str, u64, bool)> = c
        .shown(Renderer::Report)
        .filter(|(a, _)| has_source(a))
        .map(|(a, n)| (a.key(), n, a.severity().is_anomaly()))
        .collect();
    // Evidence after the anomalies.
    rows.sort_by_key(|(.., anomaly)| !anomaly);
    if rows.iter().all(|(_, n, anomaly)| *n == 0 || !anomaly) {
        let _ = write!(
            out,
            "<p class=\"clean\">clean: no anomalies — {} of {} records committed exactly once</p>",
            c.committed, c.expected
        );
    }
    out.push_str("<table class=\"counts\"><tr><th>count</th><th>value</th></tr>");
    let _ = write!(out, "<tr><td>expected</td><td class=\"num\">{}</td></tr>", c.expected);
    let _ = write!(out, "<tr><td>committed</td><td class=\"num\">{}</td></tr>", c.committed);
    for (k, n, anomaly) in rows {
        let (name, num) = if anomaly && n > 0 { (" class=\"anomaly\"", "num anomaly") } else { ("", "num") };
        let _ = write!(out, "<tr><td{name}>{k}</td><td class=\"{num}\">{n}</td></tr>");
    }
    out.push_str("</table>");
}

/// One table per anomaly with examples, in the table's order.
fn example_tables(out: &mut String, v: &Verdict, m: &ModeData) {
    for &kind in Anomaly::ALL {
        let list = v.examples.get(kind);
        if list.is_empty() {
            continue;
        }
        let count = v.counts.get(kind);
        let _ = write!(
            out,
            "<table class=\"examples\" data-kind=\"{kind}\"><caption>{kind}: {count} ({} example{})</caption><tr><th>subtask</th><th>seq</th><th>partition</th><th>offset</th><th>checkpoint</th><th>transactional id</th></tr>",
            list.len(),
            if list.len() == 1 { "" } else { "s" }
        );
        for x in list {
            example_row(out, x, m);
        }
        out.push_str("</table>");
    }
}

/// An example's record and, below it, what the checker said of it; the
/// checkpoint from the history when the example does not name it.
fn example_row(out: &mut String, x: &Example, m: &ModeData) {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let seq = match (x.seq, x.seq_end) {
        (Some(a), Some(b)) if b != a => format!("{a}–{b}"),
        (Some(a), _) => a.to_string(),
        _ => "-".into(),
    };
    let ckpt = x.checkpoint.or_else(|| x.transactional_id.as_ref().and_then(|t| m.tid_checkpoints.get(t).copied()));
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

/// The partitions a transaction left open: their read_committed position and high-water mark.
fn uncommitted_tail_table(out: &mut String, v: &Verdict) {
    if v.uncommitted_tail.is_empty() {
        return;
    }
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

/// What the job did, for reading the counts: its end, each fault with its
/// evidence, and the premises the expectation rests on.
fn job_table(out: &mut String, v: &Verdict) {
    out.push_str("<table class=\"job\"><caption>job</caption>");
    let job = match &v.job {
        sinkhole_history::JobOutcome::Finished => "finished".to_string(),
        sinkhole_history::JobOutcome::Failed { reason } => format!("failed: {reason}"),
        sinkhole_history::JobOutcome::Unsupported { error } => format!("unsupported: {error}"),
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
    // What the expectation rests on, and what the rig saw of it.
    for p in &v.premises {
        let _ = write!(
            out,
            "<tr><th>premise {}</th><td class=\"premise {}\">{}<br><small>{}</small></td></tr>",
            esc(&p.premise),
            p.held.name(),
            p.held.name(),
            esc(&p.evidence)
        );
    }
    out.push_str("</table>");
}

/// The lines of a fault's effect a reader needs to trust it: the role a node
/// held when it was hit, the signals and what the kernel showed after them,
/// what the proxy matched and did (with its samples). The full effect is in
/// verdict.json and history.jsonl; this is the part worth a glance.
pub fn fault_evidence(effect: &FaultEffect) -> Vec<String> {
    let mut out = Vec::new();
    let Some(start) = effect.start() else { return out };
    if let Some(r) = start.role() {
        out.push(r.statement.clone());
    }
    let state = |s: &sinkhole_faults::process::RunState| {
        serde_json::to_value(s).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_else(|| "?".into())
    };
    let node_line = |node: i32, action: &str, signals: &[String], confirmed: bool| {
        format!(
            "node {node}: {action}{}{}",
            if signals.is_empty() { String::new() } else { format!(" ({})", signals.join(", ")) },
            if confirmed { ", confirmed" } else { ", not confirmed" }
        )
    };
    match start {
        Start::Broker(b) => {
            for n in &b.nodes {
                out.push(match n {
                    NodeResult::Done { node, confirmed, effect } => {
                        let action = serde_json::to_value(effect.action)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_else(|| "?".into());
                        let mut signals: Vec<String> =
                            effect.signals.iter().map(|s| format!("{} → {}", s.signal, state(&s.observed))).collect();
                        // An external cluster's node: the command, and what the protocol showed.
                        signals.extend(effect.commands.iter().map(|c| format!("{} → {}", c.action, c.observed)));
                        node_line(*node, &action, &signals, *confirmed)
                    }
                    NodeResult::Failed { node, confirmed, .. } => node_line(*node, "?", &[], *confirmed),
                });
            }
        }
        Start::Isolation(i) => {
            for n in &i.nodes {
                let (node, confirmed) = match n {
                    Isolated::Done { node, confirmed, .. } => {
                        (*node, confirmed.as_ref().and_then(|c| c.as_bool()) == Some(true))
                    }
                    Isolated::Failed { node, confirmed, .. } => (*node, *confirmed),
                };
                out.push(node_line(node, "?", &[], confirmed));
            }
        }
        _ => {}
    }
    let workers = match start {
        Start::Workers(w) => Some(&w.workers),
        Start::Crash(c) => Some(&c.workers),
        _ => None,
    };
    if let Some(workers) = workers {
        let hit: Vec<String> = workers
            .iter()
            .map(|w| match w {
                WorkerHit::Signalled { subtask, signal, .. } => {
                    format!("subtask {subtask} {} → {}", signal.signal, state(&signal.observed))
                }
                WorkerHit::Failed { subtask, error, .. } | WorkerHit::NotRunning { subtask, error } => {
                    format!("subtask {subtask}: {error}")
                }
            })
            .collect();
        if !hit.is_empty() {
            out.push(hit.join("; "));
        }
    }
    if let Some(End::Rule(r)) = effect.end() {
        let st = &r.stats;
        let mut more = String::new();
        if st.throttled > 0 {
            more += &format!(", throttled {} ({} bytes)", st.throttled, st.throttled_bytes);
        }
        if st.held > 0 {
            more += &format!(", held until the heal {}", st.held);
        }
        if st.resent > 0 {
            more += &format!(", lost and sent again {}", st.resent);
        }
        out.push(format!(
            "proxy: matched {}, dropped {}, delayed {}, errors injected {}, connections reset {}{more}",
            st.matched, st.dropped, st.delayed, st.errors_injected, st.connections_reset
        ));
        out.extend(st.samples.iter().take(3).cloned());
    }
    if let Start::Workers(WorkersStart { while_frozen: Some(w), .. }) = start {
        if let Transactions::Seen(txns) = &w.transactions {
            for t in txns {
                out.push(format!(
                    "{} ms into the pause, {} was {} (epoch {})",
                    w.after_ms, t.transactional_id, t.state, t.producer_epoch
                ));
            }
        }
    }
    if let Some(End::Rule(RuleEnd { why_unconfirmed: Some(w), .. })) = effect.end() {
        out.push(format!("not confirmed: {w}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fault_evidence;
    use serde_json::json;
    use sinkhole_history::fault::{End, FaultEffect, Start};

    /// A fault record's effect of `kind`, read the way verdict.json is read.
    fn effect(kind: &str, v: serde_json::Value) -> FaultEffect {
        let e = FaultEffect::parse(kind, &v);
        assert!(!matches!(e.start(), Some(Start::Other(_))), "{kind}: {v}");
        assert!(!matches!(e.end(), Some(End::Other(_))), "{kind}: {v}");
        e
    }

    #[test]
    fn evidence_names_the_role_the_signals_and_the_proxy_counts() {
        let role = json!({"role": "txn-coordinator", "of": "t-0-3", "node": 1, "found_by": "FindCoordinator",
                          "at_wall_ms": 1, "statement": "node 1 was the txn-coordinator of t-0-3 at 2026-11-29T22:07:47.681Z"});
        let kill = json!({"start": {"trigger": {"at_ms": 5}, "coordinator": role, "role": role, "duration_ms": null,
            "nodes": [{"node": 1, "confirmed": true,
                       "effect": {"node_id": 1, "action": "kill", "new_pid": null, "ready": null, "elapsed_ms": 3,
                                  "signals": [{"pid": 9, "signal": "SIGKILL", "confirmed": true, "observed": "zombie", "after_ms": 1}]}}]}});
        let lines = fault_evidence(&effect("broker-kill", kill));
        assert_eq!(lines[0], "node 1 was the txn-coordinator of t-0-3 at 2026-11-29T22:07:47.681Z");
        assert_eq!(lines[1], "node 1: kill (SIGKILL → zombie), confirmed");

        let rule = json!({"name": "drop", "matches": {"from": [], "to": [], "both_ways": true, "one_way": false,
            "api_keys": [26], "frames": "response", "transactional_id": null, "nth": null, "probability": null},
            "action": {"action": "drop"}});
        let drop = json!({"start": {"trigger": {"at_ms": 1}, "rule": rule, "rule_id": 1, "role": null, "duration_ms": 100},
            "end": {"rule_id": 1, "acted": true, "stats": {
            "matched": 2, "dropped": 1, "delayed": 0, "errors_injected": 0, "connections_reset": 0,
            "samples": ["EndTxn v5 response corr 79 tid t-0-3 worker-0 → broker-1: dropped"]}}});
        let lines = fault_evidence(&effect("protocol-drop", drop.clone()));
        assert_eq!(lines[0], "proxy: matched 2, dropped 1, delayed 0, errors injected 0, connections reset 0");
        assert!(lines[1].starts_with("EndTxn v5 response"), "{lines:?}");
        // A partition's and a loss's counts, only when there are any.
        let mut held = drop.clone();
        held["end"]["stats"]["held"] = json!(4);
        held["end"]["stats"]["resent"] = json!(2);
        let lines = fault_evidence(&effect("net-partition", held));
        assert_eq!(
            lines[0],
            "proxy: matched 2, dropped 1, delayed 0, errors injected 0, connections reset 0, held until the heal 4, \
             lost and sent again 2"
        );

        let frozen = json!({"start": {"trigger": {"at_ms": 1}, "attempt": 0, "workers": [], "duration_ms": 8000,
            "open_transactions": ["t-0-3"], "while_frozen": {"after_ms": 5500, "transactions": [
            {"transactional_id": "t-0-3", "state": "CompleteAbort", "producer_id": 7, "producer_epoch": 1,
             "timeout_ms": 4000, "error": null}]}}});
        assert_eq!(
            fault_evidence(&effect("pause-workers", frozen)),
            vec!["5500 ms into the pause, t-0-3 was CompleteAbort (epoch 1)"]
        );

        let missed = json!({"start": {"trigger": {"at_ms": 1}, "attempt": 0,
                                      "workers": [{"subtask": 0, "error": "no worker running"}]}});
        let lines = fault_evidence(&effect("kill-workers", missed));
        assert_eq!(lines, vec!["subtask 0: no worker running"]);
        let unacted = json!({"start": {"trigger": {"at_ms": 1}, "rule": rule, "rule_id": 2, "role": null, "duration_ms": 100},
            "end": {"rule_id": 2, "acted": false, "why_unconfirmed": "the rule matched no frame it could act on",
                    "stats": {"matched": 0, "dropped": 0, "delayed": 0, "errors_injected": 0, "connections_reset": 0, "samples": []}}});
        let lines = fault_evidence(&effect("protocol-drop", unacted));
        assert_eq!(lines.last().unwrap(), "not confirmed: the rule matched no frame it could act on");
    }
}
