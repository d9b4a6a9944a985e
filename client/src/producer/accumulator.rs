//! Record batching and sequence bookkeeping.
//!
//! * [`Accumulator`] mirrors Kafka's Java `RecordAccumulator`: records are
//!   appended to the open batch of their partition until it would exceed
//!   `batch_size` (each record counted at its encoded size, as
//!   `MemoryRecordsBuilder.hasRoomFor` counts it); a batch is *ready* when it
//!   is full (or another batch waits behind it) or its `linger` has expired,
//!   and not while it backs off after a retriable error (`retry.backoff.ms`
//!   100 ms doubling to `retry.backoff.max.ms` 1 s, Java's
//!   `ExponentialBackoff` without jitter). A leader with a ready batch takes
//!   every partition's head batch it can send ([`Accumulator::sendable`]).
//! * [`Sequences`] mirrors `TxnPartitionMap` / `TxnPartitionEntry`: the next
//!   sequence per partition, for the current (producer id, epoch); all reset to
//!   0 when the pair changes (a new epoch starts at sequence 0 on the broker,
//!   `ProducerAppendInfo`).
//! * [`encode_batch`] writes one magic-2 record batch (`DefaultRecordBatch`)
//!   with the `kafka-protocol` crate's encoder.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
use tokio::time::Instant;

/// A topic partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tp {
    pub topic: String,
    pub partition: i32,
}

impl Tp {
    pub fn new(topic: &str, partition: i32) -> Tp {
        Tp { topic: topic.to_string(), partition }
    }
}

impl std::fmt::Display for Tp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// One record waiting in a batch.
#[derive(Debug, Clone)]
pub struct PendingRecord {
    pub key: Bytes,
    pub value: Bytes,
    pub headers: Vec<(String, Bytes)>,
    /// CreateTime, ms since the epoch.
    pub timestamp: i64,
}

impl PendingRecord {
    /// The record's encoded size in a magic-2 batch, `offset_delta` records
    /// and `timestamp_delta` ms after the batch's first (Java's
    /// `DefaultRecord.sizeInBytes`, what `MemoryRecordsBuilder.hasRoomFor`
    /// checks): its length, attributes, the two deltas, the key, the value
    /// and the headers, each length a zig-zag varint.
    pub fn size_in_batch(&self, offset_delta: i32, timestamp_delta: i64) -> usize {
        let headers: usize = self.headers.iter().map(|(k, v)| sized(k.len()) + sized(v.len())).sum();
        let body = 1
            + varint_len(timestamp_delta)
            + varint_len(i64::from(offset_delta))
            + sized(self.key.len())
            + sized(self.value.len())
            + varint_len(self.headers.len() as i64)
            + headers;
        varint_len(body as i64) + body
    }
}

/// A length-prefixed field: its varint length and its bytes.
fn sized(len: usize) -> usize {
    varint_len(len as i64) + len
}

/// Bytes of `v` as a zig-zag varint (Java `ByteUtils.sizeOfVarlong`; the
/// same as `sizeOfVarint` for an int).
pub fn varint_len(v: i64) -> usize {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while z >= 0x80 {
        z >>= 7;
        n += 1;
    }
    n
}

/// The most batch bytes one Produce request carries besides its ready
/// batches (Java's `max.request.size` default, 1 MiB).
pub const MAX_REQUEST_SIZE: usize = 1 << 20;

/// Size of a magic-2 record batch header (`DefaultRecordBatch.RECORD_BATCH_OVERHEAD`).
pub const BATCH_OVERHEAD: usize = 61;

