//! `sinkhole merge DIR...` over explorations: the shards of one campaign run across hosts
//! (`sinkhole explore … --seed S --shard I/N` on host I) joined into one `explore.json` and
//! `explore.html`, as `matrix --shard` campaigns are joined by [`crate::matrix::merge`].
//!
//! What makes shards one campaign: the same scenario (by name), the same modes, the same first
//! seed and the same shard count, each index once. Their seeds are then disjoint by
//! construction ([`super::ExploreArgs::seed_of`]), so the merged runs are every shard's runs,
//! ordered by seed and numbered again. A signature found on two hosts is one finding: the one
//! found first (its own campaign time: the shards run at once) is kept, with every run that
//! showed it on any host; the findings are numbered again in the order they were found. Their
//! files stay where their shard saved them. Coverage of faults and of protocol states, inconclusive
//! and rig-error counts add up;
//! the detection of each mode is its earliest finding on any host.
use std::path::{Path, PathBuf};

use super::findings::{Coverage, Finding};
use super::report::{self, Explored, Stop};
use super::states::StateCoverage;
use super::JSON_FILE;

/// A shard's `explore.json`, read.
pub fn load(dir: &Path) -> Result<Explored, String> {
    let file = dir.join(JSON_FILE);
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!("{}: not an explore.json this sinkhole reads ({e}); was it made by an older one?", file.display())
    })
}

/// Whether `dir` holds an exploration (its `explore.json`), not a matrix.
pub fn is_exploration(dir: &Path) -> bool {
    dir.join(JSON_FILE).is_file()
}

/// The shards joined, or what keeps them from being one campaign (one line each).
pub fn merge(shards: &[Explored], out: &Path) -> Result<Explored, Vec<String>> {
    let mut problems = Vec::new();
    let Some(first) = shards.first() else {
        return Err(vec!["no shard given".into()]);
    };
    let mut seen = Vec::new();
    for s in shards {
        let name = s.dir.display();
        let Some(shard) = s.shard else {
            problems.push(format!("{name}: not a shard (run with --seed S --shard I/N)"));
            continue;
        };
        if s.scenario != first.scenario {
            problems.push(format!("{name}: scenario {}, not {}", s.scenario, first.scenario));
        }
        if s.modes != first.modes {
            problems.push(format!("{name}: modes {}, not {}", s.modes.join(","), first.modes.join(",")));
        }
        if s.first_seed != first.first_seed {
            problems.push(format!("{name}: --seed {}, not {}", s.first_seed, first.first_seed));
        }
        if first.shard.is_some_and(|f| f.count != shard.count) {
            problems.push(format!("{name}: shard {shard}, of another count than {}", first.shard.unwrap_or(shard)));
        }
        if seen.contains(&shard.index) {
            problems.push(format!("{name}: shard {shard} given twice"));
        }
        seen.push(shard.index);
    }
    if !problems.is_empty() {
        return Err(problems);
    }

    let mut runs: Vec<_> = shards.iter().flat_map(|s| s.runs.iter().cloned()).collect();
    runs.sort_by_key(|r| r.seed);
    let run_of = |seed: u64| runs.iter().position(|r| r.seed == seed).map(|i| i as u32 + 1).unwrap_or(0);

    // One finding per signature: the earliest found, with every host's runs.
    let mut all: Vec<Finding> = shards.iter().flat_map(|s| s.findings.iter().cloned()).collect();
    all.sort_by_key(|f| (f.at_ms, f.seed));
    let mut findings: Vec<Finding> = Vec::new();
    for f in all {
        match findings.iter_mut().find(|k| k.signature == f.signature) {
            Some(k) => k.runs.extend(f.runs.into_iter().filter(|r| !k.runs.contains(r)).collect::<Vec<_>>()),
            None => findings.push(f),
        }
    }
    for (i, f) in findings.iter_mut().enumerate() {
        f.n = i + 1;
        f.run = run_of(f.seed);
    }
    // Each run row points at the merged numbers of the findings its shard gave it.
    for s in shards {
        for r in &s.runs {
            let merged: Vec<usize> = r
                .findings
                .iter()
                .filter_map(|n| s.findings.iter().find(|f| f.n == *n))
                .filter_map(|f| {
                    let sig = &f.signature;
                    findings.iter().find(|k| k.signature == *sig).map(|k| k.n)
                })
                .collect();
            if let Some(row) = runs.iter_mut().find(|x| x.seed == r.seed) {
                row.findings = merged;
            }
        }
    }
    for (i, r) in runs.iter_mut().enumerate() {
        r.i = i as u32 + 1;
    }

    let coverage = Coverage::of_cells(&shards.iter().flat_map(|s| s.coverage.iter().cloned()).collect::<Vec<_>>());
    // Shards written before states were kept have none: the merge says nothing of them either.
    let states = StateCoverage::of_cells(&shards.iter().flat_map(|s| s.states.iter().cloned()).collect::<Vec<_>>());
    let states = if shards.iter().all(|s| s.states.is_empty()) { Vec::new() } else { states.cells() };
    let modes: Vec<sinkhole_model::SinkMode> =
        first.modes.iter().filter_map(|m| sinkhole_model::SinkMode::parse(m)).collect();
    let stops: Vec<Stop> = shards.iter().map(|s| s.stop).collect();
    let stop = if stops.contains(&Stop::Running) {
        Stop::Running
    } else if stops.iter().all(|s| *s == Stop::Found) {
        Stop::Found
    } else if stops.contains(&Stop::Time) {
        Stop::Time
    } else {
        Stop::Runs
    };
    let runs_done = runs.len() as u32;
    Ok(Explored {
        scenario: first.scenario.clone(),
        source: first.source.clone(),
        dir: out.to_path_buf(),
        modes: first.modes.clone(),
        first_seed: first.first_seed,
        shard: None,
        merged_from: shards.iter().map(|s| s.dir.clone()).collect(),
        runs_budget: shards.iter().map(|s| s.runs_budget).sum(),
        time_budget_ms: shards.iter().map(|s| s.time_budget_ms).max().unwrap_or(0),
        shrink_runs: first.shrink_runs,
        rss_start_bytes: None,
        stop,
        wall_ms: shards.iter().map(|s| s.wall_ms).max().unwrap_or(0),
        runs_done,
        inconclusive: shards.iter().map(|s| s.inconclusive).sum(),
        rig_errors: shards.iter().map(|s| s.rig_errors).sum(),
        detection: report::detection(&modes, &findings, runs_done),
        findings,
        coverage: coverage.cells(),
        coverage_text: coverage.render(),
        states,
        runs,
    })
}

/// Reads the shards in `dirs`, merges them and writes `explore.json` and `explore.html` in
/// `out`. `Err(Ok(lines))`: they are not one campaign (bad input); `Err(Err(e))`: writing failed.
pub fn merge_into(dirs: &[PathBuf], out: &Path) -> Result<Explored, Result<Vec<String>, anyhow::Error>> {
    let mut shards = Vec::new();
    let mut problems = Vec::new();
    for d in dirs {
        match load(d) {
            Ok(mut e) => {
                // Where it is now, not where the host wrote it.
                e.dir = d.clone();
                shards.push(e);
            }
            Err(e) => problems.push(e),
        }
    }
    if !problems.is_empty() {
        return Err(Ok(problems));
    }
    let e = merge(&shards, out).map_err(Ok)?;
    super::write_files(&e).map_err(Err)?;
    Ok(e)
}
