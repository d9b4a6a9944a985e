//! A share group's premises, judged from the group's view at the end of the
//! run ([`ShareView`]: what its persisted state showed while the job ran and
//! at the end, what the workers were delivered and what the broker refused).
//!
//! - `delivery_limit`: met when the group archived input records (Kafka's
//!   `SharePartition` archives a record whose lock runs out on its last
//!   allowed delivery, instead of making it available again); unmet with the
//!   highest delivery count against the limit, and, when records did reach
//!   the limit, what the rig could and could not see of their archiving (the
//!   persisted state drops an archived range once the share-partition start
//!   offset passes it, so only samples taken in between show it).
//! - `redelivery`: met when a record was delivered again — a delivery count
//!   above 1, or more deliveries than there are input records (a crashed
//!   share-partition leader forgets the acquisitions it had not persisted,
//!   and hands those records out again with delivery count 1).
//!
//! Both describe the broker's reaction to a fault, not the sink: a run in
//! which it did not happen shows nothing about the sink, and its verdict is
//! inconclusive with this evidence.
use sinkhole_scenario::premise::{PremiseKind, Premises};

use super::{Held, PremiseRecord};
use crate::share::ShareView;

/// What the scenario says of the group, beside its view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    /// `group.share.delivery.count.limit` of the run.
    pub delivery_limit: u32,
    /// Records the rig wrote to the input topic.
    pub input_records: u64,
}

/// Every share-group premise of `premises`, judged from `view` (None: the group was never read,
/// as for a mode the broker could not run).
pub fn evaluate(premises: &Premises, view: Option<&ShareView>, group: Group) -> Vec<PremiseRecord> {
    premises
        .list()
        .into_iter()
        .filter(|p| p.kind.of_share_group())
        .map(|p| {
            let (held, evidence) = match view {
                None => (Held::Unmet, "the share group's view was not read".to_string()),
                Some(v) if p.kind == PremiseKind::DeliveryLimit => delivery_limit(v, group),
                Some(v) => redelivery(v, group),
            };
            PremiseRecord { premise: p.to_string(), held, evidence }
        })
        .collect()
}

/// The highest delivery count anyone saw: the workers' deliveries or the group's persisted state.
fn highest(v: &ShareView) -> i16 {
    v.partitions.iter().map(|p| p.max_delivery_count).fold(v.max_delivery_count, i16::max)
}

fn refused(v: &ShareView) -> String {
    match v.ack_refused {
        0 => "no late ACCEPT refused".into(),
        n => format!("{n} late ACCEPTs refused"),
    }
}

fn delivery_limit(v: &ShareView, g: Group) -> (Held, String) {
    let max = highest(v);
    let limit = g.delivery_limit;
    if v.archived > 0 {
        let running = match v.archived_while_running {
            0 => String::new(),
            n => format!(", {n} of them seen only while the job ran"),
        };
        return (
            Held::Met,
            format!(
                "the group archived {} input records{running}; highest delivery count {max} of limit {limit}",
                v.archived
            ),
        );
    }
    let state = match &v.error {
        Some(e) => format!("the group's state could not be read at the end ({e})"),
        None => format!(
            "{} samples of the group's state while the job ran ({} failed) and the state at the end showed none archived",
            v.state_samples, v.state_sample_errors
        ),
    };
    if i64::from(max) < i64::from(limit) {
        return (
            Held::Unmet,
            format!(
                "highest delivery count {max} of limit {limit}: no record reached the limit, so no lock ran out at it \
                 ({}; {state})",
                refused(v)
            ),
        );
    }
    (
        Held::Unmet,
        format!(
            "records reached the limit (highest delivery count {max} of {limit}; {}), but {state}: the state drops an \
             archived range once its start offset passes it",
            refused(v)
        ),
    )
}

