use sinkhole_model::{Committable, RestoredCommittable, SinkMode, TxnProtocol};

use super::*;
use crate::report::{EndTxn, OpenTxn};

fn ev(subtask: Option<u32>, kind: EventKind) -> Event {
    let source = subtask.map_or(Source::Coordinator, |subtask| Source::Worker { subtask });
    Event { wall_ms: 0, mono_us: 0, mode: SinkMode::TwopcInject, source, kind }
}

fn tid(s: u32, c: u64) -> String {
    format!("p-{s}-{c}")
}

fn committable(s: u32, c: u64) -> Committable {
    Committable {
        checkpoint: c,
        transactional_id: tid(s, c),
        producer_id: 40 + i64::from(s) * 10 + c as i64,
        producer_epoch: 0,
        protocol: TxnProtocol::V2,
        records: 100,
        first_seq: Some(c * 100),
        last_seq: Some(c * 100 + 99),
    }
}

/// Subtask 0 pre-commits checkpoints 6, 7 and 8 (none notified), the job restores from 8,
/// and the restore commits only `committed` of them.
fn restore_of_three(committed: &[u64]) -> Vec<Event> {
    let mut v = vec![ev(None, EventKind::JobStarted { attempt: 0, restored_from: None })];
    for c in [6, 7, 8] {
        v.push(ev(Some(0), EventKind::TxnOpened { transactional_id: tid(0, c), checkpoint: c }));
        v.push(ev(Some(0), EventKind::TxnPrecommitted { committable: committable(0, c), flush_us: 1 }));
    }
    v.push(ev(None, EventKind::JobStarted { attempt: 1, restored_from: Some(8) }));
    let held: Vec<RestoredCommittable> = [6, 7, 8].iter().map(|c| (&committable(0, *c)).into()).collect();
    v.push(ev(Some(0), EventKind::StateRestored { checkpoint: 8, committables: held }));
    for c in committed {
        let t = tid(0, *c);
        v.push(ev(Some(0), EventKind::CommitStarted { transactional_id: t.clone(), checkpoint: *c, restored: true }));
        v.push(ev(
            Some(0),
            EventKind::CommitFinished {
                transactional_id: t,
                checkpoint: *c,
                restored: true,
                outcome: CommitOutcome::Committed,
                latency_us: 5,
            },
        ));
    }
    v
}

fn end(txns: &[(&str, &str, i64)]) -> EndLook {
    EndLook {
        taken: true,
        transactions: txns
            .iter()
            .map(|(t, state, pid)| EndTxn {
                transactional_id: t.to_string(),
                state: state.to_string(),
                producer_id: *pid,
                producer_epoch: 0,
                partitions: vec![0, 2],
                open_ms: 30_000,
                coordinator: 1,
            })
            .collect(),
        error: None,
    }
}

fn tail(partition: i32, position: i64, holder: Option<(&str, &str, i64)>) -> UncommittedTail {
    UncommittedTail {
        partition,
        position,
        high_watermark: position + 500,
        open: holder
            .map(|(t, state, pid)| OpenTxn {
                producer_id: pid,
                producer_epoch: 0,
                txn_start_offset: position,
                transactional_id: Some(t.to_string()),
                coordinator_state: Some(state.to_string()),
                hanging: is_hanging(Some(state)),
                error: None,
            })
            .into_iter()
            .collect(),
    }
}

#[test]
fn a_restored_committable_never_committed_is_the_sinks_hanging_transaction() {
    let events = restore_of_three(&[6]);
    let (t7, t8) = (tid(0, 7), tid(0, 8));
    let look = end(&[(&t7, "Ongoing", 47), (&t8, "Ongoing", 48)]);
    let tails = [tail(0, 700, Some((&t7, "Ongoing", 47))), tail(2, 710, Some((&t7, "Ongoing", 47)))];
    let h = attribute(&look, &tails, &events);
    assert_eq!(h.len(), 2, "{h:#?}");
    assert!(h.iter().all(|h| h.whose == Whose::Sink));
    assert_eq!(h[0].stuck, [(0, 700), (2, 710)], "both stuck partitions are the same transaction's");
    assert_eq!((h[0].subtask, h[0].checkpoint, h[0].restored), (Some(0), Some(7), Some((1, 8))));
    assert!(h[0].restored_never_committed && h[1].restored_never_committed);
    let d = h[1].describe();
    assert!(d.starts_with("p-0-8 (producer 48, epoch 0) Ongoing at its coordinator after the job"), "{d}");
    assert!(d.contains("in the state restored from checkpoint 8 (attempt 1); it was never committed"), "{d}");
    assert!(d.ends_with("left open by the sink"), "{d}");
    assert!(unexplained(&tails, &h).is_empty());
}

