//! `shape:` the job's shape as an exploration draws it: swarm testing (Groce, Zhang, Eide, Chen
//! and Regehr, "Swarm Testing", ISSTA 2012).
//!
//! ```yaml
//! shape:
//!   parallelism: [1, 3]
//!   max_concurrent_checkpoints: [1, 3]
//!   checkpoint_interval_ms: [200, 1500]
//!   transaction_timeout_ms: [45000, 60000]
//!   records_per_subtask: [6000, 30000]
//!   rate_per_subtask: [1000, 3000]
//!   transactions: [v1, v2]              # the rig's producer: force_transactions_v1 or not
//!   naming: [INCREMENTING, POOLING]     # flink-kafkasink only
//! ```
//!
//! Why: `sinkhole explore` draws a run's faults from its seed, but the job is one point of its
//! space. With one checkpoint at a time a restore never meets several pending committables, and
//! a sink bug that only shows then is never found however many fault schedules are drawn. So
//! each exploration run draws its job too, within [`Bounds`]: the scenario's `shape:` where it
//! names a field, else a default derived from the scenario ([`Bounds::of`]); every exploration
//! swarms. `sinkhole run` runs the scenario's own `job:`; the section is for exploration only.
//!
//! The hard constraint: a faithful sink must come through clean under any drawn shape, so a
//! finding is a bug and not a job the sink was never meant to survive. A one-phase sink (one
//! whose transactions the broker aborts at their timeout: `legacy`, Flink's KafkaSink, …) loses
//! records by design when the job stalls past its transaction timeout, so a drawn timeout stays
//! above the longest stall the exploration's faults can cause with the drawn interval and
//! concurrency ([`Floor`]); the faults are drawn from the shaped scenario, so their window
//! follows the drawn job's length ([`Shape::apply`] scales a `schedule:` window with it).
//!
//! A drawn point is a [`Shape`]: it reads off a scenario ([`Shape::of`]), writes into one
//! ([`Shape::apply`]), prints compactly (`p2 cc3 ci400 tt60000 r12000@2000 V2`), and is what a
//! shrink moves toward the scenario's own values field by field ([`FIELDS`], [`Shape::take`]).
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use sinkhole_model::SinkMode;

use crate::expect_by::{self, Protocol};
use crate::flink::Naming;
use crate::schedule::UNANSWERED_REQUEST_MS;
use crate::Scenario;

/// The section as written: per field, the bounds a draw takes it from (`[min, max]`, or the
/// choices). A field left out takes its default ([`Bounds::of`]); `[v, v]` pins it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<[u32; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_checkpoints: Option<[u32; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_interval_ms: Option<[u64; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_timeout_ms: Option<[i32; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_per_subtask: Option<[u64; 2]>,
    /// Records per second per subtask; `[0, 0]` keeps a job unthrottled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_subtask: Option<[u64; 2]>,
    /// `v1`: the rig's producer forced to Transactions V1 (`job.force_transactions_v1`); `v2`: not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<Vec<Protocol>>,
    /// `flink.naming` of the `flink-kafkasink` mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub naming: Option<Vec<Naming>>,
}

