//! Replaying a finding: its saved scenario run again with its seed, several times, and the
//! tries counted that fail the same way — `sinkhole explore --replay N` after each new
//! finding, and `sinkhole replay FOUND.yaml` for a person holding one file.
//!
//! A finding is worth keeping only if it comes back. The seed replays what is drawn (the
//! faults, the proxy's choices), but not what the machine does: a fault on a time trigger
//! meets the job wherever its pace has got to, a worker's restart or a broker's recovery
//! takes as long as the load lets it. So a finding is tried again before anyone is asked to
//! believe it, as Jepsen re-runs a test to tell a bug from a fluke, and the count is kept
//! with it. A try reproduces when the finding's mode fails its expectation again with the
//! finding's anomaly kind among its failure kinds ([`shows`], the test `sinkhole shrink`
//! keeps a candidate by); the schedule is the file's own, so the rest of the signature (the
//! fault kinds and triggers) is the same by construction. A finding *replays* when at least
//! [`BAR`] of its tries reproduce it; `sinkhole replay` exits 0 only when every try did.
//!
//! The tries run one after another on one cluster while it stays healthy
//! ([`crate::run::run_keeping`]): in a campaign, the campaign's.
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};
use serde::{Deserialize, Serialize};
use sinkhole_checker::verdict::Outcome;
use sinkhole_model::SinkMode;

use crate::results::summary::ModeSummary;
use crate::run::{self, RunArgs, RunError, Warm};
use crate::shrink::failure_kinds;

/// A finding replays when at least this share of its tries reproduce it: 9 in 10.
pub const BAR: (u32, u32) = (9, 10);

/// The anomaly of a failure that shows none of the failure kinds (an expectation unmet
/// otherwise): a try reproduces it by failing without one too.
pub const UNMET: &str = "unmet";

/// `sinkhole replay`'s own file in its directory.
pub const JSON_FILE: &str = "replay.json";

/// What the replays of one finding showed (`explore.json`'s finding, `replay.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replay {
    /// Tries made.
    pub tries: u32,
    /// Of those, the tries where the mode failed with the finding's anomaly again.
    pub reproduced: u32,
    /// What each of the other tries showed, in words (`try 2: clean (expected)`).
    pub other: Vec<String>,
    /// Why fewer tries were made than asked, when so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<String>,
}

impl Replay {
    /// The count of `tries`; `asked` says whether some were not made (`cut` says why).
    pub fn of(tries: &[Try], asked: u32, cut: Option<String>) -> Replay {
        let made = tries.len() as u32;
        Replay {
            tries: made,
            reproduced: tries.iter().filter(|t| t.same).count() as u32,
            other: tries.iter().filter(|t| !t.same).map(|t| format!("try {}: {}", t.n, t.words)).collect(),
            cut: if made < asked { cut.or_else(|| Some(format!("{made} of {asked} tries made"))) } else { None },
        }
    }

    /// At least [`BAR`] of the tries reproduced it (and there was a try).
    pub fn replays(&self) -> bool {
        self.tries > 0 && self.reproduced * BAR.1 >= self.tries * BAR.0
    }

    /// Every try reproduced it: `sinkhole replay`'s exit 0.
    pub fn every_time(&self) -> bool {
        self.tries > 0 && self.reproduced == self.tries
    }

    /// `replays 9/10`, `does not replay: 4/10`, `not replayed: the time budget was spent`.
    pub fn words(&self) -> String {
        if self.tries == 0 {
            return format!("not replayed: {}", self.cut.as_deref().unwrap_or("no try was made"));
        }
        let cut = self.cut.as_ref().map(|c| format!(" ({c})")).unwrap_or_default();
        if self.replays() {
            format!("replays {}/{}{cut}", self.reproduced, self.tries)
        } else {
            format!("does not replay: {}/{}{cut}", self.reproduced, self.tries)
        }
    }
}

/// Whether `m` fails the way a finding of `mode` with `anomaly` did: the same mode failing
/// its expectation, the anomaly among its failure kinds ([`UNMET`]: with none of them).
pub fn shows(mode: SinkMode, anomaly: &str, m: &ModeSummary) -> bool {
    if m.mode != mode || m.outcome != Outcome::Fail {
        return false;
    }
    let kinds = failure_kinds(m);
    if anomaly == UNMET {
        kinds.is_empty()
    } else {
        kinds.iter().any(|k| k == anomaly)
    }
}

/// One try.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Try {
    /// 1-based.
    pub n: u32,
    pub outcome: Outcome,
    /// The mode's verdict in words, or why the rig could not run it.
    pub words: String,
    /// It failed the same way.
    pub same: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// The run whose cluster it reused, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_reused_from: Option<String>,
}

