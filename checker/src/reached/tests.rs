//! Each state on a synthetic history that reaches it and on one, as near as can be, that
//! does not; the table held to docs/GUIDE.md's.
use serde_json::{json, Value};
use sinkhole_model::{
    CommitOutcome, Committable, Event, EventKind, RestoredCommittable, SinkMode, Source, TxnProtocol,
};

use super::{reached, State};

const TIMEOUT_MS: u64 = 60_000;

fn tid(s: u32, n: u64) -> String {
    format!("sinkhole-x-twopc-inject-{s}-{n}")
}

/// A two-subtask job's history in the making, on a clock of its own.
struct H {
    events: Vec<Event>,
    now_us: u64,
}

impl H {
    /// Attempt 0 up, each subtask with the transaction of checkpoint 1 open.
    fn new() -> H {
        let mut h = H { events: Vec::new(), now_us: 0 };
        h.coord(EventKind::JobStarted { attempt: 0, restored_from: None });
        h.up(0);
        h
    }

    fn push(&mut self, source: Source, kind: EventKind) -> &mut H {
        self.now_us += 1_000;
        self.events.push(Event { wall_ms: 0, mono_us: self.now_us, mode: SinkMode::TwopcInject, source, kind });
        self
    }

    fn coord(&mut self, kind: EventKind) -> &mut H {
        self.push(Source::Coordinator, kind)
    }

    fn worker(&mut self, s: u32, kind: EventKind) -> &mut H {
        self.push(Source::Worker { subtask: s }, kind)
    }

    fn fault(&mut self, kind: EventKind) -> &mut H {
        self.push(Source::Fault, kind)
    }

    fn wait_ms(&mut self, ms: u64) -> &mut H {
        self.now_us += ms * 1_000;
        self
    }

    /// Both workers started, each opening the transaction after checkpoint `after`.
    fn up(&mut self, after: u64) {
        for s in 0..2 {
            self.coord(EventKind::WorkerStarted { subtask: s, pid: 100 + s, attempt: 0 });
            self.worker(s, EventKind::TxnOpened { transactional_id: tid(s, after + 1), checkpoint: after + 1 });
        }
    }

    /// Checkpoint `n` triggered, pre-committed by both subtasks, persisted (not notified).
    fn persist(&mut self, n: u64) -> &mut H {
        self.coord(EventKind::CheckpointTriggered { id: n });
        for s in 0..2 {
            self.precommit(s, n);
            self.worker(s, EventKind::TxnOpened { transactional_id: tid(s, n + 1), checkpoint: n + 1 });
            self.coord(EventKind::CheckpointAcked { id: n, subtask: s });
        }
        self.coord(EventKind::CheckpointPersisted { id: n, path: format!("cp-{n}") })
    }

    fn precommit(&mut self, s: u32, n: u64) -> &mut H {
        let committable = Committable {
            checkpoint: n,
            transactional_id: tid(s, n),
            producer_id: 7,
            producer_epoch: 0,
            protocol: TxnProtocol::V2,
            records: 10,
            first_seq: Some(n * 10),
            last_seq: Some(n * 10 + 9),
        };
        self.worker(s, EventKind::TxnPrecommitted { committable, flush_us: 1 })
    }

    /// Checkpoint `n` notified, and every subtask commits it.
    fn notify(&mut self, n: u64) -> &mut H {
        self.coord(EventKind::CheckpointNotified { id: n });
        for s in 0..2 {
            self.commit(s, n, false, CommitOutcome::Committed);
        }
        self
    }

    fn commit(&mut self, s: u32, n: u64, restored: bool, outcome: CommitOutcome) -> &mut H {
        self.worker(s, EventKind::CommitStarted { transactional_id: tid(s, n), checkpoint: n, restored });
        self.commit_finished(s, n, restored, outcome)
    }

    fn commit_finished(&mut self, s: u32, n: u64, restored: bool, outcome: CommitOutcome) -> &mut H {
        let kind =
            EventKind::CommitFinished { transactional_id: tid(s, n), checkpoint: n, restored, outcome, latency_us: 5 };
        self.worker(s, kind)
    }

    fn cycle(&mut self, n: u64) -> &mut H {
        self.persist(n).notify(n)
    }

