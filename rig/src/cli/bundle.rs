//! `sinkhole bundle RUN [--out FILE]`: a judged run as one small archive for a bug report
//! ([`sinkhole_rig::bundle`]): the resolved scenario, the seed, the versions and broker
//! configs (secrets redacted), each mode's story and verdict, the log excerpts the stories
//! cite, and the command that replays it.
use std::path::PathBuf;

use clap::Args;
use sinkhole_base::rundir::RunDir;
use sinkhole_rig::bundle;

use super::{bad, Failure};

#[derive(Args)]
pub struct BundleArgs {
    /// The run's results directory (what `sinkhole run` printed after `results:`).
    pub dir: PathBuf,
    /// Where to write the archive (default: RUN/bundle-<run-id>.tar.gz).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(a: BundleArgs) -> Result<(), Failure> {
    let b = bundle::write(&RunDir::at(&a.dir), a.out.as_deref()).map_err(|e| {
        if e.is_bad_input() {
            bad(e)
        } else {
            Failure::Failed(e.into())
        }
    })?;
    println!("{} ({} bytes, {} files)", b.path.display(), b.bytes, b.files.len());
    if b.redacted > 0 {
        println!("{} secret value(s) redacted from the configs", b.redacted);
    }
    for l in &b.left_out {
        println!("left out (size): {l}");
    }
    println!("replay, from the unpacked bundle: {}", b.replay);
    Ok(())
}
