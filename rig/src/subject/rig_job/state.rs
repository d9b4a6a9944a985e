//! The coordinator's state: every value the job's loop owns, in one place.
//!
//! The loop's behaviour is split by concern — [`super::coordinator`] (the
//! loop, worker messages, checkpoints), [`super::attempt`] (deploying and
//! watching an attempt, failover), [`super::hooks`] (what the nemesis asks) —
//! and each file adds methods to [`Coordinator`]; the data they share lives
//! here, so those files depend on this one and never on each other.
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sinkhole_model::SubtaskState;
use sinkhole_workloads::control::ChannelWriter;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::checkpoints::CheckpointStore;
use super::control::{Conn, Inbound};
use super::phase::Phase;
use super::workers::Launcher;
use super::{Command, JobConfig};
use crate::subject::{Hook, HookEnd, Notice, OutageEnd};
use sinkhole_history::JobOutcome;

/// A send to a worker that takes longer than this means the worker is gone
/// or wedged; the connection is then out of step and treated as closed.
pub(super) const SEND_TIMEOUT: Duration = Duration::from_secs(5);
/// How long workers get to exit after `Stop`.
pub(super) const STOP_TIMEOUT: Duration = Duration::from_secs(30);
pub(super) const TICK: Duration = Duration::from_millis(10);

/// A point of a checkpoint the nemesis can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Point {
    /// The acks of checkpoint n are taken once its trigger is released.
    Acks(u64),
    /// Checkpoint n completes once every ack of it is released.
    Complete(u64),
    /// Checkpoint n is notified once its persist is released.
    Notify(u64),
    /// `after-commit` share-group source: subtask s of attempt a is told to
    /// acknowledge the input of checkpoint n once its commit report is released.
    AckInput { attempt: u32, subtask: u32, id: u64 },
}

pub struct Coordinator<L: Launcher> {
    pub(super) cfg: JobConfig,
    pub(super) launcher: L,
    /// The cluster's bootstrap servers as last published (read at each deploy).
    pub(super) bootstrap: watch::Receiver<Vec<String>>,
    pub(super) history: sinkhole_history::Writer,
    pub(super) store: CheckpointStore,
    pub(super) socket: PathBuf,
    pub(super) start: Instant,
    pub(super) inbox: mpsc::UnboundedReceiver<Inbound>,
    pub(super) inbox_tx: mpsc::UnboundedSender<Inbound>,
    pub(super) conn_counter: Arc<AtomicU64>,
    /// Connections numbered below this belong to killed attempts.
    pub(super) min_conn: u64,
    pub(super) conns: HashMap<u64, Conn>,
    pub(super) accept_task: Option<JoinHandle<()>>,
    pub(super) phase: Phase,
    pub(super) attempt: Attempt,
    pub(super) failures: u32,
    pub(super) next_id: u64,
    pub(super) pending: BTreeMap<u64, Pending>,
    pub(super) next_trigger: Option<Instant>,
    pub(super) final_id: Option<u64>,
    pub(super) final_complete: Option<(u64, Instant)>,
    pub(super) completed: u64,
    pub(super) latest_complete: Option<u64>,
    pub(super) job_started: Option<Instant>,
    pub(super) committables_dropped: u64,
    pub(super) outcome: Option<JobOutcome>,

    // --- the nemesis' side of the boundary ---
    pub(super) commands: mpsc::UnboundedReceiver<Command>,
    pub(super) commands_open: bool,
    pub(super) notices: mpsc::UnboundedSender<Notice>,
    pub(super) released_tx: mpsc::UnboundedSender<Point>,
    pub(super) released: mpsc::UnboundedReceiver<Point>,
    /// Holds outstanding, per point.
    pub(super) held: BTreeMap<Point, usize>,
    /// Persisted checkpoints not yet notified, in order, with the attempt
    /// that persisted them.
    pub(super) to_notify: VecDeque<(u64, u32)>,
    pub(super) outage: Option<OutageState>,
    pub(super) hooks: Vec<ArmedHook>,
    pub(super) delayed: Vec<Late>,
    /// A crash armed in this checkpoint's persist→notify window.
    pub(super) crash: Option<(u64, oneshot::Sender<HookEnd>)>,
}

