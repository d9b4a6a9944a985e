//! The scenario's live readers (`readers:`): read_committed consumers of a mode's output topic
//! that poll from before the first worker starts until the topic has gone quiet after the job,
//! each poll a line of the mode's `readers.jsonl` for the checker (`sinkhole_checker::reads`).
//!
//! They stand for the downstream applications a sink serves, as the concurrent consumer of
//! Kafka's `transactions_test.py` does: `assign` readers each take every partition from the log
//! start (what a job reading the whole topic sees); `subscribe` readers share the partitions in
//! one consumer group, committing offsets as they go, and meet every rebalance a fault causes
//! (Kafka's `ConsumerCoordinator` hands partitions over at the committed offsets).
//!
//! A faithful `subscribe` reader processes before it commits: a record's offset is stored for
//! the auto commit (`enable.auto.offset.store=false`, then `rd_kafka_offset_store`) only once its
//! line is written, so a reader that crashes leaves its group's position at or before what it
//! processed, and the records after are read again, never passed over. The mutant readers break
//! exactly that, for calibrating poll-skip: `subscribe~commit-before-process` commits a batch
//! before it processes it, `subscribe~skip-after-rebalance` seeks a partition it is newly given
//! past its committed position.
//!
//! librdkafka's consumer blocks, so each reader is a thread of its own, like the visibility
//! tail; they read through the rig's own addresses, never through the proxy's faults. The
//! nemesis reaches them through their inboxes ([`crate::nemesis::readers`]): a reader killed,
//! paused or restarted acts between two polls and answers with what it did; each new consumer
//! is a new incarnation in `readers.jsonl`.
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::message::Message;
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use sinkhole_checker::latency::tail::{GRACE, QUIET};
use sinkhole_history::fault::ReaderHit;
use sinkhole_history::reads::{ReadKind, ReadsWriter};
use sinkhole_model::record;
use sinkhole_scenario::{ReaderMode, ReadersSpec};

use crate::nemesis::readers::{Command, Inbox, ReaderAction, ReaderControl};

/// `max.poll.interval.ms` of the `subscribe` readers: a reader that does not poll for this long
/// is put out of its group (librdkafka's consumer leaves it, as Kafka's `ConsumerCoordinator`
/// does), so a `pause-readers` longer than this causes a rebalance. librdkafka wants it no
/// shorter than `session.timeout.ms`, whose broker minimum is 6 s by default.
const MAX_POLL_INTERVAL_MS: u64 = 6_000;

/// `subscribe~commit-before-process`: how long a batch is "processed" after its offsets were
/// committed, before its records are recorded; a kill meanwhile loses it.
const PROCESSING: Duration = Duration::from_millis(1_000);

/// `subscribe~commit-before-process`: how long a batch collects records.
const BATCH_WINDOW: Duration = Duration::from_millis(200);

/// What a reader needs to record what it does: the file, and who it is.
#[derive(Clone)]
struct Recorder {
    out: ReadsWriter,
    reader: u32,
    incarnation: u32,
}

impl Recorder {
    fn record(&self, kind: ReadKind) {
        if let Err(e) = self.out.record(self.reader, self.incarnation, kind) {
            tracing::warn!(reader = self.reader, error = %e, "readers.jsonl: cannot write");
        }
    }
}

/// librdkafka calls this on its poll thread at each rebalance: a subscribe reader's new
/// assignment goes into the file before any record polled under it. The eager protocol
/// (librdkafka's default assignors) revokes everything and assigns anew, as Kafka's
/// `ConsumerCoordinator` does with them.
struct Rebalances {
    rec: Recorder,
    mode: ReaderMode,
    topic: String,
    /// Assignments this reader has had, over all its incarnations.
    assignments: Arc<AtomicU32>,
    /// The partitions of this incarnation's latest assignment.
    held: Mutex<Vec<i32>>,
}

impl ClientContext for Rebalances {}

impl ConsumerContext for Rebalances {
    fn rebalance(&self, consumer: &BaseConsumer<Self>, err: RDKafkaRespErr, tpl: &mut TopicPartitionList) {
        if err != RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS {
            if err != RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS {
                tracing::debug!(reader = self.rec.reader, ?err, "reader: rebalance error");
            }
            if let Err(e) = consumer.unassign() {
                tracing::debug!(reader = self.rec.reader, error = %e, "reader: unassign");
            }
            return;
        }
        let mut partitions: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
        partitions.sort_unstable();
        let first = self.assignments.fetch_add(1, Ordering::SeqCst) == 0;
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if self.mode == ReaderMode::SubscribeSkipAfterRebalance && !first {
            // The mutant: a partition it did not hold is started at its end, not at the
            // group's committed offset (what `seekToEnd` in `onPartitionsAssigned` does).
            for &p in partitions.iter().filter(|p| !held.contains(p)) {
                if let Err(e) = tpl.set_partition_offset(&self.topic, p, Offset::End) {
                    tracing::debug!(reader = self.rec.reader, error = %e, "reader: seek to end");
                }
            }
        }
        *held = partitions.clone();
        drop(held);
        if let Err(e) = consumer.assign(tpl) {
            tracing::warn!(reader = self.rec.reader, error = %e, "reader: assign");
        }
        self.rec.record(ReadKind::Assigned { partitions });
    }
}

