//! The report from synthetic results directories: a two-mode run whose
//! legacy mode lost a checkpoint's transactions during a job outage.
use std::path::{Path, PathBuf};

use sinkhole_model::{CommitOutcome, Committable, Event, EventKind, SinkMode, Source, TxnProtocol};

use super::data::Timeline;
use super::*;
use sinkhole_base::rundir::ModeDir;
use sinkhole_checker::latency::Metric;
use sinkhole_checker::verdict::{self, VerdictInput};
use sinkhole_checker::{CheckReport, Counts, Example};
use sinkhole_history::{FaultRecord, JobOutcome, ModeOutcome};
use sinkhole_scenario::{Condition, CountName, ExpectWord, Expectation};

const T0: u64 = 1_800_000_000_000;
const FAULT: &str = "outage-1";

/// A history: (ms since T0, source, event).
struct H(Vec<Event>, SinkMode);

impl H {
    fn at(&mut self, ms: u64, subtask: Option<u32>, kind: EventKind) {
        let source = subtask.map_or(Source::Coordinator, |subtask| Source::Worker { subtask });
        self.0.push(Event { wall_ms: T0 + ms, mono_us: ms * 1000, mode: self.1, source, kind });
    }
}

fn tid(mode: SinkMode, s: u32, c: u64) -> String {
    format!("sinkhole-t-{}-{s}-{c}", mode.name())
}

/// Two subtasks, four checkpoints a second apart, a job outage from 2.5 s to
/// 8 s after checkpoint 2; checkpoint 2's commits on restore are dropped
/// (`lose`) or committed.
fn history(mode: SinkMode, lose: bool) -> Vec<Event> {
    let mut h = H(Vec::new(), mode);
    h.at(0, None, EventKind::JobStarted { attempt: 0, restored_from: None });
    let mut t = 0;
    for c in 1..=4u64 {
        t = if c <= 2 { c * 1000 } else { 8000 + (c - 2) * 1000 };
        h.at(t, None, EventKind::CheckpointTriggered { id: c });
        for s in 0..2 {
            h.at(t + 2, Some(s), EventKind::ProduceAcked { records: 100, latency_us: 3000 });
            let committable = Committable {
                checkpoint: c,
                transactional_id: tid(mode, s, c),
                producer_id: 1,
                producer_epoch: 0,
                protocol: TxnProtocol::V2,
                records: 100,
                first_seq: Some((c - 1) * 100),
                last_seq: Some(c * 100 - 1),
            };
            h.at(t + 3, Some(s), EventKind::TxnPrecommitted { committable, flush_us: 700 + s as u64 * 100 });
        }
        h.at(t + 10, None, EventKind::CheckpointPersisted { id: c, path: format!("chk-{c}.json") });
        if c == 2 {
            h.at(
                2500,
                None,
                EventKind::FaultStarted {
                    name: FAULT.into(),
                    fault: "job-outage".into(),
                    effect: serde_json::Value::Null,
                },
            );
            h.at(2501, None, EventKind::FailureDetected { subtask: Some(0), reason: "killed <by> the fault".into() });
            h.at(8000, None, EventKind::JobStarted { attempt: 1, restored_from: Some(2) });
            h.at(
                8000,
                None,
                EventKind::FaultEnded {
                    name: FAULT.into(),
                    fault: "job-outage".into(),
                    effect: serde_json::Value::Null,
                },
            );
            for s in 0..2 {
                let outcome = if lose {
                    CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() }
                } else {
                    CommitOutcome::Committed
                };
                h.at(
                    8005,
                    Some(s),
                    EventKind::CommitFinished {
                        transactional_id: tid(mode, s, 2),
                        checkpoint: 2,
                        restored: true,
                        outcome,
                        latency_us: 9000,
                    },
                );
            }
            continue;
        }
        h.at(t + 11, None, EventKind::CheckpointNotified { id: c });
        for s in 0..2 {
            h.at(
                t + 15,
                Some(s),
                EventKind::CommitFinished {
                    transactional_id: tid(mode, s, c),
                    checkpoint: c,
                    restored: false,
                    outcome: CommitOutcome::Committed,
                    latency_us: 2000,
                },
            );
        }
    }
    h.at(t + 20, None, EventKind::JobFinished { outcome: "finished".into(), attempts: 2 });
    h.0
}

fn write_history(dir: &Path, events: &[Event]) {
    let text: String = events.iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect();
    std::fs::write(dir.join("history.jsonl"), text).unwrap();
}

