//! `sinkhole worker` (hidden): one subtask of a job, started by the runner
//! ([`sinkhole_workloads::worker`]).
use anyhow::Context;

use super::args::WorkerArgs;
use super::Failure;

pub async fn run(a: WorkerArgs) -> Result<(), Failure> {
    let text = std::fs::read_to_string(&a.config).with_context(|| format!("reading {}", a.config.display()))?;
    let cfg: sinkhole_model::WorkerConfig =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", a.config.display()))?;
    sinkhole_workloads::worker::run(cfg, &a.control).await?;
    Ok(())
}
