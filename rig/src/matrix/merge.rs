//! `sinkhole merge DIR...`: the shards of one campaign (`sinkhole matrix
//! --shard I/N` on N hosts, see [`super::shard`]) joined into one matrix:
//! `matrix.json` with every cell in the order of the unsharded matrix, and
//! `junit.xml` and `matrix.html` rendered from it, as `sinkhole matrix`
//! renders its own.
//!
//! Shards that do not belong together are refused, every difference named
//! (exit 2): another shard count or cell list, another library (a scenario
//! added, removed or edited), other Kafka versions, seeds or modes, another
//! `--fail-on-inconclusive`, another rig version or commit, a shard given
//! twice or missing, a cell in the wrong shard.
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::render::normalize;
use super::{write_all, CellResult, Matrix, Stability, Totals};
use sinkhole_base::provenance::Provenance;
use sinkhole_base::rundir::MatrixDir;

/// What `sinkhole merge` adds to the shards' own policy: each flag holds
/// when the merge asks for it or a shard ran with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergePolicy {
    /// `--fail-on-inconclusive` (shards that disagree on it are refused).
    pub fail_on_inconclusive: bool,
    /// `--fail-on-flaky`: judged on the merged matrix, where every seed of a
    /// group is; a shard sees only some of them, so shards may differ on it.
    pub fail_on_flaky: bool,
}

/// In a merged `matrix.json`: one shard it was made of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergedShard {
    /// `I/N`.
    pub shard: String,
    /// The shard's directory as given to `sinkhole merge`.
    pub dir: PathBuf,
    pub matrix_id: String,
    pub started: String,
    #[serde(default)]
    pub finished: Option<String>,
    pub complete: bool,
    pub cells: usize,
    pub wall_ms: u64,
    /// The rig that ran the shard.
    pub version: String,
    pub git_commit: String,
}

/// A shard as read from its directory.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub dir: PathBuf,
    pub matrix: Matrix,
    pub provenance: Provenance,
}

/// Reads `dir/matrix.json`; bad input (named) when it is missing, damaged,
/// or not a shard's.
pub fn load(dir: &Path) -> Result<Loaded, String> {
    let path = MatrixDir::at(dir).json();
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("{}: {e} (not a matrix directory)", path.display()))?;
    let matrix: Matrix = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if matrix.shard.is_none() {
        return Err(format!("{}: not a shard (a matrix run without --shard I/N)", path.display()));
    }
    let provenance = Provenance::of_json(&text).unwrap_or_else(|| Provenance::of_json("{}").expect("an empty object"));
    Ok(Loaded { dir: dir.to_path_buf(), matrix, provenance })
}

fn list<T: std::fmt::Display>(v: &[T]) -> String {
    if v.is_empty() {
        "(each scenario's own)".to_string()
    } else {
        v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
    }
}