type Reader = BaseConsumer<Rebalances>;

/// The running readers of one mode; [`Readers::stop`] ends them.
pub struct Readers {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    out: ReadsWriter,
    control: ReaderControl,
}

/// Where the readers read and write.
pub struct Target<'a> {
    pub bootstrap: &'a str,
    pub topic: &'a str,
    pub partitions: u32,
    /// The consumer group of `subscribe` readers (one per mode and run).
    pub group: &'a str,
    /// `readers.jsonl`.
    pub path: &'a Path,
}

/// What every consumer of a reader is made from.
#[derive(Clone)]
struct Setup {
    mode: ReaderMode,
    bootstrap: String,
    topic: String,
    partitions: u32,
    group: String,
}

impl Readers {
    /// Creates every reader's consumer (so a bad configuration fails here, before the job) and
    /// starts their threads.
    pub fn start(spec: &ReadersSpec, t: &Target<'_>) -> anyhow::Result<Readers> {
        let out = ReadsWriter::create(t.path).with_context(|| format!("creating {}", t.path.display()))?;
        let setup = Setup {
            mode: spec.mode,
            bootstrap: t.bootstrap.to_string(),
            topic: t.topic.to_string(),
            partitions: t.partitions,
            group: t.group.to_string(),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (mut threads, mut control) = (vec![], ReaderControl::default());
        for reader in 0..spec.count {
            let assignments = Arc::new(AtomicU32::new(0));
            let rec = Recorder { out: out.clone(), reader, incarnation: 0 };
            let consumer = open(&setup, rec.clone(), assignments.clone())?;
            let inbox = Arc::new(Inbox::default());
            control.inboxes.push(inbox.clone());
            let life = Life { setup: setup.clone(), rec, assignments, inbox, stop: stop.clone() };
            let thread = std::thread::Builder::new()
                .name(format!("sinkhole-reader-{reader}"))
                .spawn(move || life.run(consumer))
                .context("starting a reader's thread")?;
            threads.push(thread);
        }
        Ok(Readers { stop, threads, out, control })
    }

    /// The nemesis' handle on these readers.
    pub fn control(&self) -> ReaderControl {
        self.control.clone()
    }

    /// Lets the readers finish (each once the topic has been quiet for a second, at most ten
    /// after this call) and flushes what they polled.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        let threads = std::mem::take(&mut self.threads);
        let panicked =
            tokio::task::spawn_blocking(move || threads.into_iter().map(|t| t.join()).filter(Result::is_err).count())
                .await?;
        if panicked > 0 {
            tracing::warn!(panicked, "readers: threads panicked");
        }
        self.out.flush().context("writing readers.jsonl")
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// A new consumer incarnation of `rec`'s reader, its `started` line written.
fn open(s: &Setup, rec: Recorder, assignments: Arc<AtomicU32>) -> anyhow::Result<Reader> {
    let mode = s.mode;
    let mut config = ClientConfig::new();
    sinkhole_client::wire::security::rdkafka_config(&mut config)
        .set("bootstrap.servers", &s.bootstrap)
        .set("client.id", format!("sinkhole-reader-{}", rec.reader))
        .set("isolation.level", mode.isolation())
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "50");
    if mode.subscribes() {
        config
            .set("group.id", &s.group)
            .set("session.timeout.ms", "6000")
            .set("heartbeat.interval.ms", "1000")
            .set("max.poll.interval.ms", MAX_POLL_INTERVAL_MS.to_string());
        if mode == ReaderMode::SubscribeCommitBeforeProcess {
            // It commits each batch itself, before processing it.
            config.set("enable.auto.commit", "false");
        } else {
            // Committed every 200 ms: the offsets stored after each record's line is written.
            config
                .set("enable.auto.commit", "true")
                .set("auto.commit.interval.ms", "200")
                .set("enable.auto.offset.store", "false");
        }
    } else {
        config.set("group.id", "sinkhole-readers-assign").set("enable.auto.commit", "false");
    }
    let context = Rebalances { rec: rec.clone(), mode, topic: s.topic.clone(), assignments, held: Mutex::new(vec![]) };
    let consumer: Reader = config.create_with_context(context)?;
    rec.record(ReadKind::Started { group: mode.subscribes().then(|| s.group.clone()) });
    if mode.subscribes() {
        consumer.subscribe(&[&s.topic])?;
    } else {
        let mut tpl = TopicPartitionList::new();
        for p in 0..s.partitions as i32 {
            tpl.add_partition_offset(&s.topic, p, Offset::Beginning)?;
        }
        consumer.assign(&tpl)?;
        rec.record(ReadKind::Assigned { partitions: (0..s.partitions as i32).collect() });
    }
    Ok(consumer)
}

/// Drops a consumer as a crash would: librdkafka destroys it without `consumer_close()`, so it
/// sends no LeaveGroup and the group notices only when its session times out
/// (`session.timeout.ms`), as with a consumer process killed by SIGKILL.
fn abandon(consumer: Reader) {
    // SAFETY: the handle is valid while `consumer` lives; after the destroy nothing uses it,
    // since the wrapper is forgotten rather than dropped (its drop would close and destroy it
    // again). The wrapper's small allocations are leaked, once per kill.
    unsafe {
        rdkafka::bindings::rd_kafka_destroy_flags(
            consumer.client().native_ptr(),
            rdkafka::bindings::RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE,
        );
    }
    std::mem::forget(consumer);
}

/// A record polled, as its `polled` line says it.
struct Polled {
    partition: i32,
    offset: i64,
    subtask: Option<u32>,
    seq: Option<u64>,
}

impl Polled {
    fn of(m: &rdkafka::message::BorrowedMessage<'_>) -> Polled {
        let id = m.payload().and_then(record::parse_value).map(|(_, s, q)| (s, q));
        Polled { partition: m.partition(), offset: m.offset(), subtask: id.map(|(s, _)| s), seq: id.map(|(_, q)| q) }
    }

