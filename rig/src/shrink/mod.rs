//! `sinkhole shrink RUN_DIR`: a smaller schedule that fails the same way.
//!
//! A failing run of a random schedule usually carries faults that had
//! nothing to do with the failure. Like Jepsen's and QuickCheck's shrinking,
//! this searches ([`search`]) for a smaller fault list — one fault dropped,
//! a duration halved, a trigger moved earlier — that still makes the same
//! mode fail with the same anomaly kind (`lost`, `dup`, …, or the job's
//! failure), one real run per candidate with the run's own seed (the proxy's
//! random draws replay). The search is bounded by runs and by time and
//! prints a line per run; the smallest list found is saved as a scenario
//! (`<RUN_DIR>/shrink/minimal.yaml`, replayable with `sinkhole run … --seed`)
//! with `shrink.json` beside it. An exploration's shrink also moves the run's
//! drawn job toward the scenario's own, field by field, while the failure stays
//! ([`ShrinkArgs::toward`]); a run's directory alone does not say what the
//! scenario's own job was, so `sinkhole shrink` leaves the job as it ran.
pub mod search;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use serde::Serialize;
use sinkhole_base::rundir::RunDir;
use sinkhole_model::SinkMode;

use crate::results::summary::{ModeSummary, Summary};
use crate::run::{self, RunArgs, RunError};
pub use search::{candidates, run_search, shrink_with, Candidate, Search, Stop, Toward};
use sinkhole_checker::verdict::words::RIG_ERROR;
use sinkhole_checker::verdict::Outcome;
use sinkhole_scenario::{FaultSpec, Scenario, Shape};

pub const DIR: &str = "shrink";
pub const YAML_FILE: &str = "minimal.yaml";
pub const JSON_FILE: &str = "shrink.json";

/// The command line of `sinkhole shrink`.
#[derive(Debug, Clone)]
pub struct ShrinkArgs {
    pub run_dir: PathBuf,
    /// The failing mode to shrink for (default: the run's first failing mode).
    pub mode: Option<String>,
    pub max_runs: u32,
    pub max_time: Duration,
    /// The tries drop their brokers' log segments at teardown ([`RunArgs::drop_data`]).
    pub drop_data: bool,
    /// Where the run's job moves (an exploration's: the scenario's own within its bounds);
    /// None: the job stays as it ran.
    pub toward: Option<Toward>,
}

/// The kinds of failure a mode's verdict shows: its anomalies (`lost`,
/// `dup`, …, the names of the matrix's cells) and `job-failed`.
pub fn failure_kinds(m: &ModeSummary) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if m.checked {
        for (k, n) in crate::matrix::anomaly_counts(&m.counts) {
            if n > 0 {
                out.push(k.to_string());
            }
        }
    }
    if m.reason.starts_with("the job failed") {
        out.push("job-failed".to_string());
    }
    out
}

/// The failure a candidate must reproduce: the mode fails and shows the
/// original's first failure kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    pub mode: SinkMode,
    /// The first of the original's failure kinds.
    pub kind: String,
    /// The original's anomalies, for the record (`lost=1006 dup=3`).
    pub original: String,
}

impl Target {
    pub fn of(m: &ModeSummary) -> Result<Target, String> {
        if m.outcome != Outcome::Fail {
            return Err(format!("{} did not fail in this run ({}): nothing to shrink", m.mode, m.words()));
        }
        let kinds = failure_kinds(m);
        let Some(kind) = kinds.first().cloned() else {
            return Err(format!("{} failed without an anomaly or a job failure: {}", m.mode, m.reason));
        };
        Ok(Target { mode: m.mode, kind, original: detail(m) })
    }

    /// Whether a candidate's row fails the same way.
    pub fn same(&self, m: &ModeSummary) -> bool {
        m.mode == self.mode && m.outcome == Outcome::Fail && failure_kinds(m).contains(&self.kind)
    }
}

