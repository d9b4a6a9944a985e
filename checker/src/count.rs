//! The streaming counter behind [`super::check`]: one pass over the drained
//! records, in the order the drain read them (offset order per partition),
//! with memory that does not grow per record.
//!
//! Why this shape: a run can hold millions of records, and an offline
//! re-check streams `drained.bin` instead of loading it. Every source record
//! `(subtask, seq)` has a dense seq in `0..records_per_subtask`, so "seen
//! once" is one bit per expected record; extra copies are counted as they
//! arrive (the bit is already set), and only the few records kept as
//! examples are remembered by value. Transactions are tracked per
//! pre-committed range with one bit per record of the range, which sums to
//! about one more bit per record.
//!
//! Anomaly names follow Jepsen's Kafka checker (jepsen-io/jepsen,
//! `jepsen/src/jepsen/tests/kafka.clj`: lost writes, duplicates,
//! nonmonotonic polls, aborted reads), adapted to a sink's output: the
//! "writes" here are the source's records, the "reads" one read_committed
//! drain.
use sinkhole_model::record;

use super::{
    seq_range, Counts, DrainedRecord, Example, Examples, Expected, HistoryIndex, PartitionDrain, TxnStatus,
    UncommittedTail, MAX_EXAMPLES,
};

/// A drained record, borrowed (from a [`DrainedRecord`] or a buffer of the
/// streaming `drained.bin` reader).
#[derive(Debug, Clone, Copy)]
pub struct RecordRef<'a> {
    pub partition: i32,
    pub offset: i64,
    pub value: &'a [u8],
    pub tid: Option<&'a str>,
}

impl<'a> From<&'a DrainedRecord> for RecordRef<'a> {
    fn from(r: &'a DrainedRecord) -> Self {
        RecordRef { partition: r.partition, offset: r.offset, value: &r.value, tid: r.tid.as_deref() }
    }
}

/// Partitions beyond this are not tracked for monotonicity (a topic of the
/// rig never has that many; a corrupt partition id must not allocate).
const MAX_TRACKED_PARTITION: i32 = 1 << 16;

/// A duplicated record kept as an example, with every copy seen.
struct DupExample {
    subtask: u32,
    seq: u64,
    /// The stream index of the first extra copy: the first copy is before it.
    first_dup_index: u64,
    /// Copies seen, in stream order; the first copy is added by the second pass.
    places: Vec<(i32, i64, Option<String>)>,
    first: Option<(i32, i64, Option<String>)>,
}

/// One pass of counting; see the module docs.
pub struct Counter<'h> {
    run_prefix: Vec<u8>,
    run_id: String,
    parallelism: u32,
    per_subtask: u64,
    history: &'h HistoryIndex,
    /// Bit per (subtask, seq): seen at least once.
    seen: Vec<Vec<u64>>,
    /// Per partition, per subtask: the last seq seen (u64::MAX = none) and its offset.
    last: Vec<Vec<(u64, i64)>>,
    /// Per candidate transaction of the history: bit per seq of its range seen with its tid.
    txn_bits: Vec<Vec<u64>>,
    counts: Counts,
    ex: Examples,
    dups: Vec<DupExample>,
    index: u64,
    tid_cache: Option<(String, Option<usize>)>,
}