/// Each field of a shape, once: its name (the section's key and [`Shape`]'s field), its value as
/// a shrink's step names it, and how to take it from another shape. In the order a draw takes
/// them and a shrink tries them.
type Field = (&'static str, fn(&Shape) -> String, fn(&mut Shape, &Shape));

const TABLE: [Field; 8] = [
    ("parallelism", |s| s.parallelism.to_string(), |s, o| s.parallelism = o.parallelism),
    (
        "max_concurrent_checkpoints",
        |s| s.max_concurrent_checkpoints.to_string(),
        |s, o| s.max_concurrent_checkpoints = o.max_concurrent_checkpoints,
    ),
    (
        "checkpoint_interval_ms",
        |s| s.checkpoint_interval_ms.to_string(),
        |s, o| s.checkpoint_interval_ms = o.checkpoint_interval_ms,
    ),
    ("rate_per_subtask", |s| s.rate_per_subtask.to_string(), |s, o| s.rate_per_subtask = o.rate_per_subtask),
    (
        "records_per_subtask",
        |s| s.records_per_subtask.to_string(),
        |s, o| s.records_per_subtask = o.records_per_subtask,
    ),
    (
        "transaction_timeout_ms",
        |s| s.transaction_timeout_ms.to_string(),
        |s, o| s.transaction_timeout_ms = o.transaction_timeout_ms,
    ),
    ("transactions", |s| format!("{:?}", s.transactions), |s, o| s.transactions = o.transactions),
    ("naming", |s| s.naming.map_or("-", Naming::name).to_string(), |s, o| s.naming = o.naming),
];

/// The fields' names, in [`TABLE`]'s order.
pub const FIELDS: [&str; 8] = {
    let mut names = [""; 8];
    let mut i = 0;
    while i < names.len() {
        names[i] = TABLE[i].0;
        i += 1;
    }
    names
};

/// The default parallelism goes up to the topic's partitions, at most this.
pub const DEFAULT_MAX_PARALLELISM: u32 = 3;
/// The default `max_concurrent_checkpoints` (the scenario's own maximum when it is higher).
pub const DEFAULT_CONCURRENCY: [u32; 2] = [1, 3];
/// Without a `records_per_subtask` bound, records are drawn so the job lasts this long at the
/// drawn rate, ms: long enough for several faults, short enough for many runs an hour.
pub const DEFAULT_JOB_MS: [u64; 2] = [8_000, 40_000];
/// The shortest job a shape may draw, in checkpoint intervals (the longest): explore's faults
/// fall from two intervals in to four fifths of the job, so fewer leaves next to no window.
pub const MIN_JOB_INTERVALS: u64 = 5;
/// A broker killed or stopped by a fault, from its start again until it serves its
/// transactions: the allowance exploration keeps between broker faults (15 s).
pub const BROKER_BACK_MS: u64 = 15_000;
/// After a fault's stall, until a faithful sink has committed what it held: the restore
/// (workers started, InitProducerId, the restored commits) or the producer's retries.
pub const SETTLE_MS: u64 = 10_000;
/// The same for the Flink subject, whose restore restarts tasks on a Flink cluster.
pub const FLINK_SETTLE_MS: u64 = 20_000;

/// A transaction timeout's floor under a drawn interval and concurrency: what a faithful sink's
/// transaction must outlive between its first record and its commit.
///
/// A transaction of checkpoint n is opened when n−1 is taken and committed once n is complete
/// and notified: up to `concurrency + 1` intervals with checkpoints pending. A fault adds its
/// stall, the longest of: a worker's (the fault or the heartbeat timeout, then the restart
/// delay and the restore), a broker's (the fault, then [`BROKER_BACK_MS`]), a notification's
/// (the fault, then the next checkpoint), and, with the proxy, a dropped request's (its
/// client's request timeout, [`UNANSWERED_REQUEST_MS`], after a rule that lasts at least two
/// intervals). Then [`SETTLE_MS`] for the commit itself. Faults come one at a time (the random
/// schedule's quiet periods), so one stall counts.
///
/// When every mode opens its transactions with Enable2Pc (twopc-inject, kip939 and their
/// mutants), KIP-939's coordinator never times them out: only the checkpoints and the settle
/// count, and exploration may draw outages past the timeout on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Floor {
    /// A mode whose transactions the broker aborts at their timeout is among the scenario's.
    pub one_phase: bool,
    /// The longest fault exploration draws, ms (the schedule's `duration_ms` maximum).
    pub fault_ms: u64,
    /// A worker fault's stall until the restore: the fault or the heartbeat timeout, then the
    /// restart delay.
    pub worker_ms: u64,
    /// The cluster has the proxy, so protocol faults (a dropped request) are drawn.
    pub proxy: bool,
    pub settle_ms: u64,
}

