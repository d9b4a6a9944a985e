use super::*;

fn rec(logger: &str, thread: &str, message: &str) -> LogLine {
    match split(&format!("1796124270209 INFO  {logger} [{thread}] {message}")) {
        Line::Record(r) => r,
        Line::Cont(c) => panic!("not a record: {c}"),
    }
}

#[test]
fn records_split_into_time_level_logger_thread_and_message() {
    let l = rec("org.apache.flink.runtime.checkpoint.CheckpointCoordinator", "Checkpoint Timer", "Triggering x");
    assert_eq!(l.wall_ms, 1_796_124_270_209);
    assert_eq!(l.level, "INFO");
    assert_eq!(l.class(), "CheckpointCoordinator");
    assert_eq!(l.thread, "Checkpoint Timer");
    assert_eq!(l.message, "Triggering x");
    let t = "Source: sinkhole-source -> sinkhole-checkpoint-log -> sinkhole-kafka-sink: Writer (1/2)#0";
    assert_eq!(rec("sinkhole.flink.CheckpointLog", t, "m").thread, t);
    assert_eq!(
        split("org.apache.kafka.common.errors.ProducerFencedException: There is a newer producer"),
        Line::Cont("org.apache.kafka.common.errors.ProducerFencedException: There is a newer producer".into())
    );
    assert!(matches!(split("\tat org.apache.flink.Foo.bar(Foo.java:1)"), Line::Cont(_)));
}

#[test]
fn the_job_managers_checkpoint_lines() {
    let cc = "org.apache.flink.runtime.checkpoint.CheckpointCoordinator";
    let t = rec(cc, "Checkpoint Timer", "Triggering checkpoint 10 (type=CheckpointType{name='Checkpoint', sharingFilesStrategy=FORWARD_BACKWARD}) @ 1796124270209 for job 16a184321c7eaaaa843c9005317f4e53.");
    assert_eq!(
        parse(&t),
        Some(Event::Triggered { id: 10, at_ms: 1_796_124_270_209, job: "16a184321c7eaaaa843c9005317f4e53".into() })
    );
    let c = rec(cc, "jobmanager-io-thread-3", "Completed checkpoint 10 for job 16a184321c7eaaaa843c9005317f4e53 (2318 bytes, checkpointDuration=52 ms, finalizationTime=6 ms).");
    assert_eq!(
        parse(&c),
        Some(Event::Completed { id: 10, job: "16a184321c7eaaaa843c9005317f4e53".into(), duration_ms: Some(52) })
    );
    let e = rec(cc, "Checkpoint Timer", "Checkpoint 7 of job 16a1 expired before completing.");
    assert!(matches!(parse(&e), Some(Event::Aborted { id: 7, .. })));
    let r = rec(cc, "flink-pekko", "Restoring job cad0686351a9f037c4c8effe3933fd8e from Savepoint 4 @ 0 for cad0686351a9f037c4c8effe3933fd8e located at file:/x/chk-4.");
    assert_eq!(parse(&r), Some(Event::Restored { job: "cad0686351a9f037c4c8effe3933fd8e".into(), id: 4 }));
    let r = rec(cc, "flink-pekko", "Restoring job abc from Checkpoint 12 @ 1796 for abc located at file:/x/chk-12.");
    assert_eq!(parse(&r), Some(Event::Restored { job: "abc".into(), id: 12 }));
    let s = rec(
        "org.apache.flink.runtime.executiongraph.DefaultExecutionGraph",
        "flink-pekko",
        "Job sinkhole run-1 (cad0686351a9f037c4c8effe3933fd8e) switched from state RUNNING to RESTARTING.",
    );
    assert_eq!(
        parse(&s),
        Some(Event::JobState {
            job: "cad0686351a9f037c4c8effe3933fd8e".into(),
            from: "RUNNING".into(),
            to: "RESTARTING".into()
        })
    );
}

#[test]
fn the_jobs_own_lines() {
    let log = "sinkhole.flink.CheckpointLog";
    let l = rec(log, "t", "sinkhole checkpoint 4 subtask 1 source 0 first_seq 632 next_seq 832 records 200");
    assert_eq!(
        parse(&l),
        Some(Event::Snapshot { id: 4, subtask: 1, source: Some(0), first_seq: 632, next_seq: 832, records: 200 })
    );
    let l = rec(log, "t", "sinkhole checkpoint 9 subtask 0 records 0");
    assert_eq!(
        parse(&l),
        Some(Event::Snapshot { id: 9, subtask: 0, source: None, first_seq: 0, next_seq: 0, records: 0 })
    );
    let l = rec(log, "t", "sinkhole slow snapshot subtask 0 checkpoint 4 held 5000 ms");
    assert_eq!(parse(&l), Some(Event::SlowSnapshot { subtask: 0, id: 4, ms: 5000 }));
    let l = rec(log, "t", "sinkhole restore subtask 1 checkpoint 15");
    assert_eq!(parse(&l), Some(Event::TaskRestored { subtask: 1, id: Some(15) }));
    let p = rec("sinkhole.flink.SinkholeSerializer", "t", "sinkhole provenance (subtask 0): class=org.apache.flink.connector.kafka.sink.KafkaSink jar=file:/x/lib/flink-connector-kafka-5.0.0-2.2-contrib.jar sha256=627268686c3e");
    assert_eq!(
        parse(&p),
        Some(Event::Provenance {
            class: "org.apache.flink.connector.kafka.sink.KafkaSink".into(),
            jar: "file:/x/lib/flink-connector-kafka-5.0.0-2.2-contrib.jar".into(),
            sha256: "627268686c3e".into()
        })
    );
}

