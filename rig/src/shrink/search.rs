//! The shrinking search itself, free of clusters: a fault list, the
//! smaller lists to try next, and what a run of one of them said.
//!
//! Greedy first-improvement, as QuickCheck's and Hypothesis's shrinkers go:
//! from the current list, try the candidates in order (coarse steps first:
//! keep one half of the faults, then drop one fault, then halve a duration,
//! then move a trigger earlier); the first candidate that fails the same way
//! becomes the current list and its own candidates are tried next. The
//! search ends at a local minimum (no candidate fails the same way) or when
//! the run budget is spent. Every step makes the list strictly smaller (fewer
//! faults, a shorter duration or an earlier trigger, each by a bounded
//! amount), so the search ends even without a budget.
use std::collections::VecDeque;

use serde::Serialize;

use sinkhole_scenario::{FaultSpec, When};

/// A duration is not halved below this (ms): a shorter fault is mostly no
/// fault, and the halving must stop somewhere.
pub const MIN_DURATION_MS: u64 = 200;

/// A trigger is moved earlier only when it gains at least this (ms).
pub const MIN_EARLIER_MS: u64 = 500;

/// A smaller fault list, and the step that made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// `drop random-2-net-delay`, `halve random-1-pause-workers to 750 ms`, …
    pub step: String,
    pub faults: Vec<FaultSpec>,
}

fn label(f: &FaultSpec, i: usize) -> String {
    f.name.clone().unwrap_or_else(|| format!("fault {} ({})", i + 1, f.kind.name()))
}

/// Where fault `i` may move earlier to: halfway from the end of the fault
/// before it in time (or 0) — the generated faults never overlap, and a
/// shrunk schedule keeps them apart so their effects stay told apart.
fn earlier_target(faults: &[FaultSpec], i: usize) -> Option<u64> {
    let When::AtMs(t) = faults[i].when else { return None };
    let floor = faults
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .filter_map(|(_, f)| match f.when {
            When::AtMs(s) if s < t => Some(s.saturating_add(f.duration_ms.unwrap_or(0)).min(t)),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let to = floor + (t - floor) / 2;
    (t - to >= MIN_EARLIER_MS).then_some(to)
}

/// The candidates of `faults`, in the order they are tried.
pub fn candidates(faults: &[FaultSpec]) -> Vec<Candidate> {
    let n = faults.len();
    let mut out = Vec::new();
    if n >= 4 {
        let h = n / 2;
        out.push(Candidate { step: format!("keep faults 1–{h} of {n}"), faults: faults[..h].to_vec() });
        out.push(Candidate { step: format!("keep faults {}–{n} of {n}", h + 1), faults: faults[h..].to_vec() });
    }
    // Later faults first: they are the likelier bystanders of an earlier one.
    for i in (0..n).rev() {
        let mut f = faults.to_vec();
        f.remove(i);
        out.push(Candidate { step: format!("drop {}", label(&faults[i], i)), faults: f });
    }
    for i in 0..n {
        if let Some(d) = faults[i].duration_ms.filter(|d| *d >= 2 * MIN_DURATION_MS) {
            let mut f = faults.to_vec();
            f[i].duration_ms = Some(d / 2);
            out.push(Candidate { step: format!("halve {} to {} ms", label(&faults[i], i), d / 2), faults: f });
        }
    }
    for i in 0..n {
        if let Some(to) = earlier_target(faults, i) {
            let mut f = faults.to_vec();
            f[i].when = When::AtMs(to);
            out.push(Candidate { step: format!("move {} to at_ms {to}", label(&faults[i], i)), faults: f });
        }
    }
    out
}

/// Why the search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stop {
    /// No candidate of the current list fails the same way.
    Minimal,
    /// The run budget was spent first.
    Runs,
    /// The time budget was spent first.
    Time,
}

/// The search's state between runs.
#[derive(Debug, Clone)]
pub struct Search {
    current: Vec<FaultSpec>,
    pending: VecDeque<Candidate>,
    /// Candidate runs made.
    pub runs: u32,
    pub max_runs: u32,
    /// The steps taken, in order.
    pub accepted: Vec<String>,
    /// The lists already run: a candidate equal to one is not run again
    /// (dropping the last fault gives the empty list whatever its trigger was).
    tried: Vec<Vec<FaultSpec>>,
}

impl Search {
    pub fn new(faults: Vec<FaultSpec>, max_runs: u32) -> Search {
        let pending = candidates(&faults).into();
        Search { current: faults, pending, runs: 0, max_runs, accepted: Vec::new(), tried: Vec::new() }
    }

    /// The next candidate to run; `None` when the search is over
    /// ([`Search::stop`] says why).
    pub fn next_candidate(&mut self) -> Option<Candidate> {
        if self.runs >= self.max_runs {
            return None;
        }
        while let Some(c) = self.pending.pop_front() {
            if !self.tried.contains(&c.faults) {
                return Some(c);
            }
        }
        None
    }

    /// What the run of `c` said: `same` when it failed the same way.
    pub fn report(&mut self, c: Candidate, same: bool) {
        self.runs += 1;
        self.tried.push(c.faults.clone());
        if same {
            self.pending = candidates(&c.faults).into();
            self.current = c.faults;
            self.accepted.push(c.step);
        }
    }

    /// The smallest list found so far that fails the same way.
    pub fn current(&self) -> &[FaultSpec] {
        &self.current
    }

    /// Why it stopped (meaningful once [`Search::next_candidate`] gave `None`).
    pub fn stop(&self) -> Stop {
        if self.pending.is_empty() {
            Stop::Minimal
        } else {
            Stop::Runs
        }
    }
}

/// The whole search against a predicate that answers at once (the tests;
/// the live search runs the same steps with a cluster run per candidate).
pub fn shrink_with(faults: Vec<FaultSpec>, max_runs: u32, mut fails: impl FnMut(&[FaultSpec]) -> bool) -> Search {
    let mut s = Search::new(faults, max_runs);
    while let Some(c) = s.next_candidate() {
        let same = fails(&c.faults);
        s.report(c, same);
    }
    s
}