impl Floor {
    pub fn of(s: &Scenario) -> Floor {
        let enable_2pc = |m: &SinkMode| matches!(m.base(), SinkMode::TwopcInject | SinkMode::Kip939);
        let fault_ms = s.schedule.as_ref().map(|r| r.duration_ms).unwrap_or_else(crate::default_fault_duration);
        let fault_ms = fault_ms[0].max(fault_ms[1]);
        let j = &s.job;
        let flink = s.modes.contains(&SinkMode::FlinkKafkasink);
        Floor {
            one_phase: !s.modes.iter().all(enable_2pc),
            fault_ms,
            worker_ms: fault_ms.max(j.heartbeat_timeout_ms).max(1_000).saturating_add(j.restart_delay_ms),
            proxy: s.cluster.proxy != Some(false),
            settle_ms: if flink { FLINK_SETTLE_MS } else { SETTLE_MS },
        }
    }

    /// The floor, ms.
    pub fn ms(&self, interval: u64, concurrency: u32) -> u64 {
        let checkpoints = (u64::from(concurrency) + 1).saturating_mul(interval);
        let stall = if self.one_phase {
            let dropped = if self.proxy { UNANSWERED_REQUEST_MS + self.fault_ms.max(2 * interval) } else { 0 };
            [self.worker_ms, self.fault_ms + BROKER_BACK_MS, self.fault_ms + interval, dropped]
                .into_iter()
                .max()
                .unwrap_or(0)
        } else {
            0
        };
        checkpoints.saturating_add(stall).saturating_add(self.settle_ms)
    }

    /// The floor in words: "52000 ms (4 × 2000 ms of checkpoints + a 34000 ms stall + 10000 ms)".
    pub fn text(&self, interval: u64, concurrency: u32) -> String {
        let checkpoints = (u64::from(concurrency) + 1).saturating_mul(interval);
        let all = self.ms(interval, concurrency);
        let stall = all - checkpoints - self.settle_ms;
        format!(
            "{all} ms ({} × {interval} ms of pending checkpoints + the longest stall a fault causes, {stall} ms, + {} ms to commit)",
            concurrency + 1,
            self.settle_ms
        )
    }
}

/// How a run's records are bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Records {
    /// `records_per_subtask: [min, max]`.
    Between([u64; 2]),
    /// Drawn so the job lasts this long at the drawn rate, ms (the default of a throttled job).
    Lasting([u64; 2]),
}

/// The bounds of every field: the section's, else the defaults. Made by [`Bounds::of`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounds {
    pub parallelism: [u32; 2],
    pub max_concurrent_checkpoints: [u32; 2],
    pub checkpoint_interval_ms: [u64; 2],
    pub rate_per_subtask: [u64; 2],
    pub records: Records,
    pub transaction_timeout_ms: [i32; 2],
    /// The choices; one when the field cannot vary.
    pub transactions: Vec<Protocol>,
    /// The choices; empty without the `flink-kafkasink` mode.
    pub naming: Vec<Naming>,
    /// What a drawn timeout must outlive; `None` when the defaults cannot keep it (the broker's
    /// `transaction.max.timeout.ms` below it) and the scenario's own timeout is kept.
    pub floor: Option<Floor>,
}

/// A job's problems as the loader words them (`field: message`): what a shape must not add.
pub type Problems<'a> = &'a dyn Fn(&Scenario) -> Vec<String>;

