//! Both sides of every premise: met, unmet (and why), preempted.
use sinkhole_model::{CommitOutcome, Event, EventKind, SinkMode, Source};

use super::*;
use sinkhole_history::fault::{WhileFrozen, WorkersStart};
use sinkhole_scenario::premise::{PremiseOf, Premises};

fn view(tid: &str, state: &str) -> TxnView {
    TxnView {
        transactional_id: tid.into(),
        state: state.into(),
        producer_id: 1000,
        producer_epoch: 3,
        timeout_ms: 5000,
        error: None,
    }
}

fn not_found(tid: &str) -> TxnView {
    TxnView { error: Some("TRANSACTIONAL_ID_NOT_FOUND (105)".into()), state: String::new(), ..view(tid, "") }
}

fn event(kind: EventKind) -> Event {
    Event { wall_ms: 0, mono_us: 0, mode: SinkMode::Legacy, source: Source::Checker, kind }
}

fn look(checkpoint: u64, at: LookedAt, views: Vec<TxnView>) -> Event {
    let o = Observation {
        look: Look::Checkpoint { checkpoint },
        at_ms: 10_500,
        looked_at: Some(at),
        transactions: Transactions::Seen(views),
        note: None,
    };
    event(o.to_event())
}

fn restored_commit(tid: &str, checkpoint: u64, outcome: CommitOutcome) -> Event {
    event(EventKind::CommitFinished {
        transactional_id: tid.into(),
        checkpoint,
        restored: true,
        outcome,
        latency_us: 1,
    })
}

fn on_checkpoint(kind: PremiseKind, n: u64) -> Premises {
    let of = Some(PremiseOf { checkpoint: Some(n), fault: None, before: None });
    match kind {
        PremiseKind::TimeoutAbort => Premises { timeout_abort: of, ..Premises::default() },
        PremiseKind::OutlivesTimeout => Premises { outlives_timeout: of, ..Premises::default() },
        PremiseKind::Superseded => Premises { superseded: of, ..Premises::default() },
        PremiseKind::ActedBefore => unreachable!("acted_before names faults"),
        PremiseKind::DeliveryLimit | PremiseKind::Redelivery => unreachable!("a share group's premises name none"),
    }
}

fn one(p: &Premises, faults: &[FaultRecord], events: &[Event]) -> PremiseRecord {
    let mut v = evaluate(p, faults, events);
    assert_eq!(v.len(), 1);
    v.remove(0)
}

#[test]
fn timeout_abort_of_a_checkpoint_met_when_the_broker_aborted_every_transaction() {
    let p = on_checkpoint(PremiseKind::TimeoutAbort, 3);
    let events = vec![
        look(
            3,
            LookedAt::Deadline,
            vec![view("x-0-3", "CompleteAbort"), view("x-1-3", "PrepareAbort"), not_found("x-2-3")],
        ),
        restored_commit("x-0-3", 3, CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() }),
    ];
    let r = one(&p, &[], &events);
    assert_eq!(r.premise, "timeout_abort {checkpoint: 3}");
    assert_eq!(r.held, Held::Met, "{}", r.evidence);
    assert!(r.evidence.contains("x-0-3 CompleteAbort, x-1-3 PrepareAbort"), "{}", r.evidence);
    assert!(r.evidence.contains("the restore's commit: x-0-3 dropped: PRODUCER_FENCED (90)"), "{}", r.evidence);
    assert!(unmet(&[r]).is_none());
}

