//! `sinkhole merge DIR...`: the shards of one campaign joined into one
//! matrix ([`sinkhole_rig::matrix::merge`]); exits like `sinkhole matrix`
//! with the merged verdicts, 2 when the shards do not belong together.
use std::path::PathBuf;

use anyhow::anyhow;
use sinkhole_rig::matrix::{self, merge};

use super::args::MergeArgs;
use super::{bad, judged_matrix, Failure};

pub fn run(a: MergeArgs) -> Result<(), Failure> {
    let out = a.out.clone().unwrap_or_else(|| {
        let now = sinkhole_base::utc::now_ms() / 1000;
        PathBuf::from("results").join(format!("matrix-{}-merged", sinkhole_rig::run::timestamp(now)))
    });
    let policy = merge::MergePolicy { fail_on_inconclusive: a.fail_on_inconclusive, fail_on_flaky: a.fail_on_flaky };
    let m = merge::merge_into(&a.dirs, &out, policy).map_err(|e| match e {
        Ok(problems) => bad(anyhow!("the shards do not make one matrix:\n{}", problems.join("\n"))),
        Err(e) => Failure::Failed(e),
    })?;
    if a.json {
        print!("{}", sinkhole_base::provenance::to_json(&m)?);
    } else {
        print!("{}", matrix::render_table(&m));
        println!("matrix: {}", sinkhole_base::rundir::MatrixDir::at(&m.dir).html().display());
    }
    judged_matrix(&m)
}
