//! When faults fire: time triggers measured from the job's first start, and
//! event triggers matched against the subject's [`JobEvent`]s.
use crate::subject::JobEvent;
use sinkhole_history::fault::{AckedAt, Trigger, TxnAt};
use sinkhole_scenario::{FaultSpec, When};

/// Time-triggered faults due `elapsed_ms` after the job first started, in
/// time order (ties in schedule order).
pub fn due_at(specs: &[FaultSpec], fired: &[bool], elapsed_ms: u64) -> Vec<usize> {
    let mut due: Vec<(u64, usize)> = specs
        .iter()
        .enumerate()
        .filter(|(i, _)| !fired[*i])
        .filter_map(|(i, s)| match s.when {
            When::AtMs(t) if t <= elapsed_ms => Some((t, i)),
            _ => None,
        })
        .collect();
    due.sort();
    due.into_iter().map(|(_, i)| i).collect()
}

/// Faults an event triggers, in schedule order: those waiting for this event
/// of checkpoint n, or — when n never happened (aborted, lost to a failover,
/// declined) — for an earlier id, so "n" means "n, or the first later one".
/// One-shot triggers only; `fired` marks those already fired.
pub fn due_on_event(specs: &[FaultSpec], fired: &[bool], event: &JobEvent) -> Vec<usize> {
    specs.iter().enumerate().filter(|(i, s)| !fired[*i] && event_matches(&s.when, event)).map(|(i, _)| i).collect()
}

/// Whether `event` is the moment trigger `when` waits for.
pub fn event_matches(when: &When, event: &JobEvent) -> bool {
    match (*when, event) {
        (When::CheckpointTriggered(n), JobEvent::CheckpointTriggered { id }) => n <= *id,
        (When::CheckpointAcked { checkpoint, subtask }, JobEvent::CheckpointAcked { id, subtask: s }) => {
            subtask == *s && checkpoint <= *id
        }
        (When::CheckpointPersisted(n), JobEvent::CheckpointPersisted { id }) => n <= *id,
        (When::CheckpointNotified(n), JobEvent::CheckpointNotified { id }) => n <= *id,
        // The first commit of checkpoint n by any worker (live or restored).
        (When::CommitStarted(n), JobEvent::CommitStarted { checkpoint, .. }) => n <= *checkpoint,
        (When::TxnOpened { subtask, checkpoint }, JobEvent::TxnOpened { subtask: s, checkpoint: c, .. })
        | (When::Acknowledged { subtask, checkpoint }, JobEvent::Acknowledged { subtask: s, checkpoint: c })
        | (When::Committed { subtask, checkpoint }, JobEvent::Committed { subtask: s, checkpoint: c }) => {
            subtask == *s && checkpoint.is_none_or(|n| n <= *c)
        }
        _ => false,
    }
}

/// `every_ms` faults due `elapsed_ms` after the job first started: firing
/// k (1-based) is due at k × period. `count[i]` firings happened so far;
/// a fault whose last firing is still in effect (`busy`) waits for its heal
/// (a pause is not stacked on a pause), then fires at once if overdue.
pub fn due_every(specs: &[FaultSpec], count: &[u32], busy: &[bool], elapsed_ms: u64) -> Vec<usize> {
    specs
        .iter()
        .enumerate()
        .filter(|(i, s)| match s.when {
            When::EveryMs(p) if p > 0 => {
                !busy[*i]
                    && s.times.is_none_or(|t| count[*i] < t)
                    && (u64::from(count[*i]) + 1).saturating_mul(p) <= elapsed_ms
            }
            _ => false,
        })
        .map(|(i, _)| i)
        .collect()
}

/// The time firing `count + 1` of an `every_ms` fault is due.
pub fn every_due_ms(period: u64, count: u32) -> u64 {
    (u64::from(count) + 1).saturating_mul(period)
}

