//! The Scenario and cluster section: the scenario's settings as tables (the
//! cluster, its broker config, the topic, the job, each mode's expectation),
//! its faults with when and, side by side, how each fired, and the
//! scenario.yaml the run used.
use std::fmt::Write as _;

use super::{esc, RunData};
use sinkhole_scenario::Scenario;

pub(super) fn settings_section(h: &mut String, d: &RunData) {
    h.push_str("<section id=\"settings\">\n<h2>Scenario and cluster</h2>\n");
    if let Some(s) = &d.scenario {
        settings_tables(h, s);
        if !s.faults.is_empty() {
            faults_table(h, d, s);
        }
    }
    if let Some(y) = &d.scenario_yaml {
        let _ = writeln!(h, "<details><summary>scenario.yaml</summary><pre>{}</pre></details>", esc(y));
    }
    h.push_str("</section>\n");
}

/// Cluster, broker config, topic, job and expectations, side by side.
fn settings_tables(h: &mut String, s: &Scenario) {
    h.push_str("<div class=\"kvs\">\n");
    let mut cluster = serde_json::to_value(&s.cluster).unwrap_or_default();
    if let Some(o) = cluster.as_object_mut() {
        // Shown as a table of its own.
        o.remove("broker_config");
    }
    kv_table(h, "cluster", &cluster);
    let bc: serde_json::Map<String, serde_json::Value> =
        s.cluster.broker_config.iter().map(|(k, v)| (k.clone(), serde_json::Value::String(v.to_string()))).collect();
    if !bc.is_empty() {
        kv_table(h, "broker config", &serde_json::Value::Object(bc));
    }
    kv_table(h, "topic", &serde_json::to_value(&s.topic).unwrap_or_default());
    kv_table(h, "job", &serde_json::to_value(&s.job).unwrap_or_default());
    let ex: serde_json::Map<String, serde_json::Value> = s
        .modes
        .iter()
        .map(|m| {
            (
                m.name().to_string(),
                serde_json::Value::String(sinkhole_checker::verdict::expectation_text(s.expect.get(m))),
            )
        })
        .collect();
    kv_table(h, "expected", &serde_json::Value::Object(ex));
    h.push_str("</div>\n");
}

/// One row per fault: name, kind, target, trigger, duration, and side by side how it fired.
fn faults_table(h: &mut String, d: &RunData, s: &Scenario) {
    let side_by_side = d.summary.as_ref().is_some_and(|s| s.side_by_side);
    h.push_str("<h3>faults</h3>\n<table><tr><th>name</th><th>kind</th><th>target</th><th>when</th><th>duration</th>");
    if side_by_side {
        h.push_str("<th>fires</th>");
    }
    h.push_str("</tr>\n");
    for (i, f) in s.faults.iter().enumerate() {
        let kind =
            serde_json::to_value(f.kind.kind()).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
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

/// Side by side: whether a fault fired per mode or once for all, and for a
/// cluster fault that fired, which mode's event or clock set it off.
fn fires(d: &RunData, f: &sinkhole_scenario::FaultSpec, name: &str) -> String {
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
