//! `lingering`: a transaction an earlier attempt left open that was still
//! `Ongoing` once a restored attempt was up. Flink's `ExactlyOnceKafkaWriter`
//! aborts lingering transactions in its initialisation, before the subtask
//! writes (`TransactionAbortStrategyImpl`, PROBING); one left open holds back
//! the last stable offset of its partitions, so read_committed readers see
//! nothing newer until the broker times it out. The evidence is the rig's own
//! look at the coordinator (`history::observation`, `Look::Lingering`), not
//! the sink's word.
use sinkhole_model::Event;

use super::Example;
use sinkhole_history::observation::{self, Look, Observation};

/// One example per transaction found `Ongoing` after a restore, in history order.
pub fn found(events: &[Event]) -> Vec<Example> {
    let mut out = Vec::new();
    for o in Observation::from_events(events) {
        let Look::Lingering { attempt, restored_from, pooled } = o.look else { continue };
        for t in o.seen().iter().filter(|t| observation::ongoing(t)) {
            let from = restored_from.map_or("no checkpoint".to_string(), |c| format!("checkpoint {c}"));
            out.push(Example {
                transactional_id: Some(t.transactional_id.clone()),
                checkpoint: if pooled { None } else { checkpoint_of(&t.transactional_id) },
                detail: format!(
                    "{} (producer {} epoch {}) still Ongoing {} ms into the job, after attempt {attempt} restored from {from} and was up: the restore did not abort it",
                    t.transactional_id, t.producer_id, t.producer_epoch, o.at_ms
                ),
                ..Example::default()
            });
        }
    }
    out
}

/// The checkpoint an id of Flink's INCREMENTING naming carries (`…-<subtask>-<checkpoint>`).
fn checkpoint_of(tid: &str) -> Option<u64> {
    tid.rsplit_once('-').and_then(|(_, c)| c.parse().ok())
}
