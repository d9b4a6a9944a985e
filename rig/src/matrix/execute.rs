//! Running a prepared matrix: every cell through [`run::plan`] and
//! [`run::execute`], the matrix files rewritten after each, a signal writing
//! the partial matrix before the process exits (see [`super`]).
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};

use super::progress::Reporter;
use super::{
    cell_args, prepare, render_table, write_all, CellKey, CellResult, CellStatus, Matrix, MatrixArgs, Prepared,
    ShardInfo,
};
use crate::results::summary::Summary;
use crate::run::{self, RunError};
use sinkhole_base::rundir::MatrixDir;
fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The matrix and what the signal hook needs to finish it.
struct Shared {
    matrix: Matrix,
    started: Instant,
    /// Set by the signal hook: the main loop records nothing more.
    stopped: bool,
    on_save: Option<super::SaveHook>,
}

impl Shared {
    fn save(&mut self) -> anyhow::Result<()> {
        self.matrix.wall_ms = self.started.elapsed().as_millis() as u64;
        self.matrix.refresh();
        write_all(&self.matrix)?;
        if let Some(hook) = &self.on_save {
            (hook.0)(&self.matrix);
        }
        Ok(())
    }
}

/// `sinkhole matrix`: validates everything, runs every cell, writes the
/// matrix files and prints the table and the stability line; returns the
/// finished matrix, whose `exit_code` (0, 1 or 3, see
/// [`crate::results::exit`]) is the command's.
pub async fn run(args: MatrixArgs) -> Result<Matrix, RunError> {
    let json = args.campaign.json;
    let m = run_matrix(args).await?;
    if json {
        print!("{}", sinkhole_base::provenance::to_json(&m)?);
    } else {
        print!("{}", render_table(&m));
        println!("matrix: {}", MatrixDir::at(&m.dir).html().display());
    }
    Ok(m)
}

/// [`run`] without the printing: the finished matrix (its files written).
pub async fn run_matrix(args: MatrixArgs) -> Result<Matrix, RunError> {
    let prepared = prepare(&args, rand::random()).map_err(|p| RunError::BadInput(anyhow!(p.join("\n"))))?;
    install_versions(&prepared.versions).await?;
    let matrix = new_matrix(&args, &prepared, unix_now())?;
    let dir = matrix.dir.clone();
    let total_modes: u64 = matrix.cells.iter().map(|c| c.modes_planned.len() as u64).sum();
    let shared =
        Arc::new(Mutex::new(Shared { matrix, started: Instant::now(), stopped: false, on_save: args.on_save.clone() }));
    lock(&shared).save().context("writing the matrix files")?;
    let of_shard = match &args.shard {
        Some(sh) => format!(" (shard {sh} of a matrix of {} cells)", prepared.cells_total),
        None => String::new(),
    };
    eprintln!(
        "sinkhole: matrix of {} cells{of_shard} ({} mode runs), seeds {}; files in {}",
        prepared.cells.len(),
        total_modes,
        prepared.seeds.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(","),
        dir.display()
    );

    set_signal_hook(&shared);
    let reporter = Reporter::new(prepared.cells.len(), total_modes, Some(MatrixDir::at(&dir).log()));
    let outcome = run_cells(&args, &prepared, &shared, &reporter, total_modes).await;
    reporter.finish();
    sinkhole_base::procs::set_signal_hook(None);
    outcome?;

    let mut s = lock(&shared);
    s.matrix.complete = true;
    s.matrix.finished = Some(sinkhole_base::utc::Utc::from_unix(unix_now()).rfc3339());
    s.save().context("writing the matrix files")?;
    Ok(s.matrix.clone())
}

