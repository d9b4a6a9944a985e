//! The subject: the system under test, behind the one boundary the nemesis
//! may cross.
//!
//! Jepsen keeps its nemesis ignorant of the database it breaks: it acts on
//! nodes and processes, and learns what happened from the history. sinkhole
//! does the same with the job that writes to Kafka. There are two subjects:
//! the rig's own job ([`rig_job`]: a checkpoint coordinator in this process and
//! one `sinkhole worker` process per subtask), and a real Flink cluster running
//! Flink's `KafkaSink` ([`flink`]), which plugs in by implementing the same
//! [`Subject`] trait and sending the same [`Notice`]s, with no change to the
//! nemesis.
//!
//! What crosses the boundary, and nothing else:
//! - **the job's processes**: signals to chosen workers ([`Subject::signal`])
//!   and a whole-job outage ([`Subject::outage`]), each answered with the
//!   effect the kernel confirmed;
//! - **the job's events**, for triggers: a stream of [`Notice`]s (checkpoint
//!   triggered, acked, persisted, notified; commit started; transaction
//!   opened; a share-group source's acknowledgement; commits reported; the
//!   job up, down, ended);
//! - **hooks for the coordinator faults** ([`Subject::arm`]): drop or delay
//!   a notification, decline a checkpoint, crash in the persist→notify window.
//!
//! A notice may carry a [`Hold`]: the subject does not go past that point of
//! the checkpoint until the nemesis lets go (every clone of the hold is
//! dropped). That is how a fault lands inside a window — between persist and
//! notify, say — without the nemesis ever running inside the subject's loop:
//! the subject keeps serving heartbeats, other checkpoints and other
//! commands while one point waits.
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use nix::sys::signal::Signal;
use tokio::sync::oneshot;

pub use sinkhole_history::fault::WorkerHit;

pub mod any;
pub mod flink;
pub mod rig_job;

/// How a job ended, as its subject saw it.
#[derive(Debug, Clone)]
pub struct JobReport {
    pub job: sinkhole_history::JobOutcome,
    pub attempts: u32,
    pub checkpoints_completed: u64,
    /// Committables the sink logged and dropped (legacy's silent loss; KafkaCommitter's log lines).
    pub committables_dropped: u64,
    pub wall_ms: u64,
}

/// A moment of the job a fault can be triggered by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEvent {
    /// Attempt `attempt` started (0 is the first start, every later one a
    /// restore from `restored_from`).
    Started {
        attempt: u32,
        restored_from: Option<u64>,
    },
    /// Every worker of the attempt is up: connected, restored and writing.
    Up {
        attempt: u32,
    },
    /// The job went down (a failure was detected, or an outage began); it
    /// is not up again before the next [`JobEvent::Up`].
    Down {
        attempt: u32,
    },
    CheckpointTriggered {
        id: u64,
    },
    CheckpointAcked {
        id: u64,
        subtask: u32,
    },
    /// Checkpoint `id` is durably complete and not yet notified: the window
    /// in which a checkpointed transaction is pre-committed but not committed.
    CheckpointPersisted {
        id: u64,
    },
    CheckpointNotified {
        id: u64,
    },
    /// A worker started committing checkpoint `checkpoint`'s transaction.
    CommitStarted {
        subtask: u32,
        checkpoint: u64,
        transactional_id: String,
        restored: bool,
    },
    /// A worker opened the transaction that checkpoint `checkpoint` will carry.
    TxnOpened {
        subtask: u32,
        checkpoint: u64,
        transactional_id: String,
    },
    /// Share-group source: a worker acknowledged to the group the records of
    /// checkpoint `checkpoint`'s transaction.
    Acknowledged {
        subtask: u32,
        checkpoint: u64,
    },
    /// A worker reported every commit up to `checkpoint` settled.
    Committed {
        subtask: u32,
        checkpoint: u64,
    },
    /// The job ended (finished, failed or unsupported); nothing follows.
    Ended,
}

impl JobEvent {
    /// The checkpoint the event is about, if any.
    pub fn checkpoint(&self) -> Option<u64> {
        match self {
            JobEvent::CheckpointTriggered { id }
            | JobEvent::CheckpointAcked { id, .. }
            | JobEvent::CheckpointPersisted { id }
            | JobEvent::CheckpointNotified { id } => Some(*id),
            JobEvent::CommitStarted { checkpoint, .. }
            | JobEvent::TxnOpened { checkpoint, .. }
            | JobEvent::Acknowledged { checkpoint, .. }
            | JobEvent::Committed { checkpoint, .. } => Some(*checkpoint),
            _ => None,
        }
    }
}

/// One event as the subject reports it: when it happened (the subject's own
/// stamp, so a late reaction can be measured against it) and, where the
/// subject can wait there, a hold.
#[derive(Debug)]
pub struct Notice {
    pub at: Instant,
    pub event: JobEvent,
    pub hold: Option<Hold>,
}

