//! Faults on the live readers (`readers:`): `kill-readers`, `pause-readers`, `restart-readers`.
//!
//! A downstream consumer crashes, stalls and restarts as a sink's workers do, and what it then
//! reads depends on what its group committed meanwhile (Kafka's `ConsumerCoordinator`: a member
//! that stops heartbeating is dropped after `session.timeout.ms`; one that stops polling leaves
//! after `max.poll.interval.ms`; its partitions move to the others at the committed offsets).
//! The readers are threads of the rig, not processes, so a fault is a command to a reader's
//! thread ([`ReaderControl`]), which acts between two polls and answers with what it did; the
//! answer is the fault's confirmed effect, as the kernel's view of a signal is for a worker.
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use super::{Due, Heal, HealAction, Nemesis};
use crate::subject::Subject;
use sinkhole_cluster::Cluster;
use sinkhole_history::fault::{End, ReaderHit, ReadersEnd, ReadersStart, Start};
use sinkhole_scenario::FaultKind;

/// How long a reader's thread may take to act (it acts between polls of 50 ms; a clean close
/// waits for the group's answer).
const ANSWER: Duration = Duration::from_secs(15);

/// What a reader's thread is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReaderAction {
    /// Drop the consumer without closing it: no last commit, no LeaveGroup (a crash).
    Kill,
    /// Start a new consumer incarnation after a kill.
    Start,
    /// Stop polling (the consumer lives on; its heartbeats go on in librdkafka's thread).
    Pause,
    /// Poll again.
    Resume,
    /// Close the consumer cleanly and start a new incarnation at once.
    Restart,
}

/// One command, and where its answer goes.
pub struct Command {
    pub action: ReaderAction,
    /// The fault's name, for the reader's `stopped` line.
    pub fault: String,
    pub answer: oneshot::Sender<ReaderHit>,
}

/// A reader's inbox: its thread takes the commands between polls.
#[derive(Default)]
pub struct Inbox(Mutex<VecDeque<Command>>);

impl Inbox {
    /// The next command, if any.
    pub fn take(&self) -> Option<Command> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).pop_front()
    }

    fn push(&self, c: Command) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push_back(c);
    }
}

/// The nemesis' handle on one mode's live readers: one inbox per reader, by index.
#[derive(Clone, Default)]
pub struct ReaderControl {
    pub inboxes: Vec<Arc<Inbox>>,
}

impl ReaderControl {
    pub fn count(&self) -> u32 {
        self.inboxes.len() as u32
    }

    /// Asks each of `readers` to act, all at once, and waits for their answers.
    pub async fn act(&self, readers: &[u32], action: ReaderAction, fault: &str) -> Vec<ReaderHit> {
        let mut waits = vec![];
        for &reader in readers {
            let (answer, rx) = oneshot::channel();
            match self.inboxes.get(reader as usize) {
                Some(inbox) => {
                    inbox.push(Command { action, fault: fault.to_string(), answer });
                    waits.push((reader, Some(rx)));
                }
                None => waits.push((reader, None)),
            }
        }
        let mut hits = vec![];
        for (reader, rx) in waits {
            let hit = match rx {
                None => ReaderHit::Missed { reader, error: format!("there is no reader {reader}") },
                Some(rx) => match tokio::time::timeout(ANSWER, rx).await {
                    Ok(Ok(hit)) => hit,
                    Ok(Err(_)) => ReaderHit::Missed { reader, error: "the reader had ended".into() },
                    Err(_) => ReaderHit::Missed { reader, error: format!("no answer within {} s", ANSWER.as_secs()) },
                },
            };
            hits.push(hit);
        }
        hits
    }
}

/// The readers a fault hit and could act on again at its heal.
fn acted(hits: &[ReaderHit]) -> Vec<u32> {
    hits.iter()
        .filter_map(|h| match h {
            ReaderHit::Acted { reader, .. } => Some(*reader),
            ReaderHit::Missed { .. } => None,
        })
        .collect()
}

impl<S: Subject, B: Cluster + ?Sized> Nemesis<'_, S, B> {
    pub(super) async fn fire_readers(&mut self, f: usize, due: Due) -> anyhow::Result<()> {
        let spec = self.spec(f).clone();
        let name = self.slots[f].name.clone();
        let Some(control) = self.members[self.who(f)].readers.clone() else {
            return self.fault_failed(f, due.trigger, "this mode runs no live readers (`readers:`)".into());
        };
        // Reader indexes: the same shape as subtask ids.
        let targets = match super::targets::worker_targets(&spec.kind.target().cloned(), control.count()) {
            Ok(t) => t,
            Err(e) => return self.fault_failed(f, due.trigger, e.replace("subtask", "reader")),
        };
        let (action, heal) = match spec.kind.kind() {
            FaultKind::KillReaders => (ReaderAction::Kill, Some(ReaderAction::Start)),
            FaultKind::PauseReaders => (ReaderAction::Pause, Some(ReaderAction::Resume)),
            _ => (ReaderAction::Restart, None),
        };
        let hits = control.act(&targets, action, &name).await;
        let confirmed = !hits.is_empty() && hits.iter().all(ReaderHit::acted);
        let back = acted(&hits);
        let start = ReadersStart { trigger: due.trigger, readers: hits, duration_ms: spec.duration_ms };
        self.fault_started(f, confirmed, Start::Readers(start))?;
        if let Some(heal) = heal {
            // Without a duration (a kill), at the job's end: the reader then reads the rest.
            let at = spec.duration_ms.and_then(|d| std::time::Instant::now().checked_add(Duration::from_millis(d)));
            self.heals.push(Heal { at, fault: f, action: HealAction::Readers(heal, back) });
        }
        Ok(())
    }

    /// A killed reader started again, or a paused one polling again.
    pub(super) async fn heal_readers(
        &mut self,
        f: usize,
        action: ReaderAction,
        readers: Vec<u32>,
    ) -> anyhow::Result<()> {
        let name = self.slots[f].name.clone();
        let hits = match self.members[self.who(f)].readers.clone() {
            Some(control) => control.act(&readers, action, &name).await,
            None => vec![],
        };
        let confirmed =
            self.slots[f].firings.last().map(|fi| fi.confirmed).unwrap_or(false) && hits.iter().all(ReaderHit::acted);
        self.fault_ended_with(f, End::Readers(ReadersEnd { readers: hits }), Some(confirmed))
    }
}