    /// Subtask `s` killed by a fault, the failover, and attempt `attempt` restored from
    /// `from`, each subtask's state holding `pending` committables (up to `from`) committed again.
    fn restore(&mut self, attempt: u32, from: Option<u64>, pending: u64) -> &mut H {
        self.coord(EventKind::WorkerExited { subtask: 0, status: "killed".into(), expected: false });
        self.coord(EventKind::FailureDetected { subtask: Some(0), reason: "exited".into() });
        self.coord(EventKind::WorkerExited { subtask: 1, status: "killed".into(), expected: true });
        self.coord(EventKind::Restarting { attempt, from_checkpoint: from, delay_ms: 0 });
        self.coord(EventKind::JobStarted { attempt, restored_from: from });
        for s in 0..2 {
            self.coord(EventKind::WorkerStarted { subtask: s, pid: 200 + s, attempt });
            let Some(c) = from else { continue };
            let held: Vec<u64> = (c + 1 - pending..=c).collect();
            let committables = held
                .iter()
                .map(|&n| RestoredCommittable {
                    transactional_id: tid(s, n),
                    checkpoint: n,
                    producer_id: 7,
                    producer_epoch: 0,
                })
                .collect();
            self.worker(s, EventKind::StateRestored { checkpoint: c, committables });
            for n in held {
                self.commit(s, n, true, CommitOutcome::Committed);
            }
        }
        self
    }

    fn states(&self) -> Vec<State> {
        reached(&self.events, Some(TIMEOUT_MS))
    }

    fn has(&self, s: State) -> bool {
        self.states().contains(&s)
    }
}

/// A clean run: checkpoints 1 to 3, each committed on its notification, the job finished.
fn clean() -> H {
    let mut h = H::new();
    h.cycle(1).cycle(2).cycle(3);
    h.coord(EventKind::JobFinished { outcome: "finished".into(), attempts: 1 });
    h
}

#[test]
fn a_run_without_faults_reaches_no_state() {
    assert_eq!(clean().states(), [], "every state needs a fault or a restore");
    assert_eq!(reached(&[], None), []);
}

#[test]
fn a_restore_reaches_the_state_of_the_committables_it_held() {
    for (pending, state) in [
        (0, State::RestorePending0),
        (1, State::RestorePending1),
        (2, State::RestorePending2),
        (3, State::RestorePending3Plus),
        (5, State::RestorePending3Plus),
    ] {
        let mut h = H::new();
        h.cycle(1).cycle(2).cycle(3).cycle(4).cycle(5).persist(6).restore(1, Some(6), pending);
        let states = h.states();
        let restores: Vec<State> = states.iter().copied().filter(|s| s.name().starts_with("restore-")).collect();
        assert_eq!(restores, [state], "{pending} committables: {states:?}");
        // The ordinary restore is not a fresh one, a restore of a restore, or a timeout.
        for no in [State::RestoreFresh, State::SeveralRestores, State::RestoredCommitAfterTimeout] {
            assert!(!states.contains(&no), "{pending}: {states:?}");
        }
    }
}

#[test]
fn a_restart_with_no_checkpoint_is_fresh_and_a_third_attempt_is_several_restores() {
    let mut h = H::new();
    h.restore(1, None, 0);
    assert_eq!(h.states(), [State::RestoreFresh]);
    let mut h = H::new();
    h.cycle(1).restore(1, Some(1), 1).cycle(2).restore(2, Some(2), 1);
    assert!(h.has(State::SeveralRestores) && !h.has(State::RestoreFresh), "{:?}", h.states());
}

/// Checkpoint 4 triggered with subtask 0 held (it neither snapshots nor acks), so subtask 1
/// pre-commits it and writes in checkpoint 5's transaction for `wrote_ms` before both are killed
/// and the job restores checkpoint 3, which reopens 4.
fn killed_while_one_subtask_is_ahead(wrote_ms: u64) -> H {
    let mut h = H::new();
    h.cycle(1).cycle(2).cycle(3);
    h.coord(EventKind::CheckpointTriggered { id: 4 });
    h.precommit(1, 4);
    h.worker(1, EventKind::TxnOpened { transactional_id: tid(1, 5), checkpoint: 5 });
    h.coord(EventKind::CheckpointAcked { id: 4, subtask: 1 });
    h.wait_ms(wrote_ms);
    h.restore(1, Some(3), 1);
    h
}

