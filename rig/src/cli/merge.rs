//! `sinkhole merge DIR...`: the shards of one campaign joined into one
//! matrix ([`sinkhole_rig::matrix::merge`]); exits like `sinkhole matrix`
//! with the merged verdicts, 2 when the shards do not belong together.
use std::path::PathBuf;

use anyhow::anyhow;
use sinkhole_rig::matrix::{self, merge};

use super::args::MergeArgs;
use super::{bad, judged, Failure};

pub fn run(a: MergeArgs) -> Result<(), Failure> {
    let out = a.out.clone().unwrap_or_else(|| {
        let now = sinkhole_rig::utc::now_ms() / 1000;
        PathBuf::from("results").join(format!("matrix-{}-merged", sinkhole_rig::run::timestamp(now)))
    });
    let m = merge::merge_into(&a.dirs, &out, a.fail_on_inconclusive).map_err(|e| match e {
        Ok(problems) => bad(anyhow!("the shards do not make one matrix:\n{}", problems.join("\n"))),
        Err(e) => Failure::Failed(e),
    })?;
    if a.json {
        print!("{}", sinkhole_rig::provenance::to_json(&m)?);
    } else {
        print!("{}", matrix::render_table(&m));
        println!("matrix: {}", m.dir.join(matrix::HTML_FILE).display());
    }
    judged(m.exit_code, m.policy(), "cell")
}
