//! The runs and matrices under a results directory: a directory with a
//! `summary.json` is a run (`sinkhole run`, a matrix cell), one with a
//! `matrix.json` a matrix (or a shard, or a merge). Searched a few levels
//! deep (a CI job's downloaded shards nest their results), never through a
//! symlink, never inside a run (its subdirectories are its modes and cluster).
use std::path::{Path, PathBuf};

use crate::matrix::Matrix;
use crate::results::summary::Summary;
use sinkhole_base::provenance::Provenance;
use sinkhole_base::rundir::{names, MatrixDir, RunDir};

/// How deep below the results directory runs are looked for.
const DEPTH: usize = 4;

/// A run found.
#[derive(Debug, Clone)]
pub struct RunEntry {
    /// The run directory relative to the results directory, `/`-separated.
    pub rel: String,
    pub summary: Summary,
    pub provenance: Provenance,
    /// RFC 3339 UTC: the summary's, else the run id's timestamp, else the
    /// summary file's modification time.
    pub started: String,
    /// The summary's wall time, else (runs before schema 1) the sum of the
    /// modes' job times.
    pub wall_ms: u64,
}

/// A matrix found.
#[derive(Debug, Clone)]
pub struct MatrixEntry {
    pub rel: String,
    pub matrix: Matrix,
    pub provenance: Provenance,
}

/// Everything found under `root`: runs newest first, matrices newest first,
/// and the files that could not be read.
#[derive(Debug, Clone, Default)]
pub struct Found {
    pub runs: Vec<RunEntry>,
    pub matrices: Vec<MatrixEntry>,
    pub problems: Vec<String>,
}

fn rel_of(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// `name-20261201T105322-7` → `2026-12-01T10:53:22Z`.
pub fn started_from_run_id(run_id: &str) -> Option<String> {
    let mut parts = run_id.rsplit('-');
    let _seed = parts.next()?;
    let ts = parts.next()?;
    let b = ts.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    if b.len() != 15 || b[8] != b'T' || !digits(0..8) || !digits(9..15) {
        return None;
    }
    Some(format!("{}-{}-{}T{}:{}:{}Z", &ts[0..4], &ts[4..6], &ts[6..8], &ts[9..11], &ts[11..13], &ts[13..15]))
}

fn mtime_rfc3339(p: &Path) -> String {
    let secs = std::fs::metadata(p)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .unwrap_or(0);
    sinkhole_base::utc::Utc::from_unix(secs).rfc3339()
}

fn read_run(root: &Path, dir: &Path, found: &mut Found) {
    let path = RunDir::at(dir).summary();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return found.problems.push(format!("{}: {e}", rel_of(root, &path))),
    };
    let mut summary: Summary = match serde_json::from_str(&text) {
        Ok(s) => s,
        Err(e) => return found.problems.push(format!("{}: {e}", rel_of(root, &path))),
    };
    summary.upgrade();
    let started = summary
        .started
        .clone()
        .or_else(|| started_from_run_id(&summary.run_id))
        .unwrap_or_else(|| mtime_rfc3339(&path));
    let wall_ms = summary.wall_ms.unwrap_or_else(|| summary.modes.iter().map(|m| m.wall_ms).sum());
    let provenance = Provenance::of_json(&text).unwrap_or_else(|| Provenance::of_json("{}").expect("an object"));
    found.runs.push(RunEntry { rel: rel_of(root, dir), summary, provenance, started, wall_ms });
}

fn read_matrix(root: &Path, dir: &Path, found: &mut Found) {
    let path = MatrixDir::at(dir).json();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => return found.problems.push(format!("{}: {e}", rel_of(root, &path))),
    };
    match serde_json::from_str::<Matrix>(&text) {
        Ok(matrix) => {
            let provenance =
                Provenance::of_json(&text).unwrap_or_else(|| Provenance::of_json("{}").expect("an object"));
            found.matrices.push(MatrixEntry { rel: rel_of(root, dir), matrix, provenance });
        }
        Err(e) => found.problems.push(format!("{}: {e}", rel_of(root, &path))),
    }
}

fn walk(root: &Path, dir: &Path, depth: usize, found: &mut Found) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        // symlink_metadata: a link to a directory is not walked into.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .filter(|p| !p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.') || n == names::CLUSTER))
        .collect();
    dirs.sort();
    for d in dirs {
        if RunDir::at(&d).has_summary() {
            read_run(root, &d, found);
        } else if MatrixDir::at(&d).has_matrix() {
            read_matrix(root, &d, found);
        } else if depth > 1 {
            walk(root, &d, depth - 1, found);
        }
    }
}

/// The runs and matrices under `root` (canonical), newest first.
pub fn discover(root: &Path) -> Found {
    let mut found = Found::default();
    if RunDir::at(root).has_summary() {
        // The directory given is one run.
        read_run(root, root, &mut found);
    } else {
        walk(root, root, DEPTH, &mut found);
    }
    found.runs.sort_by(|a, b| b.started.cmp(&a.started).then_with(|| a.rel.cmp(&b.rel)));
    found.matrices.sort_by(|a, b| b.matrix.started.cmp(&a.matrix.started).then_with(|| a.rel.cmp(&b.rel)));
    found
}