#[test]
fn a_restore_past_which_the_killed_attempt_wrote_a_transaction_meets_a_lingering_one() {
    assert!(killed_while_one_subtask_is_ahead(300).has(State::LingeringAtRestore));
    // Opened just before the kill: nothing written in it, the probe's abort changes nothing.
    assert!(!killed_while_one_subtask_is_ahead(20).has(State::LingeringAtRestore));
    // The ordinary restore: the killed attempt's open transaction is the one the restore reopens.
    let mut h = H::new();
    h.cycle(1).cycle(2).persist(3).wait_ms(300).restore(1, Some(3), 1);
    assert!(!h.has(State::LingeringAtRestore), "{:?}", h.states());
    // A transaction left open by a job that ended is no restore's.
    let mut ended = clean();
    ended.wait_ms(300).coord(EventKind::WorkerExited { subtask: 0, status: "exit 0".into(), expected: true });
    assert!(!ended.has(State::LingeringAtRestore));
}

#[test]
fn a_restore_that_fences_an_earlier_incarnation_is_fenced_on_restore() {
    let mut h = H::new();
    h.cycle(1).restore(1, Some(1), 1);
    assert!(!h.has(State::FencedOnRestore), "a restore alone fences nothing the history shows");
    // The probe's InitProducerId of the killed attempt's open id: epoch 1, and its abort.
    let mut probe = H::new();
    probe.cycle(1).restore(1, Some(1), 1);
    let init = |epoch| EventKind::ProducerInit {
        transactional_id: tid(0, 2),
        producer_id: 7,
        epoch,
        version: 5,
        enable_2pc: true,
        keep_prepared_txn: false,
        protocol: TxnProtocol::V2,
    };
    probe.worker(0, init(0));
    assert!(!probe.has(State::FencedOnRestore), "epoch 0: the id was never used");
    probe.worker(0, init(1));
    assert!(probe.has(State::FencedOnRestore));
    let mut lingering = H::new();
    lingering.cycle(1).restore(1, Some(1), 1);
    lingering.worker(0, EventKind::LingeringAborted { transactional_id: tid(0, 2), epoch: 1 });
    assert!(lingering.has(State::FencedOnRestore));
    // A restored committable dropped because the producer was fenced.
    let mut dropped = H::new();
    dropped.cycle(1).restore(1, Some(1), 0);
    dropped.commit(0, 1, true, CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() });
    assert!(dropped.has(State::FencedOnRestore) && dropped.has(State::CommitDropped), "{:?}", dropped.states());
    // The first attempt's epoch above 0 is not a restore's.
    let mut first = clean();
    first.worker(0, init(3));
    assert!(!first.has(State::FencedOnRestore));
}

#[test]
fn checkpoints_aborted_at_a_failover_declined_or_subsumed() {
    let mut h = H::new();
    h.cycle(1).coord(EventKind::CheckpointTriggered { id: 2 });
    let mut failover = H { events: h.events.clone(), now_us: h.now_us };
    failover.coord(EventKind::FailureDetected { subtask: Some(0), reason: "exited".into() });
    failover.coord(EventKind::CheckpointAborted { id: 2, reason: "the job is failing over".into() });
    assert_eq!(failover.states(), [State::CheckpointAbortedAtFailover]);
    let mut declined = H { events: h.events.clone(), now_us: h.now_us };
    declined.coord(EventKind::CheckpointAborted { id: 2, reason: "declined by subtask 0".into() });
    assert_eq!(declined.states(), [State::CheckpointDeclined]);
    // Checkpoint 3 completes while 2 is pending: 2 is subsumed, neither state.
    let mut subsumed = H { events: h.events.clone(), now_us: h.now_us };
    subsumed.persist(3);
    subsumed.coord(EventKind::CheckpointAborted { id: 2, reason: "subsumed by checkpoint 3".into() });
    assert!(!subsumed.has(State::CheckpointDeclined) && !subsumed.has(State::CheckpointAbortedAtFailover));
    assert!(subsumed.has(State::ConcurrentPending2), "2 and 3 were pending at once");
}

#[test]
fn overlapping_checkpoints_count_how_many_were_pending_at_once() {
    let mut h = H::new();
    h.coord(EventKind::CheckpointTriggered { id: 1 });
    h.coord(EventKind::CheckpointTriggered { id: 2 });
    assert_eq!(h.states(), [State::ConcurrentPending2]);
    h.coord(EventKind::CheckpointTriggered { id: 3 });
    assert_eq!(h.states(), [State::ConcurrentPending2, State::ConcurrentPending3Plus]);
    // One after the other, never two: and a new attempt starts with none pending.
    let mut h = clean();
    h.coord(EventKind::CheckpointTriggered { id: 4 });
    h.coord(EventKind::JobStarted { attempt: 1, restored_from: Some(3) });
    h.coord(EventKind::CheckpointTriggered { id: 5 });
    assert!(!h.has(State::ConcurrentPending2), "{:?}", h.states());
}

