//! The checker: what the output topic holds, against what the source wrote.
//!
//! Two halves, kept apart so the counting can be re-run offline and tested on
//! synthetic inputs:
//! - I/O ([`drain`], [`store`]; the history through [`sinkhole_history`]):
//!   read the output topic with `read_committed` up to the high-water marks,
//!   save the records, read the run's history;
//! - pure ([`check`], [`count`]): count committed, lost, duplicated,
//!   unexpected, nonmonotonic, aborted-read and torn-transaction records and
//!   attribute them to the transactions the history recorded.
//!
//! Jepsen's shape: the checker never talks to the system under test while it
//! runs; it reads what the run left behind (the topic and `history.jsonl`).
//!
//! The crate's own layers, bottom first (`scripts/shape.py` holds them): the vocabulary
//! ([`report`]: records, a mode's report, the counts and examples of the model's anomaly
//! table; [`error`]), the history's transactions ([`txns`], built by [`indexing`]), the
//! brokers' answers on what is left open and whose doing it is ([`open_txn`], [`hanging`]),
//! the protocol states a run reached ([`reached`]), the counting ([`count`]) and the I/O
//! ([`drain`], [`store`]), the check that puts them together ([`check`]), the offline re-check
//! and the benchmark, then what judges the counts: [`latency`], [`premise`], [`verdict`].
//! This root only declares and re-exports.
#[cfg(test)]
mod anomaly_tests;
pub mod bench;
#[cfg(test)]
mod calibration;
pub mod check;
pub mod count;
pub mod drain;
pub mod error;
pub mod hanging;
pub mod indexing;
pub mod latency;
pub mod lingering;
pub mod offline;
pub mod open_txn;
pub mod premise;
pub mod reached;
pub mod reads;
pub mod report;
pub mod share;
pub mod store;
#[cfg(test)]
mod tests;
pub mod txns;
pub mod verdict;

pub use check::{check, check_mode, check_mode_keeping_history, recheck, recheck_with, CheckSpec};
pub use error::CheckerError;
pub use report::{
    CheckReport, Counts, Drain, DrainedRecord, EndLook, EndTxn, Example, Examples, Expected, OpenTxn, PartitionDrain,
    UncommittedTail, MAX_EXAMPLES,
};
pub use txns::{
    describe_outcome, seq_range, subtask_of_tid, AbortedTxn, Candidate, HistoryIndex, TidHistory, TxnInfo, TxnStatus,
};
