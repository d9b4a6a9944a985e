//! `sinkhole check RESULTS_DIR`: the checker again, offline, on a stored run
//! ([`sinkhole_rig::results::recheck`]), then the summary on stdout as
//! `sinkhole run` prints it.
use sinkhole_rig::results::exit::Policy;
use sinkhole_rig::results::recheck::{self, RecheckError};

use super::args::CheckArgs;
use super::{bad, judged, print_summary, Failure};

pub fn run(a: CheckArgs) -> Result<(), Failure> {
    let policy = Policy { fail_on_inconclusive: a.fail_on_inconclusive };
    let summary =
        recheck::check_results(&a.dir, policy, &mut |w| eprintln!("sinkhole: warning: {w}")).map_err(|e| match e {
            RecheckError::BadInput(e) => bad(e),
            RecheckError::Failed(e) => Failure::Failed(e),
        })?;
    print_summary(&summary, a.json)?;
    judged(summary.exit_code, policy, "mode")
}
