//! Aiming a run at a protocol state no run of the campaign has reached yet.
//!
//! The draw is blind to what its faults do to the job: a restore that meets two pending
//! committables needs a notification withheld and then a kill in the next checkpoint's
//! persist→notify window, and random schedules put those two together rarely — a sink that
//! forgets the later restored committable survived twenty runs of them. So the campaign keeps
//! the states its runs reached ([`super::states`], from the checker's `reached`), and while the
//! scenario can host a recipe for a state not reached yet, about half the runs are aimed at one
//! of them: the run keeps its drawn schedule, the drawn faults that would land on the recipe's
//! checkpoints or near its time are left out to make room (`cleared`), the recipe's faults are
//! added, and the job gets what the recipe needs of its shape ([`ShapeNeeds`]). Jepsen's
//! generators are steered the same way when a test wants one interleaving; here the steering
//! reads the coverage.
//!
//! The recipes are one table, [`RECIPES`] (state → faults and shape); the states no fault
//! reaches without making the broker lie to a faithful sink are in [`UNAIMED`], each with why.
//! A recipe's faults go through the draw's `fits` check against the scenario with the shape
//! applied, as every drawn fault does, and its modes must be able to reach the state
//! ([`Reachable`]): a recipe the scenario cannot host is never aimed at. The aim is drawn from
//! the run's seed on a stream of its own and the coverage so far, so it is deterministic given
//! both; the run's schedule file holds the faults and the job as they ran, so the run replays
//! from the file and its seed alone.
use std::collections::BTreeSet;

use sinkhole_checker::reached::State;
use sinkhole_model::SinkMode;
use sinkhole_scenario::schedule::{SplitMix64, UNANSWERED_REQUEST_MS};
use sinkhole_scenario::{Family, FaultKind, FaultSpec, JobSpec, Scenario, Timing, When};

use super::draw::{self, checkpoint_near, checkpoint_of, fits, Drawn, Outages, BROKER_SETTLE_MS};
use super::shape::{self, Run};

/// Mixed into the seed for the aim: a stream of its own, so the drawn schedule is what the
/// seed draws without aiming.
const AIM_SALT: u64 = 0x6169_6d65_6421_2121;

/// What a recipe needs of the job's shape, applied to the run's `job:`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShapeNeeds {
    /// At least this many checkpoints pending at once (`max_concurrent_checkpoints`).
    pub min_concurrent: Option<u32>,
    /// At least this many subtasks (`parallelism`): one held while another runs ahead.
    pub min_parallelism: Option<u32>,
}

impl ShapeNeeds {
    pub const NONE: ShapeNeeds = ShapeNeeds { min_concurrent: None, min_parallelism: None };

    /// The job with these needs met (what it has already is kept when it is more).
    pub fn apply(&self, job: &mut JobSpec) {
        if let Some(k) = self.min_concurrent {
            job.max_concurrent_checkpoints = job.max_concurrent_checkpoints.max(k);
        }
        if let Some(p) = self.min_parallelism {
            job.parallelism = job.parallelism.max(p);
        }
    }

    /// As docs/GUIDE.md's table of recipes says it.
    pub fn words(&self) -> String {
        let mut out = Vec::new();
        if let Some(k) = self.min_concurrent {
            out.push(format!("`max_concurrent_checkpoints` ≥ {k}"));
        }
        if let Some(p) = self.min_parallelism {
            out.push(format!("`parallelism` ≥ {p}"));
        }
        if out.is_empty() {
            "—".into()
        } else {
            out.join(", ")
        }
    }
}

/// Which of the judged modes can reach a recipe's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reachable {
    Any,
    /// A mode writing in transactions (not `at-least-once`).
    Transactional,
    /// A two-phase mode: it stores committables and commits on notification.
    TwoPhase,
    /// A mode without committables (its restores hold none).
    OnePhase,
    /// Every mode opens its transactions with Enable2Pc, so an outage past the transaction
    /// timeout is no known loss ([`Outages::PastTimeout`]).
    Enable2Pc,
}

impl Reachable {
    /// As docs/GUIDE.md's table of recipes says it.
    pub fn words(self) -> &'static str {
        match self {
            Reachable::Any => "any",
            Reachable::Transactional => "transactional",
            Reachable::TwoPhase => "two-phase",
            Reachable::OnePhase => "one-phase",
            Reachable::Enable2Pc => "all Enable2Pc",
        }
    }

    fn by(self, modes: &[SinkMode]) -> bool {
        match self {
            Reachable::Any => true,
            Reachable::Transactional => modes.iter().any(|m| m.transactional()),
            Reachable::TwoPhase => modes.iter().any(|m| m.two_phase()),
            Reachable::OnePhase => modes.iter().any(|m| !m.two_phase()),
            Reachable::Enable2Pc => Outages::for_modes(modes) == Outages::PastTimeout,
        }
    }
}

