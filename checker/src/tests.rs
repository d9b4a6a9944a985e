use super::*;
use sinkhole_model::{record, CommitOutcome, Committable, Event, EventKind, SinkMode, Source, TxnProtocol};

const RUN: &str = "r1";

fn exp(p: u32, n: u64) -> Expected {
    Expected { run_id: RUN.into(), parallelism: p, records_per_subtask: n }
}

fn rec(partition: i32, offset: i64, value: &str, tid: &str) -> DrainedRecord {
    DrainedRecord { partition, offset, value: value.as_bytes().to_vec(), tid: Some(tid.to_string()), produced_us: None }
}

/// Every record of `p` subtasks × `n`, round robin over 3 partitions.
fn all(p: u32, n: u64) -> Vec<DrainedRecord> {
    let mut v = Vec::new();
    let mut offs = [0i64; 3];
    for s in 0..p {
        for q in 0..n {
            let part = (q % 3) as usize;
            v.push(rec(part as i32, offs[part], &record::value(RUN, s, q), &format!("x-{s}-1")));
            offs[part] += 1;
        }
    }
    v
}

fn ev(subtask: u32, kind: EventKind) -> Event {
    Event { wall_ms: 0, mono_us: 0, mode: SinkMode::Legacy, source: Source::Worker { subtask }, kind }
}

fn precommitted(subtask: u32, cp: u64, a: u64, b: u64) -> Event {
    ev(
        subtask,
        EventKind::TxnPrecommitted {
            committable: Committable {
                checkpoint: cp,
                transactional_id: format!("sinkhole-r1-legacy-{subtask}-{cp}"),
                producer_id: 7,
                producer_epoch: 0,
                protocol: TxnProtocol::V2,
                records: b - a + 1,
                first_seq: Some(a),
                last_seq: Some(b),
            },
            flush_us: 1,
        },
    )
}

fn finished(subtask: u32, cp: u64, outcome: CommitOutcome) -> Event {
    ev(
        subtask,
        EventKind::CommitFinished {
            transactional_id: format!("sinkhole-r1-legacy-{subtask}-{cp}"),
            checkpoint: cp,
            restored: true,
            outcome,
            latency_us: 1,
        },
    )
}

#[test]
fn clean() {
    let r = check(&exp(2, 10), &all(2, 10), &HistoryIndex::default(), &[]);
    assert_eq!(
        r.counts,
        Counts { expected: 20, committed: 20, lost: 0, duplicated: 0, unexpected: 0, ..Counts::default() }
    );
    assert_eq!(r.examples, Examples::default());
    assert!(r.uncommitted_tail.is_empty());
}

#[test]
fn lost_range_attributed_to_the_dropped_committable() {
    let recs: Vec<_> = all(2, 100)
        .into_iter()
        .filter(|r| {
            let (_, s, q) = record::parse_value(&r.value).unwrap();
            !(s == 0 && (40..60).contains(&q))
        })
        .collect();
    let hist = HistoryIndex::from_events(&[
        precommitted(0, 3, 30, 49),
        precommitted(0, 4, 50, 69),
        finished(0, 3, CommitOutcome::Committed),
        finished(0, 4, CommitOutcome::Dropped { error: "PRODUCER_FENCED (90)".into() }),
    ]);
    let r = check(&exp(2, 100), &recs, &hist, &[]);
    assert_eq!(
        r.counts,
        Counts { expected: 200, committed: 180, lost: 20, duplicated: 0, unexpected: 0, ..Counts::default() }
    );
    assert_eq!(r.lost_ranges, 2);
    assert_eq!(r.examples.lost.len(), 2);
    assert_eq!(
        r.examples.lost[0].detail,
        "subtask 0 seq 40–49 lost: transaction sinkhole-r1-legacy-0-3 (checkpoint 3), reported committed"
    );
    assert_eq!(
            r.examples.lost[1].detail,
            "subtask 0 seq 50–59 lost: transaction sinkhole-r1-legacy-0-4 (checkpoint 4), committable dropped: PRODUCER_FENCED (90)"
        );
    assert_eq!(r.examples.lost[1].transactional_id.as_deref(), Some("sinkhole-r1-legacy-0-4"));
    assert_eq!((r.examples.lost[1].seq, r.examples.lost[1].seq_end), (Some(50), Some(59)));
}

#[test]
fn lost_without_history() {
    let mut recs = all(1, 10);
    recs.retain(|r| record::parse_value(&r.value).unwrap().2 != 9);
    let r = check(&exp(1, 10), &recs, &HistoryIndex::default(), &[]);
    assert_eq!(r.counts.lost, 1);
    assert_eq!(r.examples.lost[0].detail, "subtask 0 seq 9 lost: in no pre-committed transaction of the history");
}

#[test]
fn duplicated_counts_extra_copies() {
    let mut recs = all(1, 10);
    recs.push(rec(0, 100, &record::value(RUN, 0, 3), "x-0-2"));
    recs.push(rec(1, 100, &record::value(RUN, 0, 3), "x-0-3"));
    recs.push(rec(2, 100, &record::value(RUN, 0, 5), "x-0-2"));
    let r = check(&exp(1, 10), &recs, &HistoryIndex::default(), &[]);
    // Each extra copy lands after higher seqs of its partition: a step back each.
    assert_eq!(
        r.counts,
        Counts {
            expected: 10,
            committed: 10,
            lost: 0,
            duplicated: 3,
            unexpected: 0,
            nonmonotonic: 3,
            ..Counts::default()
        }
    );
    assert_eq!(r.examples.duplicated.len(), 2);
    let d = &r.examples.duplicated[0];
    assert_eq!((d.subtask, d.seq, d.partition, d.offset), (Some(0), Some(3), Some(0), Some(1)));
    assert!(d.detail.contains("seen 3 times") && d.detail.contains("p1@100 (x-0-3)"), "{}", d.detail);
}

