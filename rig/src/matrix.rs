//! `sinkhole matrix`: scenarios × Kafka versions × seeds, one `sinkhole run`
//! per cell (every mode of the scenario on one cluster, through
//! [`run::plan`] and [`run::execute`]), then one comparison of all of them.
//!
//! A cell's run keeps its own directory (`results/<run-id>/`, as `sinkhole
//! run` writes it); the matrix directory (`results/matrix-<timestamp>/` or
//! `--out`) holds `matrix.json`, `matrix.html` and `junit.xml`, rewritten
//! after every cell so a matrix cut short (Ctrl-C, a killed CI job) still
//! leaves the cells it finished. Like Jepsen's test matrix over nemeses and
//! versions, each cell is an independent test with its own seed; the matrix
//! only runs and compares them.
//!
//! Which scenarios: the files given, and for a directory its `*.yaml` files
//! minus the names in its [`EXCLUDE_FILE`] (benchmarks such as
//! `throughput.yaml`: nothing to judge, long to run). No argument = the
//! [`DEFAULT_DIR`] library.
//!
//! A campaign too big for one host runs in shards ([`shard`]): `--shard I/N`
//! runs a fixed 1/N of the same cell list on each host, and [`merge`] joins
//! the shards' matrices into one.
//!
//! With several seeds the matrix also measures stability ([`stability`]):
//! per scenario × mode × version, whether every seed gave the same outcome.
mod execute;
pub mod merge;
mod progress;
mod render;
mod seeds;
pub mod shard;
pub mod stability;

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use sinkhole_base::rundir::MatrixDir;
use sinkhole_model::SinkMode;

use crate::results::exit::{self, Policy};
use crate::results::summary::{ModeSummary, Summary};
use crate::run::{self, RunArgs, RunError};
pub use execute::{run, run_matrix};
pub use render::{
    anomalies, anomaly_counts, cell_text, compared, rel_link, render_html, render_junit, render_table,
    stability_cell_text, stability_html, stability_text, PAGE_CSS,
};
pub use seeds::{seed_count_problem, Seeds, MAX_SEEDS};
pub use shard::{LibraryEntry, Shard, ShardInfo};
use sinkhole_checker::verdict::Outcome;
pub use stability::{Stability, StabilityTotals};

/// The scenario library a bare `sinkhole matrix` runs.
pub const DEFAULT_DIR: &str = "scenarios";
/// In a scenario directory: file names (one a line, `#` comments) a directory
/// argument leaves out. Files named on the command line always run.
pub const EXCLUDE_FILE: &str = sinkhole_base::rundir::names::MATRIX_EXCLUDE;

/// What a campaign of runs covers and where it writes: the part of the
/// command line `sinkhole matrix` and `sinkhole calibrate` share.
#[derive(Debug, Clone)]
pub struct Campaign {
    /// Scenario files and directories; empty = [`DEFAULT_DIR`].
    pub inputs: Vec<PathBuf>,
    /// Kafka versions; empty = each scenario's own.
    pub kafka: Vec<String>,
    pub seeds: Seeds,
    /// Where the runs write their directories.
    pub results: PathBuf,
    /// The campaign's own directory; default `<results>/matrix-<timestamp>`
    /// (`calibrate-<timestamp>` for a calibration).
    pub out: Option<PathBuf>,
    /// Print the campaign's JSON file on stdout instead of the table.
    pub json: bool,
    /// `--keep-data`: the runs keep their brokers' log segments ([`RunArgs::drop_data`]).
    pub keep_data: bool,
}

impl Default for Campaign {
    fn default() -> Self {
        Campaign {
            inputs: Vec::new(),
            kafka: Vec::new(),
            seeds: Seeds::default(),
            results: PathBuf::from("results"),
            out: None,
            json: false,
            keep_data: false,
        }
    }
}

