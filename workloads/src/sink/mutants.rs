//! What each mutant does differently: one decision per mutant, each a small
//! function the sinks and the worker consult at the one point where the
//! faithful mode decides otherwise. The names, base modes and bug classes are
//! the table in [`sinkhole_model::Mutant`]; `sinkhole calibrate` runs every
//! mutant through the scenario library with its base mode's expectation, and
//! a library that passes a mutant has no power against that bug class.
//!
//! A faithful mode (`mutant == None`) gets the faithful answer from every
//! function here, so the faithful paths stay as they were.
use std::time::Duration;

use sinkhole_client::producer::ProducerError;
use sinkhole_client::wire::WireError;
use sinkhole_model::{CommitOutcome, Committable, Mutant, SinkMode};

use super::{classify_commit_error, error_text, CommitErrorClass};

/// A commit attempt failed with `err`: what a mutant makes of it instead of
/// Flink's `KafkaCommitter` classification (`None`: classify as usual).
///
/// - `legacy~assume-committed`: an EndTxn that got no answer (a request
///   timeout, a connection lost with the request in flight) is reported
///   committed, and the committable is gone with it. The broker may never
///   have seen the request: the transaction then stays open until the
///   broker's timeout aborts it, and its records are lost. The bug class:
///   an unknown outcome (`TimeoutException`) taken as success.
/// - `legacy~discard-retriable`: a retriable error (coordinator moved or
///   loading, concurrent transactions, a timeout) drops the committable as
///   if the broker had refused it for good (`signalFailedWithKnownReason`
///   instead of `retryLater`).
pub fn on_commit_error(mutant: Option<Mutant>, err: &ProducerError) -> Option<CommitOutcome> {
    match mutant? {
        Mutant::AssumeCommitted if no_answer(err) => Some(CommitOutcome::Committed),
        Mutant::DiscardRetriable if classify_commit_error(err) == CommitErrorClass::Retriable => {
            Some(CommitOutcome::Dropped { error: error_text(err) })
        }
        _ => None,
    }
}

/// How long a commit attempt may take before the mutant gives up on it:
/// the producer's request timeout (Java's `request.timeout.ms`), for the two
/// mutants whose bug is what they make of a commit that does not return.
/// Java's `commitTransaction` throws a `TimeoutException` after
/// `max.block.ms` while the transaction manager keeps retrying; the rig's
/// client retries inside the call instead (up to its delivery timeout), so a
/// faithful sink just waits (`None`) — Flink's `KafkaCommitter` would retry
/// the timed-out commit, which comes to the same.
pub fn commit_wait(mutant: Option<Mutant>, request_timeout: Duration) -> Option<Duration> {
    match mutant? {
        Mutant::AssumeCommitted | Mutant::DiscardRetriable => Some(request_timeout),
        _ => None,
    }
}

/// The error a commit that outlived [`commit_wait`] is reported with.
pub fn commit_timed_out(after: Duration) -> ProducerError {
    ProducerError::Wire(WireError::Timeout {
        what: format!("EndTxn (commit): no answer within {} ms", after.as_millis()),
    })
}

/// The request went out and no answer came back: a timeout or a broken
/// connection, possibly after the client's own retries (Java: a
/// `TimeoutException` or `NetworkException` from `commitTransaction`). A
/// Kafka error code is an answer.
pub fn no_answer(err: &ProducerError) -> bool {
    fn wire(w: &WireError) -> bool {
        match w {
            WireError::RetriesExhausted { last, .. } => wire(last),
            WireError::Timeout { .. } => true,
            other => other.is_connection_error(),
        }
    }
    match err {
        ProducerError::Wire(w) => wire(w),
        _ => false,
    }
}

/// Whether the restore probes the ids after the restored checkpoint and
/// aborts what a previous attempt left open (Flink's PROBING abort in
/// `ExactlyOnceKafkaWriter`'s initialisation). `legacy~skip-lingering-abort`
/// does not: those transactions stay open, holding back the last stable
/// offset of their partitions, until the broker times them out or a later
/// InitProducerId of the same id aborts them.
pub fn aborts_lingering(mutant: Option<Mutant>) -> bool {
    mutant != Some(Mutant::SkipLingeringAbort)
}

/// Where the source starts after restoring `next_seq` from a checkpoint
/// (`restored`: the checkpoint, None on a fresh start).
/// `legacy~restore-off-by-one` starts one later: the record at the stored
/// position is never emitted again, so one record per subtask and restore is
/// lost.
pub fn restore_position(mode: SinkMode, restored: Option<u64>, next_seq: u64) -> u64 {
    match (mode.mutant(), restored) {
        (Some(Mutant::RestoreOffByOne), Some(_)) => next_seq.saturating_add(1),
        _ => next_seq,
    }
}

