//! `sinkhole check RESULTS_DIR`: a stored run judged again, offline.
//!
//! Each mode's output is counted again by the checker
//! ([`sinkhole_checker::offline`]: `drained.bin`, `history.jsonl`,
//! `drained.partitions.json`); the old `verdict.json` supplies what only the
//! run could know (the job's outcome, the faults and their confirmed effects,
//! the expectation, the premises as they were judged, a share group's view
//! and its counts). The verdict is judged again by the same rules as
//! `sinkhole run`, and verdict.json, summary.json, junit.xml and report.html
//! are rewritten. No cluster is needed.
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};

use crate::results::exit::Policy;
use crate::results::summary::{self, ModeSummary, Summary};
use sinkhole_base::rundir::{ModeDir, RunDir};
use sinkhole_checker::offline::{self, Stored};
use sinkhole_checker::verdict::{self, Verdict};

/// Exit 2 (the stored files are the input) or exit 3 (the work, e.g.
/// writing the new files).
#[derive(Debug)]
pub enum RecheckError {
    BadInput(anyhow::Error),
    Failed(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for RecheckError {
    fn from(e: E) -> Self {
        RecheckError::Failed(e.into())
    }
}

/// Where the results are: a run directory, or one mode directory in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub run_dir: RunDir,
    /// The mode directories to re-check (each has a verdict.json).
    pub mode_dirs: Vec<ModeDir>,
    pub has_summary: bool,
}

pub fn layout(dir: &Path) -> Result<Layout, RecheckError> {
    if !dir.is_dir() {
        return Err(RecheckError::BadInput(anyhow!("{}: no such results directory", dir.display())));
    }
    let (as_mode, as_run) = (ModeDir::at(dir), RunDir::at(dir));
    if as_mode.has_verdict() {
        let run_dir = as_mode.run().unwrap_or_else(|| RunDir::at("."));
        let has_summary = run_dir.has_summary();
        return Ok(Layout { run_dir, mode_dirs: vec![as_mode], has_summary });
    }
    if as_run.has_summary() || as_run.scenario().is_file() {
        let mut mode_dirs: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| ModeDir::at(p).has_verdict())
            .collect();
        mode_dirs.sort();
        if mode_dirs.is_empty() {
            return Err(RecheckError::BadInput(anyhow!("{}: no mode directory with a verdict.json", dir.display())));
        }
        let has_summary = as_run.has_summary();
        return Ok(Layout {
            run_dir: as_run,
            mode_dirs: mode_dirs.into_iter().map(ModeDir::at).collect(),
            has_summary,
        });
    }
    Err(RecheckError::BadInput(anyhow!(
        "{}: not a results directory (no summary.json, scenario.yaml or verdict.json)",
        dir.display()
    )))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, RecheckError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| RecheckError::BadInput(anyhow!("reading {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| RecheckError::BadInput(anyhow!("{}: {e}", path.display())))
}

/// Re-checks one mode directory and rewrites its verdict.json.
pub fn recheck_mode(run_dir: &RunDir, dir: &ModeDir, warn: &mut dyn FnMut(&str)) -> Result<Verdict, RecheckError> {
    let vpath = dir.verdict();
    let mut v: Verdict = read_json(&vpath)?;
    // A mode the broker could not run was never drained (verdicts written
    // before `checked` existed say true by default).
    let checked = v.checked && !matches!(v.job, sinkhole_history::JobOutcome::Unsupported { .. });
    let report = if checked {
        let stored =
            Stored { run_id: &v.run_id, expected_records: v.counts.expected, uncommitted_tail: &v.uncommitted_tail };
        let mut r = offline::recount(run_dir, dir, &stored, warn).map_err(RecheckError::BadInput)?;
        // The brokers' looks were taken during the check: what they said is what the run left,
        // and whose doing an open transaction is follows from them and the history again.
        r.report.adopt_looks(&v.end_look, &v.uncommitted_tail);
        r.report.judge_open_transactions(&r.events);
        v.history = r.history;
        v.drained = r.drained;
        // A share group's counts are the group's, kept in its view: the output alone has none.
        if let Some(view) = v.share.as_mut() {
            view.fold_into(&mut r.report);
        }
        // What the live readers saw, re-judged from readers.jsonl against the same drain.
        v.reads = sinkhole_checker::check::check_reads_with(dir, &r.events)
            .map_err(|e| RecheckError::BadInput(anyhow!("{}: {e}", dir.reads().display())))?;
        if let Some(reads) = &v.reads {
            reads.add_to(&mut r.report.counts);
        }
        Some(r.report)
    } else {
        None
    };
    v.checked = checked;
    // The premises were observed during the run: their records are what the run left.
    let j = verdict::judge_with(v.expectation.as_ref(), &v.job, &v.faults, &v.premises, report.as_ref());
    v.outcome = j.outcome;
    v.expected_met = j.expected_met;
    v.reason = j.reason;
    v.inconclusive_cause = j.cause;
    if let Some(r) = report {
        v.counts = r.counts;
        v.examples = r.examples;
        v.uncommitted_tail = r.uncommitted_tail;
        v.end_look = r.end_look;
        v.hanging = r.hanging;
    }
    v.reword();
    verdict::write(dir, &v).with_context(|| format!("writing {}", vpath.display()))?;
    Ok(v)
}

/// Re-checks every mode of `dir` (see [`layout`]) and rewrites verdicts,
/// summary.json, junit.xml and report.html; the exit code by `policy`. A
/// mode the rig failed to run has no verdict to re-check: its row (outcome
/// `error`) stays as the run wrote it, and so exit code 3.
pub fn check_results(dir: &Path, policy: Policy, warn: &mut dyn FnMut(&str)) -> Result<Summary, RecheckError> {
    let l = layout(dir)?;
    let mut verdicts = Vec::new();
    for m in &l.mode_dirs {
        verdicts.push((recheck_mode(&l.run_dir, m, warn)?, m.verdict()));
    }
    let mut summary: Summary = if l.has_summary {
        let mut s: Summary = read_json(&l.run_dir.summary())?;
        s.upgrade();
        s
    } else {
        let v = &verdicts[0].0;
        Summary {
            run_id: v.run_id.clone(),
            scenario: v.scenario.clone(),
            source: l.run_dir.scenario(),
            kafka: v.kafka.clone(),
            seed: v.seed,
            dir: l.run_dir.path().to_path_buf(),
            modes: Vec::new(),
            exit_code: 0,
            fail_on_inconclusive: false,
            started: None,
            wall_ms: None,
            ..Default::default()
        }
    };
    for (v, path) in &verdicts {
        let row: ModeSummary = summary::summarize(v, Some(path.clone()));
        match summary.modes.iter_mut().find(|m| m.mode == v.mode) {
            // Only what the check decides; the rest of the row is the run's.
            Some(m) => {
                m.outcome = row.outcome;
                m.words = row.words;
                m.inconclusive_cause = row.inconclusive_cause;
                m.expected_met = row.expected_met;
                m.reason = row.reason;
                m.counts = row.counts;
                m.checked = row.checked;
                m.verdict = row.verdict;
            }
            None => summary.modes.push(row),
        }
    }
    summary.dir = l.run_dir.path().to_path_buf();
    summary.fail_on_inconclusive = policy.fail_on_inconclusive;
    summary.exit_code = summary::exit_code_with(&summary.modes, policy);
    let spath = l.run_dir.summary();
    std::fs::write(&spath, sinkhole_base::provenance::to_json(&summary)?)
        .with_context(|| format!("writing {}", spath.display()))?;
    crate::results::junit::write(&l.run_dir, &summary)
        .with_context(|| format!("writing junit.xml in {}", l.run_dir.path().display()))?;
    if let Err(e) = crate::results::report::write_report(&l.run_dir) {
        warn(&format!("report.html not rewritten: {e:#}"));
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sinkhole-recheck-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn bad_input(r: Result<Layout, RecheckError>) -> String {
        match r {
            Err(RecheckError::BadInput(e)) => e.to_string(),
            other => panic!("expected bad input, got {other:?}"),
        }
    }

    #[test]
    fn layout_finds_the_run_and_its_modes() {
        let run = scratch("layout");
        assert!(bad_input(layout(&run.join("nope"))).ends_with("nope: no such results directory"));
        assert!(bad_input(layout(&run)).contains("not a results directory"));
        std::fs::write(run.join("summary.json"), "{}").unwrap();
        assert!(bad_input(layout(&run)).ends_with("no mode directory with a verdict.json"));
        for m in ["legacy", "kip939"] {
            std::fs::create_dir_all(run.join(m)).unwrap();
            std::fs::write(run.join(m).join("verdict.json"), "{}").unwrap();
        }
        std::fs::create_dir_all(run.join("cluster")).unwrap();
        let l = layout(&run).unwrap();
        let (r, legacy) = (RunDir::at(&run), ModeDir::at(run.join("legacy")));
        assert_eq!(
            l,
            Layout {
                run_dir: r.clone(),
                mode_dirs: vec![ModeDir::at(run.join("kip939")), legacy.clone()],
                has_summary: true
            }
        );
        // One mode directory: its run is the parent.
        let l = layout(&run.join("legacy")).unwrap();
        assert_eq!(l, Layout { run_dir: r, mode_dirs: vec![legacy], has_summary: true });
        let _ = std::fs::remove_dir_all(&run);
    }

    #[test]
    fn a_damaged_verdict_is_bad_input_naming_the_file() {
        let run = scratch("damaged");
        std::fs::create_dir_all(run.join("legacy")).unwrap();
        std::fs::write(run.join("legacy").join("verdict.json"), "{").unwrap();
        let Err(RecheckError::BadInput(e)) =
            recheck_mode(&RunDir::at(&run), &ModeDir::at(run.join("legacy")), &mut |_| {})
        else {
            panic!("a damaged verdict.json accepted")
        };
        assert!(e.to_string().starts_with(&run.join("legacy").join("verdict.json").display().to_string()), "{e}");
        let _ = std::fs::remove_dir_all(&run);
    }
}
