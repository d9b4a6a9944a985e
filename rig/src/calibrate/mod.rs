//! `sinkhole calibrate`: what the scenario library would have caught.
//!
//! Mutation testing for the library: every mutant (a faithful sink with one
//! deliberate deviation, `model::Mutant`) runs through every scenario that
//! runs its base mode, judged against that mode's expectation and premises;
//! the faithful modes run beside them. A cell of the detection matrix is
//! **caught** (the mutant's verdict is `fail`: the anomaly or the job's end
//! that caught it), **escaped** (it passed: that scenario cannot see the
//! deviation) or **inconclusive**; a mutant no scenario catches is a bug
//! class the library has no power against, and a faithful mode that fails is
//! a scenario that blames a correct sink. Either makes the exit code 1.
//!
//! The runs are a matrix ([`crate::matrix`]: the same cells, progress,
//! per-run directories, `matrix.json`/`matrix.html`/`junit.xml`, Ctrl-C);
//! this module reads the matrix into the detection view and writes
//! `calibrate.json` and `calibrate.html` beside it after every cell.
pub mod render;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use sinkhole_model::{Mutant, SinkMode};

use crate::matrix::{self, Campaign, CellStatus, Matrix, MatrixArgs, SaveHook};
use crate::results::exit;
use crate::results::summary::ModeSummary;
use crate::run::RunError;
use sinkhole_checker::verdict::words::RIG_ERROR;
use sinkhole_checker::verdict::Outcome;

pub const JSON_FILE: &str = "calibrate.json";
pub const HTML_FILE: &str = "calibrate.html";

/// The command line of `sinkhole calibrate`.
#[derive(Debug, Clone)]
pub struct CalibrateArgs {
    /// The scenarios, versions and seeds; its directory defaults to
    /// `<results>/calibrate-<timestamp>`.
    pub campaign: Campaign,
    /// Mutant names; empty = every mutant.
    pub mutants: Vec<String>,
}

/// What one (mode, scenario) came to over its runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Detection {
    /// A mutant: failed in at least one run. A faithful mode: flagged.
    Caught,
    /// Passed every run.
    Escaped,
    /// No run judged it (inconclusive, observed, or the rig failed), or some
    /// did and none failed.
    Inconclusive,
    /// The scenario does not run the base mode.
    NotRun,
    /// Not run yet (a calibration read while it runs).
    Pending,
}

impl Detection {
    pub fn name(self) -> &'static str {
        match self {
            Detection::Caught => "caught",
            Detection::Escaped => "escaped",
            Detection::Inconclusive => "inconclusive",
            Detection::NotRun => "n/a",
            Detection::Pending => "pending",
        }
    }
}

/// One run of one mode in one scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRef {
    pub kafka: String,
    pub seed: u64,
    pub outcome: Outcome,
    /// The verdict in words (`LOST 1006 — expected clean`); absent in older files.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub words: String,
    /// What caught it (`lost=1006`, `job failed: …`), else the verdict's reason.
    pub detail: String,
    /// The run's directory (its report.html is there).
    #[serde(default)]
    pub dir: Option<PathBuf>,
}

/// A mode in one scenario, over every version and seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetectionCell {
    pub scenario: String,
    pub detection: Detection,
    /// Runs that failed the expectation, of `runs.len()`.
    pub caught: usize,
    pub runs: Vec<RunRef>,
}

impl DetectionCell {
    /// Caught in some runs and not in others: timing decided it.
    pub fn by_luck(&self) -> bool {
        self.detection == Detection::Caught && self.caught < self.runs.len()
    }
}

/// A row of the detection matrix: one mutant or one faithful mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    pub mode: SinkMode,
    /// The faithful mode whose expectation it is judged by (itself for a faithful mode).
    pub base: SinkMode,
    /// For a mutant: the bug class it stands for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bug_class: String,
    pub cells: Vec<DetectionCell>,
    /// The scenarios that caught it (a mutant) or flagged it (a faithful mode).
    pub caught_by: Vec<String>,
}