/// The matrix state, whoever held the lock last (the signal hook may have
/// panicked holding it: the state is still the best there is).
fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// Every version installed before the first cell: an unknown version is
/// the user's input (exit 2), found before anything runs.
async fn install_versions(versions: &[String]) -> Result<(), RunError> {
    for v in versions {
        let v = v.clone();
        tokio::task::spawn_blocking(move || sinkhole_install::ensure(&v, &mut |l| eprintln!("sinkhole: {l}")))
            .await
            .map_err(|e| RunError::Failed(e.into()))?
            .map_err(|e| if e.is_bad_input() { RunError::BadInput(e.into()) } else { RunError::Failed(e.into()) })?;
    }
    Ok(())
}

/// The matrix before its first cell, every cell pending, and its directory.
fn new_matrix(args: &MatrixArgs, prepared: &Prepared, now: u64) -> Result<Matrix, RunError> {
    let matrix_id = match &args.shard {
        Some(sh) => format!("matrix-{}-shard-{}-of-{}", run::timestamp(now), sh.index, sh.count),
        None => format!("matrix-{}", run::timestamp(now)),
    };
    let c = &args.campaign;
    let dir = c.out.clone().unwrap_or_else(|| c.results.join(&matrix_id));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let cells: Vec<CellResult> = prepared
        .cells
        .iter()
        .zip(&prepared.indexes)
        .map(|((k, m), &index)| CellResult { index, ..CellResult::pending(k, m.clone()) })
        .collect();
    Ok(Matrix {
        kafka: c.kafka.clone(),
        seeds: prepared.seeds.clone(),
        modes: args.modes.clone(),
        fail_on_inconclusive: args.fail_on_inconclusive,
        fail_on_flaky: args.fail_on_flaky,
        library: prepared.library.clone(),
        shard: args.shard.map(|sh| ShardInfo { index: sh.index, count: sh.count, cells_total: prepared.cells_total }),
        cells,
        ..Matrix::new(matrix_id, dir, sinkhole_base::utc::Utc::from_unix(now).rfc3339())
    })
}

/// Ctrl-C: the teardown in procs kills the current run's cluster and
/// workers, then this writes the partial matrix before the process exits.
fn set_signal_hook(shared: &Arc<Mutex<Shared>>) {
    let hook_state = shared.clone();
    sinkhole_base::procs::set_signal_hook(Some(Box::new(move |sig| {
        let mut s = lock(&hook_state);
        s.stopped = true;
        s.matrix.interrupted = true;
        for c in &mut s.matrix.cells {
            if c.status == CellStatus::Running {
                c.status = CellStatus::Interrupted;
                c.error = Some(format!("stopped by signal {sig}; its cluster and workers were killed"));
            }
        }
        s.matrix.finished = Some(sinkhole_base::utc::Utc::from_unix(unix_now()).rfc3339());
        match s.save() {
            Ok(()) => eprintln!("sinkhole: partial matrix written to {}", s.matrix.dir.display()),
            Err(e) => eprintln!("sinkhole: the partial matrix was not written: {e:#}"),
        }
    })));
}

