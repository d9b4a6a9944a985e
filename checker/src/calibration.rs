//! Calibration: synthetic runs (a history and what the topic would show)
//! with each anomaly injected alone and all together; the checker must find
//! each with the right count, and nothing in clean runs, restores included.
use sinkhole_model::{record, CommitOutcome, Committable, Event, EventKind, SinkMode, Source, TxnProtocol};

use super::{check, count, CheckReport, Counts, DrainedRecord, Expected, HistoryIndex, PartitionDrain};

const RUN: &str = "cal";
const PARTS: usize = 3;

/// A two-phase job in the making: subtasks write records in transactions of
/// `txn` records, one per checkpoint; committed transactions become visible
/// in commit order, round robin over three partitions.
struct Sim {
    p: u32,
    n: u64,
    events: Vec<Event>,
    out: Vec<DrainedRecord>,
    offsets: [i64; PARTS],
    /// Records appended to partitions but hidden (aborted): they use offsets.
    hidden: u64,
}

fn tid(s: u32, cp: u64) -> String {
    format!("sinkhole-cal-legacy-{s}-{cp}")
}

impl Sim {
    fn new(p: u32, n: u64) -> Sim {
        let mut s = Sim { p, n, events: Vec::new(), out: Vec::new(), offsets: [0; PARTS], hidden: 0 };
        s.ev(None, EventKind::JobStarted { attempt: 0, restored_from: None });
        s
    }

    fn ev(&mut self, subtask: Option<u32>, kind: EventKind) {
        let source = match subtask {
            Some(subtask) => Source::Worker { subtask },
            None => Source::Coordinator,
        };
        self.events.push(Event { wall_ms: 0, mono_us: 0, mode: SinkMode::Legacy, source, kind });
    }

    fn expected(&self) -> Expected {
        Expected { run_id: RUN.into(), parallelism: self.p, records_per_subtask: self.n }
    }

    /// Appends records `a..=b` of subtask `s` written under `t` (visible or not).
    fn append(&mut self, s: u32, a: u64, b: u64, t: &str, visible: bool) {
        for q in a..=b {
            let part = (q % PARTS as u64) as usize;
            let offset = self.offsets[part];
            self.offsets[part] += 1;
            if visible {
                self.out.push(DrainedRecord {
                    partition: part as i32,
                    offset,
                    value: record::value(RUN, s, q).into_bytes(),
                    tid: Some(t.to_string()),
                    produced_us: None,
                });
            } else {
                self.hidden += 1;
            }
        }
    }

    fn open(&mut self, s: u32, cp: u64) {
        self.ev(Some(s), EventKind::TxnOpened { transactional_id: tid(s, cp), checkpoint: cp });
    }

    fn precommit(&mut self, s: u32, cp: u64, a: u64, b: u64) {
        let c = Committable {
            checkpoint: cp,
            transactional_id: tid(s, cp),
            producer_id: 1,
            producer_epoch: 0,
            protocol: TxnProtocol::V2,
            records: b - a + 1,
            first_seq: Some(a),
            last_seq: Some(b),
        };
        self.ev(Some(s), EventKind::TxnPrecommitted { committable: c, flush_us: 1 });
    }

    fn finished(&mut self, s: u32, cp: u64, outcome: CommitOutcome) {
        self.ev(
            Some(s),
            EventKind::CommitFinished {
                transactional_id: tid(s, cp),
                checkpoint: cp,
                restored: false,
                outcome,
                latency_us: 1,
            },
        );
    }

    /// One transaction, committed and visible.
    fn txn(&mut self, s: u32, cp: u64, a: u64, b: u64) {
        self.open(s, cp);
        self.append(s, a, b, &tid(s, cp), true);
        self.precommit(s, cp, a, b);
        self.finished(s, cp, CommitOutcome::Committed);
    }

    /// A clean run of every subtask, transactions of `k` records.
    fn clean(p: u32, n: u64, k: u64) -> Sim {
        let mut sim = Sim::new(p, n);
        for s in 0..p {
            let mut cp = 1;
            let mut a = 0;
            while a < n {
                let b = (a + k - 1).min(n - 1);
                sim.txn(s, cp, a, b);
                cp += 1;
                a = b + 1;
            }
        }
        sim.ev(None, EventKind::JobFinished { outcome: "finished".into(), attempts: 1 });
        sim
    }

    fn partitions(&self) -> Vec<PartitionDrain> {
        (0..PARTS)
            .map(|p| PartitionDrain {
                partition: p as i32,
                low_watermark: 0,
                high_watermark: self.offsets[p],
                position: self.offsets[p],
                records: 0,
            })
            .collect()
    }