impl Row {
    pub fn is_mutant(&self) -> bool {
        self.mode.mutant().is_some()
    }
    fn count(&self, d: Detection) -> usize {
        self.cells.iter().filter(|c| c.detection == d).count()
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalibrationTotals {
    pub mutants: usize,
    /// Mutants caught by at least one scenario.
    pub caught: usize,
    /// Mutants no scenario caught.
    pub uncaught: usize,
    /// Faithful modes some scenario failed.
    pub faithful_flagged: usize,
    /// Cells where the rig failed (no verdicts) or a mode errored.
    pub rig_errors: usize,
}

/// `calibrate.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    pub calibration_id: String,
    pub dir: PathBuf,
    pub started: String,
    #[serde(default)]
    pub finished: Option<String>,
    pub complete: bool,
    pub interrupted: bool,
    pub kafka: Vec<String>,
    pub seeds: Vec<u64>,
    /// The mutants run.
    pub mutants: Vec<SinkMode>,
    /// The scenarios, in the matrix's order (the columns).
    pub scenarios: Vec<String>,
    /// The runs behind it (`matrix.json` in the same directory).
    pub matrix: PathBuf,
    /// Mutants first, then the faithful modes.
    pub rows: Vec<Row>,
    pub totals: CalibrationTotals,
    pub wall_ms: u64,
    /// 1 when no scenario caught a mutant or a faithful mode was
    /// flagged; 3 when neither but the rig failed somewhere; else 0.
    pub exit_code: u8,
}

/// The mutants named (`legacy~assume-committed`), or every one.
pub fn parse_mutants(names: &[String]) -> Result<Vec<Mutant>, Vec<String>> {
    if names.is_empty() {
        return Ok(Mutant::ALL.to_vec());
    }
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for n in names {
        match Mutant::parse(n) {
            Some(m) if !out.contains(&m) => out.push(m),
            Some(_) => {}
            None => bad.push(format!(
                "--mutants {n}: unknown mutant; mutants: {}",
                Mutant::ALL.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
            )),
        }
    }
    if bad.is_empty() {
        Ok(out)
    } else {
        Err(bad)
    }
}

/// What caught a failed run: its anomalies, or the verdict's reason.
fn detail_of(m: &ModeSummary) -> String {
    let counts = if m.checked { render::anomalies(&m.counts) } else { String::new() };
    if m.outcome == Outcome::Fail && !counts.is_empty() {
        return counts;
    }
    let reason = m.reason.trim();
    if m.outcome == Outcome::Fail && reason.starts_with("the job failed") {
        // The end of the reason says how: the last error.
        let last = reason.rsplit("last: ").next().unwrap_or(reason);
        return format!("job failed: {}", render::shorten(last, 120));
    }
    render::shorten(reason, 160)
}

fn cell_for(m: &Matrix, mode: SinkMode, scenario: &str) -> DetectionCell {
    let mut runs = Vec::new();
    let mut planned = false;
    let mut waiting = false;
    for c in m.cells.iter().filter(|c| c.scenario == scenario) {
        if !c.modes_planned.contains(&mode) {
            continue;
        }
        planned = true;
        waiting |= matches!(c.status, CellStatus::Pending | CellStatus::Running);
        let (outcome, words, detail) = match c.mode(mode) {
            Some(s) => (s.outcome, s.words(), detail_of(s)),
            None if c.status == CellStatus::Error => (
                Outcome::Error,
                RIG_ERROR.to_string(),
                format!("the rig failed: {}", c.error.clone().unwrap_or_default()),
            ),
            None => continue,
        };
        runs.push(RunRef { kafka: c.kafka.clone(), seed: c.seed, outcome, words, detail, dir: c.dir.clone() });
    }
    let caught = runs.iter().filter(|r| r.outcome == Outcome::Fail).count();
    let detection = if !planned {
        Detection::NotRun
    } else if caught > 0 {
        Detection::Caught
    } else if runs.is_empty() && waiting {
        Detection::Pending
    } else if !runs.is_empty() && runs.iter().all(|r| r.outcome == Outcome::Pass) {
        Detection::Escaped
    } else {
        Detection::Inconclusive
    };
    DetectionCell { scenario: scenario.to_string(), detection, caught, runs }
}

/// The detection matrix of a matrix's cells, for `mutants` and every
/// faithful mode the cells ran.
pub fn analyse(m: &Matrix, mutants: &[Mutant]) -> (Vec<String>, Vec<Row>, CalibrationTotals, u8) {
    let mut scenarios: Vec<String> = Vec::new();
    for c in &m.cells {
        if !scenarios.contains(&c.scenario) {
            scenarios.push(c.scenario.clone());
        }
    }
    let ran = m.columns();
    let faithful: Vec<SinkMode> = SinkMode::ALL.iter().copied().filter(|f| ran.contains(f)).collect();
    let modes = mutants.iter().map(|x| SinkMode::Mutant(*x)).chain(faithful);
    let rows: Vec<Row> = modes
        .map(|mode| {
            let cells: Vec<DetectionCell> = scenarios.iter().map(|s| cell_for(m, mode, s)).collect();
            let caught_by =
                cells.iter().filter(|c| c.detection == Detection::Caught).map(|c| c.scenario.clone()).collect();
            Row {
                mode,
                base: mode.base(),
                bug_class: mode.mutant().map(|x| x.bug_class().to_string()).unwrap_or_default(),
                cells,
                caught_by,
            }
        })
        .collect();
    let mut t = CalibrationTotals::default();
    for r in &rows {
        if r.is_mutant() {
            t.mutants += 1;
            if r.caught_by.is_empty() {
                t.uncaught += 1;
            } else {
                t.caught += 1;
            }
        } else if !r.caught_by.is_empty() {
            t.faithful_flagged += 1;
        }
    }
    t.rig_errors = m.cells.iter().filter(|c| c.rig_failed()).count();
    let code = exit_code(&t);
    (scenarios, rows, t, code)
}

/// 1 when no scenario caught a mutant or a faithful mode was flagged
/// (either is a finding about the library), 3 when the rig failed and there
/// is no such finding, else 0.
pub fn exit_code(t: &CalibrationTotals) -> u8 {
    if t.uncaught > 0 || t.faithful_flagged > 0 {
        exit::FAILED
    } else if t.rig_errors > 0 {
        exit::RIG_FAILED
    } else {
        exit::OK
    }
}

impl Calibration {
    /// The calibration of matrix `m` (rewritten after every cell).
    pub fn of(m: &Matrix, mutants: &[Mutant]) -> Calibration {
        let (scenarios, rows, totals, exit_code) = analyse(m, mutants);
        Calibration {
            calibration_id: m.matrix_id.replacen("matrix-", "calibrate-", 1),
            dir: m.dir.clone(),
            started: m.started.clone(),
            finished: m.finished.clone(),
            complete: m.complete,
            interrupted: m.interrupted,
            kafka: m.kafka.clone(),
            seeds: m.seeds.clone(),
            mutants: mutants.iter().map(|x| SinkMode::Mutant(*x)).collect(),
            scenarios,
            matrix: sinkhole_base::rundir::MatrixDir::at(&m.dir).json(),
            rows,
            totals,
            wall_ms: m.wall_ms,
            exit_code,
        }
    }

