//! `sinkhole bisect SCENARIO --kafka A..B` (or `--connector A..B`): the first version that
//! shows an anomaly. Each released version in the range that the cache can install runs the
//! scenario with N seeds; a version whose seeds disagree is named flaky and never taken as a
//! boundary; the search skips versions only where that is sound ([`search`]). It prints the
//! table version × what each seed showed and the boundary: "clean up to 4.2.2, LOST, MISSING
//! MARKER from 4.3.0".
//!
//! What a run shows is read from the data, not from pass or fail: a known-bug scenario
//! expects the anomaly on the versions its `expect_by` names, so the same data is a pass on one
//! version and a fail on the next. A run is *bad* when its counts hold an anomaly a clean
//! expectation forbids, *clean* when they hold none, and *not judged* when its verdict is
//! inconclusive — a premise the bug's trigger rests on that did not hold (the run never
//! reached the state the bug needs), a fault that fired late — or the rig failed. Bisection
//! rests on that: a clean run that never met the trigger says nothing about the version.
use std::path::PathBuf;

use serde::Serialize;
use sinkhole_checker::verdict::Outcome;
use sinkhole_model::anomaly::Anomaly;

use crate::results::summary::{ModeSummary, Summary};
use crate::run::{self, RunArgs, RunError};

pub mod search;

use search::{Search, Seen};

/// Which version a bisection walks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    Kafka,
    /// flink-connector-kafka, on the scenario's Flink.
    Connector,
}

impl Axis {
    pub fn name(&self) -> &'static str {
        match self {
            Axis::Kafka => "Kafka",
            Axis::Connector => "connector",
        }
    }
}

/// What `sinkhole bisect` was asked.
#[derive(Debug, Clone)]
pub struct BisectArgs {
    pub file: PathBuf,
    pub axis: Axis,
    /// The versions to walk, oldest first (the range resolved against the releases).
    pub versions: Vec<String>,
    /// Seeds `seed .. seed + seed_count`.
    pub seed: u64,
    pub seed_count: u32,
    pub modes: Vec<String>,
    pub results: PathBuf,
    /// Run every version (no skipping).
    pub every: bool,
}

/// One seed's run of one version.
#[derive(Debug, Clone, Serialize)]
pub struct SeedRun {
    pub seed: u64,
    /// `clean`, `bad`, or `not judged`.
    pub class: String,
    /// What happened to the data, or why it was not judged.
    pub words: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_dir: Option<PathBuf>,
}

/// One version's row.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub version: String,
    /// `clean`, `bad`, `flaky`, `inconclusive`, `not installable`, or `not run`.
    pub verdict: String,
    pub detail: String,
    pub seeds: Vec<SeedRun>,
}

/// A bisection's result (bisect.json).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub scenario: PathBuf,
    pub axis: Axis,
    pub seeds: Vec<u64>,
    pub rows: Vec<Row>,
    /// "clean up to 4.2.2, LOST from 4.3.0", one per boundary; empty: none found.
    pub boundaries: Vec<String>,
    /// A sentence when there is no boundary: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub none: Option<String>,
    /// The first version with the anomaly after a clean one (the first boundary of that way).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_bad: Option<String>,
}