    fn check(&self) -> CheckReport {
        // The drain reads partition by partition in offset order.
        let mut out = self.out.clone();
        out.sort_by_key(|r| (r.partition, r.offset));
        let r = check(&self.expected(), &out, &HistoryIndex::from_events(&self.events), &self.partitions());
        // The bitset counter agrees with a plain map on committed and duplicated.
        let naive = count::naive_copies(&self.expected(), &out);
        assert_eq!(r.counts.committed, naive.len() as u64);
        assert_eq!(r.counts.duplicated, naive.values().map(|c| u64::from(c - 1)).sum::<u64>());
        r
    }
}

fn counts(f: impl FnOnce(&mut Counts)) -> Counts {
    let mut c = Counts { expected: 2 * 300, committed: 2 * 300, ..Counts::default() };
    f(&mut c);
    c
}

#[test]
fn clean_runs_show_nothing() {
    let r = Sim::clean(2, 300, 50).check();
    assert_eq!(r.counts, counts(|_| {}));
    assert_eq!(r.examples, super::Examples::default());
}

/// A restore as a correct sink does it: attempt 0 wrote 100..=179 of
/// subtask 0 in transaction 3 and crashed; the restore probes id 3 (a
/// lingering abort), reopens it, writes 100..=149 and goes on. The aborted
/// records take offsets but stay invisible.
fn restored(visible_aborted: bool) -> Sim {
    let mut sim = Sim::new(1, 300);
    sim.txn(0, 1, 0, 49);
    sim.txn(0, 2, 50, 99);
    sim.open(0, 3);
    sim.append(0, 100, 179, &tid(0, 3), visible_aborted);
    sim.ev(None, EventKind::FailureDetected { subtask: Some(0), reason: "killed".into() });
    sim.ev(None, EventKind::JobStarted { attempt: 1, restored_from: Some(2) });
    sim.ev(None, EventKind::WorkerStarted { subtask: 0, pid: 1, attempt: 1 });
    sim.ev(Some(0), EventKind::LingeringAborted { transactional_id: tid(0, 3), epoch: 3 });
    sim.txn(0, 3, 100, 149);
    let mut a = 150;
    let mut cp = 4;
    while a < 300 {
        sim.txn(0, cp, a, a + 49);
        a += 50;
        cp += 1;
    }
    // The last transaction opened is empty and stays open until the end.
    sim.open(0, cp);
    sim.ev(None, EventKind::JobFinished { outcome: "finished".into(), attempts: 2 });
    sim
}

#[test]
fn a_restore_with_a_lingering_abort_is_clean() {
    let sim = restored(false);
    assert_eq!(sim.hidden, 80);
    let r = sim.check();
    assert_eq!(r.counts, Counts { expected: 300, committed: 300, ..Counts::default() });
}

#[test]
fn aborted_read_alone_and_with_its_duplicates() {
    // The aborted transaction's records are visible: 100..=149 overlap the
    // committed incarnation of the same id (indistinguishable by id and seq,
    // so only duplicates), 150..=179 only the aborted one can have written.
    let r = restored(true).check();
    assert_eq!(r.counts.aborted_read, 30);
    assert_eq!(r.counts.duplicated, 80);
    // One step back per partition, where the restored attempt starts again at 100.
    assert_eq!(r.counts.nonmonotonic, 3);
    assert_eq!((r.counts.lost, r.counts.torn_transaction, r.counts.unexpected), (0, 0, 0));
    let e = &r.examples.aborted_read[0];
    assert_eq!(e.transactional_id.as_deref(), Some("sinkhole-cal-legacy-0-3"));
    assert_eq!(e.seq, Some(150));
    assert_eq!(e.checkpoint, Some(3));
    assert!(e.detail.contains("aborted as a lingering transaction on restore (fenced at epoch 3)"), "{}", e.detail);

    // Alone: a transaction closed with an abort, whose records nothing else wrote.
    let mut sim = Sim::new(1, 100);
    sim.txn(0, 1, 0, 89);
    sim.open(0, 2);
    sim.append(0, 90, 99, &tid(0, 2), true);
    sim.ev(
        Some(0),
        EventKind::TxnAborted {
            transactional_id: tid(0, 2),
            producer_id: 1,
            epoch: 0,
            reason: "closed with an open transaction".into(),
        },
    );
    let r = sim.check();
    assert_eq!(r.counts, Counts { expected: 100, committed: 100, aborted_read: 10, ..Counts::default() });
    assert_eq!(r.examples.aborted_read.len(), 8);
}

#[test]
fn a_dropped_commit_is_not_an_abort() {
    // The commit of transaction 2 was dropped, yet its records are visible:
    // an earlier attempt may have committed it; nothing to report.
    let mut sim = Sim::new(1, 100);
    sim.txn(0, 1, 0, 49);
    sim.open(0, 2);
    sim.append(0, 50, 99, &tid(0, 2), true);
    sim.precommit(0, 2, 50, 99);
    sim.finished(0, 2, CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() });
    let r = sim.check();
    assert_eq!(r.counts, Counts { expected: 100, committed: 100, ..Counts::default() });
}

