//! Stability over seeds: for each scenario × mode × Kafka version of a
//! matrix (a *group*), the outcome every seed gave, and whether they agree.
//!
//! Why a matrix measures it: a seed picks the schedule of a scenario's
//! random faults and the timing the workers start with, so a sink whose
//! verdict changes from one seed to the next has a bug that only some
//! interleavings reach (or a scenario whose premise holds only sometimes).
//! One seed passing proves nothing about the next; N seeds agreeing is the
//! evidence, and a nightly wants it counted, not read off the table.
//!
//! The group's status is decided from the seeds that gave a verdict on the
//! sink (an outcome other than `error`): two that differ make it `flaky`,
//! whether or not every seed ran — the difference is already proven. When
//! they agree but a seed has no verdict (its cell did not run, or the rig
//! failed: `error` is kept as its own value, never read as a pass or a
//! fail), the group is `incomplete`, never `stable`. A group of one seed is
//! `one-seed`: nothing to compare.
//!
//! Computed from the cells alone ([`of`]), so the merge of a campaign's
//! shards gets it from the merged cells like any other matrix.
use serde::{Deserialize, Serialize};
use sinkhole_checker::verdict::words::{expectation_word, RIG_ERROR};
use sinkhole_checker::verdict::Outcome;
use sinkhole_model::SinkMode;

use super::{CellResult, CellStatus, Matrix};

/// What the seeds of one group say together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Every seed gave a verdict, the same outcome.
    Stable,
    /// Two seeds gave different outcomes.
    Flaky,
    /// The seeds that gave a verdict agree, but some gave none (not run, or
    /// the rig failed): not enough to call it stable.
    Incomplete,
    /// The group has one seed: nothing to compare, no evidence either way.
    OneSeed,
}

impl Status {
    pub fn name(&self) -> &'static str {
        match self {
            Status::Stable => "stable",
            Status::Flaky => "flaky",
            Status::Incomplete => "incomplete",
            Status::OneSeed => "one-seed",
        }
    }
}

/// One seed of a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedOutcome {
    pub seed: u64,
    /// The mode's outcome in that seed's cell; `error` also when the rig
    /// failed for the whole cell; absent when the cell did not run.
    pub outcome: Option<Outcome>,
    /// The cell's status (`done`, `error`, `skipped`…).
    pub cell: CellStatus,
    /// The cell's run, when it started one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The verdict in words (`LOST 4031 (expected)`); absent when the cell did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub words: Option<String>,
}

impl SeedOutcome {
    /// The verdict on the sink this seed gave: its outcome unless the rig failed.
    pub fn verdict(&self) -> Option<Outcome> {
        self.outcome.filter(|o| *o != Outcome::Error)
    }

    /// Whether it met its expectation: `as expected`, `NOT as expected`, …
    /// `rig error`, or `not run` ([`expectation_word`]).
    pub fn word(&self) -> &'static str {
        self.outcome.map(expectation_word).unwrap_or(NOT_RUN)
    }

    /// What happened to the data, as the seed's verdict says it (`LOST 4031
    /// (expected)`); a seed of an older matrix.json without them: [`Self::word`].
    pub fn words(&self) -> &str {
        self.words.as_deref().unwrap_or(self.word())
    }
}

/// A seed whose cell has no result for the mode.
pub const NOT_RUN: &str = "not run";

/// One scenario × mode × Kafka version over its seeds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub scenario: String,
    pub mode: SinkMode,
    pub kafka: String,
    pub status: Status,
    /// In the matrix's seed order.
    pub seeds: Vec<SeedOutcome>,
}

impl Group {
    /// `scenario/mode@kafka`.
    pub fn label(&self) -> String {
        format!("{}/{}@{}", self.scenario, self.mode.name(), self.kafka)
    }

    /// How many seeds gave each outcome, in the order pass, fail,
    /// inconclusive, observed, error, not run, said as whether the
    /// expectation was met: `3 as expected, 2 NOT as expected`.
    pub fn tally(&self) -> String {
        let order = [Outcome::Pass, Outcome::Fail, Outcome::Inconclusive, Outcome::Observed, Outcome::Error];
        let mut parts: Vec<String> = order
            .iter()
            .map(|o| (expectation_word(*o), self.seeds.iter().filter(|s| s.outcome == Some(*o)).count()))
            .filter(|(_, n)| *n > 0)
            .map(|(w, n)| format!("{n} {w}"))
            .collect();
        let not_run = self.seeds.iter().filter(|s| s.outcome.is_none()).count();
        if not_run > 0 {
            parts.push(format!("{not_run} {NOT_RUN}"));
        }
        parts.join(", ")
    }

    /// The one outcome of a group whose verdicts agree.
    pub fn agreed(&self) -> Option<Outcome> {
        match self.status {
            Status::Flaky => None,
            _ => self.seeds.iter().find_map(SeedOutcome::verdict),
        }
    }
}

/// Groups by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StabilityTotals {
    pub groups: usize,
    pub stable: usize,
    pub flaky: usize,
    pub incomplete: usize,
    pub one_seed: usize,
}

