//! `sinkhole explore SCENARIO`: random fault schedules over one scenario,
//! the failures shrunk and kept as findings ([`sinkhole_rig::explore`]).
use sinkhole_rig::explore::{self, ExploreArgs};
use sinkhole_rig::results::exit;

use super::args::ExploreCmd;
use super::{run_failure, Failure};

pub async fn run(a: ExploreCmd) -> Result<(), Failure> {
    let ExploreCmd { scenario, runs, time, seed, results, modes, shrink_runs } = a;
    let args = ExploreArgs { scenario, runs, time, seed, results, modes, shrink_runs };
    let e = explore::explore(args).await.map_err(run_failure)?;
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
