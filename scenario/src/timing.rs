//! The run's derived timeouts, resolved once from the scenario and the broker settings it
//! implies, then carried to whoever waits: the observer and the nemesis (when to look at the
//! broker's transactions after their timeout), validation (whether a pause lasts past that
//! look), the drain (how long to wait for a transaction the broker must abort).
//!
//! Why one type: these were derived in five places with four formulas, and a rig that looks at
//! a transaction before the broker's abort scan has run judges a premise on a view the broker
//! has not finished with (docs/PROTOCOL.md §3.1).
//!
//! The broker side mirrors Kafka's `TransactionCoordinator`: a task runs every
//! `transaction.abort.timed.out.transaction.cleanup.interval.ms` and aborts every Ongoing
//! transaction whose start plus its `transaction.timeout.ms` lies in the past
//! (`TransactionStateManager.timedOutTransactions`). A transaction that started at `t0` is
//! therefore aborted by `t0 + timeout + one scan`, and its markers are written a moment later.
use std::time::Duration;

use crate::{ConfigValue, Scenario};

/// The broker setting that says how often the coordinator looks for timed-out transactions.
pub const ABORT_SCAN_KEY: &str = "transaction.abort.timed.out.transaction.cleanup.interval.ms";

/// Kafka's default [`ABORT_SCAN_KEY`] (`TransactionStateManagerConfig`).
pub const DEFAULT_ABORT_SCAN_MS: u64 = 10_000;

/// After the timeout and one scan, before the broker's view is taken: the abort itself
/// (PrepareAbort, the markers) takes a moment.
pub const LOOK_MARGIN_MS: u64 = 1_000;

/// The drain's wait beyond the timeout and two scans (the markers, the read to the end).
const DRAIN_MARGIN_MS: u64 = 5_000;

/// The drain never waits less than this for partitions to reach their end.
const DRAIN_FLOOR_MS: u64 = 15_000;

/// The run's derived timeouts. Made only by [`Timing::of`] or [`Timing::new`], so the derived
/// values always agree with the settings they come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    transaction_timeout_ms: u64,
    abort_scan_ms: u64,
    abort_scan_set: bool,
}

impl Timing {
    /// From the scenario: its job's `transaction_timeout_ms` and its broker config's abort scan
    /// (Kafka's default when the scenario does not set it, or sets it to something that is not
    /// a number of milliseconds).
    pub fn of(s: &Scenario) -> Timing {
        let scan = s.cluster.broker_config.get(ABORT_SCAN_KEY).and_then(scan_ms);
        Timing::new(s.job.transaction_timeout_ms, scan)
    }

    /// From the producer's `transaction.timeout.ms` and the broker's abort scan, if set.
    pub fn new(transaction_timeout_ms: i32, abort_scan_ms: Option<u64>) -> Timing {
        Timing {
            transaction_timeout_ms: u64::try_from(transaction_timeout_ms).unwrap_or(0),
            abort_scan_ms: abort_scan_ms.unwrap_or(DEFAULT_ABORT_SCAN_MS),
            abort_scan_set: abort_scan_ms.is_some(),
        }
    }

    /// The producer's `transaction.timeout.ms`.
    pub fn transaction_timeout_ms(&self) -> u64 {
        self.transaction_timeout_ms
    }

    /// How often the broker aborts timed-out transactions.
    pub fn abort_scan_ms(&self) -> u64 {
        self.abort_scan_ms
    }

    /// The abort scan is the scenario's, not Kafka's default.
    pub fn abort_scan_set(&self) -> bool {
        self.abort_scan_set
    }

    /// From a moment the transactions were already open (a checkpoint persisted, a pause
    /// began) to the rig's look at them: by then a broker that aborts them on timeout has done
    /// so — the timeout, one abort scan, [`LOOK_MARGIN_MS`].
    pub fn look_after_ms(&self) -> u64 {
        self.transaction_timeout_ms.saturating_add(self.abort_scan_ms).saturating_add(LOOK_MARGIN_MS)
    }

