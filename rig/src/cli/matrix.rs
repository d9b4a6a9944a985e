//! `sinkhole matrix`: scenarios × Kafka versions × seeds, one run per cell,
//! compared ([`sinkhole_rig::matrix`]).
use sinkhole_rig::matrix::{self, MatrixArgs, Seeds};

use super::args::MatrixCmd;
use super::{judged, run_failure, Failure};

pub async fn run(a: MatrixCmd) -> Result<(), Failure> {
    let MatrixCmd { inputs, modes, kafka, seeds, seed_count, seed, results, out, json, fail_fast } = a;
    let seeds =
        if seeds.is_empty() { Seeds::Count { n: seed_count.unwrap_or(1), base: seed } } else { Seeds::List(seeds) };
    let args = MatrixArgs { inputs, modes, kafka, seeds, results, out, json, fail_fast };
    let code = matrix::run(args).await.map_err(run_failure)?;
    judged(code, "at least one cell failed (see the table)")
}