/// Whether the worker commits a pre-committed transaction at the barrier
/// itself, before it acks (and so before the checkpoint is durable), and
/// keeps no committable for it. `legacy~commit-before-persist` does: a
/// failure before the checkpoint completes restores an earlier one and
/// replays records that are already committed (duplicates), which is what
/// the one-phase `rdkafka-txn` control shows by design.
pub fn commits_at_barrier(mode: SinkMode) -> bool {
    mode.mutant() == Some(Mutant::CommitBeforePersist)
}

/// Whether InitProducerId carries Enable2Pc for a mode that asks for it
/// (`wanted`). `twopc-inject~drop-2pc-flag` never sends it: its transactions
/// are then subject to the broker's transaction timeout like legacy's, while
/// its restore still commits by injection — the FLIP-319 loss comes back.
pub fn enable_2pc(mutant: Option<Mutant>, wanted: bool) -> bool {
    wanted && mutant != Some(Mutant::Drop2pcFlag)
}

/// Whether the recovery producer that committed a restored committable is
/// kept and the attempt's first transaction written with it, under the
/// restored committable's transactional id and its injected producer id and
/// epoch, with no InitProducerId (`legacy~reuse-tid-no-fence`). Faithful
/// modes open every transaction under a fresh id with InitProducerId, which
/// fences whatever an earlier incarnation of that id left behind.
pub fn reuses_recovery_producer(mutant: Option<Mutant>) -> bool {
    mutant == Some(Mutant::ReuseTidNoFence)
}

