//! One entry of a scenario's `faults:`, checked: the values its kind's struct
//! admits but the kind does not, its trigger, its target, the two sides of a
//! network fault, delays, probabilities and protocol parameters. Split from
//! `validate.rs`, which calls [`validate_fault`] for each fault in order.
//!
//! A parameter outside the kind's struct cannot be written down (the loader
//! reports it as a type error), so what is left here are values; each family
//! of parameters has its own step, and the steps run in one fixed order so
//! that the first problem a file reports does not depend on how they are
//! arranged.
use super::fault::does_not_take;
use super::located::{key, Locs, Seg};
use super::schedule::MAX_SCHEDULE_MS;
use super::*;

/// `faults[i]`, checked step by step; every problem goes to `bad`.
pub(super) fn validate_fault(
    s: &Scenario,
    locs: &Locs,
    i: usize,
    f: &FaultSpec,
    bad: &mut impl FnMut(Vec<Seg>, String),
) {
    let check = FaultCheck { s, locs, i, f, k: f.kind.kind() };
    check.rolling_restart_target(bad);
    check.time_bounds(bad);
    check.duration(bad);
    check.trigger(bad);
    check.trigger_pairings(bad);
    check.target(bad);
    check.readers(bad);
    check.network_sides(bad);
    check.blackhole(bad);
    check.delays_and_probabilities(bad);
    check.protocol(bad);
    check.checkpoint(bad);
}

/// One fault under validation: the scenario it belongs to, where it was
/// written (`faults[i]`) and its kind.
struct FaultCheck<'a> {
    s: &'a Scenario,
    locs: &'a Locs,
    i: usize,
    f: &'a FaultSpec,
    k: FaultKind,
}

/// Whose a subtask-addressed fault acts on, as its messages say it.
const ON_WORKERS: &str = "acts on workers";
const ON_SUBTASKS: &str = "acts on subtasks";

