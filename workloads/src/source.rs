//! The deterministic source: subtask `s` emits the records `(s, seq)` for
//! `seq` in `next_seq..records`, at a bounded rate.
//!
//! Everything about a record but its produce time is a function of
//! `(run, subtask, seq, partitions, partitioning)`, so a restored subtask that
//! rewinds to a checkpoint's `next_seq` re-emits byte-identical keys and
//! values, exactly like a replayable Flink source (e.g. a Kafka source
//! resuming from checkpointed offsets). The checker relies on that: a record
//! seen twice is a duplicate, not two records.
//!
//! Headers (names in [`sinkhole_model::record`]) are UTF-8 text: run id,
//! subtask and seq in decimal, produce time in Unix microseconds, and the
//! transactional id of the transaction that carries the record (added by the
//! sink, which is the only one that knows it).
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use tokio::time::Instant;

use sinkhole_model::{record, Partitioning, WorkerConfig};

/// One record as the sink writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub subtask: u32,
    pub seq: u64,
    pub partition: i32,
    pub key: Bytes,
    pub value: Bytes,
    /// When the source emitted it (Unix µs).
    pub produced_us: u64,
    /// Run, subtask, seq and produce time headers.
    headers: Vec<(String, Bytes)>,
}

impl Record {
    /// The record's headers, plus the transactional id header when the
    /// record travels in a transaction.
    pub fn headers(&self, transactional_id: Option<&str>) -> Vec<(String, Bytes)> {
        let mut h = self.headers.clone();
        if let Some(tid) = transactional_id {
            h.push((record::H_TID.to_string(), Bytes::copy_from_slice(tid.as_bytes())));
        }
        h
    }
}

/// Which partition record `(subtask, seq)` goes to. Public so the checker can
/// verify placement.
pub fn partition_for(partitioning: Partitioning, partitions: u32, subtask: u32, seq: u64) -> i32 {
    let n = partitions.max(1) as u64;
    let p = match partitioning {
        Partitioning::RoundRobin => seq % n,
        Partitioning::BySubtask => subtask as u64 % n,
        Partitioning::Hash => fnv1a64(&[&subtask.to_be_bytes(), &seq.to_be_bytes()]) % n,
    };
    p as i32
}

/// FNV-1a (64 bit): fixed, seedless and stable across builds and platforms,
/// unlike `std`'s `DefaultHasher` whose algorithm may change.
fn fnv1a64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

pub fn unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// A token bucket: `rate` tokens per second, holding at most `burst`.
/// After a stall (a checkpoint, a slow flush) the source catches up by at
/// most `burst` records instead of by everything it missed.
#[derive(Debug)]
pub struct TokenBucket {
    rate: u64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// `rate` 0 = unthrottled. The burst is a tenth of a second's worth (at
    /// least one record).
    pub fn new(rate: u64) -> TokenBucket {
        let burst = ((rate as f64) / 10.0).max(1.0);
        TokenBucket { rate, burst, tokens: 1.0_f64.min(burst), last: Instant::now() }
    }

    fn refill(&mut self) {
        let now = Instant::now();
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + dt * self.rate as f64).min(self.burst);
    }

    /// Whole tokens available now (u64::MAX when unthrottled).
    pub fn available(&mut self) -> u64 {
        if self.rate == 0 {
            return u64::MAX;
        }
        self.refill();
        self.tokens.floor() as u64
    }

    /// Waits until at least one token is available. Cancellation safe: the
    /// state changes only by refilling to the current time.
    pub async fn ready(&mut self) {
        if self.rate == 0 {
            return;
        }
        loop {
            self.refill();
            if self.tokens >= 1.0 {
                return;
            }
            let wait = (1.0 - self.tokens) / self.rate as f64;
            tokio::time::sleep(Duration::from_secs_f64(wait).max(Duration::from_micros(50))).await;
        }
    }

    /// Takes `n` tokens (callers take only what [`available`](Self::available) offered).
    pub fn take(&mut self, n: u64) {
        if self.rate != 0 {
            self.tokens -= n as f64;
        }
    }
}

/// One subtask's source.
#[derive(Debug)]
pub struct Source {
    run_id: String,
    subtask: u32,
    records: u64,
    partitions: u32,
    partitioning: Partitioning,
    next_seq: u64,
    bucket: TokenBucket,
}

