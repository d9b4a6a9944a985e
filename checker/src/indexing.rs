//! The history index read from the history, event by event: each
//! transactional id's incarnations (opened, pre-committed with a range,
//! committed, aborted or empty), then sorted into what records and losses are
//! attributed to. [`HistoryIndex::from_events`] says what counts as an abort.
use std::collections::{BTreeMap, HashMap};

use sinkhole_model::{CommitOutcome, Committable, Event, EventKind, Source};

use crate::lingering;
use crate::txns::{subtask_of_tid, AbortedTxn, Candidate, HistoryIndex, TidHistory, TxnInfo, TxnStatus};

/// The index of `events`, in the order they were written.
impl HistoryIndex {
    /// From history events, in the order they were written.
    ///
    /// The rule for "the history says this transaction was aborted" (the
    /// `aborted-read` anomaly): an explicit abort was recorded for it —
    /// `TxnAborted`, or `LingeringAborted` after it was opened and before it
    /// was committed. A commit that was `dropped` or `failed` is *not* an
    /// abort: the broker may have committed the transaction in an earlier
    /// attempt whose outcome the history lost (a kill between EndTxn and the
    /// history line), and a repeated EndTxn is then refused (with
    /// Transactions V2, PRODUCER_FENCED) although the data is committed. A
    /// dropped commit of a transaction the broker aborted shows up as `lost`.
    pub fn from_events(events: &[Event]) -> HistoryIndex {
        build(events)
    }
}

fn build(events: &[Event]) -> HistoryIndex {
    let mut b = Building::default();
    for e in events {
        b.event(e);
    }
    b.finish(events)
}

/// One incarnation while the index is built.
struct Inc {
    tid: usize,
    subtask: Option<u32>,
    checkpoint: Option<u64>,
    range: Option<(u64, u64)>,
    status: TxnStatus,
    how: String,
}

/// The index while it is read from the history, event by event.
#[derive(Default)]
struct Building {
    txns: Vec<TxnInfo>,
    /// Where each (id, checkpoint) sits in `txns`.
    txn_at: HashMap<(String, u64), usize>,
    outcomes: BTreeMap<(String, u64), CommitOutcome>,
    tids: Vec<TidHistory>,
    tid_index: HashMap<String, usize>,
    incs: Vec<Inc>,
    /// Per id (as in `tids`): its incarnations, indexes into `incs` in history order.
    per_tid: Vec<Vec<usize>>,
    /// The incarnation each subtask has open (opened, not pre-committed) in the current attempt.
    open: HashMap<u32, usize>,
}

impl Building {
    /// The index of id `name`, added when first seen.
    fn tid(&mut self, name: &str) -> usize {
        if let Some(&i) = self.tid_index.get(name) {
            return i;
        }
        self.tids.push(TidHistory { transactional_id: name.to_string(), ..TidHistory::default() });
        self.per_tid.push(Vec::new());
        self.tid_index.insert(name.to_string(), self.tids.len() - 1);
        self.tids.len() - 1
    }

    /// A new open incarnation of id `tid`.
    fn new_inc(&mut self, tid: usize, subtask: Option<u32>) -> usize {
        self.incs.push(Inc {
            tid,
            subtask,
            checkpoint: None,
            range: None,
            status: TxnStatus::Open,
            how: String::new(),
        });
        self.per_tid[tid].push(self.incs.len() - 1);
        self.incs.len() - 1
    }

    /// An incarnation left open with no committable held no records: it was empty.
    fn empty_if_unused(&mut self, i: usize) {
        if self.incs[i].status == TxnStatus::Open && self.incs[i].range.is_none() {
            self.incs[i].status = TxnStatus::Empty;
        }
    }