/// How to reach one state: the faults to add and what the job needs.
#[derive(Debug, Clone, Copy)]
pub struct Recipe {
    pub state: State,
    pub by: Reachable,
    pub needs: ShapeNeeds,
    /// Faults in scenario YAML. `$n` is the checkpoint aimed at (drawn in the first half of the
    /// draw's window), `$n-2`, `$n-1`, `$n+3` its neighbours; `$pause_ms` is the number of
    /// checkpoints pending the shape allows, less one, and a half, in checkpoint intervals;
    /// `$outage_ms` outlasts the transaction timeout and the rig's look at it by a quarter timeout;
    /// `$kill_ms` is half a checkpoint interval (300 ms at least), `$hold_ms` twice that.
    pub faults: &'static [&'static str],
}

const fn recipe(state: State, by: Reachable, faults: &'static [&'static str]) -> Recipe {
    Recipe { state, by, needs: ShapeNeeds::NONE, faults }
}

const KILL_AT_PERSISTED: &str = "{kind: kill-workers, target: all, when: {checkpoint_persisted: $n}}";
const DROP_ONE: &str = "{kind: drop-notification, target: [0], when: {checkpoint_persisted: $n}}";
const PAUSE: &str = "{kind: pause-workers, target: [0], when: {checkpoint_triggered: $n}, duration_ms: $pause_ms}";

/// State → what to add, one row each (the module doc says how a row is used).
pub const RECIPES: &[Recipe] = &[
    recipe(State::RestoreFresh, Reachable::Any, &["{kind: kill-workers, target: all, when: {checkpoint_triggered: 1}}"]),
    recipe(State::RestorePending0, Reachable::OnePhase, &[KILL_AT_PERSISTED]),
    recipe(State::RestorePending1, Reachable::TwoPhase, &[KILL_AT_PERSISTED]),
    recipe(
        State::RestorePending2,
        Reachable::TwoPhase,
        &["{kind: drop-notification, when: {checkpoint_persisted: $n-1}}", KILL_AT_PERSISTED],
    ),
    recipe(
        State::RestorePending3Plus,
        Reachable::TwoPhase,
        &[
            "{kind: drop-notification, when: {checkpoint_persisted: $n-2}}",
            "{kind: drop-notification, when: {checkpoint_persisted: $n-1}}",
            KILL_AT_PERSISTED,
        ],
    ),
    recipe(
        State::SeveralRestores,
        Reachable::Any,
        &[
            "{kind: kill-workers, target: [0], when: {checkpoint_persisted: $n}}",
            "{kind: kill-workers, target: all, when: {checkpoint_persisted: $n+3}}",
        ],
    ),
    recipe(
        State::FencedOnRestore,
        Reachable::Transactional,
        &["{kind: kill-workers, target: all, when: {txn_opened: {subtask: 0, checkpoint: $n}}}"],
    ),
    // Subtask 0 held at checkpoint n's trigger, so n stays pending while subtask 1 pre-commits
    // it and writes in n + 1's transaction; both killed during the hold, the job restores n - 1
    // and reopens n, and n + 1's transaction is the probe's to abort.
    Recipe {
        state: State::LingeringAtRestore,
        by: Reachable::Transactional,
        needs: ShapeNeeds { min_concurrent: None, min_parallelism: Some(2) },
        faults: &[
            "{kind: pause-workers, target: [0], when: {checkpoint_triggered: $n}, duration_ms: $hold_ms}",
            "{kind: kill-workers, target: all, when: {checkpoint_triggered: $n}, after_ms: $kill_ms}",
        ],
    },
    recipe(
        State::CheckpointAbortedAtFailover,
        Reachable::Any,
        &["{kind: kill-workers, target: [0], when: {checkpoint_triggered: $n}}"],
    ),
    recipe(
        State::CheckpointDeclined,
        Reachable::Any,
        &["{kind: decline-checkpoint, target: [0], when: {checkpoint_triggered: $n}}"],
    ),
    Recipe {
        state: State::ConcurrentPending2,
        by: Reachable::Any,
        needs: ShapeNeeds { min_concurrent: Some(2), min_parallelism: None },
        faults: &[PAUSE],
    },
    Recipe {
        state: State::ConcurrentPending3Plus,
        by: Reachable::Any,
        needs: ShapeNeeds { min_concurrent: Some(3), min_parallelism: None },
        faults: &[PAUSE],
    },
    recipe(State::NotificationLost, Reachable::Any, &[DROP_ONE]),
    recipe(State::CommittablesCarried, Reachable::TwoPhase, &[DROP_ONE]),
    recipe(
        State::CommitRetried,
        Reachable::TwoPhase,
        &["{kind: protocol-error, apis: [EndTxn], error: CONCURRENT_TRANSACTIONS, when: {checkpoint_persisted: $n}, duration_ms: 500}"],
    ),
    recipe(
        State::CommitFailedOver,
        Reachable::TwoPhase,
        &["{kind: protocol-error, apis: [EndTxn], error: UNKNOWN_SERVER_ERROR, nth: 1, when: {checkpoint_persisted: $n}, duration_ms: 2000}"],
    ),
    recipe(
        State::CommitInFlightAtKill,
        Reachable::TwoPhase,
        &[
            "{kind: protocol-delay, apis: [EndTxn], delay_ms: 3000, when: {checkpoint_persisted: $n}, duration_ms: 4000}",
            "{kind: kill-workers, target: all, when: {commit_started: $n}, after_ms: 500}",
        ],
    ),
    recipe(
        State::RestoredCommitAfterTimeout,
        Reachable::Enable2Pc,
        &["{kind: job-outage, when: {checkpoint_persisted: $n}, duration_ms: $outage_ms}"],
    ),
    recipe(
        State::TxnOpenAcrossBrokerFault,
        Reachable::Transactional,
        &["{kind: broker-restart, target: [1], when: {txn_opened: {subtask: 0, checkpoint: $n}}}"],
    ),
    recipe(
        State::CoordinatorMove,
        Reachable::Transactional,
        &["{kind: broker-restart, target: txn-coordinator, when: {txn_opened: {subtask: 0, checkpoint: $n}}}"],
    ),
];