/// One subtask in the current attempt.
pub(super) struct Slot {
    pub pid: u32,
    pub launched: Instant,
    pub conn: Option<u64>,
    pub writer: Option<ChannelWriter>,
    pub ready: bool,
    pub last_heard: Instant,
    pub end_of_input: bool,
    pub committed: u64,
    pub next_seq: u64,
    /// When the worker exited, and how.
    pub exit: Option<(Instant, String)>,
    /// When its control connection closed, and why.
    pub closed: Option<(Instant, String)>,
    /// The coordinator asked for the exit (Stop, or the failover kill).
    pub expected_exit: bool,
    /// A fault killed it (between persist and notify: no notification).
    pub killed_by_fault: bool,
    /// `after-commit` share-group source: the records its last commit report
    /// left unacknowledged, by checkpoint.
    pub unacknowledged: Option<(u64, u64)>,
}

pub(super) struct Attempt {
    pub number: u32,
    pub restored_from: Option<u64>,
    pub slots: Vec<Slot>,
    pub all_ready_at: Option<Instant>,
    pub last_triggered: Option<u64>,
}

impl Attempt {
    pub fn empty() -> Attempt {
        Attempt { number: 0, restored_from: None, slots: vec![], all_ready_at: None, last_triggered: None }
    }
}

/// A checkpoint waiting for its acks.
pub(super) struct Pending {
    pub triggered: Instant,
    pub acks: Vec<Option<SubtaskState>>,
    /// Acks that arrived while the trigger was held: taken at its release.
    pub waiting: Vec<(u32, Instant, SubtaskState)>,
}

impl Pending {
    pub fn new(parallelism: usize) -> Pending {
        Pending { triggered: Instant::now(), acks: vec![None; parallelism], waiting: vec![] }
    }
}

/// An outage in progress: the job stays down `planned_ms` after its failover.
pub(crate) struct OutageState {
    pub since: Instant,
    pub planned_ms: u64,
    pub ended: oneshot::Sender<OutageEnd>,
}

/// An armed notification or decline hook, waiting for what it acts on.
pub(crate) struct ArmedHook {
    pub hook: Hook,
    pub by: String,
    /// The checkpoint acted on (or the first later one); None: the next.
    pub checkpoint: Option<u64>,
    /// Taken when it acted.
    pub acted: Option<oneshot::Sender<HookEnd>>,
    /// A late notification still owed: the hook ends when all are sent.
    pub owed: usize,
    pub late: Vec<(u32, bool, Option<String>)>,
}

impl ArmedHook {
    pub fn applies_to(&self, id: u64) -> bool {
        self.checkpoint.is_none_or(|c| c <= id)
    }

    pub fn subtasks(&self) -> &[u32] {
        match &self.hook {
            Hook::DropNotification { subtasks, .. }
            | Hook::DelayNotification { subtasks, .. }
            | Hook::DeclineCheckpoint { subtasks, .. } => subtasks,
            Hook::Crash { .. } => &[],
        }
    }

    /// Whether this hook takes the notification of `id`: `Some(None)` to drop
    /// it, `Some(Some(ms))` to send it that late. The final checkpoint's
    /// notification is never dropped: nothing would follow to cover it.
    pub fn claims_notification(&mut self, id: u64, is_final: bool) -> Option<Option<u64>> {
        if self.acted.is_none() || self.owed > 0 || !self.applies_to(id) {
            return None;
        }
        match self.hook {
            Hook::DropNotification { .. } if !is_final => Some(None),
            Hook::DelayNotification { delay_ms, .. } => Some(Some(delay_ms)),
            _ => None,
        }
    }
}

/// A notification held back by a delay hook.
pub(crate) struct Late {
    pub due: Instant,
    pub subtask: u32,
    pub checkpoint: u64,
    pub attempt: u32,
    pub hook: usize,
}
