//! `sinkhole shrink RUN_DIR`: a failing run's fault list made smaller while
//! the same mode fails the same way ([`sinkhole_rig::shrink`]).
use std::time::Duration;

use sinkhole_rig::shrink::{self, ShrinkArgs, Stop};

use super::args::ShrinkCmd;
use super::{run_failure, Failure};

pub async fn run(a: ShrinkCmd) -> Result<(), Failure> {
    let ShrinkCmd { run_dir, mode, runs, time, keep_data } = a;
    let args = ShrinkArgs {
        run_dir,
        mode,
        max_runs: runs,
        max_time: Duration::from_secs(time),
        drop_data: !keep_data,
        toward: None,
    };
    let r = shrink::run(args).await.map_err(run_failure)?;
    eprintln!(
        "shrink: {} faults → {} after {} runs ({}); the minimal scenario: {} (seed {})",
        r.faults_before,
        r.faults_after,
        r.runs,
        match r.stop {
            Stop::Minimal => "a local minimum",
            Stop::Runs => "the run budget ran out",
            Stop::Time => "the time budget ran out",
        },
        r.minimal.display(),
        r.seed
    );
    Ok(())
}
