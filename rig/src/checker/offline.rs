//! `sinkhole check RESULTS_DIR`: the checker again, offline, on a stored run.
//!
//! Everything it needs is in the run directory: each mode's `drained.bin`
//! (what the drain read), `history.jsonl`, `drained.partitions.json` (where
//! each partition's drain ended; runs older than that file fall back to the
//! uncommitted tail the old verdict recorded), and the old `verdict.json` for
//! what only the run could know (the job's outcome, the faults and their
//! confirmed effects, the expectation). The verdict is judged again by the
//! same rules as `sinkhole run`, and verdict.json, summary.json and
//! junit.xml are rewritten. No cluster is needed.
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};

use super::{history, recheck_with, store, Expected, HistoryIndex, PartitionDrain};
use crate::run::{self, ModeSummary, RunError, Summary};
use crate::verdict::{self, Verdict};

/// Where the results are: a run directory, or one mode directory in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub run_dir: PathBuf,
    /// The mode directories to re-check (each has a verdict.json).
    pub mode_dirs: Vec<PathBuf>,
    pub has_summary: bool,
}

pub fn layout(dir: &Path) -> Result<Layout, RunError> {
    if !dir.is_dir() {
        return Err(RunError::BadInput(anyhow!("{}: no such results directory", dir.display())));
    }
    if dir.join("verdict.json").is_file() {
        let run_dir = dir.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
        let has_summary = run_dir.join("summary.json").is_file();
        return Ok(Layout { run_dir, mode_dirs: vec![dir.to_path_buf()], has_summary });
    }
    if dir.join("summary.json").is_file() || dir.join("scenario.yaml").is_file() {
        let mut mode_dirs: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("verdict.json").is_file())
            .collect();
        mode_dirs.sort();
        if mode_dirs.is_empty() {
            return Err(RunError::BadInput(anyhow!("{}: no mode directory with a verdict.json", dir.display())));
        }
        return Ok(Layout { run_dir: dir.to_path_buf(), mode_dirs, has_summary: dir.join("summary.json").is_file() });
    }
    Err(RunError::BadInput(anyhow!(
        "{}: not a results directory (no summary.json, scenario.yaml or verdict.json)",
        dir.display()
    )))
}

