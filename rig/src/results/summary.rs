//! `results/<run-id>/summary.json` and the table a user reads: one row per
//! mode, built from the mode's verdict ([`summarize`]), and the run's exit
//! code ([`exit_code`], by the table of [`crate::results::exit`]). Written by `sinkhole run`, rewritten by
//! `sinkhole check`; the matrix keeps each cell's rows.
use std::path::PathBuf;

use crate::results::exit::{self, Policy};
use serde::{Deserialize, Serialize};
use sinkhole_checker::verdict::words::{self, End, Facts};
use sinkhole_checker::verdict::{self, Cause, Outcome, Verdict};
use sinkhole_model::anomaly::{Anomaly, Renderer, Show};
use sinkhole_model::SinkMode;

/// One row of the summary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModeSummary {
    pub mode: SinkMode,
    pub outcome: Outcome,
    /// What happened to the data, for people: the verdict's words. Absent in
    /// rows written before they existed ([`ModeSummary::words`] makes them).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub words: String,
    /// Why the outcome is inconclusive (the verdict's cause); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive_cause: Option<Cause>,
    pub expected_met: Option<bool>,
    pub expected: String,
    pub reason: String,
    pub counts: sinkhole_checker::Counts,
    pub verdict: Option<PathBuf>,
    /// The job's wall time (first worker start to the last commit).
    #[serde(default)]
    pub wall_ms: u64,
    /// False when the output was not counted (the mode could not run).
    #[serde(default)]
    pub checked: bool,
}

impl ModeSummary {
    /// Committed records per second of job wall time: the throughput the
    /// sink achieved end to end, restores and faults included.
    pub fn committed_per_sec(&self) -> u64 {
        (self.counts.committed * 1000).checked_div(self.wall_ms).unwrap_or(0)
    }

    /// The words a person reads: as the verdict made them, else (a row
    /// written before they existed, its verdict not at hand) made from what
    /// the row holds.
    pub fn words(&self) -> String {
        if !self.words.is_empty() {
            return self.words.clone();
        }
        let cause = match (self.outcome, self.inconclusive_cause) {
            (Outcome::Inconclusive, None) if !self.checked => Some(Cause::NotChecked),
            (_, c) => c,
        };
        words::words(&Facts {
            outcome: self.outcome,
            cause,
            expectation: (self.expected != "-").then_some(self.expected.as_str()),
            counts: &self.counts,
            uncommitted_tail: false,
            checked: self.checked,
            end: self.end(),
        })
    }

    /// How the job ended, as far as a row without it tells: a row records
    /// no job, but its outcome and expectation can only have come from some.
    fn end(&self) -> End {
        let clean = words::anomalies(&self.counts, false).is_empty();
        match (self.outcome, self.expected.as_str()) {
            (Outcome::Pass, "refused") => End::Refused,
            (Outcome::Pass, e) if e.starts_with("job-failed") => End::Failed,
            // Only a failed job fails without an expectation, or a clean one on clean data.
            (Outcome::Fail, "-") => End::Failed,
            (Outcome::Fail, "clean") if clean && self.checked => End::Failed,
            _ => End::Unknown,
        }
    }
}

/// `results/<run-id>/summary.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Summary {
    pub run_id: String,
    pub scenario: String,
    pub source: PathBuf,
    pub kafka: String,
    pub seed: u64,
    pub dir: PathBuf,
    pub modes: Vec<ModeSummary>,
    pub exit_code: u8,
    /// Whether `exit_code` counted inconclusive modes as failed (`--fail-on-inconclusive`).
    #[serde(default)]
    pub fail_on_inconclusive: bool,
    /// When the run started (RFC 3339, UTC); absent in runs from before schema 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// The run's wall time: cluster start to the last mode's verdict; absent before schema 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_ms: Option<u64>,
    /// The modes ran at the same time on one cluster (false: one after another).
    #[serde(default)]
    pub side_by_side: bool,
    /// Side by side: whose event set off an event-triggered cluster fault —
    /// a mode's name, or `first` (whichever mode reached it first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead: Option<String>,
    /// Where the run's time went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<Timings>,
    /// The run whose cluster this run reused (a matrix keeps a healthy
    /// cluster for the next cell with the same spec); absent: its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_reused_from: Option<String>,
    /// Why the cluster offered by the previous cell was not reused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_fresh_because: Option<String>,
}