/// Runs the cells in order, each recorded as it starts and ends; stops at
/// `--fail-fast`'s first failure, a signal, or matrix files that cannot be
/// written (that error is the result). The cluster kept from one cell
/// serves the next with the same spec; none outlives the loop.
async fn run_cells(
    args: &MatrixArgs,
    prepared: &Prepared,
    shared: &Mutex<Shared>,
    reporter: &Reporter,
    total_modes: u64,
) -> Result<(), RunError> {
    let total = prepared.cells.len();
    let mut done_modes = 0u64;
    let mut outcome: Result<(), RunError> = Ok(());
    let mut warm: Option<run::Warm> = None;
    for (i, (key, _)) in prepared.cells.iter().enumerate() {
        if args.fail_fast && skip_after_failure(shared, i) {
            break;
        }
        let Some(plan) = plan_cell(args, key, shared, i) else { continue };
        let snapshot = match start_cell(shared, i, &plan) {
            Ok(snap) => snap,
            Err(e) => {
                outcome = Err(e);
                break;
            }
        };
        reporter.cell_started(i, total, &snapshot, done_modes, total_modes);
        let t0 = Instant::now();
        let keep = !args.no_reuse && next_shares_cluster(args, prepared, i, &plan);
        let (result, kept) = run::execute_with(&plan, warm.take(), keep).await;
        warm = kept;
        let wall_ms = t0.elapsed().as_millis() as u64;
        done_modes += snapshot.modes_planned.len() as u64;
        match finish_cell(shared, i, &result, wall_ms) {
            Ok(Some(finished)) => reporter.cell_finished(i, total, &finished, done_modes),
            // The signal hook owns the files now; the process is exiting.
            Ok(None) => break,
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    if let Some(mut w) = warm.take() {
        // A break (fail-fast, a signal) left a kept cluster: nothing outlives the matrix.
        w.cluster.teardown().await;
    }
    outcome
}

/// `--fail-fast`: when a cell before `i` failed, marks `i` and the rest
/// skipped and says so.
fn skip_after_failure(shared: &Mutex<Shared>, i: usize) -> bool {
    let mut s = lock(shared);
    let policy = s.matrix.policy();
    if !s.matrix.cells[..i].iter().any(|c| c.failed_under(policy)) {
        return false;
    }
    for c in &mut s.matrix.cells[i..] {
        c.status = CellStatus::Skipped;
        c.error = Some("not run: --fail-fast after a failed cell".into());
    }
    true
}

/// Plans cell `i`; a cell that no longer plans (validated before, so a file
/// changed on disk since) is recorded as an error and skipped.
fn plan_cell(args: &MatrixArgs, key: &CellKey, shared: &Mutex<Shared>, i: usize) -> Option<run::Plan> {
    match run::plan_unique(&cell_args(args, key), unix_now()) {
        Ok(p) => Some(p),
        Err(RunError::BadInput(e) | RunError::Failed(e)) => {
            let mut s = lock(shared);
            let c = &mut s.matrix.cells[i];
            c.status = CellStatus::Error;
            c.error = Some(format!("{e:#}"));
            let _ = s.save();
            None
        }
    }
}

/// Records cell `i` as running in `plan`'s directory; the cell as saved.
fn start_cell(shared: &Mutex<Shared>, i: usize, plan: &run::Plan) -> Result<CellResult, RunError> {
    let mut s = lock(shared);
    let c = &mut s.matrix.cells[i];
    c.status = CellStatus::Running;
    c.run_id = Some(plan.run_id.clone());
    c.dir = Some(plan.dir.path().to_path_buf());
    let snap = c.clone();
    s.save().map_err(RunError::Failed)?;
    Ok(snap)
}

/// Whether the cell after `i` wants the same cluster as `plan`: then this
/// cell's cluster is kept for it.
fn next_shares_cluster(args: &MatrixArgs, prepared: &Prepared, i: usize, plan: &run::Plan) -> bool {
    prepared.cells.get(i + 1).is_some_and(|(next, _)| {
        let next = run::plan(&cell_args(args, next), unix_now()).ok();
        next.is_some_and(|n| run::reuse::cluster_key(&n).is_some_and(|k| Some(k) == run::reuse::cluster_key(plan)))
    })
}

/// Records cell `i`'s result; the cell as saved, or `None` when a signal
/// stopped the matrix meanwhile (nothing more is recorded then).
fn finish_cell(
    shared: &Mutex<Shared>,
    i: usize,
    result: &Result<Summary, RunError>,
    wall_ms: u64,
) -> Result<Option<CellResult>, RunError> {
    let mut s = lock(shared);
    if s.stopped {
        return Ok(None);
    }
    let c = &mut s.matrix.cells[i];
    match result {
        Ok(summary) => c.finish(summary, wall_ms),
        Err(RunError::BadInput(e) | RunError::Failed(e)) => {
            c.status = CellStatus::Error;
            c.error = Some(format!("{e:#}"));
            c.wall_ms = wall_ms;
        }
    }
    let snap = c.clone();
    s.save().map_err(RunError::Failed)?;
    Ok(Some(snap))
}
