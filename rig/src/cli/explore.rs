//! `sinkhole explore SCENARIO`: random fault schedules over one scenario,
//! the failures shrunk and kept as findings ([`sinkhole_rig::explore`]).
use sinkhole_rig::explore::{self, ExploreArgs};
use sinkhole_rig::results::exit;

use super::args::ExploreCmd;
use super::{bad, run_failure, Failure};
use anyhow::anyhow;

pub async fn run(a: ExploreCmd) -> Result<(), Failure> {
    let ExploreCmd { scenario, runs, time, seed, results, modes, shrink_runs, until_found, keep_data, replay, shard } =
        a;
    let shard = shard.map(|s| s.parse()).transpose().map_err(|e: String| bad(anyhow!(e)))?;
    let args =
        ExploreArgs { scenario, runs, time, seed, results, modes, shrink_runs, until_found, keep_data, replay, shard };
    let e = explore::explore(args).await.map_err(run_failure)?;
    judged(&e)
}

/// Exit 1 with the count when the campaign (or the merged shards) found something.
pub fn judged(e: &explore::Explored) -> Result<(), Failure> {
    if e.findings.is_empty() {
        Ok(())
    } else {
        Err(Failure::Judged {
            code: exit::FAILED,
            message: format!(
                "{} finding(s): a mode failed its expectation under a random schedule (found/ in {})",
                e.findings.len(),
                e.dir.display()
            ),
        })
    }
}