    pub fn look_after(&self) -> Duration {
        Duration::from_millis(self.look_after_ms())
    }

    /// How long the drain waits for partitions to reach their end: long enough for the broker
    /// to abort a transaction a crash left open (its timeout, then up to two abort scans, a
    /// margin), and never less than 15 s.
    pub fn drain_timeout_ms(&self) -> u64 {
        self.transaction_timeout_ms
            .saturating_add(self.abort_scan_ms.saturating_mul(2))
            .saturating_add(DRAIN_MARGIN_MS)
            .max(DRAIN_FLOOR_MS)
    }

    pub fn drain_timeout(&self) -> Duration {
        Duration::from_millis(self.drain_timeout_ms())
    }

    /// The look, in words, for messages: "5000 ms (the transaction timeout 3500 ms + one
    /// abort scan 500 ms + 1000 ms)".
    pub fn look_after_text(&self) -> String {
        let default = if self.abort_scan_set { "" } else { ", Kafka's default" };
        format!(
            "{} ms (the transaction timeout {} ms + one abort scan {} ms{default} + {LOOK_MARGIN_MS} ms)",
            self.look_after_ms(),
            self.transaction_timeout_ms,
            self.abort_scan_ms
        )
    }
}

/// A scan interval as the broker config gives it: a number of milliseconds, or a string of one.
fn scan_ms(v: &ConfigValue) -> Option<u64> {
    v.to_string().trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(broker_config: &str) -> Scenario {
        crate::from_str(
            &format!(
                "name: t\ncluster: {{brokers: 1{broker_config}}}\ntopic: {{partitions: 1}}\n\
                 job: {{parallelism: 1, records_per_subtask: 10, checkpoint_interval_ms: 100, transaction_timeout_ms: 5000}}\n\
                 modes: [legacy]\n"
            ),
            "t.yaml",
        )
        .unwrap()
    }

    #[test]
    fn with_the_abort_scan_set_the_look_is_past_the_timeout_and_one_scan() {
        let t = Timing::of(&scenario(&format!(", broker_config: {{{ABORT_SCAN_KEY}: 500}}")));
        assert_eq!((t.transaction_timeout_ms(), t.abort_scan_ms(), t.abort_scan_set()), (5_000, 500, true));
        assert_eq!(t.look_after_ms(), 6_500);
        assert_eq!(t.look_after(), Duration::from_millis(6_500));
        // 5000 + 2 × 500 + 5000 is under the floor.
        assert_eq!(t.drain_timeout(), Duration::from_millis(15_000));
        assert_eq!(t.look_after_text(), "6500 ms (the transaction timeout 5000 ms + one abort scan 500 ms + 1000 ms)");
        // A string of a number, as a YAML value may be quoted.
        let quoted = Timing::of(&scenario(&format!(", broker_config: {{{ABORT_SCAN_KEY}: \" 200 \"}}")));
        assert_eq!((quoted.abort_scan_ms(), quoted.look_after_ms()), (200, 6_200));
    }

    #[test]
    fn without_it_kafkas_default_scan_counts() {
        let t = Timing::of(&scenario(""));
        assert_eq!((t.abort_scan_ms(), t.abort_scan_set()), (DEFAULT_ABORT_SCAN_MS, false));
        assert_eq!(t.look_after_ms(), 5_000 + 10_000 + 1_000);
        assert_eq!(t.drain_timeout_ms(), 5_000 + 2 * 10_000 + 5_000);
        assert!(t.look_after_text().contains("one abort scan 10000 ms, Kafka's default"), "{}", t.look_after_text());
        assert_eq!(Timing::new(5_000, None), t);
    }

    #[test]
    fn a_long_timeout_lifts_the_drain_above_its_floor() {
        let t = Timing::new(60_000, Some(500));
        assert_eq!(t.look_after_ms(), 61_500);
        assert_eq!(t.drain_timeout_ms(), 66_000);
        // A timeout the validation refuses derives no negative wait.
        assert_eq!(Timing::new(-1, Some(500)).look_after_ms(), 1_500);
    }
}