/// Why a fault that never fired did not.
pub fn skipped_reason(spec: &FaultSpec, latest_persisted: Option<u64>, job_ran_ms: u64) -> String {
    match spec.when {
        When::AtMs(t) => format!("the job ended after {job_ran_ms} ms, before at_ms {t}"),
        When::EveryMs(p) => format!("the job ended after {job_ran_ms} ms, before the first period of every_ms {p}"),
        When::CheckpointPersisted(n) => match latest_persisted {
            Some(l) => format!("the job ended before checkpoint {n} was persisted (the last was {l})"),
            None => format!("the job ended before checkpoint {n} was persisted (none was)"),
        },
        When::CheckpointTriggered(n) => format!("the job ended before checkpoint {n} was triggered"),
        When::CheckpointAcked { checkpoint, subtask } => {
            format!("the job ended before subtask {subtask} acked checkpoint {checkpoint}")
        }
        When::CheckpointNotified(n) => format!("the job ended before checkpoint {n} was notified"),
        When::CommitStarted(n) => format!("the job ended before any worker started committing checkpoint {n}"),
        When::TxnOpened { subtask, checkpoint: Some(n) } => {
            format!("the job ended before subtask {subtask} opened the transaction of checkpoint {n}")
        }
        When::TxnOpened { subtask, checkpoint: None } => {
            format!("the job ended before subtask {subtask} opened a transaction")
        }
        When::Acknowledged { subtask, checkpoint: Some(n) } => {
            format!("the job ended before subtask {subtask} acknowledged the input of checkpoint {n}")
        }
        When::Acknowledged { subtask, checkpoint: None } => {
            format!("the job ended before subtask {subtask} acknowledged any input")
        }
        When::Committed { subtask, checkpoint: Some(n) } => {
            format!("the job ended before subtask {subtask} reported the commits of checkpoint {n}")
        }
        When::Committed { subtask, checkpoint: None } => {
            format!("the job ended before subtask {subtask} reported any commit")
        }
    }
}