/// The command line of `sinkhole matrix`.
#[derive(Debug, Clone, Default)]
pub struct MatrixArgs {
    pub campaign: Campaign,
    /// Mode names; empty = each scenario's own (as `sinkhole run --mode`).
    pub modes: Vec<String>,
    /// Mutants run beside each scenario's modes where their base runs
    /// (`sinkhole calibrate`; [`run::add_mutants`]).
    pub mutants: Vec<sinkhole_model::Mutant>,
    /// Stop after the first cell with a failure; the rest are `skipped`.
    pub fail_fast: bool,
    /// `--fail-on-inconclusive`: an inconclusive mode fails the matrix (exit 1).
    pub fail_on_inconclusive: bool,
    /// `--fail-on-flaky`: a group whose seeds disagree fails the matrix (exit 1).
    pub fail_on_flaky: bool,
    /// `--shard I/N`: run only this shard's cells.
    pub shard: Option<Shard>,
    /// `--sequential`: each cell's modes one after another.
    pub sequential: bool,
    /// `--fresh-clusters`: every cell starts its own cluster.
    pub no_reuse: bool,
    /// Called after every write of the matrix files (a campaign built on the
    /// matrix, such as `sinkhole calibrate`, writes its own files then).
    pub on_save: Option<SaveHook>,
}

/// A callback on the matrix as just written.
#[derive(Clone)]
pub struct SaveHook(pub std::sync::Arc<dyn Fn(&Matrix) + Send + Sync>);

impl std::fmt::Debug for SaveHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SaveHook")
    }
}

/// One cell to run: a scenario file on one Kafka version with one seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellKey {
    pub scenario: String,
    pub file: PathBuf,
    pub kafka: String,
    pub seed: u64,
}

/// Cells in run order: scenarios as given (a directory's sorted), then each
/// Kafka version in the order given (none: the scenario's own), then seeds.
/// Scenario-major keeps a scenario's versions next to each other, which is
/// the comparison people read.
pub fn expand_cells(
    scenarios: &[(PathBuf, sinkhole_scenario::Scenario)],
    kafka: &[String],
    seeds: &[u64],
) -> Vec<CellKey> {
    let mut out = Vec::new();
    for (file, s) in scenarios {
        let versions: Vec<String> = if kafka.is_empty() { vec![s.cluster.kafka.clone()] } else { kafka.to_vec() };
        for k in &versions {
            for &seed in seeds {
                out.push(CellKey { scenario: s.name.clone(), file: file.clone(), kafka: k.clone(), seed });
            }
        }
    }
    out
}

/// The names an exclude file lists.
pub fn parse_exclude(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// Files and directories → scenario files, with every problem found.
pub fn expand_inputs(inputs: &[PathBuf]) -> (Vec<PathBuf>, Vec<String>) {
    let default = [PathBuf::from(DEFAULT_DIR)];
    let inputs = if inputs.is_empty() { &default[..] } else { inputs };
    let mut files: Vec<PathBuf> = Vec::new();
    let mut problems = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let exclude = match std::fs::read_to_string(MatrixDir::exclude_in(input)) {
                Ok(t) => parse_exclude(&t),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(e) => {
                    problems.push(format!("{}: {e}", MatrixDir::exclude_in(input).display()));
                    Vec::new()
                }
            };
            let entries = match std::fs::read_dir(input) {
                Ok(e) => e,
                Err(e) => {
                    problems.push(format!("{}: {e}", input.display()));
                    continue;
                }
            };
            let mut found: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file() && matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
                .filter(|p| {
                    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    !exclude.iter().any(|x| x == name)
                })
                .collect();
            found.sort();
            if found.is_empty() {
                problems.push(format!("{}: no scenario (*.yaml) to run in this directory", input.display()));
            }
            for f in found {
                if !files.contains(&f) {
                    files.push(f);
                }
            }
        } else if input.is_file() {
            if !files.contains(input) {
                files.push(input.clone());
            }
        } else {
            problems.push(format!("{}: no such file or directory", input.display()));
        }
    }
    (files, problems)
}

