//! Whether a mode's premises held (`scenario::premise`), judged from what the
//! rig observed — the observer's looks at a checkpoint's transactions, a
//! pause's look at the transactions it froze open, and the answers the
//! restore's commits got — and never from the counts the premise is meant
//! to explain.
//!
//! A premise is
//! - **met**: the broker did what the expectation rests on;
//! - **unmet**: it did not (a transaction still `Ongoing` past its timeout
//!   and one abort scan, or found open by the restore) — the verdict is then
//!   inconclusive: the scenario that ran is not the one written;
//! - **preempted**: the sink settled the transactions before the premise
//!   could come true (committed them in time): nothing was asked of the
//!   broker, and the counts are judged as usual.
//!
//! A share group's premises (`delivery_limit`, `redelivery`) are about the
//! group's deliveries, not transactions: [`share`] judges them from the
//! group's view once the run is drained; [`evaluate`] leaves them out.
use serde::{Deserialize, Serialize};
use sinkhole_model::{CommitOutcome, Event, EventKind};

use sinkhole_history::fault::{End, FaultEffect, FaultRecord, Start, Transactions, TxnView};
use sinkhole_history::observation::{self, Look, LookedAt, Observation};
use sinkhole_scenario::premise::{Premise, PremiseKind, Premises};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Held {
    Met,
    Unmet,
    Preempted,
}

impl Held {
    pub fn name(self) -> &'static str {
        match self {
            Held::Met => "met",
            Held::Unmet => "unmet",
            Held::Preempted => "preempted",
        }
    }
}

/// One premise and what became of it, as verdict.json keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PremiseRecord {
    /// As written: `timeout_abort {checkpoint: 3}`.
    pub premise: String,
    pub held: Held,
    /// What the rig saw, in a sentence.
    pub evidence: String,
}

/// Every premise of `premises` about transactions, judged (a share group's: [`share::evaluate`]).
pub fn evaluate(premises: &Premises, faults: &[FaultRecord], events: &[Event]) -> Vec<PremiseRecord> {
    let looks = Observation::from_events(events);
    premises
        .list()
        .into_iter()
        .filter(|p| !p.kind.of_share_group())
        .map(|p| {
            let (held, evidence) = match (&p.of.checkpoint, &p.of.fault) {
                (_, Some(name)) if p.kind == PremiseKind::ActedBefore => {
                    acted_before(name, p.of.before.as_deref().unwrap_or(""), faults, events)
                }
                (Some(n), _) if p.kind == PremiseKind::Superseded => superseded(*n, &looks),
                (Some(n), _) => of_checkpoint(&p, *n, &looks, events),
                (None, Some(name)) => of_fault(&p, name, faults),
                (None, None) => (Held::Unmet, "the premise names no transactions".to_string()),
            };
            PremiseRecord { premise: p.to_string(), held, evidence }
        })
        .collect()
}

/// A mutant's premises, beside those its faithful base mode had in the same
/// run (same cluster, same faults): a premise the base met but the mutant's
/// own look did not is held as met. The scenario's environment did what the
/// expectation rests on — the faithful sink showed it — so the difference
/// is the mutant's deviation, and the counts are judged (calibration must
/// not call a mutant inconclusive for the very effect its bug causes, e.g.
/// `twopc-inject~drop-2pc-flag`'s transactions aborted by timeout).
pub fn with_base(own: Vec<PremiseRecord>, base_mode: &str, base: &[PremiseRecord]) -> Vec<PremiseRecord> {
    own.into_iter()
        .map(|r| match base.iter().find(|b| b.premise == r.premise && b.held == Held::Met) {
            Some(b) if r.held == Held::Unmet => PremiseRecord {
                premise: r.premise,
                held: Held::Met,
                evidence: format!(
                    "met for the faithful {base_mode} in this run ({}); this mode's own view: {} — the difference is the mutant's deviation",
                    b.evidence, r.evidence
                ),
            },
            _ => r,
        })
        .collect()
}

/// The first unmet premise, for the verdict's reason.
pub fn unmet(records: &[PremiseRecord]) -> Option<String> {
    let bad: Vec<String> = records
        .iter()
        .filter(|r| r.held == Held::Unmet)
        .map(|r| format!("premise {} not met: {}", r.premise, r.evidence))
        .collect();
    if bad.is_empty() {
        None
    } else {
        Some(bad.join("; "))
    }
}

fn states(views: &[&TxnView]) -> String {
    views.iter().map(|t| format!("{} {}", t.transactional_id, t.state)).collect::<Vec<_>>().join(", ")
}