/// A batch of one partition (Java's `ProducerBatch`).
#[derive(Debug)]
pub struct Batch {
    pub tp: Tp,
    pub records: Vec<PendingRecord>,
    pub size: usize,
    pub created: Instant,
    /// Fixed when the batch is first drained; kept on retry (Java
    /// `ProducerBatch.setProducerState`, `RecordAccumulator.drainBatchesForOneNode`).
    pub base_sequence: Option<i32>,
    /// Producer id and epoch stamped with the sequence.
    pub producer: Option<(i64, i16)>,
    /// Failed attempts so far.
    pub attempts: u32,
    /// Not to be resent before this instant (retry backoff).
    pub retry_at: Option<Instant>,
    /// The last retriable error, for the message when the batch expires.
    pub last_error: Option<String>,
}

impl Batch {
    fn new(tp: Tp, now: Instant) -> Batch {
        Batch {
            tp,
            records: Vec::new(),
            size: BATCH_OVERHEAD,
            created: now,
            base_sequence: None,
            producer: None,
            attempts: 0,
            retry_at: None,
            last_error: None,
        }
    }

    pub fn record_count(&self) -> i32 {
        self.records.len() as i32
    }

    /// What `record` would add to this batch, as the next one.
    fn size_of_next(&self, record: &PendingRecord) -> usize {
        let first = self.records.first().map_or(record.timestamp, |r| r.timestamp);
        record.size_in_batch(self.record_count(), record.timestamp.saturating_sub(first))
    }

    /// Exponential backoff after `attempts` failures: 100 ms, 200 ms, … ≤ 1 s.
    pub fn backoff(attempts: u32, base: Duration, max: Duration) -> Duration {
        let shift = attempts.saturating_sub(1).min(20);
        base.saturating_mul(1u32 << shift).min(max)
    }
}

/// Per-partition queues of batches (Java's `RecordAccumulator`).
#[derive(Debug)]
pub struct Accumulator {
    pub batch_size: usize,
    pub linger: Duration,
    queues: BTreeMap<Tp, VecDeque<Batch>>,
}

impl Accumulator {
    pub fn new(batch_size: usize, linger: Duration) -> Accumulator {
        Accumulator { batch_size: batch_size.max(1), linger, queues: BTreeMap::new() }
    }

    /// Appends a record to the partition's last batch, opening a new one if
    /// it would not fit (a batch always takes at least one record). Returns
    /// true when a batch became full, i.e. the caller should drain.
    pub fn append(&mut self, tp: Tp, record: PendingRecord, now: Instant) -> bool {
        let batch_size = self.batch_size;
        let queue = self.queues.entry(tp.clone()).or_default();
        // Only a batch that was never drained takes more records.
        let fits = queue.back().is_some_and(|b| {
            b.base_sequence.is_none() && (b.records.is_empty() || b.size + b.size_of_next(&record) <= batch_size)
        });
        if !fits {
            queue.push_back(Batch::new(tp, now));
        }
        let batch = queue.back_mut().expect("a batch was just ensured");
        batch.size += batch.size_of_next(&record);
        batch.records.push(record);
        let full = batch.size >= batch_size;
        full || queue.len() > 1
    }

    /// Partitions whose head batch may be sent now: full (or followed by
    /// another), lingered long enough, or any when `flush`; never while it
    /// backs off (Java `RecordAccumulator.ready`).
    pub fn ready(&self, now: Instant, flush: bool) -> Vec<Tp> {
        self.queues
            .iter()
            .filter_map(|(tp, q)| {
                let head = q.front()?;
                if head.retry_at.is_some_and(|t| t > now) {
                    return None;
                }
                let full = q.len() > 1 || head.size >= self.batch_size;
                let lingered = now.saturating_duration_since(head.created) >= self.linger;
                (flush || full || lingered || head.attempts > 0).then(|| tp.clone())
            })
            .collect()
    }

    /// Every partition whose head batch may go out now, ready or not (not
    /// backing off), with the batch's size: what a leader with a ready batch
    /// sends along in the same request (Java's `drainBatchesForOneNode`).
    pub fn sendable(&self, now: Instant) -> Vec<(Tp, usize)> {
        self.queues
            .iter()
            .filter_map(|(tp, q)| {
                let head = q.front()?;
                (!head.records.is_empty() && head.retry_at.is_none_or(|t| t <= now)).then(|| (tp.clone(), head.size))
            })
            .collect()
    }

