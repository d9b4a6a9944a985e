//! How many bytes a record of the rig's sink takes, and the `--record-size` that gives Kafka's
//! perf test records of the same size.
//!
//! The rig's records are keyed (`s-seq`), carry a value (`run-id:s:seq`) and five headers
//! (`sinkhole.run`, `.subtask`, `.seq`, `.produced_us`, `.tid`); the perf test sends value-only
//! records (no key, no header) of a fixed size. Equal key + value + header bytes would still
//! leave the rig's records longer in a batch: each key, value, header name and header value
//! has its own length field (a varint, Kafka's `DefaultRecord`). The perf test's value is
//! therefore sized so that its record takes the same bytes in a record batch as the rig's
//! average one: the same records per 16 KiB batch, so the same number of Produce requests.
use serde::Serialize;
use sinkhole_model::{Partitioning, SinkMode};
use sinkhole_workloads::sink::naming::transactional_id_of;
use sinkhole_workloads::source::{record_of, unix_us};

/// The sizes of one run's records, averaged over every record it writes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordSize {
    /// Key + value + header names and values, in bytes.
    pub payload_bytes: f64,
    /// The part of the record in a batch that depends on its contents: those bytes plus
    /// their length fields and the header count (`DefaultRecord`; the attributes, the
    /// timestamp and offset deltas and the record's own length are the same for both).
    pub encoded_bytes: f64,
    /// The perf test's `--record-size`: a value-only record of that many bytes encodes to
    /// `encoded_bytes` (to the byte, rounded).
    pub java_record_size: usize,
}

/// The run whose records are measured.
#[derive(Debug, Clone)]
pub struct RunShape<'a> {
    pub run_id: &'a str,
    pub mode: SinkMode,
    /// The mode's transactional id prefix (`Plan::tid_prefix`).
    pub tid_prefix: &'a str,
    pub parallelism: u32,
    pub records_per_subtask: u64,
    pub partitions: u32,
    pub partitioning: Partitioning,
    /// The checkpoints the job completed: a subtask's records are spread evenly over the
    /// transactions `1..=checkpoints` (each one's id carries its number).
    pub checkpoints: u64,
}

/// The sizes of every record `shape`'s run writes, as the source builds them
/// ([`record_of`], stamped now) with the transactional id header the sink adds.
pub fn measure(shape: &RunShape) -> RecordSize {
    let now = unix_us();
    let per = shape.records_per_subtask.max(1);
    let checkpoints = shape.checkpoints.max(1);
    let (mut payload, mut encoded, mut n) = (0u64, 0u64, 0u64);
    for s in 0..shape.parallelism {
        for seq in 0..shape.records_per_subtask {
            let r = record_of(shape.run_id, s, seq, shape.partitions, shape.partitioning, now);
            let checkpoint = 1 + seq * checkpoints / per;
            let tid =
                shape.mode.transactional().then(|| transactional_id_of(shape.mode, shape.tid_prefix, s, checkpoint));
            let headers = r.headers(tid.as_deref());
            let pairs: Vec<(usize, usize)> = headers.iter().map(|(k, v)| (k.len(), v.len())).collect();
            payload += (r.key.len() + r.value.len() + pairs.iter().map(|(k, v)| k + v).sum::<usize>()) as u64;
            encoded += contents_len(Some(r.key.len()), r.value.len(), &pairs) as u64;
            n += 1;
        }
    }
    let n = n.max(1) as f64;
    let encoded_bytes = encoded as f64 / n;
    RecordSize {
        payload_bytes: payload as f64 / n,
        encoded_bytes,
        java_record_size: value_only_size(encoded_bytes.round() as usize),
    }
}

/// The bytes of a record's key, value and headers in a magic-2 batch, with their length
/// fields and the header count (Kafka's `DefaultRecord.sizeOfBodyInBytes` less the
/// attributes and the deltas). A missing key is the length -1 and no bytes.
pub fn contents_len(key: Option<usize>, value: usize, headers: &[(usize, usize)]) -> usize {
    let key_part = match key {
        Some(k) => varint_len(k as i64) + k,
        None => varint_len(-1),
    };
    let headers_part: usize = headers.iter().map(|&(k, v)| varint_len(k as i64) + k + varint_len(v as i64) + v).sum();
    key_part + varint_len(value as i64) + value + varint_len(headers.len() as i64) + headers_part
}

/// The value size of a keyless, headerless record whose contents take `target` bytes (the
/// smallest one that reaches it: a length field grows by a byte at 64 and 8192).
pub fn value_only_size(target: usize) -> usize {
    let mut v = target.saturating_sub(contents_len(None, 0, &[]));
    while v > 1 && contents_len(None, v, &[]) > target {
        v -= 1;
    }
    while contents_len(None, v, &[]) < target {
        v += 1;
    }
    v.max(1)
}

/// Bytes of a zig-zag varint (Kafka's `ByteUtils.sizeOfVarint`/`sizeOfVarlong`).
pub fn varint_len(v: i64) -> usize {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while z >= 0x80 {
        z >>= 7;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_zig_zag() {
        assert_eq!(varint_len(0), 1);
        assert_eq!(varint_len(-1), 1);
        assert_eq!(varint_len(63), 1);
        assert_eq!(varint_len(64), 2);
        assert_eq!(varint_len(-64), 1);
        assert_eq!(varint_len(8191), 2);
        assert_eq!(varint_len(8192), 3);
    }

    #[test]
    fn a_value_only_record_is_sized_to_the_same_contents() {
        // 3-byte key, 10-byte value, one header (4-byte name, 2-byte value):
        // 1+3 + 1+10 + 1 + (1+4+1+2) = 24.
        assert_eq!(contents_len(Some(3), 10, &[(4, 2)]), 24);
        // Keyless: 1 (-1) + 1 + v + 1 (no header): v = 21.
        assert_eq!(value_only_size(24), 21);
        assert_eq!(contents_len(None, 21, &[]), 24);
        // Across the one-byte length field's end: 1 + 2 + 64 + 1 = 68.
        assert_eq!(value_only_size(68), 64);
        assert_eq!(value_only_size(66), 63);
        assert_eq!(value_only_size(67), 64, "67 is not reachable: the smallest size above it");
        assert_eq!(value_only_size(1), 1);
    }

    #[test]
    fn a_run_s_records_are_measured_as_the_sink_writes_them() {
        let shape = RunShape {
            run_id: "throughput-20260101T000000-7",
            mode: SinkMode::TwopcInject,
            tid_prefix: "sinkhole-0badcafe-twopc-inject",
            parallelism: 2,
            records_per_subtask: 10,
            partitions: 3,
            partitioning: Partitioning::RoundRobin,
            checkpoints: 2,
        };
        let r = measure(&shape);
        // Subtask 0, seq 0: key "0-0" (3), value "throughput-20260101T000000-7:0:0" (32);
        // headers run (12 + 28), subtask (16 + 1), seq (12 + 1), produced_us (20 + 16),
        // tid (12 + 34): 3 + 32 + 152 = 187 for every record of this run (seq < 10, checkpoint < 10).
        assert_eq!(r.payload_bytes, 187.0);
        // Length fields: key 1, value 1, count 1, five headers × 2.
        assert_eq!(r.encoded_bytes, 187.0 + 13.0);
        // 1 (no key) + 2 + 196 + 1 (no header).
        assert_eq!(r.java_record_size, 196);
        let no_tid = measure(&RunShape { mode: SinkMode::AtLeastOnce, ..shape });
        assert_eq!(no_tid.payload_bytes, 187.0 - 12.0 - 34.0, "at-least-once writes no transactional id");
    }
}
