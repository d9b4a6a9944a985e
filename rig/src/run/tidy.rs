//! The transactions a run left open, aborted once its verdict is written, when
//! its cluster outlives it (a matrix's warm cluster, an external one).
//!
//! A mode's job can end with transactions open: a restore the broker refused
//! (kip939's KeepPreparedTxn, answered UNSUPPORTED_VERSION by every release),
//! a job that failed for good, a sink that lost track of one. The broker aborts
//! a plain one after its timeout; one opened with Enable2Pc (KIP-939) is exempt
//! from the timeout and stays open until someone ends it, holding back the last
//! stable offset of its partitions and its entry in `__transaction_state`. On
//! an external cluster that is litter left for its owners; on a matrix's warm
//! cluster it made the next cell start a fresh one (the health check in
//! [`super::reuse`] finds it open).
//!
//! Ended the way Kafka's admin tool would fence a producer: an InitProducerId
//! under the transactional id, which makes its coordinator abort what is open
//! and bump the epoch (`TransactionCoordinator.handleInitProducerId`, whose
//! Ongoing branch fences and aborts, with or without Enable2Pc). Only the run's
//! own ids are touched: each mode's prefix carries the run's short id.
use std::time::Duration;

use sinkhole_client::wire::client::{Client, ClientConfig};
use sinkhole_client::wire::InitProducerIdParams;

/// What [`abort_left_open`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tidied {
    /// The run's transactional ids whose open transaction was aborted.
    pub aborted: Vec<String>,
    /// Ids it could not end, with the broker's answer: the next run's health check says so too.
    pub failed: Vec<(String, String)>,
}

impl Tidied {
    /// One progress line, or None when the run left nothing open.
    pub fn line(&self) -> Option<String> {
        if self.aborted.is_empty() && self.failed.is_empty() {
            return None;
        }
        let mut s = format!(
            "aborted {} transaction(s) the run left open (e.g. {})",
            self.aborted.len(),
            self.aborted.first().map(String::as_str).unwrap_or("-")
        );
        if let Some((tid, why)) = self.failed.first() {
            s.push_str(&format!("; {} not ended, e.g. {tid}: {why}", self.failed.len()));
        }
        Some(s)
    }
}

/// The ids among `listed` that belong to the run: those under one of its modes' prefixes
/// (the checker's rule, [`sinkhole_checker::open_txn::is_own`]).
pub fn own<'a>(listed: &'a [String], prefixes: &[String]) -> Vec<&'a String> {
    listed.iter().filter(|t| prefixes.iter().any(|p| sinkhole_checker::open_txn::is_own(t, p))).collect()
}

/// Aborts every Ongoing transaction under `prefixes` at `bootstrap`. A cluster that
/// does not answer leaves the list empty: tidying never fails a run.
pub async fn abort_left_open(bootstrap: &[String], prefixes: &[String], timeout_ms: i32) -> Tidied {
    let mut out = Tidied::default();
    let cfg = ClientConfig {
        client_id: "sinkhole-tidy".into(),
        retry_deadline: Duration::from_secs(15),
        ..ClientConfig::default()
    };
    let Ok(mut client) = Client::connect(bootstrap, cfg).await else { return out };
    let Ok(listed) = client.list_transactions(&["Ongoing".to_string()], &[]).await else { return out };
    let ids: Vec<String> = listed.into_iter().map(|t| t.transactional_id).collect();
    for tid in own(&ids, prefixes) {
        let params = InitProducerIdParams {
            transactional_id: Some(tid.clone()),
            transaction_timeout_ms: timeout_ms,
            ..InitProducerIdParams::default()
        };
        match client.init_producer_id(&params, None).await {
            Ok(_) => out.aborted.push(tid.clone()),
            Err(e) => out.failed.push((tid.clone(), e.to_string())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_runs_own_ids_are_touched() {
        let listed: Vec<String> = [
            "sinkhole-1187560f-kip939-1-4",
            "sinkhole-1187560f-legacy-0-3",
            "sinkhole-1187560f-kip9390-0-1",
            "sinkhole-99999999-kip939-0-1",
            "someone-elses",
        ]
        .map(String::from)
        .to_vec();
        let prefixes = ["sinkhole-1187560f-kip939".to_string(), "sinkhole-1187560f-legacy".to_string()];
        let got: Vec<&str> = own(&listed, &prefixes).into_iter().map(String::as_str).collect();
        assert_eq!(got, ["sinkhole-1187560f-kip939-1-4", "sinkhole-1187560f-legacy-0-3"]);
    }

    #[test]
    fn the_line_says_what_was_aborted_and_what_was_not() {
        assert_eq!(Tidied::default().line(), None);
        let t = Tidied {
            aborted: vec!["a-0-1".into(), "a-1-1".into()],
            failed: vec![("a-0-2".into(), "timed out".into())],
        };
        assert_eq!(
            t.line().unwrap(),
            "aborted 2 transaction(s) the run left open (e.g. a-0-1); 1 not ended, e.g. a-0-2: timed out"
        );
    }
}