    /// Java's `RecordAccumulator.drain`: a leader that is sent to takes the
    /// head batch of every partition it leads that may go out now, ready or
    /// not (`drainBatchesForOneNode`), up to `max.request.size` (the ready
    /// ones always go). Fewer, fuller requests: with round-robin records the
    /// partitions' batches fill together, and a full batch would otherwise go
    /// alone, a round trip each. `by_leader` holds the ready partitions by
    /// leader; the others join their leader's list.
    pub fn add_sendable_heads(
        &self,
        by_leader: &mut BTreeMap<i32, Vec<Tp>>,
        leaders: &HashMap<Tp, i32>,
        ready: &[Tp],
        now: Instant,
    ) {
        let mut sizes: BTreeMap<i32, usize> = BTreeMap::new();
        for (node, tps) in by_leader.iter() {
            sizes.insert(*node, tps.iter().filter_map(|tp| self.head_size(tp)).sum());
        }
        for (tp, size) in self.sendable(now) {
            if ready.contains(&tp) {
                continue;
            }
            let Some(node) = leaders.get(&tp) else { continue };
            let (Some(tps), Some(total)) = (by_leader.get_mut(node), sizes.get_mut(node)) else { continue };
            if *total + size <= MAX_REQUEST_SIZE {
                *total += size;
                tps.push(tp);
            }
        }
    }

    /// When the next batch becomes sendable (backoff or linger end).
    pub fn next_wakeup(&self, flush: bool) -> Option<Instant> {
        self.queues
            .values()
            .filter_map(|q| q.front())
            .map(|b| match b.retry_at {
                Some(t) => t,
                None if flush => b.created,
                None => b.created + self.linger,
            })
            .min()
    }

    /// The size of `tp`'s head batch, if it has one.
    pub fn head_size(&self, tp: &Tp) -> Option<usize> {
        self.queues.get(tp).and_then(|q| q.front()).map(|b| b.size)
    }

    pub fn head_mut(&mut self, tp: &Tp) -> Option<&mut Batch> {
        self.queues.get_mut(tp).and_then(|q| q.front_mut())
    }

    /// Removes the head batch of `tp` (after it was acknowledged or failed).
    pub fn pop_head(&mut self, tp: &Tp) -> Option<Batch> {
        let q = self.queues.get_mut(tp)?;
        let b = q.pop_front();
        if q.is_empty() {
            self.queues.remove(tp);
        }
        b
    }

    /// Partitions with queued batches.
    pub fn partitions(&self) -> Vec<Tp> {
        self.queues.keys().cloned().collect()
    }

    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }

    /// Drops every queued batch (Java `abortUndrainedBatches` on abort);
    /// returns the number of records dropped.
    pub fn clear(&mut self) -> usize {
        let n = self.queues.values().flatten().map(|b| b.records.len()).sum();
        self.queues.clear();
        n
    }
}

/// Next sequence per partition for one (producer id, epoch), after
/// `TxnPartitionMap`.
#[derive(Debug, Clone, Default)]
pub struct Sequences {
    producer: (i64, i16),
    next: HashMap<Tp, i32>,
    last_acked_offset: HashMap<Tp, i64>,
}

impl Sequences {
    pub fn new(producer_id: i64, epoch: i16) -> Sequences {
        Sequences { producer: (producer_id, epoch), ..Default::default() }
    }

    pub fn producer(&self) -> (i64, i16) {
        self.producer
    }

    /// A new (producer id, epoch): every partition starts at 0 again
    /// (`TxnPartitionMap.reset` / `startSequencesAtBeginning`).
    pub fn reset(&mut self, producer_id: i64, epoch: i16) {
        self.producer = (producer_id, epoch);
        self.next.clear();
        self.last_acked_offset.clear();
    }