/// What became of a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CellStatus {
    /// Not started yet.
    Pending,
    /// Its run is under way (a matrix file read while it runs, or one whose
    /// process was killed with SIGKILL, shows this).
    Running,
    /// The run finished: its modes have verdicts.
    Done,
    /// The rig failed before the run had verdicts (the cluster did not start…).
    Error,
    /// A signal stopped the matrix during this cell; its cluster was killed.
    Interrupted,
    /// Not run: `--fail-fast` stopped the matrix after a failure.
    Skipped,
}

impl CellStatus {
    pub fn name(&self) -> &'static str {
        match self {
            CellStatus::Pending => "pending",
            CellStatus::Running => "running",
            CellStatus::Done => "done",
            CellStatus::Error => "error",
            CellStatus::Interrupted => "interrupted",
            CellStatus::Skipped => "skipped",
        }
    }
}

/// One cell of `matrix.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellResult {
    /// The cell's place in the whole matrix's cell list (0-based), the same
    /// in every shard: what a merge orders and checks the cells by.
    #[serde(default)]
    pub index: usize,
    pub scenario: String,
    pub file: PathBuf,
    pub kafka: String,
    pub seed: u64,
    pub status: CellStatus,
    /// The modes the cell runs, in order.
    pub modes_planned: Vec<SinkMode>,
    #[serde(default)]
    pub run_id: Option<String>,
    /// The run's own directory (`results/<run-id>`).
    #[serde(default)]
    pub dir: Option<PathBuf>,
    /// Per mode: outcome, expected, expected_met, counts, reason, wall_ms.
    #[serde(default)]
    pub modes: Vec<ModeSummary>,
    /// Why the cell has no verdicts (status `error`).
    #[serde(default)]
    pub error: Option<String>,
    /// The cell's wall time: cluster start to teardown and report.
    #[serde(default)]
    pub wall_ms: u64,
    /// The run whose cluster the cell reused (consecutive cells with the
    /// same cluster spec share a healthy cluster); absent: it started its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_reused_from: Option<String>,
    /// Why the previous cell's cluster was not reused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_fresh_because: Option<String>,
}

impl CellResult {
    pub fn pending(key: &CellKey, modes: Vec<SinkMode>) -> CellResult {
        CellResult {
            index: 0,
            scenario: key.scenario.clone(),
            file: key.file.clone(),
            kafka: key.kafka.clone(),
            seed: key.seed,
            status: CellStatus::Pending,
            modes_planned: modes,
            run_id: None,
            dir: None,
            modes: Vec::new(),
            error: None,
            wall_ms: 0,
            cluster_reused_from: None,
            cluster_fresh_because: None,
        }
    }

    /// The cell's verdict for `mode`, when it has one.
    pub fn mode(&self, mode: SinkMode) -> Option<&ModeSummary> {
        self.modes.iter().find(|m| m.mode == mode)
    }

    /// A mode failed its expectation, or the rig failed.
    pub fn failed(&self) -> bool {
        self.failed_under(Policy::default())
    }

    /// [`Self::failed`], inconclusive counting as failed under `--fail-on-inconclusive`.
    pub fn failed_under(&self, policy: Policy) -> bool {
        self.rig_failed() || self.modes.iter().any(|m| policy.fails(m.outcome))
    }

    /// The rig failed for the whole cell (no verdicts) or for one of its modes.
    pub fn rig_failed(&self) -> bool {
        self.status == CellStatus::Error || self.modes.iter().any(|m| m.outcome == Outcome::Error)
    }

    /// Records a finished run.
    pub fn finish(&mut self, s: &Summary, wall_ms: u64) {
        self.status = CellStatus::Done;
        self.run_id = Some(s.run_id.clone());
        self.dir = Some(s.dir.clone());
        self.modes = s.modes.clone();
        self.wall_ms = wall_ms;
        self.cluster_reused_from = s.cluster_reused_from.clone();
        self.cluster_fresh_because = s.cluster_fresh_because.clone();
    }
}