/// The states no recipe aims at, and why.
pub const UNAIMED: &[(State, &str)] = &[(
    State::CommitDropped,
    "a faithful sink drops a committable only when the broker says its transaction is fenced or gone; a fault \
     that answers a commit so while the transaction is still open makes the faithful sink lose it, a finding \
     about the fault rather than the sink",
)];

/// A run aimed at a state: the recipe's faults as added, the shape, and the drawn faults left
/// out to make room for them.
#[derive(Debug, Clone, PartialEq)]
pub struct Aim {
    pub state: State,
    pub needs: ShapeNeeds,
    /// The checkpoint `$n` was.
    pub checkpoint: u64,
    pub faults: Vec<FaultSpec>,
    pub cleared: usize,
}

/// The recipe of `state`, if it has one.
pub fn recipe_of(state: State) -> Option<&'static Recipe> {
    RECIPES.iter().find(|r| r.state == state)
}

/// The recipes a campaign's scenario and modes can host ([`hostable`]), worked out once: each
/// check runs the scenario's validation, too slow to repeat for every recipe at every run.
#[derive(Debug, Clone)]
pub struct Aims {
    hosted: Vec<&'static Recipe>,
    outages: Outages,
}

impl Aims {
    pub fn new(base: &Scenario, modes: &[SinkMode]) -> Aims {
        Aims {
            hosted: RECIPES.iter().filter(|r| hostable(base, modes, r)).collect(),
            outages: Outages::for_modes(modes),
        }
    }

    /// Whether a run may be aimed at `state`.
    pub fn hosts(&self, state: State) -> bool {
        self.hosted.iter().any(|r| r.state == state)
    }

    /// Run `seed`'s faults over `base`: the draw's, and for about half the runs, while a state
    /// the scenario can host is not in `reached`, a recipe's for one of them. Deterministic: the
    /// same scenario, modes, seed and `reached` give the same faults and aim.
    /// Run `seed` of the campaign: its job first ([`shape::draw_shape`]), then its faults and
    /// its aim over the shaped scenario ([`Aims::draw`]), and the aim's needs of the job. A run
    /// that is not aimed is exactly [`shape::run_of`]'s.
    pub fn run_of(&self, base: &Scenario, seed: u64, reached: &BTreeSet<State>) -> (Run, Option<Aim>) {
        let drawn_shape = shape::draw_shape(&base.shape_bounds(), seed);
        let mut scenario = drawn_shape.apply(base);
        let (drawn, aim) = self.draw(&scenario, seed, reached);
        scenario.faults = drawn.faults.clone();
        scenario.schedule = None;
        let shape = match &aim {
            Some(a) if a.needs != ShapeNeeds::NONE => {
                a.needs.apply(&mut scenario.job);
                // The job as it runs, the aim's needs included.
                sinkhole_scenario::shape::Shape::of(&scenario)
            }
            _ => drawn_shape,
        };
        (Run { shape, drawn, scenario }, aim)
    }