#[test]
fn a_notification_lost_to_a_crash_or_withheld_and_committables_carried_to_the_next() {
    // Persisted, never notified, and the next one persisted after the restore.
    let mut h = H::new();
    h.cycle(1).persist(2).restore(1, Some(2), 2);
    assert!(!h.has(State::NotificationLost), "not yet: no later checkpoint persisted");
    h.persist(3);
    assert!(h.has(State::NotificationLost));
    // A drop-notification that withheld checkpoint 2 from subtask 0: it commits 2 with 3.
    let mut h = H::new();
    h.cycle(1).persist(2);
    h.coord(EventKind::CheckpointNotified { id: 2 }).commit(1, 2, false, CommitOutcome::Committed);
    let dropped = json!({"checkpoint": 2, "withheld_from": [0], "missed": [], "covered_by": "checkpoint 3"});
    h.fault(EventKind::FaultEnded { name: "drop".into(), fault: "drop-notification".into(), effect: dropped });
    assert_eq!(h.states(), [State::NotificationLost]);
    h.persist(3);
    assert!(h.has(State::CommittablesCarried), "subtask 0 pre-committed 3 holding 2");
    // A drop that acted on no subtask lost nothing.
    let mut h = H::new();
    h.cycle(1);
    let none = json!({"checkpoint": 2, "withheld_from": [], "missed": [], "covered_by": "-"});
    h.fault(EventKind::FaultEnded { name: "drop".into(), fault: "drop-notification".into(), effect: none });
    assert_eq!(h.states(), []);
}

#[test]
fn commits_retried_failed_over_dropped_or_cut_off_by_a_kill() {
    let counts = |retries: &[(&str, u64)]| EventKind::RequestCounts {
        requests: Default::default(),
        retries: retries.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    };
    let mut h = clean();
    h.worker(0, counts(&[("AddPartitionsToTxn/CONCURRENT_TRANSACTIONS", 2)]));
    assert!(!h.has(State::CommitRetried), "another API's retries are not a commit's");
    h.worker(0, counts(&[("EndTxn/CONCURRENT_TRANSACTIONS", 1)]));
    assert!(h.has(State::CommitRetried));

    let mut h = H::new();
    h.persist(1).coord(EventKind::CheckpointNotified { id: 1 });
    h.commit(0, 1, false, CommitOutcome::Failed { error: "UNKNOWN_SERVER_ERROR (-1)".into() });
    assert_eq!(h.states(), [State::CommitFailedOver]);
    let mut h = H::new();
    h.persist(1).coord(EventKind::CheckpointNotified { id: 1 });
    h.commit(0, 1, false, CommitOutcome::Dropped { error: "INVALID_TXN_STATE (48)".into() });
    assert_eq!(h.states(), [State::CommitDropped], "a live drop is no restore's fencing");

    // A commit started, its worker killed before the outcome.
    let mut h = H::new();
    h.persist(1).coord(EventKind::CheckpointNotified { id: 1 });
    h.worker(0, EventKind::CommitStarted { transactional_id: tid(0, 1), checkpoint: 1, restored: false });
    h.coord(EventKind::WorkerExited { subtask: 1, status: "killed".into(), expected: false });
    assert!(!h.has(State::CommitInFlightAtKill), "another subtask's exit");
    h.coord(EventKind::WorkerExited { subtask: 0, status: "killed".into(), expected: false });
    assert!(h.has(State::CommitInFlightAtKill));
    // Finished before the exit: not in flight.
    let mut h = H::new();
    h.cycle(1);
    h.coord(EventKind::WorkerExited { subtask: 0, status: "killed".into(), expected: false });
    assert!(!h.has(State::CommitInFlightAtKill));
}