/// A results directory with `legacy` (lost, its reason carrying a script
/// tag) and `twopc-inject` (clean).
fn results(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sinkhole-report-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = sinkhole_scenario::load(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/flip319-long-outage.yaml"),
    )
    .unwrap();
    std::fs::write(dir.join("scenario.yaml"), serde_saphyr::to_string(&scenario).unwrap()).unwrap();
    let mut rows = Vec::new();
    for (mode, lose) in [(SinkMode::Legacy, true), (SinkMode::TwopcInject, false)] {
        let mdir = dir.join(mode.name());
        std::fs::create_dir_all(&mdir).unwrap();
        write_history(&mdir, &history(mode, lose));
        let lost = if lose { 200 } else { 0 };
        let mut report = CheckReport {
            counts: Counts { expected: 800, committed: 800 - lost, lost, ..Counts::default() },
            ..CheckReport::default()
        };
        if lose {
            for s in 0..2 {
                report.examples.lost.push(Example {
                    subtask: Some(s),
                    seq: Some(100),
                    seq_end: Some(199),
                    transactional_id: Some(tid(mode, s, 2)),
                    checkpoint: None, // older verdicts: the history names it
                    detail: format!("subtask {s} seq 100–199 lost"),
                    ..Example::default()
                });
            }
        }
        let expect = if lose {
            Expectation::Counts([(CountName::Lost, Condition::Expr(">0".into()))].into())
        } else {
            Expectation::Word(ExpectWord::Clean)
        };
        let outcome = ModeOutcome {
            job: JobOutcome::Finished,
            attempts: 2,
            checkpoints_completed: 4,
            history: mdir.join("history.jsonl"),
            faults: vec![FaultRecord {
                name: FAULT.into(),
                kind: "job-outage".into(),
                fired: true,
                confirmed: true,
                effect: sinkhole_history::fault::FaultEffect::Skipped { skipped: String::new() },
            }],
            committables_dropped: if lose { 2 } else { 0 },
            wall_ms: 10_000,
        };
        let mut v = verdict::build(VerdictInput {
            scenario: "flip319-long-outage",
            run_id: "run-<1>",
            mode,
            expectation: Some(&expect),
            premises: vec![],
            outcome: &outcome,
            report: Some(&report),
            kafka: "4.4.0",
            seed: 7,
            drained: mdir.join("drained.bin"),
        });
        if lose {
            v.reason = "lost <script>alert(1)</script> & more".into();
        }
        let path = verdict::write(&ModeDir::at(&mdir), &v).unwrap();
        rows.push(crate::results::summary::summarize(&v, Some(path)));
    }
    let summary = Summary {
        run_id: "run-<1>".into(),
        scenario: "flip319-long-outage".into(),
        source: "scenarios/flip319-long-outage.yaml".into(),
        kafka: "4.4.0".into(),
        seed: 7,
        dir: dir.clone(),
        modes: rows,
        exit_code: 0,
        fail_on_inconclusive: false,
        started: None,
        wall_ms: None,
        ..Default::default()
    };
    std::fs::write(dir.join("summary.json"), serde_json::to_string(&summary).unwrap()).unwrap();
    dir
}

/// The cell of the side-by-side grid with this id.
fn cell<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no element {id}"));
    let rest = &html[start..];
    let end = rest.find("<div class=\"mode\" ").or_else(|| rest.find("</section>")).unwrap();
    &rest[..end]
}

fn count(h: &str, s: &str) -> usize {
    h.matches(s).count()
}

#[test]
fn report_is_balanced_and_escapes_user_text() {
    let dir = results("balanced");
    let path = write_report(&RunDir::at(&dir)).unwrap();
    assert_eq!(path, dir.join("report.html"));
    let html = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    for tag in ["html", "head", "body", "section", "table", "svg", "details", "ol", "ul", "header"] {
        let open = count(&html, &format!("<{tag}>")) + count(&html, &format!("<{tag} "));
        assert_eq!(open, count(&html, &format!("</{tag}>")), "<{tag}> unbalanced");
    }
    assert_eq!(count(&html, "<div"), count(&html, "</div>"));
    assert_eq!(count(&html, "<svg"), count(&html, "</svg>"));
    for section in ["verdict", "settings", "latency", "distributions", "throughput", "checkpoints", "anomalies"] {
        assert_eq!(count(&html, &format!("<section id=\"{section}\">")), 1, "section {section}");
    }
    // No script at all, and the user's strings escaped.
    assert!(!html.contains("<script"), "unescaped script tag");
    assert!(html.contains("lost &lt;script&gt;alert(1)&lt;/script&gt; &amp; more"));
    assert!(html.contains("run-&lt;1&gt;"));
    assert!(html.contains("failure detected: killed &lt;by&gt; the fault"));
    // Self-contained: nothing to fetch.
    for external in ["<link", "<img", " src=", "href=\"http", "url("] {
        assert!(!html.contains(external), "{external}");
    }
}