/// Mode verdicts by outcome, over every cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub cells: usize,
    /// Cells whose run finished with verdicts.
    pub cells_done: usize,
    /// Cells where the rig failed.
    pub cells_error: usize,
    /// Cells not run (pending, interrupted or skipped).
    pub cells_not_run: usize,
    /// Mode verdicts (cells done × their modes).
    pub mode_runs: usize,
    pub pass: usize,
    pub fail: usize,
    pub inconclusive: usize,
    pub observed: usize,
    /// Modes of finished cells the rig failed to run through (outcome `error`).
    #[serde(default)]
    pub error: usize,
}

/// `matrix.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Matrix {
    pub matrix_id: String,
    pub dir: PathBuf,
    /// RFC 3339, UTC.
    pub started: String,
    #[serde(default)]
    pub finished: Option<String>,
    /// Every cell ran (or `--fail-fast` skipped the rest): false while it runs
    /// and when a signal stopped it.
    pub complete: bool,
    pub interrupted: bool,
    /// The `--kafka` versions (empty: each scenario's own).
    pub kafka: Vec<String>,
    pub seeds: Vec<u64>,
    /// The `--modes` filter (empty: each scenario's own).
    pub modes: Vec<String>,
    /// Whether `exit_code` counts inconclusive modes as failed.
    #[serde(default)]
    pub fail_on_inconclusive: bool,
    /// Whether `exit_code` is 1 when a group is flaky (`--fail-on-flaky`).
    #[serde(default)]
    pub fail_on_flaky: bool,
    /// The scenario files of the whole matrix (every shard's), in cell
    /// order, each with a digest of its text: shards of one campaign ran
    /// the same library.
    #[serde(default)]
    pub library: Vec<LibraryEntry>,
    /// Set when this matrix is one shard of a campaign (`--shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// Set when this matrix is the merge of shards: where each came from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<merge::MergedShard>,
    pub cells: Vec<CellResult>,
    pub totals: Totals,
    /// Per scenario × mode × version, the outcome of every seed and whether
    /// they agree; recomputed from the cells by [`Matrix::refresh`].
    #[serde(default)]
    pub stability: Stability,
    /// The matrix's wall time so far (merged: the sum of the shards').
    pub wall_ms: u64,
    /// 0 every expectation met, 1 one failed (or, with `fail_on_flaky`, a
    /// group is flaky), 3 the rig failed (a cell that did not start, a mode
    /// that errored), 130 etc. on a signal; see [`crate::results::exit`].
    pub exit_code: u8,
}

impl Matrix {
    /// A matrix that has run nothing yet: no cells, no filters, not a shard
    /// and not a merge; the rest is filled in with struct update syntax.
    pub fn new(matrix_id: String, dir: PathBuf, started: String) -> Matrix {
        Matrix {
            matrix_id,
            dir,
            started,
            finished: None,
            complete: false,
            interrupted: false,
            kafka: Vec::new(),
            seeds: Vec::new(),
            modes: Vec::new(),
            fail_on_inconclusive: false,
            fail_on_flaky: false,
            library: Vec::new(),
            shard: None,
            merged_from: Vec::new(),
            cells: Vec::new(),
            totals: Totals::default(),
            stability: Stability::default(),
            wall_ms: 0,
            exit_code: 0,
        }
    }

    /// Recomputes `totals`, `stability` and `exit_code` from the cells, and
    /// gives rows written before the verdict's words (an older shard's) their words.
    pub fn refresh(&mut self) {
        let mut t = Totals { cells: self.cells.len(), ..Totals::default() };
        for m in self.cells.iter_mut().flat_map(|c| c.modes.iter_mut()).filter(|m| m.words.is_empty()) {
            m.words = m.words();
        }
        for c in &self.cells {
            match c.status {
                CellStatus::Done => t.cells_done += 1,
                CellStatus::Error => t.cells_error += 1,
                _ => t.cells_not_run += 1,
            }
            for m in &c.modes {
                t.mode_runs += 1;
                match m.outcome {
                    Outcome::Pass => t.pass += 1,
                    Outcome::Fail => t.fail += 1,
                    Outcome::Inconclusive => t.inconclusive += 1,
                    Outcome::Observed => t.observed += 1,
                    Outcome::Error => t.error += 1,
                }
            }
        }
        self.totals = t;
        self.stability = stability::of(self);
        self.exit_code = exit_code_with(&self.cells, self.policy());
        if self.fail_on_flaky && self.stability.totals.flaky > 0 {
            self.exit_code = exit::FAILED;
        }
    }

