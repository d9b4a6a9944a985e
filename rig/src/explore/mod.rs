//! `sinkhole explore SCENARIO`: random fault schedules over one scenario,
//! run after run, until a budget of runs or time is spent; what fails is
//! shrunk and kept as a finding, a replayable scenario.
//!
//! The library's scenarios find the bugs someone thought of. Jepsen finds
//! the others by running generated histories under a random nemesis and
//! keeping what its checkers flag; QuickCheck shrinks the failing input to
//! the smallest that still fails. This is both over the rig's pieces: run
//! 1, 2, … draws its job from seed S, S+1, … ([`shape`]: parallelism,
//! concurrent checkpoints, interval, rate, records, timeout, protocol within the
//! scenario's `shape:` bounds, swarm testing), then its faults over that job
//! ([`draw`]: every kind the scenario's cluster can host, at times and at
//! checkpoint phases), runs the scenario's cluster and modes with them, and
//! judges each mode by the scenario's expectation. A mode that fails its expectation is a finding:
//! the fault list is shrunk by `sinkhole shrink`'s search (a few runs), saved
//! as `found/NN-<anomaly>.yaml` with its seed, and told apart from the
//! findings before it by its signature ([`findings`]). Each mode's history says which protocol
//! states the run put it in ([`states`]); while some state the scenario can host was never
//! reached, about half the runs are aimed at one ([`aim`]). An inconclusive mode
//! is the rig's own distortion (a fault that did not take effect, a late
//! fault, an unmet premise), never a finding: those are counted apart.
//!
//! The scenario's own `faults:` are not kept: the schedule is what is
//! explored, and a scenario's hand-written faults are already covered by
//! running it. Its `schedule:` block, if any, lends its window, quiet periods
//! and durations (its mix becomes `all`).
//!
//! A new finding is then replayed ([`replay`]): its saved file run again with
//! its seed `--replay` times, and the tries that fail the same way counted
//! with it — a finding that does not come back is a fluke until shown otherwise.
//!
//! The runs, the shrinks' tries and the replays share one cluster while it
//! stays healthy ([`crate::run::reuse`], as the matrix's cells do): starting
//! Kafka is a fixed cost of every run that no schedule needs. Every run of a
//! campaign has the same cluster spec for that — the proxy in the path
//! whenever the scenario lets network faults be drawn, whether or not this
//! run's draw has one — and the kept cluster is torn down when the campaign
//! ends, however it ends (a signal kills it with every process of the rig).
//!
//! Written into `<results>/explore-<timestamp>/`: `runs/` (every run's
//! directory, and the shrinks' and replays' runs under each failing one),
//! `schedules/` (the scenario of each run, as it ran), `found/`, `explore.log`
//! (the runs' own progress lines and the campaign's, time-stamped: [`log`]),
//! `explore.json` ([`report`]) and `explore.html` ([`html`]).
pub mod aim;
pub mod draw;
pub mod findings;
pub mod html;
pub mod log;
pub mod merge;
pub mod replay;
pub mod report;
pub mod shape;
pub mod states;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};
use sinkhole_checker::verdict::Outcome;
use sinkhole_model::SinkMode;
use sinkhole_scenario::{FaultSpec, Scenario, Shape};

use crate::results::summary::{ModeSummary, Summary};
use crate::run::{self, RunArgs, RunError, Warm};
use crate::shrink::{self, ShrinkArgs};
use findings::{Finding, Findings, Signature};
pub use report::{Explored, RunRow, Stop};

/// `found/` under the campaign's directory.
pub const FOUND_DIR: &str = "found";
pub const JSON_FILE: &str = "explore.json";

