//! What a ShareFetch answer hands a member, and the acknowledgements it
//! sends back: pure functions over the decoded answer, tested on their own.
//!
//! * [`acquired_records`] mirrors Java's `ShareCompletedFetch.fetchRecords`:
//!   only the offsets in `AcquiredRecords` are this member's; a record batch
//!   may hold others (acquired by another member, or already done), which are
//!   skipped; an acquired offset with no record (a control record of a
//!   transaction, or a compacted one) is a *gap*, acknowledged with GAP so the
//!   broker can complete it.
//! * [`ack_batches`] mirrors `Acknowledgements.getAcknowledgementBatches`:
//!   contiguous offsets form one batch; a batch whose offsets all have one
//!   type carries that type once, otherwise one type per offset.
use std::collections::BTreeMap;

use bytes::{Buf, Bytes};
use kafka_protocol::messages::share_fetch_response::AcquiredRecords;
use kafka_protocol::records::RecordBatchDecoder;

use sinkhole_client::wire::share_fetch::{AckBatch, ACK_GAP};
use sinkhole_client::wire::WireError;

/// One record delivered to this member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// How many times the broker has handed this record out, this time
    /// included (1 on the first delivery; 2 after a lock expired or a
    /// RELEASE; the broker archives it past `delivery.count.limit`).
    pub delivery_count: i16,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
    /// CreateTime or LogAppendTime, ms since the epoch.
    pub timestamp: i64,
}

/// The record batches of a partition's `Records` field, decoded. A batch cut
/// short at the end (a fetch may stop mid-batch, as in Fetch) is ignored:
/// its acquired offsets then count as gaps, which the broker never hands out
/// for offsets that have records (`SharePartition` acquires whole batches it
/// has read).
pub fn decode_records(records: &Bytes) -> Result<Vec<kafka_protocol::records::Record>, WireError> {
    let mut out = vec![];
    let mut rest = records.clone();
    // A batch: baseOffset (8), batchLength (4, the bytes after it), ...
    while rest.len() >= 12 {
        let len = (&rest[8..12]).get_i32();
        let total = 12 + usize::try_from(len).map_err(|_| WireError::Codec(format!("record batch length {len}")))?;
        if rest.len() < total {
            break;
        }
        let mut batch = rest.split_to(total);
        let set = RecordBatchDecoder::decode(&mut batch)
            .map_err(|e| WireError::codec("decoding a ShareFetch record batch", e))?;
        out.extend(set.records.into_iter().filter(|r| !r.control));
    }
    Ok(out)
}

/// The records of `acquired` among `records`, and the acquired offsets that
/// have no record (gaps).
pub fn acquired_records(
    topic: &str,
    partition: i32,
    records: Vec<kafka_protocol::records::Record>,
    acquired: &[AcquiredRecords],
) -> (Vec<ShareRecord>, Vec<i64>) {
    let mut by_offset: BTreeMap<i64, kafka_protocol::records::Record> =
        records.into_iter().map(|r| (r.offset, r)).collect();
    let mut out = vec![];
    let mut gaps = vec![];
    for range in acquired {
        for offset in range.first_offset..=range.last_offset {
            match by_offset.remove(&offset) {
                Some(r) => out.push(ShareRecord {
                    topic: topic.to_string(),
                    partition,
                    offset,
                    delivery_count: range.delivery_count,
                    key: r.key,
                    value: r.value,
                    headers: r.headers.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                    timestamp: r.timestamp,
                }),
                None => gaps.push(offset),
            }
        }
    }
    out.sort_by_key(|r| r.offset);
    (out, gaps)
}

