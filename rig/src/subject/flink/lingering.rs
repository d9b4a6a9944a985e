//! A transaction an earlier attempt of the Flink job left open that the restored attempt did
//! not abort (FLINK-40626), seen by the rig at the coordinators, not told by the sink.
//!
//! Why it can happen: under the POOLING naming a transactional id committed at checkpoint n
//! goes back to the writer's pool and is reopened (InitProducerId: a newer epoch) for a later
//! transaction. If the job then fails before checkpoint n+1 completes, the restore from n finds
//! that id among n's precommitted committables; `TransactionAbortStrategyImpl`'s LISTING abort
//! leaves precommitted ids alone, and the committer's re-commit of n's transaction at the old
//! epoch is fenced. The newer transaction under the id is left Ongoing. With the same prefix and
//! parallelism the pool hands the id out again soon and its InitProducerId aborts it; after a
//! downscale the writer only takes ids of its first owned subtask, so an orphan under another
//! subtask's id stays until the broker aborts it at `transaction.timeout.ms`, holding back the
//! last stable offset of its partitions for read_committed readers meanwhile
//! (apache/flink-connector-kafka PR 314).
//!
//! What the rig does: once a restored attempt has completed [`AFTER_CHECKPOINTS`] checkpoints of
//! its own (its writers' initial aborts are long done, and an id back in the pool had its turn),
//! it lists the Ongoing transactions under the job's prefix (ListTransactions at every broker,
//! then DescribeTransactions) and keeps those that began before the attempt was submitted: no
//! transaction of the restored attempt can have. They go into the history as a
//! [`Look::Lingering`](sinkhole_history::observation::Look) observation, which the checker counts
//! as `lingering`; each is then watched until it ends, and the history notes how long it stayed
//! open and how it ended.
use std::collections::BTreeMap;
use std::time::Duration;

use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_client::wire::describe_transactions::TxnDescription;

use sinkhole_history::fault::TxnView;

/// Checkpoints a restored attempt completes before the look.
pub const AFTER_CHECKPOINTS: u64 = 3;

/// How long one look (or one watch round) may take before it is given up.
pub const LOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// A transaction found open under the job's prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub view: TxnView,
    /// The coordinator's start time of the transaction (unix ms).
    pub start_time_ms: i64,
}

/// What one look found.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    /// Ongoing under the prefix, in all.
    pub ongoing: usize,
    /// Of those, begun before the restored attempt was submitted.
    pub lingering: Vec<Found>,
}

/// The committables of the restored checkpoint, by transactional id: (producer id, epoch).
pub type Precommitted = BTreeMap<String, (i64, i16)>;

/// Whether `f` is a newer transaction under an id the restored checkpoint holds precommitted
/// (a newer epoch or another producer id than the committable's): the transaction the LISTING
/// abort skips, as FLINK-40626 describes.
pub fn superseded(f: &Found, precommitted: &Precommitted) -> Option<(i64, i16)> {
    let &(pid, epoch) = precommitted.get(&f.view.transactional_id)?;
    (f.view.producer_id != pid || f.view.producer_epoch > epoch).then_some((pid, epoch))
}

fn view(d: &TxnDescription) -> TxnView {
    TxnView {
        transactional_id: d.transactional_id.clone(),
        state: d.state.clone(),
        producer_id: d.producer_id,
        producer_epoch: d.producer_epoch,
        timeout_ms: d.timeout_ms,
        error: d.error.as_ref().map(|e| e.to_string()),
    }
}

/// Keeps the Ongoing descriptions begun before `before_ms`.
pub fn begun_before(described: &[TxnDescription], before_ms: i64) -> Look {
    let ongoing: Vec<&TxnDescription> =
        described.iter().filter(|d| d.error.is_none() && d.state == "Ongoing").collect();
    let lingering = ongoing
        .iter()
        .filter(|d| d.start_time_ms >= 0 && d.start_time_ms < before_ms)
        .map(|d| Found { view: view(d), start_time_ms: d.start_time_ms })
        .collect();
    Look { ongoing: ongoing.len(), lingering }
}