/// What to replay, how often and where.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The saved scenario (only the finding's mode, its faults).
    pub file: PathBuf,
    pub seed: u64,
    pub mode: SinkMode,
    pub anomaly: String,
    pub tries: u32,
    /// Where the tries' run directories go.
    pub results: PathBuf,
    /// The tries drop their brokers' log segments ([`RunArgs::drop_data`]).
    pub drop_data: bool,
    /// No try starts after this (a campaign's time budget).
    pub deadline: Option<Instant>,
}

/// The tries of `spec`, one after another on the cluster in `kept` while it is fit; `each`
/// hears of every try as it ends. A try the rig could not run counts as not reproduced; the
/// first try's bad input is the file's and ends the replay (exit 2).
pub async fn tries(
    spec: &Spec,
    kept: &mut Option<Warm>,
    each: &mut dyn FnMut(&Try),
) -> Result<(Vec<Try>, Option<String>), RunError> {
    let mut out = Vec::new();
    for n in 1..=spec.tries {
        if spec.deadline.is_some_and(|d| Instant::now() >= d) {
            let cut = format!("the time budget was spent after {} of {} tries", n - 1, spec.tries);
            return Ok((out, Some(cut)));
        }
        let args = RunArgs {
            file: spec.file.clone(),
            seed: Some(spec.seed),
            results: spec.results.clone(),
            drop_data: spec.drop_data,
            ..RunArgs::default()
        };
        let t = match run::run_keeping(&args, kept).await {
            Ok(sum) => {
                let row = sum.modes.iter().find(|m| m.mode == spec.mode);
                Try {
                    n,
                    outcome: row.map(|m| m.outcome).unwrap_or(Outcome::Error),
                    words: row.map(|m| m.words()).unwrap_or_else(|| format!("{} did not run", spec.mode)),
                    same: row.is_some_and(|m| shows(spec.mode, &spec.anomaly, m)),
                    run_id: Some(sum.run_id.clone()),
                    dir: Some(sum.dir.clone()),
                    cluster_reused_from: sum.cluster_reused_from.clone(),
                }
            }
            Err(RunError::BadInput(e)) if n == 1 => return Err(RunError::BadInput(e)),
            Err(RunError::BadInput(e) | RunError::Failed(e)) => Try {
                n,
                outcome: Outcome::Error,
                words: format!("rig error: {}", format!("{e:#}").chars().take(160).collect::<String>()),
                same: false,
                run_id: None,
                dir: None,
                cluster_reused_from: None,
            },
        };
        each(&t);
        out.push(t);
    }
    Ok((out, None))
}

/// What a saved finding's header says: the seed it failed with and its signature's mode
/// and anomaly (`# seed: 8000`, `# signature: legacy: lost × …`, as `sinkhole explore`
/// writes them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub seed: Option<u64>,
    /// The signature's mode and anomaly.
    pub target: Option<(String, String)>,
}

/// Reads the header comments at the top of `text` (from `file`, for errors: `file:line:col`).
pub fn header(text: &str, file: &Path) -> Result<Header, String> {
    let mut h = Header { seed: None, target: None };
    for (i, line) in text.lines().enumerate() {
        let Some(comment) = line.strip_prefix("# ") else { break };
        let at = |col: usize| format!("{}:{}:{}", file.display(), i + 1, col + 1);
        if let Some(v) = comment.strip_prefix("seed: ") {
            let seed = v.trim().parse().map_err(|_| format!("{}: seed: not a number: {v:?}", at(8)))?;
            h.seed = Some(seed);
        } else if let Some(v) = comment.strip_prefix("signature: ") {
            // `MODE: ANOMALY × KINDS × TRIGGERS` (findings::Signature::text).
            let (mode, rest) =
                v.split_once(": ").ok_or_else(|| format!("{}: signature: not `MODE: ANOMALY × …`: {v:?}", at(13)))?;
            let anomaly = rest.split(" × ").next().unwrap_or_default().trim();
            if mode.is_empty() || anomaly.is_empty() {
                return Err(format!("{}: signature: not `MODE: ANOMALY × …`: {v:?}", at(13)));
            }
            h.target = Some((mode.to_string(), anomaly.to_string()));
        }
    }
    Ok(h)
}

/// The command line of `sinkhole replay`.
#[derive(Debug, Clone)]
pub struct ReplayArgs {
    /// A finding saved by `sinkhole explore` (`found/NN-<anomaly>.yaml`).
    pub file: PathBuf,
    pub tries: u32,
    /// Instead of the file's `# seed:`.
    pub seed: Option<u64>,
    /// Where `replay-<timestamp>/` is made.
    pub results: PathBuf,
    /// `--keep-data`: the tries keep their brokers' log segments.
    pub keep_data: bool,
}

