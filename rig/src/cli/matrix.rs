//! `sinkhole matrix`: scenarios × Kafka versions × seeds, one run per cell,
//! compared ([`sinkhole_rig::matrix`]); `--shard I/N` runs one shard of it.
use anyhow::anyhow;
use sinkhole_rig::matrix::{self, MatrixArgs, Shard};

use super::args::MatrixCmd;
use super::{bad, judged_matrix, run_failure, Failure};

pub async fn run(a: MatrixCmd) -> Result<(), Failure> {
    let MatrixCmd {
        modes,
        campaign,
        fail_fast,
        fail_on_inconclusive,
        fail_on_flaky,
        shard,
        sequential,
        fresh_clusters,
    } = a;
    let shard = match shard {
        Some(s) => Some(s.parse::<Shard>().map_err(|e| bad(anyhow!(e)))?),
        None => None,
    };
    let args = MatrixArgs {
        campaign: campaign.campaign(),
        modes,
        mutants: vec![],
        fail_fast,
        fail_on_inconclusive,
        fail_on_flaky,
        shard,
        sequential,
        no_reuse: fresh_clusters,
        on_save: None,
    };
    let m = matrix::run(args).await.map_err(run_failure)?;
    judged_matrix(&m)
}