#[test]
fn timeout_abort_unmet_when_the_broker_had_not_aborted_them() {
    // The slow abort scan: at the restore the transaction is still open, and the restore commits it.
    let p = on_checkpoint(PremiseKind::TimeoutAbort, 3);
    let events = vec![
        look(3, LookedAt::Restore, vec![view("x-0-3", "Ongoing"), view("x-1-3", "Ongoing")]),
        restored_commit("x-0-3", 3, CommitOutcome::Committed),
    ];
    let r = one(&p, &[], &events);
    assert_eq!(r.held, Held::Unmet);
    assert!(r.evidence.contains("at the restore"), "{}", r.evidence);
    assert!(r.evidence.contains("had not aborted them"), "{}", r.evidence);
    let why = unmet(std::slice::from_ref(&r)).unwrap();
    assert!(why.starts_with("premise timeout_abort {checkpoint: 3} not met: "), "{why}");
    // The restore won the race to the coordinator and committed first: still unmet.
    let events = vec![look(3, LookedAt::Restore, vec![view("x-0-3", "CompleteCommit")])];
    assert_eq!(one(&p, &[], &events).held, Held::Unmet);
    // Never persisted, nothing known, or the look failed: unmet, and said.
    let r = one(&p, &[], &[]);
    assert_eq!(r.held, Held::Unmet);
    assert!(r.evidence.contains("never persisted"), "{}", r.evidence);
    assert_eq!(one(&p, &[], &[look(3, LookedAt::Deadline, vec![not_found("x-0-3")])]).held, Held::Unmet);
    let failed = Observation {
        look: Look::Checkpoint { checkpoint: 3 },
        at_ms: 1,
        looked_at: Some(LookedAt::Deadline),
        transactions: Transactions::Error { error: "no broker".into() },
        note: None,
    };
    let r = one(&p, &[], &[event(failed.to_event())]);
    assert_eq!(r.held, Held::Unmet);
    assert!(r.evidence.contains("no broker"), "{}", r.evidence);
    // A look at another checkpoint says nothing about this one.
    assert_eq!(one(&p, &[], &[look(4, LookedAt::Deadline, vec![view("x-0-4", "CompleteAbort")])]).held, Held::Unmet);
}

#[test]
fn timeout_abort_preempted_when_the_sink_committed_in_time() {
    let p = on_checkpoint(PremiseKind::TimeoutAbort, 3);
    let r = one(&p, &[], &[look(3, LookedAt::Deadline, vec![view("x-0-3", "CompleteCommit")])]);
    assert_eq!(r.held, Held::Preempted);
    assert!(unmet(&[r]).is_none(), "a preempted premise is judged as usual");
}

#[test]
fn outlives_timeout_met_while_open_or_committed_unmet_when_aborted() {
    let p = on_checkpoint(PremiseKind::OutlivesTimeout, 3);
    let r = one(&p, &[], &[look(3, LookedAt::Deadline, vec![view("x-0-3", "Ongoing"), view("x-1-3", "Ongoing")])]);
    assert_eq!(r.held, Held::Met);
    assert_eq!(one(&p, &[], &[look(3, LookedAt::Restore, vec![view("x-0-3", "CompleteCommit")])]).held, Held::Met);
    let r =
        one(&p, &[], &[look(3, LookedAt::Deadline, vec![view("x-0-3", "Ongoing"), view("x-1-3", "CompleteAbort")])]);
    assert_eq!(r.held, Held::Unmet);
    assert!(r.evidence.contains("the broker aborted them"), "{}", r.evidence);
}

fn pause(name: &str, frozen: Option<Vec<TxnView>>) -> FaultRecord {
    FaultRecord {
        name: name.into(),
        kind: "pause-workers".into(),
        fired: true,
        confirmed: true,
        effect: FaultEffect::Fired {
            start: Start::Workers(WorkersStart {
                trigger: Default::default(),
                attempt: 0,
                workers: vec![],
                duration_ms: Some(8000),
                open_transactions: Some(vec!["x-0-3".into()]),
                while_frozen: frozen.map(|v| WhileFrozen {
                    after_ms: 5500,
                    transactions: Transactions::Seen(v),
                    note: None,
                }),
                outage_ms: None,
            }),
            end: None,
            firings: None,
        },
    }
}