impl Bounds {
    /// The bounds of `s`'s exploration: its `shape:` where it names a field, else the defaults,
    /// each derived from the scenario. `problems` is the loader's validation of a scenario
    /// (the default parallelism starts at the smallest the scenario accepts: a Flink cluster's
    /// TaskManagers, a share group's input partitions).
    pub fn of(s: &Scenario, problems: Problems) -> Bounds {
        let spec = s.shape.clone().unwrap_or_default();
        let j = &s.job;
        let parallelism = spec.parallelism.unwrap_or_else(|| default_parallelism(s, problems));
        let max_concurrent_checkpoints = spec
            .max_concurrent_checkpoints
            .unwrap_or([DEFAULT_CONCURRENCY[0], DEFAULT_CONCURRENCY[1].max(j.max_concurrent_checkpoints)]);
        let rate_per_subtask = spec.rate_per_subtask.unwrap_or(match j.rate_per_subtask {
            0 => [0, 0],
            r => [round_up((r / 2).max(1), 100).min(r), round_down(r * 2, 100).max(r)],
        });
        // Records named: the shortest job they make, at the highest rate.
        let shortest =
            spec.records_per_subtask.and_then(|[lo, _]| lo.saturating_mul(1000).checked_div(rate_per_subtask[1]));
        let checkpoint_interval_ms = spec.checkpoint_interval_ms.unwrap_or_else(|| {
            let base = j.checkpoint_interval_ms;
            let lo = round_up((base / 2).max(10), 10);
            // Well inside the checkpoint timeout (a checkpoint's acks must come before it), and
            // often enough that the shortest job holds MIN_JOB_INTERVALS checkpoints.
            let hi =
                (base * 2).min(j.checkpoint_timeout_ms / 2).min(shortest.map_or(u64::MAX, |ms| ms / MIN_JOB_INTERVALS));
            [lo, round_down(hi, 10).max(lo)]
        });
        let records = match (spec.records_per_subtask, rate_per_subtask) {
            (Some(b), _) => Records::Between(b),
            (None, [0, _]) => Records::Between([j.records_per_subtask; 2]),
            (None, _) => {
                let shortest = DEFAULT_JOB_MS[0].max(MIN_JOB_INTERVALS * checkpoint_interval_ms[1]);
                Records::Lasting([shortest, DEFAULT_JOB_MS[1].max(shortest)])
            }
        };
        let mut b = Bounds {
            parallelism,
            max_concurrent_checkpoints,
            checkpoint_interval_ms,
            rate_per_subtask,
            records,
            transaction_timeout_ms: [j.transaction_timeout_ms; 2],
            transactions: spec.transactions.unwrap_or_else(|| default_transactions(s)),
            naming: spec.naming.unwrap_or_else(|| default_naming(s)),
            floor: Some(Floor::of(s)),
        };
        match spec.transaction_timeout_ms {
            Some(t) => b.transaction_timeout_ms = t,
            None => b.default_timeout(s),
        }
        b
    }

    /// The default timeout: from the scenario's own (or half of it) up, never below the floor at
    /// the shortest interval and concurrency, up to the floor at the longest; the scenario's
    /// own, without a floor, when the broker's `transaction.max.timeout.ms` is below that.
    fn default_timeout(&mut self, s: &Scenario) {
        let Some(floor) = self.floor else { return };
        let base = u64::try_from(s.job.transaction_timeout_ms).unwrap_or(0);
        let [ilo, ihi] = self.checkpoint_interval_ms;
        let [clo, chi] = self.max_concurrent_checkpoints;
        let lo = round_up((base / 2).max(floor.ms(ilo, clo)), 1_000);
        let hi = round_up(base.max(floor.ms(ihi, chi)), 1_000).max(lo);
        let max = crate::txn_max_timeout_ms(s).unwrap_or(crate::DEFAULT_TXN_MAX_TIMEOUT_MS);
        match (i32::try_from(lo), i32::try_from(hi)) {
            (Ok(lo), Ok(hi)) if i64::from(hi) <= max => self.transaction_timeout_ms = [lo, hi],
            _ => self.floor = None,
        }
    }

    /// The records a job at `rate` may draw.
    pub fn records_for(&self, rate: u64) -> [u64; 2] {
        match self.records {
            Records::Between(b) => b,
            Records::Lasting([lo, hi]) => {
                let at = |ms: u64| (rate.saturating_mul(ms) / 1_000).max(1);
                [at(lo), at(hi)]
            }
        }
    }

    /// The timeouts a job with this interval and concurrency may draw: the bounds, from the
    /// floor up.
    pub fn timeout_for(&self, interval: u64, concurrency: u32) -> [i32; 2] {
        let [lo, hi] = self.transaction_timeout_ms;
        let floor = self.floor.map(|f| i32::try_from(f.ms(interval, concurrency)).unwrap_or(i32::MAX));
        [lo.max(floor.unwrap_or(lo)).min(hi), hi]
    }

