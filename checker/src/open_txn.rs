//! What holds an uncommitted tail open: for each partition whose
//! read_committed drain stopped below the high-water mark, the producer
//! whose open transaction starts at the stuck offset (DescribeProducers at
//! the partition's leader) and what its coordinator says of that producer's
//! transactional id (ListTransactions filtered by producer id). The same two
//! steps as Kafka's `kafka-transactions.sh find-hanging`
//! (`TransactionsCommand.FindHangingTransactionsCommand`).
//!
//! A transaction open in a partition while its coordinator has it in
//! another state than Ongoing or Prepare* is *hanging*: the coordinator
//! finished it, the partition never got its marker, and the partition's last
//! stable offset stays where it is until someone aborts it by hand. One way
//! a broker gets there, measured with this rig on Kafka 4.4.0: a graceful
//! restart of a single broker while a commit is under way. During its
//! controlled shutdown the partitions have no leader; the coordinator, still
//! serving, finds no leader to send the COMMIT markers to, takes the
//! partitions for deleted, skips them and writes CompleteCommit
//! (`TransactionMarkerChannelManager.addTxnMarkersToBrokerQueue`, "these
//! partitions are likely deleted already and hence can be skipped"; the
//! skip dates from KAFKA-5202). That is the broker's doing, not the sink's:
//! the producer's EndTxn was answered with success.
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sinkhole_client::wire::client::{Client, ClientConfig};

use super::UncommittedTail;
use crate::report::{EndLook, EndTxn};

pub use crate::report::{is_hanging, OpenTxn};

/// The states of a transaction its coordinator has not finished.
const UNFINISHED: [&str; 3] = ["Ongoing", "PrepareCommit", "PrepareAbort"];

/// How long a transaction in PrepareCommit or PrepareAbort is given to finish before the look
/// keeps it as it is: its markers are normally written within milliseconds of the EndTxn.
const SETTLE: Duration = Duration::from_secs(5);

