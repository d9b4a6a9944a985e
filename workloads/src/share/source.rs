//! A worker's share-group source: the records of the job's input, read as
//! one member of a share group, acknowledged by the scenario's policy.
//!
//! Why a share-group source cannot be exactly-once with a transactional sink
//! today: a share group's acknowledgement (ShareAcknowledge, or one riding on
//! ShareFetch) and a transaction's commit are two requests to two
//! coordinators, with nothing tying them together (KIP-932 has no
//! transactional acknowledgement; the KIP-1289 draft proposes one). Whichever
//! comes first, a crash between them is an anomaly: acknowledged but not
//! committed is lost, committed but not acknowledged is redelivered and
//! written again. The policies put the acknowledgement at the three places a
//! source can put it (`sinkhole_model::AckPolicy`):
//!
//! - `before-commit`: at checkpoint n's barrier, before the sink pre-commits
//!   n's transaction (a Flink source's `snapshotState` runs before the
//!   barrier reaches the sink's writer);
//! - `after-commit`: once the sink committed n and the coordinator said so
//!   (`notifyCheckpointComplete`, where a Flink share-group source would
//!   acknowledge);
//! - `at-poll`: right after each fetch, before the records are written: the
//!   earliest a source can (Java's implicit acknowledgement mode acknowledges
//!   a poll's records with the next poll, whatever became of them).
//!
//! What a record is: the rig wrote the input with the bytes the generated
//! source would emit (`crate::source::record_of`), so a delivered record's
//! value names its id `(subtask, seq)` and the worker writes exactly the
//! record the checker expects, stamped with the time it was read. A record
//! that names no id of this run is rejected (REJECT), never written.
//!
//! The end of the input: a share group never ends. A source that holds
//! nothing unacknowledged and fetched nothing asks the group's coordinator
//! for its lag (DescribeShareGroupOffsets v1, `docs/PROTOCOL.md` §6): lag 0 on
//! every input partition means every record was acknowledged or archived by
//! someone, so nothing can be delivered again.
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tracing::{debug, info, warn};

use super::consumer::{AckResult, ShareConsumer, ShareConsumerConfig};
use super::ShareRecord;
use crate::source::{record_of, unix_us, Record, TokenBucket};
use sinkhole_client::wire::share_fetch::{AcquireMode, ACK_ACCEPT, ACK_REJECT};
use sinkhole_client::wire::{ClientConfig, WireError};
use sinkhole_model::{id_ranges, record, AckPolicy, EventKind, IdRange, Partitioning, Redelivery, ShareInput};

/// Redelivered records kept as examples per barrier.
const EXAMPLES: usize = 8;
/// How long a ShareFetch waits at the broker for records (`MaxWaitMs`): the
/// worker's loop serves the coordinator between fetches.
const POLL_WAIT: Duration = Duration::from_millis(100);
/// How often an idle source asks the group for its lag.
const LAG_EVERY: Duration = Duration::from_millis(250);
const JOIN_TIMEOUT: Duration = Duration::from_secs(60);

/// A record read and not acknowledged yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Held {
    partition: i32,
    offset: i64,
    subtask: u32,
    seq: u64,
}

/// What one round of acknowledgements did.
#[derive(Debug, Default)]
struct Tally {
    ids: Vec<(u32, u64)>,
    refused: u64,
    errors: BTreeMap<String, u64>,
    latency_us: u64,
}

impl Tally {
    fn absorb(&mut self, other: Tally) {
        self.ids.extend(other.ids);
        self.refused += other.refused;
        for (k, v) in other.errors {
            *self.errors.entry(k).or_insert(0) += v;
        }
        self.latency_us += other.latency_us;
    }

    fn event(self, checkpoint: u64, policy: AckPolicy) -> EventKind {
        EventKind::ShareAcknowledged {
            checkpoint,
            policy,
            records: self.ids.len() as u64,
            ranges: id_ranges(self.ids),
            refused: self.refused,
            errors: self.errors,
            latency_us: self.latency_us,
        }
    }
}

/// Deliveries since the last barrier.
#[derive(Debug, Default)]
struct Deliveries {
    records: u64,
    redelivered: u64,
    max_count: i16,
    examples: Vec<Redelivery>,
}