/// The answers the restores' commits of checkpoint `n` got, from the history.
fn restore_answers(n: u64, events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CommitFinished { transactional_id, checkpoint, restored: true, outcome, .. }
                if *checkpoint == n =>
            {
                Some(match outcome {
                    CommitOutcome::Committed => format!("{transactional_id} committed"),
                    CommitOutcome::Dropped { error } => format!("{transactional_id} dropped: {error}"),
                    CommitOutcome::Failed { error } => format!("{transactional_id} failed: {error}"),
                })
            }
            _ => None,
        })
        .collect()
}

/// The transactions a look found (an id the coordinator does not know, an
/// empty transaction that never wrote, left out), or why there are none.
fn found(o: &Observation) -> Result<Vec<&TxnView>, String> {
    match &o.transactions {
        Transactions::Error { error } => Err(format!("the look at {} ms failed: {error}", o.at_ms)),
        Transactions::Seen(v) => {
            let present: Vec<&TxnView> = v.iter().filter(|t| t.error.is_none()).collect();
            if present.is_empty() {
                Err(format!("the coordinator knew none of them at {} ms: {}", o.at_ms, o.summary()))
            } else {
                Ok(present)
            }
        }
    }
}

/// `superseded {checkpoint: N}`: the Flink subject's look when it resubmitted from N.
fn superseded(n: u64, looks: &[Observation]) -> (Held, String) {
    let Some(o) = looks.iter().find(|o| o.look == Look::Superseded { restored_from: n }) else {
        return (Held::Unmet, format!("the job was never resubmitted from checkpoint {n}"));
    };
    let note = o.note.as_deref().map(|t| format!(" ({t})")).unwrap_or_default();
    match &o.transactions {
        Transactions::Error { error } => (Held::Unmet, format!("the look at {} ms failed: {error}", o.at_ms)),
        Transactions::Seen(v) if v.is_empty() => (
            Held::Unmet,
            format!(
                "when the job was resubmitted from checkpoint {n} ({} ms), no transaction under its ids was Ongoing at a newer epoch{note}",
                o.at_ms
            ),
        ),
        Transactions::Seen(v) => (
            Held::Met,
            format!(
                "Ongoing when the job was resubmitted from checkpoint {n} ({} ms): {}",
                o.at_ms,
                v.iter()
                    .map(|t| format!("{} (producer {} epoch {})", t.transactional_id, t.producer_id, t.producer_epoch))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    }
}

fn of_checkpoint(p: &Premise, n: u64, looks: &[Observation], events: &[Event]) -> (Held, String) {
    let Some(o) = looks.iter().rev().find(|o| o.look == Look::Checkpoint { checkpoint: n }) else {
        return (Held::Unmet, format!("checkpoint {n} was never persisted, so its transactions were not looked at"));
    };
    let views = match found(o) {
        Ok(v) => v,
        Err(why) => return (Held::Unmet, why),
    };
    let when = match o.looked_at {
        Some(LookedAt::Restore) => format!("at the restore, {} ms into the job", o.at_ms),
        _ => format!("{} ms into the job, past their timeout and one abort scan", o.at_ms),
    };
    let answers = restore_answers(n, events);
    let answered =
        if answers.is_empty() { String::new() } else { format!("; the restore's commit: {}", answers.join(", ")) };
    let seen = format!("the broker's view {when}: {}{answered}", states(&views));
    let any = |f: fn(&TxnView) -> bool| views.iter().any(|t| f(t));
    let all = |f: fn(&TxnView) -> bool| views.iter().all(|t| f(t));
    match p.kind {
        PremiseKind::TimeoutAbort if all(observation::aborted) => (Held::Met, seen),
        PremiseKind::TimeoutAbort if any(observation::ongoing) => {
            (Held::Unmet, format!("{seen} — the broker had not aborted them by their timeout"))
        }
        PremiseKind::TimeoutAbort if o.looked_at == Some(LookedAt::Restore) => {
            (Held::Unmet, format!("{seen} — the restore found them open: the broker had not aborted them"))
        }
        PremiseKind::TimeoutAbort if any(observation::committed) => {
            (Held::Preempted, format!("{seen} — the sink committed them before their timeout"))
        }
        PremiseKind::TimeoutAbort => (Held::Unmet, format!("{seen} — not aborted")),
        PremiseKind::OutlivesTimeout if any(observation::aborted) => {
            (Held::Unmet, format!("{seen} — the broker aborted them"))
        }
        PremiseKind::OutlivesTimeout => (Held::Met, seen),
        PremiseKind::Superseded => unreachable!("superseded is judged from its own look, in evaluate"),
        PremiseKind::ActedBefore => unreachable!("acted_before names faults, judged in evaluate"),
        PremiseKind::DeliveryLimit | PremiseKind::Redelivery => unreachable!("judged by premise::share"),
    }
}

fn of_fault(p: &Premise, name: &str, faults: &[FaultRecord]) -> (Held, String) {
    let Some(f) = faults.iter().find(|f| f.name == name) else {
        return (Held::Unmet, format!("fault {name} is not in the run"));
    };
    let frozen = match &f.effect {
        FaultEffect::Fired { start, firings, .. } => {
            let last = firings.as_ref().and_then(|v| v.last()).map(|fi| &fi.start).unwrap_or(start);
            match last {
                Start::Workers(w) => w.while_frozen.clone(),
                _ => None,
            }
        }
        FaultEffect::Skipped { skipped } => return (Held::Unmet, format!("fault {name} did not fire: {skipped}")),
    };
    let Some(w) = frozen else {
        return (Held::Unmet, format!("fault {name} took no look at the transactions it froze (it ended first)"));
    };
    let o = Observation {
        look: Look::Checkpoint { checkpoint: 0 },
        at_ms: u64::try_from(w.after_ms).unwrap_or(0),
        looked_at: None,
        transactions: w.transactions.clone(),
        note: w.note.clone(),
    };
    let views = match found(&o) {
        Ok(v) => v,
        Err(why) => return (Held::Unmet, format!("{why} (ms after the pause began)")),
    };
    let note = w.note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default();
    let seen = format!("the broker's view {} ms into the pause: {}{note}", w.after_ms, states(&views));
    let any = |f: fn(&TxnView) -> bool| views.iter().any(|t| f(t));
    let all = |f: fn(&TxnView) -> bool| views.iter().all(|t| f(t));
    match p.kind {
        PremiseKind::TimeoutAbort if all(observation::aborted) => (Held::Met, seen),
        PremiseKind::TimeoutAbort => (Held::Unmet, format!("{seen} — the broker had not aborted them")),
        PremiseKind::OutlivesTimeout if any(observation::aborted) => {
            (Held::Unmet, format!("{seen} — the broker aborted them"))
        }
        PremiseKind::OutlivesTimeout => (Held::Met, seen),
        // Refused at validation: superseded names a checkpoint, a share group's premises nothing.
        PremiseKind::Superseded => (Held::Unmet, format!("superseded is about a checkpoint's ids, not fault {name}")),
        PremiseKind::ActedBefore => unreachable!("acted_before is judged in evaluate"),
        PremiseKind::DeliveryLimit | PremiseKind::Redelivery => unreachable!("judged by premise::share"),
    }
}

/// `acted_before {fault: A, before: B}`: the proxy rule of A acted on a frame before B fired —
/// from A's rule stats (when each frame it acted on passed) and B's `fault-started` event.
fn acted_before(a: &str, b: &str, faults: &[FaultRecord], events: &[Event]) -> (Held, String) {
    let Some(fa) = faults.iter().find(|f| f.name == a) else {
        return (Held::Unmet, format!("fault {a} is not in the run"));
    };
    let ends: Vec<&End> = match &fa.effect {
        FaultEffect::Skipped { skipped } => return (Held::Unmet, format!("fault {a} did not fire: {skipped}")),
        FaultEffect::Fired { end, firings: Some(all), .. } => {
            all.iter().filter_map(|f| f.end.as_ref()).chain(end.as_ref()).collect()
        }
        FaultEffect::Fired { end, .. } => end.iter().collect(),
    };
    let stats: Vec<_> = ends
        .into_iter()
        .filter_map(|e| match e {
            End::Rule(r) => Some(&r.stats),
            _ => None,
        })
        .collect();
    let fired_b = events.iter().find_map(|e| match &e.kind {
        EventKind::FaultStarted { name, .. } if name == b => Some(e.wall_ms),
        _ => None,
    });
    let Some(b_ms) = fired_b else {
        return (Held::Unmet, format!("fault {b} never fired, so nothing came before it"));
    };
    if stats.is_empty() {
        return (Held::Unmet, format!("fault {a} has no proxy rule stats (it did not end, or is no proxy fault)"));
    }
    if !stats.iter().any(|s| s.acted()) {
        return (
            Held::Unmet,
            format!("fault {a}'s rule acted on no frame: the state {b} was to meet was never reached"),
        );
    }
    let first = stats.iter().flat_map(|s| s.timed_samples()).filter_map(|(t, what)| t.map(|t| (t, what))).min();
    match first {
        None => (Held::Unmet, format!("fault {a} acted, but its stats keep no times (written by an older rig)")),
        Some((t, what)) if t < b_ms => {
            (Held::Met, format!("{a} acted {} ms before {b} fired: {what}", b_ms - t))
        }
        Some((t, what)) => (
            Held::Unmet,
            format!(
                "{a} first acted {} ms after {b} fired ({what}): when {b} came, nothing was held yet — the run never reached the state the expectation rests on",
                t - b_ms
            ),
        ),
    }
}

pub mod share;

#[cfg(test)]
mod tests;