    /// Whether `s` is a shape these bounds may draw; else the first field that is not, and why.
    pub fn admits(&self, s: &Shape) -> Result<(), String> {
        let within = |field: &str, v: u64, [lo, hi]: [u64; 2]| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(format!("{field} {v} is outside [{lo}, {hi}]"))
            }
        };
        let wide = |[lo, hi]: [u32; 2]| [u64::from(lo), u64::from(hi)];
        within("parallelism", s.parallelism.into(), wide(self.parallelism))?;
        within(
            "max_concurrent_checkpoints",
            s.max_concurrent_checkpoints.into(),
            wide(self.max_concurrent_checkpoints),
        )?;
        within("checkpoint_interval_ms", s.checkpoint_interval_ms, self.checkpoint_interval_ms)?;
        within("rate_per_subtask", s.rate_per_subtask, self.rate_per_subtask)?;
        within("records_per_subtask", s.records_per_subtask, self.records_for(s.rate_per_subtask))?;
        let [tlo, thi] = self.timeout_for(s.checkpoint_interval_ms, s.max_concurrent_checkpoints);
        let t = i64::from(s.transaction_timeout_ms);
        if !(i64::from(tlo)..=i64::from(thi)).contains(&t) {
            return Err(format!("transaction_timeout_ms {t} is outside [{tlo}, {thi}] (its floor included)"));
        }
        if !self.transactions.contains(&s.transactions) {
            return Err(format!("transactions {:?} is not among the choices", s.transactions));
        }
        match s.naming {
            Some(n) if !self.naming.contains(&n) => Err(format!("naming {} is not among the choices", n.name())),
            _ => Ok(()),
        }
    }

    /// `s` with every field pulled into its bounds (the timeout above its floor): the shape a
    /// shrink moves toward, from the scenario's own.
    pub fn clamp(&self, s: &Shape) -> Shape {
        let c32 = |v: u32, [lo, hi]: [u32; 2]| v.clamp(lo, hi.max(lo));
        let c64 = |v: u64, [lo, hi]: [u64; 2]| v.clamp(lo, hi.max(lo));
        let mut out = *s;
        out.parallelism = c32(s.parallelism, self.parallelism);
        out.max_concurrent_checkpoints = c32(s.max_concurrent_checkpoints, self.max_concurrent_checkpoints);
        out.checkpoint_interval_ms = c64(s.checkpoint_interval_ms, self.checkpoint_interval_ms);
        out.rate_per_subtask = c64(s.rate_per_subtask, self.rate_per_subtask);
        out.records_per_subtask = c64(s.records_per_subtask, self.records_for(out.rate_per_subtask));
        let [tlo, thi] = self.timeout_for(out.checkpoint_interval_ms, out.max_concurrent_checkpoints);
        out.transaction_timeout_ms = s.transaction_timeout_ms.clamp(tlo, thi.max(tlo));
        if !self.transactions.contains(&s.transactions) {
            out.transactions = self.transactions.first().copied().unwrap_or(s.transactions);
        }
        if let Some(n) = s.naming.filter(|n| !self.naming.contains(n)) {
            out.naming = Some(self.naming.first().copied().unwrap_or(n));
        }
        out
    }

    /// The bounds in words, for the campaign's first line.
    pub fn text(&self) -> String {
        let range = |[lo, hi]: [u64; 2]| if lo == hi { lo.to_string() } else { format!("{lo}–{hi}") };
        let wide = |[lo, hi]: [u32; 2]| [u64::from(lo), u64::from(hi)];
        let mut out = format!(
            "parallelism {}, concurrent checkpoints {}, interval {} ms, rate {}/s, ",
            range(wide(self.parallelism)),
            range(wide(self.max_concurrent_checkpoints)),
            range(self.checkpoint_interval_ms),
            range(self.rate_per_subtask)
        );
        match self.records {
            Records::Between(b) => out.push_str(&format!("records {}", range(b))),
            Records::Lasting([lo, hi]) => out.push_str(&format!("records for {}–{} s", lo / 1_000, hi / 1_000)),
        }
        let [tlo, thi] = self.transaction_timeout_ms;
        let t = [u64::try_from(tlo).unwrap_or(0), u64::try_from(thi).unwrap_or(0)];
        let _ = write!(out, ", transaction timeout {} ms", range(t));
        if self.floor.is_some_and(|f| f.one_phase) {
            out.push_str(" (above its floor)");
        }
        let protocols: Vec<String> = self.transactions.iter().map(|p| format!("{p:?}")).collect();
        let _ = write!(out, ", transactions {}", protocols.join("|"));
        if !self.naming.is_empty() {
            let names: Vec<&str> = self.naming.iter().map(|n| n.name()).collect();
            let _ = write!(out, ", naming {}", names.join("|"));
        }
        out
    }
}

