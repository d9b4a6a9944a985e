//! Triggers: when a fault fires.
use serde::{Deserialize, Serialize};

/// When a fault fires. Event triggers fire at the first event that matches
/// (for checkpoint n: n itself or, if n never happens, the first later one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum When {
    /// Milliseconds after the job first started.
    AtMs(u64),
    /// Every this many milliseconds after the job first started (the first
    /// time after one period), `times` times or until the job ends.
    EveryMs(u64),
    /// When the coordinator triggers checkpoint n.
    CheckpointTriggered(u64),
    /// When subtask s acknowledges checkpoint n.
    CheckpointAcked { checkpoint: u64, subtask: u32 },
    /// After checkpoint n is persisted and before it is notified: the window
    /// where a checkpointed transaction is pre-committed but not committed.
    #[serde(alias = "after_checkpoint_persisted")]
    CheckpointPersisted(u64),
    /// After the notification of checkpoint n is sent.
    CheckpointNotified(u64),
    /// When a subtask starts committing checkpoint n (its CommitStarted event).
    CommitStarted(u64),
    /// When subtask s opens a transaction (for checkpoint n's interval if given).
    TxnOpened { subtask: u32, checkpoint: Option<u64> },
    /// Share-group source: when subtask s has acknowledged to the group the
    /// records checkpoint n's transaction carries (`before-commit`, `at-poll`:
    /// at n's barrier, n not complete yet) or carried (`after-commit`: after
    /// n's commit). With `before-commit` and `at-poll` checkpoint n waits
    /// for the fault: a kill here lands between acknowledgement and commit.
    Acknowledged { subtask: u32, checkpoint: Option<u64> },
    /// When subtask s reports every commit up to checkpoint n settled. With
    /// an `after-commit` share-group source, s acknowledges n's records only
    /// after the fault: a kill here lands between commit and acknowledgement;
    /// a report that left no record unacknowledged (an empty interval) has
    /// no such window and sets off nothing.
    Committed { subtask: u32, checkpoint: Option<u64> },
}