    fn record(&self, rec: &Recorder) {
        let Polled { partition, offset, subtask, seq } = *self;
        rec.record(ReadKind::Polled { partition, offset, subtask, seq });
    }
}

/// One reader's thread: its consumers one after the other, and the nemesis' commands.
struct Life {
    setup: Setup,
    rec: Recorder,
    assignments: Arc<AtomicU32>,
    inbox: Arc<Inbox>,
    stop: Arc<AtomicBool>,
}

/// Where a reader is between two polls.
struct State {
    /// None while killed.
    consumer: Option<Reader>,
    paused: bool,
    /// `subscribe~commit-before-process`: a batch committed and not yet processed, and when its
    /// processing is done.
    batch: Vec<Polled>,
    processed_at: Option<Instant>,
    last_record: Instant,
}

impl Life {
    /// Polls until stopped and quiet; every record becomes a `polled` line.
    fn run(mut self, first: Reader) {
        let mut st = State {
            consumer: Some(first),
            paused: false,
            batch: vec![],
            processed_at: None,
            last_record: Instant::now(),
        };
        let mut stopped_at: Option<Instant> = None;
        loop {
            while let Some(c) = self.inbox.take() {
                self.command(&mut st, c);
            }
            match st.consumer.take() {
                Some(consumer) if !st.paused => {
                    self.step(&consumer, &mut st);
                    st.consumer = Some(consumer);
                }
                idle => {
                    st.consumer = idle;
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            if stopped_at.is_none() && self.stop.load(Ordering::SeqCst) {
                stopped_at = Some(Instant::now());
            }
            if let Some(t) = stopped_at {
                let quiet = st.last_record.elapsed() >= QUIET && st.batch.is_empty();
                if quiet || t.elapsed() >= GRACE {
                    break;
                }
            }
        }
        if let Some(consumer) = st.consumer.take() {
            drop(consumer);
            self.rec.record(ReadKind::Stopped { reason: "the run ended".into() });
        }
    }

    /// One poll (or, for the commit-before-process mutant, one step of a batch).
    fn step(&self, consumer: &Reader, st: &mut State) {
        if self.setup.mode == ReaderMode::SubscribeCommitBeforeProcess {
            return self.batch_step(consumer, st);
        }
        match consumer.poll(Duration::from_millis(50)) {
            Some(Ok(m)) => {
                st.last_record = Instant::now();
                Polled::of(&m).record(&self.rec);
                // Processed: only now may the group's position pass it (the next auto commit).
                if self.setup.mode.subscribes() {
                    if let Err(e) = consumer.store_offset_from_message(&m) {
                        tracing::debug!(reader = self.rec.reader, error = %e, "reader: store offset");
                    }
                }
            }
            // A leader moving or a broker killed by a fault: librdkafka retries.
            Some(Err(e)) => tracing::debug!(reader = self.rec.reader, error = %e, "reader: consumer error"),
            None => {}
        }
    }

    /// The commit-before-process mutant: collect a batch, commit its end offsets at once, and
    /// only after [`PROCESSING`] record its records.
    fn batch_step(&self, consumer: &Reader, st: &mut State) {
        if let Some(at) = st.processed_at {
            if Instant::now() >= at {
                for p in st.batch.drain(..) {
                    p.record(&self.rec);
                }
                st.processed_at = None;
            } else {
                std::thread::sleep(Duration::from_millis(10));
            }
            return;
        }
        let began = Instant::now();
        while began.elapsed() < BATCH_WINDOW {
            match consumer.poll(Duration::from_millis(20)) {
                Some(Ok(m)) => st.batch.push(Polled::of(&m)),
                Some(Err(e)) => tracing::debug!(reader = self.rec.reader, error = %e, "reader: consumer error"),
                None if !st.batch.is_empty() => break,
                None => {}
            }
        }
        if st.batch.is_empty() {
            return;
        }
        st.last_record = Instant::now();
        let mut ends: Vec<(i32, i64)> = vec![];
        for p in &st.batch {
            match ends.iter_mut().find(|(q, _)| *q == p.partition) {
                Some(e) => e.1 = e.1.max(p.offset + 1),
                None => ends.push((p.partition, p.offset + 1)),
            }
        }
        let mut tpl = TopicPartitionList::new();
        for (p, end) in ends {
            if let Err(e) = tpl.add_partition_offset(&self.setup.topic, p, Offset::Offset(end)) {
                tracing::debug!(reader = self.rec.reader, error = %e, "reader: commit list");
            }
        }
        if let Err(e) = consumer.commit(&tpl, CommitMode::Sync) {
            tracing::debug!(reader = self.rec.reader, error = %e, "reader: commit");
        }
        st.processed_at = Some(Instant::now() + PROCESSING);
    }

    /// A new incarnation; Missed if its consumer cannot be made.
    fn reopen(&mut self, st: &mut State) -> Result<u32, String> {
        self.rec.incarnation += 1;
        let c = open(&self.setup, self.rec.clone(), self.assignments.clone()).map_err(|e| format!("{e:#}"))?;
        st.consumer = Some(c);
        st.paused = false;
        st.last_record = Instant::now();
        Ok(self.rec.incarnation)
    }

    /// Carries out one of the nemesis' commands and answers it.
    fn command(&mut self, st: &mut State, c: Command) {
        let Command { action, fault, answer } = c;
        let reader = self.rec.reader;
        let incarnation = self.rec.incarnation;
        let missed = |error: &str| ReaderHit::Missed { reader, error: error.to_string() };
        let acted = |incarnation, started, did: String| ReaderHit::Acted { reader, incarnation, started, did };
        let hit = match (action, st.consumer.take()) {
            (ReaderAction::Kill, Some(consumer)) => {
                abandon(consumer);
                // Polled, committed, never processed: gone with the consumer.
                let lost = std::mem::take(&mut st.batch).len();
                st.processed_at = None;
                st.paused = false;
                self.rec.record(ReadKind::Stopped { reason: format!("killed by fault {fault}: no close, no leave") });
                let mut did = "destroyed without consumer_close (no LeaveGroup)".to_string();
                if lost > 0 {
                    did.push_str(&format!("; {lost} records committed and not yet processed were lost with it"));
                }
                acted(incarnation, None, did)
            }
            (ReaderAction::Start, None) => match self.reopen(st) {
                Ok(i) => acted(i, Some(i), "a new consumer subscribed".into()),
                Err(e) => missed(&format!("could not start a new consumer: {e}")),
            },
            (ReaderAction::Pause, Some(consumer)) => {
                st.consumer = Some(consumer);
                st.paused = true;
                acted(incarnation, None, "stopped polling".into())
            }
            (ReaderAction::Resume, Some(consumer)) => {
                st.consumer = Some(consumer);
                st.paused = false;
                acted(incarnation, None, "polling again".into())
            }
            (ReaderAction::Restart, Some(consumer)) => {
                // A clean close: what it polled is processed first, then librdkafka's
                // consumer_close commits what was stored and leaves the group.
                for p in st.batch.drain(..) {
                    p.record(&self.rec);
                }
                st.processed_at = None;
                drop(consumer);
                self.rec.record(ReadKind::Stopped { reason: format!("restarted by fault {fault}: closed cleanly") });
                match self.reopen(st) {
                    Ok(i) => acted(incarnation, Some(i), "closed cleanly and started again".into()),
                    Err(e) => missed(&format!("closed, but could not start a new consumer: {e}")),
                }
            }
            (ReaderAction::Start, Some(consumer)) => {
                st.consumer = Some(consumer);
                missed("it was running")
            }
            (_, None) => missed("it was down (killed, not started again)"),
        };
        let _ = answer.send(hit);
    }
}
