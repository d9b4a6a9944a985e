//! Running a prepared matrix: every cell through [`run::plan`] and
//! [`run::execute`], the matrix files rewritten after each, a signal writing
//! the partial matrix before the process exits (see [`super`]).
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, Context};

use super::progress::Reporter;
use super::{
    cell_args, prepare, render_table, write_all, CellResult, CellStatus, Matrix, MatrixArgs, ShardInfo, Totals,
    HTML_FILE,
};
use crate::install;
use crate::run::{self, RunArgs, RunError};
/// Plans a cell with a run directory of its own: two cells of the same
/// scenario and seed started within one second would share a run id (its
/// timestamp has seconds), so the later one takes the next second.
fn plan_unique(args: &RunArgs, now: u64) -> Result<run::Plan, RunError> {
    let mut t = now;
    loop {
        let p = run::plan(args, t)?;
        if !p.dir.exists() || t >= now + 3600 {
            return Ok(p);
        }
        t += 1;
    }
}

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
/// matrix files and prints the table; returns the exit code (0, 1 or 3, see
/// [`crate::results::exit`]).
pub async fn run(args: MatrixArgs) -> Result<u8, RunError> {
    let json = args.json;
    let m = run_matrix(args).await?;
    if json {
        print!("{}", crate::provenance::to_json(&m)?);
    } else {
        print!("{}", render_table(&m));
        println!("matrix: {}", m.dir.join(HTML_FILE).display());
    }
    Ok(m.exit_code)
}

