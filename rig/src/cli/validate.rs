//! `sinkhole validate FILE…`: scenario files checked without running them.
use anyhow::anyhow;

use super::args::ValidateArgs;
use super::{bad, Failure};

pub fn run(a: ValidateArgs) -> Result<(), Failure> {
    let (out, ok) = sinkhole_rig::scenario::schedule::validate_files(&a.files, a.json);
    print!("{out}");
    if ok {
        Ok(())
    } else {
        Err(bad(anyhow!("invalid scenario file(s)")))
    }
}