/// The restored committables a restore commits, in checkpoint order (`restored` is sorted
/// so). Faithful: all of them, as Flink's `KafkaCommitter` gets every committable of the
/// restored state. `twopc-inject~forget-restored` takes only the first: with one checkpoint
/// pending at a time that is all there is, but a restore after several pending checkpoints
/// (`max_concurrent_checkpoints` above 1, or notifications lost) leaves the later ones'
/// prepared transactions neither committed nor aborted. Opened with Enable2Pc, the broker
/// never times them out: read_committed readers of their partitions stop for good.
pub fn restored_to_commit(mutant: Option<Mutant>, restored: &[Committable]) -> &[Committable] {
    match mutant {
        Some(Mutant::ForgetRestored) => &restored[..restored.len().min(1)],
        _ => restored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_client::wire::KafkaCode;

    fn kafka(code: KafkaCode) -> ProducerError {
        ProducerError::Wire(WireError::Kafka { api: "EndTxn".into(), code, message: None })
    }
    fn timeout() -> ProducerError {
        ProducerError::Wire(WireError::RetriesExhausted {
            what: "EndTxn".into(),
            attempts: 1,
            last: Box::new(WireError::Timeout { what: "EndTxn".into() }),
        })
    }
    fn exhausted(code: KafkaCode) -> ProducerError {
        ProducerError::Wire(WireError::RetriesExhausted {
            what: "EndTxn".into(),
            attempts: 5,
            last: Box::new(WireError::Kafka { api: "EndTxn".into(), code, message: None }),
        })
    }
    fn fenced() -> ProducerError {
        ProducerError::Fatal("fenced".into(), Some(KafkaCode::PRODUCER_FENCED))
    }
    fn others(except: Mutant) -> impl Iterator<Item = Option<Mutant>> {
        std::iter::once(None).chain(Mutant::ALL.iter().copied().filter(move |m| *m != except).map(Some))
    }

    #[test]
    fn assume_committed_takes_a_lost_answer_for_a_commit() {
        let m = Some(Mutant::AssumeCommitted);
        let lost = ProducerError::Wire(WireError::Disconnected { peer: "broker-1".into() });
        assert_eq!(on_commit_error(m, &timeout()), Some(CommitOutcome::Committed));
        assert_eq!(on_commit_error(m, &lost), Some(CommitOutcome::Committed));
        // An answer is an answer: fenced, or a retriable code, is classified as usual.
        assert_eq!(on_commit_error(m, &fenced()), None);
        assert_eq!(on_commit_error(m, &exhausted(KafkaCode::CONCURRENT_TRANSACTIONS)), None);
        for other in others(Mutant::AssumeCommitted).filter(|o| *o != Some(Mutant::DiscardRetriable)) {
            assert_eq!(on_commit_error(other, &timeout()), None, "{other:?}");
        }
    }

    #[test]
    fn discard_retriable_drops_what_flink_retries() {
        let m = Some(Mutant::DiscardRetriable);
        let out = on_commit_error(m, &exhausted(KafkaCode::COORDINATOR_NOT_AVAILABLE));
        assert_eq!(out, Some(CommitOutcome::Dropped { error: "COORDINATOR_NOT_AVAILABLE (15)".into() }));
        assert!(matches!(on_commit_error(m, &timeout()), Some(CommitOutcome::Dropped { .. })));
        // Known reasons and fatal errors are left to the faithful classification.
        assert_eq!(on_commit_error(m, &fenced()), None);
        assert_eq!(on_commit_error(m, &kafka(KafkaCode::INVALID_PRODUCER_ID_MAPPING)), None);
        for other in others(Mutant::DiscardRetriable).filter(|o| *o != Some(Mutant::AssumeCommitted)) {
            assert_eq!(on_commit_error(other, &exhausted(KafkaCode::COORDINATOR_NOT_AVAILABLE)), None, "{other:?}");
        }
    }

    #[test]
    fn only_the_two_commit_mutants_give_up_waiting() {
        let t = Duration::from_secs(30);
        assert_eq!(commit_wait(Some(Mutant::AssumeCommitted), t), Some(t));
        assert_eq!(commit_wait(Some(Mutant::DiscardRetriable), t), Some(t));
        for other in others(Mutant::AssumeCommitted).filter(|o| *o != Some(Mutant::DiscardRetriable)) {
            assert_eq!(commit_wait(other, t), None, "{other:?}");
        }
        let e = commit_timed_out(t);
        assert!(no_answer(&e));
        assert_eq!(on_commit_error(Some(Mutant::AssumeCommitted), &e), Some(CommitOutcome::Committed));
        assert!(matches!(on_commit_error(Some(Mutant::DiscardRetriable), &e), Some(CommitOutcome::Dropped { .. })));
    }

    #[test]
    fn no_answer_is_only_silence() {
        assert!(no_answer(&timeout()));
        assert!(no_answer(&ProducerError::Wire(WireError::Timeout { what: "EndTxn".into() })));
        assert!(!no_answer(&kafka(KafkaCode::REQUEST_TIMED_OUT)), "the broker answered");
        assert!(!no_answer(&exhausted(KafkaCode::NOT_COORDINATOR)));
        assert!(!no_answer(&fenced()));
    }

    #[test]
    fn forget_restored_commits_only_the_oldest_restored_committable() {
        let c = |checkpoint| Committable {
            checkpoint,
            transactional_id: format!("p-0-{checkpoint}"),
            producer_id: 7,
            producer_epoch: 0,
            protocol: sinkhole_model::TxnProtocol::V2,
            records: 10,
            first_seq: None,
            last_seq: None,
        };
        let restored = [c(6), c(7), c(8)];
        let m = Some(Mutant::ForgetRestored);
        assert_eq!(restored_to_commit(m, &restored), &restored[..1]);
        assert_eq!(restored_to_commit(m, &restored[2..]), &restored[2..], "one pending: all there is");
        assert!(restored_to_commit(m, &[]).is_empty());
        for other in others(Mutant::ForgetRestored) {
            assert_eq!(restored_to_commit(other, &restored), &restored[..], "{other:?}");
        }
    }

    #[test]
    fn skip_lingering_abort_skips_only_the_probe() {
        assert!(!aborts_lingering(Some(Mutant::SkipLingeringAbort)));
        for other in others(Mutant::SkipLingeringAbort) {
            assert!(aborts_lingering(other), "{other:?}");
        }
    }

    #[test]
    fn restore_off_by_one_starts_one_late_only_after_a_restore() {
        let m = SinkMode::Mutant(Mutant::RestoreOffByOne);
        assert_eq!(restore_position(m, Some(3), 4020), 4021);
        assert_eq!(restore_position(m, None, 0), 0, "a fresh start has no stored position");
        for other in others(Mutant::RestoreOffByOne) {
            let mode = other.map_or(SinkMode::Legacy, SinkMode::Mutant);
            assert_eq!(restore_position(mode, Some(3), 4020), 4020, "{mode}");
        }
        assert_eq!(restore_position(SinkMode::TwopcInject, Some(1), 7), 7);
    }

    #[test]
    fn commit_before_persist_commits_at_the_barrier() {
        assert!(commits_at_barrier(SinkMode::Mutant(Mutant::CommitBeforePersist)));
        assert!(SinkMode::ALL.iter().all(|m| !commits_at_barrier(*m)));
        for other in others(Mutant::CommitBeforePersist).flatten() {
            assert!(!commits_at_barrier(SinkMode::Mutant(other)), "{other:?}");
        }
    }

    #[test]
    fn drop_2pc_flag_never_sends_enable_2pc() {
        assert!(!enable_2pc(Some(Mutant::Drop2pcFlag), true));
        for other in others(Mutant::Drop2pcFlag) {
            assert!(enable_2pc(other, true), "{other:?}");
            assert!(!enable_2pc(other, false), "{other:?}: legacy never asks for it");
        }
    }

    #[test]
    fn reuse_tid_no_fence_keeps_the_recovery_producer() {
        assert!(reuses_recovery_producer(Some(Mutant::ReuseTidNoFence)));
        for other in others(Mutant::ReuseTidNoFence) {
            assert!(!reuses_recovery_producer(other), "{other:?}");
        }
    }
}