    /// The sequence the next batch of `tp` gets.
    pub fn next(&self, tp: &Tp) -> i32 {
        self.next.get(tp).copied().unwrap_or(0)
    }

    /// After a batch of `count` records was acknowledged.
    pub fn advance(&mut self, tp: &Tp, count: i32) {
        let n = increment_sequence(self.next(tp), count);
        self.next.insert(tp.clone(), n);
    }

    pub fn set_last_acked_offset(&mut self, tp: &Tp, offset: i64) {
        self.last_acked_offset.insert(tp.clone(), offset);
    }

    pub fn last_acked_offset(&self, tp: &Tp) -> Option<i64> {
        self.last_acked_offset.get(tp).copied()
    }
}

/// The offset of the last record of a batch of `count` records appended at
/// `base_offset`. Saturating: the offsets come from the broker's reply, and a
/// bogus one must not overflow (a panic in a debug build).
pub fn last_offset(base_offset: i64, count: i32) -> i64 {
    base_offset.saturating_add(i64::from(count) - 1)
}

/// `sequence + increment`, wrapping to 0 after `i32::MAX`
/// (Java `DefaultRecordBatch.incrementSequence`).
pub fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

/// Encodes one magic-2 record batch (uncompressed) of `records` with the
/// given producer id, epoch and base sequence; attribute bit 0x10 when
/// `transactional`. Headers travel as the crate's ordered map, so a repeated
/// header key keeps only its last value.
pub fn encode_batch(
    records: &[PendingRecord],
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
) -> Result<Bytes, String> {
    let recs: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut rec = Record {
                transactional,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id,
                producer_epoch,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                // The crate splits batches where offset − sequence changes,
                // so the in-batch sequence must wrap like an i32; only the
                // batch's base sequence goes on the wire.
                sequence: base_sequence.wrapping_add(i as i32),
                timestamp: r.timestamp,
                key: Some(r.key.clone()),
                value: Some(r.value.clone()),
                headers: Default::default(),
            };
            for (k, v) in &r.headers {
                rec.headers.insert(StrBytes::from_string(k.clone()), Some(v.clone()));
            }
            rec
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions { version: 2, compression: Compression::None };
    RecordBatchEncoder::encode(&mut buf, &recs, &options).map_err(|e| format!("encoding record batch: {e}"))?;
    Ok(buf.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::records::RecordBatchDecoder;

    fn rec(i: usize, value_len: usize) -> PendingRecord {
        PendingRecord {
            key: Bytes::from(format!("k{i}")),
            value: Bytes::from(vec![b'v'; value_len]),
            headers: vec![
                ("h".to_string(), Bytes::from(format!("{i}"))),
                ("src".to_string(), Bytes::from_static(b"x")),
            ],
            timestamp: 1_700_000_000_000 + i as i64,
        }
    }

    #[test]
    fn encode_decode_round_trip() {
        let records: Vec<PendingRecord> = (0..5).map(|i| rec(i, 10)).collect();
        let bytes = encode_batch(&records, 4242, 7, 100, true).unwrap();
        let info = RecordBatchDecoder::decode_batch_info(&mut bytes.clone()).unwrap();
        assert_eq!(info.len(), 1, "one batch");
        let b = &info[0];
        assert_eq!((b.producer_id, b.producer_epoch, b.base_sequence), (4242, 7, 100));
        assert!(b.transactional);
        assert!(!b.control);
        assert_eq!(b.record_count, 5);
        assert_eq!(b.version, 2);
        let set = RecordBatchDecoder::decode(&mut bytes.clone()).unwrap();
        assert_eq!(set.records.len(), 5);
        for (i, r) in set.records.iter().enumerate() {
            assert_eq!(r.key.as_deref(), Some(format!("k{i}").as_bytes()));
            assert_eq!(r.value.as_ref().map(|v| v.len()), Some(10));
            assert_eq!(r.sequence, 100 + i as i32);
            assert_eq!(r.timestamp, 1_700_000_000_000 + i as i64);
            let h: Vec<(String, Option<Bytes>)> = r.headers.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
            assert_eq!(
                h,
                vec![
                    ("h".to_string(), Some(Bytes::from(format!("{i}")))),
                    ("src".to_string(), Some(Bytes::from_static(b"x")))
                ]
            );
        }
        // Non-transactional (idempotent) batches have the bit clear.
        let bytes = encode_batch(&records[..1], 1, 0, 0, false).unwrap();
        let info = RecordBatchDecoder::decode_batch_info(&mut bytes.clone()).unwrap();
        assert!(!info[0].transactional);
    }

    #[test]
    fn batch_at_the_sequence_wrap_stays_one_batch() {
        let records: Vec<PendingRecord> = (0..3).map(|i| rec(i, 1)).collect();
        let bytes = encode_batch(&records, 1, 0, i32::MAX - 1, true).unwrap();
        let info = RecordBatchDecoder::decode_batch_info(&mut bytes.clone()).unwrap();
        assert_eq!(info.len(), 1);
        assert_eq!(info[0].base_sequence, i32::MAX - 1);
        assert_eq!(info[0].record_count, 3);
    }

    #[test]
    fn sequence_bookkeeping() {
        let tp = Tp::new("t", 0);
        let other = Tp::new("t", 1);
        let mut s = Sequences::new(1, 0);
        assert_eq!(s.next(&tp), 0, "a new epoch starts at 0");
        s.advance(&tp, 10);
        s.advance(&tp, 5);
        assert_eq!(s.next(&tp), 15);
        assert_eq!(s.next(&other), 0, "per partition");
        s.reset(1, 1);
        assert_eq!(s.producer(), (1, 1));
        assert_eq!(s.next(&tp), 0, "an epoch change resets");
        assert_eq!(increment_sequence(i32::MAX - 2, 5), 2, "wraps to 0 after i32::MAX");
        assert_eq!(increment_sequence(i32::MAX - 5, 5), i32::MAX);
    }

    #[test]
    fn last_offset_of_a_batch_saturates() {
        assert_eq!(last_offset(100, 5), 104);
        assert_eq!(last_offset(0, 1), 0);
        assert_eq!(last_offset(i64::MAX - 1, 5), i64::MAX, "a bogus base offset from a reply");
    }

    #[test]
    fn accumulator_fills_batches_and_lingers() {
        let mut acc = Accumulator::new(500, Duration::from_millis(5));
        let t0 = Instant::now();
        let tp = Tp::new("t", 0);
        let mut became_full = false;
        let mut n = 0;
        while !became_full {
            became_full = acc.append(tp.clone(), rec(n, 100), t0);
            n += 1;
        }
        // The batch is full once a record no longer fits: the last one opened a second batch.
        assert_eq!(acc.ready(t0, false), vec![tp.clone()]);
        let b = acc.pop_head(&tp).unwrap();
        assert_eq!(b.records.len(), n - 1);
        let next = b.size_of_next(&rec(n - 1, 100));
        assert!(b.size <= 500 && b.size + next > 500, "{} + {next}", b.size);
        // The size counted is the batch's encoded size, to the byte.
        assert_eq!(encode_batch(&b.records, 1, 0, 0, true).unwrap().len(), b.size);
        // The second batch is neither full nor lingered yet; flush takes it.
        assert!(acc.ready(t0, false).is_empty());
        assert_eq!(acc.ready(t0, true), vec![tp.clone()]);
        assert_eq!(acc.ready(t0 + Duration::from_millis(5), false), vec![tp.clone()]);
        assert_eq!(acc.next_wakeup(false), Some(t0 + Duration::from_millis(5)));
    }

    #[test]
    fn record_sizes_are_the_encoded_ones() {
        assert_eq!((varint_len(0), varint_len(-1), varint_len(63), varint_len(64)), (1, 1, 1, 2));
        assert_eq!((varint_len(8191), varint_len(8192), varint_len(-8193)), (2, 3, 3));
        // Far apart in time and in the batch: the deltas take more bytes.
        let records: Vec<PendingRecord> =
            (0..200).map(|i| PendingRecord { timestamp: 1_700_000_000_000 + 100 * i as i64, ..rec(i, 70) }).collect();
        let sizes: usize = records
            .iter()
            .enumerate()
            .map(|(i, r)| r.size_in_batch(i as i32, r.timestamp - records[0].timestamp))
            .sum();
        assert_eq!(encode_batch(&records, 1, 0, 0, true).unwrap().len(), BATCH_OVERHEAD + sizes);
    }

    #[test]
    fn a_ready_leader_takes_every_sendable_head() {
        let mut acc = Accumulator::new(16384, Duration::from_millis(5));
        let t0 = Instant::now();
        let (a, b, c) = (Tp::new("t", 0), Tp::new("t", 1), Tp::new("t", 2));
        acc.append(a.clone(), rec(0, 10), t0);
        acc.append(b.clone(), rec(1, 10), t0);
        acc.append(c.clone(), rec(2, 10), t0);
        acc.head_mut(&c).unwrap().retry_at = Some(t0 + Duration::from_millis(100));
        assert!(acc.ready(t0, false).is_empty(), "none full, none lingered");
        let sendable: Vec<Tp> = acc.sendable(t0).into_iter().map(|(tp, _)| tp).collect();
        assert_eq!(sendable, vec![a.clone(), b.clone()], "not the one backing off");
        let size = acc.sendable(t0)[0].1;
        assert_eq!(size, BATCH_OVERHEAD + rec(0, 10).size_in_batch(0, 0));
        assert_eq!(acc.sendable(t0 + Duration::from_millis(100)).len(), 3);
        // Leader 1 has a ready partition (a): b joins it; c backs off; d's leader 2 has none ready.
        let d = Tp::new("u", 0);
        acc.append(d.clone(), rec(3, 10), t0);
        let leaders: HashMap<Tp, i32> = [(a.clone(), 1), (b.clone(), 1), (c.clone(), 1), (d.clone(), 2)].into();
        let mut by_leader: BTreeMap<i32, Vec<Tp>> = [(1, vec![a.clone()])].into();
        acc.add_sendable_heads(&mut by_leader, &leaders, std::slice::from_ref(&a), t0);
        assert_eq!(by_leader, [(1, vec![a.clone(), b.clone()])].into());
    }

    #[test]
    fn retry_keeps_the_sequence_and_backs_off() {
        let mut acc = Accumulator::new(16384, Duration::ZERO);
        let t0 = Instant::now();
        let tp = Tp::new("t", 2);
        acc.append(tp.clone(), rec(0, 1), t0);
        let b = acc.head_mut(&tp).unwrap();
        b.base_sequence = Some(42);
        b.attempts = 1;
        b.retry_at = Some(t0 + Batch::backoff(1, Duration::from_millis(100), Duration::from_secs(1)));
        // A drained batch takes no more records: a new batch opens behind it.
        acc.append(tp.clone(), rec(1, 1), t0);
        assert!(acc.ready(t0, true).is_empty(), "backing off");
        let later = t0 + Duration::from_millis(100);
        assert_eq!(acc.ready(later, true), vec![tp.clone()]);
        assert_eq!(acc.head_mut(&tp).unwrap().base_sequence, Some(42), "kept on retry");
        let backoffs: Vec<u128> = (1..=6)
            .map(|a| Batch::backoff(a, Duration::from_millis(100), Duration::from_secs(1)).as_millis())
            .collect();
        assert_eq!(backoffs, vec![100, 200, 400, 800, 1000, 1000]);
        assert_eq!(acc.clear(), 2);
        assert!(acc.is_empty());
    }
}