/// The anomalies a clean expectation forbids that a row's counts hold, with their counts.
fn anomalies(m: &ModeSummary) -> Vec<(Anomaly, u64)> {
    Anomaly::ALL
        .iter()
        .copied()
        .filter(|a| a.severity().forbidden_by_clean())
        .map(|a| (a, m.counts.get(a)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// What one run showed: bad (the anomalies' words), clean, or not judged (why), over the
/// modes it ran (bad if any mode is, not judged if any is and none is bad).
pub fn classify(s: &Summary) -> (Seen, String) {
    let mut bad = Vec::new();
    let mut unjudged = Vec::new();
    for m in &s.modes {
        let found = anomalies(m);
        if !found.is_empty() && m.checked {
            let words: Vec<String> = found.iter().map(|(a, n)| format!("{} {n}", a.said())).collect();
            bad.push(format!("{}: {}", m.mode.name(), words.join(", ")));
        } else if matches!(m.outcome, Outcome::Inconclusive | Outcome::Error) || !m.checked {
            unjudged.push(format!("{}: {}", m.mode.name(), m.words()));
        }
    }
    if !bad.is_empty() {
        let kinds: Vec<&str> =
            s.modes.iter().flat_map(anomalies).map(|(a, _)| a.said()).fold(Vec::new(), |mut v, w| {
                if !v.contains(&w) {
                    v.push(w);
                }
                v
            });
        (Seen::Bad(kinds.join(", ")), bad.join("; "))
    } else if !unjudged.is_empty() {
        (Seen::Inconclusive, unjudged.join("; "))
    } else {
        (Seen::Clean, "clean".into())
    }
}

/// A version's verdict from its seeds: flaky when judged seeds disagree.
pub fn judge(seeds: &[(Seen, String)]) -> Seen {
    let judged: Vec<&Seen> = seeds.iter().map(|(s, _)| s).filter(|s| s.decisive()).collect();
    match judged.first() {
        None => Seen::Inconclusive,
        Some(first) if judged.iter().all(|s| std::mem::discriminant(*s) == std::mem::discriminant(*first)) => {
            (*first).clone()
        }
        Some(_) => Seen::Flaky,
    }
}

fn seen_name(s: &Seen) -> &'static str {
    match s {
        Seen::Clean => "clean",
        Seen::Bad(_) => "bad",
        Seen::Flaky => "flaky",
        Seen::Inconclusive => "inconclusive",
        Seen::NotInstallable(_) => "not installable",
    }
}

/// Installs what a version needs; Err(why) when the cache cannot.
fn install(a: &BisectArgs, v: &str, flink: Option<&str>) -> Result<(), String> {
    let mut progress = |l: &str| tracing::info!("{l}");
    match a.axis {
        Axis::Kafka => sinkhole_install::ensure(v, &mut progress).map(|_| ()).map_err(|e| e.to_string()),
        Axis::Connector => {
            let flink = flink.unwrap_or(sinkhole_install::flink::DEFAULT_FLINK);
            sinkhole_install::flink::ensure(flink, v, &mut progress).map(|_| ()).map_err(|e| e.to_string())
        }
    }
}

/// Runs one version over the seeds.
async fn probe(a: &BisectArgs, v: &str, flink: Option<&str>) -> Result<(Seen, Vec<SeedRun>), RunError> {
    if let Err(why) = install(a, v, flink) {
        run::progress(&format!("{} {v}: not installable here: {why}", a.axis.name()));
        return Ok((Seen::NotInstallable(why), Vec::new()));
    }
    let mut out = Vec::new();
    for seed in a.seed..a.seed + u64::from(a.seed_count) {
        let args = RunArgs {
            file: a.file.clone(),
            modes: a.modes.clone(),
            kafka: (a.axis == Axis::Kafka).then(|| v.to_string()),
            connector: (a.axis == Axis::Connector).then(|| v.to_string()),
            seed: Some(seed),
            results: a.results.clone(),
            drop_data: true,
            ..RunArgs::default()
        };
        let (seen, words, dir) = match run::run_on(&args, None, None).await {
            Ok(s) => {
                let (seen, words) = classify(&s);
                (seen, words, Some(s.dir.clone()))
            }
            Err(RunError::BadInput(e)) => return Err(RunError::BadInput(e)),
            Err(RunError::Failed(e)) => (Seen::Inconclusive, format!("the rig failed: {e:#}"), None),
        };
        run::progress(&format!("{} {v} seed {seed}: {}", a.axis.name(), words));
        out.push((seen, words, seed, dir));
    }
    let seeds: Vec<(Seen, String)> = out.iter().map(|(s, w, _, _)| (s.clone(), w.clone())).collect();
    let runs = out
        .into_iter()
        .map(|(s, words, seed, run_dir)| SeedRun {
            seed,
            class: if s.decisive() { seen_name(&s).to_string() } else { "not judged".into() },
            words,
            run_dir,
        })
        .collect();
    Ok((judge(&seeds), runs))
}

/// Runs the bisection: every version the search asks for, then the report.
pub async fn bisect(a: &BisectArgs, flink: Option<&str>) -> Result<Report, RunError> {
    let mut s = Search::new(a.versions.len(), a.every);
    let mut runs: Vec<Vec<SeedRun>> = vec![Vec::new(); a.versions.len()];
    while let Some(i) = s.next() {
        let (seen, r) = probe(a, &a.versions[i], flink).await?;
        run::progress(&format!("{} {}: {}", a.axis.name(), a.versions[i], seen_name(&seen)));
        s.record(i, seen);
        runs[i] = r;
    }
    Ok(report(a, &s, runs))
}

fn report(a: &BisectArgs, s: &Search, runs: Vec<Vec<SeedRun>>) -> Report {
    let v = &a.versions;
    let skipped = s.skipped();
    let rows = runs
        .into_iter()
        .enumerate()
        .map(|(i, seeds)| {
            let (verdict, detail) = match s.seen(i) {
                Some(Seen::Bad(w)) => ("bad".to_string(), w.clone()),
                Some(Seen::NotInstallable(why)) => ("not installable".to_string(), why.clone()),
                Some(Seen::Flaky) => ("flaky".to_string(), "its seeds disagree: never a boundary".into()),
                Some(x) => (seen_name(x).to_string(), String::new()),
                None => {
                    let (_, lo, hi) = skipped.iter().find(|(j, _, _)| *j == i).copied().unwrap_or((i, None, None));
                    let side = |k: Option<usize>| k.map_or("?".to_string(), |k| v[k].clone());
                    (
                        "not run".to_string(),
                        format!("between {} and {}, which agree (one boundary assumed)", side(lo), side(hi)),
                    )
                }
            };
            Row { version: v[i].clone(), verdict, detail, seeds }
        })
        .collect();
    let boundaries: Vec<String> = s
        .flips()
        .iter()
        .map(|f| {
            let (last, first) = (s.seen(f.last), s.seen(f.first));
            let words = |x: Option<&Seen>| match x {
                Some(Seen::Bad(w)) => w.clone(),
                _ => "clean".to_string(),
            };
            let between = if f.between.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} between: no clear answer)",
                    f.between.iter().map(|&k| v[k].as_str()).collect::<Vec<_>>().join(", ")
                )
            };
            format!("{} up to {}, {} from {}{between}", words(last), v[f.last], words(first), v[f.first])
        })
        .collect();
    let none = boundaries.is_empty().then(|| {
        let decisive: Vec<&Seen> = (0..v.len()).filter_map(|i| s.seen(i)).filter(|x| x.decisive()).collect();
        match decisive.first() {
            None => "no version gave a clear answer: no boundary".to_string(),
            Some(x) => format!("every version that gave a clear answer was {}: no boundary in the range", seen_name(x)),
        }
    });
    let first_bad = s
        .flips()
        .iter()
        .find(|f| matches!((s.seen(f.last), s.seen(f.first)), (Some(Seen::Clean), Some(Seen::Bad(_)))))
        .map(|f| v[f.first].clone());
    Report {
        first_bad,
        scenario: a.file.clone(),
        axis: a.axis.clone(),
        seeds: (a.seed..a.seed + u64::from(a.seed_count)).collect(),
        rows,
        boundaries,
        none,
    }
}

/// The table and the boundary, for the terminal.
pub fn render(r: &Report) -> String {
    let mut o = format!("{:<14} {:<16} seeds\n", r.axis.name(), "verdict");
    for row in &r.rows {
        let seeds: Vec<String> = row.seeds.iter().map(|s| format!("{}: {}", s.seed, s.words)).collect();
        let detail = if row.detail.is_empty() { String::new() } else { format!(" — {}", row.detail) };
        o.push_str(&format!("{:<14} {:<16} {}{detail}\n", row.version, row.verdict, seeds.join(" | ")));
    }
    for b in &r.boundaries {
        o.push_str(&format!("boundary: {b}\n"));
    }
    if let Some(n) = &r.none {
        o.push_str(&format!("{n}\n"));
    }
    o
}

#[cfg(test)]
mod tests;
