//! One exploration run's fault list, drawn from its seed: what the scenario's
//! cluster can host, spread over the job's time and over its checkpoint
//! phases.
//!
//! The draw reuses the random schedule of `sinkhole_scenario::schedule`
//! (Jepsen's combined nemesis packages: one fault at a time, random
//! durations, quiet periods between) with `mix: all`, whose families are
//! already narrowed to what the cluster can run (no proxy family when the
//! scenario turns the proxy off; no broker-to-broker partition under three
//! brokers). Two things are added on top of it, each from a generator of its
//! own seeded from the same seed, so the schedule generator's pinned draws
//! stay what they are:
//!
//! - a sibling kind the generator's lists leave out, now and then, in the
//!   same family (`job-outage` for a worker kill, `broker-stop` for a broker
//!   kill, `rolling-restart` for a broker restart on three brokers or more,
//!   `net-blackhole` for a partition, `coordinator-crash` for a notification
//!   fault), so the coverage reaches every kind the cluster can host;
//! - an event trigger instead of the time, for about two faults in three:
//!   the checkpoint phase nearest the drawn time (`checkpoint_triggered`,
//!   `checkpoint_acked`, `checkpoint_persisted`, `checkpoint_notified`,
//!   `commit_started`, `txn_opened`), the windows a time trigger hits only by
//!   luck — as Jepsen's generators mix timed operations with ones gated on
//!   the system's own state.
//!
//! A scenario with live readers also gets one or two faults on them, from a generator of
//! their own ([`reader_faults`]). A campaign whose every judged mode opens its transactions
//! with Enable2Pc ([`Outages::for_modes`]) also gets, one run in three, a job outage past the
//! transaction timeout ([`outage_past_timeout`]): the FLIP-319 window, which only a two-phase
//! sink under KIP-939 must come through clean (a legacy sink loses there by design, so a
//! campaign judging one never draws it). Broker faults are kept [`BROKER_SETTLE_MS`] apart (the cluster is one
//! resource, and a broker takes seconds to come back). Each fault is checked against the scenario the way a file is
//! (`sinkhole_scenario::from_str`): a variant the scenario refuses (a trigger
//! or kind its subject has no use for) falls back to the generator's own
//! fault, and a fault the scenario refuses altogether is left out — the draw
//! never hands the run a fault it would reject.
use sinkhole_model::SinkMode;
use sinkhole_scenario::schedule::{self, SplitMix64};
use sinkhole_scenario::{
    Bandwidth, Blackhole, Family, Fault, FaultKind, FaultSpec, Group, Mix, NoParams, Outage, RandomSchedule, Rolling,
    Scenario, Timing, When,
};

/// Mixed into the seed for the explorer's own draws (kinds, triggers), so
/// they are not the schedule generator's stream again.
const SALT: u64 = 0x6578_706c_6f72_6521;

/// How long after a broker fault's end (its heal: a JVM started again, a
/// process resumed) the next broker fault may start, ms. The schedule's
/// quiet periods (1–3 s) assume a heal is instant; a broker started again
/// after a kill takes seconds more to be ready on a small machine, and the
/// cluster is one resource, so a broker fault drawn inside that time waits
/// for it and the run is inconclusive (measured on the 2-core machine: a
/// `broker-pause` drawn 8.5 s after a `broker-kill` fired 7 s late).
pub const BROKER_SETTLE_MS: u64 = 15_000;

/// How long a drawn job outage may last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outages {
    /// Within the transaction timeout (a restart's length): every faithful mode must come
    /// through clean.
    Short,
    /// Now and then past the timeout as well ([`outage_past_timeout`]).
    PastTimeout,
}

impl Outages {
    /// [`Outages::PastTimeout`] when every mode judged opens its transactions with Enable2Pc
    /// (`twopc-inject`, `kip939` and their mutants): KIP-939's coordinator never times such a
    /// transaction out, so an outage of any length must leave them clean. A legacy sink (and
    /// every one-phase one) loses there by design — the FLIP-319 loss the library names —
    /// so a campaign judging one keeps its outages short, or every such run would be a
    /// finding about a known bug.
    pub fn for_modes(modes: &[SinkMode]) -> Outages {
        let enable_2pc = |m: &SinkMode| matches!(m.base(), SinkMode::TwopcInject | SinkMode::Kip939);
        if !modes.is_empty() && modes.iter().all(enable_2pc) {
            Outages::PastTimeout
        } else {
            Outages::Short
        }
    }
}

/// One run's faults, and what could not be drawn. With live readers (`readers:`), the
/// schedule's faults are followed by one or two on the readers ([`reader_faults`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Drawn {
    pub seed: u64,
    pub faults: Vec<FaultSpec>,
    /// Faults the generator drew that the scenario refused (left out).
    pub refused: usize,
    /// Broker faults left out because they fell within [`BROKER_SETTLE_MS`] of the one before.
    pub spaced: usize,
    /// The window the faults were drawn in, job time, ms.
    pub window_ms: [u64; 2],
}