impl FaultCheck<'_> {
    /// `faults[i].<field>`.
    fn path(&self, field: &str) -> Vec<Seg> {
        vec![key("faults"), Seg::Index(self.i), key(field)]
    }

    fn parallelism(&self) -> u32 {
        self.s.job.parallelism
    }

    /// `target: all` on a rolling restart says what it does anyway; any other target is refused.
    fn rolling_restart_target(&self, bad: &mut impl FnMut(Vec<Seg>, String)) {
        if let Fault::RollingRestart(Rolling { target: Some(t) }) = &self.f.kind {
            if *t != Target::Named(NamedTarget::All) {
                bad(self.path("target"), does_not_take(self.k, "target"));
            }
        }
    }

    /// Times a run adds to the clock: bounded like a random schedule's.
    fn time_bounds(&self, bad: &mut impl FnMut(Vec<Seg>, String)) {
        let f = self.f;
        let times = [
            ("duration_ms", f.duration_ms),
            ("delay_ms", f.kind.delay_ms()),
            ("jitter_ms", f.kind.jitter_ms()),
            (
                "when",
                match f.when {
                    When::AtMs(t) | When::EveryMs(t) => Some(t),
                    _ => None,
                },
            ),
        ];
        for (field, ms) in times {
            if let Some(ms) = ms.filter(|ms| *ms > MAX_SCHEDULE_MS) {
                bad(self.path(field), format!("{ms} ms: at most {MAX_SCHEDULE_MS} ms (7 days)"));
            }
        }
    }

    /// duration_ms: every spec has the field; the table says who takes it.
    fn duration(&self, bad: &mut impl FnMut(Vec<Seg>, String)) {
        let k = self.k;
        match (self.f.duration_ms, k.duration()) {
            (Some(_), Need::Refused) => bad(self.path("duration_ms"), does_not_take(k, "duration_ms")),
            (None, Need::Required) => {
                bad(self.path("duration_ms"), format!("{} needs duration_ms (how long it lasts)", k.name()))
            }
            (Some(0), _) => bad(self.path("duration_ms"), "must be ≥ 1 ms".into()),
            _ => {}
        }
    }

    /// The `when:` trigger's own values: a period the job can keep, checkpoints and subtasks that exist.
    fn trigger(&self, bad: &mut impl FnMut(Vec<Seg>, String)) {
        let when_path = |names: &[&str]| when_key(self.locs, self.i, names);
        match self.f.when {
            When::AtMs(_) => {}
            When::EveryMs(n) => self.period(n, bad),
            When::CheckpointTriggered(n) => checkpoint_number(bad, when_path(&["checkpoint_triggered"]), n),
            When::CheckpointPersisted(n) => {
                checkpoint_number(bad, when_path(&["checkpoint_persisted", "after_checkpoint_persisted"]), n)
            }
            When::CheckpointNotified(n) => checkpoint_number(bad, when_path(&["checkpoint_notified"]), n),
            When::CommitStarted(n) => checkpoint_number(bad, when_path(&["commit_started"]), n),
            When::CheckpointAcked { checkpoint, subtask } => {
                let mut p = when_path(&["checkpoint_acked"]);
                p.push(key("checkpoint"));
                checkpoint_number(bad, p.clone(), checkpoint);
                p.pop();
                p.push(key("subtask"));
                self.subtask_exists(bad, p, subtask);
            }
            When::TxnOpened { subtask, checkpoint }
            | When::Acknowledged { subtask, checkpoint }
            | When::Committed { subtask, checkpoint } => self.subtask_event(subtask, checkpoint, bad),
        }
    }

    /// `every_ms: n`: at least 100 ms, and longer than the fault lasts.
    fn period(&self, n: u64, bad: &mut impl FnMut(Vec<Seg>, String)) {
        if n < 100 {
            bad(when_key(self.locs, self.i, &["every_ms"]), format!("{n} ms: must be ≥ 100 ms"));
        }
        if let Some(d) = self.f.duration_ms {
            if d >= n && n >= 100 {
                bad(
                    self.path("duration_ms"),
                    format!("{d} ms lasts as long as the period every_ms ({n} ms): a repeated fault must end before it fires again"),
                );
            }
        }
    }

    /// A subtask's own event (`txn_opened`, `acknowledged`, `committed`): the
    /// subtask exists, the checkpoint if named is numbered from 1, and
    /// `acknowledged` needs a share-group source to happen at all.
    fn subtask_event(&self, subtask: u32, checkpoint: Option<u64>, bad: &mut impl FnMut(Vec<Seg>, String)) {
        let name = match self.f.when {
            When::TxnOpened { .. } => "txn_opened",
            When::Acknowledged { .. } => "acknowledged",
            _ => "committed",
        };
        let mut p = when_key(self.locs, self.i, &[name]);
        if name == "acknowledged" && self.s.share_source().is_none() {
            bad(
                p.clone(),
                "acknowledged is a share-group source's event: add source: {type: share-group} or use another trigger"
                    .into(),
            );
        }
        p.push(key("subtask"));
        self.subtask_exists(bad, p.clone(), subtask);
        if let Some(n) = checkpoint {
            p.pop();
            p.push(key("checkpoint"));
            checkpoint_number(bad, p, n);
        }
    }

    fn subtask_exists(&self, bad: &mut impl FnMut(Vec<Seg>, String), path: Vec<Seg>, st: u32) {
        if st >= self.parallelism() {
            bad(path, format!("subtask {st} does not exist (parallelism {})", self.parallelism()));
        }
    }

    /// What goes with one trigger only: `times` with `every_ms`, `after_ms`
    /// with an event, coordinator-crash with `after_checkpoint_persisted`.
    fn trigger_pairings(&self, bad: &mut impl FnMut(Vec<Seg>, String)) {
        let f = self.f;
        match f.times {
            Some(_) if !matches!(f.when, When::EveryMs(_)) => {
                bad(self.path("times"), "times only goes with an `every_ms` trigger (other triggers fire once)".into())
            }
            Some(0) => bad(self.path("times"), "must be ≥ 1".into()),
            _ => {}
        }
        if f.after_ms.is_some() && matches!(f.when, When::AtMs(_) | When::EveryMs(_)) {
            bad(
                self.path("after_ms"),
                "after_ms goes with an event trigger; with a time trigger, add it to the time".into(),
            )
        }
        if self.k == FaultKind::CoordinatorCrash && !matches!(f.when, When::CheckpointPersisted(_)) {
            bad(
                self.path("when"),
                "coordinator-crash fires between a checkpoint's persist and its notification: use `when: {after_checkpoint_persisted: N}`".into(),
            );
        }
    }

    /// `target:` of a fault on workers or subtasks, or of one on brokers.
    fn target(&self, bad: &mut impl FnMut(Vec<Seg>, String)) {
        let tp = self.path("target");
        if let Some((target, whose)) = self.subtask_target() {
            self.subtask_target_exists(target, whose, &tp, bad);
        } else {
            match &self.f.kind {
                Fault::BrokerKill(b) | Fault::BrokerStop(b) | Fault::BrokerRestart(b) | Fault::BrokerPause(b) => {
                    check_broker_target(self.s, &b.target, &tp, bad)
                }
                Fault::NetBlackhole(Blackhole { target: Some(t), .. }) => check_broker_target(self.s, t, &tp, bad),
                _ => {}
            }
        }
    }

    /// A fault on the live readers: the scenario has `readers:`, and its target names readers
    /// that exist (indexes 0..count, or all), never a broker's role.
    fn readers(&self, bad: &mut impl FnMut(Vec<Seg>, String)) {
        let (Fault::KillReaders(ReaderTargets { target })
        | Fault::PauseReaders(ReaderTargets { target })
        | Fault::RestartReaders(ReaderTargets { target })) = &self.f.kind
        else {
            return;
        };
        let kind = self.k.name();
        let Some(r) = &self.s.readers else {
            bad(
                vec![key("faults"), Seg::Index(self.i), key("kind")],
                format!("{kind} acts on the live readers, and this scenario has none: add `readers: {{count: N, mode: subscribe}}`"),
            );
            return;
        };
        let tp = self.path("target");
        match target {
            None | Some(Target::Named(NamedTarget::All)) => {}
            Some(Target::Ids(ids)) => check_ids(bad, &tp, ids, 0, i64::from(r.count) - 1, "reader"),
            Some(_) => bad(tp, format!("{kind} acts on the live readers: use all or reader indexes (0..{})", r.count)),
        }
    }

    /// The target of a kind that addresses workers or subtasks, and which of the two.
    fn subtask_target(&self) -> Option<(&Option<Target>, &'static str)> {
        match &self.f.kind {
            Fault::KillWorkers(Workers { target }) | Fault::PauseWorkers(Workers { target }) => {
                Some((target, ON_WORKERS))
            }
            Fault::JobOutage(Outage { target }) => Some((target, ON_WORKERS)),
            Fault::DropNotification(Notification { target, .. })
            | Fault::DeclineCheckpoint(Notification { target, .. })
            | Fault::DelayNotification(NotificationDelay { target, .. }) => Some((target, ON_SUBTASKS)),
            _ => None,
        }
    }

    /// A worker or subtask target: all or ids that exist, never a broker's role.
    fn subtask_target_exists(
        &self,
        target: &Option<Target>,
        whose: &str,
        tp: &[Seg],
        bad: &mut impl FnMut(Vec<Seg>, String),
    ) {
        let (k, kind, j) = (self.k, self.k.name(), &self.s.job);
        let tp = tp.to_vec();
        match target {
            None | Some(Target::Named(NamedTarget::All)) => {}
            Some(Target::Named(NamedTarget::TxnCoordinator)) | Some(Target::Coordinator { .. }) => {
                bad(tp, format!("txn-coordinator is a broker; {kind} {whose}: use all or subtask ids"))
            }
            Some(Target::TxnLogFollower { .. }) => {
                bad(tp, format!("txn-log-follower is a broker; {kind} {whose}: use all or subtask ids"))
            }
            Some(Target::Named(NamedTarget::GroupCoordinator)) => {
                bad(tp, format!("group-coordinator is a broker; {kind} {whose}: use all or subtask ids"))
            }
            Some(Target::Named(NamedTarget::Controller | NamedTarget::Leader)) | Some(Target::Leader { .. }) => {
                bad(tp, format!("controller and leader are brokers; {kind} {whose}: use all or subtask ids"))
            }
            Some(Target::Ids(_)) if k == FaultKind::JobOutage => {
                bad(tp, "job-outage stops every worker: leave target out (or write all)".into())
            }
            // flink-kafkasink's workers: TaskManagers 0..taskmanagers, then the JobManager.
            Some(Target::Ids(ids)) if self.s.modes.contains(&SinkMode::FlinkKafkasink) && k != FaultKind::JobOutage => {
                let jm = i64::from(self.s.flink_spec().taskmanagers);
                let hi = if whose == ON_WORKERS {
                    jm.max(i64::from(j.parallelism) - 1)
                } else {
                    i64::from(j.parallelism) - 1
                };
                check_ids(bad, &tp, ids, 0, hi, "worker")
            }
            Some(Target::Ids(ids)) => check_ids(bad, &tp, ids, 0, i64::from(j.parallelism) - 1, "subtask"),
        }
    }

    /// A network fault's `from:` and `to:`: groups that exist, a broker on one
    /// side at least, and no node on both.
    fn network_sides(&self, bad: &mut impl FnMut(Vec<Seg>, String)) {
        let kind = &self.f.kind;
        if let Some(gs) = kind.from() {
            self.groups("from", gs, bad);
        }
        if let Some(gs) = kind.to() {
            self.groups("to", gs, bad);
        }
        if let (Some(from), Some(to)) = (kind.from(), kind.to()) {
            self.sides_apart(from, to, bad);
        }
    }

    /// One side of a network fault: not empty, nodes that exist, each once.
    fn groups(&self, field: &str, gs: &[Group], bad: &mut impl FnMut(Vec<Seg>, String)) {
        let (parallelism, brokers) = (self.parallelism(), self.s.cluster.brokers);
        if gs.is_empty() {
            bad(self.path(field), "an empty list of groups".into());
        }
        for (n, g) in gs.iter().enumerate() {
            let mut p = self.path(field);
            p.push(Seg::Index(n));
            match *g {
                Group::Worker(w) if w >= parallelism => bad(
                    p,
                    format!(
                        "{g}: no such worker (parallelism {}: worker-0..worker-{})",
                        parallelism,
                        parallelism.saturating_sub(1)
                    ),
                ),
                Group::Broker(b) if b < 1 || b as usize > brokers => {
                    bad(p, format!("{g}: no such broker (brokers are broker-1..broker-{})", brokers))
                }
                _ if gs[..n].contains(g) => bad(p, format!("{g} is listed twice")),
                _ => {}
            }
        }
    }

    /// The proxy sits in front of brokers: a broker on one side at least, and no node on both.
    fn sides_apart(&self, from: &[Group], to: &[Group], bad: &mut impl FnMut(Vec<Seg>, String)) {
        let is_b = |g: &Group| matches!(g, Group::Brokers | Group::Broker(_));
        if !from.iter().chain(to).any(is_b) {
            bad(
                self.path("to"),
                "no broker on either side: the proxy sits in front of broker listeners, and workers do not talk to each other".into(),
            );
            return;
        }
        for g in from {
            let overlap = to.iter().any(|t| {
                t == g
                    || matches!((g, t), (Group::Workers, Group::Worker(_)) | (Group::Worker(_), Group::Workers))
                    || matches!((g, t), (Group::Brokers, Group::Broker(_)) | (Group::Broker(_), Group::Brokers))
            });
            if overlap {
                bad(self.path("to"), format!("{g} is on both sides: a node cannot be cut off from itself"));
                break;
            }
        }
    }

    /// net-blackhole: brokers by `target:` or by `to:`, one of the two.
    fn blackhole(&self, bad: &mut impl FnMut(Vec<Seg>, String)) {
        let Fault::NetBlackhole(b) = &self.f.kind else { return };
        match (&b.target, &b.to) {
            (None, None) => bad(
                self.path("target"),
                "net-blackhole needs target: the broker ids (or roles) to cut off, or to: [broker-N]".into(),
            ),
            (Some(_), Some(_)) => bad(self.path("to"), "give target or to, not both".into()),
            (None, Some(to)) => {
                if let Some(g) = to.iter().find(|g| matches!(g, Group::Workers | Group::Worker(_))) {
                    bad(self.path("to"), format!("{g}: net-blackhole cuts off brokers; to takes brokers or broker-N"));
                }
            }
            _ => {}
        }
    }

    /// A delay of at least 1 ms with no more jitter than delay, a bandwidth
    /// above 0, a probability in (0, 1].
    fn delays_and_probabilities(&self, bad: &mut impl FnMut(Vec<Seg>, String)) {
        let kind = &self.f.kind;
        match (kind.delay_ms(), kind.jitter_ms()) {
            (Some(0), _) => bad(self.path("delay_ms"), "must be ≥ 1 ms".into()),
            (Some(d), Some(jt)) if jt > d => bad(
                self.path("jitter_ms"),
                format!("{jt} ms is above delay_ms ({d} ms): a frame cannot be held less than 0 ms"),
            ),
            _ => {}
        }
        if let Fault::NetBandwidth(Bandwidth { bytes_per_sec: 0, .. }) = kind {
            bad(
                self.path("bytes_per_sec"),
                "must be ≥ 1 byte a second (0 would carry nothing: that is net-partition)".into(),
            );
        }
        if let Some(p) = kind.probability() {
            if !(p > 0.0 && p <= 1.0) {
                bad(self.path("probability"), format!("{p}: must be in (0, 1] (0 would never act)"));
            }
        }
    }

    /// A protocol fault's frames: APIs Kafka has, each once; an error code
    /// Kafka has; frames counted from 1; a transactional id that can occur.
    fn protocol(&self, bad: &mut impl FnMut(Vec<Seg>, String)) {
        let kind = &self.f.kind;
        let Some(a) = kind.apis() else { return };
        self.apis(a, bad);
        if let Some(e) = kind.error() {
            if let Err(msg) = sinkhole_kafka::errors::error_code(e) {
                bad(self.path("error"), msg);
            }
        }
        if kind.nth() == Some(0) {
            bad(self.path("nth"), "frames are counted from 1: must be ≥ 1".into());
        }
        match kind.transactional_id() {
            Some(TidSelector::Subtask { subtask }) if *subtask >= self.parallelism() => {
                let mut p = self.path("transactional_id");
                p.push(key("subtask"));
                bad(p, format!("subtask {subtask} does not exist (parallelism {})", self.parallelism()));
            }
            Some(TidSelector::Literal(t)) if t.is_empty() => {
                bad(self.path("transactional_id"), "an empty transactional id".into())
            }
            _ => {}
        }
    }

    /// `apis:` not empty, each a Kafka API, none twice (under any of its names).
    fn apis(&self, a: &[String], bad: &mut impl FnMut(Vec<Seg>, String)) {
        if a.is_empty() {
            bad(self.path("apis"), "an empty list of APIs".into());
        }
        for (n, name) in a.iter().enumerate() {
            let mut p = self.path("apis");
            p.push(Seg::Index(n));
            match sinkhole_kafka::api::api_key(name) {
                None => bad(p, unknown_api(name)),
                Some(key_) if a[..n].iter().any(|o| sinkhole_kafka::api::api_key(o) == Some(key_)) => {
                    bad(p, format!("{name} is listed twice"))
                }
                Some(_) => {}
            }
        }
    }

    /// A coordinator fault's `checkpoint:`, numbered from 1.
    fn checkpoint(&self, bad: &mut impl FnMut(Vec<Seg>, String)) {
        if self.f.kind.checkpoint() == Some(0) {
            bad(self.path("checkpoint"), "checkpoints are numbered from 1: must be ≥ 1".into());
        }
    }
}

