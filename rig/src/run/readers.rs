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
//! librdkafka's consumer blocks, so each reader is a thread of its own, like the visibility
//! tail; they read through the rig's own addresses, never through the proxy's faults.
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::Message;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use sinkhole_checker::latency::tail::{GRACE, QUIET};
use sinkhole_history::reads::{ReadKind, ReadsWriter};
use sinkhole_model::record;
use sinkhole_scenario::{ReaderMode, ReadersSpec};

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
/// assignment goes into the file before any record polled under it.
struct Rebalances(Recorder);

impl ClientContext for Rebalances {}

impl ConsumerContext for Rebalances {
    fn post_rebalance(&self, _: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Assign(tpl) = rebalance {
            let mut partitions: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
            partitions.sort_unstable();
            self.0.record(ReadKind::Assigned { partitions });
        }
    }
}

/// The running readers of one mode; [`Readers::stop`] ends them.
pub struct Readers {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    out: ReadsWriter,
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

impl Readers {
    /// Creates every reader's consumer (so a bad configuration fails here, before the job) and
    /// starts their threads.
    pub fn start(spec: &ReadersSpec, t: &Target<'_>) -> anyhow::Result<Readers> {
        let out = ReadsWriter::create(t.path).with_context(|| format!("creating {}", t.path.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = vec![];
        for reader in 0..spec.count {
            let rec = Recorder { out: out.clone(), reader, incarnation: 0 };
            let consumer = consumer(spec.mode, t, rec.clone())?;
            let flag = stop.clone();
            let thread = std::thread::Builder::new()
                .name(format!("sinkhole-reader-{reader}"))
                .spawn(move || follow(consumer, &rec, &flag))
                .context("starting a reader's thread")?;
            threads.push(thread);
        }
        Ok(Readers { stop, threads, out })
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

fn consumer(mode: ReaderMode, t: &Target<'_>, rec: Recorder) -> anyhow::Result<BaseConsumer<Rebalances>> {
    let mut config = ClientConfig::new();
    sinkhole_client::wire::security::rdkafka_config(&mut config)
        .set("bootstrap.servers", t.bootstrap)
        .set("client.id", format!("sinkhole-reader-{}", rec.reader))
        .set("isolation.level", mode.isolation())
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "50");
    match mode {
        ReaderMode::Assign | ReaderMode::AssignReadUncommitted => {
            config.set("group.id", "sinkhole-readers-assign").set("enable.auto.commit", "false")
        }
        ReaderMode::Subscribe => config
            .set("group.id", t.group)
            .set("enable.auto.commit", "true")
            .set("auto.commit.interval.ms", "200")
            .set("session.timeout.ms", "6000")
            .set("heartbeat.interval.ms", "1000"),
    };
    let consumer: BaseConsumer<Rebalances> = config.create_with_context(Rebalances(rec.clone()))?;
    rec.record(ReadKind::Started { group: (mode == ReaderMode::Subscribe).then(|| t.group.to_string()) });
    match mode {
        ReaderMode::Assign | ReaderMode::AssignReadUncommitted => {
            let mut tpl = TopicPartitionList::new();
            for p in 0..t.partitions as i32 {
                tpl.add_partition_offset(t.topic, p, Offset::Beginning)?;
            }
            consumer.assign(&tpl)?;
            rec.record(ReadKind::Assigned { partitions: (0..t.partitions as i32).collect() });
        }
        ReaderMode::Subscribe => consumer.subscribe(&[t.topic])?,
    }
    Ok(consumer)
}

/// Polls until stopped and quiet; every record becomes a `polled` line.
fn follow(consumer: BaseConsumer<Rebalances>, rec: &Recorder, stop: &AtomicBool) {
    let mut stopped_at: Option<Instant> = None;
    let mut last_record = Instant::now();
    loop {
        match consumer.poll(Duration::from_millis(50)) {
            Some(Ok(m)) => {
                last_record = Instant::now();
                let id = m.payload().and_then(record::parse_value).map(|(_, s, q)| (s, q));
                rec.record(ReadKind::Polled {
                    partition: m.partition(),
                    offset: m.offset(),
                    subtask: id.map(|(s, _)| s),
                    seq: id.map(|(_, q)| q),
                });
            }
            // A leader moving or a broker killed by a fault: librdkafka retries.
            Some(Err(e)) => tracing::debug!(reader = rec.reader, error = %e, "reader: consumer error"),
            None => {}
        }
        if stopped_at.is_none() && stop.load(Ordering::SeqCst) {
            stopped_at = Some(Instant::now());
        }
        if let Some(t) = stopped_at {
            if last_record.elapsed() >= QUIET || t.elapsed() >= GRACE {
                break;
            }
        }
    }
    rec.record(ReadKind::Stopped { reason: "the run ended".into() });
}
