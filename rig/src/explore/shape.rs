//! One exploration run's job, drawn from its seed before its faults: swarm testing (Groce et
//! al., ISSTA 2012). A campaign whose every run had the scenario's own job would explore one
//! point of the job's space; a sink bug that needs several pending checkpoints at a restore, or
//! one subtask, or Transactions V1, is never met there however many fault schedules are drawn.
//!
//! The bounds are the scenario's `shape:` and the defaults it derives
//! ([`sinkhole_scenario::shape`], which also keeps a drawn transaction timeout above what a
//! faithful one-phase sink must outlive). The draw here only picks a point: from a generator of
//! its own, salted from the run's seed, so the fault generator's stream is untouched; then the
//! faults are drawn over the *shaped* scenario ([`run_of`]), whose window follows the drawn job.
//! A scenario whose drawn shape is its own draws exactly the faults it drew before shapes were
//! drawn. The same scenario and seed give the same job and the same faults.
use sinkhole_scenario::schedule::SplitMix64;
use sinkhole_scenario::{Bounds, Scenario, Shape};

use super::draw::{self, Drawn, Outages};
use crate::shrink::search::Toward;

/// Mixed into the seed for the shape's draw, so it is not the schedule generator's stream.
const SALT: u64 = 0x7377_6172_6d69_6e67;

/// A point of `b`, drawn from `seed`: the fields in [`sinkhole_scenario::shape::FIELDS`]' order,
/// each within its bounds (the records for the drawn rate, the timeout from the floor of the
/// drawn interval and concurrency up), on round steps where the bounds hold one.
pub fn draw_shape(b: &Bounds, seed: u64) -> Shape {
    let mut rng = SplitMix64::new(seed ^ SALT);
    let narrow = |[lo, hi]: [u32; 2]| [u64::from(lo), u64::from(hi)];
    let parallelism = stepped(&mut rng, narrow(b.parallelism), 1) as u32;
    let max_concurrent_checkpoints = stepped(&mut rng, narrow(b.max_concurrent_checkpoints), 1) as u32;
    let checkpoint_interval_ms = stepped(&mut rng, b.checkpoint_interval_ms, 10);
    let rate_per_subtask = stepped(&mut rng, b.rate_per_subtask, 100);
    let records_per_subtask = stepped(&mut rng, b.records_for(rate_per_subtask), 1_000);
    let [tlo, thi] = b.timeout_for(checkpoint_interval_ms, max_concurrent_checkpoints);
    let wide = |t: i32| u64::try_from(t).unwrap_or(0);
    let transaction_timeout_ms = i32::try_from(stepped(&mut rng, [wide(tlo), wide(thi)], 1_000)).unwrap_or(thi);
    let transactions = *rng.pick(&b.transactions);
    let naming = (!b.naming.is_empty()).then(|| *rng.pick(&b.naming));
    Shape {
        parallelism,
        max_concurrent_checkpoints,
        checkpoint_interval_ms,
        rate_per_subtask,
        records_per_subtask,
        transaction_timeout_ms,
        transactions,
        naming,
    }
}

/// Uniform in [lo, hi] on multiples of `step` when the range holds one, else anywhere in it.
fn stepped(rng: &mut SplitMix64, [lo, hi]: [u64; 2], step: u64) -> u64 {
    let (a, b) = (lo.div_ceil(step), hi / step);
    if a <= b {
        rng.between(a, b) * step
    } else {
        rng.between(lo, hi)
    }
}

/// One run: its job, its faults, and the scenario it runs (the shaped job, the faults written
/// out, no schedule and no `shape:` left: replaying it with the seed replays the run).
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub shape: Shape,
    pub drawn: Drawn,
    pub scenario: Scenario,
}

/// Run `seed` of an exploration over `base`: the job first, then the faults over the shaped
/// scenario (`draw::draw`, unchanged).
pub fn run_of(base: &Scenario, seed: u64, outages: Outages) -> Run {
    let shape = draw_shape(&base.shape_bounds(), seed);
    let mut scenario = shape.apply(base);
    let drawn = draw::draw(&scenario, seed, outages);
    scenario.faults = drawn.faults.clone();
    scenario.schedule = None;
    Run { shape, drawn, scenario }
}

/// Where a finding's shrink moves its job: toward the scenario's own, pulled into its bounds.
pub fn toward(base: &Scenario) -> Toward {
    let bounds = base.shape_bounds();
    let shape = bounds.clamp(&Shape::of(base));
    Toward { bounds, shape }
}

#[cfg(test)]
mod tests;
