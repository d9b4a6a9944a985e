//! A share-group source's table in the Anomalies section: the group's own
//! view at the end (lag, archived records — with those only the samples
//! taken while the job ran showed — available records, the delivery counts
//! its persisted state kept) next to what the workers saw (deliveries,
//! redeliveries with examples, acknowledgements the broker refused).
use std::fmt::Write as _;

use super::esc;
use sinkhole_checker::share::ShareView;

pub(super) fn share_table(out: &mut String, s: &ShareView) {
    let _ =
        write!(out, "<table class=\"share\"><caption>share group {} (ack {})</caption>", esc(&s.group), esc(&s.ack));
    let rows = [
        ("input topic", s.input_topic.clone()),
        ("lag at the end", s.lag.to_string()),
        ("archived", s.archived.to_string()),
        (
            "of them seen only while running",
            format!(
                "{} ({} state samples, {} failed)",
                s.archived_while_running, s.state_samples, s.state_sample_errors
            ),
        ),
        ("available again", s.available.to_string()),
        ("deliveries seen", s.delivered.to_string()),
        ("redelivered (count > 1)", s.redelivered.to_string()),
        ("highest delivery count", s.max_delivery_count.to_string()),
        ("acknowledged", s.acknowledged.to_string()),
        ("acknowledgements refused", s.ack_refused.to_string()),
        ("out of order (not judged)", s.out_of_order.to_string()),
    ];
    for (k, v) in rows {
        let _ = write!(out, "<tr><th>{k}</th><td class=\"num\">{}</td></tr>", esc(&v));
    }
    for p in &s.partitions {
        let _ = write!(
            out,
            "<tr><th>input partition {}</th><td>start {}, lag {}, done through {}, archived {}, available {}, max count {}{}</td></tr>",
            p.partition,
            p.start_offset,
            p.lag.map(|l| l.to_string()).unwrap_or_else(|| "-".into()),
            p.done_through,
            p.archived,
            p.available,
            p.max_delivery_count,
            p.error.as_deref().map(|e| format!(", {}", esc(e))).unwrap_or_default()
        );
    }
    if !s.archived_ranges.is_empty() {
        let shown: Vec<String> = s.archived_ranges.iter().take(8).map(|(p, a, b)| format!("{p}:{a}–{b}")).collect();
        let more = s.archived_ranges.len().saturating_sub(shown.len());
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        let _ = write!(out, "<tr><th>archived ranges (partition:offsets)</th><td>{}{tail}</td></tr>", shown.join(", "));
    }
    if let Some(e) = &s.error {
        let _ = write!(out, "<tr><th>group view</th><td>{}</td></tr>", esc(e));
    }
    for line in &s.lost_evidence {
        let _ = write!(out, "<tr><th>lost</th><td>{}</td></tr>", esc(line));
    }
    for x in &s.redelivery_examples {
        let _ = write!(
            out,
            "<tr><th>redelivered</th><td>subtask {} seq {} (input partition {} offset {}) delivery count {}</td></tr>",
            x.subtask, x.seq, x.partition, x.offset, x.delivery_count
        );
    }
    out.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_the_group_and_the_redeliveries() {
        let s = ShareView {
            group: "g<1>".into(),
            ack: "after-commit".into(),
            redelivered: 3,
            redelivery_examples: vec![sinkhole_model::Redelivery {
                subtask: 1,
                seq: 7,
                partition: 0,
                offset: 9,
                delivery_count: 2,
            }],
            ..ShareView::default()
        };
        let mut out = String::new();
        share_table(&mut out, &s);
        assert!(out.contains("share group g&lt;1&gt; (ack after-commit)"), "{out}");
        assert!(
            out.contains("redelivered (count &gt; 1)</th><td class=\"num\">3<")
                || out.contains("redelivered (count > 1)</th><td class=\"num\">3<"),
            "{out}"
        );
        assert!(out.contains("subtask 1 seq 7 (input partition 0 offset 9) delivery count 2"), "{out}");
    }
}