#[test]
fn the_connectors_lines_in_both_packages() {
    let w = rec(
        "org.apache.flink.connector.kafka.sink.ExactlyOnceKafkaWriter",
        "t",
        "Prepare KafkaCommittable{producerId=14, epoch=0, transactionalId='sh-r4-0-4', producer=FlinkKafkaInternalProducer@1}.",
    );
    assert_eq!(parse(&w), Some(Event::Prepared { tid: "sh-r4-0-4".into(), producer_id: 14, epoch: 0 }));
    let r = rec(
        "org.apache.flink.connector.kafka.sink.internal.FlinkKafkaInternalProducer",
        "t",
        "Attempting to resume transaction sh-r4-1-4 with producerId 15 and epoch 0",
    );
    assert_eq!(parse(&r), Some(Event::Resuming { tid: "sh-r4-1-4".into() }));
    let kc = "org.apache.flink.connector.kafka.sink.internal.KafkaCommitter";
    assert_eq!(
        parse(&rec(kc, "t", "Committing Kafka transaction sh-r4-1-4")),
        Some(Event::Committing { tid: "sh-r4-1-4".into() })
    );
    let dropped = "Unable to commit transaction (CommitRequestImpl{state=RECEIVED, numRetries=0, committable=KafkaCommittable{producerId=15, epoch=0, transactionalId='sh-r4-1-4', producer=null}}) because its producer is already fenced. This means that you either have a different producer with the same 'transactional.id' (this is unlikely with the 'KafkaSink' as all generated ids are unique and shouldn't be reused) or recovery took longer than 'transaction.timeout.ms' (10000ms). In both cases this most likely signals data loss, please consult the Flink documentation for more details.";
    assert_eq!(
        parse(&rec(kc, "t", dropped)),
        Some(Event::CommitDropped { tid: "sh-r4-1-4".into(), because: "its producer is already fenced".into() })
    );
    // 3.4.0: another package, no quotes around the id.
    let old = "Unable to commit transaction (CommitRequestImpl{state=RECEIVED, numRetries=0, committable=KafkaCommittable{producerId=91, epoch=0, transactionalId=sh-c2-1-5}}) because its producer is already fenced. This means …";
    assert_eq!(
        parse(&rec("org.apache.flink.connector.kafka.sink.KafkaCommitter", "t", old)),
        Some(Event::CommitDropped { tid: "sh-c2-1-5".into(), because: "its producer is already fenced".into() })
    );
    let lost = "Transaction (CommitRequestImpl{committable=KafkaCommittable{producerId=1, epoch=0, transactionalId='a-0-3', producer=null}}) encountered error and data has been potentially lost.";
    assert_eq!(parse(&rec(kc, "t", lost)), Some(Event::CommitFailed { tid: "a-0-3".into() }));
    assert_eq!(
        parse(&rec(kc, "t", "Encountered retriable exception while committing a-0-3.")),
        Some(Event::CommitRetry { tid: "a-0-3".into() })
    );
    let cp =
        rec("org.apache.flink.runtime.taskexecutor.TaskManagerRunner", "main", " Classpath: /r/lib/a.jar:/r/lib/b.jar");
    assert_eq!(parse(&cp), Some(Event::Classpath { entries: "/r/lib/a.jar:/r/lib/b.jar".into() }));
    assert_eq!(parse(&rec("org.apache.flink.Other", "t", "Committing Kafka transaction x")), None);
}

#[tokio::test]
async fn a_followed_file_yields_every_line_as_it_grows() {
    let path = std::env::temp_dir().join(format!("sinkhole-follow-{}.log", std::process::id()));
    std::fs::write(&path, "1 INFO  a.B [t] one\ncont\n").unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(follow(path.clone(), 3, 0, tx));
    let first = rx.recv().await.unwrap();
    assert!(matches!(first, (3, Line::Record(ref r)) if r.message == "one"), "{first:?}");
    assert_eq!(rx.recv().await.unwrap(), (3, Line::Cont("cont".into())));
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"2 WARN  a.B [t] two").unwrap();
    f.flush().unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(rx.try_recv().is_err(), "a line without its newline is not sent");
    f.write_all(b"\n").unwrap();
    let (_, two) = rx.recv().await.unwrap();
    assert!(matches!(two, Line::Record(ref r) if r.level == "WARN" && r.message == "two"), "{two:?}");
    drop(rx);
    task.await.unwrap();
    std::fs::remove_file(&path).unwrap();
}