/// Every way `b` does not belong with `a` (same campaign, another shard).
fn differences(a: &Loaded, b: &Loaded) -> Vec<String> {
    let (ma, mb) = (&a.matrix, &b.matrix);
    let (da, db) = (a.dir.display(), b.dir.display());
    let (sa, sb) = (ma.shard.expect("loaded shards have one"), mb.shard.expect("loaded shards have one"));
    let mut out = Vec::new();
    if sa.count != sb.count {
        out.push(format!(
            "{db} is shard {}/{}, {da} shard {}/{}: different shard counts",
            sb.index, sb.count, sa.index, sa.count
        ));
    }
    if sa.cells_total != sb.cells_total {
        out.push(format!(
            "{db} is a shard of {} cells, {da} of {}: different cell lists",
            sb.cells_total, sa.cells_total
        ));
    }
    if ma.library != mb.library {
        let mut what = Vec::new();
        for e in &ma.library {
            match mb.library.iter().find(|x| x.scenario == e.scenario) {
                None => what.push(format!("{} only in {da}", e.scenario)),
                Some(x) if x.digest != e.digest => what.push(format!(
                    "{} differs ({} in {da}, {} in {db})",
                    e.scenario,
                    e.file.display(),
                    x.file.display()
                )),
                Some(_) => {}
            }
        }
        for x in mb.library.iter().filter(|x| !ma.library.iter().any(|e| e.scenario == x.scenario)) {
            what.push(format!("{} only in {db}", x.scenario));
        }
        if what.is_empty() {
            what.push("the same scenarios in another order".to_string());
        }
        out.push(format!("{db} ran another library than {da}: {}", what.join("; ")));
    }
    if ma.kafka != mb.kafka {
        out.push(format!("{db} ran Kafka {}, {da} Kafka {}: different versions", list(&mb.kafka), list(&ma.kafka)));
    }
    if ma.seeds != mb.seeds {
        out.push(format!("{db} ran seeds {}, {da} seeds {}: different seeds", list(&mb.seeds), list(&ma.seeds)));
    }
    if ma.modes != mb.modes {
        out.push(format!("{db} ran modes {}, {da} modes {}: different modes", list(&mb.modes), list(&ma.modes)));
    }
    if ma.fail_on_inconclusive != mb.fail_on_inconclusive {
        out.push(format!(
            "{db} ran {} --fail-on-inconclusive, {da} {}",
            if mb.fail_on_inconclusive { "with" } else { "without" },
            if ma.fail_on_inconclusive { "with" } else { "without" }
        ));
    }
    if (&a.provenance.version, &a.provenance.git_commit) != (&b.provenance.version, &b.provenance.git_commit) {
        out.push(format!(
            "{db} was run by sinkhole {}, {da} by sinkhole {}: different rig versions",
            b.provenance.rig(),
            a.provenance.rig()
        ));
    }
    out
}

/// The shard's cells that are not the ones its index owns, and the ones it lacks.
fn misplaced(l: &Loaded) -> Vec<String> {
    let info = l.matrix.shard.expect("loaded shards have one");
    let sh = info.shard();
    let mut out = Vec::new();
    let want: Vec<usize> = (0..info.cells_total).filter(|&k| sh.takes(k)).collect();
    let have: Vec<usize> = l.matrix.cells.iter().map(|c| c.index).collect();
    for c in &l.matrix.cells {
        if !sh.takes(c.index) || c.index >= info.cells_total {
            out.push(format!(
                "{}: cell {} ({} @{} seed {}) is not shard {sh}'s",
                l.dir.display(),
                c.index,
                c.scenario,
                c.kafka,
                c.seed
            ));
        }
    }
    let missing: Vec<String> = want.iter().filter(|k| !have.contains(k)).map(|k| k.to_string()).collect();
    if !missing.is_empty() {
        out.push(format!("{}: shard {sh} lacks its cells {}", l.dir.display(), missing.join(", ")));
    }
    let mut seen = Vec::new();
    for k in &have {
        if seen.contains(k) {
            out.push(format!("{}: cell {k} is listed twice", l.dir.display()));
        }
        seen.push(*k);
    }
    out
}

