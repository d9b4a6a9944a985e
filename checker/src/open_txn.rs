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
use sinkhole_client::wire::client::{Client, ClientConfig};

use super::UncommittedTail;

pub use crate::report::{is_hanging, OpenTxn};

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