/// A checkpoint a trigger names: they are numbered from 1.
fn checkpoint_number(bad: &mut impl FnMut(Vec<Seg>, String), path: Vec<Seg>, n: u64) {
    if n == 0 {
        bad(path, "checkpoints are numbered from 1: must be ≥ 1".into());
    }
}

/// The YAML key under which a `when` variant was written (aliases included),
/// so its problems point at the user's text.
fn when_key(locs: &Locs, i: usize, names: &[&str]) -> Vec<Seg> {
    let base = |n: &str| vec![key("faults"), Seg::Index(i), key("when"), key(n)];
    names.iter().map(|n| base(n)).find(|p| locs.has(p)).unwrap_or_else(|| base(names[0]))
}

/// "Endtxn": not an API; the nearest names help more than the whole list.
fn unknown_api(name: &str) -> String {
    let f: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    let near: Vec<&str> = sinkhole_kafka::api::api_names()
        .into_iter()
        .filter(|n| {
            let l = n.to_ascii_lowercase();
            f.len() >= 3 && (l.contains(&f) || f.contains(&l))
        })
        .take(4)
        .collect();
    if near.is_empty() {
        format!("{name:?} is not a Kafka API (use Kafka's names: Produce, FindCoordinator, InitProducerId, AddPartitionsToTxn, EndTxn, …)")
    } else {
        format!("{name:?} is not a Kafka API; did you mean {}?", near.join(" or "))
    }
}