/// A checker error as bad input (the files are the input here), as one
/// message: its Display already names the file and the cause.
fn bad(e: super::CheckerError) -> RunError {
    RunError::BadInput(anyhow!("{e}"))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, RunError> {
    let text =
        std::fs::read_to_string(path).map_err(|e| RunError::BadInput(anyhow!("reading {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| RunError::BadInput(anyhow!("{}: {e}", path.display())))
}

/// Parallelism and records per subtask: from the resolved scenario, or
/// (a mode directory copied alone) from the history's workers and the
/// verdict's expected count.
fn expected(run_dir: &Path, v: &Verdict, events: &[sinkhole_workloads::model::Event]) -> Result<Expected, RunError> {
    let scenario = run_dir.join("scenario.yaml");
    if scenario.is_file() {
        let s = crate::scenario::load(&scenario).map_err(|e| RunError::BadInput(anyhow!(e.render())))?;
        return Ok(Expected {
            run_id: v.run_id.clone(),
            parallelism: s.job.parallelism,
            records_per_subtask: s.job.records_per_subtask,
        });
    }
    use sinkhole_workloads::model::EventKind;
    let p = events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::WorkerStarted { subtask, .. } => Some(subtask + 1),
            _ => None,
        })
        .max()
        .ok_or_else(|| {
            RunError::BadInput(anyhow!(
                "{}: missing, and the history names no worker: cannot tell the job's parallelism",
                scenario.display()
            ))
        })?;
    Ok(Expected { run_id: v.run_id.clone(), parallelism: p, records_per_subtask: v.counts.expected / u64::from(p) })
}

/// Re-checks one mode directory and rewrites its verdict.json.
pub fn recheck_mode(run_dir: &Path, dir: &Path, warn: &mut dyn FnMut(&str)) -> Result<Verdict, RunError> {
    let vpath = dir.join("verdict.json");
    let mut v: Verdict = read_json(&vpath)?;
    // A mode the broker could not run was never drained (verdicts written
    // before `checked` existed say true by default).
    let checked = v.checked && !matches!(v.job, crate::history::JobOutcome::Unsupported { .. });
    let report = if checked {
        let hpath = dir.join("history.jsonl");
        let h = history::read(&hpath).map_err(bad)?;
        if h.torn_tail {
            warn(&format!("{}: the last line is torn (the writer died mid-line); skipped", hpath.display()));
        }
        let exp = expected(run_dir, &v, &h.events)?;
        let index = HistoryIndex::from_events(&h.events);
        let ppath = dir.join(store::PARTITIONS_FILE);
        let partitions: Vec<PartitionDrain> = if ppath.is_file() {
            store::read_partitions(&ppath).map_err(bad)?
        } else {
            // Older runs: only the stuck partitions are known.
            v.uncommitted_tail
                .iter()
                .map(|t| PartitionDrain {
                    partition: t.partition,
                    low_watermark: 0,
                    high_watermark: t.high_watermark,
                    position: t.position,
                    records: 0,
                })
                .collect()
        };
        let dpath = dir.join(store::FILE_NAME);
        let r = recheck_with(&dpath, &exp, &index, &partitions).map_err(bad)?;
        v.history = hpath;
        v.drained = dpath;
        Some(r)
    } else {
        None
    };
    v.checked = checked;
    let j = verdict::judge(v.expectation.as_ref(), &v.job, &v.faults, report.as_ref());
    v.outcome = j.outcome;
    v.expected_met = j.expected_met;
    v.reason = j.reason;
    if let Some(r) = report {
        v.counts = r.counts;
        v.examples = r.examples;
        v.uncommitted_tail = r.uncommitted_tail;
    }
    verdict::write(dir, &v).with_context(|| format!("writing {}", vpath.display()))?;
    Ok(v)
}

/// Re-checks every mode of `dir` (see [`layout`]) and rewrites verdicts,
/// summary.json and junit.xml.
pub fn check_results(dir: &Path, warn: &mut dyn FnMut(&str)) -> Result<Summary, RunError> {
    let l = layout(dir)?;
    let mut verdicts = Vec::new();
    for m in &l.mode_dirs {
        verdicts.push((recheck_mode(&l.run_dir, m, warn)?, m.join("verdict.json")));
    }
    let mut summary: Summary = if l.has_summary {
        read_json(&l.run_dir.join("summary.json"))?
    } else {
        let v = &verdicts[0].0;
        Summary {
            run_id: v.run_id.clone(),
            scenario: v.scenario.clone(),
            source: l.run_dir.join("scenario.yaml"),
            kafka: v.kafka.clone(),
            seed: v.seed,
            dir: l.run_dir.clone(),
            modes: Vec::new(),
            exit_code: 0,
        }
    };
    for (v, path) in &verdicts {
        let row: ModeSummary = run::summarize(v, Some(path.clone()));
        match summary.modes.iter_mut().find(|m| m.mode == v.mode) {
            // Only what the check decides; the rest of the row is the run's.
            Some(m) => {
                m.outcome = row.outcome;
                m.expected_met = row.expected_met;
                m.reason = row.reason;
                m.counts = row.counts;
                m.checked = row.checked;
                m.verdict = row.verdict;
            }
            None => summary.modes.push(row),
        }
    }
    summary.dir = l.run_dir.clone();
    summary.exit_code = run::exit_code(&summary.modes);
    let spath = l.run_dir.join("summary.json");
    std::fs::write(&spath, serde_json::to_string_pretty(&summary)? + "\n")
        .with_context(|| format!("writing {}", spath.display()))?;
    crate::junit::write(&l.run_dir, &summary)
        .with_context(|| format!("writing junit.xml in {}", l.run_dir.display()))?;
    if let Err(e) = crate::report::write_report(&l.run_dir) {
        warn(&format!("report.html not rewritten: {e:#}"));
    }
    Ok(summary)
}

/// `sinkhole check`: prints the table (or the summary as JSON) and returns
/// the exit code, as `sinkhole run` does.
pub fn run(dir: &Path, json: bool) -> Result<u8, RunError> {
    let summary = check_results(dir, &mut |w| eprintln!("sinkhole: warning: {w}"))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", run::render_table(&summary.modes));
        let verdicts: Vec<_> = summary.modes.iter().map(|m| (m.mode, m.verdict.clone())).collect();
        print!("{}", crate::latency::render_lines(&verdicts));
        println!("results: {}", summary.dir.display());
    }
    Ok(summary.exit_code)
}