impl Source {
    /// A source positioned at `next_seq` (0 when fresh, the checkpoint's
    /// `next_seq` on restore).
    pub fn new(cfg: &WorkerConfig, next_seq: u64) -> Source {
        Source {
            run_id: cfg.run_id.clone(),
            subtask: cfg.subtask,
            records: cfg.records,
            partitions: cfg.partitions,
            partitioning: cfg.partitioning,
            next_seq: next_seq.min(cfg.records),
            bucket: TokenBucket::new(cfg.rate_per_sec),
        }
    }

    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    pub fn exhausted(&self) -> bool {
        self.next_seq >= self.records
    }

    /// Waits until the rate allows a record (returns at once when
    /// unthrottled). Never returns when the source is exhausted, so it can
    /// sit in a `select!` without a guard.
    pub async fn ready(&mut self) {
        if self.exhausted() {
            std::future::pending::<()>().await;
        }
        self.bucket.ready().await
    }

    /// The records the rate allows now, at most `max`, advancing the source.
    pub fn take(&mut self, max: u64) -> Vec<Record> {
        let n = self.bucket.available().min(max).min(self.records - self.next_seq);
        self.bucket.take(n);
        let now = unix_us();
        let out: Vec<Record> = (self.next_seq..self.next_seq + n).map(|seq| self.record_at(seq, now)).collect();
        self.next_seq += n;
        out
    }

    /// Record `seq` of this subtask, stamped with `produced_us`.
    pub fn record_at(&self, seq: u64, produced_us: u64) -> Record {
        record_of(&self.run_id, self.subtask, seq, self.partitions, self.partitioning, produced_us)
    }
}

/// Record `(subtask, seq)` of run `run_id` as the source emits it, stamped
/// with `produced_us`: the one definition of a record's bytes, shared by the
/// generated source, the input a share-group source reads (the rig writes it
/// with these bytes) and the worker that writes what it read.
pub fn record_of(
    run_id: &str,
    subtask: u32,
    seq: u64,
    partitions: u32,
    partitioning: Partitioning,
    produced_us: u64,
) -> Record {
    let s = subtask;
    Record {
        subtask: s,
        seq,
        partition: partition_for(partitioning, partitions, s, seq),
        key: Bytes::from(record::key(s, seq)),
        value: Bytes::from(record::value(run_id, s, seq)),
        produced_us,
        headers: vec![
            (record::H_RUN.to_string(), Bytes::copy_from_slice(run_id.as_bytes())),
            (record::H_SUBTASK.to_string(), Bytes::from(s.to_string())),
            (record::H_SEQ.to_string(), Bytes::from(seq.to_string())),
            (record::H_TIME_US.to_string(), Bytes::from(produced_us.to_string())),
        ],
    }
}

