//! The live readers' table in the Anomalies section (a scenario's `readers:`): what the
//! read_committed consumers saw while the job and the faults ran, each read-side anomaly with
//! its count and examples, the records no reader polled, and the lag from commit to first poll.
use std::fmt::Write as _;

use super::esc;
use sinkhole_checker::reads::ReadReport;
use sinkhole_checker::Counts;
use sinkhole_model::anomaly::{Anomaly, Group};

pub(super) fn reads_table(out: &mut String, r: &ReadReport) {
    let _ = write!(
        out,
        "<table class=\"reads\"><caption>live readers: {} reader(s), {} consumer(s), {} polls</caption>",
        r.readers, r.incarnations, r.polls
    );
    // Every readers' row of the anomaly table, the anomalies marked when not 0, the evidence not.
    let mut c = Counts::default();
    r.add_to(&mut c);
    for a in Anomaly::ALL.iter().filter(|a| a.group() == Group::Readers) {
        let n = c.get(*a);
        let (name, num) =
            if n > 0 && a.severity().is_anomaly() { (" class=\"anomaly\"", "num anomaly") } else { ("", "num") };
        let _ = write!(out, "<tr><th{name}>{a}</th><td class=\"{num}\">{n}</td></tr>");
    }
    if r.not_judged > 0 {
        let _ =
            write!(out, "<tr><th>polls past the drain (not judged)</th><td class=\"num\">{}</td></tr>", r.not_judged);
    }
    let l = &r.lag_ms;
    let _ = write!(
        out,
        "<tr><th>commit → first poll, ms</th><td>p50 {} · p99 {} · max {} ({} records)</td></tr>",
        l.p50, l.p99, l.max, l.samples
    );
    for (kind, list) in &r.examples {
        for line in list {
            let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(kind), esc(line));
        }
    }
    out.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_marks_what_the_readers_saw_and_shows_its_examples() {
        let mut r = ReadReport { readers: 2, incarnations: 3, polls: 40, g1a: 2, unseen: 1, ..ReadReport::default() };
        r.examples.insert("G1a".into(), vec!["reader 1 polled <x> at partition 0 offset 4".into()]);
        let mut out = String::new();
        reads_table(&mut out, &r);
        assert!(out.contains("2 reader(s), 3 consumer(s), 40 polls"), "{out}");
        assert!(out.contains("<th class=\"anomaly\">G1a</th><td class=\"num anomaly\">2</td>"), "{out}");
        assert!(out.contains("<th>poll-skip</th><td class=\"num\">0</td>"), "{out}");
        assert!(out.contains("reader 1 polled &lt;x&gt; at partition 0 offset 4"), "{out}");
    }
}
