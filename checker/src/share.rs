//! The share group's own view at the end of a run with a share-group source
//! (`verdict.json` → `share`): what the group says became of the input, next
//! to what the workers saw.
//!
//! - from the group (`docs/PROTOCOL.md` §6): the lag per input partition
//!   (DescribeShareGroupOffsets v1: records not yet delivered for good) and
//!   the persisted state (ReadShareGroupState, with the stored leader epoch):
//!   archived ranges (the delivery limit, or a REJECT), records still
//!   available, the highest delivery count it kept, and the offset through
//!   which every record is done. Which records are acquired right now no
//!   client can read: lag minus what the state shows available;
//! - from the same persisted state read every half second while the job ran
//!   ([`ArchiveSeen`]): the records it showed archived at any point. The view
//!   at the end alone would miss them: once every record before an archived
//!   range is done, the share-partition start offset moves past it and the
//!   state no longer lists it (`SharePartition.maybeUpdateCachedStateAndOffsets`
//!   in the broker), so a run whose lag reaches 0 ends with nothing archived
//!   in view even where the delivery limit ended a record's deliveries;
//! - from the history: how many deliveries the workers saw, how many of them
//!   were redeliveries (delivery count above 1: a lock ran out, a member went
//!   away), a few examples, and what was acknowledged and refused.
use serde::{Deserialize, Serialize};
use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_client::wire::read_share_group_state::SharePartitionState;
use sinkhole_model::{Event, EventKind, Redelivery};

/// What the group said about one input partition.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PartitionView {
    pub partition: i32,
    /// DescribeShareGroupOffsets: -1 before any acknowledgement.
    pub start_offset: i64,
    pub lag: Option<i64>,
    /// The persisted state's start offset, extended over the acknowledged
    /// and archived batches right after it.
    pub done_through: i64,
    pub archived: u64,
    pub available: u64,
    pub max_delivery_count: i16,
    /// The archived offset ranges (first, last) the state showed at the end.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub archived_ranges: Vec<(i64, i64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `verdict.json` → `share`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ShareView {
    pub group: String,
    pub input_topic: String,
    pub ack: String,
    /// Records the group had not delivered for good at the end (sum of lags).
    pub lag: i64,
    /// Input records the group archived: shown archived by its persisted
    /// state at the end or in any sample taken while the job ran.
    pub archived: u64,
    /// Of them, those only a sample taken while the job ran showed.
    #[serde(default)]
    pub archived_while_running: u64,
    /// Archived ranges (partition, first, last offset) over the run, merged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub archived_ranges: Vec<(i32, i64, i64)>,
    /// Samples of the persisted state taken while the job ran, and how many
    /// of them failed (a broker restarting, a coordinator moving).
    #[serde(default)]
    pub state_samples: u64,
    #[serde(default)]
    pub state_sample_errors: u64,
    /// Input records the state shows available again (released, or a lock ran out).
    pub available: u64,
    pub partitions: Vec<PartitionView>,
    /// Deliveries the workers saw, and how many of them had a count above 1.
    pub delivered: u64,
    pub redelivered: u64,
    pub max_delivery_count: i16,
    pub redelivery_examples: Vec<Redelivery>,
    /// ACCEPTs sent, and those the broker refused (their lock had run out).
    pub acknowledged: u64,
    pub ack_refused: u64,
    /// Steps back of a subtask's seq within an output partition: a share
    /// group hands records out in no order, so this is reported, not judged.
    pub out_of_order: u64,
    /// For the first seq of each lost example: whether it was acknowledged
    /// (when, by whom) and what became of the transactions that carried it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lost_evidence: Vec<String>,
    /// Why the group's own view is missing, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ShareView {
    /// Moves the view's counts into `report`'s: redelivered and archived join the counts an
    /// expectation can name, and the nonmonotonic count moves out of them into `out_of_order`
    /// (a share group hands records out in no order). Once after the check, and again after an
    /// offline recount, which counts the output alone.
    pub fn fold_into(&mut self, report: &mut crate::CheckReport) {
        self.out_of_order = std::mem::take(&mut report.counts.nonmonotonic);
        report.examples.nonmonotonic.clear();
        report.counts.redelivered = self.redelivered;
        report.counts.archived = self.archived;
    }
}

