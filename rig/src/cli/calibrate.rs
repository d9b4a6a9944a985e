//! `sinkhole calibrate`: the mutants through the scenario library, the
//! detection matrix ([`sinkhole_rig::calibrate`]).
use sinkhole_rig::calibrate::{self, CalibrateArgs};
use sinkhole_rig::results::exit;

use super::args::CalibrateCmd;
use super::{run_failure, Failure};

pub async fn run(a: CalibrateCmd) -> Result<(), Failure> {
    let args = CalibrateArgs { campaign: a.campaign.campaign(), mutants: a.mutants };
    let code = calibrate::run(args).await.map_err(run_failure)?;
    match code {
        exit::OK => Ok(()),
        exit::FAILED => Err(Failure::Judged {
            code,
            message:
                "the library showed no power against a mutant (no scenario caught it), or it flagged a faithful mode"
                    .into(),
        }),
        _ => {
            Err(Failure::Judged { code, message: "the rig itself failed in at least one cell (see the table)".into() })
        }
    }
}
