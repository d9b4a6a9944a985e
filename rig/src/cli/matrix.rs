//! `sinkhole matrix`: scenarios × Kafka versions × seeds, one run per cell,
//! compared ([`sinkhole_rig::matrix`]); `--shard I/N` runs one shard of it.
use anyhow::anyhow;
use sinkhole_rig::matrix::{self, MatrixArgs, Seeds, Shard};
use sinkhole_rig::results::exit::Policy;

use super::args::MatrixCmd;
use super::{bad, judged, run_failure, Failure};

pub async fn run(a: MatrixCmd) -> Result<(), Failure> {
    let MatrixCmd {
        inputs,
        modes,
        kafka,
        seeds,
        seed_count,
        seed,
        results,
        out,
        json,
        fail_fast,
        fail_on_inconclusive,
        shard,
        sequential,
        fresh_clusters,
    } = a;
    let seeds =
        if seeds.is_empty() { Seeds::Count { n: seed_count.unwrap_or(1), base: seed } } else { Seeds::List(seeds) };
    let shard = match shard {
        Some(s) => Some(s.parse::<Shard>().map_err(|e| bad(anyhow!(e)))?),
        None => None,
    };
    let args = MatrixArgs {
        inputs,
        modes,
        mutants: vec![],
        kafka,
        seeds,
        results,
        out,
        json,
        fail_fast,
        fail_on_inconclusive,
        shard,
        sequential,
        no_reuse: fresh_clusters,
        on_save: None,
    };
    let code = matrix::run(args).await.map_err(run_failure)?;
    judged(code, Policy { fail_on_inconclusive }, "cell")
}
