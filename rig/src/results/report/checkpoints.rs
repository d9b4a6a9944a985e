//! The Checkpoints section: each checkpoint's trigger, completion,
//! notification and commit on the job's time line, with failures, restores
//! and the job's log.
use std::fmt::Write as _;

use super::{band_legend, charts, data, esc, grid, shared_x_max, svg_or_problem, swatch, RunData, Shading};

pub(super) fn checkpoint_section(h: &mut String, d: &RunData, cols: &str) {
    h.push_str("<section id=\"checkpoints\">\n<h2>Checkpoints</h2>\n");
    let _ = writeln!(
        h,
        "<div class=\"legend\">{}{}{}{}{}{}{}</div>",
        swatch(charts::PERSISTED, 1.0, "triggered → complete (persisted)"),
        swatch(charts::DOWN, 1.0, "complete → committed"),
        swatch(charts::NOTIFIED, 1.0, "notified (▲)"),
        swatch(charts::OK, 1.0, "committed (●)"),
        swatch(charts::BAD, 1.0, "commit dropped/failed, aborted (✕), failure"),
        swatch(charts::RESTORE, 1.0, "restore"),
        band_legend()
    );
    let x_max = shared_x_max(d);
    let id_max = d.modes.iter().flat_map(|m| m.timeline.checkpoints.iter().map(|c| c.id)).max().unwrap_or(1).max(1);
    grid(h, d, cols, "checkpoints", |_, m| {
        let t = &m.timeline;
        let mut out = if t.checkpoints.is_empty() {
            "<div class=\"empty\">no checkpoints</div>".to_string()
        } else {
            svg_or_problem(charts::checkpoints(
                &t.checkpoints,
                &t.failures,
                &t.restores,
                x_max,
                id_max,
                Shading { faults: &t.faults, down: &t.down },
            ))
        };
        let n = |f: fn(&data::Checkpoint) -> bool| t.checkpoints.iter().filter(|c| f(c)).count();
        let _ = write!(
            out,
            "<p class=\"note\">{} triggered, {} complete, {} notified, {} committed, {} aborted, {} with a dropped or failed commit; {} restore(s)</p>",
            n(|c| c.triggered.is_some()),
            n(|c| c.persisted.is_some()),
            n(|c| c.notified.is_some()),
            n(|c| c.committed.is_some()),
            n(|c| c.aborted.is_some()),
            n(|c| !c.commit_errors.is_empty()),
            t.restores.len()
        );
        if !t.checkpoints.is_empty() {
            const MAX: usize = 300;
            out.push_str("<details><summary class=\"note\">every checkpoint (s since the job started)</summary><table class=\"lat\"><tr><th>id</th><th>triggered</th><th>complete</th><th>notified</th><th>committed</th><th>note</th></tr>");
            let f = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_else(|| "-".into());
            for c in t.checkpoints.iter().take(MAX) {
                let mut note = Vec::new();
                if c.aborted.is_some() {
                    note.push("aborted".to_string());
                }
                if !c.commit_errors.is_empty() {
                    note.push(format!("{} commit(s) dropped/failed", c.commit_errors.len()));
                }
                if !c.restored.is_empty() {
                    note.push(format!("restored from ×{}", c.restored.len()));
                }
                let _ = write!(
                    out,
                    "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                    c.id,
                    f(c.triggered),
                    f(c.persisted),
                    f(c.notified),
                    f(c.committed),
                    esc(&note.join(", "))
                );
            }
            if t.checkpoints.len() > MAX {
                let _ = write!(out, "<tr><td colspan=\"6\">… {} more</td></tr>", t.checkpoints.len() - MAX);
            }
            out.push_str("</table></details>");
        }
        if !t.log.is_empty() {
            out.push_str("<ol class=\"log\">");
            const MAX: usize = 40;
            for (s, text) in t.log.iter().take(MAX) {
                let _ = write!(out, "<li>{s:.2} s: {}</li>", esc(text));
            }
            if t.log.len() > MAX {
                let _ = write!(out, "<li>… {} more in history.jsonl</li>", t.log.len() - MAX);
            }
            out.push_str("</ol>");
        }
        out
    });
    h.push_str("</section>\n");
}