    pub fn draw(&self, base: &Scenario, seed: u64, reached: &BTreeSet<State>) -> (Drawn, Option<Aim>) {
        let mut drawn = draw::draw(base, seed, self.outages);
        let Some(mut aim) = self.choose(base, seed, reached) else { return (drawn, None) };
        let numbered = drawn.faults.len();
        aim.cleared = make_room(base, &mut drawn.faults, &aim.faults);
        for (k, f) in aim.faults.iter_mut().enumerate() {
            f.name = Some(format!("explore-{}-{}-aimed", numbered + k + 1, f.kind.name()));
        }
        drawn.faults.extend(aim.faults.iter().cloned());
        (drawn, Some(aim))
    }

    /// Whether the aim is taken for this seed, at which unreached state, and on which checkpoint.
    pub fn choose(&self, base: &Scenario, seed: u64, reached: &BTreeSet<State>) -> Option<Aim> {
        let mut rng = SplitMix64::new(seed ^ AIM_SALT);
        if !rng.chance(1, 2) {
            return None;
        }
        let open: Vec<&Recipe> = self.hosted.iter().copied().filter(|r| !reached.contains(&r.state)).collect();
        if open.is_empty() {
            return None;
        }
        let r = *rng.pick(&open);
        let (lo, hi) = window(base, r)?;
        let n = rng.between(lo, hi);
        let faults = faults_at(base, r, n)?;
        Some(Aim { state: r.state, needs: r.needs, checkpoint: n, faults, cleared: 0 })
    }
}

/// Whether `base`, judging `modes`, can host recipe `r`: its modes can reach the state, its
/// coordinator faults meet the rig's own job, its job faults on a commit or a transaction meet
/// modes that have them, a pause it takes stays below the heartbeat timeout, its checkpoints
/// fall in the job, and every fault fits.
pub fn hostable(base: &Scenario, modes: &[SinkMode], r: &Recipe) -> bool {
    if !r.by.by(modes) {
        return false;
    }
    let Some(faults) = window(base, r).and_then(|(lo, _)| faults_at(base, r, lo)) else { return false };
    // Flink's JobManager cannot be held at a notification: the Flink subject refuses those faults.
    let coordinator = faults.iter().any(|f| f.kind.kind().family() == Family::Coordinator);
    // A job's fault fires on each mode's own event: `at-least-once` never opens or commits a
    // transaction, and a fault that never fires makes its verdict inconclusive (measured: the
    // commit-in-flight recipe's kill on `commit_started` beside it).
    let on_txn =
        faults.iter().any(|f| f.job_scoped() && matches!(f.when, When::CommitStarted(_) | When::TxnOpened { .. }));
    let longest_pause = [
        r.faults.iter().any(|f| f.contains("$pause_ms")).then(|| pause_ms(base, r)),
        r.faults.iter().any(|f| f.contains("$hold_ms")).then(|| hold_ms(base)),
    ]
    .into_iter()
    .flatten()
    .max();
    (!coordinator || modes.iter().all(|m| m.rig_job()))
        && (!on_txn || modes.iter().all(|m| m.transactional()))
        && longest_pause.is_none_or(|p| p * 5 < base.job.heartbeat_timeout_ms * 4)
}

/// The checkpoints `$n` may be: the first half of the draw's window, leaving room before it
/// for `$n-2` and after it for `$n+3` within the job.
fn window(base: &Scenario, r: &Recipe) -> Option<(u64, u64)> {
    let w = draw::schedule_of(base);
    let back = if r.faults.iter().any(|f| f.contains("$n-2")) {
        2
    } else {
        u64::from(r.faults.iter().any(|f| f.contains("$n-1")))
    };
    let ahead = if r.faults.iter().any(|f| f.contains("$n+3")) { 3 } else { 0 };
    let last = draw::job_ms(base) / base.job.checkpoint_interval_ms.max(1);
    let lo = checkpoint_near(base, w.start_ms).max(back + 1);
    let hi = checkpoint_near(base, w.start_ms + w.end_ms.saturating_sub(w.start_ms) / 2).max(lo);
    let hi = hi.min(last.saturating_sub(ahead + 1));
    (lo <= hi).then_some((lo, hi))
}

/// Half a checkpoint interval, and at least 300 ms: long enough for a subtask to write in the
/// transaction it opened at a checkpoint (50 records at the slowest rate a shape draws).
fn kill_ms(base: &Scenario) -> u64 {
    (base.job.checkpoint_interval_ms / 2).max(300)
}

