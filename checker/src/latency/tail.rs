//! The live tail: a `read_committed` consumer that follows a mode's output
//! topic while the job runs, so `visibility` is what a downstream reader
//! would see — the time from a record's production (`sinkhole.produced_us`,
//! the worker's wall clock) to the moment this consumer first got it.
//!
//! The rig and the workers share one machine and so one wall clock; across
//! machines the figure would include their clock offset. The tail runs on its
//! own thread (librdkafka's consumer blocks) and is started before the
//! workers, so it sees every record once it is committed; after the job it
//! keeps reading until the topic has been quiet for [`QUIET`] (at most
//! [`GRACE`]), so the final checkpoint's records are measured too.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};
use sinkhole_model::record;

use super::Series;

/// After a stop: the tail ends once no record arrived for this long (once it has seen one: a
/// tail that has seen none yet waits for its first, unless the topic is empty) …
pub const QUIET: Duration = Duration::from_millis(1000);
/// … or at the latest this long after the stop.
pub const GRACE: Duration = Duration::from_secs(10);

/// What the tail saw.
#[derive(Debug, Clone, Default)]
pub struct TailResult {
    /// Produce → first seen, µs, in windows of when it was seen.
    pub visibility: Series,
    pub records: u64,
    /// Records without a readable `sinkhole.produced_us` header (not measured).
    pub unmeasured: u64,
}

/// A running tail; [`Tail::stop`] ends it (dropping it stops it too, unread).
pub struct Tail {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<TailResult>>,
}

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

fn produced_us(m: &impl Message) -> Option<u64> {
    let h = m.headers()?;
    h.iter().find(|hd| hd.key == record::H_TIME_US).and_then(|hd| std::str::from_utf8(hd.value?).ok()?.parse().ok())
}

impl Tail {
    /// Assigns every partition of `topic` from the beginning and starts
    /// reading. Returns once the consumer exists and is assigned.
    pub fn start(bootstrap: &str, topic: &str, partitions: u32) -> Result<Tail, KafkaError> {
        let consumer: BaseConsumer = sinkhole_client::wire::security::rdkafka_config(&mut ClientConfig::new())
            .set("bootstrap.servers", bootstrap)
            .set("group.id", "sinkhole-tail")
            .set("client.id", "sinkhole-tail")
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("isolation.level", "read_committed")
            // An idle fetch waits at most this long at the broker, so a
            // quiet topic does not hold back the tail's next look for the
            // default 500 ms.
            .set("fetch.wait.max.ms", "50")
            .create()?;
        let mut tpl = TopicPartitionList::new();
        for p in 0..partitions as i32 {
            tpl.add_partition_offset(topic, p, Offset::Beginning)?;
        }
        consumer.assign(&tpl)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("sinkhole-tail".into())
            .spawn({
                let topic = topic.to_string();
                move || follow(consumer, &topic, partitions, &flag)
            })
            .map_err(|e| KafkaError::ClientCreation(format!("starting the tail thread: {e}")))?;
        Ok(Tail { stop, handle: Some(handle) })
    }

    /// Asks the tail to finish (after the quiet period) and returns what it saw.
    pub async fn stop(mut self) -> anyhow::Result<TailResult> {
        self.stop.store(true, Ordering::SeqCst);
        let handle = self.handle.take().expect("joined once");
        tokio::task::spawn_blocking(move || handle.join())
            .await?
            .map_err(|_| anyhow::anyhow!("the tail consumer's thread panicked"))
    }
}

impl Drop for Tail {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Whether `topic` holds no record at all (every partition's high-water mark 0), asked of the
/// partitions' leaders; `false` when a leader does not answer in time.
fn topic_empty(consumer: &BaseConsumer, topic: &str, partitions: u32) -> bool {
    (0..partitions as i32)
        .all(|p| matches!(consumer.fetch_watermarks(topic, p, Duration::from_millis(500)), Ok((_, 0))))
}

fn follow(consumer: BaseConsumer, topic: &str, partitions: u32, stop: &AtomicBool) -> TailResult {
    let mut r = TailResult::default();
    let mut stopped_at: Option<Instant> = None;
    let mut last_record = Instant::now();
    let mut asked_empty: Option<Instant> = None;
    loop {
        match consumer.poll(Duration::from_millis(50)) {
            Some(Ok(m)) => {
                let seen = now_us();
                last_record = Instant::now();
                r.records += 1;
                match produced_us(&m) {
                    Some(p) => r.visibility.record(seen / 1000, seen.saturating_sub(p)),
                    None => r.unmeasured += 1,
                }
            }
            // Fetch errors (a leader moving, a broker killed by a fault) are
            // retried by librdkafka; the tail only reports them.
            Some(Err(e)) => tracing::debug!(error = %e, "tail: consumer error"),
            None => {}
        }
        if stopped_at.is_none() && stop.load(Ordering::SeqCst) {
            stopped_at = Some(Instant::now());
        }
        if let Some(t) = stopped_at {
            if t.elapsed() >= GRACE {
                return r;
            }
            if r.records > 0 {
                if last_record.elapsed() >= QUIET {
                    return r;
                }
            } else if asked_empty.is_none_or(|a| a.elapsed() >= QUIET) {
                // Nothing seen yet: a quiet topic, or a consumer still logging in (a TLS and SASL
                // handshake on a busy machine can outlast a short job). Only a topic with no
                // record at all ends the tail before its grace.
                if topic_empty(&consumer, topic, partitions) {
                    return r;
                }
                asked_empty = Some(Instant::now());
            }
        }
    }
}
