use super::*;
use crate::subject::flink::logs::split;
use sinkhole_model::SinkMode;

struct Fixture {
    ev: Evidence,
    notices: mpsc::UnboundedReceiver<Notice>,
    path: std::path::PathBuf,
}

fn fixture(name: &str, naming: Naming) -> Fixture {
    let path = std::env::temp_dir().join(format!("sinkhole-evidence-{name}-{}.jsonl", std::process::id()));
    let history = sinkhole_history::Writer::create(&path, SinkMode::FlinkKafkasink, Instant::now()).unwrap();
    let (tx, notices) = mpsc::unbounded_channel();
    let mut ev = Evidence::new(
        history,
        tx,
        Arc::new(Mutex::new(Seen::default())),
        "sh-r4".into(),
        naming,
        TxnProtocol::V2,
        "/r/flink/checkpoints".into(),
        "flink-connector-kafka-5.0.0-2.2.jar".into(),
    );
    ev.job = Some("j1".into());
    Fixture { ev, notices, path }
}

impl Fixture {
    fn feed(&mut self, source: usize, lines: &[&str]) {
        for l in lines {
            self.ev.on_line(source, split(l)).unwrap();
        }
    }
    fn events(&self) -> Vec<EventKind> {
        sinkhole_history::read(&self.path).unwrap().events.into_iter().map(|e| e.kind).collect()
    }
    fn notices(&mut self) -> Vec<JobEvent> {
        let mut out = vec![];
        while let Ok(n) = self.notices.try_recv() {
            assert!(n.hold.is_none(), "Flink cannot be held");
            out.push(n.event);
        }
        out
    }
}

const CC: &str = "org.apache.flink.runtime.checkpoint.CheckpointCoordinator";
const KC: &str = "org.apache.flink.connector.kafka.sink.internal.KafkaCommitter";
const W: &str = "org.apache.flink.connector.kafka.sink.ExactlyOnceKafkaWriter";
const T0: &str = "Source: sinkhole-source -> sinkhole-checkpoint-log (1/2)#0";

#[test]
fn checkpoints_snapshots_and_commits_become_the_rigs_events() {
    let mut f = fixture("flow", Naming::Incrementing);
    f.feed(0, &[
        &format!("1000 INFO  {CC} [Checkpoint Timer] Triggering checkpoint 4 (type=CheckpointType{{name='Checkpoint'}}) @ 999 for job j1."),
        &format!("1001 INFO  {CC} [Checkpoint Timer] Triggering checkpoint 9 (type=x) @ 999 for job old."),
    ]);
    f.feed(1, &[
        &format!("1010 DEBUG {W} [{T0}] Prepare KafkaCommittable{{producerId=14, epoch=0, transactionalId='sh-r4-0-4', producer=x}}."),
        &format!("1011 INFO  sinkhole.flink.CheckpointLog [{T0}] sinkhole checkpoint 4 subtask 0 source 1 first_seq 632 next_seq 832 records 200"),
    ]);
    f.feed(0, &[&format!("1020 INFO  {CC} [io] Completed checkpoint 4 for job j1 (2318 bytes, checkpointDuration=20 ms, finalizationTime=1 ms).")]);
    f.feed(
        1,
        &[
            &format!("1030 DEBUG {KC} [{T0}] Committing Kafka transaction sh-r4-0-4"),
            &format!("1500 INFO  sinkhole.flink.CheckpointLog [{T0}] sinkhole checkpoint 5 subtask 0 records 0"),
        ],
    );
    let ev = f.events();
    assert_eq!(ev[0], EventKind::CheckpointTriggered { id: 4 }, "another job's line is not this job's");
    assert_eq!(ev[1], EventKind::CheckpointAcked { id: 4, subtask: 0 });
    let EventKind::TxnPrecommitted { committable: c, .. } = &ev[2] else { panic!("{:?}", ev[2]) };
    assert_eq!((c.transactional_id.as_str(), c.checkpoint, c.producer_id), ("sh-r4-0-4", 4, 14));
    assert_eq!((c.first_seq, c.last_seq, c.records), (Some(632), Some(831), 200));
    assert_eq!(ev[3], EventKind::CheckpointPersisted { id: 4, path: "/r/flink/checkpoints/j1/chk-4".into() });
    assert!(
        matches!(&ev[4], EventKind::CommitStarted { transactional_id, checkpoint: 4, restored: false } if transactional_id == "sh-r4-0-4")
    );
    assert_eq!(ev[5], EventKind::CheckpointNotified { id: 4 });
    // The task thread went on to its next snapshot: the commit returned.
    assert!(matches!(&ev[6], EventKind::CommitFinished { outcome: CommitOutcome::Committed, checkpoint: 4, .. }));
    assert_eq!(ev[7], EventKind::CheckpointAcked { id: 5, subtask: 0 });
    assert_eq!(ev.len(), 8, "an empty checkpoint pre-commits nothing: {ev:?}");
    let n = f.notices();
    assert_eq!(n[0], JobEvent::CheckpointTriggered { id: 4 });
    assert!(n.contains(&JobEvent::CheckpointPersisted { id: 4 }));
    assert!(n.contains(&JobEvent::CheckpointNotified { id: 4 }));
    std::fs::remove_file(&f.path).unwrap();
}

