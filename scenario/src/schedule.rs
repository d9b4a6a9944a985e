//! Seeded random fault schedules (Jepsen's nemesis packages) and the
//! resolved fault list of a run.
//!
//! A scenario's `schedule:` names a mix of fault families and a time window;
//! [`resolve`] turns it into plain [`FaultSpec`]s with `at_ms` triggers,
//! appended after the scenario's explicit faults. Like Jepsen's
//! `jepsen.nemesis.combined` packages, faults come one at a time: each lasts
//! a random duration, then a random quiet period passes before the next, so
//! two generated faults never overlap and their effects can be told apart.
//!
//! The same seed always gives the same list, on every machine and with every
//! version of this crate's dependencies: the generator is the hand-written
//! SplitMix64 of `sinkhole_faults::rng` (which the fault proxy draws from
//! too), not `rand::rngs::StdRng`, whose algorithm `rand` reserves the right
//! to change between releases — a schedule replayed from a seed in a bug
//! report must not change under a `cargo update`.
//!
//! [`write()`] stores the resolved list as `schedule.json` in the run
//! directory, in the scenario's YAML field names.
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sinkhole_base::rundir::RunDir;
pub use sinkhole_faults::rng::SplitMix64;

use crate::{
    Brokers, Delay, ErrorName, Family, Fault, FaultKind, FaultSpec, FrameDirection, Frames, FramesDelay, FramesError,
    Group, Link, Loss, Mix, NamedTarget, NetDirection, Notification, NotificationDelay, Partition, RandomSchedule,
    Scenario, Target, TidSelector, When, Workers,
};

/// A run's fault list: the scenario's explicit faults, then the generated ones.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolved {
    /// The seed the schedule was drawn with (the schedule's own, else the run's).
    pub seed: u64,
    /// The mix, when the scenario has a random schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<Mix>,
    /// The window generated faults fall in: [start_ms, end_ms] of job time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<[u64; 2]>,
    /// Explicit faults first, then the generated ones (named `random-N-kind`,
    /// with `at_ms` triggers).
    pub faults: Vec<FaultSpec>,
    /// How many of `faults` were generated (the last ones).
    pub generated: usize,
    /// For each generated fault, the job-time span [start, end) it occupies:
    /// its duration, or for an instantaneous fault (a kill, a restart, a
    /// notification fault) the time set aside for its consequences; a
    /// `protocol-drop`'s span also holds its client's request timeout after it
    /// ([`UNANSWERED_REQUEST_MS`]), cut at the window's end when it is the last
    /// fault. Spans do not overlap and lie within `window_ms`.
    #[serde(default)]
    pub spans: Vec<[u64; 2]>,
}

impl Resolved {
    /// The generated faults.
    pub fn generated_faults(&self) -> &[FaultSpec] {
        &self.faults[self.faults.len() - self.generated..]
    }
}

/// The fault families a mix draws from, given what the cluster can run
/// (families whose kinds act through the proxy need it).
pub fn families(mix: Mix, proxy_allowed: bool) -> Vec<Mix> {
    let runs = |f: Family| proxy_allowed || !f.needs_proxy();
    match (mix, mix.family()) {
        (Mix::All, _) => Family::ALL.into_iter().filter(|f| runs(*f)).map(Mix::from).collect(),
        (_, Some(f)) if runs(f) => vec![mix],
        _ => vec![],
    }
}