/// Where a run's wall time went, phase by phase (milliseconds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    pub side_by_side: bool,
    /// Install check and cluster start until every broker answers, or the
    /// health check of a cluster kept from the previous run.
    pub cluster_start_ms: u64,
    /// Topic creation and the live read_committed tails.
    pub topics_ms: u64,
    /// The jobs, with the nemesis beside them, until every job ended and
    /// every fault was healed (the scenario's own time).
    pub jobs_ms: u64,
    /// Draining the topics, the checker, the verdicts and latency.
    pub check_ms: u64,
    pub teardown_ms: u64,
    pub report_ms: u64,
    pub total_ms: u64,
    /// Per mode: from the job's start to every worker's first open transaction.
    #[serde(default)]
    pub first_transaction_ms: Vec<(SinkMode, Option<u64>)>,
}

impl Timings {
    /// One line for people: `cluster 4.9 s, topics 0.2 s, …`.
    pub fn line(&self) -> String {
        let s = |ms: u64| format!("{:.1} s", ms as f64 / 1000.0);
        let first: Vec<String> = self
            .first_transaction_ms
            .iter()
            .map(|(m, t)| format!("{m} {}", t.map(|t| format!("{t} ms")).unwrap_or_else(|| "none".into())))
            .collect();
        format!(
            "cluster {}, topics {}, jobs {} ({}), check {}, teardown {}, report {}; total {}{}",
            s(self.cluster_start_ms),
            s(self.topics_ms),
            s(self.jobs_ms),
            if self.side_by_side { "side by side" } else { "one after another" },
            s(self.check_ms),
            s(self.teardown_ms),
            s(self.report_ms),
            s(self.total_ms),
            if first.is_empty() { String::new() } else { format!("; first transaction: {}", first.join(", ")) }
        )
    }
}

/// The reason of a row whose mode the rig failed to run.
pub const RIG_FAILED_PREFIX: &str = "the rig failed: ";

impl Summary {
    /// The policy `exit_code` was computed with.
    pub fn policy(&self) -> Policy {
        Policy { fail_on_inconclusive: self.fail_on_inconclusive }
    }

    /// Reads rows written before the `error` outcome existed: a row with no
    /// verdict whose reason says the rig failed was recorded as `fail`; it
    /// is `error` (the rig's failure, exit 3), not a failure of the sink.
    pub fn upgrade(&mut self) {
        for m in &mut self.modes {
            if m.outcome == Outcome::Fail && m.verdict.is_none() && m.reason.starts_with(RIG_FAILED_PREFIX) {
                m.outcome = Outcome::Error;
            }
        }
    }
}

/// The row of a mode the rig could not run through (its runner, checker or
/// results errored): outcome `error`, no counts, the error as the reason.
pub fn rig_failed(mode: SinkMode, expected: String, error: &str) -> ModeSummary {
    ModeSummary {
        mode,
        outcome: Outcome::Error,
        words: words::RIG_ERROR.to_string(),
        inconclusive_cause: None,
        expected_met: None,
        expected,
        reason: format!("{RIG_FAILED_PREFIX}{error}"),
        counts: sinkhole_checker::Counts::default(),
        verdict: None,
        wall_ms: 0,
        checked: false,
    }
}

pub fn summarize(v: &Verdict, path: Option<PathBuf>) -> ModeSummary {
    ModeSummary {
        mode: v.mode,
        outcome: v.outcome,
        words: v.words(),
        inconclusive_cause: v.cause(),
        expected_met: v.expected_met,
        expected: verdict::expectation_text(v.expectation.as_ref()),
        reason: v.reason.clone(),
        counts: v.counts,
        verdict: path,
        wall_ms: v.wall_ms,
        checked: v.checked,
    }
}