/// [`run`] without the printing: the finished matrix (its files written).
pub async fn run_matrix(args: MatrixArgs) -> Result<Matrix, RunError> {
    let prepared = prepare(&args, rand::random()).map_err(|p| RunError::BadInput(anyhow!(p.join("\n"))))?;
    // Every version installed before the first cell: an unknown version is
    // the user's input (exit 2), found before anything runs.
    for v in &prepared.versions {
        let v = v.clone();
        tokio::task::spawn_blocking(move || install::ensure(&v, &mut |l| eprintln!("sinkhole: {l}")))
            .await
            .map_err(|e| RunError::Failed(e.into()))?
            .map_err(|e| if e.is_bad_input() { RunError::BadInput(e.into()) } else { RunError::Failed(e.into()) })?;
    }

    let now = unix_now();
    let matrix_id = match &args.shard {
        Some(sh) => format!("matrix-{}-shard-{}-of-{}", run::timestamp(now), sh.index, sh.count),
        None => format!("matrix-{}", run::timestamp(now)),
    };
    let dir = args.out.clone().unwrap_or_else(|| args.results.join(&matrix_id));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let cells: Vec<CellResult> = prepared
        .cells
        .iter()
        .zip(&prepared.indexes)
        .map(|((k, m), &index)| CellResult { index, ..CellResult::pending(k, m.clone()) })
        .collect();
    let total_modes: u64 = cells.iter().map(|c| c.modes_planned.len() as u64).sum();
    let matrix = Matrix {
        matrix_id,
        dir: dir.clone(),
        started: crate::utc::Utc::from_unix(now).rfc3339(),
        finished: None,
        complete: false,
        interrupted: false,
        kafka: args.kafka.clone(),
        seeds: prepared.seeds.clone(),
        modes: args.modes.clone(),
        fail_on_inconclusive: args.fail_on_inconclusive,
        library: prepared.library.clone(),
        shard: args.shard.map(|sh| ShardInfo { index: sh.index, count: sh.count, cells_total: prepared.cells_total }),
        merged_from: Vec::new(),
        cells,
        totals: Totals::default(),
        wall_ms: 0,
        exit_code: 0,
    };
    let shared =
        Arc::new(Mutex::new(Shared { matrix, started: Instant::now(), stopped: false, on_save: args.on_save.clone() }));
    shared.lock().unwrap_or_else(|p| p.into_inner()).save().context("writing the matrix files")?;
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

    // Ctrl-C: the teardown in procs kills the current run's cluster and
    // workers, then this writes the partial matrix before the process exits.
    let hook_state = shared.clone();
    crate::procs::set_signal_hook(Some(Box::new(move |sig| {
        let mut s = hook_state.lock().unwrap_or_else(|p| p.into_inner());
        s.stopped = true;
        s.matrix.interrupted = true;
        for c in &mut s.matrix.cells {
            if c.status == CellStatus::Running {
                c.status = CellStatus::Interrupted;
                c.error = Some(format!("stopped by signal {sig}; its cluster and workers were killed"));
            }
        }
        s.matrix.finished = Some(crate::utc::Utc::from_unix(unix_now()).rfc3339());
        match s.save() {
            Ok(()) => eprintln!("sinkhole: partial matrix written to {}", s.matrix.dir.display()),
            Err(e) => eprintln!("sinkhole: the partial matrix was not written: {e:#}"),
        }
    })));

    let reporter = Reporter::new(prepared.cells.len(), total_modes, Some(dir.join("matrix.log")));
    let total = prepared.cells.len();
    let mut done_modes = 0u64;
    let mut outcome: Result<(), RunError> = Ok(());
    // The cluster kept from the previous cell, for the next cell with the same spec.
    let mut warm: Option<run::Warm> = None;
    for (i, (key, _)) in prepared.cells.iter().enumerate() {
        let stop_now = {
            let s = shared.lock().unwrap_or_else(|p| p.into_inner());
            args.fail_fast && s.matrix.cells[..i].iter().any(|c| c.failed_under(s.matrix.policy()))
        };
        if stop_now {
            let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
            for c in &mut s.matrix.cells[i..] {
                c.status = CellStatus::Skipped;
                c.error = Some("not run: --fail-fast after a failed cell".into());
            }
            break;
        }
        let plan = match plan_unique(&cell_args(&args, key), unix_now()) {
            Ok(p) => p,
            Err(RunError::BadInput(e) | RunError::Failed(e)) => {
                // Validated above; a file changed on disk since.
                let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
                let c = &mut s.matrix.cells[i];
                c.status = CellStatus::Error;
                c.error = Some(format!("{e:#}"));
                let _ = s.save();
                continue;
            }
        };
        let snapshot = {
            let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
            let c = &mut s.matrix.cells[i];
            c.status = CellStatus::Running;
            c.run_id = Some(plan.run_id.clone());
            c.dir = Some(plan.dir.clone());
            let snap = c.clone();
            if let Err(e) = s.save() {
                outcome = Err(RunError::Failed(e));
                break;
            }
            snap
        };
        reporter.cell_started(i, total, &snapshot, done_modes, total_modes);
        let t0 = Instant::now();
        // Keep the cluster when the next cell wants the same one.
        let keep = !args.no_reuse
            && prepared.cells.get(i + 1).is_some_and(|(next, _)| {
                let next = run::plan(&cell_args(&args, next), unix_now()).ok();
                next.is_some_and(|n| {
                    run::reuse::cluster_key(&n).is_some_and(|k| Some(k) == run::reuse::cluster_key(&plan))
                })
            });
        let (result, kept) = run::execute_with(&plan, warm.take(), keep).await;
        warm = kept;
        let wall_ms = t0.elapsed().as_millis() as u64;
        done_modes += snapshot.modes_planned.len() as u64;
        let finished = {
            let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
            if s.stopped {
                // The signal hook owns the files now; the process is exiting.
                break;
            }
            let c = &mut s.matrix.cells[i];
            match &result {
                Ok(summary) => c.finish(summary, wall_ms),
                Err(RunError::BadInput(e) | RunError::Failed(e)) => {
                    c.status = CellStatus::Error;
                    c.error = Some(format!("{e:#}"));
                    c.wall_ms = wall_ms;
                }
            }
            let snap = c.clone();
            if let Err(e) = s.save() {
                outcome = Err(RunError::Failed(e));
                break;
            }
            snap
        };
        reporter.cell_finished(i, total, &finished, done_modes);
    }
    if let Some(mut w) = warm.take() {
        // A break (fail-fast, a signal) left a kept cluster: nothing outlives the matrix.
        w.cluster.teardown().await;
    }
    reporter.finish();
    crate::procs::set_signal_hook(None);
    outcome?;

    let m = {
        let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
        s.matrix.complete = true;
        s.matrix.finished = Some(crate::utc::Utc::from_unix(unix_now()).rfc3339());
        s.save().context("writing the matrix files")?;
        s.matrix.clone()
    };
    Ok(m)
}