/// The command line of `sinkhole explore`.
#[derive(Debug, Clone)]
pub struct ExploreArgs {
    pub scenario: PathBuf,
    /// At most this many runs.
    pub runs: u32,
    /// At most this long, shrinking included (a run under way is finished).
    pub time: Duration,
    /// The first run's seed (default: random, printed).
    pub seed: Option<u64>,
    /// Where `explore-<timestamp>/` is made.
    pub results: PathBuf,
    /// Only these modes (mutants allowed when the scenario runs their base).
    pub modes: Vec<String>,
    /// At most this many shrink runs per finding (0: keep the failing run's faults as they were).
    pub shrink_runs: u32,
    /// Stop as soon as every mutant judged has a finding (without a mutant, every mode): a
    /// detection measurement, how long until each mutant is found.
    pub until_found: bool,
    /// `--keep-data`: the runs (and the shrinks' and replays' tries) keep their brokers' log
    /// segments ([`RunArgs::drop_data`]), and the kept cluster each run's topics.
    pub keep_data: bool,
    /// Replays of each new finding (its saved file with its seed; 0: none), counted in its
    /// `replay`. Under `--until-found` they wait until the search has stopped, so the
    /// detection times are the search's own.
    pub replay: u32,
    /// One host's share of a campaign across hosts: shard I of N makes the runs with seeds
    /// S+I-1, S+I-1+N, S+I-1+2N, … (`--seed` required), so N hosts with the same arguments
    /// never draw the same schedule, and `sinkhole merge` joins their directories ([`merge`]).
    pub shard: Option<crate::matrix::shard::Shard>,
}

impl ExploreArgs {
    /// The seed of run `i` (0-based).
    pub fn seed_of(&self, first: u64, i: u32) -> u64 {
        match self.shard {
            Some(s) => first.wrapping_add(u64::from(s.index - 1)).wrapping_add(u64::from(i) * u64::from(s.count)),
            None => first.wrapping_add(u64::from(i)),
        }
    }
}

/// The campaign's input, checked: the scenario and the modes to judge.
#[derive(Debug, Clone)]
pub struct Checked {
    pub scenario: Scenario,
    pub modes: Vec<SinkMode>,
}

/// Refuses what cannot make a campaign (exit 2): no runs, no time, a
/// scenario that does not load, a mode it does not run, a mode without an
/// expectation (nothing could fail: every run would only be observed).
/// Without `--mode`, the scenario's modes that have an expectation.
pub fn check(args: &ExploreArgs) -> Result<Checked, String> {
    if args.runs == 0 {
        return Err("--runs 0: an exploration needs at least one run".into());
    }
    if args.time.is_zero() {
        return Err("--time 0: an exploration needs time to run in (e.g. --time 30m)".into());
    }
    if let (Some(s), None) = (args.shard, args.seed) {
        return Err(format!(
            "--shard {s} needs --seed: the shards of one campaign split the seeds from one first seed, \
             the same on every host"
        ));
    }
    let s = sinkhole_scenario::load(&args.scenario).map_err(|e| e.render())?;
    check_scenario(s, &args.modes, &args.scenario)
}

