//! `sinkhole explain RUN [--mode M]`: the causal story of every anomaly of a stored run, in
//! Markdown on stdout ([`sinkhole_rig::story`]). No cluster needed: it reads the run
//! directory alone.
use std::path::PathBuf;

use clap::Args;
use sinkhole_base::rundir::RunDir;
use sinkhole_rig::story;

use super::{bad, Failure};

#[derive(Args)]
pub struct ExplainArgs {
    /// The run's results directory (what `sinkhole run` printed after `results:`).
    pub dir: PathBuf,
    /// Only this mode's story (default: every judged mode's).
    #[arg(long)]
    pub mode: Option<String>,
    /// Write the Markdown to this file instead of stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(a: ExplainArgs) -> Result<(), Failure> {
    let stories = story::explain(&RunDir::at(&a.dir), a.mode.as_deref()).map_err(|e| {
        if e.is_bad_input() {
            bad(e)
        } else {
            Failure::Failed(e.into())
        }
    })?;
    let text = stories.iter().map(story::render::markdown).collect::<Vec<_>>().join("\n");
    match a.out {
        Some(p) => {
            std::fs::write(&p, &text).map_err(|e| Failure::Failed(anyhow::anyhow!("writing {}: {e}", p.display())))?;
            println!("{}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}
