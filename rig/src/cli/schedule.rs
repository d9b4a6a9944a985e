//! `sinkhole schedule FILE`: a scenario's resolved fault schedule, and the premises each mode's
//! expectation rests on under it.
use std::path::Path;

use anyhow::anyhow;
use serde::Serialize;
use sinkhole_scenario::premise::defaults::{self, ModePremises};
use sinkhole_scenario::schedule::{self, Resolved};

use super::args::ScheduleArgs;
use super::{bad, Failure};

pub fn run(a: ScheduleArgs) -> Result<(), Failure> {
    print!("{}", schedule_file(&a.file, a.seed, a.json).map_err(|e| bad(anyhow!(e)))?);
    Ok(())
}

/// `--json`: what `schedule.json` holds, and the premises.
#[derive(Serialize)]
struct WithPremises<'a> {
    #[serde(flatten)]
    schedule: &'a Resolved,
    premises: Vec<ModePremises>,
}

/// The resolved fault list (text, or the JSON of `schedule.json`) for `seed`,
/// else a random one, then each mode's premises as a run with that seed
/// resolves them. A bad file is an `Err` with every problem.
fn schedule_file(file: &Path, seed: Option<u64>, json: bool) -> Result<String, String> {
    let s = sinkhole_scenario::load(file).map_err(|e| e.render())?;
    let seed = seed.unwrap_or_else(rand::random);
    let r = schedule::resolve(&s, seed);
    let premises = defaults::as_planned(&s, Some(&r.faults));
    if json {
        sinkhole_base::provenance::to_json(&WithPremises { schedule: &r, premises }).map_err(|e| e.to_string())
    } else {
        Ok(schedule::render(&r) + &defaults::render(&premises))
    }
}