/// The job's expected length, ms: its records at its rate, else (an
/// unthrottled job) twenty checkpoint intervals (`sinkhole_scenario::shape::job_ms`, which
/// also scales a drawn job's `schedule:` window).
pub use sinkhole_scenario::shape::job_ms;

/// The random schedule an exploration draws with: the scenario's own
/// window, quiet periods and durations when it has a `schedule:` (its mix
/// becomes `all`), else faults from two checkpoint intervals in to four
/// fifths of the job, so the job has time to finish what the last fault
/// started before its records run out.
pub fn schedule_of(s: &Scenario) -> RandomSchedule {
    if let Some(r) = &s.schedule {
        return RandomSchedule { mix: Mix::All, seed: None, ..r.clone() };
    }
    let interval = s.job.checkpoint_interval_ms.max(1);
    let end = job_ms(s) * 4 / 5;
    RandomSchedule {
        mix: Mix::All,
        seed: None,
        start_ms: (2 * interval).min(end),
        end_ms: end,
        quiet_ms: [1_000, 3_000],
        duration_ms: [500, 2_000],
    }
}

/// The fault list of the exploration run with `seed` over `base` (its own
/// faults are not kept: see `explore`'s module doc). Deterministic: the same
/// scenario, seed and `outages` give the same list.
pub fn draw(base: &Scenario, seed: u64, outages: Outages) -> Drawn {
    let mut s = base.clone();
    s.faults.clear();
    s.schedule = Some(schedule_of(base));
    let window_ms = s.schedule.as_ref().map(|r| [r.start_ms, r.end_ms]).unwrap_or([0, 0]);
    let resolved = schedule::resolve(&s, seed);
    let mut rng = SplitMix64::new(seed ^ SALT);
    let mut faults = Vec::new();
    let (mut refused, mut spaced) = (0, 0);
    // Checkpoints already given an event trigger: two faults on one event would fire together.
    let mut taken: Vec<u64> = Vec::new();
    // The long outage comes first, so its checkpoint is its own; timed faults inside it are left
    // out (they would fire on a job that is down).
    let long = match outages {
        Outages::PastTimeout => outage_past_timeout(base, seed).filter(|(f, _)| fits(base, f)),
        Outages::Short => None,
    };
    taken.extend(long.as_ref().and_then(|(f, _)| checkpoint_of(&f.when)));
    let down = long.as_ref().map(|(_, span)| *span);
    // When the cluster is free for the next broker fault (job time, ms).
    let mut broker_free = 0;
    for f in resolved.generated_faults() {
        if !fits(base, f) {
            refused += 1;
            continue;
        }
        if f.kind.kind().family() == Family::Brokers {
            let t = at_ms(f);
            if t < broker_free {
                spaced += 1;
                continue;
            }
            broker_free = t + f.duration_ms.unwrap_or(0) + BROKER_SETTLE_MS;
        }
        let sibling = sibling(base, f, &mut rng).filter(|g| fits(base, g));
        let mut f = sibling.unwrap_or_else(|| f.clone());
        if let Some(w) = event(base, &f, &mut rng) {
            let mut g = f.clone();
            g.when = w;
            if fits(base, &g) {
                f = g;
            }
        }
        if let Some(n) = checkpoint_of(&f.when) {
            // Two faults on one event would fire together: the later one takes the next checkpoint.
            let free = (n..).find(|c| !taken.contains(c)).unwrap_or(n);
            f.when = renumber(f.when, free);
            taken.push(free);
        }
        if f.kind.kind() == FaultKind::CoordinatorCrash && !matches!(f.when, When::CheckpointPersisted(_)) {
            // Its only trigger was refused or taken: the generator's fault instead.
            continue;
        }
        if let (When::AtMs(t), Some([from, to])) = (&f.when, down) {
            if (from..=to).contains(t) {
                continue;
            }
        }
        f.name = Some(format!("explore-{}-{}", faults.len() + 1, f.kind.name()));
        faults.push(f);
    }
    if let Some((mut f, _)) = long {
        f.name = Some(format!("explore-{}-{}-past-timeout", faults.len() + 1, f.kind.name()));
        faults.push(f);
    }
    for mut f in reader_faults(base, seed, &mut taken) {
        if fits(base, &f) {
            f.name = Some(format!("explore-{}-{}", faults.len() + 1, f.kind.name()));
            faults.push(f);
        } else {
            refused += 1;
        }
    }
    Drawn { seed, faults, refused, spaced, window_ms }
}