/// Where a record of this run comes from: its id `(subtask, seq)`.
pub fn identity(value: Option<&[u8]>, run_id: &str, parallelism: u32, records: u64) -> Option<(u32, u64)> {
    let (run, s, q) = record::parse_value(value?)?;
    (run == run_id && s < parallelism && q < records).then_some((s, q))
}

/// The output layout a worker writes with (the scenario's topic and partitioning).
#[derive(Debug, Clone)]
pub struct Layout {
    pub run_id: String,
    pub parallelism: u32,
    pub records_per_subtask: u64,
    pub partitions: u32,
    pub partitioning: Partitioning,
    /// Records per second this worker reads at most; 0 = unthrottled.
    pub rate_per_sec: u64,
}

/// One worker's share-group source. See the module docs.
pub struct ShareSource {
    consumer: ShareConsumer,
    input: ShareInput,
    layout: Layout,
    bucket: TokenBucket,
    input_partitions: u32,
    /// The checkpoint whose barrier closes what is read now.
    interval: u64,
    /// Read, not acknowledged, by the interval whose transaction carries them.
    held: BTreeMap<u64, Vec<Held>>,
    /// Ids handed to the sink since the last barrier.
    carried: Vec<(u32, u64)>,
    deliveries: Deliveries,
    /// `at-poll`: what was acknowledged since the last barrier.
    at_poll: Tally,
    rejected: u64,
    events: Vec<EventKind>,
    exhausted: bool,
    last_lag: Option<Instant>,
    /// Records handed to the sink by this attempt.
    read: u64,
}

impl ShareSource {
    /// Joins the group as a new member; the first interval is `first_checkpoint`'s.
    pub async fn join(
        bootstrap: &[String],
        input: ShareInput,
        layout: Layout,
        client: ClientConfig,
        first_checkpoint: u64,
    ) -> Result<ShareSource, WireError> {
        let mut cfg = ShareConsumerConfig::new(&input.group_id, &[input.input_topic.as_str()]);
        cfg.max_records = input.batch.clamp(1, i32::MAX as u32) as i32;
        // Exactly MaxRecords at most, so a rate holds (Java: `share.acquire.mode=record_limit`).
        cfg.acquire_mode = AcquireMode::RecordLimit;
        cfg.max_wait = POLL_WAIT;
        cfg.client = client;
        let consumer = ShareConsumer::join(bootstrap, cfg, JOIN_TIMEOUT).await?;
        let mut me = ShareSource {
            input_partitions: 0,
            bucket: TokenBucket::new(layout.rate_per_sec),
            consumer,
            layout,
            interval: first_checkpoint,
            held: BTreeMap::new(),
            carried: Vec::new(),
            deliveries: Deliveries::default(),
            at_poll: Tally::default(),
            rejected: 0,
            events: Vec::new(),
            exhausted: false,
            last_lag: None,
            read: 0,
            input,
        };
        let topic = me.input.input_topic.clone();
        me.input_partitions =
            me.consumer.client().cached_metadata().topic(&topic).map(|t| t.partitions.len() as u32).unwrap_or(0);
        info!(group = me.input.group_id, member = me.consumer.member_id(), topic, "share source joined");
        me.events.push(EventKind::ShareJoined {
            group: me.input.group_id.clone(),
            member_id: me.consumer.member_id().to_string(),
        });
        Ok(me)
    }

    pub fn policy(&self) -> AckPolicy {
        self.input.ack
    }