#[cfg(test)]
pub(crate) fn test_config(records: u64, rate: u64, partitions: u32, partitioning: Partitioning) -> WorkerConfig {
    WorkerConfig {
        run_id: "run-1".into(),
        mode: sinkhole_model::SinkMode::Legacy,
        subtask: 3,
        parallelism: 4,
        attempt: 0,
        bootstrap: vec!["127.0.0.1:9092".into()],
        topic: "out".into(),
        partitions,
        partitioning,
        records,
        rate_per_sec: rate,
        transaction_timeout_ms: 60_000,
        tid_prefix: "sh".into(),
        linger_ms: 5,
        batch_size: 16384,
        restore: None,
        heartbeat_ms: 500,
        register_partitions: Default::default(),
        force_transactions_v1: false,
        sasl: None,
        share: None,
        security: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header<'a>(h: &'a [(String, Bytes)], name: &str) -> Option<&'a str> {
        h.iter().find(|(k, _)| k == name).map(|(_, v)| std::str::from_utf8(v).unwrap())
    }

    #[tokio::test]
    async fn deterministic_and_complete() {
        let cfg = test_config(100, 0, 4, Partitioning::RoundRobin);
        let mut a = Source::new(&cfg, 0);
        let all = a.take(1000);
        assert_eq!(all.len(), 100);
        assert!(a.exhausted());
        assert!(a.take(10).is_empty());
        assert_eq!(all.iter().map(|r| r.seq).collect::<Vec<_>>(), (0..100).collect::<Vec<_>>());
        // A rewound source re-emits identical keys, values and partitions.
        let mut b = Source::new(&cfg, 40);
        let again = b.take(1000);
        assert_eq!(again.len(), 60);
        for (x, y) in all[40..].iter().zip(&again) {
            assert_eq!((x.seq, x.partition, &x.key, &x.value), (y.seq, y.partition, &y.key, &y.value));
        }
        assert_eq!(&all[7].key[..], b"3-7");
        assert_eq!(&all[7].value[..], b"run-1:3:7");
        assert_eq!(record::parse_value(&all[7].value), Some(("run-1", 3, 7)));
        // Past the end is clamped.
        assert!(Source::new(&cfg, 500).exhausted());
    }

    #[test]
    fn headers_carry_run_subtask_seq_time_and_tid() {
        let cfg = test_config(10, 0, 1, Partitioning::RoundRobin);
        let r = Source::new(&cfg, 0).record_at(5, 1_700_000_000_123_456);
        let h = r.headers(Some("sh-3-2"));
        assert_eq!(header(&h, record::H_RUN), Some("run-1"));
        assert_eq!(header(&h, record::H_SUBTASK), Some("3"));
        assert_eq!(header(&h, record::H_SEQ), Some("5"));
        assert_eq!(header(&h, record::H_TIME_US), Some("1700000000123456"));
        assert_eq!(header(&h, record::H_TID), Some("sh-3-2"));
        assert_eq!(header(&r.headers(None), record::H_TID), None);
    }

    #[test]
    fn produce_time_is_now() {
        let cfg = test_config(10, 0, 1, Partitioning::RoundRobin);
        let before = unix_us();
        let r = Source::new(&cfg, 0).take(1).pop().unwrap();
        assert!(r.produced_us >= before && r.produced_us <= unix_us());
    }

    #[test]
    fn partitioning() {
        assert_eq!(
            (0..8).map(|s| partition_for(Partitioning::RoundRobin, 3, 9, s)).collect::<Vec<_>>(),
            vec![0, 1, 2, 0, 1, 2, 0, 1]
        );
        assert!((0..50).all(|s| partition_for(Partitioning::BySubtask, 3, 7, s) == 1));
        // Hash: fixed values (stable across builds), all partitions used,
        // and roughly even.
        let mut counts = [0u32; 4];
        for seq in 0..4000 {
            counts[partition_for(Partitioning::Hash, 4, 2, seq) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (800..1200).contains(&c)), "{counts:?}");
        assert_eq!(fnv1a64(&[b"a"]), 0xaf63_dc4c_8601_ec8c, "FNV-1a reference value");
        assert_eq!(partition_for(Partitioning::Hash, 1, 2, 3), 0);
        assert_eq!(partition_for(Partitioning::RoundRobin, 0, 2, 3), 0, "0 partitions treated as 1");
    }

    #[tokio::test(start_paused = true)]
    async fn rate_is_respected() {
        let cfg = test_config(10_000, 200, 1, Partitioning::RoundRobin);
        let mut s = Source::new(&cfg, 0);
        let start = Instant::now();
        let mut got = 0;
        while got < 400 {
            s.ready().await;
            got += s.take(1000).len();
        }
        let secs = start.elapsed().as_secs_f64();
        // 400 records at 200/s: 2 s, minus the initial token.
        assert!((1.9..2.1).contains(&secs), "took {secs} s");
    }

    #[tokio::test(start_paused = true)]
    async fn burst_after_stall_is_bounded() {
        let cfg = test_config(10_000, 1000, 1, Partitioning::RoundRobin);
        let mut s = Source::new(&cfg, 0);
        tokio::time::sleep(Duration::from_secs(5)).await;
        // 5 s idle earns a tenth of a second's worth, not 5000 records.
        assert_eq!(s.take(100_000).len(), 100);
        assert!(s.take(100_000).is_empty());
    }

    #[tokio::test]
    async fn unthrottled_is_immediate() {
        let cfg = test_config(5000, 0, 2, Partitioning::Hash);
        let mut s = Source::new(&cfg, 0);
        s.ready().await;
        assert_eq!(s.take(4000).len(), 4000);
        assert_eq!(s.take(4000).len(), 1000);
        // An exhausted source never becomes ready.
        assert!(tokio::time::timeout(Duration::from_millis(20), s.ready()).await.is_err());
    }
}