impl<'h> Counter<'h> {
    pub fn new(expected: &Expected, history: &'h HistoryIndex) -> Counter<'h> {
        let n = expected.records_per_subtask;
        let words = n.div_ceil(64) as usize;
        let mut run_prefix = expected.run_id.as_bytes().to_vec();
        run_prefix.push(b':');
        Counter {
            run_prefix,
            run_id: expected.run_id.clone(),
            parallelism: expected.parallelism,
            per_subtask: n,
            history,
            seen: (0..expected.parallelism).map(|_| vec![0u64; words]).collect(),
            last: Vec::new(),
            txn_bits: history.candidates.iter().map(|c| vec![0u64; tracked(c, n).div_ceil(64) as usize]).collect(),
            counts: Counts { expected: u64::from(expected.parallelism) * n, ..Counts::default() },
            ex: Examples::default(),
            dups: Vec::new(),
            index: 0,
            tid_cache: None,
        }
    }

    /// `run:subtask:seq` of this run, parsed without allocating; None for
    /// anything else (classified by the slow path).
    fn fast_parse(&self, v: &[u8]) -> Option<(u32, u64)> {
        let rest = v.strip_prefix(self.run_prefix.as_slice())?;
        let colon = rest.iter().position(|&b| b == b':')?;
        let s = digits(&rest[..colon])?;
        let q = digits(&rest[colon + 1..])?;
        Some((u32::try_from(s).ok()?, q))
    }

    pub fn observe(&mut self, r: RecordRef<'_>) {
        let i = self.index;
        self.index += 1;
        let Some((s, q)) = self.fast_parse(r.value).filter(|&(s, q)| s < self.parallelism && q < self.per_subtask)
        else {
            self.unexpected(r);
            return;
        };
        // Seen before: an extra copy.
        let (w, b) = ((q / 64) as usize, q % 64);
        let word = &mut self.seen[s as usize][w];
        if *word & (1 << b) != 0 {
            self.counts.duplicated += 1;
            self.duplicate(i, s, q, r);
        } else {
            *word |= 1 << b;
        }
        self.monotonic(s, q, r);
        if let Some(tid) = r.tid {
            self.transaction(tid, s, q, r);
        }
    }

    fn unexpected(&mut self, r: RecordRef<'_>) {
        self.counts.unexpected += 1;
        if self.ex.unexpected.len() >= MAX_EXAMPLES {
            return;
        }
        let (n, p) = (self.per_subtask, self.parallelism);
        let parsed = record::parse_value(r.value);
        let why = match parsed {
            None => format!("malformed value {:?}", String::from_utf8_lossy(r.value)),
            Some((run, _, _)) if run != self.run_id => format!("record of another run ({run})"),
            Some((_, s, _)) if s >= p => format!("subtask {s} out of range (parallelism {p})"),
            Some((_, _, q)) if q >= n => format!("seq {q} out of range (records_per_subtask {n})"),
            // The fast parser refused a value the slow one reads (e.g. a
            // leading '+'): not what the source writes.
            Some(_) => format!("non-canonical value {:?}", String::from_utf8_lossy(r.value)),
        };
        self.ex.unexpected.push(Example {
            subtask: parsed.map(|x| x.1),
            seq: parsed.map(|x| x.2),
            partition: Some(r.partition),
            offset: Some(r.offset),
            transactional_id: r.tid.map(str::to_string),
            detail: format!("partition {} offset {}: {why}", r.partition, r.offset),
            ..Example::default()
        });
    }

    fn duplicate(&mut self, i: u64, s: u32, q: u64, r: RecordRef<'_>) {
        let place = (r.partition, r.offset, r.tid.map(str::to_string));
        if let Some(d) = self.dups.iter_mut().find(|d| d.subtask == s && d.seq == q) {
            d.places.push(place);
        } else if self.dups.len() < MAX_EXAMPLES {
            self.dups.push(DupExample { subtask: s, seq: q, first_dup_index: i, places: vec![place], first: None });
        }
    }

    /// Jepsen's nonmonotonic poll, per (partition, subtask): a subtask's
    /// records reach a partition in seq order, and read_committed hides the
    /// records of aborted transactions, so a correct sink shows rising seqs
    /// even across restores. A step back is a replay of committed data.
    fn monotonic(&mut self, s: u32, q: u64, r: RecordRef<'_>) {
        if !(0..MAX_TRACKED_PARTITION).contains(&r.partition) {
            return;
        }
        let p = r.partition as usize;
        if self.last.len() <= p {
            self.last.resize_with(p + 1, Vec::new);
        }
        let row = &mut self.last[p];
        if row.is_empty() {
            row.resize(self.parallelism as usize, (u64::MAX, -1));
        }
        let (prev, prev_off) = row[s as usize];
        row[s as usize] = (q, r.offset);
        if prev == u64::MAX || q > prev {
            return;
        }
        self.counts.nonmonotonic += 1;
        if self.ex.nonmonotonic.len() < MAX_EXAMPLES {
            let checkpoint = r.tid.and_then(|t| self.history.checkpoint_of(t));
            self.ex.nonmonotonic.push(Example {
                subtask: Some(s),
                seq: Some(q),
                partition: Some(r.partition),
                offset: Some(r.offset),
                transactional_id: r.tid.map(str::to_string),
                checkpoint,
                detail: format!(
                    "partition {} subtask {s}: seq {q} at offset {} ({}) after seq {prev} at offset {prev_off}",
                    r.partition,
                    r.offset,
                    r.tid.unwrap_or("no tid"),
                ),
                ..Example::default()
            });
        }
    }

    fn tid_index(&mut self, tid: &str) -> Option<usize> {
        if let Some((t, i)) = &self.tid_cache {
            if t == tid {
                return *i;
            }
        }
        let i = self.history.tid_index.get(tid).copied();
        match &mut self.tid_cache {
            Some((t, c)) => {
                t.clear();
                t.push_str(tid);
                *c = i;
            }
            None => self.tid_cache = Some((tid.to_string(), i)),
        }
        i
    }

    /// Marks the record in the transactions of its tid that could hold it,
    /// and reports it as an aborted read when only aborted ones could.
    fn transaction(&mut self, tid: &str, s: u32, q: u64, r: RecordRef<'_>) {
        let Some(ti) = self.tid_index(tid) else { return };
        let t = &self.history.tids[ti];
        let mut covered = false;
        for &c in &t.candidates {
            let cand = &self.history.candidates[c];
            if cand.first_seq <= q && q <= cand.last_seq {
                let k = q - cand.first_seq;
                self.txn_bits[c][(k / 64) as usize] |= 1 << (k % 64);
                covered = true;
            }
        }
        if covered || t.opaque || !t.aborted_could_hold(q) {
            return;
        }
        self.counts.aborted_read += 1;
        if self.ex.aborted_read.len() < MAX_EXAMPLES {
            let why = t.abort_text(q);
            self.ex.aborted_read.push(Example {
                subtask: Some(s),
                seq: Some(q),
                partition: Some(r.partition),
                offset: Some(r.offset),
                transactional_id: Some(tid.to_string()),
                checkpoint: t.aborted_checkpoint(q),
                detail: format!(
                    "subtask {s} seq {q} visible at partition {} offset {}, written by transaction {tid}, which {why}",
                    r.partition, r.offset
                ),
                ..Example::default()
            });
        }
    }

    /// The first pass is done; the first copies of the duplicated examples
    /// lie before this stream index (None: no second pass needed).
    pub fn second_pass_until(&self) -> Option<u64> {
        self.dups.iter().map(|d| d.first_dup_index).max()
    }

    /// Second pass (records `0..second_pass_until()`, in the same order):
    /// finds the first copy of each duplicated example.
    pub fn observe_again(&mut self, r: RecordRef<'_>) {
        let Some((s, q)) = self.fast_parse(r.value) else { return };
        for d in &mut self.dups {
            if d.first.is_none() && d.subtask == s && d.seq == q {
                d.first = Some((r.partition, r.offset, r.tid.map(str::to_string)));
            }
        }
    }

    /// Counts lost records (with their transactions), torn transactions and
    /// the uncommitted tail, and returns the report.
    pub fn finish(mut self, partitions: &[PartitionDrain]) -> super::CheckReport {
        let lost_ranges = self.lost();
        self.torn();
        for d in std::mem::take(&mut self.dups) {
            let mut places = d.places;
            let had_first = d.first.is_some();
            if let Some(f) = d.first {
                places.insert(0, f);
            }
            let (p0, o0, t0) = places[0].clone();
            let text = places
                .iter()
                .map(|(p, o, t)| format!("p{p}@{o} ({})", t.as_deref().unwrap_or("no tid")))
                .collect::<Vec<_>>()
                .join(", ");
            // Without a second pass the first copy is missing: one more.
            let n = places.len() + usize::from(!had_first);
            self.ex.duplicated.push(Example {
                subtask: Some(d.subtask),
                seq: Some(d.seq),
                partition: Some(p0),
                offset: Some(o0),
                checkpoint: t0.as_deref().and_then(|t| self.history.checkpoint_of(t)),
                transactional_id: t0,
                detail: format!("subtask {} seq {} seen {n} times: {text}", d.subtask, d.seq),
                ..Example::default()
            });
        }
        let uncommitted_tail: Vec<UncommittedTail> = partitions
            .iter()
            .filter(|d| !d.complete())
            .map(|d| UncommittedTail {
                partition: d.partition,
                position: d.position,
                high_watermark: d.high_watermark,
                open: vec![],
            })
            .collect();
        self.counts.uncommitted_tail = uncommitted_tail.len() as u64;
        self.counts.lingering = self.history.lingering.len() as u64;
        self.ex.lingering = self.history.lingering.iter().take(super::MAX_EXAMPLES).cloned().collect();
        super::CheckReport {
            counts: self.counts,
            examples: self.ex,
            lost_ranges,
            uncommitted_tail,
            partitions: partitions.to_vec(),
            records_read: self.index,
            // The brokers' looks and what they name come after the count (`crate::check`).
            end_look: Default::default(),
            hanging: Vec::new(),
        }
    }

    fn lost(&mut self) -> usize {
        let n = self.per_subtask;
        let mut lost_ranges = 0usize;
        for s in 0..self.parallelism {
            let bits = &self.seen[s as usize];
            let mut q = 0u64;
            while q < n {
                // Whole words at a time: runs of seen and of lost records.
                let Some(start) = next_with(bits, q, n, false) else { break };
                let end = next_with(bits, start, n, true).unwrap_or(n) - 1;
                q = end + 1;
                self.counts.lost += end - start + 1;
                for (a, b, t) in self.history.split(s, start, end) {
                    lost_ranges += 1;
                    if self.ex.lost.len() >= MAX_EXAMPLES {
                        continue;
                    }
                    let detail = match t {
                        Some(t) => format!("subtask {s} {} lost: {}", seq_range(a, b), super::describe_outcome(t)),
                        None => {
                            format!(
                                "subtask {s} {} lost: in no pre-committed transaction of the history",
                                seq_range(a, b)
                            )
                        }
                    };
                    self.ex.lost.push(Example {
                        subtask: Some(s),
                        seq: Some(a),
                        seq_end: Some(b),
                        transactional_id: t.map(|t| t.transactional_id.clone()),
                        checkpoint: t.map(|t| t.checkpoint),
                        detail,
                        ..Example::default()
                    });
                }
            }
        }
        self.counts.committed = self.counts.expected - self.counts.lost;
        lost_ranges
    }

    /// A transaction some of whose records are visible and others not:
    /// judged for the history's committed transactions, and for those of
    /// unknown fate whose range no other candidate of the same id overlaps
    /// (otherwise a record could belong to either and nothing is claimed).
    fn torn(&mut self) {
        for (c, cand) in self.history.candidates.iter().enumerate() {
            if !(cand.status == TxnStatus::Committed || cand.unambiguous) {
                continue;
            }
            // Saturating: a damaged history may claim all of u64.
            let len = (cand.last_seq - cand.first_seq).saturating_add(1);
            let bits = &self.txn_bits[c];
            let visible: u64 = bits.iter().map(|w| u64::from(w.count_ones())).sum();
            if visible == 0 || visible >= len {
                continue;
            }
            self.counts.torn_transaction += 1;
            if self.ex.torn_transaction.len() < MAX_EXAMPLES {
                // Within the tracked part, or just after it when a range
                // reaching past the source's end was seen whole up to there.
                let t = tracked(cand, self.per_subtask);
                let first_missing = cand.first_seq + next_with(bits, 0, t, false).unwrap_or(t);
                let fate = match cand.status {
                    TxnStatus::Committed => "reported committed",
                    _ => "fate unknown to the history",
                };
                self.ex.torn_transaction.push(Example {
                    subtask: Some(cand.subtask),
                    seq: Some(cand.first_seq),
                    seq_end: Some(cand.last_seq),
                    transactional_id: Some(cand.transactional_id.clone()),
                    checkpoint: Some(cand.checkpoint),
                    detail: format!(
                        "transaction {} (checkpoint {}, {fate}), subtask {} {}: {visible} of {len} records visible, \
                         {} not (first: seq {first_missing})",
                        cand.transactional_id,
                        cand.checkpoint,
                        cand.subtask,
                        seq_range(cand.first_seq, cand.last_seq),
                        len - visible
                    ),
                    ..Example::default()
                });
            }
        }
    }
}

/// How many seqs of a candidate's range the source can have written (those
/// below `records_per_subtask`): one bit each. A record outside that is
/// unexpected and never marks a transaction, and the range of a damaged
/// history (up to all of u64) must not size an allocation.
fn tracked(c: &super::Candidate, records_per_subtask: u64) -> u64 {
    if c.first_seq >= records_per_subtask {
        return 0;
    }
    c.last_seq.min(records_per_subtask - 1) - c.first_seq + 1
}

/// A decimal number without sign or leading junk, as the source writes it.
fn digits(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    let mut v = 0u64;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(c - b'0');
    }
    Some(v)
}