#[test]
fn lost_alone() {
    // Transaction 3 of subtask 1 dropped by the broker: 100..=149 never visible.
    let mut sim = Sim::clean(2, 300, 50);
    let t = tid(1, 3);
    sim.out.retain(|r| r.tid.as_deref() != Some(t.as_str()));
    sim.finished(1, 3, CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() });
    let r = sim.check();
    assert_eq!(
        r.counts,
        counts(|c| {
            c.committed -= 50;
            c.lost = 50;
        })
    );
    assert_eq!(r.lost_ranges, 1);
    let e = &r.examples.lost[0];
    assert_eq!((e.subtask, e.seq, e.seq_end, e.checkpoint), (Some(1), Some(100), Some(149), Some(3)));
    assert!(e.detail.ends_with("committable dropped: PRODUCER_FENCED (90)"), "{}", e.detail);
}

#[test]
fn duplicates_from_a_replay() {
    // At-least-once style: subtask 0 replays 50..=99 after everything, under
    // a new transaction: 50 duplicates and one step back in each partition.
    let mut sim = Sim::clean(2, 300, 50);
    sim.txn(0, 99, 50, 99);
    let r = sim.check();
    assert_eq!(
        r.counts,
        counts(|c| {
            c.duplicated = 50;
            c.nonmonotonic = 3;
        })
    );
    let d = &r.examples.duplicated[0];
    // Examples in the order the drain read them: partition 0 first.
    assert!(d.detail.starts_with("subtask 0 seq 51 seen 2 times: p0@"), "{}", d.detail);
    assert!(d.detail.contains("(sinkhole-cal-legacy-0-2), p0@"), "{}", d.detail);
    assert!(d.detail.ends_with("(sinkhole-cal-legacy-0-99)"), "{}", d.detail);
    assert_eq!((d.partition, d.checkpoint), (Some(0), Some(2)));
    assert_eq!(r.examples.nonmonotonic.len(), 3);
}

#[test]
fn nonmonotonic_alone() {
    // Two records of subtask 1 in partition 0 read in swapped order: no copy,
    // no loss, one step back.
    let mut sim = Sim::clean(2, 300, 50);
    let pos =
        |sim: &Sim, q: u64| sim.out.iter().position(|r| r.value == record::value(RUN, 1, q).into_bytes()).unwrap();
    let (i, j) = (pos(&sim, 30), pos(&sim, 33));
    let (oi, oj) = (sim.out[i].offset, sim.out[j].offset);
    sim.out[i].offset = oj;
    sim.out[j].offset = oi;
    let r = sim.check();
    assert_eq!(r.counts, counts(|c| c.nonmonotonic = 1));
    let e = &r.examples.nonmonotonic[0];
    assert_eq!((e.partition, e.subtask, e.seq), (Some(0), Some(1), Some(30)));
    assert!(e.detail.contains("after seq 33"), "{}", e.detail);
}

#[test]
fn unexpected_alone() {
    let mut sim = Sim::clean(2, 300, 50);
    for (i, v) in ["other:0:1", "junk", "cal:2:0", "cal:0:300", "cal:0:+5"].iter().enumerate() {
        sim.out.push(DrainedRecord {
            partition: 2,
            offset: 1000 + i as i64,
            value: v.as_bytes().to_vec(),
            tid: None,
            produced_us: None,
        });
    }
    let r = sim.check();
    assert_eq!(r.counts, counts(|c| c.unexpected = 5));
    assert_eq!(r.examples.unexpected[4].detail, "partition 2 offset 1004: non-canonical value \"cal:0:+5\"");
}

#[test]
fn torn_transaction_alone_and_fully_lost_is_not_torn() {
    let mut sim = Sim::clean(2, 300, 50);
    // Transaction 2 of subtask 0 (50..=99): 60..=69 missing.
    let t = tid(0, 2);
    sim.out.retain(|r| {
        let q = record::parse_value(&r.value).unwrap().2;
        !(r.tid.as_deref() == Some(t.as_str()) && (60..70).contains(&q))
    });
    let r = sim.check();
    assert_eq!(
        r.counts,
        counts(|c| {
            c.committed -= 10;
            c.lost = 10;
            c.torn_transaction = 1;
        })
    );
    let e = &r.examples.torn_transaction[0];
    assert_eq!(e.transactional_id.as_deref(), Some("sinkhole-cal-legacy-0-2"));
    assert!(e.detail.contains("40 of 50 records visible, 10 not (first: seq 60)"), "{}", e.detail);
}