/// `matrix.json`'s `stability`: every group of the matrix, in cell order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stability {
    /// The most seeds a group has: the campaign's seeds (every cell is in
    /// the matrix from the start, run or not), in a shard its own share.
    pub seeds: usize,
    pub groups: Vec<Group>,
    pub totals: StabilityTotals,
}

impl Stability {
    /// Whether any group has more than one seed to compare.
    pub fn measured(&self) -> bool {
        self.groups.iter().any(|g| g.seeds.len() > 1)
    }

    pub fn flaky(&self) -> impl Iterator<Item = &Group> {
        self.groups.iter().filter(|g| g.status == Status::Flaky)
    }
}

/// The mode's result in one cell.
fn seed_of(c: &CellResult, mode: SinkMode) -> SeedOutcome {
    let (outcome, words) = match c.mode(mode) {
        Some(s) => (Some(s.outcome), Some(s.words())),
        None if c.status == CellStatus::Error => (Some(Outcome::Error), Some(RIG_ERROR.to_string())),
        None => (None, None),
    };
    SeedOutcome { seed: c.seed, outcome, cell: c.status, run_id: c.run_id.clone(), words }
}

fn status_of(seeds: &[SeedOutcome]) -> Status {
    let verdicts: Vec<Outcome> = seeds.iter().filter_map(SeedOutcome::verdict).collect();
    if verdicts.iter().any(|o| *o != verdicts[0]) {
        Status::Flaky
    } else if verdicts.len() < seeds.len() {
        Status::Incomplete
    } else if seeds.len() == 1 {
        Status::OneSeed
    } else {
        Status::Stable
    }
}

/// The stability of every group of `m`: a group per scenario, Kafka version
/// and mode its cells plan or ran, in the order of the cells.
pub fn of(m: &Matrix) -> Stability {
    let mut groups: Vec<Group> = Vec::new();
    for c in &m.cells {
        let modes = c.modes_planned.iter().chain(c.modes.iter().map(|s| &s.mode));
        for &mode in modes {
            let seed = seed_of(c, mode);
            match groups.iter_mut().find(|g| g.mode == mode && g.scenario == c.scenario && g.kafka == c.kafka) {
                Some(g) if g.seeds.iter().any(|s| s.seed == c.seed) => {}
                Some(g) => g.seeds.push(seed),
                None => groups.push(Group {
                    scenario: c.scenario.clone(),
                    mode,
                    kafka: c.kafka.clone(),
                    status: Status::OneSeed,
                    seeds: vec![seed],
                }),
            }
        }
    }
    let mut totals = StabilityTotals { groups: groups.len(), ..StabilityTotals::default() };
    for g in &mut groups {
        g.status = status_of(&g.seeds);
        match g.status {
            Status::Stable => totals.stable += 1,
            Status::Flaky => totals.flaky += 1,
            Status::Incomplete => totals.incomplete += 1,
            Status::OneSeed => totals.one_seed += 1,
        }
    }
    let most = groups.iter().map(|g| g.seeds.len()).max().unwrap_or(0);
    Stability { seeds: most, groups, totals }
}

/// Incomplete groups the line names before it only counts the rest.
const INCOMPLETE_NAMED: usize = 5;

/// The one line a nightly greps: `stable 58 of 58 cells over 5 seeds`, then
/// every flaky group with its tally (`; flaky: s/legacy@4.4.0 (3 as
/// expected, 2 NOT as expected), …`) and the incomplete ones. A "cell" here is a group
/// (scenario × mode × version). With one seed per group it says that
/// stability was not measured rather than counting trivial agreements.
pub fn summary_line(m: &Matrix) -> String {
    let st = &m.stability;
    let t = &st.totals;
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut line = if st.measured() {
        format!("stable {} of {} cells over {} seed{}", t.stable, t.groups, st.seeds, plural(st.seeds))
    } else {
        let advice = if m.shard.is_none() { "; --seed-count N runs N" } else { "" };
        format!(
            "stability not measured: {} cell{} over 1 seed each (one seed cannot disagree with itself{advice})",
            t.groups,
            plural(t.groups)
        )
    };
    let flaky: Vec<String> = st.flaky().map(|g| format!("{} ({})", g.label(), g.tally())).collect();
    if !flaky.is_empty() {
        line.push_str(&format!("; flaky: {}", flaky.join(", ")));
    }
    let incomplete: Vec<&Group> = st.groups.iter().filter(|g| g.status == Status::Incomplete).collect();
    if !incomplete.is_empty() {
        let named: Vec<String> =
            incomplete.iter().take(INCOMPLETE_NAMED).map(|g| format!("{} ({})", g.label(), g.tally())).collect();
        line.push_str(&format!("; incomplete: {}", named.join(", ")));
        if incomplete.len() > INCOMPLETE_NAMED {
            line.push_str(&format!(" and {} more", incomplete.len() - INCOMPLETE_NAMED));
        }
    }
    if st.measured() && t.one_seed > 0 {
        line.push_str(&format!("; {} cell{} with one seed only", t.one_seed, plural(t.one_seed)));
    }
    if let Some(sh) = &m.shard {
        line.push_str(&format!(
            " (shard {}/{}: its own seeds of each cell; the merge of the shards has the campaign's)",
            sh.index, sh.count
        ));
    }
    line
}

#[cfg(test)]
mod tests;
