//! What an exploration keeps: findings told apart by signature, and the
//! coverage of fault kind × trigger.
//!
//! A campaign of random schedules finds the same bug many times over; a
//! person wants it once, with how often it came back. The signature is what
//! makes two failures the same bug for this purpose — the mode, the anomaly,
//! the fault kinds of the (shrunk) schedule and the kinds of their triggers
//! (the checkpoint phase they hit) — in the spirit of Jepsen's checkers grouping
//! anomalies by type rather than listing each occurrence. Times, targets and
//! checkpoint numbers are left out: a kill after checkpoint 4 persisted and
//! one after checkpoint 6 persisted are one finding. The mode is part of it
//! because a finding is saved with its failing mode only: `kip939` losing
//! records the way `legacy` did is a second bug, not the first one again.
//!
//! The coverage table says what the campaign tried, so an empty finding list
//! reads as "these kinds at these phases, N runs each, found nothing" and not
//! as "nothing found".
use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sinkhole_scenario::FaultSpec;

use super::draw::trigger_kind;

/// What makes two failures one finding.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Signature {
    /// The failing mode (`legacy`, `legacy~restore-off-by-one`, …).
    pub mode: String,
    /// The failure kind (`lost`, `dup`, …, `job-failed`; `unmet` for a failed
    /// expectation that shows neither).
    pub anomaly: String,
    /// The schedule's fault kinds, sorted, each once.
    pub fault_kinds: Vec<String>,
    /// The kinds of their triggers (`at_ms`, `checkpoint_persisted`, …), sorted, each once.
    pub triggers: Vec<String>,
}

impl Signature {
    pub fn of(mode: &str, anomaly: &str, faults: &[FaultSpec]) -> Signature {
        let mut fault_kinds: Vec<String> = faults.iter().map(|f| f.kind.name().to_string()).collect();
        fault_kinds.sort();
        fault_kinds.dedup();
        let mut triggers: Vec<String> = faults.iter().map(|f| trigger_kind(&f.when).to_string()).collect();
        triggers.sort();
        triggers.dedup();
        Signature { mode: mode.to_string(), anomaly: anomaly.to_string(), fault_kinds, triggers }
    }

    /// `legacy: lost × kill-workers+net-delay × at_ms+checkpoint_persisted`.
    pub fn text(&self) -> String {
        let join = |v: &[String]| if v.is_empty() { "no-faults".to_string() } else { v.join("+") };
        format!("{}: {} × {} × {}", self.mode, self.anomaly, join(&self.fault_kinds), join(&self.triggers))
    }
}

/// One finding: the first failure of its signature, saved as a scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Finding {
    /// 1, 2, …: the `NN` of its file.
    pub n: usize,
    /// The campaign's run (1-based) that first showed it.
    pub run: u32,
    /// Campaign time when that run ended, ms (its shrink not counted): how long the
    /// exploration took to find it. Across hosts, each shard's own campaign time: the shards
    /// run at once.
    pub at_ms: u64,
    /// What tells it apart; its mode is the mode that failed.
    pub signature: Signature,
    /// The seed to replay it with.
    pub seed: u64,
    /// The run it was first seen in.
    pub run_id: String,
    /// `found/NN-<anomaly>.yaml`.
    pub path: PathBuf,
    /// The verdict in words of the first run (`LOST 120 — expected clean`).
    pub words: String,
    /// Faults in the run, and in the saved scenario.
    pub faults_before: usize,
    pub faults_after: usize,
    /// The saved scenario's job, compactly (`p1 cc3 ci400 tt60000 r12000@2000 V2`): the run's,
    /// moved toward the scenario's own by the shrink.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub job: String,
    /// Candidate runs the shrink made (0: not shrunk), and why it stopped.
    pub shrink_runs: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shrink_stop: Option<String>,
    /// Why the saved scenario is the unshrunk one, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_shrunk: Option<String>,
    /// Every run that showed it (the first included), by run id.
    pub runs: Vec<String>,
    /// Its saved file run again with its seed (`--replay`), and how many tries failed the
    /// same way; absent when not replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<super::replay::Replay>,
}

