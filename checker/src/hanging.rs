//! Transactions left open after a finished job, and whose doing each one is.
//!
//! A finished job leaves no transaction open: Flink's `KafkaCommitter` commits every
//! committable of the last checkpoint (and a restore's committables first thing), the
//! `ExactlyOnceKafkaWriter` aborts the lingering transactions of earlier attempts when it
//! starts and what it has open when it closes. So a transaction of the mode still open once
//! the job has ended is a failure, and the only question is whose:
//!
//! - **the sink's** (`hanging_transaction`): its coordinator still has it Ongoing — nobody
//!   ever ended it. With Enable2Pc (KIP-939) the broker never times it out: every
//!   read_committed reader of its partitions stops there for good. A two-phase sink that
//!   forgets a restored prepared transaction is the worst failure KIP-939 can bring, and this
//!   is how it shows;
//! - **the broker's** (`missing_marker`): a partition holds it open while its coordinator has
//!   it finished (CompleteCommit, CompleteAbort), still finishing (PrepareCommit,
//!   PrepareAbort) or not at all — the coordinator never wrote that partition's marker, as
//!   Kafka 4.3–4.4 skip the markers of a partition that has no leader. Or the coordinator
//!   answered the sink's commit and has the transaction Ongoing again. Still data lost to
//!   every reader: a finding against Kafka, not an excuse.
//!
//! The evidence is the brokers' own answers — the look at the end ([`crate::open_txn::look_at_end`]:
//! ListTransactions and DescribeTransactions) and each stuck partition's holder
//! ([`crate::open_txn::explain`]: DescribeProducers) — tied to the history: the checkpoint
//! whose committable the transaction was, whether a restore had it in its state
//! (`StateRestored`) and whether anything committed it after. Pure: the looks are data, so
//! `sinkhole check` judges a stored run the same way.
use std::collections::BTreeMap;

use sinkhole_model::{CommitOutcome, Event, EventKind, Source};

use crate::report::{is_hanging, EndLook, UncommittedTail};
pub use crate::report::{Hanging, Whose};

/// What the history says of one transactional id (its latest transaction).
#[derive(Debug, Default)]
struct Told {
    subtask: Option<u32>,
    checkpoint: Option<u64>,
    precommitted: bool,
    /// The last restore whose state held it: (attempt, checkpoint), and the history position.
    restored: Option<(u32, u64, usize)>,
    /// A restored commit of it started after that restore.
    commit_after_restore: bool,
    /// The last commit's outcome, after its latest opening.
    outcome: Option<CommitOutcome>,
    aborted: Option<String>,
    seen: bool,
}

/// What the history says of each id in `ids`.
fn told(events: &[Event], ids: &[&str]) -> BTreeMap<String, Told> {
    let mut out: BTreeMap<String, Told> = ids.iter().map(|t| (t.to_string(), Told::default())).collect();
    let mut attempt = 0;
    for (i, e) in events.iter().enumerate() {
        let subtask = match e.source {
            Source::Worker { subtask } => Some(subtask),
            _ => None,
        };
        match &e.kind {
            EventKind::JobStarted { attempt: a, .. } => attempt = *a,
            EventKind::TxnOpened { transactional_id, checkpoint } => {
                if let Some(t) = out.get_mut(transactional_id) {
                    // A new incarnation of the id: what became of the earlier one is not its.
                    t.outcome = None;
                    t.aborted = None;
                    t.seen = true;
                    t.subtask = subtask.or(t.subtask);
                    t.checkpoint = Some(*checkpoint);
                }
            }
            EventKind::TxnPrecommitted { committable, .. } => {
                if let Some(t) = out.get_mut(&committable.transactional_id) {
                    t.seen = true;
                    t.precommitted = true;
                    t.subtask = subtask.or(t.subtask);
                    t.checkpoint = Some(committable.checkpoint);
                }
            }
            EventKind::StateRestored { checkpoint, committables } => {
                for c in committables {
                    if let Some(t) = out.get_mut(&c.transactional_id) {
                        t.seen = true;
                        t.restored = Some((attempt, *checkpoint, i));
                        t.commit_after_restore = false;
                        t.subtask = subtask.or(t.subtask);
                        t.checkpoint = Some(c.checkpoint);
                    }
                }
            }
            EventKind::CommitStarted { transactional_id, restored: true, .. } => {
                if let Some(t) = out.get_mut(transactional_id) {
                    t.commit_after_restore |= t.restored.is_some_and(|(_, _, at)| at < i);
                }
            }
            EventKind::CommitFinished { transactional_id, outcome, .. } => {
                if let Some(t) = out.get_mut(transactional_id) {
                    t.seen = true;
                    t.outcome = Some(outcome.clone());
                }
            }
            EventKind::TxnAborted { transactional_id, reason, .. } => {
                if let Some(t) = out.get_mut(transactional_id) {
                    t.aborted = Some(reason.clone());
                }
            }
            EventKind::LingeringAborted { transactional_id, .. } => {
                if let Some(t) = out.get_mut(transactional_id) {
                    t.aborted = Some("fenced and aborted by a restore's probe".into());
                }
            }
            _ => {}
        }
    }
    out
}

