//! `sinkhole report RUN_DIR`: report.html rendered again from a stored run
//! ([`sinkhole_rig::results::report`]).
use anyhow::anyhow;
use sinkhole_base::rundir::RunDir;

use super::args::ReportArgs;
use super::{bad, Failure};

pub fn run(a: ReportArgs) -> Result<(), Failure> {
    let run = RunDir::at(&a.dir);
    if !run.summary().exists() {
        return Err(bad(anyhow!("{}: not a run directory (no summary.json)", a.dir.display())));
    }
    let path = sinkhole_rig::results::report::write_report(&run).map_err(Failure::Failed)?;
    println!("{}", path.display());
    Ok(())
}