/// 0 when every mode met its expectation, was honestly inconclusive or only
/// observed; 1 when any failed; 3 when the rig failed for one and none failed.
pub fn exit_code(modes: &[ModeSummary]) -> u8 {
    exit_code_with(modes, Policy::default())
}

/// [`exit_code`] under a policy (`--fail-on-inconclusive`).
pub fn exit_code_with(modes: &[ModeSummary], policy: Policy) -> u8 {
    exit::code(modes.iter().map(|m| m.outcome), false, policy)
}

/// The anomalies the run's table has a column for (the anomaly table's `table` renderer):
/// those it always shows, and those it shows when not zero that a mode has.
pub fn table_columns(modes: &[ModeSummary]) -> Vec<Anomaly> {
    Anomaly::ALL
        .iter()
        .copied()
        .filter(|a| {
            let show = a.shown(Renderer::Table);
            show == Show::Always || modes.iter().any(|m| m.checked && show.shows(m.counts.get(*a)))
        })
        .collect()
}

/// The run's table's head: `mode | records | committed | lost | duplicated | job s |
/// committed/s | verdict`, an anomaly's column by its key.
pub fn table_head(columns: &[Anomaly]) -> Vec<String> {
    let mut head: Vec<String> = ["mode", "records", "committed"].map(String::from).to_vec();
    head.extend(columns.iter().map(|a| a.key().to_string()));
    head.extend(["job s", "committed/s", "verdict"].map(String::from));
    head
}

/// One mode's cells in the run's table; the counts of a mode whose output was not read
/// are not zeros: "-".
pub fn table_row(m: &ModeSummary, columns: &[Anomaly]) -> Vec<String> {
    let counted = |n: u64| if m.checked { n.to_string() } else { "-".to_string() };
    let mut row = vec![m.mode.name().to_string(), m.counts.expected.to_string(), counted(m.counts.committed)];
    row.extend(columns.iter().map(|a| counted(m.counts.get(*a))));
    row.extend([format!("{:.1}", m.wall_ms as f64 / 1000.0), counted(m.committed_per_sec()), m.words()]);
    row
}

/// `mode | records | committed | lost | duplicated | job s | committed/s |
/// verdict`, the verdict in words (what happened to the data, then whether
/// that was expected: `LOST 4002 (expected)`), then the reason of each mode.
pub fn render_table(modes: &[ModeSummary]) -> String {
    let columns = table_columns(modes);
    let head = table_head(&columns);
    let rows: Vec<Vec<String>> = modes.iter().map(|m| table_row(m, &columns)).collect();
    let mut w: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let pad = w[i] - c.chars().count();
                // numbers right-aligned, words left
                if i > 0 && i + 1 < w.len() {
                    format!("{}{c}", " ".repeat(pad))
                } else {
                    format!("{c}{}", " ".repeat(pad))
                }
            })
            .collect::<Vec<_>>()
            .join(" | ")
            .trim_end()
            .to_string()
    };
    let mut out = line(&head);
    out.push('\n');
    out.push_str(&w.iter().map(|n| "-".repeat(*n)).collect::<Vec<_>>().join("-|-"));
    out.push('\n');
    for r in &rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    for m in modes {
        out.push_str(&format!("{}: {}\n", m.mode.name(), m.reason));
    }
    out
}