#[test]
fn a_dropped_commit_keeps_the_logged_error_and_counts() {
    let mut f = fixture("drop", Naming::Incrementing);
    f.ev.restored_from = Some(4);
    f.feed(2, &[
        &format!("2000 DEBUG {KC} [t1] Committing Kafka transaction sh-r4-1-4"),
        "2001 INFO  org.apache.flink.connector.kafka.sink.internal.FlinkKafkaInternalProducer [t1] Attempting to resume transaction sh-r4-1-4 with producerId 15 and epoch 0",
        &format!("2002 ERROR {KC} [t1] Unable to commit transaction (CommitRequestImpl{{state=RECEIVED, numRetries=0, committable=KafkaCommittable{{producerId=15, epoch=0, transactionalId='sh-r4-1-4', producer=null}}}}) because its producer is already fenced. This means … most likely signals data loss."),
        "org.apache.kafka.common.errors.ProducerFencedException: There is a newer producer with the same transactionalId which fences the current one.",
    ]);
    let ev = f.events();
    assert!(matches!(&ev[0], EventKind::CommitStarted { restored: true, checkpoint: 4, .. }), "{ev:?}");
    let EventKind::CommitFinished { outcome: CommitOutcome::Dropped { error }, transactional_id, restored, .. } =
        &ev[1]
    else {
        panic!("{ev:?}")
    };
    assert_eq!(transactional_id, "sh-r4-1-4");
    assert!(restored);
    assert_eq!(error, "org.apache.kafka.common.errors.ProducerFencedException: There is a newer producer with the same transactionalId which fences the current one. (KafkaCommitter ERROR: because its producer is already fenced)");
    assert_eq!(f.ev.dropped, 1);
    // A restored commit is no notification of a checkpoint of this attempt.
    assert!(!f.notices().iter().any(|n| matches!(n, JobEvent::CheckpointNotified { .. })));
    std::fs::remove_file(&f.path).unwrap();
}

#[test]
fn pooling_takes_the_id_the_writer_prepared_and_provenance_is_noted() {
    let mut f = fixture("pool", Naming::Pooling);
    f.feed(1, &[
        &format!("1 DEBUG {W} [{T0}] Prepare KafkaCommittable{{producerId=3, epoch=2, transactionalId='sh-r4-0-1', producer=x}}."),
        &format!("2 INFO  sinkhole.flink.CheckpointLog [{T0}] sinkhole checkpoint 7 subtask 0 source 0 first_seq 10 next_seq 20 records 10"),
        "3 INFO  sinkhole.flink.SinkholeSerializer [t] sinkhole provenance (subtask 0): class=org.apache.flink.connector.kafka.sink.KafkaSink jar=file:/r/lib/flink-connector-kafka-5.0.0-2.2.jar sha256=ab",
        "4 INFO  org.apache.flink.runtime.taskexecutor.TaskManagerRunner [main] Classpath: /r/lib/a.jar:/r/lib/flink-connector-kafka-5.0.0-2.2.jar",
    ]);
    let ev = f.events();
    let EventKind::TxnPrecommitted { committable: c, .. } = &ev[1] else { panic!("{ev:?}") };
    assert_eq!((c.transactional_id.as_str(), c.checkpoint, c.producer_epoch), ("sh-r4-0-1", 7, 2));
    assert_eq!(f.ev.seen.lock().unwrap().tids.get(&(0, 7)).map(String::as_str), Some("sh-r4-0-1"));
    assert_eq!(f.ev.loaded.len(), 1);
    assert_eq!(f.ev.classpath.get(&1), Some(&true));
    assert!(matches!(&ev[2], EventKind::Note { text } if text.contains("KafkaSink loaded from file:/r/lib/")));
    std::fs::remove_file(&f.path).unwrap();
}

#[test]
fn a_commit_logged_before_the_tasks_were_killed_is_not_settled_by_a_later_job() {
    let mut f = fixture("stale", Naming::Incrementing);
    let before = sinkhole_base::utc::now_ms() - 50;
    f.ev.tasks_gone();
    // Read after the kill, written before it: the next job's thread of the same name
    // must not call it committed.
    f.feed(
        1,
        &[
            &format!("{before} DEBUG {KC} [{T0}] Committing Kafka transaction sh-r4-0-4"),
            &format!(
                "{} INFO  sinkhole.flink.CheckpointLog [{T0}] sinkhole checkpoint 5 subtask 0 records 0",
                before + 10_000
            ),
        ],
    );
    let ev = f.events();
    assert!(matches!(&ev[0], EventKind::CommitStarted { checkpoint: 4, .. }), "{ev:?}");
    assert!(!ev.iter().any(|e| matches!(e, EventKind::CommitFinished { .. })), "{ev:?}");
    std::fs::remove_file(&f.path).unwrap();
}