/// An event as the trigger of a fault's effect records it.
pub fn event_trigger(event: &JobEvent) -> Trigger {
    let mut t = Trigger::default();
    match event {
        JobEvent::CheckpointTriggered { id } => t.checkpoint_triggered = Some(*id),
        JobEvent::CheckpointAcked { id, subtask } => {
            t.checkpoint_acked = Some(AckedAt { checkpoint: *id, subtask: *subtask })
        }
        // The old key stays: reports and tests read it.
        JobEvent::CheckpointPersisted { id } => {
            t.after_checkpoint_persisted = Some(*id);
            t.checkpoint_persisted = Some(*id);
        }
        JobEvent::CheckpointNotified { id } => t.checkpoint_notified = Some(*id),
        JobEvent::CommitStarted { subtask, checkpoint, transactional_id, restored } => {
            t.commit_started = Some(TxnAt {
                checkpoint: *checkpoint,
                subtask: Some(*subtask),
                transactional_id: transactional_id.clone(),
                restored: Some(*restored),
            })
        }
        JobEvent::TxnOpened { subtask, checkpoint, transactional_id } => {
            t.txn_opened = Some(TxnAt {
                checkpoint: *checkpoint,
                subtask: Some(*subtask),
                transactional_id: transactional_id.clone(),
                restored: None,
            })
        }
        JobEvent::Acknowledged { subtask, checkpoint } => {
            t.acknowledged = Some(AckedAt { checkpoint: *checkpoint, subtask: *subtask })
        }
        JobEvent::Committed { subtask, checkpoint } => {
            t.committed = Some(AckedAt { checkpoint: *checkpoint, subtask: *subtask })
        }
        JobEvent::Started { .. } | JobEvent::Up { .. } | JobEvent::Down { .. } | JobEvent::Ended => {}
    }
    t
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use sinkhole_scenario::{Brokers, Fault, FaultKind, NamedTarget, Outage, Target, Workers};

    /// A fault of a plain kind, with the least it needs (the nemesis' tests share it).
    pub(in crate::nemesis) fn spec(kind: FaultKind, when: When) -> FaultSpec {
        let all = || Brokers { target: Target::Named(NamedTarget::All) };
        let fault = match kind {
            FaultKind::KillWorkers => Fault::KillWorkers(Workers::default()),
            FaultKind::PauseWorkers => Fault::PauseWorkers(Workers::default()),
            FaultKind::JobOutage => Fault::JobOutage(Outage::default()),
            FaultKind::BrokerKill => Fault::BrokerKill(all()),
            FaultKind::BrokerRestart => Fault::BrokerRestart(all()),
            other => panic!("no plain {other:?} here"),
        };
        FaultSpec::new(fault, when)
    }

    #[test]
    fn time_triggers_fire_once_their_time_has_come_in_time_order() {
        let specs = vec![
            spec(FaultKind::KillWorkers, When::AtMs(500)),
            spec(FaultKind::PauseWorkers, When::CheckpointPersisted(2)),
            spec(FaultKind::BrokerKill, When::AtMs(100)),
            spec(FaultKind::JobOutage, When::AtMs(2_000)),
        ];
        let mut fired = vec![false; 4];
        assert!(due_at(&specs, &fired, 99).is_empty());
        assert_eq!(due_at(&specs, &fired, 100), vec![2]);
        assert_eq!(due_at(&specs, &fired, 600), vec![2, 0]);
        fired[2] = true;
        assert_eq!(due_at(&specs, &fired, 600), vec![0]);
        assert_eq!(due_at(&specs, &fired, 10_000), vec![0, 3]);
    }

    fn persisted(id: u64) -> JobEvent {
        JobEvent::CheckpointPersisted { id }
    }

    #[test]
    fn persist_triggers_fire_at_their_checkpoint_or_the_first_persisted_after_it() {
        let specs = vec![
            spec(FaultKind::KillWorkers, When::CheckpointPersisted(3)),
            spec(FaultKind::BrokerKill, When::CheckpointPersisted(1)),
            spec(FaultKind::JobOutage, When::AtMs(0)),
        ];
        let mut fired = vec![false; 3];
        assert_eq!(due_on_event(&specs, &fired, &persisted(1)), vec![1]);
        fired[1] = true;
        assert!(due_on_event(&specs, &fired, &persisted(2)).is_empty());
        assert_eq!(due_on_event(&specs, &fired, &persisted(3)), vec![0]);
        // Checkpoint 3 was aborted; 4 is the first persisted after it.
        assert_eq!(due_on_event(&specs, &fired, &persisted(4)), vec![0]);
        fired[0] = true;
        assert!(due_on_event(&specs, &fired, &persisted(9)).is_empty());
        let r = skipped_reason(&specs[0], Some(2), 1000);
        assert!(r.contains("checkpoint 3") && r.contains("last was 2"), "{r}");
    }

    #[test]
    fn each_event_trigger_matches_its_own_event_and_source_only() {
        let specs = vec![
            spec(FaultKind::BrokerKill, When::CheckpointTriggered(2)),
            spec(FaultKind::BrokerKill, When::CheckpointAcked { checkpoint: 2, subtask: 1 }),
            spec(FaultKind::BrokerKill, When::CheckpointNotified(2)),
            spec(FaultKind::BrokerKill, When::CommitStarted(2)),
            spec(FaultKind::BrokerKill, When::TxnOpened { subtask: 1, checkpoint: Some(3) }),
            spec(FaultKind::BrokerKill, When::TxnOpened { subtask: 0, checkpoint: None }),
        ];
        let fired = vec![false; specs.len()];
        let due = |e: JobEvent| due_on_event(&specs, &fired, &e);
        // Triggered: 1 is too early, 2 matches, a later one matches too (2 never happened).
        assert!(due(JobEvent::CheckpointTriggered { id: 1 }).is_empty());
        assert_eq!(due(JobEvent::CheckpointTriggered { id: 2 }), vec![0]);
        assert_eq!(due(JobEvent::CheckpointTriggered { id: 5 }), vec![0]);
        // Acked: the subtask must be the one named.
        assert!(due(JobEvent::CheckpointAcked { id: 2, subtask: 0 }).is_empty());
        assert_eq!(due(JobEvent::CheckpointAcked { id: 2, subtask: 1 }), vec![1]);
        assert_eq!(due(JobEvent::CheckpointNotified { id: 2 }), vec![2]);
        assert!(due(JobEvent::CheckpointNotified { id: 1 }).is_empty());
        // Commit started: any worker, checkpoint ≥ 2.
        let commit = |s, n| JobEvent::CommitStarted {
            subtask: s,
            checkpoint: n,
            transactional_id: format!("p-{s}-{n}"),
            restored: false,
        };
        assert!(due(commit(0, 1)).is_empty());
        assert_eq!(due(commit(1, 2)), vec![3]);
        // Txn opened: the subtask's own event; with and without a checkpoint.
        let opened = |s, n| JobEvent::TxnOpened { subtask: s, checkpoint: n, transactional_id: format!("p-{s}-{n}") };
        assert!(due(opened(2, 3)).is_empty());
        assert!(due(opened(1, 2)).is_empty());
        assert_eq!(due(opened(1, 3)), vec![4]);
        assert_eq!(due(opened(0, 1)), vec![5]);
        // Persisted and the job's own lifecycle trigger none of them.
        assert!(due(persisted(9)).is_empty());
        assert!(due(JobEvent::Acknowledged { subtask: 1, checkpoint: 3 }).is_empty());
        assert!(due(JobEvent::Committed { subtask: 1, checkpoint: 3 }).is_empty());
        assert!(due(JobEvent::Up { attempt: 0 }).is_empty());
        for s in &specs {
            assert!(skipped_reason(s, None, 10).starts_with("the job ended before"), "{:?}", s.when);
        }
    }

    #[test]
    fn share_source_triggers_match_their_subtask_and_checkpoint() {
        let specs = vec![
            spec(FaultKind::KillWorkers, When::Acknowledged { subtask: 0, checkpoint: Some(3) }),
            spec(FaultKind::KillWorkers, When::Committed { subtask: 1, checkpoint: Some(3) }),
            spec(FaultKind::KillWorkers, When::Committed { subtask: 0, checkpoint: None }),
        ];
        let fired = vec![false; specs.len()];
        let due = |e: JobEvent| due_on_event(&specs, &fired, &e);
        let acked = |subtask, checkpoint| JobEvent::Acknowledged { subtask, checkpoint };
        let committed = |subtask, checkpoint| JobEvent::Committed { subtask, checkpoint };
        assert!(due(acked(0, 2)).is_empty(), "too early");
        assert!(due(acked(1, 3)).is_empty(), "another subtask");
        assert_eq!(due(acked(0, 3)), vec![0]);
        assert_eq!(due(acked(0, 5)), vec![0], "3 never happened: the first later one");
        assert_eq!(due(committed(1, 3)), vec![1]);
        assert_eq!(due(committed(0, 1)), vec![2], "no checkpoint: the first");
        assert!(due(JobEvent::CommitStarted {
            subtask: 1,
            checkpoint: 3,
            transactional_id: "p-1-3".into(),
            restored: false
        })
        .is_empty());
        let t = serde_json::to_value(event_trigger(&acked(0, 3))).unwrap();
        assert_eq!(t, serde_json::json!({"acknowledged": {"checkpoint": 3, "subtask": 0}}));
        assert_eq!(event_trigger(&committed(1, 4)).checkpoint(), Some(4));
        let r = skipped_reason(&specs[0], None, 10);
        assert!(r.contains("subtask 0 acknowledged the input of checkpoint 3"), "{r}");
        assert!(skipped_reason(&specs[2], None, 10).contains("reported any commit"));
    }

    #[test]
    fn every_ms_fires_once_per_period_up_to_times_and_waits_while_busy() {
        let mut s = spec(FaultKind::PauseWorkers, When::EveryMs(1_000));
        s.times = Some(2);
        let specs =
            vec![s, spec(FaultKind::KillWorkers, When::EveryMs(300)), spec(FaultKind::KillWorkers, When::AtMs(0))];
        let idle = [false; 3];
        assert!(due_every(&specs, &[0, 0, 0], &idle, 299).is_empty());
        assert_eq!(due_every(&specs, &[0, 0, 0], &idle, 300), vec![1]);
        assert!(due_every(&specs, &[0, 1, 0], &idle, 599).is_empty());
        assert_eq!(due_every(&specs, &[0, 1, 0], &idle, 1_000), vec![0, 1]);
        // Still paused from the first firing: the second waits, then fires late.
        assert_eq!(due_every(&specs, &[1, 5, 0], &[true, false, false], 2_000), vec![1]);
        assert_eq!(due_every(&specs, &[1, 8, 0], &idle, 2_500), vec![0]);
        // `times` reached: never again; without `times`, until the job ends.
        assert!(due_every(&specs, &[2, 100, 0], &idle, 30_001).iter().all(|&i| i == 1));
        assert_eq!(due_every(&specs, &[2, 100, 0], &idle, 30_300), vec![1]);
        assert_eq!(every_due_ms(300, 8), 2_700);
    }

    #[test]
    fn event_triggers_are_recorded_with_the_keys_reports_read() {
        let t = serde_json::to_value(event_trigger(&persisted(3))).unwrap();
        assert_eq!(t, serde_json::json!({"after_checkpoint_persisted": 3, "checkpoint_persisted": 3}));
        let t = event_trigger(&JobEvent::CommitStarted {
            subtask: 1,
            checkpoint: 4,
            transactional_id: "p-1-4".into(),
            restored: true,
        });
        assert_eq!(t.checkpoint(), Some(4));
        assert_eq!(t.transaction(), Some((1, "p-1-4".to_string())));
        assert_eq!(
            serde_json::to_value(&t).unwrap(),
            serde_json::json!({"commit_started": {"checkpoint": 4, "subtask": 1, "transactional_id": "p-1-4", "restored": true}})
        );
    }
}