#[test]
fn premises_of_a_pause_read_its_look_while_frozen() {
    let abort = Premises {
        timeout_abort: Some(PremiseOf { checkpoint: None, fault: Some("freeze-0".into()), before: None }),
        ..Premises::default()
    };
    let r = one(&abort, &[pause("freeze-0", Some(vec![view("x-0-3", "CompleteAbort")]))], &[]);
    assert_eq!(r.held, Held::Met, "{}", r.evidence);
    assert!(r.evidence.contains("5500 ms into the pause: x-0-3 CompleteAbort"), "{}", r.evidence);
    let r = one(&abort, &[pause("freeze-0", Some(vec![view("x-0-3", "Ongoing")]))], &[]);
    assert_eq!(r.held, Held::Unmet);
    let r = one(&abort, &[pause("freeze-0", None)], &[]);
    assert_eq!(r.held, Held::Unmet);
    assert!(r.evidence.contains("took no look"), "{}", r.evidence);
    assert_eq!(one(&abort, &[pause("other", None)], &[]).held, Held::Unmet);
    let skipped = FaultRecord {
        effect: FaultEffect::Skipped { skipped: "the job ended first".into() },
        fired: false,
        confirmed: false,
        ..pause("freeze-0", None)
    };
    assert!(one(&abort, &[skipped], &[]).evidence.contains("did not fire"));

    let keep = Premises {
        outlives_timeout: Some(PremiseOf { checkpoint: None, fault: Some("freeze-0".into()), before: None }),
        ..Premises::default()
    };
    assert_eq!(one(&keep, &[pause("freeze-0", Some(vec![view("x-0-3", "Ongoing")]))], &[]).held, Held::Met);
    assert_eq!(one(&keep, &[pause("freeze-0", Some(vec![view("x-0-3", "CompleteAbort")]))], &[]).held, Held::Unmet);
}

#[test]
fn a_mutant_holds_a_premise_its_base_met_in_the_same_run() {
    let rec = |held, evidence: &str| PremiseRecord {
        premise: "outlives_timeout {checkpoint: 3}".into(),
        held,
        evidence: evidence.into(),
    };
    let base = [rec(Held::Met, "x-0-3 Ongoing")];
    let r = with_base(vec![rec(Held::Unmet, "y-0-3 CompleteAbort")], "twopc-inject", &base);
    assert_eq!(r[0].held, Held::Met);
    assert!(
        r[0].evidence.starts_with("met for the faithful twopc-inject in this run (x-0-3 Ongoing)"),
        "{}",
        r[0].evidence
    );
    assert!(r[0].evidence.contains("y-0-3 CompleteAbort"), "{}", r[0].evidence);
    // The base did not meet it either (the environment failed): still unmet.
    let r = with_base(vec![rec(Held::Unmet, "y")], "twopc-inject", &[rec(Held::Unmet, "x")]);
    assert_eq!(r[0].held, Held::Unmet);
    // No base in the run, or another premise: unchanged; a preempted one stays so.
    assert_eq!(with_base(vec![rec(Held::Unmet, "y")], "twopc-inject", &[]), vec![rec(Held::Unmet, "y")]);
    assert_eq!(with_base(vec![rec(Held::Preempted, "y")], "twopc-inject", &base), vec![rec(Held::Preempted, "y")]);
}

fn superseded_look(restored_from: u64, views: Vec<TxnView>) -> Event {
    let o = Observation {
        look: Look::Superseded { restored_from },
        at_ms: 21_000,
        looked_at: None,
        transactions: Transactions::Seen(views),
        note: Some("3 Ongoing under x-*".into()),
    };
    event(o.to_event())
}

#[test]
fn superseded_met_only_when_the_resubmission_found_a_reopened_precommitted_id() {
    let p = on_checkpoint(PremiseKind::Superseded, 4);
    let r = one(&p, &[], &[superseded_look(4, vec![view("x-1-1", "Ongoing")])]);
    assert_eq!(r.held, Held::Met, "{}", r.evidence);
    assert!(r.evidence.contains("x-1-1 (producer 1000 epoch 3)"), "{}", r.evidence);
    // The outage came before the id was reopened: nothing superseded, the scenario did not run.
    let r = one(&p, &[], &[superseded_look(4, vec![])]);
    assert_eq!(r.held, Held::Unmet);
    assert!(r.evidence.contains("no transaction under its ids was Ongoing at a newer epoch"), "{}", r.evidence);
    // Resubmitted from another checkpoint, or never.
    let r = one(&p, &[], &[superseded_look(3, vec![view("x-1-1", "Ongoing")])]);
    assert_eq!((r.held, r.evidence.as_str()), (Held::Unmet, "the job was never resubmitted from checkpoint 4"));
    assert_eq!(p.checkpoints(), Vec::<u64>::new(), "no timeout look is scheduled for it");
    assert_eq!(p.list()[0].to_string(), "superseded {checkpoint: 4}");
}

