//! `sinkhole merge DIR...`: the shards of one campaign joined into one
//! matrix ([`sinkhole_rig::matrix::merge`]), or one exploration's
//! ([`sinkhole_rig::explore::merge`]); exits like `sinkhole matrix` (or `explore`)
//! with the merged verdicts, 2 when the shards do not belong together.
use std::path::PathBuf;

use anyhow::anyhow;
use sinkhole_rig::explore;
use sinkhole_rig::matrix::{self, merge};

use super::args::MergeArgs;
use super::{bad, judged_matrix, Failure};

pub fn run(a: MergeArgs) -> Result<(), Failure> {
    if a.dirs.iter().any(|d| explore::merge::is_exploration(d)) {
        return explorations(a);
    }
    let out = out_dir(&a, "matrix");
    let policy = merge::MergePolicy { fail_on_inconclusive: a.fail_on_inconclusive, fail_on_flaky: a.fail_on_flaky };
    let m = merge::merge_into(&a.dirs, &out, policy).map_err(|e| refused("matrix", e))?;
    if a.json {
        print!("{}", sinkhole_base::provenance::to_json(&m)?);
    } else {
        print!("{}", matrix::render_table(&m));
        println!("matrix: {}", sinkhole_base::rundir::MatrixDir::at(&m.dir).html().display());
    }
    judged_matrix(&m)
}

/// The shards of an exploration across hosts (`explore --seed S --shard I/N`), joined.
fn explorations(a: MergeArgs) -> Result<(), Failure> {
    if a.fail_on_inconclusive || a.fail_on_flaky {
        return Err(bad(anyhow!(
            "--fail-on-inconclusive and --fail-on-flaky are for matrices: an exploration's exit says whether it found \
             something"
        )));
    }
    let out = out_dir(&a, "explore");
    let e = explore::merge::merge_into(&a.dirs, &out).map_err(|e| refused("exploration", e))?;
    if a.json {
        print!("{}", sinkhole_base::provenance::to_json(&e)?);
    } else {
        print!("{}", explore::report::render(&e));
    }
    super::explore::judged(&e)
}

/// `--out`, else `results/<kind>-<timestamp>-merged`.
fn out_dir(a: &MergeArgs, kind: &str) -> PathBuf {
    a.out.clone().unwrap_or_else(|| {
        let now = sinkhole_base::utc::now_ms() / 1000;
        PathBuf::from("results").join(format!("{kind}-{}-merged", sinkhole_rig::run::timestamp(now)))
    })
}

/// A merge's failure: shards that are not one campaign are bad input (exit 2, every problem
/// said); a write that failed is the rig's.
fn refused(what: &str, e: Result<Vec<String>, anyhow::Error>) -> Failure {
    match e {
        Ok(problems) => bad(anyhow!("the shards do not make one {what}:\n{}", problems.join("\n"))),
        Err(e) => Failure::Failed(e),
    }
}