#[test]
fn every_mode_has_its_column_and_verdict() {
    let dir = results("modes");
    let html = std::fs::read_to_string(write_report(&RunDir::at(&dir)).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    for m in ["legacy", "twopc-inject"] {
        for section in ["latency-commit", "distribution", "throughput", "checkpoints", "anomalies"] {
            assert!(html.contains(&format!("id=\"{section}-{m}\"")), "{section}-{m}");
        }
        assert!(html.contains(&format!("<tr class=\"pass\"><td>{m}</td>")), "verdict row of {m}");
    }
    // The verdict in words, what happened to the data first: in the table
    // (the expectation on hover) and on every mode's heading.
    assert!(html.contains("<td class=\"outcome\" title=\"expected: lost&gt;0\">LOST 200 (expected)</td>"), "{html}");
    assert!(html.contains("<td class=\"outcome\" title=\"expected: clean\">clean (expected)</td>"));
    assert!(html.contains("<th>committed/s</th><th>verdict</th></tr>"), "one column of words");
    let head = "<div class=\"mode-head\">legacy <span class=\"badge pass\">LOST 200 (expected)</span></div>";
    assert!(count(&html, head) >= 5, "one per section");
    let legacy = cell(&html, "anomalies-legacy");
    assert!(legacy.contains("data-kind=\"lost\""), "{legacy}");
    assert!(legacy.contains("lost: 200 (2 examples)"));
    // The transactional id and the checkpoint it belonged to (from the history).
    assert!(legacy.contains("sinkhole-t-legacy-0-2"));
    assert!(legacy.contains("<td class=\"num\">2</td><td class=\"tid\">sinkhole-t-legacy-1-2</td>"), "{legacy}");
    let clean = cell(&html, "anomalies-twopc-inject");
    assert!(clean.contains("class=\"clean\""), "{clean}");
    assert!(!clean.contains("data-kind=\"lost\""));
}

#[test]
fn fault_band_is_drawn_and_labelled_on_latency_plots() {
    let dir = results("band");
    let html = std::fs::read_to_string(write_report(&RunDir::at(&dir)).unwrap()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let fill = {
        let c = charts::FAULT;
        format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2)
    };
    for id in ["latency-commit-legacy", "latency-checkpoint-twopc-inject", "throughput-legacy", "checkpoints-legacy"] {
        let c = cell(&html, id);
        let svg = &c[c.find("<svg").unwrap_or_else(|| panic!("{id}: no svg"))..];
        assert!(svg.lines().any(|l| l.contains("<rect") && l.contains(&fill)), "{id}: no fault band");
        assert!(svg.contains(&format!("{FAULT} (job-outage)")), "{id}: no fault label");
    }
}

#[test]
fn timeline_reads_faults_checkpoints_and_throughput() {
    let t = Timeline::from_events(&history(SinkMode::Legacy, true));
    assert_eq!(t.faults.len(), 1);
    assert_eq!(t.faults[0].label, format!("{FAULT} (job-outage)"));
    assert_eq!((t.faults[0].start_s, t.faults[0].end_s), (2.5, Some(8.0)));
    assert_eq!(t.down.len(), 1);
    assert_eq!((t.down[0].start_s, t.down[0].end_s), (2.501, Some(8.0)));
    assert_eq!(t.restores.len(), 1);
    assert_eq!(t.restores[0].label, "restore from chk 2");
    // Checkpoint 2: persisted, never notified, its commits dropped on restore.
    let c2 = t.checkpoints.iter().find(|c| c.id == 2).unwrap();
    assert!(c2.persisted.is_some() && c2.notified.is_none() && c2.committed.is_none());
    assert_eq!(c2.commit_errors, vec![8.005, 8.005]);
    assert_eq!(c2.restored, vec![8.0]);
    // Committed records: 2 × 100 at 1 s, 2 s (not at 8 s: dropped), 9 s, 10 s.
    let committed: u64 = t.committed_per_s.iter().sum();
    assert_eq!(committed, 600);
    assert_eq!(t.committed_per_s[8], 0);
    assert_eq!(t.acked_per_s.iter().sum::<u64>(), 800);
    let commits = &t.samples[&Metric::Commit];
    let bad = commits.iter().find(|s| s.name == "dropped / failed").unwrap();
    assert_eq!(bad.points, vec![(8.005, 9000), (8.005, 9000)]);
    assert!(t.samples[&Metric::Checkpoint][0].points.iter().all(|p| p.1 == 10_000));

    // Committed on restore, the clean side: counted at the restore.
    let t = Timeline::from_events(&history(SinkMode::TwopcInject, false));
    assert_eq!(t.committed_per_s[8], 200);
    assert_eq!(t.committed_per_s.iter().sum::<u64>(), 800);
}

#[test]
fn axis_helpers() {
    assert_eq!(charts::fmt_ms(0.25), "250 µs");
    assert_eq!(charts::fmt_ms(20.5), "20.5 ms");
    assert_eq!(charts::fmt_ms(12_134.0), "12.1 s");
    assert_eq!(charts::percentile_label(2.0), "99%");
    assert_eq!(charts::percentile_label(3.0), "99.9%");
    assert_eq!(charts::percentile_label(0.5), "");
    let (lo, hi) = charts::log_range_ms([2_000u64, 9_000].into_iter());
    assert_eq!((lo, hi), (0.1, 10.0));
    let segs = charts::segments(&[(0.5, 1.0), (1.5, 1.0), (5.5, 2.0)], 1.5);
    assert_eq!(segs.len(), 2);
    assert_eq!(esc("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
}

#[test]
fn a_directory_without_modes_is_an_error() {
    let dir = std::env::temp_dir().join(format!("sinkhole-report-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let e = write_report(&RunDir::at(&dir)).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(e.to_string().contains("no mode to report"), "{e}");
}