#[test]
fn uncommitted_tail_alone() {
    let sim = Sim::clean(2, 300, 50);
    let mut parts = sim.partitions();
    parts[1].high_watermark += 7;
    let mut out = sim.out.clone();
    out.sort_by_key(|r| (r.partition, r.offset));
    let r = check(&sim.expected(), &out, &HistoryIndex::from_events(&sim.events), &parts);
    assert_eq!(r.counts, counts(|c| c.uncommitted_tail = 1));
    assert_eq!(r.uncommitted_tail[0].partition, 1);
}

#[test]
fn everything_at_once() {
    let mut sim = Sim::clean(3, 300, 50);
    // lost: subtask 2's transaction 1 (0..=49), dropped.
    let lost_tid = tid(2, 1);
    // torn: subtask 1's transaction 4 (150..=199) loses 180..=184.
    let torn_tid = tid(1, 4);
    sim.out.retain(|r| {
        let q = record::parse_value(&r.value).unwrap().2;
        r.tid.as_deref() != Some(lost_tid.as_str())
            && !(r.tid.as_deref() == Some(torn_tid.as_str()) && (180..185).contains(&q))
    });
    // duplicated + nonmonotonic: subtask 0 replays 0..=5 (two records per partition).
    sim.txn(0, 50, 0, 5);
    // aborted read: subtask 1 writes 20..=29 again in a transaction that a
    // restore then aborts as lingering, under an id nothing else used; its
    // records are visible anyway (and are copies of committed ones).
    sim.open(1, 60);
    sim.append(1, 20, 29, &tid(1, 60), true);
    sim.ev(Some(1), EventKind::LingeringAborted { transactional_id: tid(1, 60), epoch: 2 });
    // unexpected: two foreign records.
    for o in 0..2 {
        sim.out.push(DrainedRecord {
            partition: 0,
            offset: 5000 + o,
            value: b"x:1:1".to_vec(),
            tid: None,
            produced_us: None,
        });
    }
    let mut parts = sim.partitions();
    parts[2].position -= 1;
    let mut out = sim.out.clone();
    out.sort_by_key(|r| (r.partition, r.offset));
    let r = check(&sim.expected(), &out, &HistoryIndex::from_events(&sim.events), &parts);
    assert_eq!(
        r.counts,
        Counts {
            expected: 900,
            committed: 900 - 50 - 5,
            lost: 55,
            // the replay's 6 and the aborted transaction's 10
            duplicated: 16,
            unexpected: 2,
            // one step back per partition for each: the replay and the aborted records
            nonmonotonic: 6,
            aborted_read: 10,
            torn_transaction: 1,
            uncommitted_tail: 1,
            ..Counts::default()
        }
    );
    assert_eq!(r.lost_ranges, 2);
}

/// The rig's look after a restore: `states` of the ids it asked about.
fn lingering_look(sim: &mut Sim, attempt: u32, restored_from: u64, states: &[(&str, &str)]) {
    use sinkhole_history::fault::{Transactions, TxnView};
    use sinkhole_history::observation::{Look, Observation};
    let views = states
        .iter()
        .map(|(t, st)| TxnView {
            transactional_id: t.to_string(),
            state: st.to_string(),
            producer_id: 4,
            producer_epoch: 1,
            timeout_ms: 60_000,
            error: None,
        })
        .collect();
    let o = Observation {
        look: Look::Lingering { attempt, restored_from: Some(restored_from), pooled: false },
        at_ms: 4_200,
        looked_at: None,
        transactions: Transactions::Seen(views),
        note: None,
    };
    sim.ev(None, o.to_event());
}

#[test]
fn lingering_is_a_transaction_still_open_after_the_restore() {
    // A clean run whose restore aborted what attempt 0 left open: nothing.
    let mut sim = Sim::clean(2, 300, 50);
    lingering_look(&mut sim, 1, 2, &[(&tid(0, 4), "CompleteAbort"), (&tid(1, 4), "PrepareAbort")]);
    assert_eq!(sim.check().counts, counts(|_| {}), "aborted means clean");
    // One left Ongoing: one lingering transaction, named, nothing else changes.
    let mut sim = Sim::clean(2, 300, 50);
    lingering_look(&mut sim, 1, 2, &[(&tid(0, 4), "Ongoing"), (&tid(1, 4), "CompleteAbort")]);
    let r = sim.check();
    assert_eq!(r.counts, counts(|c| c.lingering = 1));
    assert_eq!(r.examples.lingering.len(), 1);
    let x = &r.examples.lingering[0];
    assert_eq!((x.transactional_id.as_deref(), x.checkpoint), (Some(tid(0, 4).as_str()), Some(4)));
    assert!(x.detail.contains("after attempt 1 restored from checkpoint 2"), "{}", x.detail);
}