#[test]
fn unexpected_kinds() {
    let mut recs = all(1, 5);
    recs.push(rec(0, 50, "other-run:0:1", "y-0-1"));
    recs.push(rec(0, 51, "garbage", "y-0-1"));
    recs.push(rec(0, 52, &record::value(RUN, 0, 5), "x-0-1"));
    recs.push(rec(0, 53, &record::value(RUN, 1, 0), "x-1-1"));
    let r = check(&exp(1, 5), &recs, &HistoryIndex::default(), &[]);
    assert_eq!(
        r.counts,
        Counts { expected: 5, committed: 5, lost: 0, duplicated: 0, unexpected: 4, ..Counts::default() }
    );
    let details: Vec<&str> = r.examples.unexpected.iter().map(|e| e.detail.as_str()).collect();
    assert_eq!(
        details,
        vec![
            "partition 0 offset 50: record of another run (other-run)",
            "partition 0 offset 51: malformed value \"garbage\"",
            "partition 0 offset 52: seq 5 out of range (records_per_subtask 5)",
            "partition 0 offset 53: subtask 1 out of range (parallelism 1)",
        ]
    );
}

#[test]
fn mixed_with_a_hanging_partition() {
    let mut recs = all(2, 20);
    // lost: subtask 1 seq 0..=4; duplicated: subtask 0 seq 7 twice more; one foreign
    recs.retain(|r| {
        let (_, s, q) = record::parse_value(&r.value).unwrap();
        !(s == 1 && q < 5)
    });
    for o in 0..2 {
        recs.push(rec(2, 200 + o, &record::value(RUN, 0, 7), "x-0-9"));
    }
    recs.push(rec(1, 300, "r0:0:1", "z-0-1"));
    let parts = vec![
        PartitionDrain { partition: 0, low_watermark: 0, high_watermark: 20, position: 20, records: 10 },
        PartitionDrain { partition: 1, low_watermark: 0, high_watermark: 40, position: 31, records: 10 },
    ];
    let r = check(&exp(2, 20), &recs, &HistoryIndex::default(), &parts);
    // The two extra copies of seq 7 in partition 2: one step back from 17, one repeat.
    assert_eq!(
        r.counts,
        Counts {
            expected: 40,
            committed: 35,
            lost: 5,
            duplicated: 2,
            unexpected: 1,
            nonmonotonic: 2,
            uncommitted_tail: 1,
            ..Counts::default()
        }
    );
    assert_eq!(
        r.uncommitted_tail,
        vec![UncommittedTail { partition: 1, position: 31, high_watermark: 40, open: vec![] }]
    );
    assert_eq!(r.records_read, recs.len() as u64);
}

#[test]
fn examples_are_capped() {
    let recs: Vec<_> =
        all(1, 100).into_iter().filter(|r| record::parse_value(&r.value).unwrap().2.is_multiple_of(2)).collect();
    let r = check(&exp(1, 100), &recs, &HistoryIndex::default(), &[]);
    assert_eq!(r.counts.lost, 50);
    assert_eq!(r.lost_ranges, 50);
    assert_eq!(r.examples.lost.len(), MAX_EXAMPLES);
}

/// A pre-committed range over all of u64, or reversed, as a damaged
/// history line can claim: no overflow, no allocation for the range;
/// only the seqs the source can write are tracked.
#[test]
fn a_damaged_range_in_the_history_neither_overflows_nor_allocates() {
    let claim = |first: u64, last: u64| {
        let mut e = precommitted(0, 1, 0, 9);
        if let EventKind::TxnPrecommitted { committable, .. } = &mut e.kind {
            (committable.first_seq, committable.last_seq) = (Some(first), Some(last));
        }
        HistoryIndex::from_events(&[e, finished(0, 1, CommitOutcome::Committed)])
    };
    let tid = "sinkhole-r1-legacy-0-1";
    let recs: Vec<_> = (0..10).map(|q| rec(0, q as i64, &record::value(RUN, 0, q), tid)).collect();
    let r = check(&exp(1, 10), &recs, &claim(0, u64::MAX), &[]);
    assert_eq!((r.counts.committed, r.counts.lost, r.counts.torn_transaction), (10, 0, 1));
    // Seen whole up to the source's end: the first missing seq is the next one.
    let d = &r.examples.torn_transaction[0].detail;
    assert!(d.contains("10 of 18446744073709551615 records visible") && d.ends_with("(first: seq 10)"), "{d}");

    let r = check(&exp(1, 10), &recs[..4], &claim(u64::MAX, 0), &[]);
    assert_eq!((r.counts.committed, r.counts.lost, r.counts.torn_transaction), (4, 6, 1));
    assert!(r.examples.lost[0].detail.ends_with("lost: in no pre-committed transaction of the history"));
    let r = check(&exp(1, 10), &recs, &claim(u64::MAX, u64::MAX), &[]);
    assert_eq!((r.counts.committed, r.counts.torn_transaction), (10, 0));
}

#[test]
fn tids_name_their_subtask() {
    assert_eq!(subtask_of_tid("sinkhole-abc-legacy-3-17"), Some(3));
    assert_eq!(subtask_of_tid("nope"), None);
}