/// The findings so far, one per signature.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Findings {
    pub list: Vec<Finding>,
}

impl Findings {
    /// The finding of `sig`, if one is kept.
    pub fn get_mut(&mut self, sig: &Signature) -> Option<&mut Finding> {
        self.list.iter_mut().find(|f| f.signature == *sig)
    }

    /// Records `sig` seen in `run_id`: `true` when it is new (the caller
    /// saves it as finding number [`Findings::next_number`]), `false` when it
    /// was kept already (the run is added to it).
    pub fn seen(&mut self, sig: &Signature, run_id: &str) -> bool {
        match self.get_mut(sig) {
            Some(f) => {
                if !f.runs.iter().any(|r| r == run_id) {
                    f.runs.push(run_id.to_string());
                }
                false
            }
            None => true,
        }
    }

    pub fn next_number(&self) -> usize {
        self.list.len() + 1
    }

    pub fn push(&mut self, f: Finding) {
        self.list.push(f);
    }
}

/// The file name of finding `n`: `03-lost.yaml`.
pub fn file_name(n: usize, anomaly: &str) -> String {
    let slug: String = anomaly
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c.to_ascii_lowercase() } else { '-' })
        .collect();
    format!("{n:02}-{slug}.yaml")
}

/// One cell of the coverage: a fault kind under a trigger kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cell {
    pub fault_kind: String,
    pub trigger: String,
    /// Runs whose schedule had it.
    pub runs: u32,
    /// Of those, the runs where some mode failed its expectation.
    pub hits: u32,
}

/// Fault kind × trigger kind over the campaign's runs.
#[derive(Debug, Clone, Default)]
pub struct Coverage {
    cells: BTreeMap<(String, String), (u32, u32)>,
}

impl Coverage {
    /// One run's schedule, and whether it failed: each (kind, trigger) pair counts once per run.
    pub fn add(&mut self, faults: &[FaultSpec], failed: bool) {
        let mut pairs: Vec<(String, String)> =
            faults.iter().map(|f| (f.kind.name().to_string(), trigger_kind(&f.when).to_string())).collect();
        pairs.sort();
        pairs.dedup();
        for p in pairs {
            let c = self.cells.entry(p).or_default();
            c.0 += 1;
            c.1 += u32::from(failed);
        }
    }

    /// The coverage the cells say (a merge's sum of its shards').
    pub fn of_cells(cells: &[Cell]) -> Coverage {
        let mut c = Coverage::default();
        for x in cells {
            let e = c.cells.entry((x.fault_kind.clone(), x.trigger.clone())).or_default();
            e.0 += x.runs;
            e.1 += x.hits;
        }
        c
    }

    /// The cells, by fault kind then trigger.
    pub fn cells(&self) -> Vec<Cell> {
        self.cells
            .iter()
            .map(|((k, t), (runs, hits))| Cell { fault_kind: k.clone(), trigger: t.clone(), runs: *runs, hits: *hits })
            .collect()
    }

    /// The table as text: a row per fault kind, a column per trigger kind, `hits/runs` in each cell.
    pub fn render(&self) -> String {
        let mut triggers: Vec<&str> = self.cells.keys().map(|(_, t)| t.as_str()).collect();
        triggers.sort();
        triggers.dedup();
        let mut kinds: Vec<&str> = self.cells.keys().map(|(k, _)| k.as_str()).collect();
        kinds.dedup();
        let width = kinds.iter().map(|k| k.len()).max().unwrap_or(0).max("fault kind".len());
        let mut out = format!("{:<width$}", "fault kind");
        for t in &triggers {
            out.push_str(&format!("  {t:>w$}", w = t.len().max(5)));
        }
        out.push('\n');
        for k in kinds {
            out.push_str(&format!("{k:<width$}"));
            for t in &triggers {
                let cell = match self.cells.get(&(k.to_string(), t.to_string())) {
                    Some((runs, hits)) => format!("{hits}/{runs}"),
                    None => "-".to_string(),
                };
                out.push_str(&format!("  {cell:>w$}", w = t.len().max(5)));
            }
            out.push('\n');
        }
        out
    }
}