fn detail(m: &ModeSummary) -> String {
    let a = if m.checked { crate::matrix::anomalies(&m.counts) } else { String::new() };
    if a.is_empty() {
        m.reason.chars().take(120).collect()
    } else {
        a
    }
}

/// The scenario of a candidate: the run's resolved scenario with only the
/// target mode and the candidate's faults, and its job when it moves one.
pub fn candidate_of(base: &Scenario, mode: SinkMode, c: &Candidate) -> Scenario {
    let s = candidate_scenario(base, mode, &c.faults);
    match &c.shape {
        Some(shape) => shape.apply(&s),
        None => s,
    }
}

/// The scenario of a candidate: the run's resolved scenario with only the
/// target mode and the candidate's faults.
pub fn candidate_scenario(base: &Scenario, mode: SinkMode, faults: &[FaultSpec]) -> Scenario {
    let mut s = base.clone();
    s.modes = vec![mode];
    s.expect.retain(|m, _| *m == mode);
    s.premise.retain(|m, _| *m == mode);
    s.faults = faults.to_vec();
    s.schedule = None;
    s
}

/// A scenario file's text, with a header of comments.
pub fn scenario_yaml(s: &Scenario, header: &[String]) -> anyhow::Result<String> {
    let yaml = serde_saphyr::to_string(s).context("rendering the scenario")?;
    let mut out = String::new();
    for h in header {
        out.push_str("# ");
        out.push_str(h);
        out.push('\n');
    }
    out.push_str(&yaml);
    Ok(out)
}

/// One candidate run.
#[derive(Debug, Clone, Serialize)]
pub struct Try {
    pub step: String,
    pub faults: usize,
    pub outcome: Outcome,
    /// The verdict in words (`LOST 3 — expected clean`).
    pub words: String,
    pub detail: String,
    pub same: bool,
    #[serde(default)]
    pub dir: Option<PathBuf>,
}

/// `shrink.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Shrunk {
    pub run_dir: PathBuf,
    pub run_id: String,
    pub scenario: String,
    pub kafka: String,
    pub seed: u64,
    pub target: Target,
    pub faults_before: usize,
    pub faults_after: usize,
    /// The job as the run had it and as the minimal scenario has it (`p2 cc3 ci400 …`), when
    /// the shrink moved the job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_before: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_after: Option<String>,
    /// Candidate runs made.
    pub runs: u32,
    pub stop: Stop,
    /// The steps that were kept, in order.
    pub steps: Vec<String>,
    pub tries: Vec<Try>,
    pub minimal: PathBuf,
    pub wall_ms: u64,
}

fn read_summary(dir: &RunDir) -> Result<Summary, RunError> {
    let path = dir.summary();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| RunError::BadInput(anyhow!("{}: {e} (not a run directory?)", path.display())))?;
    serde_json::from_str(&text).map_err(|e| RunError::BadInput(anyhow!("{}: {e}", path.display())))
}

fn progress(line: &str) {
    eprintln!("shrink: {line}");
}

/// `sinkhole shrink`: [`shrink`], then the minimal scenario on stdout.
pub async fn run(args: ShrinkArgs) -> Result<Shrunk, RunError> {
    let r = shrink(args).await?;
    let yaml = std::fs::read_to_string(&r.minimal).with_context(|| format!("reading {}", r.minimal.display()))?;
    print!("{yaml}");
    Ok(r)
}

/// The search with one run per candidate, its lines on stderr; returns the
/// result (minimal.yaml and shrink.json written). The candidates run on one
/// cluster while it stays healthy ([`run::run_keeping`]), torn down at the end.
pub async fn shrink(args: ShrinkArgs) -> Result<Shrunk, RunError> {
    let mut kept = None;
    let r = shrink_on(args, &mut kept).await;
    if let Some(w) = kept {
        w.teardown().await;
    }
    r
}