fn redelivery(v: &ShareView, g: Group) -> (Held, String) {
    let max = highest(v);
    if v.redelivered > 0 || max > 1 {
        return (
            Held::Met,
            format!(
                "{} of {} deliveries were redeliveries (highest delivery count {max}; {})",
                v.redelivered,
                v.delivered,
                refused(v)
            ),
        );
    }
    if v.delivered > g.input_records {
        return (
            Held::Met,
            format!(
                "{} deliveries of {} input records: some were handed out again with delivery count 1 (a restarted \
                 share-partition leader does not remember an acquisition it never persisted)",
                v.delivered, g.input_records
            ),
        );
    }
    (
        Held::Unmet,
        format!(
            "no record was delivered twice: {} deliveries of {} input records, highest delivery count {max}; no lock \
             ran out and no member left with records in hand",
            v.delivered, g.input_records
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::share::PartitionView;

    const GROUP: Group = Group { delivery_limit: 2, input_records: 6000 };

    fn both() -> Premises {
        Premises { delivery_limit: true, redelivery: true, ..Premises::default() }
    }

    fn judged(v: &ShareView) -> Vec<(Held, String)> {
        evaluate(&both(), Some(v), GROUP).into_iter().map(|r| (r.held, r.evidence)).collect()
    }

    #[test]
    fn archived_records_meet_the_delivery_limit_and_redeliveries_the_redelivery() {
        let v = ShareView {
            archived: 77,
            archived_while_running: 77,
            delivered: 7741,
            redelivered: 1741,
            max_delivery_count: 2,
            ack_refused: 1627,
            ..ShareView::default()
        };
        let r = evaluate(&both(), Some(&v), GROUP);
        assert_eq!(r.iter().map(|r| r.premise.as_str()).collect::<Vec<_>>(), ["delivery_limit", "redelivery"]);
        assert_eq!(r[0].held, Held::Met);
        assert_eq!(
            r[0].evidence,
            "the group archived 77 input records, 77 of them seen only while the job ran; highest delivery count 2 of limit 2"
        );
        assert_eq!(
            (r[1].held, r[1].evidence.as_str()),
            (
                Held::Met,
                "1741 of 7741 deliveries were redeliveries (highest delivery count 2; 1627 late ACCEPTs refused)"
            )
        );
    }

    #[test]
    fn a_limit_not_reached_is_unmet_with_the_highest_count() {
        // A pause shorter than one lock: nothing redelivered, nothing archived.
        let v = ShareView { delivered: 6000, max_delivery_count: 1, state_samples: 20, ..ShareView::default() };
        let j = judged(&v);
        assert_eq!(j[0].0, Held::Unmet);
        assert!(
            j[0].1.starts_with("highest delivery count 1 of limit 2: no record reached the limit, so no lock ran out at it (no late ACCEPT refused; 20 samples"),
            "{}",
            j[0].1
        );
        assert_eq!(j[1].0, Held::Unmet);
        assert!(
            j[1].1.starts_with("no record was delivered twice: 6000 deliveries of 6000 input records"),
            "{}",
            j[1].1
        );
    }

    #[test]
    fn records_at_the_limit_whose_archiving_no_sample_saw_are_unmet_not_a_failure_of_the_sink() {
        // The run of the issue: 1868 redelivered at the limit, none archived in view.
        let v = ShareView {
            delivered: 7868,
            redelivered: 1868,
            max_delivery_count: 2,
            ack_refused: 123,
            state_samples: 21,
            ..ShareView::default()
        };
        let j = judged(&v);
        assert_eq!(j[0].0, Held::Unmet);
        assert!(
            j[0].1.starts_with(
                "records reached the limit (highest delivery count 2 of 2; 123 late ACCEPTs refused), but 21 samples"
            ),
            "{}",
            j[0].1
        );
        assert_eq!(j[1].0, Held::Met);
        // The group's own state counts too, and an unread state says so.
        let v = ShareView {
            partitions: vec![PartitionView { max_delivery_count: 2, ..PartitionView::default() }],
            error: Some("COORDINATOR_NOT_AVAILABLE".into()),
            ..ShareView::default()
        };
        let j = judged(&v);
        assert!(
            j[0].1.contains("the group's state could not be read at the end (COORDINATOR_NOT_AVAILABLE)"),
            "{}",
            j[0].1
        );
        assert_eq!(j[1].0, Held::Met, "a persisted delivery count of 2 is a redelivery");
    }

    #[test]
    fn more_deliveries_than_input_records_is_a_redelivery_even_at_count_one() {
        let v = ShareView { delivered: 6343, max_delivery_count: 1, ..ShareView::default() };
        let j = judged(&v);
        assert_eq!(j[1].0, Held::Met);
        assert!(j[1].1.starts_with("6343 deliveries of 6000 input records"), "{}", j[1].1);
    }

    #[test]
    fn only_a_share_groups_premises_and_never_without_a_view() {
        let p = Premises { redelivery: true, ..Premises::default() };
        let r = evaluate(&p, None, GROUP);
        assert_eq!((r.len(), r[0].held), (1, Held::Unmet));
        assert!(evaluate(&Premises::default(), None, GROUP).is_empty());
        // The transaction premises are left to `premise::evaluate`, and it leaves these.
        let mixed = Premises {
            timeout_abort: Some(sinkhole_scenario::premise::PremiseOf {
                checkpoint: Some(3),
                fault: None,
                before: None,
            }),
            delivery_limit: true,
            ..Premises::default()
        };
        assert_eq!(evaluate(&mixed, Some(&ShareView::default()), GROUP).len(), 1);
        assert_eq!(super::super::evaluate(&mixed, &[], &[]).len(), 1);
    }
}