/// Mixed into the seed for the outage past the timeout: a stream of its own, so a run without
/// one draws exactly what it drew before it existed.
const OUTAGE_SALT: u64 = 0x6f75_7461_6765_7321;

/// One run in three, a `job-outage` past the transaction timeout on a checkpoint's
/// `checkpoint_persisted`, in the window's first half, and the span of job time it keeps the
/// job down (ms, a settle included): the FLIP-319 window. The checkpoint's transactions are
/// pre-committed and not yet committed when the job goes down, and it stays down past the rig's
/// look (the timeout, one abort scan and a margin: `Timing::look_after_ms`) by up to half a
/// timeout more, so a broker that times them out has done so before the restore commits them
/// — the default premise `outlives_timeout` (docs/SCENARIOS.md, "Default premises") then
/// judges what the sink made of it.
fn outage_past_timeout(s: &Scenario, seed: u64) -> Option<(FaultSpec, [u64; 2])> {
    let mut rng = SplitMix64::new(seed ^ OUTAGE_SALT);
    if !rng.chance(1, 3) {
        return None;
    }
    let w = schedule_of(s);
    let timing = Timing::of(s);
    let half = w.end_ms.saturating_sub(w.start_ms) / 2;
    let t = w.start_ms + rng.below(half.max(1));
    let n = checkpoint_near(s, t);
    let duration = timing.look_after_ms() + rng.below(timing.transaction_timeout_ms() / 2 + 1);
    let yaml = format!("{{kind: job-outage, when: {{checkpoint_persisted: {n}}}, duration_ms: {duration}}}");
    let f = serde_saphyr::from_str::<FaultSpec>(&yaml).ok()?;
    let from = (n - 1) * s.job.checkpoint_interval_ms;
    Some((f, [from, n * s.job.checkpoint_interval_ms + duration + BROKER_SETTLE_MS]))
}

/// Mixed into the seed for the live readers' faults, a stream of their own: a scenario without
/// readers draws exactly what it drew before they existed.
const READER_SALT: u64 = 0x7265_6164_6572_7321;

/// For a scenario with live readers, one or two faults on them (`kill-readers`,
/// `pause-readers`, `restart-readers`, one reader each), each on a checkpoint's trigger no
/// other fault took, within the window: the read side's own nemesis (a consumer crashed,
/// stalled past its poll interval, restarted), which the worker and broker families never
/// touch.
fn reader_faults(s: &Scenario, seed: u64, taken: &mut Vec<u64>) -> Vec<FaultSpec> {
    let Some(r) = &s.readers else { return Vec::new() };
    let mut rng = SplitMix64::new(seed ^ READER_SALT);
    let w = schedule_of(s);
    let (start, end) = (w.start_ms, w.end_ms);
    let mut out = Vec::new();
    for _ in 0..1 + rng.below(2) {
        let t = start + rng.below(end.saturating_sub(start).max(1));
        let n = (checkpoint_near(s, t)..).find(|c| !taken.contains(c)).unwrap_or(1);
        taken.push(n);
        let reader = rng.below(u64::from(r.count.max(1)));
        let duration = 1_000 + rng.below(7_000);
        let yaml = match rng.below(3) {
            0 => format!("{{kind: kill-readers, target: [{reader}], when: {{checkpoint_triggered: {n}}}, duration_ms: {duration}}}"),
            1 => format!("{{kind: pause-readers, target: [{reader}], when: {{checkpoint_triggered: {n}}}, duration_ms: {duration}}}"),
            _ => format!("{{kind: restart-readers, target: [{reader}], when: {{checkpoint_triggered: {n}}}}}"),
        };
        if let Ok(f) = serde_saphyr::from_str::<FaultSpec>(&yaml) {
            out.push(f);
        }
    }
    out
}

/// Whether `base` accepts `f` as its only fault (the loader's validation).
pub(crate) fn fits(base: &Scenario, f: &FaultSpec) -> bool {
    let mut s = base.clone();
    s.faults = vec![f.clone()];
    s.schedule = None;
    match serde_saphyr::to_string(&s) {
        Ok(text) => sinkhole_scenario::from_str(&text, "explore.yaml").is_ok(),
        Err(_) => false,
    }
}