/// The smallest parallelism the scenario accepts (from 1), up to its partitions (at most
/// [`DEFAULT_MAX_PARALLELISM`]); the scenario's own when none is.
fn default_parallelism(s: &Scenario, problems: Problems) -> [u32; 2] {
    let hi = s.topic.partitions.clamp(1, DEFAULT_MAX_PARALLELISM);
    let mut base = s.clone();
    base.faults.clear();
    base.shape = None;
    let before = problems(&base);
    let accepted = |p: u32| {
        let mut t = base.clone();
        t.job.parallelism = p;
        problems(&t).iter().all(|x| before.contains(x))
    };
    match (1..=hi).find(|p| accepted(*p)) {
        Some(lo) => [lo, hi],
        None => [s.job.parallelism; 2],
    }
}

/// Every mode the rig's producer runs lets `force_transactions_v1` choose: V1 and V2 where every
/// Kafka the scenario names has V2 (4.0 and later); else the scenario's own protocol.
fn default_transactions(s: &Scenario) -> Vec<Protocol> {
    if chooses_protocol(s) && has_v2(s) {
        vec![Protocol::V1, Protocol::V2]
    } else {
        vec![expect_by::protocol_of(s)]
    }
}

/// A mode whose producer is the rig's own (legacy, twopc-inject, kip939, plain-txn and their
/// mutants) is among the scenario's: only it honours `force_transactions_v1`.
pub fn chooses_protocol(s: &Scenario) -> bool {
    s.modes
        .iter()
        .any(|m| matches!(m.base(), SinkMode::Legacy | SinkMode::TwopcInject | SinkMode::Kip939 | SinkMode::PlainTxn))
}

/// Every Kafka the scenario names finalizes Transactions V2 (4.0.0 and later).
pub fn has_v2(s: &Scenario) -> bool {
    sinkhole_install::parse_versions(&s.cluster.kafka)
        .map(|vs| vs.iter().all(|v| expect_by::version_matches(">=4.0.0", v).unwrap_or(false)))
        .unwrap_or(false)
}

/// Both namings where the connector has POOLING; the scenario's own where it has not; none
/// without the Flink subject.
fn default_naming(s: &Scenario) -> Vec<Naming> {
    if !s.modes.contains(&SinkMode::FlinkKafkasink) {
        return vec![];
    }
    let f = s.flink_spec();
    if sinkhole_install::flink::check_naming(&f.connector(), Naming::Pooling.name()).is_ok() {
        vec![Naming::Incrementing, Naming::Pooling]
    } else {
        vec![f.naming]
    }
}

fn round_up(v: u64, step: u64) -> u64 {
    v.div_ceil(step).saturating_mul(step)
}

fn round_down(v: u64, step: u64) -> u64 {
    v / step * step
}

/// The job's expected length, ms: its records at its rate, else (an unthrottled job) twenty
/// checkpoint intervals.
pub fn job_ms(s: &Scenario) -> u64 {
    match s.job.rate_per_subtask {
        0 => 20 * s.job.checkpoint_interval_ms.max(1),
        rate => s.job.records_per_subtask.saturating_mul(1000) / rate,
    }
}