/// Keeps the subject at one point of a checkpoint (see the module doc). The
/// point is released when the last clone is dropped, whatever happened: a
/// nemesis that fails cannot wedge the job.
#[derive(Debug, Clone)]
pub struct Hold(#[allow(dead_code)] Arc<oneshot::Sender<()>>);

/// The subject's side of a [`Hold`]: resolves once every clone is dropped.
pub type Released = oneshot::Receiver<()>;

impl Hold {
    pub fn new() -> (Hold, Released) {
        let (tx, rx) = oneshot::channel();
        (Hold(Arc::new(tx)), rx)
    }
}

/// What the subject reports of an outage it began.
#[derive(Debug)]
pub struct Outage {
    /// The attempt that was running when it began.
    pub attempt: u32,
    pub workers: Vec<WorkerHit>,
    /// Resolves when the job is deployed again; closed if the job ended first.
    pub ended: oneshot::Receiver<OutageEnd>,
}

/// How an outage ended.
#[derive(Debug, Clone, PartialEq)]
pub struct OutageEnd {
    pub down_ms: u64,
    pub restored_from: Option<u64>,
}

/// A coordinator fault to arm.
#[derive(Debug, Clone, PartialEq)]
pub enum Hook {
    /// The "checkpoint complete" notification of `checkpoint` (or the first
    /// later one; `None`: the next) is not sent to `subtasks`.
    DropNotification { checkpoint: Option<u64>, subtasks: Vec<u32> },
    /// That notification reaches `subtasks` `delay_ms` late.
    DelayNotification { checkpoint: Option<u64>, subtasks: Vec<u32>, delay_ms: u64 },
    /// `subtasks` decline `checkpoint` (or the first later one): it is aborted.
    DeclineCheckpoint { checkpoint: Option<u64>, subtasks: Vec<u32> },
    /// The coordinator crashes now — in checkpoint `window`'s persist→notify
    /// window when given: every worker is killed and the job restores from
    /// the store.
    Crash { window: Option<u64> },
}

/// What an armed hook did, once it acted (or why it did not).
#[derive(Debug, Clone, PartialEq)]
pub enum HookEnd {
    /// A notification was withheld from these subtasks.
    Dropped {
        checkpoint: u64,
        withheld_from: Vec<u32>,
    },
    /// Late notifications: (subtask, sent, why not).
    Delayed {
        checkpoint: u64,
        late: Vec<(u32, bool, Option<String>)>,
    },
    Declined {
        checkpoint: u64,
        by: u32,
        aborted: bool,
    },
    /// The crash's checkpoint was (not) notified.
    Crashed {
        checkpoint: u64,
        notified: bool,
    },
    /// The job ended before the hook could act (the reason, as recorded).
    NotActed {
        text: String,
    },
}

/// What [`Subject::arm`] answers at once.
#[derive(Debug)]
pub struct Armed {
    /// The checkpoint the hook acts on, as resolved now (None: the next one).
    pub checkpoint: Option<u64>,
    /// Workers hit right away (a crash kills them all), with the attempt.
    pub workers: Vec<WorkerHit>,
    pub attempt: u32,
    /// Resolves when the hook acted.
    pub acted: oneshot::Receiver<HookEnd>,
}

/// The system under test, as the nemesis reaches it.
pub trait Subject: Send + Sync {
    /// How many workers there are to aim at: ids `0..workers()` in a worker
    /// fault's `target` (the rig's job: its subtasks).
    fn workers(&self) -> u32;
    /// The transactional id that carries checkpoint `checkpoint`'s records of
    /// subtask `subtask` (Flink's INCREMENTING naming).
    fn transactional_id(&self, subtask: u32, checkpoint: u64) -> String;
    /// The transactional id subtask `subtask` writes under now.
    fn open_transaction(&self, subtask: u32) -> impl Future<Output = String> + Send;
    /// Sends `signal` to these workers (SIGKILL, SIGSTOP, SIGCONT) on behalf
    /// of fault `by`, and reports what each one did. A kill makes the job
    /// fail over as a crash would.
    fn signal(&self, workers: Vec<u32>, signal: Signal, by: String) -> impl Future<Output = Vec<WorkerHit>> + Send;
    /// SIGCONT to exactly these (worker, pid): the processes a pause froze,
    /// not their successors if the job failed over meanwhile.
    fn resume(&self, frozen: Vec<(u32, u32)>, by: String) -> impl Future<Output = Vec<WorkerHit>> + Send;
    /// Kills every worker and keeps the job down for `down_ms` before it
    /// restores from its latest checkpoint.
    fn outage(&self, down_ms: u64, by: String) -> impl Future<Output = Result<Outage, String>> + Send;
    /// Arms a coordinator fault; `Err` when this subject has no such hook.
    fn arm(&self, hook: Hook, by: String) -> impl Future<Output = Result<Armed, String>> + Send;
}