impl Told {
    /// The sink's commit (or abort) was answered: an Ongoing transaction after it is the
    /// coordinator's doing.
    fn answered(&self) -> Option<String> {
        match (&self.outcome, &self.aborted) {
            (Some(CommitOutcome::Committed), _) => Some("its commit was answered committed".into()),
            (_, Some(why)) => Some(format!("it was aborted ({why})")),
            _ => None,
        }
    }

    fn story(&self) -> String {
        if !self.seen {
            return "no transaction under this id is in the history".into();
        }
        let at = self.checkpoint.map_or("its checkpoint".to_string(), |c| format!("checkpoint {c}"));
        let who = self.subtask.map_or(String::new(), |s| format!("subtask {s}'s "));
        if let Some((attempt, from, _)) = self.restored {
            let then = if self.commit_after_restore {
                match &self.outcome {
                    Some(o) => format!("its restored commit ended {}", outcome_words(o)),
                    None => "its restored commit never finished".into(),
                }
            } else {
                "it was never committed".into()
            };
            return format!(
                "{who}committable of {at}, in the state restored from checkpoint {from} (attempt {attempt}); {then}"
            );
        }
        if self.precommitted {
            let then = match (&self.outcome, &self.aborted) {
                (Some(o), _) => format!("its commit ended {}", outcome_words(o)),
                (None, Some(why)) => format!("it was aborted ({why})"),
                (None, None) => "never committed, and no restore held it".into(),
            };
            return format!("{who}committable of {at}, pre-committed; {then}");
        }
        match &self.aborted {
            Some(why) => format!("{who}transaction for {at}, aborted ({why})"),
            None => format!("{who}transaction for {at}, opened and never pre-committed, committed or aborted"),
        }
    }
}

fn outcome_words(o: &CommitOutcome) -> String {
    match o {
        CommitOutcome::Committed => "committed".into(),
        CommitOutcome::Dropped { error } => format!("with the committable dropped ({error})"),
        CommitOutcome::Failed { error } => format!("failed ({error})"),
    }
}

/// Every transaction left open, from the look at the end, the stuck partitions' holders and
/// the history, each once, in the order found (the end look's, then the tails' others).
pub fn attribute(end: &EndLook, tails: &[UncommittedTail], events: &[Event]) -> Vec<Hanging> {
    let mut ids: Vec<&str> = end.transactions.iter().map(|t| t.transactional_id.as_str()).collect();
    ids.extend(tails.iter().flat_map(|t| t.open.iter().filter_map(|o| o.transactional_id.as_deref())));
    let history = told(events, &ids);
    let mut out: Vec<Hanging> = Vec::new();
    let make = |tid: Option<&str>, producer_id, producer_epoch, state: Option<&str>| {
        let h = tid.and_then(|t| history.get(t));
        let whose = match (state, h.and_then(Told::answered)) {
            (Some("Ongoing"), None) => Whose::Sink,
            _ => Whose::Broker,
        };
        let story = match (state, h) {
            (Some("Ongoing"), Some(h)) if h.answered().is_some() => {
                format!("{}, yet its coordinator has it Ongoing", h.story())
            }
            (Some("Ongoing"), Some(h)) => h.story(),
            (Some(s), Some(h)) if is_hanging(Some(s)) => {
                format!("{}; its coordinator has it {s} but a partition never got its marker", h.story())
            }
            (None, _) => "no coordinator lists its producer: nothing will ever end it".into(),
            (Some(s), h) => format!(
                "{}; its coordinator has it {s} and never finished it",
                h.map_or("not in the history".into(), Told::story)
            ),
        };
        Hanging {
            whose,
            transactional_id: tid.map(str::to_string),
            producer_id,
            producer_epoch,
            coordinator_state: state.map(str::to_string),
            stuck: vec![],
            partitions: vec![],
            subtask: h.and_then(|h| h.subtask),
            checkpoint: h.and_then(|h| h.checkpoint),
            restored: h.and_then(|h| h.restored.map(|(a, c, _)| (a, c))),
            restored_never_committed: h.is_some_and(|h| h.restored.is_some() && !h.commit_after_restore),
            story,
        }
    };
    for t in end.transactions.iter().filter(|t| t.state == "Ongoing") {
        let mut h = make(Some(&t.transactional_id), t.producer_id, i32::from(t.producer_epoch), Some("Ongoing"));
        h.partitions = t.partitions.clone();
        out.push(h);
    }
    for tail in tails {
        for o in &tail.open {
            let same = |h: &Hanging| {
                h.producer_id == o.producer_id
                    && (o.transactional_id.is_none() || h.transactional_id == o.transactional_id)
            };
            if let Some(h) = out.iter_mut().find(|h| same(h)) {
                h.stuck.push((tail.partition, o.txn_start_offset));
                continue;
            }
            if o.error.is_some() && o.transactional_id.is_none() {
                // The listing failed: whose it is cannot be told (the tail stays unexplained).
                continue;
            }
            let mut h =
                make(o.transactional_id.as_deref(), o.producer_id, o.producer_epoch, o.coordinator_state.as_deref());
            h.stuck.push((tail.partition, o.txn_start_offset));
            out.push(h);
        }
    }
    out
}

