//! The checker again, offline, on one stored mode directory: the counts and
//! examples re-computed from what the drain saved, with no cluster.
//!
//! Everything the count needs is in the mode directory: `drained.bin` (what
//! the drain read), `history.jsonl`, and `drained.partitions.json` (where
//! each partition's drain ended). What only the run knew comes from its old
//! verdict, handed in by the caller as plain values ([`Stored`]): this module
//! reads no verdict and judges nothing (that is `results::recheck`, above the
//! verdict), so the checker stays below everything that uses it.
use std::path::PathBuf;

use anyhow::anyhow;
use sinkhole_base::rundir::{ModeDir, RunDir};
use sinkhole_model::{Event, EventKind};

use super::{recheck_with, store, CheckReport, CheckerError, Expected, HistoryIndex, PartitionDrain, UncommittedTail};

/// What the stored verdict says that the files of the mode directory do not.
#[derive(Debug, Clone, Copy)]
pub struct Stored<'a> {
    pub run_id: &'a str,
    /// parallelism × records_per_subtask, for a mode directory copied
    /// without the run's `scenario.yaml`.
    pub expected_records: u64,
    /// The stuck partitions the old verdict recorded: where the drain ended,
    /// for runs older than `drained.partitions.json`.
    pub uncommitted_tail: &'a [UncommittedTail],
}

/// A mode's output counted again.
#[derive(Debug, Clone)]
pub struct Recount {
    pub report: CheckReport,
    /// The files it was counted from.
    pub history: PathBuf,
    pub drained: PathBuf,
    /// The history's events, read once: the readers' check judges against them too.
    pub events: Vec<Event>,
}

/// A checker error as one message: its Display already names the file and
/// the cause (every error here is the stored files', i.e. the user's input).
fn flat(e: CheckerError) -> anyhow::Error {
    anyhow!("{e}")
}

/// Parallelism and records per subtask: from the resolved scenario, or
/// (a mode directory copied alone) from the history's workers and the
/// verdict's expected count.
fn expected(run_dir: &RunDir, stored: &Stored<'_>, events: &[Event]) -> anyhow::Result<Expected> {
    let scenario = run_dir.scenario();
    if scenario.is_file() {
        let s = sinkhole_scenario::load(&scenario).map_err(|e| anyhow!(e.render()))?;
        return Ok(Expected {
            run_id: stored.run_id.to_string(),
            parallelism: s.job.parallelism,
            records_per_subtask: s.job.records_per_subtask,
        });
    }
    let p = events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::WorkerStarted { subtask, .. } => Some(subtask + 1),
            _ => None,
        })
        .max()
        .ok_or_else(|| {
            anyhow!(
                "{}: missing, and the history names no worker: cannot tell the job's parallelism",
                scenario.display()
            )
        })?;
    Ok(Expected {
        run_id: stored.run_id.to_string(),
        parallelism: p,
        records_per_subtask: stored.expected_records / u64::from(p),
    })
}

/// Counts the output of the mode directory `dir` of the run in `run_dir`
/// again. Every error is the stored files' (bad input), as one message
/// naming the file.
pub fn recount(
    run_dir: &RunDir,
    dir: &ModeDir,
    stored: &Stored<'_>,
    warn: &mut dyn FnMut(&str),
) -> anyhow::Result<Recount> {
    let hpath = dir.history();
    let h = sinkhole_history::read(&hpath).map_err(|e| anyhow!("{e}"))?;
    if h.torn_tail {
        warn(&format!("{}: the last line is torn (the writer died mid-line); skipped", hpath.display()));
    }
    let exp = expected(run_dir, stored, &h.events)?;
    let index = HistoryIndex::from_events(&h.events);
    let ppath = dir.drained_partitions();
    let partitions: Vec<PartitionDrain> = if ppath.is_file() {
        store::read_partitions(&ppath).map_err(flat)?
    } else {
        // Older runs: only the stuck partitions are known.
        stored
            .uncommitted_tail
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
    let dpath = dir.drained();
    let report = recheck_with(&dpath, &exp, &index, &partitions).map_err(flat)?;
    Ok(Recount { report, history: hpath, drained: dpath, events: h.events })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_model::{SinkMode, Source};

    fn started(subtask: u32) -> Event {
        Event {
            wall_ms: 0,
            mono_us: 0,
            mode: SinkMode::Legacy,
            source: Source::Coordinator,
            kind: EventKind::WorkerStarted { subtask, pid: 1, attempt: 0 },
        }
    }

    #[test]
    fn without_the_scenario_the_history_names_the_parallelism() {
        let dir = std::env::temp_dir().join(format!("sinkhole-offline-expected-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let stored = Stored { run_id: "r-1", expected_records: 3000, uncommitted_tail: &[] };
        let run = RunDir::at(&dir);
        let e = expected(&run, &stored, &[started(0), started(2), started(1)]).unwrap();
        assert_eq!((e.run_id.as_str(), e.parallelism, e.records_per_subtask), ("r-1", 3, 1000));
        let err = expected(&run, &stored, &[]).unwrap_err().to_string();
        assert!(
            err.ends_with("scenario.yaml: missing, and the history names no worker: cannot tell the job's parallelism"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_history_is_one_message_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("sinkhole-offline-recount-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let stored = Stored { run_id: "r-1", expected_records: 10, uncommitted_tail: &[] };
        let err = recount(&RunDir::at(&dir), &ModeDir::at(&dir), &stored, &mut |_| {}).unwrap_err();
        assert_eq!(err.chain().count(), 1, "{err:#}");
        assert!(err.to_string().contains(&dir.join("history.jsonl").display().to_string()), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
