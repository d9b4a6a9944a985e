//! `reached`: the protocol states a mode's run put its sink in, read from its history.
//!
//! Why: an exploration's coverage of fault kind × trigger says which faults were *tried*. What
//! a sink is tested on is the situation those faults put its job in — a restore that meets
//! two pending committables, a commit cut off by a kill, a transaction open while its
//! coordinator went away — and only the history says which happened: the same kill at
//! `checkpoint_persisted` restores one committable in one run and two in another. A sink that
//! forgets the later of several restored committables passes every run that never restores
//! two, however many faults those runs tried. Jepsen judges a generator the same way, by the
//! histories it produced rather than the operations it asked for.
//!
//! Each [`State`] is a situation a Flink-style two-phase sink (Flink's `KafkaWriter` and
//! `KafkaCommitter` under the `CommitterOperator`, driven by the `CheckpointCoordinator`) must
//! get right; the table below names it once, with what in the history shows it and why a bug
//! would need it (docs/GUIDE.md's table of states is held to it). [`reached`] is one pass over
//! one mode's events, the nemesis' fault records among them (`sinkhole_history::fault`), with
//! no I/O: `sinkhole explore` reads each run's histories and keeps the campaign's coverage of
//! states beside its coverage of faults.
use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use sinkhole_history::fault::{Aimed, End, Start};
use sinkhole_model::{CommitOutcome, Committable, Event, EventKind, Source};
use sinkhole_scenario::{Family, FaultKind};

/// The table of states: variant, name, what in the history shows it, why it matters.
macro_rules! states {
    ($($v:ident => $name:literal, $when:literal, $why:literal;)*) => {
        /// A protocol state a run can put a sink in (the module doc; docs/GUIDE.md, "Protocol states").
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum State { $($v,)* }

        impl State {
            /// Every state, in the table's order.
            pub const ALL: &'static [State] = &[$(State::$v),*];

            /// Its stable kebab-case name, as explore.json and the docs write it.
            pub fn name(self) -> &'static str {
                match self { $(State::$v => $name,)* }
            }

            /// What in the history shows it.
            pub fn when(self) -> &'static str {
                match self { $(State::$v => $when,)* }
            }

            /// Why a sink's bug would need it.
            pub fn why(self) -> &'static str {
                match self { $(State::$v => $why,)* }
            }
        }
    };
}

