//! `sinkhole schedule FILE`: a scenario's resolved fault schedule.
use anyhow::anyhow;

use super::args::ScheduleArgs;
use super::{bad, Failure};

pub fn run(a: ScheduleArgs) -> Result<(), Failure> {
    print!(
        "{}",
        sinkhole_rig::scenario::schedule::schedule_file(&a.file, a.seed, a.json).map_err(|e| bad(anyhow!(e)))?
    );
    Ok(())
}