#[test]
fn a_faithful_restore_leaves_nothing_to_attribute() {
    let events = restore_of_three(&[6, 7, 8]);
    assert!(attribute(&end(&[]), &[], &events).is_empty());
}

#[test]
fn a_marker_the_coordinator_skipped_is_the_brokers() {
    let events = restore_of_three(&[6, 7, 8]);
    let t7 = tid(0, 7);
    let tails = [tail(1, 300, Some((&t7, "CompleteCommit", 47)))];
    let h = attribute(&end(&[]), &tails, &events);
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].whose, Whose::Broker);
    assert!(!h[0].restored_never_committed, "its restored commit was started");
    let d = h[0].describe();
    assert!(d.contains("CompleteCommit at its coordinator") && d.contains("never got its marker"), "{d}");
    assert!(
        d.contains("its restored commit ended committed") && d.ends_with("the broker's doing, not the sink's"),
        "{d}"
    );
}

#[test]
fn an_ongoing_transaction_whose_commit_was_answered_is_the_brokers() {
    let events = restore_of_three(&[6, 7, 8]);
    let t8 = tid(0, 8);
    let h = attribute(&end(&[(&t8, "Ongoing", 48)]), &[], &events);
    assert_eq!(h[0].whose, Whose::Broker);
    assert!(h[0].describe().contains("yet its coordinator has it Ongoing"), "{}", h[0].describe());
}

#[test]
fn an_opened_transaction_never_ended_and_an_unknown_holder() {
    let mut events = vec![ev(None, EventKind::JobStarted { attempt: 0, restored_from: None })];
    events.push(ev(Some(1), EventKind::TxnOpened { transactional_id: tid(1, 4), checkpoint: 4 }));
    let t = tid(1, 4);
    let mut unknown = tail(2, 50, None);
    unknown.open.push(OpenTxn {
        producer_id: 99,
        producer_epoch: 3,
        txn_start_offset: 50,
        transactional_id: None,
        coordinator_state: None,
        hanging: true,
        error: None,
    });
    let h = attribute(&end(&[(&t, "Ongoing", 12)]), &[unknown], &events);
    assert_eq!(h.len(), 2);
    assert_eq!((h[0].whose, h[0].subtask, h[0].checkpoint), (Whose::Sink, Some(1), Some(4)));
    assert!(h[0].story.contains("opened and never pre-committed, committed or aborted"), "{}", h[0].story);
    assert_eq!(h[1].whose, Whose::Broker);
    assert!(h[1].describe().contains("listed by no coordinator"), "{}", h[1].describe());
}

#[test]
fn a_tail_whose_holder_was_not_found_stays_unexplained() {
    let tails = [tail(0, 10, None)];
    let h = attribute(&end(&[]), &tails, &[]);
    assert!(h.is_empty());
    assert_eq!(unexplained(&tails, &h).len(), 1);
}

#[test]
fn only_an_ongoing_enable_2pc_transaction_holds_its_partitions_for_good() {
    let init = |t: &str, enable_2pc| {
        ev(
            Some(0),
            EventKind::ProducerInit {
                transactional_id: t.into(),
                producer_id: 1,
                epoch: 0,
                version: 6,
                enable_2pc,
                keep_prepared_txn: false,
                protocol: TxnProtocol::V2,
            },
        )
    };
    let events = vec![init("p-0-7", true), init("p-0-8", false), init("p-0-9", true)];
    let mut look = end(&[("p-0-7", "Ongoing", 47), ("p-0-8", "Ongoing", 48), ("p-0-9", "PrepareCommit", 49)]);
    look.transactions[0].partitions = vec![1];
    // p-0-8 will be timed out by the broker, p-0-9 is being finished: the drain waits for those.
    assert_eq!(held_for_good(&look, &events).into_iter().collect::<Vec<_>>(), [1]);
    assert!(held_for_good(&look, &[]).is_empty(), "without the history, nothing is known to be for good");
}