/// Whether `tid` is one of the ids under `prefix` (`sinkhole-<short run id>-<mode slug>`): the
/// prefix, then `-<subtask>` and, for the ids of Flink's naming, `-<checkpoint>` or `-<index>`.
/// A mode's slug may be the start of another's (`legacy` of `legacy-restore-off-by-one`), so
/// the rest must be numbers.
pub fn is_own(tid: &str, prefix: &str) -> bool {
    tid.strip_prefix(prefix)
        .and_then(|r| r.strip_prefix('-'))
        .is_some_and(|r| !r.is_empty() && r.split('-').all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
}

/// The mode's transactions that their coordinators have not finished, once the job has ended
/// and every fault has healed: ListTransactions of every broker (each lists the ids it
/// coordinates), the ids under `prefix`, then DescribeTransactions for their partitions and
/// age. One in PrepareCommit or PrepareAbort is looked at again for up to [`SETTLE`]: its
/// markers may be on their way. Kafka's `kafka-transactions.sh list` and `describe` do the
/// same two steps (`TransactionsCommand`).
pub async fn look_at_end(bootstrap: &[String], topic: &str, prefix: &str) -> EndLook {
    let cfg = ClientConfig {
        client_id: "sinkhole-checker".into(),
        retry_deadline: Duration::from_secs(15),
        ..ClientConfig::default()
    };
    let mut client = match Client::connect(bootstrap, cfg).await {
        Ok(c) => c,
        Err(e) => return EndLook { taken: false, transactions: vec![], error: Some(e.to_string()) },
    };
    let states: Vec<String> = UNFINISHED.iter().map(|s| s.to_string()).collect();
    let deadline = tokio::time::Instant::now() + SETTLE;
    loop {
        let listed = match client.list_transactions(&states, &[]).await {
            Ok(l) => l,
            Err(e) => return EndLook { taken: false, transactions: vec![], error: Some(e.to_string()) },
        };
        let ids: Vec<String> = listed.into_iter().map(|t| t.transactional_id).filter(|t| is_own(t, prefix)).collect();
        let described = match client.describe_transactions(&ids).await {
            Ok(d) => d,
            Err(e) => return EndLook { taken: true, transactions: vec![], error: Some(e.to_string()) },
        };
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
        let transactions: Vec<EndTxn> = described
            .into_iter()
            .filter(|d| d.error.is_none() && UNFINISHED.contains(&d.state.as_str()))
            .map(|d| EndTxn {
                open_ms: if d.start_time_ms > 0 { now_ms - d.start_time_ms } else { -1 },
                partitions: d.partitions.iter().filter(|(t, _)| t == topic).map(|(_, p)| *p).collect(),
                transactional_id: d.transactional_id,
                state: d.state,
                producer_id: d.producer_id,
                producer_epoch: d.producer_epoch,
                coordinator: d.coordinator,
            })
            .collect();
        let settling = transactions.iter().any(|t| t.state != "Ongoing");
        if !settling || tokio::time::Instant::now() >= deadline {
            return EndLook { taken: true, transactions, error: None };
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Fills `open` for every tail in `tails`; a question the broker does not
/// answer leaves the tail as it was (the drain's finding stands).
pub async fn explain(bootstrap: &[String], topic: &str, tails: &mut [UncommittedTail]) {
    if tails.is_empty() {
        return;
    }
    let Ok(mut client) = Client::connect(bootstrap, ClientConfig::default()).await else { return };
    for t in tails.iter_mut() {
        let Ok(p) = client.describe_producers(topic, t.partition).await else { continue };
        // The stuck offset is the partition's first unstable offset: the
        // start of the oldest open transaction.
        let holders: Vec<_> = p.producers.iter().filter(|a| a.txn_start_offset == Some(t.position)).collect();
        for a in holders {
            let mut o = OpenTxn {
                producer_id: a.producer_id,
                producer_epoch: a.producer_epoch,
                txn_start_offset: t.position,
                transactional_id: None,
                coordinator_state: None,
                hanging: false,
                error: None,
            };
            match client.list_transactions(&[], &[a.producer_id]).await {
                Ok(l) => {
                    if let Some(x) = l.into_iter().find(|x| x.producer_id == a.producer_id) {
                        o.transactional_id = Some(x.transactional_id);
                        o.coordinator_state = Some(x.state);
                    }
                }
                Err(e) => o.error = Some(e.to_string()),
            }
            o.hanging = o.error.is_none() && is_hanging(o.coordinator_state.as_deref());
            t.open.push(o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_ids_are_the_prefix_then_numbers() {
        let p = "sinkhole-1187560f-legacy";
        for tid in ["sinkhole-1187560f-legacy-0-3", "sinkhole-1187560f-legacy-1", "sinkhole-1187560f-legacy-12-140"] {
            assert!(is_own(tid, p), "{tid}");
        }
        for tid in [
            "sinkhole-1187560f-legacy-restore-off-by-one-0-3",
            "sinkhole-1187560f-legacy0-1",
            "sinkhole-1187560f-legacy-",
            "sinkhole-1187560f-legacy-0--1",
            "sinkhole-99999999-legacy-0-1",
            "sinkhole-1187560f-legacy",
        ] {
            assert!(!is_own(tid, p), "{tid}");
        }
    }

    #[test]
    fn only_a_transaction_its_coordinator_still_runs_is_not_hanging() {
        for s in ["Ongoing", "PrepareCommit", "PrepareAbort"] {
            assert!(!is_hanging(Some(s)), "{s}");
        }
        for s in [Some("CompleteCommit"), Some("CompleteAbort"), Some("Empty"), None] {
            assert!(is_hanging(s), "{s:?}");
        }
    }

    #[test]
    fn the_reason_names_the_transaction_and_whose_doing_it_is() {
        let mut o = OpenTxn {
            producer_id: 6,
            producer_epoch: 0,
            txn_start_offset: 518,
            transactional_id: Some("p-0-3".into()),
            coordinator_state: Some("CompleteCommit".into()),
            hanging: true,
            error: None,
        };
        let s = o.describe();
        assert!(s.contains("p-0-3 (producer 6, epoch 0) from offset 518") && s.contains("CompleteCommit"), "{s}");
        assert!(s.contains("hanging transaction") && s.contains("not the sink's"), "{s}");
        (o.coordinator_state, o.hanging) = (Some("Ongoing".into()), false);
        assert!(o.describe().ends_with("still Ongoing at its coordinator"), "{}", o.describe());
    }
}
