//! The causal story of every anomaly of a run (`sinkhole explain`, the report's first
//! screen, a bundle's `story.md`): for each lost, duplicated, torn or hanging range, the
//! records → the transaction that carried them (id, producer id and epoch, checkpoint) →
//! every fault that touched it, with times → the client's requests and the broker's answers
//! (the history, the proxy's frames) → the coordinator's view over time (the rig's
//! DescribeTransactions looks, the checker's look after the job) → the brokers' own log lines
//! that name the transaction, its producer id or its partitions in that window, from every
//! node's `server.log` (and Flink's logs for the Flink subject). One timeline a Kafka or
//! Flink developer reads without the rig.
//!
//! Why its own module: turning a red run into a report upstream acts on was hand work —
//! reading `server.log`, the proxy's frames and the history side by side. The story reads
//! only what a run directory holds ([`sinkhole_base::rundir`]), like `sinkhole check`, and
//! says where each line comes from (`file:line`), so a reader can check it; a link it has no
//! evidence for is named as missing, never guessed ([`chain`]).
use std::path::Path;

use sinkhole_base::provenance::Provenance;
use sinkhole_base::rundir::{topic_of, ClusterDir, ModeDir, RunDir};
use sinkhole_checker::verdict::Verdict;
use sinkhole_model::SinkMode;

pub mod chain;
pub mod logs;
pub mod render;

use chain::{by_transaction, is_root, Chain, Inputs};
use logs::{LogFile, LogKind};

/// The most chains told in full; the other transactions get a line each.
pub const MAX_CHAINS: usize = 6;

/// One mode's story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Story {
    pub scenario: String,
    pub run_id: String,
    pub mode: String,
    pub kafka: String,
    pub seed: u64,
    /// The verdict in words (`LOST 8246, MISSING MARKER 1 (expected)`) and its reason.
    pub words: String,
    pub reason: String,
    /// The root causes first (a transaction left open or torn), then the others.
    pub chains: Vec<Chain>,
    /// Transactions whose records were lost behind a root (read_committed readers stop at the
    /// root's first offset), one line each, and the chains past [`MAX_CHAINS`].
    pub behind: Vec<String>,
    /// The log files read (cited by the chains).
    pub logs_read: Vec<String>,
}

/// Why there is no story.
#[derive(Debug, thiserror::Error)]
pub enum StoryError {
    #[error("{0}: not a run directory (no summary.json and no <mode>/verdict.json); give the directory `sinkhole run` printed after `results:`")]
    NotARun(String),
    #[error("{path}: written by an older sinkhole (results schema {schema}, before this rig's) whose verdicts a story cannot rest on; re-judge the run with this one first: sinkhole check {run}")]
    OldRig { path: String, schema: u32, run: String },
    #[error("{run}: no mode {mode:?} here; its modes: {have}")]
    NoSuchMode { run: String, mode: String, have: String },
    #[error("{path}: {why}")]
    Unreadable { path: String, why: String },
}

impl StoryError {
    /// Everything but an unreadable file is the user's input (exit 2).
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, StoryError::Unreadable { .. })
    }
}

/// The modes of a run that have a verdict, in the table's order.
pub fn judged_modes(run: &RunDir) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(run.path())
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| ModeDir::at(e.path()).has_verdict())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    names.sort_by_key(|n| (SinkMode::parse(n).map(|m| SinkMode::ALL.iter().position(|x| *x == m)), n.clone()));
    names
}

/// The stories of a run's modes (`mode`: only that one).
pub fn explain(run: &RunDir, mode: Option<&str>) -> Result<Vec<Story>, StoryError> {
    let modes = judged_modes(run);
    if modes.is_empty() {
        return Err(StoryError::NotARun(run.path().display().to_string()));
    }
    let chosen: Vec<String> = match mode {
        Some(m) if modes.iter().any(|x| x == m) => vec![m.to_string()],
        Some(m) => {
            return Err(StoryError::NoSuchMode {
                run: run.path().display().to_string(),
                mode: m.to_string(),
                have: modes.join(", "),
            })
        }
        None => modes,
    };
    let logs = broker_logs(run);
    chosen.iter().map(|m| of_mode(run, m, &logs)).collect()
}

/// Whether a judged mode has anything to tell: an anomaly with its examples or a transaction
/// left open. A clean run's page is drawn without reading its logs.
pub fn has_story(v: &Verdict) -> bool {
    !by_transaction(v).is_empty()
}