    fn event(&mut self, e: &Event) {
        let worker = match e.source {
            Source::Worker { subtask } => Some(subtask),
            _ => None,
        };
        match &e.kind {
            EventKind::JobStarted { .. } => self.open.clear(),
            EventKind::WorkerStarted { subtask, .. } => {
                self.open.remove(subtask);
            }
            EventKind::JobFinished { .. } => {
                // Workers were stopped: what they still had open held no
                // records (close aborts one that does, with TxnAborted).
                let open: Vec<usize> = self.open.drain().map(|(_, i)| i).collect();
                for i in open {
                    self.empty_if_unused(i);
                }
            }
            EventKind::TxnOpened { transactional_id, checkpoint } => {
                self.txn_opened(worker, transactional_id, *checkpoint)
            }
            EventKind::TxnPrecommitted { committable: c, .. } => self.txn_precommitted(worker, c),
            EventKind::CommitFinished { transactional_id, checkpoint, outcome, .. } => {
                self.commit_finished(worker, transactional_id, *checkpoint, outcome)
            }
            EventKind::TxnAborted { transactional_id, producer_id, epoch, reason } => {
                let how = format!("aborted by the sink ({reason}; producer {producer_id} epoch {epoch})");
                self.abort_latest(transactional_id, how, worker);
            }
            EventKind::LingeringAborted { transactional_id, epoch } => {
                let how = format!("aborted as a lingering transaction on restore (fenced at epoch {epoch})");
                self.abort_latest(transactional_id, how, worker);
            }
            _ => {}
        }
    }

    fn txn_opened(&mut self, worker: Option<u32>, transactional_id: &str, checkpoint: u64) {
        let subtask = worker.or_else(|| subtask_of_tid(transactional_id));
        if let Some(s) = subtask {
            // A transaction is opened only after the previous one
            // was pre-committed; one without a committable was empty.
            if let Some(prev) = self.open.remove(&s) {
                self.empty_if_unused(prev);
            }
        }
        let t = self.tid(transactional_id);
        let i = self.new_inc(t, subtask);
        self.incs[i].checkpoint = Some(checkpoint);
        if let Some(s) = subtask {
            self.open.insert(s, i);
        }
    }

    /// The committable closes the subtask's open incarnation of its id (else
    /// the id's latest open one, else a new one) and gives it its range.
    fn txn_precommitted(&mut self, worker: Option<u32>, c: &Committable) {
        let subtask = worker.or_else(|| subtask_of_tid(&c.transactional_id));
        let t = self.tid(&c.transactional_id);
        let incs = &self.incs;
        let i = match subtask.and_then(|s| self.open.get(&s).copied()).filter(|&i| incs[i].tid == t) {
            Some(i) => i,
            None => match self.per_tid[t].last().copied().filter(|&i| incs[i].status == TxnStatus::Open) {
                Some(i) => i,
                None => self.new_inc(t, subtask),
            },
        };
        if let Some(s) = subtask {
            if self.open.get(&s) == Some(&i) {
                self.open.remove(&s);
            }
        }
        self.incs[i].checkpoint = Some(c.checkpoint);
        if let (Some(first), Some(last)) = (c.first_seq, c.last_seq) {
            self.incs[i].range = Some((first.min(last), first.max(last)));
            if let Some(s) = subtask {
                self.keep_latest(TxnInfo {
                    subtask: s,
                    transactional_id: c.transactional_id.clone(),
                    checkpoint: c.checkpoint,
                    first_seq: first,
                    last_seq: last,
                    outcome: None,
                });
            }
        }
    }

    /// A restored attempt pre-commits the same range again under a new id:
    /// keep each (tid, checkpoint) once, the latest wins.
    fn keep_latest(&mut self, info: TxnInfo) {
        let at = (info.transactional_id.clone(), info.checkpoint);
        match self.txn_at.get(&at) {
            Some(&k) => self.txns[k] = info,
            None => {
                self.txn_at.insert(at, self.txns.len());
                self.txns.push(info);
            }
        }
    }

    /// Every outcome is kept for `txns`; a commit marks the incarnation of
    /// its checkpoint (else the id's latest not aborted, else a new one) committed.
    fn commit_finished(
        &mut self,
        worker: Option<u32>,
        transactional_id: &str,
        checkpoint: u64,
        outcome: &CommitOutcome,
    ) {
        self.outcomes.insert((transactional_id.to_string(), checkpoint), outcome.clone());
        if *outcome != CommitOutcome::Committed {
            return;
        }
        let t = self.tid(transactional_id);
        let incs = &self.incs;
        let found = self.per_tid[t]
            .iter()
            .rev()
            .copied()
            .find(|&i| incs[i].checkpoint == Some(checkpoint))
            .or_else(|| self.per_tid[t].iter().rev().copied().find(|&i| incs[i].status != TxnStatus::Aborted));
        let i = match found {
            Some(i) => i,
            None => {
                let s = worker.or_else(|| subtask_of_tid(transactional_id));
                let i = self.new_inc(t, s);
                self.incs[i].checkpoint = Some(checkpoint);
                i
            }
        };
        self.incs[i].status = TxnStatus::Committed;
    }