    /// Every record of the input was acknowledged or archived (by anyone).
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }

    /// Records this attempt handed to the sink.
    pub fn read(&self) -> u64 {
        self.read
    }

    /// Waits until the rate allows a fetch; never returns once the input is
    /// exhausted (so it sits in a `select!` without a guard).
    pub async fn ready(&mut self) {
        if self.exhausted {
            std::future::pending::<()>().await;
        }
        self.bucket.ready().await
    }

    /// History events since the last call.
    pub fn take_events(&mut self) -> Vec<EventKind> {
        std::mem::take(&mut self.events)
    }

    fn holds_nothing(&self) -> bool {
        self.held.values().all(Vec::is_empty)
    }

    /// One ShareFetch: the records to write, as the sink writes them.
    pub async fn fetch(&mut self) -> Result<Vec<Record>, WireError> {
        let allowed = self.bucket.available().min(u64::from(self.input.batch)).max(1);
        self.consumer.set_max_records(allowed.min(i32::MAX as u64) as i32);
        let (records, _piggybacked) = self.consumer.poll().await?;
        self.bucket.take((records.len() as u64).min(allowed));
        let now = unix_us();
        let mut out = Vec::with_capacity(records.len());
        let mut fresh = Vec::new();
        let l = self.layout.clone();
        for r in records {
            let Some((s, q)) = identity(r.value.as_deref(), &l.run_id, l.parallelism, l.records_per_subtask) else {
                warn!(partition = r.partition, offset = r.offset, "a record of no id of this run: rejected");
                self.consumer.acknowledge(&r, ACK_REJECT);
                self.rejected += 1;
                continue;
            };
            self.delivered(&r, s, q);
            fresh.push(Held { partition: r.partition, offset: r.offset, subtask: s, seq: q });
            out.push(record_of(&l.run_id, s, q, l.partitions, l.partitioning, now));
            self.carried.push((s, q));
        }
        self.read += out.len() as u64;
        if self.input.ack == AckPolicy::AtPoll {
            if !fresh.is_empty() {
                let t = self.acknowledge(fresh).await?;
                self.at_poll.absorb(t);
            }
        } else if !fresh.is_empty() {
            self.held.entry(self.interval).or_default().extend(fresh);
        }
        if out.is_empty() && self.holds_nothing() {
            self.check_end().await;
        }
        Ok(out)
    }

    fn delivered(&mut self, r: &ShareRecord, s: u32, q: u64) {
        let d = &mut self.deliveries;
        d.records += 1;
        d.max_count = d.max_count.max(r.delivery_count);
        if r.delivery_count > 1 {
            d.redelivered += 1;
            if d.examples.len() < EXAMPLES {
                d.examples.push(Redelivery {
                    subtask: s,
                    seq: q,
                    partition: r.partition,
                    offset: r.offset,
                    delivery_count: r.delivery_count,
                });
            }
        }
    }

    /// ACCEPTs `items` now (ShareAcknowledge) and says what the broker did.
    async fn acknowledge(&mut self, items: Vec<Held>) -> Result<Tally, WireError> {
        for h in &items {
            self.consumer.acknowledge_offset(&self.input.input_topic, h.partition, h.offset, ACK_ACCEPT);
        }
        let started = Instant::now();
        let results = self.consumer.commit_sync().await?;
        let mut t = Tally {
            ids: items.iter().map(|h| (h.subtask, h.seq)).collect(),
            latency_us: started.elapsed().as_micros() as u64,
            ..Tally::default()
        };
        for r in &results {
            count_refusals(r, &mut t);
        }
        if t.refused > 0 {
            debug!(refused = t.refused, errors = ?t.errors, "acknowledgements refused");
        }
        Ok(t)
    }

    /// Lag 0 on every input partition: the input is done.
    async fn check_end(&mut self) {
        if self.last_lag.is_some_and(|t| t.elapsed() < LAG_EVERY) || self.input_partitions == 0 {
            return;
        }
        self.last_lag = Some(Instant::now());
        let topic = self.input.input_topic.clone();
        let parts: Vec<i32> = (0..self.input_partitions as i32).collect();
        let group = self.input.group_id.clone();
        match self.consumer.client().describe_share_group_offsets(&group, &[(topic.clone(), parts.clone())]).await {
            Ok((offsets, _)) => {
                let done = parts.iter().all(|p| {
                    offsets
                        .partitions
                        .iter()
                        .any(|o| o.topic == topic && o.partition == *p && o.error.is_none() && o.lag == Some(0))
                });
                if done {
                    info!(group, topic, "every input record acknowledged or archived: end of input");
                    self.exhausted = true;
                }
            }
            // The group's coordinator may be restarting: ask again later.
            Err(e) => debug!(group, error = %e, "DescribeShareGroupOffsets"),
        }
    }

    /// At checkpoint `n`'s barrier, before the sink pre-commits: closes
    /// interval n (what was read since the last barrier, returned as the ids
    /// n's transaction carries), reports the deliveries, and acknowledges
    /// under `before-commit` (everything held up to n) and `at-poll` (the
    /// report of what was acknowledged at each fetch).
    pub async fn barrier(&mut self, n: u64) -> Result<Vec<IdRange>, WireError> {
        let carried = id_ranges(std::mem::take(&mut self.carried));
        self.interval = n + 1;
        let d = std::mem::take(&mut self.deliveries);
        if d.records > 0 {
            self.events.push(EventKind::ShareDelivered {
                checkpoint: n,
                records: d.records,
                redelivered: d.redelivered,
                max_delivery_count: d.max_count,
                examples: d.examples,
            });
        }
        match self.input.ack {
            AckPolicy::BeforeCommit => self.acknowledge_through(n).await?,
            AckPolicy::AtPoll => {
                let t = std::mem::take(&mut self.at_poll);
                if !t.ids.is_empty() {
                    self.events.push(t.event(n, AckPolicy::AtPoll));
                }
            }
            AckPolicy::AfterCommit => {}
        }
        Ok(carried)
    }

    /// Acknowledges every record held for checkpoints up to `n`
    /// (`after-commit`: once `n` is committed; `before-commit`: at its barrier).
    pub async fn acknowledge_through(&mut self, n: u64) -> Result<(), WireError> {
        let keep = self.held.split_off(&(n + 1));
        let due: Vec<Held> = std::mem::replace(&mut self.held, keep).into_values().flatten().collect();
        if due.is_empty() {
            return Ok(());
        }
        let t = self.acknowledge(due).await?;
        self.events.push(t.event(n, self.input.ack));
        Ok(())
    }

    /// Records read for checkpoints up to `n` and not acknowledged yet.
    pub fn held_through(&self, n: u64) -> u64 {
        self.held.range(..=n).map(|(_, v)| v.len() as u64).sum()
    }

    /// Leaves the group (what this member still holds is released).
    pub async fn close(self) {
        let group = self.input.group_id.clone();
        if let Err(e) = self.consumer.close().await {
            debug!(group, error = %e, "closing the share consumer");
        }
    }
}

