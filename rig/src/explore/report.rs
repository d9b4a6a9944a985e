//! What an exploration leaves: `explore.json` and the table printed at its
//! end. The JSON is for tools (and `sinkhole serve`'s file view); the table
//! is what a person reads in the morning: the findings, then the coverage of
//! faults and of protocol states, the states never reached named.
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sinkhole_checker::reached::State;
use sinkhole_checker::verdict::Outcome;

use super::aim::Aim;
use super::draw::Drawn;
use super::findings::{Cell, Finding};
use super::states::{StateCell, StateCoverage};

/// Why the campaign stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// Still running when the file was written (it is written after every
    /// run; a campaign stopped by a signal leaves it so).
    Running,
    /// Every run of `--runs` was made.
    Runs,
    /// `--time` was spent first.
    Time,
    /// `--until-found`: every mutant judged (or, without one, every mode) had a finding.
    Found,
}

/// A mode judged, and how long the campaign took to find it: the detection power of the
/// exploration for a mutant, or the false alarms for a faithful mode (which should have none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Detection {
    pub mode: String,
    /// Its first finding, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<FirstFound>,
    /// Runs made so far (the runs it was judged in).
    pub runs: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirstFound {
    /// The finding's number.
    pub finding: usize,
    /// The run that showed it (1-based), and its seed.
    pub run: u32,
    #[serde(default)]
    pub seed: u64,
    /// Campaign time when that run ended, ms.
    pub at_ms: u64,
}

impl Detection {
    /// `finding 01 in run 3 of 12 (seed 6002), after 10m25s`, or `no finding in 12 run(s)`.
    pub fn words(&self) -> String {
        match &self.first {
            Some(f) => format!(
                "finding {:02} in run {} of {} (seed {}), after {}",
                f.finding,
                f.run,
                self.runs,
                f.seed,
                crate::matrix::human_duration(f.at_ms)
            ),
            None => format!("no finding in {} run(s)", self.runs),
        }
    }
}

/// Each of `modes` with its earliest finding among `findings`.
pub fn detection(modes: &[sinkhole_model::SinkMode], findings: &[Finding], runs: u32) -> Vec<Detection> {
    modes
        .iter()
        .map(|m| Detection {
            mode: m.name().to_string(),
            first: findings
                .iter()
                .filter(|f| f.signature.mode == m.name())
                .min_by_key(|f| f.at_ms)
                .map(|f| FirstFound { finding: f.n, run: f.run, seed: f.seed, at_ms: f.at_ms }),
            runs,
        })
        .collect()
}

/// One mode of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModeRow {
    pub mode: String,
    pub outcome: Outcome,
    pub words: String,
    /// The protocol states its history shows (`sinkhole_checker::reached`), in the table's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<State>,
}

/// One run of the campaign.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRow {
    /// 1-based.
    pub i: u32,
    pub seed: u64,
    /// The job drawn for it, compactly (`p2 cc3 ci400 tt60000 r12000@2000 V2`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub shape: String,
    /// Faults drawn (and run).
    pub faults: usize,
    /// Faults the generator drew that the scenario refused.
    pub refused: usize,
    /// Broker faults left out to give the broker before them time to come back.
    pub spaced: usize,
    /// `kind@trigger` of each fault, in order.
    pub schedule: Vec<String>,
    /// The protocol state the run was aimed at ([`super::aim`]), if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aimed_at: Option<State>,
    /// Drawn faults left out to make room for the aimed ones.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cleared: usize,
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
    /// The run whose cluster this run reused (the last one left it healthy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_reused_from: Option<String>,
    /// Why the cluster the last run kept was not reused (this run started its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_fresh_because: Option<String>,
    /// The campaign process's resident set after the run, freed memory handed back
    /// (`sinkhole_base::memory`), bytes: flat over a long campaign, or a leak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Of that, the bytes the allocator has handed out and not had back: a leak grows this,
    /// an allocator keeping freed pages grows only the resident set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heap_bytes: Option<u64>,
}

impl RunRow {
    pub fn new(i: u32, seed: u64, d: &Drawn) -> RunRow {
        RunRow {
            i,
            seed,
            shape: String::new(),
            faults: d.faults.len(),
            refused: d.refused,
            spaced: d.spaced,
            schedule: d
                .faults
                .iter()
                .map(|f| format!("{}@{}", f.kind.name(), super::draw::trigger_kind(&f.when)))
                .collect(),
            aimed_at: None,
            cleared: 0,
            run_id: None,
            dir: None,
            modes: Vec::new(),
            findings: Vec::new(),
            error: None,
            cluster_reused_from: None,
            cluster_fresh_because: None,
            rss_bytes: None,
            heap_bytes: None,
        }
    }

    /// The row of a run aimed at `aim`'s state (or not aimed).
    pub fn aimed(mut self, aim: Option<&Aim>) -> RunRow {
        self.aimed_at = aim.map(|a| a.state);
        self.cleared = aim.map_or(0, |a| a.cleared);
        self
    }

    /// The states some mode of the run reached, in the table's order.
    pub fn states(&self) -> Vec<State> {
        let all: std::collections::BTreeSet<State> = self.modes.iter().flat_map(|m| m.states.iter().copied()).collect();
        all.into_iter().collect()
    }

    /// Each mode's states, and whether it failed its expectation (a finding).
    pub fn reached_by_mode(&self) -> Vec<(&[State], bool)> {
        self.modes.iter().map(|m| (&m.states[..], m.outcome == Outcome::Fail)).collect()
    }