impl crate::report::CheckReport {
    /// Takes the brokers' looks of a stored check (the end look, and each stuck partition's
    /// holders) into a report counted again offline, whose tails have none.
    pub fn adopt_looks(&mut self, end_look: &EndLook, stored_tails: &[UncommittedTail]) {
        self.end_look = end_look.clone();
        for t in &mut self.uncommitted_tail {
            if let Some(s) = stored_tails.iter().find(|s| s.partition == t.partition && s.position == t.position) {
                t.open = s.open.clone();
            }
        }
    }

    /// Attributes the transactions left open ([`attribute`]) from the report's looks and the
    /// history, and counts them: `hanging_transaction` (the sink's), `missing_marker` (the
    /// broker's), each with its examples.
    pub fn judge_open_transactions(&mut self, events: &[Event]) {
        self.hanging = attribute(&self.end_look, &self.uncommitted_tail, events);
        let (c, ex) = (&mut self.counts, &mut self.examples);
        (c.hanging_transaction, c.missing_marker) = (0, 0);
        ex.hanging_transaction.clear();
        ex.missing_marker.clear();
        for h in &self.hanging {
            let (n, list) = match h.whose {
                Whose::Sink => (&mut c.hanging_transaction, &mut ex.hanging_transaction),
                Whose::Broker => (&mut c.missing_marker, &mut ex.missing_marker),
            };
            *n += 1;
            if list.len() < crate::report::MAX_EXAMPLES {
                list.push(h.example());
            }
        }
    }
}

/// The output partitions of the transactions in the end look that nothing will end: Ongoing,
/// under an id whose latest InitProducerId asked for Enable2Pc (KIP-939: the coordinator never
/// times such a transaction out), the job being over. The drain does not wait for them.
pub fn held_for_good(end: &EndLook, events: &[Event]) -> std::collections::BTreeSet<i32> {
    let mut two_phase: BTreeMap<&str, bool> = BTreeMap::new();
    for e in events {
        if let EventKind::ProducerInit { transactional_id, enable_2pc, .. } = &e.kind {
            two_phase.insert(transactional_id, *enable_2pc);
        }
    }
    end.transactions
        .iter()
        .filter(|t| t.state == "Ongoing" && two_phase.get(t.transactional_id.as_str()) == Some(&true))
        .flat_map(|t| t.partitions.iter().copied())
        .collect()
}

/// The stuck partitions no open transaction explains: a holder not found, or the broker's
/// answers missing. Whose doing those are cannot be told.
pub fn unexplained<'a>(tails: &'a [UncommittedTail], hanging: &[Hanging]) -> Vec<&'a UncommittedTail> {
    tails.iter().filter(|t| !hanging.iter().any(|h| h.stuck.iter().any(|(p, _)| *p == t.partition))).collect()
}

#[cfg(test)]
mod tests;