/// [`shrink`] on the cluster a campaign keeps (`sinkhole explore` shrinks each new finding
/// with it), the cluster left in `kept` for the campaign's next run.
pub async fn shrink_on(args: ShrinkArgs, kept: &mut Option<run::Warm>) -> Result<Shrunk, RunError> {
    let t0 = Instant::now();
    let run_dir = RunDir::at(&args.run_dir);
    let summary = read_summary(&run_dir)?;
    let row = mode_to_shrink(&args, &summary)?;
    let target = Target::of(row).map_err(|e| RunError::BadInput(anyhow!(e)))?;
    let scenario_file = run_dir.scenario();
    let base = sinkhole_scenario::load(&scenario_file).map_err(|e| RunError::BadInput(anyhow!(e.render())))?;
    let out = args.run_dir.join(DIR);
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let trials = Trials {
        summary: &summary,
        base: &base,
        target: &target,
        out: &out,
        runs_dir: out.join("runs"),
        drop_data: args.drop_data,
    };
    progress(&format!(
        "{} in {} (seed {}): {} faults; target: {} fails with {} (was: {}); at most {} runs, {} s",
        target.mode,
        summary.run_id,
        summary.seed,
        base.faults.len(),
        target.mode,
        target.kind,
        target.original,
        args.max_runs,
        args.max_time.as_secs()
    ));
    // The runs' own lines would drown the search's: they are in each run's directory.
    run::set_progress_sink(Some(Box::new(|_| {})));
    let mut search = match &args.toward {
        Some(t) => Search::with_job(base.faults.clone(), Shape::of(&base), t.clone(), args.max_runs),
        None => Search::new(base.faults.clone(), args.max_runs),
    };
    let mut tries = Vec::new();
    let mut stop = None;
    while let Some(c) = search.next_candidate_where(|c| trials.runs_it(c)) {
        if t0.elapsed() >= args.max_time {
            stop = Some(Stop::Time);
            break;
        }
        let t = trials.run(search.runs + 1, &c, kept).await?;
        let same = t.same;
        search.report(c, same);
        progress(&format!(
            "run {}/{} [{} s] {} → {} — {}{}; smallest so far: {} faults",
            search.runs,
            args.max_runs,
            t0.elapsed().as_secs(),
            t.step,
            t.words,
            t.detail,
            if same { " (same failure: kept)" } else { "" },
            search.current().len()
        ));
        tries.push(t);
    }
    run::set_progress_sink(None);
    let stop = stop.unwrap_or_else(|| search.stop());
    let minimal = out.join(YAML_FILE);
    trials.write_minimal(&search, stop, &minimal)?;
    let result = Shrunk {
        run_dir: args.run_dir.clone(),
        run_id: summary.run_id.clone(),
        scenario: summary.scenario.clone(),
        kafka: summary.kafka.clone(),
        seed: summary.seed,
        target,
        faults_before: base.faults.len(),
        faults_after: search.current().len(),
        job_before: search.shape().map(|_| Shape::of(&base).text()),
        job_after: search.shape().map(Shape::text),
        runs: search.runs,
        stop,
        steps: search.accepted.clone(),
        tries,
        minimal,
        wall_ms: t0.elapsed().as_millis() as u64,
    };
    std::fs::write(out.join(JSON_FILE), sinkhole_base::provenance::to_json(&result)?).context("writing shrink.json")?;
    Ok(result)
}

/// The row of the mode to shrink for: the one `--mode` names, else the run's first failing mode.
fn mode_to_shrink<'a>(args: &ShrinkArgs, summary: &'a Summary) -> Result<&'a ModeSummary, RunError> {
    match &args.mode {
        Some(name) => {
            let m =
                SinkMode::parse(name).ok_or_else(|| RunError::BadInput(anyhow!(run::unknown_mode("--mode", name))))?;
            summary
                .modes
                .iter()
                .find(|r| r.mode == m)
                .ok_or_else(|| RunError::BadInput(anyhow!("{m} did not run in {}", args.run_dir.display())))
        }
        None => summary.modes.iter().find(|r| r.outcome == Outcome::Fail).ok_or_else(|| {
            RunError::BadInput(anyhow!("no mode failed in {}: nothing to shrink", args.run_dir.display()))
        }),
    }
}