/// `replay.json`: the finding, every try, and the count.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Replayed {
    pub file: PathBuf,
    pub seed: u64,
    pub mode: String,
    pub anomaly: String,
    pub dir: PathBuf,
    pub tries: Vec<Try>,
    pub replay: Replay,
    pub wall_ms: u64,
}

/// The replay `args` asks for, checked (exit 2 naming the file): the seed (the command
/// line's, else the header's), and a mode the file runs.
pub fn check(args: &ReplayArgs) -> Result<Spec, String> {
    if args.tries == 0 {
        return Err("--tries 0: a replay needs at least one try".into());
    }
    let text = std::fs::read_to_string(&args.file).map_err(|e| format!("{}: {e}", args.file.display()))?;
    let h = header(&text, &args.file)?;
    let s = sinkhole_scenario::load(&args.file).map_err(|e| e.render())?;
    let Some((mode, anomaly)) = h.target else {
        return Err(format!(
            "{}: no `# signature:` line in its header (a finding saved by `sinkhole explore` has one): \
             nothing to say which failure a try must show",
            args.file.display()
        ));
    };
    let m = SinkMode::parse(&mode)
        .filter(|m| s.modes.contains(m))
        .ok_or_else(|| format!("{}: signature: mode {mode} is not among the scenario's modes", args.file.display()))?;
    let seed = args.seed.or(h.seed).ok_or_else(|| {
        format!("{}: no `# seed:` line in its header: give the seed it failed with (--seed S)", args.file.display())
    })?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    Ok(Spec {
        file: args.file.clone(),
        seed,
        mode: m,
        anomaly,
        tries: args.tries,
        results: args.results.join(format!("replay-{}", run::timestamp(now))),
        drop_data: !args.keep_data,
        deadline: None,
    })
}

/// `sinkhole replay`: the tries, a line each on stderr (the runs' own lines in
/// `replay.log`), `replay.json`, and the table on stdout.
pub async fn replay(args: ReplayArgs) -> Result<Replayed, RunError> {
    let spec = check(&args).map_err(|e| RunError::BadInput(anyhow!(e)))?;
    std::fs::create_dir_all(&spec.results).with_context(|| format!("creating {}", spec.results.display()))?;
    eprintln!(
        "replay: {} with seed {}, {} tries: each must show {} failing with {}; results in {}",
        spec.file.display(),
        spec.seed,
        spec.tries,
        spec.mode,
        spec.anomaly,
        spec.results.display()
    );
    run::set_progress_sink(Some(super::log::Log::open(&spec.results.join("replay.log")).sink()));
    let t0 = Instant::now();
    let mut kept = None;
    let result = tries(&spec, &mut kept, &mut |t| eprintln!("replay: {}", try_line(t, spec.tries, t0.elapsed()))).await;
    if let Some(w) = kept {
        w.teardown().await;
    }
    run::set_progress_sink(None);
    let (tries, cut) = result?;
    let r = Replayed {
        file: spec.file.clone(),
        seed: spec.seed,
        mode: spec.mode.name().to_string(),
        anomaly: spec.anomaly.clone(),
        dir: spec.results.clone(),
        replay: Replay::of(&tries, spec.tries, cut),
        tries,
        wall_ms: t0.elapsed().as_millis() as u64,
    };
    let json = spec.results.join(JSON_FILE);
    std::fs::write(&json, sinkhole_base::provenance::to_json(&r)?)
        .with_context(|| format!("writing {}", json.display()))?;
    print!("{}", render(&r));
    Ok(r)
}

/// `try 2/10 [3m10s]: LOST 2 — expected clean (the same failure)`.
pub fn try_line(t: &Try, of: u32, elapsed: Duration) -> String {
    format!(
        "try {}/{of} [{}]: {}{}",
        t.n,
        crate::matrix::human_duration(elapsed.as_millis() as u64),
        t.words,
        if t.same { " (the same failure)" } else { " (not the same failure)" }
    )
}

/// The table: a row per try, then the count.
pub fn render(r: &Replayed) -> String {
    let mut out = format!("{} (seed {}): {} failing with {}\n", r.file.display(), r.seed, r.mode, r.anomaly);
    let width = r.tries.iter().filter_map(|t| t.run_id.as_ref().map(String::len)).max().unwrap_or(1).max(3);
    out.push_str(&format!("  try  same  {:<width$}  verdict\n", "run"));
    for t in &r.tries {
        out.push_str(&format!(
            "  {:>3}  {:<4}  {:<width$}  {}\n",
            t.n,
            if t.same { "yes" } else { "no" },
            t.run_id.as_deref().unwrap_or("-"),
            t.words
        ));
    }
    out.push_str(&format!("{}\n{}\n", r.replay.words(), r.dir.join(JSON_FILE).display()));
    out
}

#[cfg(test)]
mod tests;