    pub fn mutant_rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.is_mutant())
    }

    pub fn faithful_rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| !r.is_mutant())
    }
}

/// Writes `calibrate.json` and `calibrate.html` into `c.dir`.
pub fn write_all(c: &Calibration) -> anyhow::Result<()> {
    std::fs::create_dir_all(&c.dir).with_context(|| format!("creating {}", c.dir.display()))?;
    let json = sinkhole_base::provenance::to_json(c)?;
    std::fs::write(c.dir.join(JSON_FILE), json).context("writing calibrate.json")?;
    std::fs::write(c.dir.join(HTML_FILE), render::render_html(c)).context("writing calibrate.html")?;
    Ok(())
}

/// `sinkhole calibrate`: the matrix of every scenario with the mutants beside
/// their base modes, then the detection matrix; returns the exit code.
pub async fn run(args: CalibrateArgs) -> Result<u8, RunError> {
    let mutants = parse_mutants(&args.mutants).map_err(|p| RunError::BadInput(anyhow::anyhow!(p.join("\n"))))?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let c = &args.campaign;
    let out = c.out.clone().unwrap_or_else(|| c.results.join(format!("calibrate-{}", crate::run::timestamp(now))));
    let hook_mutants = mutants.clone();
    let on_save = SaveHook(Arc::new(move |m: &Matrix| {
        if let Err(e) = write_all(&Calibration::of(m, &hook_mutants)) {
            eprintln!("sinkhole: calibrate.json not written: {e:#}");
        }
    }));
    let margs = MatrixArgs {
        campaign: Campaign { out: Some(out), json: false, ..c.clone() },
        mutants: mutants.clone(),
        on_save: Some(on_save),
        ..MatrixArgs::default()
    };
    let m = matrix::run_matrix(margs).await?;
    let c = Calibration::of(&m, &mutants);
    write_all(&c).map_err(RunError::Failed)?;
    if args.campaign.json {
        print!("{}", sinkhole_base::provenance::to_json(&c).map_err(|e| RunError::Failed(e.into()))?);
    } else {
        print!("{}", render::render_table(&c));
        println!("calibration: {}", c.dir.join(HTML_FILE).display());
    }
    Ok(c.exit_code)
}

#[cfg(test)]
mod tests;