/// Acknowledgement batches for `acks` (offset → type), in offset order.
pub fn ack_batches(acks: &BTreeMap<i64, i8>) -> Vec<AckBatch> {
    let mut out: Vec<AckBatch> = vec![];
    for (&offset, &t) in acks {
        match out.last_mut() {
            Some(b) if b.last_offset + 1 == offset => {
                b.last_offset = offset;
                b.types.push(t);
            }
            _ => out.push(AckBatch { first_offset: offset, last_offset: offset, types: vec![t] }),
        }
    }
    for b in &mut out {
        if b.types.iter().all(|t| *t == b.types[0]) {
            b.types.truncate(1);
        }
    }
    out
}

/// Gaps as acknowledgements (type GAP).
pub fn gap_acks(gaps: &[i64]) -> impl Iterator<Item = (i64, i8)> + '_ {
    gaps.iter().map(|o| (*o, ACK_GAP))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_client::producer::accumulator::{encode_batch, PendingRecord};
    use sinkhole_client::wire::share_fetch::{ACK_ACCEPT, ACK_REJECT, ACK_RELEASE};

    fn range(first: i64, last: i64, count: i16) -> AcquiredRecords {
        AcquiredRecords::default().with_first_offset(first).with_last_offset(last).with_delivery_count(count)
    }

    fn batch(base: i64, n: usize) -> Bytes {
        let recs: Vec<PendingRecord> = (0..n)
            .map(|i| PendingRecord {
                key: Bytes::from(format!("k{i}")),
                value: Bytes::from(format!("v{}", base as usize + i)),
                headers: vec![],
                timestamp: 1_000 + i as i64,
            })
            .collect();
        let b = encode_batch(&recs, -1, -1, -1, false).unwrap();
        // The producer writes base offset 0; the log assigns the real one.
        let mut v = b.to_vec();
        v[..8].copy_from_slice(&base.to_be_bytes());
        Bytes::from(v)
    }

    #[test]
    fn only_acquired_offsets_are_delivered_and_missing_ones_are_gaps() {
        let mut data = batch(0, 4).to_vec();
        data.extend_from_slice(&batch(4, 2));
        let recs = decode_records(&Bytes::from(data)).unwrap();
        assert_eq!(recs.len(), 6);
        // Offsets 1..=2 at delivery 1, 5..=7 at delivery 2; 6 and 7 have no record.
        let (out, gaps) = acquired_records("in", 0, recs, &[range(1, 2, 1), range(5, 7, 2)]);
        let got: Vec<(i64, i16)> = out.iter().map(|r| (r.offset, r.delivery_count)).collect();
        assert_eq!(got, vec![(1, 1), (2, 1), (5, 2)]);
        assert_eq!(gaps, vec![6, 7]);
        assert_eq!(out[0].value.as_deref(), Some(&b"v1"[..]));
        assert_eq!(out[0].topic, "in");
    }

    #[test]
    fn a_batch_cut_short_is_left_out() {
        let mut data = batch(0, 2).to_vec();
        let second = batch(2, 2);
        data.extend_from_slice(&second[..second.len() - 5]);
        let recs = decode_records(&Bytes::from(data)).unwrap();
        assert_eq!(recs.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![0, 1]);
        assert!(decode_records(&Bytes::new()).unwrap().is_empty());
    }

    #[test]
    fn contiguous_offsets_make_one_batch_with_one_type_when_they_agree() {
        let acks: BTreeMap<i64, i8> =
            [(3, ACK_ACCEPT), (4, ACK_ACCEPT), (5, ACK_ACCEPT), (7, ACK_RELEASE), (8, ACK_REJECT), (9, ACK_GAP)]
                .into_iter()
                .collect();
        let b = ack_batches(&acks);
        assert_eq!(
            b,
            vec![
                AckBatch { first_offset: 3, last_offset: 5, types: vec![ACK_ACCEPT] },
                AckBatch { first_offset: 7, last_offset: 9, types: vec![ACK_RELEASE, ACK_REJECT, ACK_GAP] },
            ]
        );
        assert!(ack_batches(&BTreeMap::new()).is_empty());
        assert_eq!(gap_acks(&[6]).collect::<Vec<_>>(), vec![(6, ACK_GAP)]);
    }
}