/// One drawn job: a point of [`Bounds`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    pub parallelism: u32,
    pub max_concurrent_checkpoints: u32,
    pub checkpoint_interval_ms: u64,
    pub rate_per_subtask: u64,
    pub records_per_subtask: u64,
    pub transaction_timeout_ms: i32,
    /// The protocol the rig's producer speaks.
    pub transactions: Protocol,
    /// The Flink subject's naming; `None` without that mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub naming: Option<Naming>,
}

impl Shape {
    /// The shape of `s`'s own job.
    pub fn of(s: &Scenario) -> Shape {
        let j = &s.job;
        Shape {
            parallelism: j.parallelism,
            max_concurrent_checkpoints: j.max_concurrent_checkpoints,
            checkpoint_interval_ms: j.checkpoint_interval_ms,
            rate_per_subtask: j.rate_per_subtask,
            records_per_subtask: j.records_per_subtask,
            transaction_timeout_ms: j.transaction_timeout_ms,
            transactions: expect_by::protocol_of(s),
            naming: s.modes.contains(&SinkMode::FlinkKafkasink).then(|| s.flink_spec().naming),
        }
    }

    /// `base` with this job (and `shape:` gone: the result is one run's scenario). A
    /// `schedule:` window is scaled with the job's length, so the faults drawn over it fall
    /// within the drawn job. The same shape as `base`'s gives `base` back.
    pub fn apply(&self, base: &Scenario) -> Scenario {
        let mut s = base.clone();
        s.shape = None;
        let j = &mut s.job;
        j.parallelism = self.parallelism;
        j.max_concurrent_checkpoints = self.max_concurrent_checkpoints;
        j.checkpoint_interval_ms = self.checkpoint_interval_ms;
        j.rate_per_subtask = self.rate_per_subtask;
        j.records_per_subtask = self.records_per_subtask;
        j.transaction_timeout_ms = self.transaction_timeout_ms;
        if has_v2(base) {
            j.force_transactions_v1 = self.transactions == Protocol::V1;
        }
        if let Some(n) = self.naming.filter(|n| *n != base.flink_spec().naming) {
            s.flink.get_or_insert_with(Default::default).naming = n;
        }
        let (before, after) = (job_ms(base), job_ms(&s));
        let warm_up = 2 * s.job.checkpoint_interval_ms;
        if let Some(r) = s.schedule.as_mut().filter(|_| before != after && before > 0) {
            let scale = |t: u64| u64::try_from(u128::from(t) * u128::from(after) / u128::from(before)).unwrap_or(t);
            let end = scale(r.end_ms);
            // Not earlier than the window's own start or two intervals in, whichever is sooner:
            // a fault before the job is up would meet no worker.
            r.start_ms = scale(r.start_ms).max(r.start_ms.min(warm_up)).min(end.saturating_sub(1));
            r.end_ms = end;
        }
        s
    }

    /// Compactly: `p2 cc3 ci400 tt60000 r12000@2000 V2` (and the Flink naming when it has one).
    pub fn text(&self) -> String {
        let mut t = format!(
            "p{} cc{} ci{} tt{} r{}@{} {:?}",
            self.parallelism,
            self.max_concurrent_checkpoints,
            self.checkpoint_interval_ms,
            self.transaction_timeout_ms,
            self.records_per_subtask,
            self.rate_per_subtask,
            self.transactions
        );
        if let Some(n) = self.naming {
            t.push(' ');
            t.push_str(n.name());
        }
        t
    }

    /// One field's value as a shrink's step names it (a field of [`FIELDS`]).
    pub fn value(&self, field: &str) -> String {
        TABLE.iter().find(|f| f.0 == field).map_or_else(|| format!("(no field {field})"), |f| (f.1)(self))
    }

    /// This shape with `field` taken from `other` (a field of [`FIELDS`]).
    pub fn take(&self, field: &str, other: &Shape) -> Shape {
        let mut s = *self;
        if let Some(f) = TABLE.iter().find(|f| f.0 == field) {
            (f.2)(&mut s, other);
        }
        s
    }
}

#[cfg(test)]
mod tests;
