//! What set a fault off, as a fault's effect records it: its time or the
//! job event (each trigger writes its own keys), how late it fired, and,
//! when modes ran side by side, which mode set a cluster fault off and where
//! every mode was at that moment.
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A fault that fires later than this after its time or event, for any reason but a wait
/// until it can act (a restore in progress, the only broker down), makes the verdict
/// inconclusive: the scenario that ran was not the one written. The nemesis measures `late_ms` against it; the verdict judges by it.
pub const LATE_BOUND: Duration = Duration::from_secs(1);

/// What set a fault off, as its effect records it: the time or the event
/// (each trigger writes its own keys), and how late it fired.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trigger {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<u64>,
    /// A time-triggered fault that had to wait until it could act (for a restore, or for the
    /// only broker to be back): its time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferred_from_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_ms: Option<u64>,
    /// An event trigger's `after_ms`: the fault fired this long after the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<u64>,
    /// Which firing of an `every_ms` fault (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firing: Option<u32>,
    /// The old name of `checkpoint_persisted`, still written (readers of
    /// older results know it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_checkpoint_persisted: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_persisted: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_triggered: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_acked: Option<AckedAt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_notified: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_started: Option<TxnAt>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn_opened: Option<TxnAt>,
    /// Share-group source: a subtask acknowledged checkpoint n's records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged: Option<AckedAt>,
    /// A subtask reported its commits up to checkpoint n.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub committed: Option<AckedAt>,
    /// How much later than its time or event the fault fired (ms), when it
    /// was late at all. Past the rig's bound the verdict is inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_ms: Option<u64>,
    /// Why it was late (the nemesis was waiting for something).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_because: Option<String>,
    /// Modes running side by side: the one whose event or clock set this
    /// cluster fault off, and where each mode was at that moment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modes: Option<Vec<ModeView>>,
}

/// Where one mode's job was when a fault on the cluster hit every mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeView {
    pub mode: String,
    pub attempt: u32,
    /// Every worker of the attempt was up.
    pub up: bool,
    pub latest_persisted: Option<u64>,
}

impl Trigger {
    /// The checkpoint an event trigger names (None for time triggers).
    pub fn checkpoint(&self) -> Option<u64> {
        self.commit_started
            .as_ref()
            .map(|t| t.checkpoint)
            .or(self.txn_opened.as_ref().map(|t| t.checkpoint))
            .or(self.checkpoint_acked.as_ref().map(|a| a.checkpoint))
            .or(self.acknowledged.as_ref().map(|a| a.checkpoint))
            .or(self.committed.as_ref().map(|a| a.checkpoint))
            .or(self.checkpoint_persisted)
            .or(self.checkpoint_notified)
            .or(self.checkpoint_triggered)
    }

    /// The (subtask, transactional id) a commit_started or txn_opened trigger names.
    pub fn transaction(&self) -> Option<(u32, String)> {
        let t = self.commit_started.as_ref().or(self.txn_opened.as_ref())?;
        Some((t.subtask?, t.transactional_id.clone()))
    }
}

/// A subtask's event at a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckedAt {
    pub checkpoint: u64,
    pub subtask: u32,
}

/// A transaction event of a worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnAt {
    pub checkpoint: u64,
    pub subtask: Option<u32>,
    pub transactional_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<bool>,
}