/// A kind of the same family the schedule generator does not draw, one time in four
/// (`net-bandwidth` for a `net-delay`, …).
fn sibling(s: &Scenario, f: &FaultSpec, rng: &mut SplitMix64) -> Option<FaultSpec> {
    if !rng.chance(1, 4) {
        return None;
    }
    let mut g = f.clone();
    g.kind = match &f.kind {
        Fault::KillWorkers(_) => {
            g.duration_ms = Some(s.job.restart_delay_ms.max(1_000));
            Fault::JobOutage(Outage { target: None })
        }
        Fault::BrokerKill(b) => Fault::BrokerStop(b.clone()),
        Fault::BrokerRestart(_) if s.cluster.brokers >= 3 => Fault::RollingRestart(Rolling { target: None }),
        // A slow link instead of a late one: 4 to 32 KiB/s each way, from the delay drawn (no
        // draw of its own, so the stream after it is what it was).
        Fault::NetDelay(d) => Fault::NetBandwidth(Bandwidth {
            from: d.from.clone(),
            to: d.to.clone(),
            bytes_per_sec: 4_096 << (d.delay_ms % 4),
        }),
        Fault::NetPartition(p) => {
            let to: Vec<Group> = p.to.iter().filter(|g| matches!(g, Group::Broker(_))).cloned().collect();
            if to.is_empty() {
                return None;
            }
            Fault::NetBlackhole(Blackhole { target: None, to: Some(to) })
        }
        Fault::DropNotification(_) | Fault::DelayNotification(_) | Fault::DeclineCheckpoint(_) => {
            g.when = When::CheckpointPersisted(checkpoint_near(s, at_ms(f)));
            Fault::CoordinatorCrash(NoParams {})
        }
        _ => return None,
    };
    Some(g)
}

/// The trigger's time, for a generated fault (they all have one).
fn at_ms(f: &FaultSpec) -> u64 {
    match f.when {
        When::AtMs(t) => t,
        _ => 0,
    }
}

/// The checkpoint the coordinator triggers nearest job time `t` (from 1).
pub(crate) fn checkpoint_near(s: &Scenario, t: u64) -> u64 {
    (t / s.job.checkpoint_interval_ms.max(1)).max(1)
}

/// The checkpoint an event trigger names (none for a time).
pub(crate) fn checkpoint_of(w: &When) -> Option<u64> {
    match *w {
        When::CheckpointTriggered(n)
        | When::CheckpointPersisted(n)
        | When::CheckpointNotified(n)
        | When::CommitStarted(n)
        | When::CheckpointAcked { checkpoint: n, .. } => Some(n),
        When::TxnOpened { checkpoint, .. } => checkpoint,
        _ => None,
    }
}

/// The same event on checkpoint `n`.
fn renumber(w: When, n: u64) -> When {
    match w {
        When::CheckpointTriggered(_) => When::CheckpointTriggered(n),
        When::CheckpointPersisted(_) => When::CheckpointPersisted(n),
        When::CheckpointNotified(_) => When::CheckpointNotified(n),
        When::CommitStarted(_) => When::CommitStarted(n),
        When::CheckpointAcked { subtask, .. } => When::CheckpointAcked { checkpoint: n, subtask },
        When::TxnOpened { subtask, checkpoint: Some(_) } => When::TxnOpened { subtask, checkpoint: Some(n) },
        other => other,
    }
}

/// An event trigger near the fault's time: always for a protocol fault,
/// two times in three for the others (a fault already on an event keeps it).
///
/// A protocol fault acts only on the frames that pass while it lasts, and a
/// job slowed by an earlier fault may send none of its APIs at a fixed time;
/// on a checkpoint's event the frames of that checkpoint follow. Measured
/// over the first live campaigns (random-mix, seeds 1–4 and 100–104, two
/// modes side by side, counted per mode): 7 of 19 protocol faults at a time
/// took effect, 26 of 28 on an event.
fn event(s: &Scenario, f: &FaultSpec, rng: &mut SplitMix64) -> Option<When> {
    let When::AtMs(t) = f.when else { return None };
    let always = f.kind.kind().family() == Family::Protocol;
    if !rng.chance(2, 3) && !always {
        return None;
    }
    let n = checkpoint_near(s, t);
    let subtask = rng.below(u64::from(s.job.parallelism.max(1))) as u32;
    Some(match rng.below(6) {
        0 => When::CheckpointTriggered(n),
        1 => When::CheckpointAcked { checkpoint: n, subtask },
        2 => When::CheckpointPersisted(n),
        3 => When::CheckpointNotified(n),
        4 => When::CommitStarted(n),
        _ => When::TxnOpened { subtask, checkpoint: Some(n) },
    })
}

/// The trigger's kind as the coverage table names it: `at_ms`,
/// `checkpoint_persisted`, … (the YAML key).
pub fn trigger_kind(w: &When) -> &'static str {
    match w {
        When::AtMs(_) => "at_ms",
        When::EveryMs(_) => "every_ms",
        When::CheckpointTriggered(_) => "checkpoint_triggered",
        When::CheckpointAcked { .. } => "checkpoint_acked",
        When::CheckpointPersisted(_) => "checkpoint_persisted",
        When::CheckpointNotified(_) => "checkpoint_notified",
        When::CommitStarted(_) => "commit_started",
        When::TxnOpened { .. } => "txn_opened",
        When::Acknowledged { .. } => "acknowledged",
        When::Committed { .. } => "committed",
    }
}