/// The transactional APIs protocol faults pick from, each with error codes
/// the sink's producer treats as retriable there (Kafka's Java
/// `TransactionManager` handlers and `Sender`: coordinator moved or loading,
/// a concurrent transaction still ending, a leader change, a timeout) — a
/// correct sink must ride them out without loss or duplicates.
const PROTOCOL_APIS: [(&str, &[&str]); 5] = [
    (
        "EndTxn",
        &["CONCURRENT_TRANSACTIONS", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"],
    ),
    (
        "AddPartitionsToTxn",
        &["CONCURRENT_TRANSACTIONS", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"],
    ),
    ("Produce", &["NOT_LEADER_OR_FOLLOWER", "NOT_ENOUGH_REPLICAS", "REQUEST_TIMED_OUT"]),
    (
        "InitProducerId",
        &["CONCURRENT_TRANSACTIONS", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"],
    ),
    ("FindCoordinator", &["COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"]),
];

/// The kinds each family's draws pick from, in the order a seed replays.
const BROKER_KINDS: [FaultKind; 3] = [FaultKind::BrokerKill, FaultKind::BrokerPause, FaultKind::BrokerRestart];
const NETWORK_KINDS: [FaultKind; 4] =
    [FaultKind::NetPartition, FaultKind::NetDelay, FaultKind::NetLoss, FaultKind::NetReset];
const PROTOCOL_KINDS: [FaultKind; 3] = [FaultKind::ProtocolDrop, FaultKind::ProtocolDelay, FaultKind::ProtocolError];
const COORDINATOR_KINDS: [FaultKind; 3] =
    [FaultKind::DropNotification, FaultKind::DelayNotification, FaultKind::DeclineCheckpoint];

/// Frame delays of network faults, ms: small enough not to trip request
/// timeouts on their own, large enough to reorder against checkpoints.
const NET_DELAYS_MS: [u64; 5] = [20, 50, 100, 200, 500];
const LOSS_PROBABILITIES: [f64; 5] = [0.05, 0.1, 0.2, 0.3, 0.5];
const PROTOCOL_DELAYS_MS: [u64; 5] = [100, 250, 500, 1000, 2000];

/// The scenario's faults with its random schedule resolved for `run_seed`
/// (or the schedule's own seed). Deterministic: the same scenario and seed
/// give the same list.
pub fn resolve(s: &Scenario, run_seed: u64) -> Resolved {
    let mut faults = s.faults.clone();
    let Some(r) = &s.schedule else {
        return Resolved { seed: run_seed, mix: None, window_ms: None, faults, generated: 0, spans: vec![] };
    };
    let seed = r.seed.unwrap_or(run_seed);
    let (generated, spans) = generate(s, r, seed);
    let n = generated.len();
    faults.extend(generated);
    Resolved { seed, mix: Some(r.mix), window_ms: Some([r.start_ms, r.end_ms]), faults, generated: n, spans }
}

fn generate(s: &Scenario, r: &RandomSchedule, seed: u64) -> (Vec<FaultSpec>, Vec<[u64; 2]>) {
    let fams = families(r.mix, s.cluster.proxy != Some(false));
    let mut out = Vec::new();
    let mut spans = Vec::new();
    if fams.is_empty() || r.end_ms <= r.start_ms {
        return (out, spans);
    }
    let mut rng = SplitMix64::new(seed);
    let [qlo, qhi] = sorted(r.quiet_ms);
    let [dlo, dhi] = sorted(r.duration_ms);
    // Not always at start_ms: the first fault lands somewhere in one quiet period.
    let Some(mut t) = r.start_ms.checked_add(rng.between(0, qlo)) else { return (out, spans) };
    // Validation keeps every window far from both ends (MAX_SCHEDULE_MS,
    // MAX_GENERATED); for any other input the loop still ends: every fault
    // takes at least 1 ms, nothing wraps, and the count is capped.
    while out.len() < MAX_GENERATED {
        let fam = *rng.pick(&fams);
        let dur = rng.between(dlo.max(1), dhi.max(1));
        let (mut f, busy) = draw(s, fam, dur, &mut rng);
        let Some(mut end) = t.checked_add(busy) else { break };
        // A dropped frame's silence may outlast the window when the drop itself fits in it:
        // it is then the last fault, so nothing else falls in the silence.
        let last = end > r.end_ms;
        if last {
            let own_end = t.saturating_add(f.duration_ms.unwrap_or(busy));
            if f.kind.kind() != FaultKind::ProtocolDrop || own_end > r.end_ms {
                break;
            }
            end = r.end_ms;
        }
        f.when = When::AtMs(t);
        f.name = Some(format!("random-{}-{}", out.len() + 1, f.kind.name()));
        out.push(f);
        spans.push([t, end]);
        if last {
            break;
        }
        let Some(next) = end.checked_add(rng.between(qlo, qhi)) else { break };
        t = next;
    }
    (out, spans)
}

/// The longest job time a random schedule's values may name: a week, far
/// beyond any run and far from where u64 milliseconds overflow.
pub const MAX_SCHEDULE_MS: u64 = 7 * 24 * 3_600_000;

/// The most faults one schedule generates (validation refuses a schedule
/// that could draw more).
pub const MAX_GENERATED: usize = 100_000;

/// The most faults `r` could draw: each takes at least its minimum duration
/// (≥ 1 ms) and the minimum quiet period.
pub fn most_faults(r: &RandomSchedule) -> u64 {
    let [qlo, _] = sorted(r.quiet_ms);
    let [dlo, _] = sorted(r.duration_ms);
    let step = dlo.max(1).saturating_add(qlo);
    r.end_ms.saturating_sub(r.start_ms) / step + 1
}

fn sorted([a, b]: [u64; 2]) -> [u64; 2] {
    [a.min(b), a.max(b)]
}

/// One fault of a family lasting about `dur` ms, and the time it occupies.
///
/// Each family draws from a list of its kinds written here, not from the
/// table's order: the lists and the order of the draws are part of what a
/// seed replays (a test checks every listed kind is of its family, another
/// pins what seeds draw).
fn draw(s: &Scenario, fam: Mix, dur: u64, rng: &mut SplitMix64) -> (FaultSpec, u64) {
    let sizes = Sizes::of(s);
    match fam {
        Mix::Workers => draw_workers(s, sizes, dur, rng),
        Mix::Brokers => draw_brokers(s, sizes, dur, rng),
        Mix::Network => draw_network(sizes, dur, rng),
        Mix::Protocol => draw_protocol(s, sizes, dur, rng),
        // Coordinator and anything else: the checkpoint coordinator's messages.
        _ => draw_coordinator(s, sizes, dur, rng),
    }
}

/// How many subtasks and brokers a drawn target may name (at least one of each).
#[derive(Clone, Copy)]
struct Sizes {
    subtasks: u32,
    brokers: i32,
}

impl Sizes {
    fn of(s: &Scenario) -> Sizes {
        Sizes { subtasks: s.job.parallelism.max(1), brokers: s.cluster.brokers.max(1) as i32 }
    }

    /// One subtask index: one draw.
    fn subtask(self, rng: &mut SplitMix64) -> i64 {
        rng.below(u64::from(self.subtasks)) as i64
    }

    /// One broker id (1-based): one draw.
    fn broker(self, rng: &mut SplitMix64) -> i32 {
        1 + rng.below(self.brokers as u64) as i32
    }
}

/// A generated fault's trigger before `generate` places it.
const UNPLACED: When = When::AtMs(0);

/// Kill (one subtask or all) or pause one subtask's worker.
fn draw_workers(s: &Scenario, sizes: Sizes, dur: u64, rng: &mut SplitMix64) -> (FaultSpec, u64) {
    if rng.chance(1, 2) {
        let target = Some(if rng.chance(1, 4) {
            Target::Named(NamedTarget::All)
        } else {
            Target::Ids(vec![sizes.subtask(rng)])
        });
        let f = FaultSpec::new(Fault::KillWorkers(Workers { target }), UNPLACED);
        // The job is down for restart_delay_ms and then restores.
        (f, dur.max(s.job.restart_delay_ms))
    } else {
        let target = Some(Target::Ids(vec![sizes.subtask(rng)]));
        let mut f = FaultSpec::new(Fault::PauseWorkers(Workers { target }), UNPLACED);
        f.duration_ms = Some(dur);
        (f, dur)
    }
}

/// Kill, pause or restart one broker: by id, the transaction coordinator or a partition's leader.
fn draw_brokers(s: &Scenario, sizes: Sizes, dur: u64, rng: &mut SplitMix64) -> (FaultSpec, u64) {
    let kind = *rng.pick(&BROKER_KINDS);
    let target = match rng.below(3) {
        0 => Target::Ids(vec![i64::from(sizes.broker(rng))]),
        1 => Target::Named(NamedTarget::TxnCoordinator),
        _ => Target::Leader { leader: rng.below(u64::from(s.topic.partitions.max(1))) as u32 },
    };
    let b = Brokers { target };
    let mut f = FaultSpec::new(
        match kind {
            FaultKind::BrokerKill => Fault::BrokerKill(b),
            FaultKind::BrokerPause => Fault::BrokerPause(b),
            _ => Fault::BrokerRestart(b),
        },
        UNPLACED,
    );
    if kind != FaultKind::BrokerRestart {
        f.duration_ms = Some(dur);
    }
    (f, dur)
}

/// A partition, delay, loss or reset between two groups of nodes.
fn draw_network(sizes: Sizes, dur: u64, rng: &mut SplitMix64) -> (FaultSpec, u64) {
    let kind = *rng.pick(&NETWORK_KINDS);
    let (from, to) = network_ends(kind, sizes, rng);
    let fault = match kind {
        FaultKind::NetPartition => {
            let direction = rng.chance(1, 4).then_some(NetDirection::OneWay);
            Fault::NetPartition(Partition { from, to, direction })
        }
        FaultKind::NetDelay => {
            let d = *rng.pick(&NET_DELAYS_MS);
            Fault::NetDelay(Delay { from, to, delay_ms: d, jitter_ms: Some(d / 4) })
        }
        FaultKind::NetLoss => Fault::NetLoss(Loss { from, to, probability: *rng.pick(&LOSS_PROBABILITIES) }),
        _ => Fault::NetReset(Link { from, to }),
    };
    let mut f = FaultSpec::new(fault, UNPLACED);
    f.duration_ms = Some(dur);
    (f, dur)
}

/// The two sides of a network fault: workers against one broker (or, for a
/// delay, all brokers), or (3+ nodes, a partition) one broker against another.
fn network_ends(kind: FaultKind, sizes: Sizes, rng: &mut SplitMix64) -> (Vec<Group>, Vec<Group>) {
    let brokers = sizes.brokers;
    if brokers >= 3 && kind == FaultKind::NetPartition && rng.chance(1, 3) {
        let a = sizes.broker(rng);
        let b = 1 + (a + rng.below(brokers as u64 - 1) as i32) % brokers;
        (vec![Group::Broker(a)], vec![Group::Broker(b)])
    } else if kind == FaultKind::NetDelay && rng.chance(1, 2) {
        (vec![Group::Workers], vec![Group::Brokers])
    } else {
        (vec![Group::Workers], vec![Group::Broker(sizes.broker(rng))])
    }
}

/// A dropped, delayed or failed frame of one transactional API the sink's
/// producer sends on this cluster, armed long enough to meet one.
///
/// A rule that meets no frame is a fault that did not happen (the run is then
/// inconclusive), so two things are decided here rather than left to chance:
/// under Transactions V2 the producer never sends AddPartitionsToTxn (Produce
/// registers the partition, KIP-890), so it is not drawn there; and the rule
/// stays in place for at least two checkpoint intervals, in which every
/// subtask's producer sends each listed API at least once (EndTxn and, with a
/// producer per transaction, FindCoordinator and InitProducerId on every
/// checkpoint; Produce continuously).
fn draw_protocol(s: &Scenario, sizes: Sizes, dur: u64, rng: &mut SplitMix64) -> (FaultSpec, u64) {
    let kind = *rng.pick(&PROTOCOL_KINDS);
    let v2 = crate::expect_by::protocol_of(s) == crate::expect_by::Protocol::V2;
    let apis: Vec<(&str, &[&str])> =
        PROTOCOL_APIS.into_iter().filter(|(api, _)| !(v2 && *api == "AddPartitionsToTxn")).collect();
    let (api, errors) = *rng.pick(&apis);
    let dur = dur.max(2 * s.job.checkpoint_interval_ms);
    let apis = vec![api.to_string()];
    let (frames, delay_ms, error) = match kind {
        // A lost response: the broker did it, the client never heard.
        FaultKind::ProtocolDrop => {
            (Some(if rng.chance(1, 3) { FrameDirection::Response } else { FrameDirection::Request }), 0, None)
        }
        FaultKind::ProtocolDelay => (None, *rng.pick(&PROTOCOL_DELAYS_MS), None),
        _ => (Some(FrameDirection::Request), 0, Some(ErrorName::Name(rng.pick(errors).to_string()))),
    };
    // One subtask's transactions only, sometimes (APIs that carry an id). Not for
    // InitProducerId, though the draw is made for it too (so a seed's other faults stay the
    // ones it always drew): `{subtask: S}` resolves when the fault fires, to the id S has
    // open then, whose InitProducerId is already past; the next one goes out under the next
    // checkpoint's id. Such a rule met no frame: a library run with seed 23000 had one, and
    // both its modes came out inconclusive.
    let one = matches!(api, "EndTxn" | "AddPartitionsToTxn" | "InitProducerId") && rng.chance(1, 3);
    let subtask = one.then(|| rng.below(u64::from(sizes.subtasks)) as u32);
    let transactional_id = subtask.filter(|_| api != "InitProducerId").map(|subtask| TidSelector::Subtask { subtask });
    let fault = match (kind, error) {
        (FaultKind::ProtocolDrop, _) => Fault::ProtocolDrop(Frames {
            from: None,
            to: None,
            probability: None,
            apis,
            frames,
            transactional_id,
            nth: None,
        }),
        (FaultKind::ProtocolDelay, _) => Fault::ProtocolDelay(FramesDelay {
            from: None,
            to: None,
            delay_ms,
            jitter_ms: Some(delay_ms / 5),
            probability: None,
            apis,
            frames,
            transactional_id,
            nth: None,
        }),
        (_, error) => Fault::ProtocolError(FramesError {
            from: None,
            to: None,
            probability: None,
            apis,
            frames,
            error: error.expect("drawn with the kind"),
            transactional_id,
            nth: None,
        }),
    };
    let mut f = FaultSpec::new(fault, UNPLACED);
    f.duration_ms = Some(dur);
    // A dropped frame is never answered: its client waits out its request timeout before it
    // tries again, and a fault due meanwhile would meet no frame from it (measured: a
    // FindCoordinator drop silenced a library run's job for 31 s, and the three faults after
    // it took no effect). So the next fault comes after that wait.
    let busy = if kind == FaultKind::ProtocolDrop { dur + UNANSWERED_REQUEST_MS } else { dur };
    (f, busy)
}

/// How long a client waits for an answer that never comes: Kafka's `request.timeout.ms`
/// default (30 s), which the rig's producer and Kafka's Java producer (so Flink's KafkaSink)
/// keep.
pub const UNANSWERED_REQUEST_MS: u64 = 30_000;

/// A dropped or delayed notification or a declined checkpoint, for one subtask or all.
fn draw_coordinator(s: &Scenario, sizes: Sizes, dur: u64, rng: &mut SplitMix64) -> (FaultSpec, u64) {
    let kind = *rng.pick(&COORDINATOR_KINDS);
    let target = (sizes.subtasks > 1 && rng.chance(1, 2)).then(|| Target::Ids(vec![sizes.subtask(rng)]));
    let fault = match kind {
        FaultKind::DropNotification => Fault::DropNotification(Notification { target, checkpoint: None }),
        FaultKind::DelayNotification => {
            Fault::DelayNotification(NotificationDelay { target, delay_ms: dur, checkpoint: None })
        }
        _ => Fault::DeclineCheckpoint(Notification { target, checkpoint: None }),
    };
    // It acts on the next checkpoint: leave it an interval to happen in.
    (FaultSpec::new(fault, UNPLACED), dur.max(s.job.checkpoint_interval_ms))
}

/// Writes `schedule.json` (the seed, the mix and the resolved faults) into the run's directory.
pub fn write(run: &RunDir, r: &Resolved) -> std::io::Result<PathBuf> {
    let path = run.schedule();
    let text = sinkhole_base::provenance::to_json(r).map_err(std::io::Error::other)?;
    std::fs::write(&path, text)?;
    Ok(path)
}

/// The trigger as a person reads it: `at 2500 ms`, `after_checkpoint_persisted 6`.
pub fn trigger_text(w: &When) -> String {
    match w {
        When::AtMs(t) => format!("at {t} ms"),
        When::EveryMs(t) => format!("every {t} ms"),
        other => match serde_json::to_value(other) {
            Ok(serde_json::Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    serde_json::Value::Object(inner) => format!(
                        "{k} {}",
                        inner
                            .iter()
                            .filter(|(_, x)| !x.is_null())
                            .map(|(a, b)| format!("{a}={b}"))
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                    v => format!("{k} {v}"),
                })
                .collect::<Vec<_>>()
                .join(" "),
            _ => format!("{other:?}"),
        },
    }
}

/// A JSON value as the schedule's text shows it: strings bare, lists and maps
/// in YAML's flow style (`[workers]`, `{at_ms: 1000}`).
pub fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(a) => format!("[{}]", a.iter().map(json_text).collect::<Vec<_>>().join(", ")),
        serde_json::Value::Object(m) => {
            format!("{{{}}}", m.iter().map(|(k, v)| format!("{k}: {}", json_text(v))).collect::<Vec<_>>().join(", "))
        }
        other => other.to_string(),
    }
}

/// One line per fault: trigger, name, kind, target, duration, parameters.
pub fn render(r: &Resolved) -> String {
    let mut out = String::new();
    match r.mix {
        Some(m) => out.push_str(&format!(
            "seed {}, mix {}, {} explicit + {} generated fault(s) in [{}, {}] ms\n",
            r.seed,
            json_text(&serde_json::to_value(m).unwrap_or_default()),
            r.faults.len() - r.generated,
            r.generated,
            r.window_ms.map(|w| w[0]).unwrap_or(0),
            r.window_ms.map(|w| w[1]).unwrap_or(0),
        )),
        None => out.push_str(&format!("seed {}, no random schedule, {} fault(s)\n", r.seed, r.faults.len())),
    }
    for (i, f) in r.faults.iter().enumerate() {
        out.push_str(&line(i, f));
        out.push('\n');
    }
    out
}

fn line(i: usize, f: &FaultSpec) -> String {
    let name = f.name.clone().unwrap_or_else(|| format!("{}-{i}", f.kind.name()));
    let target = match f.kind.target() {
        Some(t) => json_text(&serde_json::to_value(t).unwrap_or_default()),
        None => "-".to_string(),
    };
    let duration = match f.duration_ms {
        Some(d) => format!("{d} ms"),
        None => "-".to_string(),
    };
    let params = match serde_json::to_value(f) {
        Ok(serde_json::Value::Object(m)) => m
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "name" | "kind" | "target" | "when" | "duration_ms"))
            .map(|(k, v)| format!("{k}={}", json_text(v)))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    };
    format!(
        "{:<30} {:<30} {:<18} target {:<22} for {:<9} {}",
        trigger_text(&f.when),
        name,
        f.kind.name(),
        target,
        duration,
        params
    )
    .trim_end()
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(schedule: &str) -> Scenario {
        let text = format!(
            "name: s\ncluster: {{brokers: 3}}\ntopic: {{partitions: 3}}\n\
             job: {{parallelism: 2, records_per_subtask: 10, checkpoint_interval_ms: 100, transaction_timeout_ms: 5000}}\n\
             modes: [legacy]\nschedule: {schedule}\n"
        );
        crate::from_str(&text, "s.yaml").unwrap_or_else(|e| panic!("{}", e.render()))
    }

    fn problems(schedule: &str) -> Vec<(String, String)> {
        let text = format!(
            "name: s\ncluster: {{brokers: 3}}\ntopic: {{partitions: 3}}\n\
             job: {{parallelism: 2, records_per_subtask: 10, checkpoint_interval_ms: 100, transaction_timeout_ms: 5000}}\n\
             modes: [legacy]\nschedule: {schedule}\n"
        );
        let e = crate::from_str(&text, "s.yaml").expect_err(schedule);
        e.problems().iter().map(|p| (p.field.clone(), p.message.clone())).collect()
    }

    #[test]
    fn huge_schedule_times_are_refused_by_validation() {
        let max = u64::MAX;
        let ps = problems(&format!("{{mix: all, end_ms: {max}}}"));
        assert_eq!(ps.len(), 1, "{ps:?}");
        assert_eq!(ps[0].0, "schedule.end_ms");
        assert!(ps[0].1.contains("beyond the longest schedule"), "{ps:?}");
        let ps = problems(&format!("{{mix: all, start_ms: {}, end_ms: {max}}}", max - 1));
        let fields: Vec<&str> = ps.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(fields, ["schedule.start_ms", "schedule.end_ms"], "{ps:?}");
        let ps = problems(&format!("{{mix: workers, end_ms: 9000, quiet_ms: [0, {max}]}}"));
        assert_eq!((ps.len(), ps[0].0.as_str()), (1, "schedule.quiet_ms"), "{ps:?}");
        let ps = problems(&format!("{{mix: workers, end_ms: 9000, duration_ms: [{max}, {max}]}}"));
        assert_eq!((ps.len(), ps[0].0.as_str()), (1, "schedule.duration_ms"), "{ps:?}");
        // A week is allowed; so many faults in it are not.
        scenario(&format!("{{mix: all, end_ms: {MAX_SCHEDULE_MS}, quiet_ms: [60000, 60000]}}"));
        let ps = problems(&format!("{{mix: all, end_ms: {MAX_SCHEDULE_MS}, quiet_ms: [0, 10], duration_ms: [1, 5]}}"));
        assert_eq!((ps.len(), ps[0].0.as_str()), (1, "schedule.end_ms"), "{ps:?}");
        assert!(ps[0].1.contains("more than the 100000"), "{ps:?}");
    }

    #[test]
    fn resolve_ends_and_never_overflows_whatever_the_values() {
        let max = u64::MAX;
        let mut s = scenario("{mix: all, end_ms: 9000}");
        let cases = [
            (0, max, [0, 0], [1, 1]),
            (0, max, [max, max], [1, 1]),
            (0, max, [0, 0], [max - 1, max]),
            (max - 5, max, [0, 3], [1, 2]),
            (max - 1, max, [max, max], [max, max]),
            (max, max, [0, 0], [0, 0]),
            (3, 2, [0, 0], [1, 1]),
        ];
        for (start_ms, end_ms, quiet_ms, duration_ms) in cases {
            let r = s.schedule.as_mut().unwrap();
            (r.start_ms, r.end_ms, r.quiet_ms, r.duration_ms) = (start_ms, end_ms, quiet_ms, duration_ms);
            let began = std::time::Instant::now();
            let res = resolve(&s, 7);
            assert!(began.elapsed() < std::time::Duration::from_secs(30), "{start_ms} {end_ms}");
            assert!(res.generated <= MAX_GENERATED);
            let mut prev_end = 0;
            for (i, [a, b]) in res.spans.iter().copied().enumerate() {
                assert!(a >= start_ms && a < b && b <= end_ms, "span {i}: [{a}, {b})");
                assert!(i == 0 || a >= prev_end, "span {i} overlaps");
                prev_end = b;
            }
        }
        // A dense unbounded window stops at the cap.
        let r = s.schedule.as_mut().unwrap();
        (r.start_ms, r.end_ms, r.quiet_ms, r.duration_ms) = (0, max, [0, 0], [1, 1]);
        assert_eq!(resolve(&s, 7).generated, MAX_GENERATED);
    }

    #[test]
    fn each_family_draws_only_its_own_kinds() {
        for (fam, kinds) in [
            (Family::Brokers, &BROKER_KINDS[..]),
            (Family::Network, &NETWORK_KINDS[..]),
            (Family::Protocol, &PROTOCOL_KINDS[..]),
            (Family::Coordinator, &COORDINATOR_KINDS[..]),
        ] {
            assert!(kinds.iter().all(|k| k.family() == fam), "{fam:?}: {kinds:?}");
        }
    }

    /// FNV-1a over the text: a digest with no dependency that could change it.
    fn digest(text: &str) -> u64 {
        text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
    }

    /// The schedules a seed draws, pinned: a seed in a bug report replays the
    /// same faults. The digests were taken from the generator before `draw`
    /// was split into one function per family; the protocol family's (and so
    /// `all`'s) changed twice since, on purpose, each time it stopped drawing
    /// faults that could not take effect: AddPartitionsToTxn under Transactions
    /// V2 and rules shorter than two checkpoints; then InitProducerId rules for
    /// one subtask's id (the draw is still made, so the other faults of a seed
    /// stayed the same); then faults due while a dropped request's client waits
    /// out its request timeout. Any other change is a regression.
    #[test]
    fn seeds_draw_the_schedules_they_always_drew() {
        let mut got = Vec::new();
        let mut drawn = std::collections::BTreeSet::new();
        for mix in ["all", "workers", "brokers", "network", "protocol", "coordinator"] {
            let mut texts = String::new();
            for (brokers, parallelism) in [(1, 1), (3, 2), (5, 4)] {
                let text = format!(
                    "name: s\ncluster: {{brokers: {brokers}}}\ntopic: {{partitions: 3}}\n\
                     job: {{parallelism: {parallelism}, records_per_subtask: 10, checkpoint_interval_ms: 700, \
                     transaction_timeout_ms: 5000, restart_delay_ms: 900}}\n\
                     modes: [legacy]\nschedule: {{mix: {mix}, start_ms: 1000, end_ms: 90000, \
                     quiet_ms: [200, 2500], duration_ms: [100, 4000]}}\n"
                );
                let s = crate::from_str(&text, "s.yaml").unwrap_or_else(|e| panic!("{}", e.render()));
                for seed in 0..40 {
                    let r = resolve(&s, seed);
                    drawn.extend(r.faults.iter().map(|f| f.kind.kind()));
                    texts.push_str(&serde_json::to_string(&r).unwrap());
                }
            }
            got.push((mix, digest(&texts)));
        }
        let want = [
            ("all", 0x3bb4_1ec2_544c_586e),
            ("workers", 0xc4f0_b382_8ea3_7a7c),
            ("brokers", 0xc24b_3b33_921e_965b),
            ("network", 0xfb2c_d637_7846_5e61),
            ("protocol", 0xcb1b_8517_f8c3_7276),
            ("coordinator", 0x1209_e28a_4eb1_7d4d),
        ];
        assert_eq!(got, want, "a seed draws another schedule than it used to");
        let every_kind = [&BROKER_KINDS[..], &NETWORK_KINDS, &PROTOCOL_KINDS, &COORDINATOR_KINDS]
            .concat()
            .into_iter()
            .chain([FaultKind::KillWorkers, FaultKind::PauseWorkers]);
        for kind in every_kind {
            assert!(drawn.contains(&kind), "no {kind:?} among the pinned draws");
        }
    }

    /// A dropped request silences its client for its request timeout: the next fault
    /// starts after that, not in the silence, where it would meet no frame.
    #[test]
    fn nothing_is_due_while_a_dropped_requests_client_waits_for_its_answer() {
        let s = scenario("{mix: protocol, end_ms: 90000}");
        let mut drops = 0;
        for seed in 0..200 {
            let r = resolve(&s, seed);
            for (i, f) in r.generated_faults().iter().enumerate() {
                if f.kind.kind() != FaultKind::ProtocolDrop {
                    continue;
                }
                drops += 1;
                let [start, end] = r.spans[i];
                let heal = start + f.duration_ms.unwrap_or(0);
                match r.generated_faults().get(i + 1) {
                    Some(next) => {
                        assert!(end >= heal + UNANSWERED_REQUEST_MS, "seed {seed}: span {start}..{end} of {f:?}");
                        let When::AtMs(t) = next.when else { panic!("{next:?}") };
                        assert!(t >= heal + UNANSWERED_REQUEST_MS, "seed {seed}: {next:?} at {t}, heal at {heal}");
                    }
                    // The last fault: its silence may run past the window, whose end bounds its span.
                    None => assert!(heal <= end && end <= 90_000, "seed {seed}: span {start}..{end} of {f:?}"),
                }
            }
        }
        assert!(drops > 20, "protocol-drop is still drawn: {drops}");
        // A window shorter than the silence still draws drops, each the schedule's last fault.
        let short = scenario("{mix: protocol, end_ms: 20000}");
        let last_drops = (0..200)
            .filter_map(|seed| resolve(&short, seed).generated_faults().last().cloned())
            .filter(|f| f.kind.kind() == FaultKind::ProtocolDrop)
            .count();
        assert!(last_drops > 20, "{last_drops}");
    }

    /// A rule for one subtask's transactional id resolves to the id that subtask has open
    /// when it fires: EndTxn and AddPartitionsToTxn under that id are still to come, its
    /// InitProducerId is past. So only the first two are drawn for one subtask.
    #[test]
    fn only_rules_whose_frames_are_still_to_come_name_one_subtask() {
        let s = scenario("{mix: protocol, end_ms: 90000}");
        let (mut inits, mut one_subtask) = (0, 0);
        for seed in 0..200 {
            for f in resolve(&s, seed).faults {
                let apis = f.kind.apis().unwrap_or_default();
                let init = apis.iter().any(|a| a == "InitProducerId");
                inits += usize::from(init);
                let tid = f.kind.transactional_id().is_some();
                one_subtask += usize::from(tid);
                assert!(!(init && tid), "seed {seed}: {f:?}");
                assert!(!tid || apis.iter().all(|a| a == "EndTxn" || a == "AddPartitionsToTxn"), "{f:?}");
            }
        }
        assert!(inits > 0 && one_subtask > 0, "{inits} InitProducerId rules, {one_subtask} for one subtask");
    }

    #[test]
    fn families_follow_the_proxy() {
        assert_eq!(families(Mix::All, true).len(), 5);
        assert_eq!(families(Mix::All, false), vec![Mix::Workers, Mix::Brokers, Mix::Coordinator]);
        assert!(families(Mix::Network, false).is_empty());
        assert!(families(Mix::None, true).is_empty());
    }
}
