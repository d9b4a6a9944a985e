//! What an exploration leaves: `explore.json` and the table printed at its
//! end. The JSON is for tools (and `sinkhole serve`'s file view); the table
//! is what a person reads in the morning: the findings, then the coverage.
use std::path::PathBuf;

use serde::Serialize;
use sinkhole_checker::verdict::Outcome;

use super::draw::Drawn;
use super::findings::{Cell, Finding};

/// Why the campaign stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// Still running when the file was written (it is written after every
    /// run; a campaign stopped by a signal leaves it so).
    Running,
    /// Every run of `--runs` was made.
    Runs,
    /// `--time` was spent first.
    Time,
}

/// One mode of one run.
#[derive(Debug, Clone, Serialize)]
pub struct ModeRow {
    pub mode: String,
    pub outcome: Outcome,
    pub words: String,
}

/// One run of the campaign.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    /// 1-based.
    pub i: u32,
    pub seed: u64,
    /// Faults drawn (and run).
    pub faults: usize,
    /// Faults the generator drew that the scenario refused.
    pub refused: usize,
    /// Broker faults left out to give the broker before them time to come back.
    pub spaced: usize,
    /// `kind@trigger` of each fault, in order.
    pub schedule: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    pub modes: Vec<ModeRow>,
    /// The numbers of the findings its failing modes are.
    pub findings: Vec<usize>,
    /// The run did not finish (the rig's own failure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl RunRow {
    pub fn new(i: u32, seed: u64, d: &Drawn) -> RunRow {
        RunRow {
            i,
            seed,
            faults: d.faults.len(),
            refused: d.refused,
            spaced: d.spaced,
            schedule: d
                .faults
                .iter()
                .map(|f| format!("{}@{}", f.kind.name(), super::draw::trigger_kind(&f.when)))
                .collect(),
            run_id: None,
            dir: None,
            modes: Vec::new(),
            findings: Vec::new(),
            error: None,
        }
    }

    /// Its inconclusive modes (not findings: the rig's own distortion).
    pub fn inconclusive(&self) -> usize {
        self.modes.iter().filter(|m| m.outcome == Outcome::Inconclusive).count()
    }

    /// Its modes the rig could not run through, or 1 for a run that did not finish.
    pub fn errors(&self) -> usize {
        if self.error.is_some() {
            1
        } else {
            self.modes.iter().filter(|m| m.outcome == Outcome::Error).count()
        }
    }
}

/// `explore.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Explored {
    pub scenario: String,
    pub source: PathBuf,
    pub dir: PathBuf,
    pub modes: Vec<String>,
    pub first_seed: u64,
    pub runs_budget: u32,
    pub time_budget_ms: u64,
    pub shrink_runs: u32,
    pub stop: Stop,
    pub wall_ms: u64,
    pub runs_done: u32,
    /// Inconclusive modes over all runs: counted, never findings.
    pub inconclusive: usize,
    /// Modes (or whole runs) the rig could not run through.
    pub rig_errors: usize,
    pub findings: Vec<Finding>,
    /// Fault kind × trigger kind: runs with it, and of those the runs with a finding.
    pub coverage: Vec<Cell>,
    /// The same, as the printed table.
    pub coverage_text: String,
    pub runs: Vec<RunRow>,
}

/// The table printed at the end.
pub fn render(e: &Explored) -> String {
    let mut out = format!(
        "{} runs of {} in {} ({}): {} finding(s), {} inconclusive mode run(s), {} rig error(s)\n",
        e.runs_done,
        e.scenario,
        crate::matrix::human_duration(e.wall_ms),
        match e.stop {
            Stop::Running => "still running",
            Stop::Runs => "every run made",
            Stop::Time => "the time budget ran out",
        },
        e.findings.len(),
        e.inconclusive,
        e.rig_errors
    );
    if !e.findings.is_empty() {
        out.push_str("\nfindings (replay: sinkhole run FILE --seed SEED):\n");
        for f in &e.findings {
            let shrunk = match (&f.not_shrunk, f.shrink_runs) {
                (Some(why), _) => format!("not shrunk: {why}"),
                (None, n) => format!("shrunk in {n} run(s)"),
            };
            out.push_str(&format!(
                "  {:02}  {}\n      seed {}, seen in {} run(s), faults {} → {} ({shrunk}): {}\n",
                f.n,
                f.key,
                f.seed,
                f.runs.len(),
                f.faults_before,
                f.faults_after,
                f.path.display()
            ));
        }
    }
    if !e.coverage.is_empty() {
        out.push_str("\ncoverage: runs with a finding / runs with the fault kind at that trigger\n");
        out.push_str(&e.coverage_text);
    }
    out.push_str(&format!("\n{}\n", e.dir.join(super::JSON_FILE).display()));
    out
}