states! {
    RestoreFresh => "restore-fresh",
        "an attempt after the first starts with no checkpoint to restore from",
        "nothing to commit, yet the first attempt's transactions are open under ids no checkpoint names: the restore must find and abort them from offset 0";
    RestorePending0 => "restore-pending-0",
        "a subtask restores a checkpoint whose state holds no committable",
        "a restore with nothing to commit (a one-phase sink's every restore): a sink that assumes a committable, or commits a stale one, shows it here";
    RestorePending1 => "restore-pending-1",
        "a subtask restores a checkpoint whose state holds one committable",
        "the ordinary recovery commit: the restored transaction committed (by injected producer id and epoch, or KeepPreparedTxn) before the writer opens";
    RestorePending2 => "restore-pending-2",
        "a subtask restores a checkpoint whose state holds two committables",
        "several pending checkpoints in one state: a restore that commits only one of them (the oldest, or the newest) leaves the other prepared for good";
    RestorePending3Plus => "restore-pending-3+",
        "a subtask restores a checkpoint whose state holds three committables or more",
        "a longer backlog of pending checkpoints, where order and off-by-one mistakes between them show";
    SeveralRestores => "several-restores",
        "a third attempt starts (two failovers or more)",
        "a restore of a restore: committables carried through two failovers, the ids and epochs of two earlier incarnations to fence";
    FencedOnRestore => "fenced-on-restore",
        "an attempt after the first fences an earlier incarnation: a lingering transaction aborted, an InitProducerId answered with an epoch above 0, or a restored committable dropped as PRODUCER_FENCED or INVALID_PRODUCER_EPOCH",
        "the earlier attempt's producers must be fenced and its open transactions aborted before the new one writes; a sink that skips or mis-scopes the probe leaves them open, or fences its own restored commit";
    LingeringAtRestore => "lingering-at-restore",
        "an attempt after the first restores from checkpoint c while the attempt before it had left a transaction of a checkpoint past c + 1 open, written in for 100 ms or more before its worker exited",
        "the restore reopens c + 1 itself (its InitProducerId fences that one), so only its probe aborts the later ones: a sink that skips or stops the probe early leaves a transaction holding records open, and read_committed readers of its partitions stall until the broker times it out (the mutant skip-lingering-abort)";
    CheckpointAbortedAtFailover => "checkpoint-aborted-at-failover",
        "a pending checkpoint is aborted because the job fails over",
        "its pre-committed transactions belong to no complete checkpoint: the restore must abort them, never commit them";
    CheckpointDeclined => "checkpoint-declined",
        "a checkpoint is aborted while the job keeps running and no later one subsumed it (a subtask declined it, or it expired)",
        "the subtask keeps that transaction's committable for the next checkpoint; a sink that drops or commits it on the abort loses or exposes it";
    ConcurrentPending2 => "concurrent-pending-2",
        "two checkpoints are triggered and not yet complete at once",
        "overlapping checkpoints, each with a transaction of its own: a sink that keys its transactions by anything but the checkpoint confuses them";
    ConcurrentPending3Plus => "concurrent-pending-3+",
        "three checkpoints or more are triggered and not yet complete at once",
        "a deeper overlap, where a notification commits several checkpoints and a failover aborts several";
    NotificationLost => "notification-lost",
        "a persisted checkpoint is not notified before a later one is persisted (a crash or a held notification), or a notification is withheld from a subtask",
        "Flink's committer commits every checkpoint up to the one notified, or commits on restore; a sink that commits only what it is told about loses the other";
    CommittablesCarried => "committables-carried",
        "a subtask pre-commits a checkpoint while an earlier checkpoint's committable is not yet committed",
        "one notification then commits several transactions, in order: a sink that commits only the newest forgets the older";
    CommitRetried => "commit-retried",
        "a commit's EndTxn is retried after a retriable error (the worker's request counts)",
        "a retriable commit error must be retried, neither taken as done nor given up (the mutants assume-committed and discard-retriable)";
    CommitFailedOver => "commit-failed-over",
        "a commit fails with an error the sink cannot settle, and the job fails over",
        "the restore must commit the same transaction again, whatever the broker made of the failed attempt";
    CommitDropped => "commit-dropped",
        "a committable is logged and dropped (PRODUCER_FENCED, INVALID_TXN_STATE, UNKNOWN_PRODUCER_ID)",
        "Flink's committer's silent path: the data is lost unless the broker had committed the transaction already, so a drop must only follow such a commit";
    CommitInFlightAtKill => "commit-in-flight-at-kill",
        "a worker exits between the start of a commit and its outcome",
        "the commit's outcome is unknown (done on the broker or not): the restore must commit it again, and a repeated EndTxn must not be taken for a loss";
    RestoredCommitAfterTimeout => "restored-commit-after-timeout",
        "a restored commit starts longer than the transaction timeout after the transaction was pre-committed",
        "FLIP-319's window: without KIP-939 the broker has aborted the transaction by then; with Enable2Pc it must still be there and be committed";
    TxnOpenAcrossBrokerFault => "txn-open-across-broker-fault",
        "a transaction opened before a broker fault fired is committed or aborted after it",
        "the transaction's state and its partitions' markers are recovered from the logs in between: its commit must survive the reload";
    CoordinatorMove => "coordinator-move",
        "the same, with the fault aimed at the transaction coordinator (the role looked up when the fault fired)",
        "the transaction's coordinator fails over: NOT_COORDINATOR, a new lookup, the transaction state loaded again, possibly on another broker";
}

impl State {
    /// The state of that name.
    pub fn parse(s: &str) -> Option<State> {
        State::ALL.iter().copied().find(|x| x.name() == s)
    }