/// The first index ≥ `from` (below `n`) whose bit is `set`.
fn next_with(bits: &[u64], from: u64, n: u64, set: bool) -> Option<u64> {
    let mut i = from;
    while i < n {
        let w = (i / 64) as usize;
        let word = if set { bits[w] } else { !bits[w] };
        let masked = word & (u64::MAX << (i % 64));
        if masked != 0 {
            let found = (w as u64) * 64 + u64::from(masked.trailing_zeros());
            return (found < n).then_some(found);
        }
        i = (w as u64 + 1) * 64;
    }
    None
}

/// How often each (subtask, seq) was seen, for tests that want to compare
/// the bitset counter with a plain map.
#[cfg(test)]
pub(crate) fn naive_copies(
    expected: &Expected,
    records: &[DrainedRecord],
) -> std::collections::HashMap<(u32, u64), u32> {
    let mut m = std::collections::HashMap::new();
    for r in records {
        if let Some((run, s, q)) = record::parse_value(&r.value) {
            let canonical = record::value(run, s, q).as_bytes() == r.value.as_slice();
            if canonical && run == expected.run_id && s < expected.parallelism && q < expected.records_per_subtask {
                *m.entry((s, q)).or_insert(0) += 1;
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_with_walks_words() {
        let mut bits = vec![0u64; 3];
        for i in [0u64, 1, 2, 70, 130] {
            bits[(i / 64) as usize] |= 1 << (i % 64);
        }
        assert_eq!(next_with(&bits, 0, 150, false), Some(3));
        assert_eq!(next_with(&bits, 3, 150, true), Some(70));
        assert_eq!(next_with(&bits, 71, 150, true), Some(130));
        assert_eq!(next_with(&bits, 131, 150, true), None);
        assert_eq!(next_with(&bits, 131, 150, false), Some(131));
        assert_eq!(next_with(&[u64::MAX], 0, 64, false), None);
        assert_eq!(next_with(&[u64::MAX >> 1], 0, 63, false), None);
    }

    #[test]
    fn digits_are_canonical() {
        assert_eq!(digits(b"0"), Some(0));
        assert_eq!(digits(b"1234"), Some(1234));
        assert_eq!(digits(b"01"), None);
        assert_eq!(digits(b""), None);
        assert_eq!(digits(b"+1"), None);
        assert_eq!(digits(b"99999999999999999999"), None);
    }
}