/// The workers' side, from the history.
pub fn tally_history(events: &[Event], v: &mut ShareView) {
    for e in events {
        match &e.kind {
            EventKind::ShareDelivered { records, redelivered, max_delivery_count, examples, .. } => {
                v.delivered += records;
                v.redelivered += redelivered;
                v.max_delivery_count = v.max_delivery_count.max(*max_delivery_count);
                for x in examples {
                    if v.redelivery_examples.len() < super::MAX_EXAMPLES {
                        v.redelivery_examples.push(x.clone());
                    }
                }
            }
            EventKind::ShareAcknowledged { records, refused, .. } => {
                v.acknowledged += records;
                v.ack_refused += refused;
            }
            _ => {}
        }
    }
}

/// What the history says of record `(subtask, seq)`: its acknowledgements and
/// the transactions that carried it, with their commit outcome.
pub fn record_story(events: &[Event], subtask: u32, seq: u64) -> String {
    let mut acked = Vec::new();
    let mut carried: Vec<(String, u64)> = Vec::new();
    let mut committed = std::collections::BTreeSet::new();
    for e in events {
        let by = match e.source {
            sinkhole_model::Source::Worker { subtask } => format!("subtask {subtask}"),
            _ => "?".into(),
        };
        match &e.kind {
            EventKind::ShareAcknowledged { checkpoint, policy, ranges, .. }
                if ranges.iter().any(|r| r.contains(subtask, seq)) =>
            {
                acked.push(format!("acknowledged by {by} for checkpoint {checkpoint} ({policy})"))
            }
            EventKind::TxnRecords { transactional_id, checkpoint, ranges }
                if ranges.iter().any(|r| r.contains(subtask, seq)) =>
            {
                carried.push((transactional_id.clone(), *checkpoint))
            }
            EventKind::CommitFinished {
                transactional_id,
                checkpoint,
                outcome: sinkhole_model::CommitOutcome::Committed,
                ..
            } => {
                committed.insert((transactional_id.clone(), *checkpoint));
            }
            _ => {}
        }
    }
    // A worker records an acknowledgement once the broker answered it: one
    // killed while it waited sent an ACCEPT the history never saw.
    let none = "no acknowledgement recorded (one a worker sent just before it was killed would not be)";
    let mut parts = vec![if acked.is_empty() { none.to_string() } else { acked.join(", ") }];
    if carried.is_empty() {
        parts.push("carried by no pre-committed transaction".into());
    }
    for (tid, c) in carried {
        let fate = if committed.contains(&(tid.clone(), c)) { "committed" } else { "never committed" };
        parts.push(format!("carried by {tid} (checkpoint {c}), {fate}"));
    }
    format!("subtask {subtask} seq {seq}: {}", parts.join("; "))
}

/// One partition's view from its offsets and persisted state.
pub fn partition_view(partition: i32, start_offset: i64, lag: Option<i64>, st: &SharePartitionState) -> PartitionView {
    let mut p =
        PartitionView { partition, start_offset, lag, done_through: st.start_offset, ..PartitionView::default() };
    p.error = st.error.clone();
    for b in &st.batches {
        let n = (b.last_offset - b.first_offset + 1).max(0) as u64;
        match b.state.as_str() {
            "archived" => {
                p.archived += n;
                p.archived_ranges.push((b.first_offset, b.last_offset));
            }
            "available" => p.available += n,
            _ => {}
        }
        p.max_delivery_count = p.max_delivery_count.max(b.delivery_count);
        if b.first_offset <= p.done_through && (b.state == "acknowledged" || b.state == "archived") {
            p.done_through = p.done_through.max(b.last_offset + 1);
        }
    }
    p
}

/// Asks the group about every input partition; errors go into `v.error`.
pub async fn read_group(bootstrap: &[String], partitions: u32, v: &mut ShareView) {
    if let Err(e) = try_read_group(bootstrap, partitions, v).await {
        v.error = Some(format!("{e:#}"));
    }
}

async fn try_read_group(bootstrap: &[String], partitions: u32, v: &mut ShareView) -> anyhow::Result<()> {
    let mut client = Client::connect(bootstrap, ClientConfig::default()).await?;
    let parts: Vec<i32> = (0..partitions as i32).collect();
    let (offsets, _) = client.describe_share_group_offsets(&v.group, &[(v.input_topic.clone(), parts.clone())]).await?;
    let md = client.metadata(Some(std::slice::from_ref(&v.input_topic))).await?;
    let topic_id = md.topic(&v.input_topic).map(|t| t.topic_id).ok_or_else(|| anyhow::anyhow!("no input topic"))?;
    for p in parts {
        let o = offsets.partitions.iter().find(|o| o.topic == v.input_topic && o.partition == p);
        let (start, epoch, lag) = o.map(|o| (o.start_offset, o.leader_epoch, o.lag)).unwrap_or((-1, 0, None));
        let st = client.read_share_group_state(&v.group, topic_id, p, epoch).await?;
        v.partitions.push(partition_view(p, start, lag, &st));
    }
    v.lag = v.partitions.iter().map(|p| p.lag.unwrap_or(0).max(0)).sum();
    v.archived = v.partitions.iter().map(|p| p.archived).sum();
    v.available = v.partitions.iter().map(|p| p.available).sum();
    Ok(())
}