/// Twice [`kill_ms`]: the hold outlasts the kill that comes during it.
fn hold_ms(base: &Scenario) -> u64 {
    2 * kill_ms(base)
}

fn pause_ms(base: &Scenario, r: &Recipe) -> u64 {
    let interval = base.job.checkpoint_interval_ms.max(1);
    let k = u64::from(r.needs.min_concurrent.unwrap_or(1));
    interval * (k - 1) + interval / 2
}

/// The recipe's faults on checkpoint `n` (at least its `$n-2` + 2), if the scenario with the
/// recipe's shape accepts each.
fn faults_at(base: &Scenario, r: &Recipe, n: u64) -> Option<Vec<FaultSpec>> {
    let timing = Timing::of(base);
    let outage = timing.look_after_ms() + timing.transaction_timeout_ms() / 4;
    let mut shaped = base.clone();
    r.needs.apply(&mut shaped.job);
    let mut out = Vec::new();
    for t in r.faults {
        let yaml = t
            .replace("$n-2", &n.saturating_sub(2).to_string())
            .replace("$n-1", &n.saturating_sub(1).to_string())
            .replace("$n+3", &(n + 3).to_string())
            .replace("$pause_ms", &pause_ms(base, r).to_string())
            .replace("$hold_ms", &hold_ms(base).to_string())
            .replace("$kill_ms", &kill_ms(base).to_string())
            .replace("$outage_ms", &outage.to_string())
            .replace("$n", &n.to_string());
        let f = serde_saphyr::from_str::<FaultSpec>(&yaml).ok()?;
        if !fits(&shaped, &f) {
            return None;
        }
        out.push(f);
    }
    Some(out)
}

/// How near the aimed faults' time no drawn fault is kept (a checkpoint interval when it is
/// longer): a checkpoint's event comes later than its number times the interval by the job's
/// start and any delay before it (measured: checkpoint 12 of a 200 ms interval persisted at
/// 5.2 s, its job slowed by a drawn network fault), and a drawn fault acting in the aim's
/// window makes another run than the one aimed (there, the notification dropped was of a
/// checkpoint that carried no transaction).
pub const AIM_ROOM_MS: u64 = 2_000;

/// Leaves out the drawn faults that would land on the aimed faults' checkpoints or near their
/// time (a broker fault's [`BROKER_SETTLE_MS`] either side where one of the two is a broker's,
/// else [`AIM_ROOM_MS`] or a checkpoint interval); how many.
fn make_room(base: &Scenario, drawn: &mut Vec<FaultSpec>, aimed: &[FaultSpec]) -> usize {
    let interval = base.job.checkpoint_interval_ms.max(1);
    let on: Vec<u64> = aimed.iter().filter_map(|f| checkpoint_of(&f.when)).collect();
    let (first, last) = (on.iter().min().copied(), on.iter().max().copied());
    let broker = |f: &FaultSpec| f.kind.kind().family() == Family::Brokers;
    let aimed_broker = aimed.iter().any(broker);
    let (from, to) = aimed.iter().map(|f| span(base, f)).fold((u64::MAX, 0), |(a, b), (x, y)| (a.min(x), b.max(y)));
    let before = drawn.len();
    drawn.retain(|f| {
        let shared = checkpoint_of(&f.when).zip(first.zip(last)).is_some_and(|(c, (a, b))| a <= c && c <= b);
        let pad = if aimed_broker || broker(f) { BROKER_SETTLE_MS } else { interval.max(AIM_ROOM_MS) };
        let (x, y) = span(base, f);
        let near = x <= to.saturating_add(pad) && from <= y.saturating_add(pad);
        !shared && !near
    });
    before - drawn.len()
}

/// The job time a fault takes, roughly: its time (a checkpoint's event at that checkpoint's
/// interval) to its end, and for a `protocol-drop` its client's silence after it, in which
/// a fault would meet no frame ([`UNANSWERED_REQUEST_MS`]).
fn span(base: &Scenario, f: &FaultSpec) -> (u64, u64) {
    let interval = base.job.checkpoint_interval_ms.max(1);
    let start = match (&f.when, checkpoint_of(&f.when)) {
        (When::AtMs(t), _) => *t,
        (_, Some(n)) => n * interval,
        _ => return (0, u64::MAX),
    };
    let silence = if f.kind.kind() == FaultKind::ProtocolDrop { UNANSWERED_REQUEST_MS } else { 0 };
    (start, start + f.duration_ms.unwrap_or(0) + f.after_ms.unwrap_or(0) + silence)
}

#[cfg(test)]
mod tests;