/// ACCEPTs in `r` the broker refused, by error.
fn count_refusals(r: &AckResult, t: &mut Tally) {
    if let Some(e) = &r.error {
        let n = r.acks.values().filter(|x| **x == ACK_ACCEPT).count() as u64;
        if n > 0 {
            t.refused += n;
            *t.errors.entry(e.clone()).or_insert(0) += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_its_id_of_this_run_only() {
        let v = record::value("run-1", 1, 7);
        assert_eq!(identity(Some(v.as_bytes()), "run-1", 2, 10), Some((1, 7)));
        assert_eq!(identity(Some(v.as_bytes()), "run-2", 2, 10), None, "another run's");
        assert_eq!(identity(Some(v.as_bytes()), "run-1", 1, 10), None, "subtask out of range");
        assert_eq!(identity(Some(v.as_bytes()), "run-1", 2, 7), None, "seq out of range");
        assert_eq!(identity(Some(b"garbage"), "run-1", 2, 10), None);
        assert_eq!(identity(None, "run-1", 2, 10), None);
    }

    #[test]
    fn refusals_are_counted_per_accept_by_error() {
        let r = AckResult {
            topic: "in".into(),
            partition: 0,
            acks: [(1, ACK_ACCEPT), (2, ACK_ACCEPT), (3, sinkhole_client::wire::share_fetch::ACK_GAP)]
                .into_iter()
                .collect(),
            error: Some("INVALID_RECORD_STATE".into()),
            via: "ShareAcknowledge",
        };
        let mut t = Tally::default();
        count_refusals(&r, &mut t);
        count_refusals(&AckResult { error: None, ..r.clone() }, &mut t);
        assert_eq!(t.refused, 2, "the gap is no refused record");
        assert_eq!(t.errors.get("INVALID_RECORD_STATE"), Some(&2));
        t.ids = vec![(0, 3), (0, 4), (1, 0)];
        let EventKind::ShareAcknowledged { checkpoint, records, ranges, refused, .. } =
            t.event(4, AckPolicy::BeforeCommit)
        else {
            panic!("not an acknowledgement event")
        };
        assert_eq!((checkpoint, records, refused), (4, 3, 2));
        assert_eq!(ranges, vec![IdRange(0, 3, 4), IdRange(1, 0, 0)]);
    }
}