/// The marker bug's trigger: the proxy held the coordinator's markers before the node was killed.
mod acted_before {
    use super::*;
    use sinkhole_history::fault::{RuleEnd, Start};

    fn premise() -> Premises {
        Premises {
            acted_before: Some(PremiseOf {
                checkpoint: None,
                fault: Some("hold".into()),
                before: Some("crash".into()),
            }),
            ..Premises::default()
        }
    }

    /// The hold fault, ended with these stats (`delayed` frames at `times`).
    fn hold(times: &[u64]) -> FaultRecord {
        let n = times.len();
        let samples: Vec<String> =
            times.iter().map(|t| format!("WriteTxnMarkers v2 request corr {t} broker-1 → broker-1: delayed")).collect();
        let stats = serde_json::from_value(serde_json::json!({
            "matched": n, "dropped": 0, "delayed": n, "errors_injected": 0, "connections_reset": 0,
            "samples": samples, "sample_ms": times,
        }))
        .unwrap();
        FaultRecord {
            name: "hold".into(),
            kind: "protocol-delay".into(),
            fired: true,
            confirmed: !times.is_empty(),
            effect: FaultEffect::Fired {
                start: Start::Other(serde_json::Value::Null),
                end: Some(End::Rule(RuleEnd { rule_id: 1, stats, acted: !times.is_empty(), why_unconfirmed: None })),
                firings: None,
            },
        }
    }

    fn crash_at(ms: u64) -> Event {
        Event {
            wall_ms: ms,
            ..event(EventKind::FaultStarted {
                name: "crash".into(),
                fault: "broker-kill".into(),
                effect: serde_json::Value::Null,
            })
        }
    }

    #[test]
    fn met_when_the_hold_acted_before_the_crash() {
        let r = one(&premise(), &[hold(&[1_000, 5_000])], &[crash_at(1_400)]);
        assert_eq!(r.held, Held::Met, "{r:?}");
        assert_eq!(r.premise, "acted_before {fault: hold, before: crash}");
        assert!(r.evidence.contains("400 ms before crash") && r.evidence.contains("corr 1000"), "{}", r.evidence);
    }

    #[test]
    fn unmet_when_the_crash_came_first_or_nothing_was_held() {
        let late = one(&premise(), &[hold(&[2_000])], &[crash_at(1_400)]);
        assert_eq!(late.held, Held::Unmet);
        assert!(late.evidence.contains("600 ms after crash fired"), "{}", late.evidence);
        assert!(unmet(&[late]).unwrap().contains("never reached the state"));

        let none = one(&premise(), &[hold(&[])], &[crash_at(1_400)]);
        assert_eq!(none.held, Held::Unmet);
        assert!(none.evidence.contains("acted on no frame"), "{}", none.evidence);

        let no_crash = one(&premise(), &[hold(&[1_000])], &[]);
        assert_eq!(no_crash.held, Held::Unmet);
        assert!(no_crash.evidence.contains("crash never fired"), "{}", no_crash.evidence);

        let skipped =
            FaultRecord { effect: FaultEffect::Skipped { skipped: "no trigger".into() }, fired: false, ..hold(&[]) };
        let r = one(&premise(), &[skipped], &[crash_at(1)]);
        assert_eq!(r.held, Held::Unmet);
        assert!(r.evidence.contains("did not fire: no trigger"), "{}", r.evidence);
    }

    #[test]
    fn stats_without_times_prove_nothing() {
        let mut old = hold(&[1_000]);
        if let FaultEffect::Fired { end: Some(End::Rule(r)), .. } = &mut old.effect {
            r.stats.sample_ms.clear();
        }
        let r = one(&premise(), &[old], &[crash_at(1_400)]);
        assert_eq!(r.held, Held::Unmet);
        assert!(r.evidence.contains("keep no times"), "{}", r.evidence);
    }
}