    /// An explicit abort: of the id's latest incarnation if it is open.
    fn abort_latest(&mut self, tid: &str, how: String, worker: Option<u32>) {
        let t = self.tid(tid);
        match self.per_tid[t].last().copied() {
            Some(i) if self.incs[i].status == TxnStatus::Open => {
                self.incs[i].status = TxnStatus::Aborted;
                self.incs[i].how = how;
            }
            Some(_) => {}
            None => {
                // The history lost the opening (a worker killed before its
                // events were written): an aborted transaction of unknown range.
                self.incs.push(Inc {
                    tid: t,
                    subtask: worker.or_else(|| subtask_of_tid(tid)),
                    checkpoint: None,
                    range: None,
                    status: TxnStatus::Aborted,
                    how,
                });
                self.per_tid[t].push(self.incs.len() - 1);
            }
        }
    }

    /// Each id's incarnations sorted into aborted ones, opaque ones and
    /// candidates (of a known range); a candidate overlapping another of its
    /// id is ambiguous.
    fn candidates(&mut self) -> Vec<Candidate> {
        let mut candidates: Vec<Candidate> = Vec::new();
        for (t, list) in self.per_tid.iter().enumerate() {
            let th = &mut self.tids[t];
            for &i in list {
                let inc = &self.incs[i];
                if inc.checkpoint.is_some() {
                    th.checkpoint = inc.checkpoint;
                }
                match (inc.status, inc.range) {
                    (TxnStatus::Empty, _) => {}
                    (TxnStatus::Aborted, range) => {
                        th.aborted.push(AbortedTxn { range, checkpoint: inc.checkpoint, how: inc.how.clone() })
                    }
                    (_, None) => th.opaque = true,
                    (status, Some((a, b))) => {
                        let subtask = inc.subtask.or_else(|| subtask_of_tid(&th.transactional_id)).unwrap_or(0);
                        th.candidates.push(candidates.len());
                        candidates.push(Candidate {
                            subtask,
                            transactional_id: th.transactional_id.clone(),
                            checkpoint: inc.checkpoint.unwrap_or(0),
                            first_seq: a,
                            last_seq: b,
                            status,
                            unambiguous: true,
                        });
                    }
                }
            }
            mark_overlaps(&th.candidates, &mut candidates);
        }
        candidates
    }

    fn finish(mut self, events: &[Event]) -> HistoryIndex {
        for t in &mut self.txns {
            t.outcome = self.outcomes.get(&(t.transactional_id.clone(), t.checkpoint)).cloned();
        }
        let candidates = self.candidates();
        let by_subtask = by_subtask(&self.txns);
        let Building { txns, tids, tid_index, .. } = self;
        HistoryIndex { txns, by_subtask, candidates, tids, tid_index, lingering: lingering::found(events) }
    }
}

/// Candidates `of` one id whose ranges overlap are not unambiguous.
fn mark_overlaps(of: &[usize], candidates: &mut [Candidate]) {
    for &x in of {
        for &y in of {
            if x != y
                && candidates[x].first_seq <= candidates[y].last_seq
                && candidates[y].first_seq <= candidates[x].last_seq
            {
                candidates[x].unambiguous = false;
            }
        }
    }
}

/// Per subtask: indexes into `txns` sorted by first seq, and the longest range.
fn by_subtask(txns: &[TxnInfo]) -> Vec<(Vec<usize>, u64)> {
    let mut by_subtask: Vec<(Vec<usize>, u64)> = Vec::new();
    for (k, t) in txns.iter().enumerate() {
        let s = t.subtask as usize;
        if s >= 1 << 16 {
            continue;
        }
        if by_subtask.len() <= s {
            by_subtask.resize_with(s + 1, || (Vec::new(), 0));
        }
        by_subtask[s].0.push(k);
        by_subtask[s].1 = by_subtask[s].1.max(t.last_seq.saturating_sub(t.first_seq).saturating_add(1));
    }
    for (v, _) in &mut by_subtask {
        v.sort_by_key(|&k| (txns[k].first_seq, txns[k].checkpoint));
    }
    by_subtask
}