/// What `sinkhole run` and `sinkhole check` print without `--json`: the
/// table, each mode's latency line, and where the results are.
pub fn render_text(s: &Summary) -> String {
    let mut out = render_table(&s.modes);
    let verdicts: Vec<(SinkMode, Option<PathBuf>)> = s.modes.iter().map(|m| (m.mode, m.verdict.clone())).collect();
    out.push_str(&sinkhole_checker::latency::render_lines(&verdicts));
    out.push_str(&format!("results: {}\n", s.dir.display()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_exit_code() {
        // Rows as a run writes them: the verdict's words and cause (rows
        // without them are old ones: `old_rows_get_words_from_what_they_hold`).
        let row = |mode, outcome, met: Option<bool>, expected: &str, lost| ModeSummary {
            mode,
            outcome,
            words: String::new(),
            inconclusive_cause: None,
            expected_met: met,
            expected: expected.into(),
            reason: format!("{mode} reason"),
            counts: sinkhole_checker::Counts {
                expected: 40000,
                committed: 40000 - lost,
                lost,
                ..sinkhole_checker::Counts::default()
            },
            verdict: None,
            wall_ms: 20_000,
            checked: true,
        };
        let rows = vec![
            row(SinkMode::Legacy, Outcome::Pass, Some(true), "lost>0", 2000),
            row(SinkMode::TwopcInject, Outcome::Pass, Some(true), "clean", 0),
            ModeSummary {
                checked: false,
                words: "inconclusive — broker cannot run the mode".into(),
                inconclusive_cause: Some(Cause::BrokerCannotRun),
                ..row(SinkMode::Kip939, Outcome::Inconclusive, None, "clean", 0)
            },
        ];
        let t = render_table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines,
            [
                "mode         | records | committed | lost | duplicated | job s | committed/s | verdict",
                "-------------|---------|-----------|------|------------|-------|-------------|------------------------------------------",
                "legacy       |   40000 |     38000 | 2000 |          0 |  20.0 |        1900 | LOST 2000 (expected)",
                "twopc-inject |   40000 |     40000 |    0 |          0 |  20.0 |        2000 | clean (expected)",
                "kip939       |   40000 |         - |    - |          - |  20.0 |           - | inconclusive — broker cannot run the mode",
                "legacy: legacy reason",
                "twopc-inject: twopc-inject reason",
                "kip939: kip939 reason",
            ]
        );
        assert_eq!(exit_code(&rows), 0);
        let mut rows = rows;
        rows.push(row(SinkMode::AtLeastOnce, Outcome::Fail, Some(false), "duplicated>0", 0));
        assert_eq!(exit_code(&rows), 1);
        rows[3].outcome = Outcome::Observed;
        assert_eq!(exit_code(&rows), 0);
        // --fail-on-inconclusive: kip939's inconclusive fails the run.
        assert_eq!(exit_code_with(&rows, Policy { fail_on_inconclusive: true }), 1);
        // The rig failing for a mode: its own outcome and exit 3.
        rows.push(rig_failed(SinkMode::RdkafkaTxn, "clean".into(), "running mode rdkafka-txn: spawn failed"));
        assert_eq!(exit_code(&rows), 3);
        let t = render_table(&rows);
        assert!(t.lines().any(|l| l.starts_with("at-least-once") && l.ends_with("| clean (no expectation)")), "{t}");
        assert!(t.lines().any(|l| l.starts_with("rdkafka-txn") && l.ends_with("| rig error")), "{t}");
        assert!(t.contains("rdkafka-txn: the rig failed: running mode rdkafka-txn: spawn failed"), "{t}");
    }

    #[test]
    fn old_rows_of_a_rig_failure_read_as_error() {
        let old = ModeSummary {
            outcome: Outcome::Fail,
            words: String::new(),
            ..rig_failed(SinkMode::Legacy, "clean".into(), "checking mode legacy: drain timed out")
        };
        let judged_fail = ModeSummary { reason: "expected clean: 1 lost".into(), ..old.clone() };
        let mut s = Summary {
            run_id: "r".into(),
            scenario: "s".into(),
            source: "s.yaml".into(),
            kafka: "4.4.0".into(),
            seed: 1,
            dir: "/tmp".into(),
            modes: vec![old, judged_fail],
            exit_code: 1,
            fail_on_inconclusive: false,
            started: None,
            wall_ms: None,
            ..Default::default()
        };
        s.upgrade();
        assert_eq!(s.modes[0].outcome, Outcome::Error);
        assert_eq!(s.modes[1].outcome, Outcome::Fail, "a judged failure stays one");
        assert_eq!(s.modes[0].words(), "rig error");
    }

    /// Rows written before the words existed: made from what the row holds,
    /// the job's end told by the outcome and the expectation where only one
    /// end can have led there.
    #[test]
    fn old_rows_get_words_from_what_they_hold() {
        let row = |outcome, expected: &str, lost, checked| ModeSummary {
            mode: SinkMode::Legacy,
            outcome,
            words: String::new(),
            inconclusive_cause: None,
            expected_met: None,
            expected: expected.into(),
            reason: "the reason".into(),
            counts: sinkhole_checker::Counts { expected: 500, committed: 500 - lost, lost, ..Default::default() },
            verdict: None,
            wall_ms: 1,
            checked,
        };
        let cases = [
            (row(Outcome::Pass, "lost>0", 306, true), "LOST 306 (expected)"),
            (row(Outcome::Pass, "clean", 0, true), "clean (expected)"),
            (row(Outcome::Fail, "clean", 3, true), "LOST 3 — expected clean"),
            (row(Outcome::Fail, "clean", 0, true), "job failed — expected clean"),
            (row(Outcome::Fail, "-", 0, true), "job failed — not expected"),
            (row(Outcome::Fail, "lost>0", 0, true), "clean — expected lost>0"),
            (row(Outcome::Pass, "refused", 0, false), "refused by the broker (expected)"),
            (row(Outcome::Pass, "job-failed", 0, true), "job failed (expected)"),
            (row(Outcome::Observed, "-", 306, true), "LOST 306 (no expectation)"),
            (row(Outcome::Inconclusive, "clean", 0, false), "inconclusive — output not checked"),
            (row(Outcome::Inconclusive, "lost>0", 0, true), "inconclusive"),
            (row(Outcome::Inconclusive, "clean", 7, true), "LOST 7, inconclusive"),
        ];
        for (r, want) in cases {
            assert_eq!(r.words(), want, "{:?} {}", r.outcome, r.expected);
            let json = serde_json::to_value(&r).unwrap();
            assert!(json.get("words").is_none() && json.get("inconclusive_cause").is_none(), "{json}");
        }
        // Words a verdict made win over the row's guess.
        let r = ModeSummary {
            words: "LOST 3, inconclusive — fault fired late".into(),
            ..row(Outcome::Inconclusive, "clean", 3, true)
        };
        assert_eq!(r.words(), "LOST 3, inconclusive — fault fired late");
    }
    #[test]
    fn text_is_the_table_the_latency_lines_and_the_directory() {
        let dir = std::env::temp_dir().join(format!("sinkhole-summary-text-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let vpath = dir.join("verdict.json");
        std::fs::write(
            &vpath,
            r#"{"latency": {"commit": {"p50": 2100, "p90": 5000, "p99": 9800, "p99.9": 12000, "max": 15000, "count": 9}}}"#,
        )
        .unwrap();
        let row = |mode, verdict| ModeSummary {
            mode,
            outcome: Outcome::Pass,
            words: "clean (expected)".into(),
            inconclusive_cause: None,
            expected_met: Some(true),
            expected: "clean".into(),
            reason: "clean as expected".into(),
            counts: sinkhole_checker::Counts { expected: 10, committed: 10, ..sinkhole_checker::Counts::default() },
            verdict,
            wall_ms: 1000,
            checked: true,
        };
        let s = Summary {
            run_id: "r".into(),
            scenario: "s".into(),
            source: "s.yaml".into(),
            kafka: "4.4.0".into(),
            seed: 1,
            dir: dir.clone(),
            modes: vec![row(SinkMode::Legacy, Some(vpath)), row(SinkMode::Kip939, None)],
            exit_code: 0,
            fail_on_inconclusive: false,
            started: None,
            wall_ms: None,
            ..Default::default()
        };
        let text = render_text(&s);
        let table = render_table(&s.modes);
        assert_eq!(
            text,
            format!("{table}legacy latency µs p50/p99/max: commit 2100/9800/15000\nresults: {}\n", dir.display())
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
