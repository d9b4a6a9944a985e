//! The worker process: one subtask of the job. STUB: the contract; the
//! implementation replaces the `todo!()`.
use std::path::Path;

use crate::model::WorkerConfig;

/// Runs one subtask attempt until the coordinator says Stop (Ok) or the
/// subtask fails (Err: the process exits non-zero and the job fails over).
pub async fn run(_config: WorkerConfig, _control: &Path) -> anyhow::Result<()> {
    todo!()
}
