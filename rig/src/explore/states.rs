//! The campaign's coverage of protocol states: which states each run's modes reached, read
//! from their histories by the checker's `reached`, and over the runs, each state with the runs
//! that reached it, those of them where a mode that reached it failed its expectation, and the
//! runs aimed at it ([`super::aim`]).
//!
//! Beside the fault kind × trigger cells of [`super::findings`], which say what the campaign
//! tried, this says what it put the sink through: "no finding" then reads as "these states,
//! so many runs each", and the states never reached are named, since a bug that needs one of
//! them cannot have been found. They are what the next runs aim at.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use sinkhole_base::rundir::RunDir;
use sinkhole_checker::reached::{reached, State};
use sinkhole_model::SinkMode;

/// One state over the campaign's runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateCell {
    pub state: State,
    /// Runs where some mode reached it.
    pub runs: u32,
    /// Of those, the runs where a mode that reached it failed its expectation.
    pub hits: u32,
    /// Runs aimed at it (reached or not).
    #[serde(default)]
    pub aimed: u32,
}

/// Every state of the vocabulary over the campaign's runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StateCoverage {
    /// State → (runs, hits, aimed).
    cells: BTreeMap<State, (u32, u32, u32)>,
}

impl StateCoverage {
    /// One run: what each mode reached and whether it failed its expectation, and the state
    /// it was aimed at. Each state its modes reached counts once, a hit when a mode that reached
    /// it failed.
    pub fn add(&mut self, modes: &[(&[State], bool)], aimed: Option<State>) {
        let reached: BTreeSet<State> = modes.iter().flat_map(|(states, _)| states.iter().copied()).collect();
        for s in reached {
            let failed = modes.iter().any(|(states, failed)| *failed && states.contains(&s));
            let c = self.cells.entry(s).or_default();
            c.0 += 1;
            c.1 += u32::from(failed);
        }
        if let Some(s) = aimed {
            self.cells.entry(s).or_default().2 += 1;
        }
    }

    /// The coverage the cells say (a merge's sum of its shards').
    pub fn of_cells(cells: &[StateCell]) -> StateCoverage {
        let mut c = StateCoverage::default();
        for x in cells {
            let e = c.cells.entry(x.state).or_default();
            (e.0, e.1, e.2) = (e.0 + x.runs, e.1 + x.hits, e.2 + x.aimed);
        }
        c
    }

    /// A cell for every state, in the table's order (runs 0: never reached).
    pub fn cells(&self) -> Vec<StateCell> {
        State::ALL
            .iter()
            .map(|&state| {
                let (runs, hits, aimed) = self.cells.get(&state).copied().unwrap_or_default();
                StateCell { state, runs, hits, aimed }
            })
            .collect()
    }

    /// The states some run reached.
    pub fn reached(&self) -> BTreeSet<State> {
        self.cells.iter().filter(|(_, c)| c.0 > 0).map(|(s, _)| *s).collect()
    }

    /// The table as text: each state reached with its runs, then the states never reached.
    pub fn render(&self) -> String {
        let cells = self.cells();
        let width = State::ALL.iter().map(|s| s.name().len()).max().unwrap_or(0);
        let aimed = |c: &StateCell| if c.aimed > 0 { format!(", aimed at in {}", c.aimed) } else { String::new() };
        let mut out = String::new();
        for c in cells.iter().filter(|c| c.runs > 0) {
            let name = c.state.name();
            out.push_str(&format!("  {name:<width$}  {}/{}{}\n", c.hits, c.runs, aimed(c)));
        }
        let never: Vec<String> = cells
            .iter()
            .filter(|c| c.runs == 0)
            .map(|c| if c.aimed > 0 { format!("{} (aimed at in {})", c.state, c.aimed) } else { c.state.to_string() })
            .collect();
        match never.len() {
            0 => out.push_str("  every state reached\n"),
            n => out.push_str(&format!("  never reached ({n} of {}): {}\n", State::ALL.len(), never.join(", "))),
        }
        out
    }
}

/// The states `mode` reached in the finished run at `run_dir`, read from its history with the
/// run's transaction timeout; a history that cannot be read reached none, and says why.
pub fn of_mode(run_dir: &Path, mode: SinkMode, transaction_timeout_ms: u64) -> Result<Vec<State>, String> {
    let path = RunDir::at(run_dir).mode(mode.name()).history();
    let h = sinkhole_history::read(&path).map_err(|e| e.to_string())?;
    Ok(reached(&h.events, Some(transaction_timeout_ms)))
}