    /// What a non-zero `exit_code` means, for the line a command prints
    /// beside it: `--fail-on-flaky`'s own reason when only flakiness made it 1.
    pub fn explain_exit(&self) -> String {
        let verdicts = exit_code_with(&self.cells, self.policy());
        if self.exit_code == exit::FAILED && verdicts != exit::FAILED {
            let n = self.stability.totals.flaky;
            format!(
                "{n} scenario × mode × version cell{} flaky over the seeds (--fail-on-flaky)",
                if n == 1 { " is" } else { "s are" }
            )
        } else {
            exit::explain(self.exit_code, self.policy(), "cell")
        }
    }

    /// The policy `exit_code` is computed with.
    pub fn policy(&self) -> Policy {
        Policy { fail_on_inconclusive: self.fail_on_inconclusive }
    }

    /// The modes of all cells in the order the scenarios name them (first
    /// appearance): the columns of the table and the page.
    pub fn columns(&self) -> Vec<SinkMode> {
        let mut cols: Vec<SinkMode> = Vec::new();
        for c in &self.cells {
            for m in c.modes_planned.iter().chain(c.modes.iter().map(|s| &s.mode)) {
                if !cols.contains(m) {
                    cols.push(*m);
                }
            }
        }
        cols
    }

    /// Distinct Kafka versions, in cell order.
    pub fn versions(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for c in &self.cells {
            if !v.contains(&c.kafka) {
                v.push(c.kafka.clone());
            }
        }
        v
    }

    /// Whether a scenario runs with more than one seed (rows then name it).
    pub fn several_seeds(&self, scenario: &str, kafka: &str) -> bool {
        self.cells.iter().filter(|c| c.scenario == scenario && c.kafka == kafka).count() > 1
    }
}

/// 0 when no cell failed (inconclusive and observed are not failures), 1 when
/// a mode failed its expectation, 3 when none did but the rig failed (a cell
/// that did not start, a mode that errored).
pub fn exit_code(cells: &[CellResult]) -> u8 {
    exit_code_with(cells, Policy::default())
}

/// [`exit_code`] under a policy (`--fail-on-inconclusive`).
pub fn exit_code_with(cells: &[CellResult], policy: Policy) -> u8 {
    let outcomes = cells.iter().flat_map(|c| c.modes.iter().map(|m| m.outcome));
    exit::code(outcomes, cells.iter().any(|c| c.status == CellStatus::Error), policy)
}

/// `Ns`, `MmSSs` or `HhMMm`.
pub fn human_duration(ms: u64) -> String {
    let s = ms / 1000;
    if s < 60 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, s / 60 % 60)
    }
}

/// Writes `path` through a temporary file and a rename: a signal or a reader
/// never sees half a file.
pub(crate) fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Writes `matrix.json`, `matrix.html` and `junit.xml` into `m.dir`.
pub fn write_all(m: &Matrix) -> anyhow::Result<()> {
    std::fs::create_dir_all(&m.dir).with_context(|| format!("creating {}", m.dir.display()))?;
    let json = sinkhole_base::provenance::to_json(m)?;
    let dir = MatrixDir::at(&m.dir);
    write_atomic(&dir.json(), &json).context("writing matrix.json")?;
    write_atomic(&dir.html(), &render_html(m)).context("writing matrix.html")?;
    write_atomic(&dir.junit(), &render_junit(m)).context("writing junit.xml")?;
    Ok(())
}

/// A validated matrix: every cell's plan inputs, nothing run yet.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The cells to run (this shard's, with `--shard`), each with its index
    /// in the whole matrix.
    pub cells: Vec<(CellKey, Vec<SinkMode>)>,
    /// For each of `cells`, its index in the whole matrix's cell list.
    pub indexes: Vec<usize>,
    /// How many cells the whole matrix has (every shard's).
    pub cells_total: usize,
    pub seeds: Vec<u64>,
    /// The Kafka versions `cells` need.
    pub versions: Vec<String>,
    /// The scenario files of the whole matrix.
    pub library: Vec<LibraryEntry>,
}