/// Every node's `server.log` under the run's `cluster/`.
fn broker_logs(run: &RunDir) -> Vec<LogFile> {
    let cluster = run.cluster();
    cluster
        .node_ids()
        .iter()
        .filter_map(|id| LogFile::read(&cluster.node_log(*id), &ClusterDir::node_log_name(*id), LogKind::Broker))
        .collect()
}

/// The Flink subject's JobManager and TaskManager logs under the mode directory.
fn flink_logs(m: &ModeDir, mode: &str) -> Vec<LogFile> {
    let dir = m.flink_logs();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(m.path()).unwrap_or(p).display().to_string();
            LogFile::read(p, &format!("{mode}/{rel}"), LogKind::Flink)
        })
        .collect()
}

fn read_verdict(path: &Path, run: &RunDir) -> Result<Verdict, StoryError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| StoryError::Unreadable { path: path.display().to_string(), why: e.to_string() })?;
    let prov = Provenance::of_json(&text).unwrap_or_else(|| Provenance { schema_version: 0, ..Provenance::current() });
    if prov.schema_version == 0 {
        return Err(StoryError::OldRig {
            path: path.display().to_string(),
            schema: prov.schema_version,
            run: run.path().display().to_string(),
        });
    }
    serde_json::from_str(&text).map_err(|e| StoryError::Unreadable {
        path: path.display().to_string(),
        why: format!("line {} column {}: {e}", e.line(), e.column()),
    })
}

fn of_mode(run: &RunDir, mode: &str, broker: &[LogFile]) -> Result<Story, StoryError> {
    let m = run.mode(mode);
    let v = read_verdict(&m.verdict(), run)?;
    let hist = sinkhole_history::read(&m.history())
        .map_err(|e| StoryError::Unreadable { path: m.history().display().to_string(), why: e.to_string() })?;
    let text = std::fs::read_to_string(m.history()).unwrap_or_default();
    let event_lines: Vec<usize> =
        text.split('\n').enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(i, _)| i + 1).collect();
    let flink = v.mode == SinkMode::FlinkKafkasink;
    let mut logs = broker.to_vec();
    logs.extend(flink_logs(&m, mode));
    let inputs = Inputs {
        mode_dir: mode,
        verdict: &v,
        events: &hist.events,
        event_lines: &event_lines,
        logs: &logs,
        topic: Some(topic_of(&v.run_id, &v.mode.slug())),
        flink,
    };
    Ok(tell(&inputs))
}

/// The story of one judged mode from its inputs (pure).
pub fn tell(i: &Inputs<'_>) -> Story {
    let v = i.verdict;
    let groups = by_transaction(v);
    let roots: Vec<&chain::Group> = groups.iter().filter(|(t, ex)| is_root(v, t, ex)).collect();
    let stuck = v.hanging.iter().any(|h| !h.stuck.is_empty()) || !v.uncommitted_tail.is_empty();
    let mut chains = Vec::new();
    let mut behind = Vec::new();
    for (tid, ex) in &groups {
        let root = is_root(v, tid, ex);
        if !root && stuck && !roots.is_empty() && tid.is_some() {
            let recs: Vec<String> = ex.iter().map(|(a, e)| chain::records_of(*a, e)).collect();
            behind.push(format!(
                "{} (checkpoint {}): {} — behind the open transaction above: read_committed readers of its partitions stop at that transaction's first offset",
                tid.as_deref().unwrap_or("?"),
                ex.iter().find_map(|(_, e)| e.checkpoint).map_or("?".into(), |c| c.to_string()),
                recs.join("; ")
            ));
            continue;
        }
        if chains.len() >= MAX_CHAINS {
            let recs: Vec<String> = ex.iter().map(|(a, e)| chain::records_of(*a, e)).collect();
            behind.push(format!(
                "{}: {} (not told: past the first {MAX_CHAINS})",
                tid.as_deref().unwrap_or("no transaction"),
                recs.join("; ")
            ));
            continue;
        }
        chains.push(chain::build(i, tid.as_deref(), ex));
    }
    Story {
        scenario: v.scenario.clone(),
        run_id: v.run_id.clone(),
        mode: i.mode_dir.to_string(),
        kafka: v.kafka.clone(),
        seed: v.seed,
        words: v.words(),
        reason: v.reason.clone(),
        chains,
        behind,
        logs_read: i.logs.iter().map(|f| f.name.clone()).collect(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