#[test]
fn a_restored_commit_past_the_transaction_timeout() {
    let mut h = H::new();
    h.cycle(1).persist(2);
    h.wait_ms(TIMEOUT_MS + 1);
    h.restore(1, Some(2), 1);
    assert!(h.has(State::RestoredCommitAfterTimeout));
    assert!(!reached(&h.events, None).contains(&State::RestoredCommitAfterTimeout), "no timeout, no such state");
    let mut h = H::new();
    h.cycle(1).persist(2);
    h.wait_ms(TIMEOUT_MS - 100);
    h.restore(1, Some(2), 1);
    assert!(!h.has(State::RestoredCommitAfterTimeout), "within the timeout");
}

/// A broker fault's start as the nemesis records it: `node` killed and seen to die, with the
/// role it held when `coordinator`.
fn broker_kill(coordinator: bool, confirmed: bool) -> EventKind {
    let role = coordinator.then(|| {
        json!({"role": "txn-coordinator", "of": tid(0, 2), "node": 1, "found_by": "FindCoordinator",
               "at_wall_ms": 1, "statement": "node 1 was the txn-coordinator"})
    });
    let effect =
        json!({"node_id": 1, "action": "kill", "signals": [], "new_pid": null, "ready": null, "elapsed_ms": 3});
    let start = json!({"trigger": {"at_ms": 5}, "nodes": [{"node": 1, "confirmed": confirmed, "effect": effect}],
                       "coordinator": role, "role": role, "duration_ms": 1000});
    EventKind::FaultStarted { name: "kill".into(), fault: "broker-kill".into(), effect: start }
}

fn broker_restart(nodes: Value) -> EventKind {
    let start = json!({"trigger": {"at_ms": 5}, "nodes": nodes});
    EventKind::FaultStarted { name: "restart".into(), fault: "broker-restart".into(), effect: start }
}

#[test]
fn a_transaction_open_across_a_broker_fault_and_its_coordinator_moving() {
    // Checkpoint 2's transactions are open (opened after checkpoint 1) when the broker dies.
    let across = |fault: EventKind| {
        let mut h = H::new();
        h.cycle(1).fault(fault).cycle(2);
        h.states()
    };
    assert_eq!(across(broker_kill(false, true)), [State::TxnOpenAcrossBrokerFault]);
    assert_eq!(across(broker_kill(true, true)), [State::TxnOpenAcrossBrokerFault, State::CoordinatorMove]);
    assert_eq!(across(broker_kill(true, false)), [], "a kill not seen to act hit nothing");
    assert_eq!(across(broker_restart(json!([1]))), [State::TxnOpenAcrossBrokerFault]);
    assert_eq!(
        across(broker_restart(json!({"coordinator_of": tid(0, 2)}))),
        [State::TxnOpenAcrossBrokerFault, State::CoordinatorMove]
    );
    // A worker fault is no broker fault; a broker fault between transactions spans none.
    let kill = json!({"attempt": 0, "trigger": {"at_ms": 5}, "workers": []});
    assert_eq!(across(EventKind::FaultStarted { name: "k".into(), fault: "kill-workers".into(), effect: kill }), []);
    // Every transaction that ended did so before the fault: none open across it.
    let mut h = clean();
    h.fault(broker_kill(true, true));
    assert_eq!(h.states(), []);
}

#[test]
fn states_are_named_once_and_read_back_by_name() {
    let names: Vec<&str> = State::ALL.iter().map(|s| s.name()).collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    for &s in State::ALL {
        assert!(s.name().chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '+'));
        assert_eq!(State::parse(s.name()), Some(s));
        assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{}\"", s.name()));
        assert_eq!(serde_json::from_str::<State>(&format!("\"{}\"", s.name())).unwrap(), s);
        assert!(!s.when().is_empty() && !s.why().is_empty(), "{s}");
    }
    let e = serde_json::from_str::<State>("\"restore-pending-9\"").unwrap_err().to_string();
    assert!(e.contains("unknown protocol state `restore-pending-9`"), "{e}");
}

/// docs/GUIDE.md's table of states: a row per state, in the table's order, with its words.
#[test]
fn the_guide_lists_every_state_with_its_words() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/GUIDE.md")).unwrap();
    let heading = "### Protocol states";
    let rest = &doc[doc.find(heading).unwrap_or_else(|| panic!("no {heading:?} in docs/GUIDE.md"))..];
    let rows: Vec<Vec<String>> = rest
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| l.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect())
        .collect();
    let table: Vec<Vec<String>> =
        State::ALL.iter().map(|s| vec![format!("`{}`", s.name()), s.when().into(), s.why().into()]).collect();
    assert_eq!(rows, table, "docs/GUIDE.md's states table, row for row");
}