/// What every candidate run shares: the failing run, its scenario, the
/// failure to reproduce, and where the candidates and their runs are written.
struct Trials<'a> {
    summary: &'a Summary,
    base: &'a Scenario,
    target: &'a Target,
    out: &'a Path,
    runs_dir: PathBuf,
    drop_data: bool,
}

impl Trials<'_> {
    /// Whether the scenario accepts candidate `c` as a file (a job moved to one subtask cannot
    /// keep a fault on subtask 2): one it refuses is passed over without a run.
    fn runs_it(&self, c: &Candidate) -> bool {
        let s = candidate_of(self.base, self.target.mode, c);
        serde_saphyr::to_string(&s).is_ok_and(|text| sinkhole_scenario::from_str(&text, "candidate.yaml").is_ok())
    }

    /// Candidate `n`: its scenario written as `try-N.yaml` and run with the run's seed, on the
    /// cluster in `kept` when it is fit.
    async fn run(&self, n: u32, c: &Candidate, kept: &mut Option<run::Warm>) -> Result<Try, RunError> {
        let file = self.out.join(format!("try-{n}.yaml"));
        let s = candidate_of(self.base, self.target.mode, c);
        let header = vec![format!("shrink candidate {n} of run {}: {}", self.summary.run_id, c.step)];
        std::fs::write(&file, scenario_yaml(&s, &header)?).with_context(|| format!("writing {}", file.display()))?;
        let rargs = RunArgs {
            file,
            seed: Some(self.summary.seed),
            results: self.runs_dir.clone(),
            drop_data: self.drop_data,
            ..RunArgs::default()
        };
        let tried = |outcome, words, detail, same, dir| Try {
            step: c.step.clone(),
            faults: c.faults.len(),
            outcome,
            words,
            detail,
            same,
            dir,
        };
        Ok(match run::run_keeping(&rargs, kept).await {
            Ok(sum) => match sum.modes.iter().find(|m| m.mode == self.target.mode) {
                Some(m) => tried(m.outcome, m.words(), detail(m), self.target.same(m), Some(sum.dir.clone())),
                None => {
                    tried(Outcome::Error, RIG_ERROR.into(), "the mode did not run".into(), false, Some(sum.dir.clone()))
                }
            },
            // A candidate the rig could not run is no reproduction.
            Err(e) => {
                let detail = match e {
                    RunError::BadInput(e) | RunError::Failed(e) => format!("{e:#}").chars().take(160).collect(),
                };
                tried(Outcome::Error, RIG_ERROR.into(), detail, false, None)
            }
        })
    }

    /// `minimal.yaml`: the smallest fault list found, with how it was found
    /// and how to replay it.
    fn write_minimal(&self, search: &Search, stop: Stop, minimal: &Path) -> Result<(), RunError> {
        let (summary, target) = (self.summary, self.target);
        let mut s = candidate_scenario(self.base, target.mode, search.current());
        if let Some(shape) = search.shape() {
            s = shape.apply(&s);
        }
        let job = match search.shape() {
            Some(shape) => format!("; job {} (ran as {})", shape.text(), Shape::of(self.base).text()),
            None => String::new(),
        };
        let header = vec![
            format!(
                "shrunk by `sinkhole shrink` from run {} ({}, Kafka {}): {} of {} faults after {} runs ({}), still {} with {}{job}",
                summary.run_id,
                summary.scenario,
                summary.kafka,
                search.current().len(),
                self.base.faults.len(),
                search.runs,
                match stop {
                    Stop::Minimal => "no smaller candidate fails the same way",
                    Stop::Runs => "the run budget ran out",
                    Stop::Time => "the time budget ran out",
                },
                target.mode,
                target.kind
            ),
            format!("replay: sinkhole run {} --seed {}", minimal.display(), summary.seed),
            format!("seed: {}", summary.seed),
        ];
        let yaml = scenario_yaml(&s, &header)?;
        std::fs::write(minimal, &yaml).with_context(|| format!("writing {}", minimal.display()))?;
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests;