/// Loads and validates every scenario and checks the command line; on bad
/// input returns every problem of every file at once.
pub fn prepare(args: &MatrixArgs, random_seed: u64) -> Result<Prepared, Vec<String>> {
    let c = &args.campaign;
    let (files, mut problems) = expand_inputs(&c.inputs);
    let mut versions = Vec::new();
    if !c.kafka.is_empty() {
        match sinkhole_install::parse_versions(&c.kafka.join(",")) {
            Ok(v) => versions = v,
            Err(e) => problems.push(format!("--kafka: {e}")),
        }
    }
    for m in &args.modes {
        if SinkMode::parse(m).is_none() {
            problems.push(run::unknown_mode("--modes", m));
        }
    }
    problems.extend(c.seeds.problems());
    if let (Some(sh), Seeds::Count { base: None, .. }) = (&args.shard, &c.seeds) {
        problems.push(format!(
            "--shard {sh}: name the seeds (--seeds, or --seed with --seed-count): every shard must run the same cells, and each would draw its own random seed"
        ));
    }
    let seeds = c.seeds.resolve(random_seed);
    let mut scenarios = Vec::new();
    let mut library = Vec::new();
    for f in &files {
        match sinkhole_scenario::load(f) {
            Ok(s) => {
                let text = std::fs::read(f).unwrap_or_default();
                library.push(LibraryEntry { scenario: s.name.clone(), file: f.clone(), digest: shard::digest(&text) });
                scenarios.push((f.clone(), s));
            }
            Err(e) => problems.push(e.render()),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let keys = expand_cells(&scenarios, &versions, &seeds);
    let cells_total = keys.len();
    let mut cells = Vec::new();
    let mut indexes = Vec::new();
    let mut all_versions: Vec<String> = Vec::new();
    for (index, k) in keys.into_iter().enumerate() {
        // What `sinkhole run` would do with this cell: --modes and --kafka
        // applied the same way, so the matrix refuses what run refuses.
        match run::plan(&cell_args(args, &k), 0) {
            // Every cell is planned (a bad one is refused on every shard
            // alike); only this shard's are kept.
            Ok(_) if args.shard.is_some_and(|sh| !sh.takes(index)) => {}
            Ok(p) => {
                if !all_versions.contains(&k.kafka) {
                    all_versions.push(k.kafka.clone());
                }
                cells.push((k, p.scenario.modes.clone()));
                indexes.push(index);
            }
            Err(RunError::BadInput(e) | RunError::Failed(e)) => {
                let msg = format!("{}: {e:#}", k.file.display());
                if !problems.contains(&msg) {
                    problems.push(msg);
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(Prepared { cells, indexes, cells_total, seeds, versions: all_versions, library })
    } else {
        Err(problems)
    }
}

fn cell_args(args: &MatrixArgs, k: &CellKey) -> RunArgs {
    RunArgs {
        file: k.file.clone(),
        modes: args.modes.clone(),
        mutants: args.mutants.clone(),
        kafka: Some(k.kafka.clone()),
        seed: Some(k.seed),
        results: args.campaign.results.clone(),
        json: false,
        fail_on_inconclusive: args.fail_on_inconclusive,
        connector_jar: None,
        connector: None,
        sequential: args.sequential,
        bootstrap: Vec::new(),
        drop_data: !args.campaign.keep_data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclude_file_lines_and_comments() {
        assert_eq!(
            parse_exclude("# benchmarks\nthroughput.yaml  # no verdict\n\n  big.yaml\n"),
            vec!["throughput.yaml".to_string(), "big.yaml".to_string()]
        );
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(1_500), "1.5s");
        assert_eq!(human_duration(125_000), "2m05s");
        assert_eq!(human_duration(3_725_000), "1h02m");
    }
}