/// [`check`] past loading: the modes and their expectations.
pub fn check_scenario(s: Scenario, names: &[String], file: &Path) -> Result<Checked, String> {
    let mut modes = Vec::new();
    for name in names {
        let m = SinkMode::parse(name).ok_or_else(|| run::unknown_mode("--mode", name))?;
        let runs_it = s.modes.contains(&m) || m.mutant().is_some_and(|x| s.modes.contains(&x.base()));
        if !runs_it {
            return Err(format!(
                "--mode {name}: {} does not run it (its modes: {}; a mutant needs its base mode among them)",
                file.display(),
                s.modes.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
            ));
        }
        if !modes.contains(&m) {
            modes.push(m);
        }
    }
    let expected = |m: &SinkMode| {
        let m = m.mutant().map(|x| x.base()).unwrap_or(*m);
        s.expect.contains_key(&m) || s.expect_by.iter().any(|e| e.expect.contains_key(&m))
    };
    if modes.is_empty() {
        // Every mode that can fail; the ones only observed are left out.
        modes = s.modes.iter().copied().filter(expected).collect();
        if modes.is_empty() {
            return Err(format!(
                "{}: none of its modes ({}) has an expectation (expect:): a mode without one is only observed, \
                 so no run can fail",
                file.display(),
                s.modes.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let without: Vec<&str> = modes.iter().filter(|m| !expected(m)).map(|m| m.name()).collect();
    if !without.is_empty() {
        return Err(format!(
            "{}: no expectation for {} (expect:): a mode without one is only observed, so no run of it can fail; \
             give it one or leave it out of --mode",
            file.display(),
            without.join(", ")
        ));
    }
    Ok(Checked { scenario: s, modes })
}

fn say(line: &str) {
    eprintln!("explore: {line}");
}

/// `sinkhole explore`: the campaign; returns what `explore.json` holds
/// (written, and the table printed on stdout).
pub async fn explore(args: ExploreArgs) -> Result<Explored, RunError> {
    let checked = check(&args).map_err(|e| RunError::BadInput(anyhow!(e)))?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let dir = args.results.join(format!("explore-{}", run::timestamp(now)));
    for sub in ["runs", "schedules", FOUND_DIR] {
        std::fs::create_dir_all(dir.join(sub)).with_context(|| format!("creating {}", dir.join(sub).display()))?;
    }
    let first_seed = args.seed.unwrap_or_else(rand::random);
    let mut c = Campaign::new(args, checked, dir, first_seed);
    let shard = c.args.shard.map(|s| format!("shard {s}, ")).unwrap_or_default();
    c.say(&format!(
        "{} ({}), modes {}: at most {} run(s) in {}, {shard}seeds {}, {}, …; results in {}",
        c.checked.scenario.name,
        c.args.scenario.display(),
        c.checked.modes.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
        c.args.runs,
        crate::matrix::human_duration(c.args.time.as_millis() as u64),
        c.args.seed_of(first_seed, 0),
        c.args.seed_of(first_seed, 1),
        c.dir.display()
    ));
    say(&format!("each run's job drawn within: {}", c.checked.scenario.shape_bounds().text()));
    c.quiet_runs();
    let mut result = c.all_runs().await;
    if result.is_ok() {
        result = c.deferred_shrinks().await;
    }
    if result.is_ok() {
        result = c.deferred_replays().await;
    }
    if let Some(w) = c.kept.take() {
        // Nothing outlives the campaign: its end, a rig error or a bad input alike.
        w.teardown().await;
    }
    run::set_progress_sink(None);
    result?;
    let explored = c.finish()?;
    print!("{}", report::render(&explored));
    Ok(explored)
}

/// The campaign's state between runs.
struct Campaign {
    args: ExploreArgs,
    checked: Checked,
    dir: PathBuf,
    first_seed: u64,
    t0: Instant,
    rss_start: Option<u64>,
    rows: Vec<RunRow>,
    findings: Findings,
    /// Unshrunk signatures already kept (as the run showed them): a run that
    /// shows one again is the same finding, not worth a shrink.
    raw: Vec<(Signature, usize)>,
    coverage: findings::Coverage,
    states: states::StateCoverage,
    aims: aim::Aims,
    stop: Stop,
    /// The cluster the last run left healthy, for the next run, shrink try or replay.
    kept: Option<Warm>,
    /// New findings whose replays wait for the search to stop (`--until-found`), with the
    /// directory of the run that showed them.
    pending_replays: Vec<(usize, PathBuf)>,
    /// The shrinks `--until-found` holds back until the search stops: the finding as its run
    /// showed it, to be shrunk then.
    pending_shrinks: Vec<Pending>,
    /// `explore.log`.
    log: log::Log,
}

impl Campaign {
    fn new(args: ExploreArgs, checked: Checked, dir: PathBuf, first_seed: u64) -> Campaign {
        let aims = aim::Aims::new(&checked.scenario, &checked.modes);
        Campaign {
            args,
            checked,
            first_seed,
            t0: Instant::now(),
            rss_start: sinkhole_base::memory::rss_bytes(),
            rows: Vec::new(),
            findings: Findings::default(),
            raw: Vec::new(),
            coverage: findings::Coverage::default(),
            states: states::StateCoverage::default(),
            aims,
            stop: Stop::Runs,
            kept: None,
            pending_replays: Vec::new(),
            pending_shrinks: Vec::new(),
            log: log::Log::open(&dir.join("explore.log")),
            dir,
        }
    }

    /// The runs' own progress lines go to explore.log (a shrink sets its own sink and clears it).
    fn quiet_runs(&self) {
        run::set_progress_sink(Some(self.log.sink()));
    }

    /// A line of the campaign's own: on stderr, and in explore.log among the runs' lines.
    fn say(&self, line: &str) {
        say(line);
        self.log.line(&format!("explore: {line}"));
    }

    fn remaining(&self) -> Duration {
        self.args.time.saturating_sub(self.t0.elapsed())
    }

    async fn all_runs(&mut self) -> Result<(), RunError> {
        for i in 0..self.args.runs {
            if self.remaining().is_zero() {
                self.stop = Stop::Time;
                self.say(&format!("the time budget is spent after {i} of {} runs", self.args.runs));
                break;
            }
            self.one_run(i).await?;
            if self.args.until_found && self.all_found() {
                self.stop = Stop::Found;
                self.say(&format!("every mutant judged has a finding after {} run(s) (--until-found)", i + 1));
                break;
            }
        }
        Ok(())
    }

    /// `--until-found`'s test: every mutant judged has a finding (the faithful modes judged
    /// beside them are their reference, which should never have one); without a mutant, every
    /// mode.
    fn all_found(&self) -> bool {
        // `detection` has a row per judged mode, in their order.
        let judged: Vec<(&SinkMode, report::Detection)> = self.checked.modes.iter().zip(self.detection()).collect();
        let any_mutant = judged.iter().any(|(m, _)| m.mutant().is_some());
        judged.iter().filter(|(m, _)| !any_mutant || m.mutant().is_some()).all(|(_, d)| d.first.is_some())
    }

    /// Each mode judged, and its first finding.
    fn detection(&self) -> Vec<report::Detection> {
        report::detection(&self.checked.modes, &self.findings.list, self.rows.len() as u32)
    }

    /// Run `i`: draw, write, run, judge each mode, keep the findings.
    async fn one_run(&mut self, i: u32) -> Result<(), RunError> {
        let seed = self.args.seed_of(self.first_seed, i);
        let (mut run, aim) = self.aims.run_of(&self.checked.scenario, seed, &self.states.reached());
        // One cluster spec for every run, so one cluster serves them all: the proxy in the
        // path whenever the draw may hold a network or protocol fault, as `sinkhole run` of
        // the scenario's own schedule would have it.
        run.scenario.cluster.proxy = Some(self.checked.scenario.cluster.proxy != Some(false));
        let (drawn, s) = (&run.drawn, &run.scenario);
        let file = self.dir.join("schedules").join(format!("run-{:03}.yaml", i + 1));
        let mut header = vec![
            format!(
                "exploration run {} of {}, seed {seed}: job {}, {} drawn faults",
                i + 1,
                self.args.runs,
                run.shape.text(),
                drawn.faults.len()
            ),
            format!("replay: sinkhole run {} --seed {seed}", file.display()),
        ];
        header.extend(aim.as_ref().map(|a| format!("aimed at {} (checkpoint {})", a.state, a.checkpoint)));
        std::fs::write(&file, shrink::scenario_yaml(s, &header)?)
            .with_context(|| format!("writing {}", file.display()))?;
        let rargs = RunArgs {
            file,
            modes: self.checked.modes.iter().map(|m| m.name().to_string()).collect(),
            seed: Some(seed),
            results: self.dir.join("runs"),
            drop_data: !self.args.keep_data,
            ..RunArgs::default()
        };
        let mut row = RunRow::new(i + 1, seed, drawn).aimed(aim.as_ref());
        row.shape = run.shape.text();
        match run::run_keeping(&rargs, &mut self.kept).await {
            Ok(sum) => {
                row.cluster_reused_from = sum.cluster_reused_from.clone();
                row.cluster_fresh_because = sum.cluster_fresh_because.clone();
                // When the run ended: each of its findings' detection time (shrinks not counted).
                let ended_ms = self.t0.elapsed().as_millis() as u64;
                self.judge(&mut row, &sum, &drawn.faults, ended_ms).await?
            }
            // The first run's bad input is the campaign's; a later one is this schedule's.
            Err(RunError::BadInput(e)) if i == 0 => return Err(RunError::BadInput(e)),
            Err(RunError::BadInput(e) | RunError::Failed(e)) => row.error = Some(format!("{e:#}")),
        }
        self.coverage.add(&drawn.faults, !row.findings.is_empty());
        self.states.add(&row.reached_by_mode(), row.aimed_at);
        // The run's memory is free now: handed back, what stays resident is what the campaign holds.
        sinkhole_base::memory::release_freed();
        row.rss_bytes = sinkhole_base::memory::rss_bytes();
        row.heap_bytes = sinkhole_base::memory::heap_in_use_bytes();
        self.say(&self.progress_line(&row));
        self.rows.push(row);
        self.write(Stop::Running)?;
        Ok(())
    }

    /// Each mode of a finished run: a pass, an inconclusive, a rig error or a finding.
    async fn judge(
        &mut self,
        row: &mut RunRow,
        sum: &Summary,
        faults: &[FaultSpec],
        ended_ms: u64,
    ) -> Result<(), RunError> {
        row.run_id = Some(sum.run_id.clone());
        row.dir = Some(sum.dir.clone());
        let timeout_ms = sinkhole_scenario::Timing::of(&self.checked.scenario).transaction_timeout_ms();
        for m in &sum.modes {
            let states = states::of_mode(&sum.dir, m.mode, timeout_ms).unwrap_or_else(|e| {
                say(&format!("run {}: the states {} reached are not known: {e}", row.i, m.mode));
                Vec::new()
            });
            row.modes.push(report::ModeRow {
                mode: m.mode.name().to_string(),
                outcome: m.outcome,
                words: m.words(),
                states,
            });
            if m.outcome == Outcome::Fail {
                let n = self.finding(sum, m, faults, ended_ms).await?;
                row.findings.push(n);
            }
        }
        Ok(())
    }

    /// A failing mode: the finding it is (its number), new or seen before.
    async fn finding(
        &mut self,
        sum: &Summary,
        m: &ModeSummary,
        faults: &[FaultSpec],
        found_at_ms: u64,
    ) -> Result<usize, RunError> {
        let kinds = shrink::failure_kinds(m);
        let anomaly = kinds.first().cloned().unwrap_or_else(|| replay::UNMET.to_string());
        let mode = m.mode.name();
        let raw = Signature::of(mode, &anomaly, faults);
        if let Some((sig, n)) = self.raw.iter().find(|(s, _)| *s == raw) {
            let (sig, n) = (sig.clone(), *n);
            // Kept under its shrunk signature: the run is added to that finding.
            let shrunk = self.findings.list.iter().find(|f| f.n == n).map(|f| f.signature.clone());
            self.findings.seen(&shrunk.unwrap_or(sig), &sum.run_id);
            return Ok(n);
        }
        // Under `--until-found` the search measures how long each mode takes to be found: a
        // shrink (minutes of tries) would delay every run after it, so it waits for the search
        // to stop, as the replays do.
        let deferred = self.args.until_found && self.stop == Stop::Runs;
        let shrunk = if deferred {
            Err(DEFERRED.to_string())
        } else {
            let found = self.findings.list.clone();
            self.shrink(sum, m, &kinds, &found).await
        };
        self.quiet_runs();
        let (minimal, job, shrink_runs, shrink_stop, not_shrunk) = match shrunk {
            Ok((faults, job, runs, stop)) => (faults, job, runs, Some(stop), None),
            Err(why) => (faults.to_vec(), None, 0, None, Some(why)),
        };
        let sig = Signature::of(mode, &anomaly, &minimal);
        if !self.findings.seen(&sig, &sum.run_id) {
            let n = self.findings.get_mut(&sig).map(|f| f.n).unwrap_or(0);
            self.raw.push((raw, n));
            return Ok(n);
        }
        let n = self.findings.next_number();
        let path = self.dir.join(FOUND_DIR).join(findings::file_name(n, &anomaly));
        let job = self.save(sum, m, &minimal, job, &sig, &path)?;
        self.findings.push(Finding {
            n,
            run: self.rows.len() as u32 + 1,
            at_ms: found_at_ms,
            signature: sig,
            seed: sum.seed,
            run_id: sum.run_id.clone(),
            path,
            words: m.words(),
            faults_before: faults.len(),
            faults_after: minimal.len(),
            job,
            shrink_runs,
            shrink_stop,
            not_shrunk,
            runs: vec![sum.run_id.clone()],
            replay: None,
        });
        self.raw.push((raw, n));
        if deferred {
            self.pending_shrinks.push(Pending { n, sum: sum.clone(), m: m.clone(), kinds, anomaly });
        }
        if self.args.replay > 0 {
            if self.args.until_found {
                self.pending_replays.push((n, sum.dir.clone()));
            } else {
                self.replay(n, &sum.dir).await?;
            }
        }
        Ok(n)
    }

    /// Finding `n`'s saved file run `--replay` times with its seed, on the kept cluster (the
    /// runs under the failing run's `replay/`), and the count kept with the finding.
    async fn replay(&mut self, n: usize, run_dir: &Path) -> Result<(), RunError> {
        let Some(f) = self.findings.list.iter().find(|f| f.n == n) else { return Ok(()) };
        let Some(mode) = SinkMode::parse(&f.signature.mode) else { return Ok(()) };
        let spec = replay::Spec {
            file: f.path.clone(),
            seed: f.seed,
            mode,
            anomaly: f.signature.anomaly.clone(),
            tries: self.args.replay,
            results: run_dir.join("replay"),
            drop_data: !self.args.keep_data,
            deadline: self.t0.checked_add(self.args.time),
        };
        let (t0, log) = (self.t0, self.log.clone());
        let mut each = |t: &replay::Try| {
            let line = format!("finding {n:02}: replay {}", replay::try_line(t, spec.tries, t0.elapsed()));
            say(&line);
            log.line(&format!("explore: {line}"));
        };
        let r = match replay::tries(&spec, &mut self.kept, &mut each).await {
            Ok((tries, cut)) => replay::Replay::of(&tries, spec.tries, cut),
            // The saved file is the rig's own writing: one that does not run is said, not fatal.
            Err(RunError::BadInput(e) | RunError::Failed(e)) => {
                replay::Replay { cut: Some(format!("the saved file did not run: {e:#}")), ..replay::Replay::default() }
            }
        };
        self.say(&format!("finding {n:02}: {}", r.words()));
        if let Some(f) = self.findings.list.iter_mut().find(|f| f.n == n) {
            f.replay = Some(r);
        }
        self.write(Stop::Running)?;
        Ok(())
    }

    /// The shrinks `--until-found` held back until the search stopped: each finding shrunk now,
    /// its file saved again with what the shrink kept, its signature that of the shrunk faults.
    async fn deferred_shrinks(&mut self) -> Result<(), RunError> {
        for p in std::mem::take(&mut self.pending_shrinks) {
            // The findings before it: a mode's later findings are the ones left unshrunk.
            let others: Vec<Finding> = self.findings.list.iter().filter(|f| f.n < p.n).cloned().collect();
            let shrunk = self.shrink(&p.sum, &p.m, &p.kinds, &others).await;
            self.quiet_runs();
            let Some(path) = self.findings.list.iter().find(|f| f.n == p.n).map(|f| f.path.clone()) else { continue };
            match shrunk {
                Ok((faults, job, runs, stop)) => {
                    let sig = Signature::of(p.m.mode.name(), &p.anomaly, &faults);
                    let job = self.save(&p.sum, &p.m, &faults, job, &sig, &path)?;
                    if let Some(f) = self.findings.list.iter_mut().find(|f| f.n == p.n) {
                        (f.signature, f.faults_after, f.job) = (sig, faults.len(), job);
                        (f.shrink_runs, f.shrink_stop, f.not_shrunk) = (runs, Some(stop), None);
                    }
                }
                Err(why) => {
                    if let Some(f) = self.findings.list.iter_mut().find(|f| f.n == p.n) {
                        f.not_shrunk = Some(why);
                    }
                }
            }
            self.write(Stop::Running)?;
        }
        Ok(())
    }

    /// The replays `--until-found` held back until the search stopped.
    async fn deferred_replays(&mut self) -> Result<(), RunError> {
        for (n, dir) in std::mem::take(&mut self.pending_replays) {
            self.replay(n, &dir).await?;
        }
        Ok(())
    }

    /// The failing mode's faults (and job) shrunk by `sinkhole shrink` within the
    /// budget left; `Err` says why the run's own faults are kept.
    async fn shrink(
        &mut self,
        sum: &Summary,
        m: &ModeSummary,
        kinds: &[String],
        found: &[Finding],
    ) -> Result<(Vec<FaultSpec>, Option<Shape>, u32, String), String> {
        let mode = m.mode.name();
        if let Some(why) = why_not_shrunk(&self.args, mode, &m.reason, kinds, found, self.remaining()) {
            return Err(why);
        }
        let args = ShrinkArgs {
            run_dir: sum.dir.clone(),
            mode: Some(mode.to_string()),
            max_runs: self.args.shrink_runs,
            max_time: self.remaining(),
            drop_data: !self.args.keep_data,
            toward: Some(shape::toward(&self.checked.scenario)),
        };
        let r = shrink::shrink_on(args, &mut self.kept).await.map_err(|e| match e {
            RunError::BadInput(e) | RunError::Failed(e) => format!("the shrink failed: {e:#}"),
        })?;
        let s = sinkhole_scenario::load(&r.minimal).map_err(|e| e.render())?;
        Ok((s.faults.clone(), Some(Shape::of(&s)), r.runs, format!("{:?}", r.stop).to_lowercase()))
    }

    /// `found/NN-<anomaly>.yaml`: the run's resolved scenario with only the
    /// failing mode, `faults` and the shrunk `job` (else the run's), and how to replay it;
    /// returns the job it saved, compactly.
    fn save(
        &self,
        sum: &Summary,
        m: &ModeSummary,
        faults: &[FaultSpec],
        job: Option<Shape>,
        sig: &Signature,
        path: &Path,
    ) -> anyhow::Result<String> {
        let file = sinkhole_base::rundir::RunDir::at(&sum.dir).scenario();
        let resolved = sinkhole_scenario::load(&file).map_err(|e| anyhow!(e.render()))?;
        let mut s = shrink::candidate_scenario(&resolved, m.mode, faults);
        if let Some(job) = job {
            s = job.apply(&s);
        }
        let header = vec![
            format!(
                "found by `sinkhole explore` over {} in run {} (Kafka {}): {} {}",
                self.args.scenario.display(),
                sum.run_id,
                sum.kafka,
                m.mode,
                m.words()
            ),
            format!("signature: {}", sig.text()),
            format!("job: {} (the run's: {})", Shape::of(&s).text(), Shape::of(&resolved).text()),
            format!("replay: sinkhole run {} --seed {}", path.display(), sum.seed),
            format!("seed: {}", sum.seed),
        ];
        std::fs::write(path, shrink::scenario_yaml(&s, &header)?)
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(Shape::of(&s).text())
    }

    fn progress_line(&self, row: &RunRow) -> String {
        let verdicts = if let Some(e) = &row.error {
            format!("rig error: {}", e.chars().take(160).collect::<String>())
        } else {
            row.modes.iter().map(|m| format!("{} {}", m.mode, m.words)).collect::<Vec<_>>().join("; ")
        };
        format!(
            "run {}/{} [{}] seed {} job {}: {} fault(s) → {}{}; findings so far {}, inconclusive {}{}{}",
            row.i,
            self.args.runs,
            crate::matrix::human_duration(self.t0.elapsed().as_millis() as u64),
            row.seed,
            row.shape,
            row.faults,
            verdicts,
            row.aim_words(),
            self.findings.list.len(),
            self.rows.iter().chain([row]).map(RunRow::inconclusive).sum::<usize>(),
            match (&row.cluster_reused_from, &row.cluster_fresh_because) {
                (Some(_), _) => "; cluster reused".to_string(),
                (None, Some(why)) => format!("; a fresh cluster: {why}"),
                (None, None) => String::new(),
            },
            match (row.rss_bytes, row.heap_bytes) {
                (Some(r), Some(h)) => format!("; {} MB resident, {} MB in use", report::mb(r), report::mb(h)),
                (Some(r), None) => format!("; {} MB resident", report::mb(r)),
                _ => String::new(),
            }
        )
    }

    /// What `explore.json` holds now.
    fn snapshot(&self, stop: Stop) -> Explored {
        Explored {
            scenario: self.checked.scenario.name.clone(),
            source: self.args.scenario.clone(),
            dir: self.dir.clone(),
            modes: self.checked.modes.iter().map(|m| m.name().to_string()).collect(),
            first_seed: self.first_seed,
            shard: self.args.shard,
            merged_from: Vec::new(),
            runs_budget: self.args.runs,
            time_budget_ms: self.args.time.as_millis() as u64,
            shrink_runs: self.args.shrink_runs,
            rss_start_bytes: self.rss_start,
            stop,
            wall_ms: self.t0.elapsed().as_millis() as u64,
            runs_done: self.rows.len() as u32,
            inconclusive: self.rows.iter().map(RunRow::inconclusive).sum(),
            rig_errors: self.rows.iter().map(RunRow::errors).sum(),
            findings: self.findings.list.clone(),
            detection: self.detection(),
            coverage: self.coverage.cells(),
            coverage_text: self.coverage.render(),
            states: self.states.cells(),
            runs: self.rows.clone(),
        }
    }

    /// Writes `explore.json` and `explore.html` (after every run, so a campaign stopped by a
    /// signal overnight still says what it found, with `stop: running`).
    fn write(&self, stop: Stop) -> Result<Explored, RunError> {
        let e = self.snapshot(stop);
        write_files(&e)?;
        Ok(e)
    }

    /// `explore.json`, written with why the campaign stopped.
    fn finish(self) -> Result<Explored, RunError> {
        self.write(self.stop)
    }
}

/// Writes `e.dir`'s `explore.json` (through a rename: a reader never sees half of it) and
/// `explore.html`: after every run of a campaign, and for a merge of shards.
pub fn write_files(e: &Explored) -> anyhow::Result<()> {
    std::fs::create_dir_all(&e.dir).with_context(|| format!("creating {}", e.dir.display()))?;
    let json = e.dir.join(JSON_FILE);
    crate::matrix::write_atomic(&json, &sinkhole_base::provenance::to_json(e)?)
        .with_context(|| format!("writing {}", json.display()))?;
    let page = e.dir.join(html::HTML_FILE);
    std::fs::write(&page, html::render_html(e)).with_context(|| format!("writing {}", page.display()))
}

/// What a finding says while its shrink waits for `--until-found`'s search to stop.
const DEFERRED: &str = "--until-found: shrunk once the search stops";

/// A finding whose shrink waits for the search to stop.
struct Pending {
    n: usize,
    sum: Summary,
    m: ModeSummary,
    kinds: Vec<String>,
    anomaly: String,
}

/// Why a new finding keeps its run's faults instead of being shrunk, if it does: shrinking
/// is off, there is nothing to shrink for, the budget is spent, or — under `--until-found`,
/// which measures how long each mode takes to be found — its mode was found already, and the
/// time goes to the modes not found yet.
pub(crate) fn why_not_shrunk(
    args: &ExploreArgs,
    mode: &str,
    reason: &str,
    kinds: &[String],
    found: &[Finding],
    remaining: Duration,
) -> Option<String> {
    if args.shrink_runs == 0 {
        return Some("--shrink-runs 0".into());
    }
    if kinds.is_empty() {
        return Some(format!("no anomaly or job failure to shrink for ({reason})"));
    }
    if remaining.is_zero() {
        return Some("the time budget was spent".into());
    }
    if args.until_found && found.iter().any(|f| f.signature.mode == mode) {
        return Some(format!("--until-found: {mode} was found before; the time goes to the modes not found yet"));
    }
    None
}

#[cfg(test)]
mod tests;