/// Where a cell's run directory is now: the run directories sit where the
/// shard's matrix directory pointed to them (usually its siblings); when the
/// shard was copied (a CI artifact), the same relative place beside the
/// directory given, if it exists there, else where the shard recorded it.
fn rebase(recorded_matrix_dir: &Path, given: &Path, run_dir: &Path) -> PathBuf {
    let abs = |p: &Path| normalize(&std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    let (from, to) = (abs(recorded_matrix_dir), abs(run_dir));
    let fc: Vec<_> = from.components().collect();
    let tc: Vec<_> = to.components().collect();
    let common = fc.iter().zip(&tc).take_while(|(a, b)| a == b).count();
    let mut moved = abs(given);
    for _ in common..fc.len() {
        moved.pop();
    }
    for c in &tc[common..] {
        moved.push(c.as_os_str());
    }
    if moved.is_dir() {
        moved
    } else {
        run_dir.to_path_buf()
    }
}

/// Checks that `shards` are the N shards of one campaign and joins them into
/// one matrix in `out` (not written: see [`merge_into`]). `Err` is every
/// problem found, each naming the shard.
pub fn merge(shards: &[Loaded], out: &Path, policy: MergePolicy) -> Result<Matrix, Vec<String>> {
    let Some(first) = shards.first() else {
        return Err(vec!["name the shards' matrix directories (one per shard)".to_string()]);
    };
    let mut problems = Vec::new();
    for s in &shards[1..] {
        for d in differences(first, s) {
            if !problems.contains(&d) {
                problems.push(d);
            }
        }
    }
    let count = first.matrix.shard.expect("loaded shards have one").count;
    for i in 1..=count {
        let with: Vec<&Loaded> = shards.iter().filter(|s| s.matrix.shard.is_some_and(|x| x.index == i)).collect();
        match with.len() {
            0 => problems.push(format!("shard {i}/{count} is missing")),
            1 => {}
            _ => problems.push(format!(
                "shard {i}/{count} is given twice: {}",
                with.iter().map(|s| s.dir.display().to_string()).collect::<Vec<_>>().join(" and ")
            )),
        }
    }
    for s in shards {
        problems.extend(misplaced(s));
    }
    if !problems.is_empty() {
        return Err(problems);
    }

    // In shard order, whatever order the directories were given in.
    let mut shards: Vec<&Loaded> = shards.iter().collect();
    shards.sort_by_key(|s| s.matrix.shard.map(|x| x.index));
    let mut cells: Vec<CellResult> = Vec::new();
    for s in &shards {
        for c in &s.matrix.cells {
            let mut c = c.clone();
            c.dir = c.dir.map(|d| rebase(&s.matrix.dir, &s.dir, &d));
            cells.push(c);
        }
    }
    cells.sort_by_key(|c| c.index);
    let m0 = &first.matrix;
    let now = sinkhole_base::utc::now_ms() / 1000;
    let mut m = Matrix {
        matrix_id: format!("matrix-{}-merged", sinkhole_base::utc::Utc::from_unix(now).compact()),
        dir: out.to_path_buf(),
        started: shards.iter().map(|s| s.matrix.started.clone()).min().unwrap_or_default(),
        finished: shards
            .iter()
            .map(|s| s.matrix.finished.clone())
            .collect::<Option<Vec<_>>>()
            .and_then(|v| v.into_iter().max()),
        complete: shards.iter().all(|s| s.matrix.complete),
        interrupted: shards.iter().any(|s| s.matrix.interrupted),
        kafka: m0.kafka.clone(),
        seeds: m0.seeds.clone(),
        modes: m0.modes.clone(),
        fail_on_inconclusive: m0.fail_on_inconclusive || policy.fail_on_inconclusive,
        fail_on_flaky: policy.fail_on_flaky || shards.iter().any(|s| s.matrix.fail_on_flaky),
        library: m0.library.clone(),
        shard: None,
        merged_from: shards
            .iter()
            .map(|s| MergedShard {
                shard: s.matrix.shard.expect("loaded shards have one").shard().to_string(),
                dir: s.dir.clone(),
                matrix_id: s.matrix.matrix_id.clone(),
                started: s.matrix.started.clone(),
                finished: s.matrix.finished.clone(),
                complete: s.matrix.complete,
                cells: s.matrix.cells.len(),
                wall_ms: s.matrix.wall_ms,
                version: s.provenance.version.clone(),
                git_commit: s.provenance.git_commit.clone(),
            })
            .collect(),
        cells,
        totals: Totals::default(),
        stability: Stability::default(),
        wall_ms: shards.iter().map(|s| s.matrix.wall_ms).sum(),
        exit_code: 0,
    };
    // Totals, exit code and the stability over every shard's seeds, from
    // the merged cells.
    m.refresh();
    Ok(m)
}

/// `sinkhole merge`: loads the shard directories, merges them and writes
/// `matrix.json`, `matrix.html` and `junit.xml` into `out`. `Err(Ok(..))` is
/// bad input (every problem), `Err(Err(..))` a failure to write.
pub fn merge_into(
    dirs: &[PathBuf],
    out: &Path,
    policy: MergePolicy,
) -> Result<Matrix, Result<Vec<String>, anyhow::Error>> {
    let mut shards = Vec::new();
    let mut problems = Vec::new();
    for d in dirs {
        match load(d) {
            Ok(l) => shards.push(l),
            Err(e) => problems.push(e),
        }
    }
    if !problems.is_empty() {
        return Err(Ok(problems));
    }
    let m = merge(&shards, out, policy).map_err(Ok)?;
    write_all(&m).map_err(Err)?;
    Ok(m)
}