/// A broker fault's target: node ids, all, or a role.
fn check_broker_target(s: &Scenario, t: &Target, tp: &[Seg], bad: &mut impl FnMut(Vec<Seg>, String)) {
    let (c, j) = (&s.cluster, &s.job);
    match t {
        Target::Named(NamedTarget::GroupCoordinator) if s.share_source().is_none() => bad(
            tp.to_vec(),
            "group-coordinator is the broker coordinating the share group: add source: {type: share-group}".into(),
        ),
        Target::Named(_) => {}
        Target::Coordinator { txn_coordinator } if *txn_coordinator >= j.parallelism => {
            let mut p = tp.to_vec();
            p.push(key("txn-coordinator"));
            bad(p, format!("txn-coordinator of subtask {txn_coordinator}, but parallelism is {}", j.parallelism))
        }
        Target::Leader { leader } if *leader >= s.topic.partitions => {
            let mut p = tp.to_vec();
            p.push(key("leader"));
            bad(
                p,
                format!(
                    "leader of partition {leader}, but the topic has {} partition(s): 0..={}",
                    s.topic.partitions,
                    s.topic.partitions.saturating_sub(1)
                ),
            )
        }
        Target::TxnLogFollower { txn_log_follower } if *txn_log_follower >= j.parallelism => {
            let mut p = tp.to_vec();
            p.push(key("txn-log-follower"));
            bad(p, format!("txn-log-follower of subtask {txn_log_follower}, but parallelism is {}", j.parallelism))
        }
        // One broker: `__transaction_state` has no follower.
        Target::TxnLogFollower { .. } if c.brokers < 2 => {
            bad(tp.to_vec(), "txn-log-follower needs a replicated __transaction_state: brokers: 3 (or 5)".into())
        }
        Target::Coordinator { .. } | Target::Leader { .. } | Target::TxnLogFollower { .. } => {}
        Target::Ids(ids) => check_ids(bad, tp, ids, 1, c.brokers as i64, "node"),
    }
}

fn check_ids(
    bad: &mut (impl FnMut(Vec<Seg>, String) + ?Sized),
    path: &[Seg],
    ids: &[i64],
    lo: i64,
    hi: i64,
    what: &str,
) {
    if ids.is_empty() {
        bad(path.to_vec(), format!("an empty list of {what} ids"));
    }
    for (k, id) in ids.iter().enumerate() {
        let mut p = path.to_vec();
        p.push(Seg::Index(k));
        if *id < lo || *id > hi {
            let range = if hi < lo { "none".to_string() } else { format!("{lo}..={hi}") };
            bad(p, format!("{what} {id} does not exist (valid: {range})"));
        } else if ids[..k].contains(id) {
            bad(p, format!("{what} {id} is listed twice"));
        }
    }
}