    /// The restore state of a subtask whose state held `k` committables.
    pub fn restore_pending(k: usize) -> State {
        match k {
            0 => State::RestorePending0,
            1 => State::RestorePending1,
            2 => State::RestorePending2,
            _ => State::RestorePending3Plus,
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for State {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for State {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<State, D::Error> {
        let name = String::deserialize(d)?;
        State::parse(&name).ok_or_else(|| {
            let all: Vec<&str> = State::ALL.iter().map(|s| s.name()).collect();
            serde::de::Error::custom(format!("unknown protocol state `{name}`, expected one of {}", all.join(", ")))
        })
    }
}

/// The states one mode's history shows, in the table's order. `transaction_timeout_ms`: the
/// run's transaction timeout (`restored-commit-after-timeout` is never reached without it).
pub fn reached(events: &[Event], transaction_timeout_ms: Option<u64>) -> Vec<State> {
    let mut r = Reading { timeout_us: transaction_timeout_ms.map(|t| t.saturating_mul(1000)), ..Reading::default() };
    for (i, e) in events.iter().enumerate() {
        r.event(i, e);
    }
    r.finish()
}

/// A broker fault as the history recorded it: where, and whether it was aimed at the
/// transaction coordinator.
#[derive(Debug, Clone, Copy)]
struct BrokerHit {
    at: usize,
    coordinator: bool,
}

/// The pass over one history: what is pending, open and in flight at each event.
#[derive(Default)]
struct Reading {
    timeout_us: Option<u64>,
    states: BTreeSet<State>,
    attempt: u32,
    /// Between a failure detected and the next attempt's start.
    failing_over: bool,
    /// Checkpoints triggered, neither persisted nor aborted (this attempt).
    pending: BTreeSet<u64>,
    /// Checkpoints persisted and not yet notified.
    unnotified: BTreeSet<u64>,
    max_persisted: Option<u64>,
    /// Transactional id → the index of its `txn-opened`, until it is committed or aborted.
    open: HashMap<String, usize>,
    /// (opened, committed or aborted) indexes of every transaction that ended.
    spans: Vec<(usize, usize)>,
    broker_faults: Vec<BrokerHit>,
    /// (transactional id, checkpoint) → when it was pre-committed (µs).
    precommitted_at: HashMap<(String, u64), u64>,
    /// Per subtask (this worker process): checkpoints pre-committed and not yet committed.
    uncommitted: HashMap<u32, BTreeSet<u64>>,
    /// Per subtask: transactional ids whose commit started and has no outcome yet.
    in_flight: HashMap<u32, BTreeSet<String>>,
    /// Per subtask of this attempt: the checkpoint of the transaction it writes in and when
    /// that transaction was opened (µs); a pre-commit ends the writing.
    writing: HashMap<u32, (u64, u64)>,
    /// Checkpoints of transactions this attempt's workers left open when they exited, after
    /// writing in them for [`WROTE_US`] or more.
    left_open: BTreeSet<u64>,
}

/// How long a transaction was open before its worker exited for it to hold records: at the
/// slowest rate a shape draws (500 records a second) a tenth of a second writes about 50.
const WROTE_US: u64 = 100_000;

impl Reading {
    fn reach(&mut self, s: State) {
        self.states.insert(s);
    }

    fn event(&mut self, i: usize, e: &Event) {
        let worker = match e.source {
            Source::Worker { subtask } => Some(subtask),
            _ => None,
        };
        match &e.kind {
            EventKind::JobStarted { attempt, restored_from } => self.job_started(*attempt, *restored_from),
            EventKind::FailureDetected { .. } | EventKind::Restarting { .. } => self.failing_over = true,
            EventKind::WorkerStarted { subtask, .. } => {
                self.uncommitted.remove(subtask);
            }
            EventKind::WorkerExited { subtask, .. } => self.worker_exited(*subtask, e.mono_us),
            EventKind::CheckpointTriggered { id } => self.triggered(*id),
            EventKind::CheckpointPersisted { id, .. } => self.persisted(*id),
            EventKind::CheckpointNotified { id } => {
                self.unnotified.remove(id);
            }
            EventKind::CheckpointAborted { id, .. } => self.aborted(*id),
            EventKind::StateRestored { committables, .. } => self.reach(State::restore_pending(committables.len())),
            EventKind::ProducerInit { epoch, .. } if *epoch > 0 && self.attempt > 0 => {
                self.reach(State::FencedOnRestore)
            }
            EventKind::LingeringAborted { transactional_id, .. } => {
                self.reach(State::FencedOnRestore);
                self.ended(i, transactional_id);
            }
            EventKind::TxnOpened { transactional_id, checkpoint } => {
                self.open.insert(transactional_id.clone(), i);
                if let Some(s) = worker {
                    self.writing.insert(s, (*checkpoint, e.mono_us));
                }
            }
            EventKind::TxnPrecommitted { committable, .. } => self.precommitted(worker, committable, e.mono_us),
            EventKind::CommitStarted { transactional_id, checkpoint, restored } => {
                self.commit_started(worker, transactional_id, *checkpoint, *restored, e.mono_us)
            }
            EventKind::CommitFinished { transactional_id, restored, outcome, .. } => {
                self.commit_finished(i, worker, transactional_id, *restored, outcome)
            }
            EventKind::TxnAborted { transactional_id, .. } => self.ended(i, transactional_id),
            EventKind::RequestCounts { retries, .. } if retries.keys().any(|k| k.starts_with("EndTxn/")) => {
                self.reach(State::CommitRetried)
            }
            EventKind::FaultStarted { fault, effect, .. } => self.fault_started(i, fault, effect),
            EventKind::FaultEnded { fault, effect, .. } => self.fault_ended(fault, effect),
            _ => {}
        }
    }

    fn job_started(&mut self, attempt: u32, restored_from: Option<u64>) {
        if attempt > 0 && restored_from.is_none() {
            self.reach(State::RestoreFresh);
        }
        // The restore reopens the checkpoint after the one it restores (Flink's
        // `TransactionalIdFactory` numbering): an id past it is the probe's to abort.
        let reopened = sinkhole_workloads::sink::naming::first_checkpoint(restored_from);
        if attempt > 0 && self.left_open.iter().any(|&c| c > reopened) {
            self.reach(State::LingeringAtRestore);
        }
        self.left_open.clear();
        self.writing.clear();
        if attempt >= 2 {
            self.reach(State::SeveralRestores);
        }
        // A commit still in flight when the attempt ended was cut off with its worker.
        if self.in_flight.values().any(|t| !t.is_empty()) {
            self.reach(State::CommitInFlightAtKill);
        }
        self.in_flight.clear();
        self.uncommitted.clear();
        self.pending.clear();
        self.attempt = attempt;
        self.failing_over = false;
    }

    fn worker_exited(&mut self, subtask: u32, mono_us: u64) {
        if self.in_flight.remove(&subtask).is_some_and(|t| !t.is_empty()) {
            self.reach(State::CommitInFlightAtKill);
        }
        if let Some((checkpoint, opened_us)) = self.writing.remove(&subtask) {
            if mono_us.saturating_sub(opened_us) >= WROTE_US {
                self.left_open.insert(checkpoint);
            }
        }
    }

    fn triggered(&mut self, id: u64) {
        self.pending.insert(id);
        match self.pending.len() {
            0 | 1 => {}
            2 => self.reach(State::ConcurrentPending2),
            _ => self.reach(State::ConcurrentPending3Plus),
        }
    }

    fn persisted(&mut self, id: u64) {
        self.pending.remove(&id);
        if self.unnotified.iter().any(|&n| n < id) {
            self.reach(State::NotificationLost);
        }
        self.unnotified.insert(id);
        self.max_persisted = self.max_persisted.max(Some(id));
    }

    /// An abort at a failover, a subsumed one (a later checkpoint was persisted: Flink's
    /// `CheckpointCoordinator` drops the pending ones below a completed one), or one the
    /// running job made (a decline, an expiry).
    fn aborted(&mut self, id: u64) {
        self.pending.remove(&id);
        if self.failing_over {
            self.reach(State::CheckpointAbortedAtFailover);
        } else if self.max_persisted.is_none_or(|m| m < id) {
            self.reach(State::CheckpointDeclined);
        }
    }

    fn precommitted(&mut self, worker: Option<u32>, c: &Committable, mono_us: u64) {
        self.precommitted_at.insert((c.transactional_id.clone(), c.checkpoint), mono_us);
        let Some(s) = worker else { return };
        if self.writing.get(&s).is_some_and(|&(w, _)| w == c.checkpoint) {
            self.writing.remove(&s);
        }
        let held = self.uncommitted.entry(s).or_default();
        let carried = !held.is_empty();
        held.insert(c.checkpoint);
        if carried {
            self.reach(State::CommittablesCarried);
        }
    }

    fn commit_started(&mut self, worker: Option<u32>, tid: &str, checkpoint: u64, restored: bool, mono_us: u64) {
        if let Some(s) = worker {
            self.in_flight.entry(s).or_default().insert(tid.to_string());
            if !restored {
                self.uncommitted.entry(s).or_default().remove(&checkpoint);
            }
        }
        let since = self.precommitted_at.get(&(tid.to_string(), checkpoint)).map(|&p| mono_us.saturating_sub(p));
        if restored && since.zip(self.timeout_us).is_some_and(|(since, timeout)| since > timeout) {
            self.reach(State::RestoredCommitAfterTimeout);
        }
    }

    fn commit_finished(&mut self, i: usize, worker: Option<u32>, tid: &str, restored: bool, outcome: &CommitOutcome) {
        if let Some(s) = worker {
            self.in_flight.entry(s).or_default().remove(tid);
        }
        match outcome {
            CommitOutcome::Committed => {}
            CommitOutcome::Failed { .. } => self.reach(State::CommitFailedOver),
            CommitOutcome::Dropped { error } => {
                self.reach(State::CommitDropped);
                if restored && (error.contains("PRODUCER_FENCED") || error.contains("INVALID_PRODUCER_EPOCH")) {
                    self.reach(State::FencedOnRestore);
                }
            }
        }
        self.ended(i, tid);
    }

    /// A transaction committed or aborted at event `i`.
    fn ended(&mut self, i: usize, tid: &str) {
        if let Some(opened) = self.open.remove(tid) {
            self.spans.push((opened, i));
        }
    }

    /// A broker fault that took effect (a node signalled and seen to act, or a restart
    /// begun), and whether the transaction coordinator's role named its node.
    fn fault_started(&mut self, i: usize, kind: &str, effect: &serde_json::Value) {
        if !FaultKind::all().iter().any(|k| k.name() == kind && k.family() == Family::Brokers) {
            return;
        }
        let coordinator = match Start::parse(kind, effect) {
            Start::Broker(b) if b.nodes.iter().any(|n| n.confirmed()) => {
                b.role.as_ref().or(b.coordinator.as_ref()).is_some_and(|r| r.role == "txn-coordinator")
            }
            Start::Interval(s) => matches!(s.nodes, Aimed::CoordinatorOf { .. }),
            _ => return,
        };
        self.broker_faults.push(BrokerHit { at: i, coordinator });
    }

    /// A notification withheld from a subtask (`drop-notification` acted).
    fn fault_ended(&mut self, kind: &str, effect: &serde_json::Value) {
        if let End::Dropped(d) = End::parse(kind, effect) {
            if !d.withheld_from.is_empty() {
                self.reach(State::NotificationLost);
            }
        }
    }

    fn finish(mut self) -> Vec<State> {
        for &(opened, ended) in &self.spans {
            for b in self.broker_faults.iter().filter(|b| opened < b.at && b.at < ended) {
                self.states.insert(State::TxnOpenAcrossBrokerFault);
                if b.coordinator {
                    self.states.insert(State::CoordinatorMove);
                }
            }
        }
        self.states.into_iter().collect()
    }
}

#[cfg(test)]
mod tests;