/// The archived offsets of each input partition the persisted state showed
/// in any sample ([`sample_archived`]), so that records archived and then
/// passed by the start offset still count (module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArchiveSeen {
    pub samples: u64,
    pub errors: u64,
    pub offsets: std::collections::BTreeMap<i32, std::collections::BTreeSet<i64>>,
}

impl ArchiveSeen {
    /// Adds the archived batches of one partition's state.
    pub fn add(&mut self, partition: i32, st: &SharePartitionState) {
        for b in st.batches.iter().filter(|b| b.state == "archived") {
            self.offsets.entry(partition).or_default().extend(b.first_offset..=b.last_offset);
        }
    }
}

/// One sample of every input partition's persisted state into `seen`: the
/// stored leader epoch from DescribeShareGroupOffsets first (a share
/// coordinator persists a higher epoch it is sent, fencing the real
/// leader: `read_share_group_state`'s docs), then ReadShareGroupState.
/// A partition without state yet (start offset -1) is skipped.
pub async fn sample_archived(
    client: &mut Client,
    group: &str,
    topic: &str,
    topic_id: uuid::Uuid,
    partitions: u32,
    seen: &mut ArchiveSeen,
) -> anyhow::Result<()> {
    let parts: Vec<i32> = (0..partitions as i32).collect();
    let (offsets, _) = client.describe_share_group_offsets(group, &[(topic.to_string(), parts.clone())]).await?;
    for p in parts {
        let Some(o) = offsets.partitions.iter().find(|o| o.topic == topic && o.partition == p) else { continue };
        if o.start_offset < 0 {
            continue;
        }
        let st = client.read_share_group_state(group, topic_id, p, o.leader_epoch).await?;
        if st.error.is_none() {
            seen.add(p, &st);
        }
    }
    Ok(())
}

/// Merges what the samples saw into the view read at the end: `archived`
/// becomes the union of both, `archived_ranges` its ranges.
pub fn merge_archived(v: &mut ShareView, seen: &ArchiveSeen) {
    let mut all = seen.offsets.clone();
    let mut at_end = 0u64;
    for p in &v.partitions {
        for &(a, b) in &p.archived_ranges {
            all.entry(p.partition).or_default().extend(a..=b);
            at_end += (b - a + 1).max(0) as u64;
        }
    }
    let total: u64 = all.values().map(|s| s.len() as u64).sum();
    v.archived = total;
    v.archived_while_running = total - at_end.min(total);
    v.state_samples = seen.samples;
    v.state_sample_errors = seen.errors;
    v.archived_ranges =
        all.iter().flat_map(|(&p, offs)| ranges(offs).into_iter().map(move |(a, b)| (p, a, b))).collect();
}

