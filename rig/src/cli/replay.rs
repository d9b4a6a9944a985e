//! `sinkhole replay FOUND.yaml`: a saved finding run again with its seed, the tries that
//! fail the same way counted ([`sinkhole_rig::explore::replay`]).
use sinkhole_rig::explore::replay::{self, ReplayArgs};
use sinkhole_rig::results::exit;

use super::args::ReplayCmd;
use super::{run_failure, Failure};

pub async fn run(a: ReplayCmd) -> Result<(), Failure> {
    let ReplayCmd { file, tries, seed, results, keep_data } = a;
    let r = replay::replay(ReplayArgs { file, tries, seed, results, keep_data }).await.map_err(run_failure)?;
    if r.replay.every_time() {
        return Ok(());
    }
    Err(Failure::Judged {
        code: exit::FAILED,
        message: format!(
            "{} of {} tries showed {} failing with {} again ({}): not every time",
            r.replay.reproduced,
            r.replay.tries,
            r.mode,
            r.anomaly,
            r.replay.words()
        ),
    })
}