    /// `; aimed at restore-pending-2: reached` for an aimed run, else nothing.
    pub fn aim_words(&self) -> String {
        match self.aimed_at {
            Some(s) if self.states().contains(&s) => format!("; aimed at {s}: reached"),
            Some(s) => format!("; aimed at {s}: not reached"),
            None => String::new(),
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
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Explored {
    pub scenario: String,
    pub source: PathBuf,
    pub dir: PathBuf,
    pub modes: Vec<String>,
    pub first_seed: u64,
    /// This host's shard of a campaign across hosts (`--shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::matrix::shard::Shard>,
    /// For `sinkhole merge`'s result: the shards' directories, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<PathBuf>,
    pub runs_budget: u32,
    pub time_budget_ms: u64,
    pub shrink_runs: u32,
    /// The process's resident set when the campaign began, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_start_bytes: Option<u64>,
    pub stop: Stop,
    pub wall_ms: u64,
    pub runs_done: u32,
    /// Inconclusive modes over all runs: counted, never findings.
    pub inconclusive: usize,
    /// Modes (or whole runs) the rig could not run through.
    pub rig_errors: usize,
    pub findings: Vec<Finding>,
    /// Each mode judged, and when it was first found.
    #[serde(default)]
    pub detection: Vec<Detection>,
    /// Fault kind × trigger kind: runs with it, and of those the runs with a finding.
    pub coverage: Vec<Cell>,
    /// The same, as the printed table.
    pub coverage_text: String,
    /// Every protocol state: runs that reached it, of those the runs with a finding in a mode
    /// that reached it, and the runs aimed at it (runs 0: never reached).
    #[serde(default)]
    pub states: Vec<StateCell>,
    pub runs: Vec<RunRow>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The table printed at the end.
pub fn render(e: &Explored) -> String {
    let shards = match (e.merged_from.len(), e.shard) {
        (0, Some(s)) => format!(" [shard {s}]"),
        (0, None) => String::new(),
        (n, _) => format!(" [{n} shards merged]"),
    };
    let mut out = format!(
        "{} runs of {}{shards} in {} ({}): {} finding(s), {} inconclusive mode run(s), {} rig error(s)\n",
        e.runs_done,
        e.scenario,
        crate::matrix::human_duration(e.wall_ms),
        match e.stop {
            Stop::Running => "still running",
            Stop::Runs => "every run made",
            Stop::Time => "the time budget ran out",
            Stop::Found => "every mutant judged was found",
        },
        e.findings.len(),
        e.inconclusive,
        e.rig_errors
    );
    if !e.findings.is_empty() {
        out.push_str("\nfindings (replay: sinkhole replay FILE, or sinkhole run FILE --seed SEED):\n");
        for f in &e.findings {
            let shrunk = match (&f.not_shrunk, f.shrink_runs) {
                (Some(why), _) => format!("not shrunk: {why}"),
                (None, n) => format!("shrunk in {n} run(s)"),
            };
            let job = if f.job.is_empty() { String::new() } else { format!(", job {}", f.job) };
            out.push_str(&format!(
                "  {:02}  {}\n      seed {}, seen in {} run(s), faults {} → {} ({shrunk}){job}: {}\n",
                f.n,
                f.signature.text(),
                f.seed,
                f.runs.len(),
                f.faults_before,
                f.faults_after,
                f.path.display()
            ));
            if let Some(r) = &f.replay {
                out.push_str(&format!("      {}\n", replay_words(r)));
            }
        }
    }
    if !e.detection.is_empty() {
        out.push_str("\ndetection: each mode judged and its first finding\n");
        let width = e.detection.iter().map(|d| d.mode.len()).max().unwrap_or(0);
        for d in &e.detection {
            out.push_str(&format!("  {:<width$}  {}\n", d.mode, d.words()));
        }
    }
    if !e.coverage.is_empty() {
        out.push_str("\ncoverage: runs with a finding / runs with the fault kind at that trigger\n");
        out.push_str(&e.coverage_text);
    }
    if !e.states.is_empty() {
        out.push_str("\nprotocol states: runs with a finding / runs that reached the state\n");
        out.push_str(&StateCoverage::of_cells(&e.states).render());
    }
    if let Some(m) = memory_line(e) {
        out.push_str(&format!("\n{m}\n"));
    }
    out.push_str(&format!("\n{}\n", e.dir.join(super::JSON_FILE).display()));
    out
}

/// A finding's replays with what the tries that did not reproduce it showed:
/// `does not replay: 1/3 (try 2: clean (expected); try 3: inconclusive — …)`.
pub fn replay_words(r: &super::replay::Replay) -> String {
    if r.other.is_empty() {
        r.words()
    } else {
        format!("{} ({})", r.words(), r.other.join("; "))
    }
}

/// Bytes as whole MiB, rounded.
pub fn mb(bytes: u64) -> u64 {
    (bytes + (1 << 19)) >> 20
}

/// `memory: 41 MB at the start, 63 MB after run 1, 64 MB after run 40 (at most 66 MB)`: the
/// resident set between runs, freed memory handed back.
pub fn memory_line(e: &Explored) -> Option<String> {
    let after: Vec<(u32, u64)> = e.runs.iter().filter_map(|r| r.rss_bytes.map(|b| (r.i, b))).collect();
    let (first, last) = (after.first()?, after.last()?);
    let max = after.iter().map(|(_, b)| *b).max()?;
    let start = e.rss_start_bytes.map(|b| format!("{} MB at the start, ", mb(b))).unwrap_or_default();
    let heap =
        |i: u32| e.runs.iter().find(|r| r.i == i).and_then(|r| r.heap_bytes).map(|b| format!(" ({} MB in use)", mb(b)));
    Some(format!(
        "memory between runs: {start}{} MB after run {}{}, {} MB after run {}{} (at most {} MB)",
        mb(first.1),
        first.0,
        heap(first.0).unwrap_or_default(),
        mb(last.1),
        last.0,
        heap(last.0).unwrap_or_default(),
        mb(max)
    ))
}
