//! The check itself, on top of the crate: drain the topic (or read a saved drain), index the
//! history, count, and explain an uncommitted tail. Online ([`check_mode`], right after a run)
//! and offline ([`recheck`], `sinkhole check`) take the same path through the counter.
use std::path::{Path, PathBuf};
use std::time::Duration;

use sinkhole_base::rundir::ModeDir;
use sinkhole_model::Event;

use crate::error::CheckerError;
use crate::reads::{self, ReadReport};
use crate::report::{CheckReport, DrainedRecord, Expected, PartitionDrain};
use crate::txns::HistoryIndex;
use crate::{count, drain, hanging, open_txn, store};

/// The pure check: counts and examples from the drained records (in the
/// order the drain read them), the history's transactions and how far each
/// partition's drain got. See [`count`] for how it counts.
pub fn check(
    expected: &Expected,
    records: &[DrainedRecord],
    history: &HistoryIndex,
    partitions: &[PartitionDrain],
) -> CheckReport {
    let mut c = count::Counter::new(expected, history);
    for r in records {
        c.observe(r.into());
    }
    if let Some(until) = c.second_pass_until() {
        for r in &records[..until as usize] {
            c.observe_again(r.into());
        }
    }
    c.finish(partitions)
}

/// What [`check_mode`] needs.
#[derive(Debug, Clone)]
pub struct CheckSpec {
    pub bootstrap: String,
    pub topic: String,
    pub expected: Expected,
    /// `history.jsonl` of the mode (missing = no attribution).
    pub history: Option<PathBuf>,
    /// The mode's directory: `drained.bin` is written there.
    pub dir: ModeDir,
    /// How long to wait for every partition to reach its high-water mark.
    pub timeout: Duration,
    /// The mode's transactional-id prefix: its transactions still open when the check begins
    /// are looked up under it ([`open_txn::look_at_end`]); None for a mode without transactions.
    pub tid_prefix: Option<String>,
}

/// Drains the topic, saves the records in `dir/drained.bin`, reads the
/// history, and checks.
pub async fn check_mode(spec: &CheckSpec) -> Result<CheckReport, CheckerError> {
    check_mode_keeping_history(spec).await.map(|(report, _)| report)
}

/// [`check_mode`], handing back the history's events it read (none without a history), so the
/// readers' check ([`check_reads_with`]) judges against them without parsing the file again.
pub async fn check_mode_keeping_history(spec: &CheckSpec) -> Result<(CheckReport, Vec<Event>), CheckerError> {
    let bootstrap: Vec<String> = spec.bootstrap.split(',').map(str::to_string).collect();
    // Before the drain, which may wait out a transaction timeout: what is open now is what the
    // job left open.
    let end_look = match &spec.tid_prefix {
        Some(prefix) => open_txn::look_at_end(&bootstrap, &spec.topic, prefix).await,
        None => Default::default(),
    };
    let events = match &spec.history {
        Some(h) if h.exists() => sinkhole_history::read(h)?.events,
        _ => Vec::new(),
    };
    let for_good = hanging::held_for_good(&end_look, &events);
    let (servers, topic, timeout) = (spec.bootstrap.clone(), spec.topic.clone(), spec.timeout);
    let drained = tokio::task::spawn_blocking(move || drain::drain(&servers, &topic, timeout, &for_good))
        .await
        .map_err(|e| CheckerError::Other(format!("drain task: {e}")))??;
    store::write(&spec.dir.drained(), &drained.records)?;
    store::write_partitions(&spec.dir.drained_partitions(), &drained.partitions)?;
    let index = HistoryIndex::from_events(&events);
    let mut report = check(&spec.expected, &drained.records, &index, &drained.partitions);
    open_txn::explain(&bootstrap, &spec.topic, &mut report.uncommitted_tail).await;
    report.end_look = end_look;
    report.judge_open_transactions(&events);
    Ok((report, events))
}

/// The live readers' check: `readers.jsonl` against the saved drain (`drained.bin`) and the
/// history's events, already read by the output's check (online, or offline by `sinkhole check`),
/// so the history is parsed once per check; None when the run had no readers.
pub fn check_reads_with(dir: &ModeDir, events: &[Event]) -> Result<Option<ReadReport>, CheckerError> {
    let path = dir.reads();
    if !path.exists() {
        return Ok(None);
    }
    let partitions = store::read_partitions(&dir.drained_partitions())?;
    let drained = dir.drained();
    let each =
        |f: &mut dyn FnMut(crate::count::RecordRef<'_>)| store::for_each(&drained, None, |_, r| f(r)).map(|_| ());
    reads::check_reads(&path, &partitions, each, events).map(Some)
}

/// Re-checks a saved drain offline, streaming `drained.bin` (twice when
/// duplicated records need their first copy found). `partitions` are the
/// drain's end positions when they were saved (see [`store::PARTITIONS_FILE`]).
pub fn recheck(dir: &ModeDir, expected: &Expected, history: Option<&Path>) -> Result<CheckReport, CheckerError> {
    let index = match history {
        Some(h) => HistoryIndex::from_events(&sinkhole_history::read(h)?.events),
        None => HistoryIndex::default(),
    };
    let parts = dir.drained_partitions();
    let partitions = if parts.exists() { store::read_partitions(&parts)? } else { Vec::new() };
    recheck_with(&dir.drained(), expected, &index, &partitions)
}

/// [`recheck`] with the history already indexed.
pub fn recheck_with(
    drained: &Path,
    expected: &Expected,
    index: &HistoryIndex,
    partitions: &[PartitionDrain],
) -> Result<CheckReport, CheckerError> {
    let mut c = count::Counter::new(expected, index);
    store::for_each(drained, None, |_, r| c.observe(r))?;
    if let Some(until) = c.second_pass_until() {
        store::for_each(drained, Some(until), |_, r| c.observe_again(r))?;
    }
    Ok(c.finish(partitions))
}