/// The Ongoing transactions under `{prefix}-` at every coordinator, and which began before
/// `before_ms` (unix ms).
pub async fn look(bootstrap: &[String], prefix: &str, before_ms: i64) -> Result<Look, String> {
    let run = async {
        let mut c = Client::connect(bootstrap, ClientConfig::default()).await.map_err(|e| e.to_string())?;
        let listed = c.list_transactions(&["Ongoing".to_string()], &[]).await.map_err(|e| e.to_string())?;
        let mine = format!("{prefix}-");
        let ids: Vec<String> =
            listed.into_iter().map(|l| l.transactional_id).filter(|t| t.starts_with(&mine)).collect();
        if ids.is_empty() {
            return Ok(Look { ongoing: 0, lingering: vec![] });
        }
        let d = c.describe_transactions(&ids).await.map_err(|e| e.to_string())?;
        Ok(begun_before(&d, before_ms))
    };
    tokio::time::timeout(LOOK_TIMEOUT, run).await.unwrap_or_else(|_| Err(format!("no answer within {LOOK_TIMEOUT:?}")))
}

/// What the coordinators say of `ids` now.
pub async fn describe(bootstrap: &[String], ids: &[String]) -> Result<Vec<TxnDescription>, String> {
    let run = async {
        let mut c = Client::connect(bootstrap, ClientConfig::default()).await.map_err(|e| e.to_string())?;
        c.describe_transactions(ids).await.map_err(|e| e.to_string())
    };
    tokio::time::timeout(LOOK_TIMEOUT, run).await.unwrap_or_else(|_| Err(format!("no answer within {LOOK_TIMEOUT:?}")))
}

/// Whether a watched transaction (`f`, as found) has ended, given what its coordinator says
/// now: no longer Ongoing, or Ongoing as another transaction (a newer epoch or start time:
/// the id was reopened, which aborted the one watched).
pub fn ended(f: &Found, now: &TxnDescription) -> bool {
    now.error.is_some()
        || now.state != "Ongoing"
        || now.producer_id != f.view.producer_id
        || now.producer_epoch != f.view.producer_epoch
        || now.start_time_ms != f.start_time_ms
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(tid: &str, state: &str, epoch: i16, start: i64) -> TxnDescription {
        TxnDescription {
            transactional_id: tid.into(),
            error: None,
            state: state.into(),
            timeout_ms: 15000,
            start_time_ms: start,
            producer_id: 7,
            producer_epoch: epoch,
            partitions: vec![],
            coordinator: 1,
        }
    }

    #[test]
    fn only_ongoing_transactions_begun_before_the_submission_linger() {
        let all = [
            d("p-1-0", "Ongoing", 5, 1_000),    // the earlier attempt's: lingering
            d("p-0-0", "Ongoing", 9, 5_000),    // the restored attempt's own
            d("p-1-1", "CompleteAbort", 3, -1), // ended
        ];
        let l = begun_before(&all, 4_000);
        assert_eq!(l.ongoing, 2);
        assert_eq!(l.lingering.len(), 1);
        assert_eq!(l.lingering[0].view.transactional_id, "p-1-0");
        assert_eq!(l.lingering[0].start_time_ms, 1_000);
    }

    #[test]
    fn superseded_is_a_newer_transaction_under_a_precommitted_id() {
        let f = begun_before(&[d("p-1-0", "Ongoing", 5, 1_000)], 4_000).lingering.remove(0);
        let mut pre = Precommitted::new();
        assert_eq!(superseded(&f, &pre), None, "not precommitted: the LISTING abort's to abort");
        pre.insert("p-1-0".into(), (7, 5));
        assert_eq!(superseded(&f, &pre), None, "the committable's own transaction");
        pre.insert("p-1-0".into(), (7, 4));
        assert_eq!(superseded(&f, &pre), Some((7, 4)));
        pre.insert("p-1-0".into(), (3, 9));
        assert_eq!(superseded(&f, &pre), Some((3, 9)), "another producer id");
    }

    #[test]
    fn a_watched_transaction_ends_when_aborted_or_reopened() {
        let f = begun_before(&[d("p-1-0", "Ongoing", 5, 1_000)], 4_000).lingering.remove(0);
        assert!(!ended(&f, &d("p-1-0", "Ongoing", 5, 1_000)));
        assert!(ended(&f, &d("p-1-0", "PrepareAbort", 5, 1_000)));
        assert!(ended(&f, &d("p-1-0", "CompleteAbort", 6, -1)));
        assert!(ended(&f, &d("p-1-0", "Ongoing", 6, 9_000)), "reopened: the one watched was aborted");
    }
}
