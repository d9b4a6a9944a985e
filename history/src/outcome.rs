//! What one mode's run came to: the job's end and every fault's record —
//! the facts the verdict judges beside the checker's counts.
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::fault::FaultRecord;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum JobOutcome {
    /// Every subtask reached the end of input and every committable was settled.
    Finished,
    /// The restart limit was exceeded, or the job could not go on.
    Failed { reason: String },
    /// The broker cannot run this mode (the exact error, e.g. KeepPreparedTxn → UNSUPPORTED_VERSION).
    Unsupported { error: String },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModeOutcome {
    pub job: JobOutcome,
    pub attempts: u32,
    pub checkpoints_completed: u64,
    pub history: PathBuf,
    pub faults: Vec<FaultRecord>,
    /// Committables the sink logged and dropped (legacy's silent loss).
    pub committables_dropped: u64,
    pub wall_ms: u64,
}