/// Consecutive offsets as (first, last) ranges.
fn ranges(offs: &std::collections::BTreeSet<i64>) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    for &o in offs {
        match out.last_mut() {
            Some((_, last)) if *last + 1 == o => *last = o,
            _ => out.push((o, o)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sinkhole_client::wire::read_share_group_state::StateBatch;
    use sinkhole_model::{AckPolicy, Source};

    fn batch(first: i64, last: i64, state: &str, count: i16) -> StateBatch {
        StateBatch { first_offset: first, last_offset: last, state: state.into(), delivery_count: count }
    }

    #[test]
    fn archived_records_seen_while_running_count_once_the_start_offset_has_passed_them() {
        let st = |start, batches| SharePartitionState {
            partition: 0,
            error: None,
            state_epoch: 1,
            start_offset: start,
            batches,
        };
        let mut seen = ArchiveSeen::default();
        // A sample while running: 10..=12 archived (their delivery limit), 13 acquired.
        seen.add(0, &st(10, vec![batch(10, 12, "archived", 2), batch(13, 13, "available", 1)]));
        seen.add(0, &st(10, vec![batch(11, 14, "archived", 2)]));
        seen.samples = 2;
        // At the end the start offset is past them; partition 1 still shows 40..=41.
        let mut v = ShareView::default();
        v.partitions.push(partition_view(0, 20, Some(0), &st(20, vec![])));
        v.partitions.push(partition_view(1, 40, Some(0), &st(40, vec![batch(40, 41, "archived", 2)])));
        assert_eq!(v.partitions[1].archived_ranges, [(40, 41)]);
        merge_archived(&mut v, &seen);
        assert_eq!((v.archived, v.archived_while_running, v.state_samples), (7, 5, 2));
        assert_eq!(v.archived_ranges, [(0, 10, 14), (1, 40, 41)]);
        // Nothing sampled, nothing at the end: nothing archived.
        let mut empty = ShareView::default();
        merge_archived(&mut empty, &ArchiveSeen::default());
        assert_eq!((empty.archived, empty.archived_while_running), (0, 0));
    }

    #[test]
    fn the_state_counts_archived_and_available_and_the_done_offset() {
        let st = SharePartitionState {
            partition: 0,
            error: None,
            state_epoch: 1,
            start_offset: 96,
            batches: vec![
                batch(96, 99, "acknowledged", 1),
                batch(100, 102, "archived", 2),
                batch(110, 111, "available", 2),
            ],
        };
        let p = partition_view(0, 96, Some(2), &st);
        assert_eq!((p.archived, p.available, p.max_delivery_count, p.done_through), (3, 2, 2, 103));
    }

    #[test]
    fn a_lost_record_tells_its_acknowledgement_and_its_transaction() {
        use sinkhole_model::{CommitOutcome, IdRange};
        let ev = |kind| Event {
            wall_ms: 0,
            mono_us: 0,
            mode: sinkhole_model::SinkMode::Legacy,
            source: Source::Worker { subtask: 1 },
            kind,
        };
        let events = vec![
            ev(EventKind::ShareAcknowledged {
                checkpoint: 3,
                policy: AckPolicy::BeforeCommit,
                records: 2,
                ranges: vec![IdRange(0, 4, 5)],
                refused: 0,
                errors: Default::default(),
                latency_us: 1,
            }),
            ev(EventKind::TxnRecords {
                transactional_id: "p-1-3".into(),
                checkpoint: 3,
                ranges: vec![IdRange(0, 4, 5)],
            }),
            ev(EventKind::TxnRecords {
                transactional_id: "p-1-2".into(),
                checkpoint: 2,
                ranges: vec![IdRange(0, 0, 3)],
            }),
            ev(EventKind::CommitFinished {
                transactional_id: "p-1-2".into(),
                checkpoint: 2,
                restored: false,
                outcome: CommitOutcome::Committed,
                latency_us: 1,
            }),
        ];
        assert_eq!(
            record_story(&events, 0, 5),
            "subtask 0 seq 5: acknowledged by subtask 1 for checkpoint 3 (before-commit); carried by p-1-3 (checkpoint 3), never committed"
        );
        let story = record_story(&events, 0, 1);
        assert!(
            story.contains("no acknowledgement recorded")
                && story.contains("carried by p-1-2 (checkpoint 2), committed")
        );
        assert!(record_story(&events, 1, 1).contains("carried by no pre-committed transaction"));
    }

    #[test]
    fn the_history_gives_deliveries_and_acknowledgements() {
        let ev = |kind| Event {
            wall_ms: 0,
            mono_us: 0,
            mode: sinkhole_model::SinkMode::Legacy,
            source: Source::Worker { subtask: 0 },
            kind,
        };
        let events = vec![
            ev(EventKind::ShareDelivered {
                checkpoint: 1,
                records: 10,
                redelivered: 3,
                max_delivery_count: 2,
                examples: vec![Redelivery { subtask: 0, seq: 1, partition: 0, offset: 1, delivery_count: 2 }],
            }),
            ev(EventKind::ShareAcknowledged {
                checkpoint: 1,
                policy: AckPolicy::AfterCommit,
                records: 10,
                ranges: vec![],
                refused: 1,
                errors: Default::default(),
                latency_us: 5,
            }),
        ];
        let mut v = ShareView::default();
        tally_history(&events, &mut v);
        assert_eq!(
            (v.delivered, v.redelivered, v.max_delivery_count, v.acknowledged, v.ack_refused),
            (10, 3, 2, 10, 1)
        );
        assert_eq!(v.redelivery_examples.len(), 1);
    }
}
