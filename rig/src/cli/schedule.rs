//! `sinkhole schedule FILE`: a scenario's resolved fault schedule.
use std::path::Path;

use anyhow::anyhow;
use sinkhole_rig::scenario::{self, schedule};

use super::args::ScheduleArgs;
use super::{bad, Failure};

pub fn run(a: ScheduleArgs) -> Result<(), Failure> {
    print!("{}", schedule_file(&a.file, a.seed, a.json).map_err(|e| bad(anyhow!(e)))?);
    Ok(())
}

/// The resolved fault list (text, or the JSON of `schedule.json`) for `seed`,
/// else a random one. A bad file is an `Err` with every problem.
fn schedule_file(file: &Path, seed: Option<u64>, json: bool) -> Result<String, String> {
    let s = scenario::load(file).map_err(|e| e.render())?;
    let seed = seed.unwrap_or_else(rand::random);
    let r = schedule::resolve(&s, seed);
    if json {
        sinkhole_rig::provenance::to_json(&r).map_err(|e| e.to_string())
    } else {
        Ok(schedule::render(&r))
    }
}
