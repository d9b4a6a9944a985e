//! One fault of a scenario's schedule, and the fault kinds.
//!
//! A [`FaultSpec`] is when a fault fires and how long it lasts; its [`Fault`]
//! is what it is: the kind and exactly the parameters that kind takes, one
//! struct per shape of parameters. A parameter a kind does not take cannot be
//! written down (the loader reports it as a type error, naming the kinds that
//! take it), and a required one cannot be left out.
//!
//! [`FaultKind`] is the plain name of a kind; the table in this file
//! (`fault_kinds!` below) says everything else about each kind once: its
//! YAML name, its family, whether it needs the proxy, whether it takes
//! `duration_ms`, what it does, and its parameter struct, whose field list
//! is read from the struct itself ([`FaultKind::params`]). Validation hints,
//! the random schedule's families, the proxy decision, the runner and the
//! check of docs/SCENARIOS.md all ask the table.
//!
//! How a spec is written in YAML (flat, `kind:` beside the trigger and the
//! parameters) is in `fault_serde`.
use serde::{Deserialize, Serialize};

use super::fields::fields_of;
use super::{ErrorName, FrameDirection, Group, NetDirection, Target, TidSelector, When};

/// One fault in the schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultSpec {
    /// A label for the history and report (default: kind and index).
    pub name: Option<String>,
    pub when: When,
    /// How long the fault lasts before it is healed (a pause, an outage, a
    /// network or protocol fault, a broker kept down). Without it a fault that
    /// has a heal lasts until the job ends. Which kinds take it, and which
    /// need it: [`FaultKind::duration`].
    pub duration_ms: Option<u64>,
    /// `every_ms` triggers: how many times (default: until the job ends).
    pub times: Option<u32>,
    /// Event triggers: fire this many milliseconds after the event rather than at it (a
    /// window the scenario widened, entered some way in; the subject is not held meanwhile).
    pub after_ms: Option<u64>,
    /// What the fault is: `kind: net-delay` and that kind's parameters.
    pub kind: Fault,
}

impl FaultSpec {
    /// A fault with only a kind (and its parameters) and a trigger.
    pub fn new(kind: Fault, when: When) -> FaultSpec {
        FaultSpec { name: None, when, duration_ms: None, times: None, after_ms: None, kind }
    }

    /// Whether the fault belongs to one job rather than to the cluster every
    /// job shares. When modes run side by side, a job's fault (its workers,
    /// its coordinator, a protocol fault on one transactional id) fires per
    /// mode on that mode's own events; a cluster fault (a broker, the
    /// network, a protocol fault on every id) fires once for all of them.
    pub fn job_scoped(&self) -> bool {
        match self.kind.kind().family() {
            Family::Workers | Family::Coordinator => true,
            Family::Protocol => self.kind.transactional_id().is_some(),
            Family::Brokers | Family::Network => false,
        }
    }
}

// ---------------------------------------------------------------------------
// Parameters, one struct per shape. Fields are declared in the order scenario
// files and schedule.json have always listed them (target, from, to,
// direction, delay_ms, jitter_ms, probability, apis, frames, error,
// transactional_id, nth, checkpoint): serialization follows it.

/// `kill-workers`, `pause-workers`: which workers are signalled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workers {
    /// Subtask ids, or `all` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

/// `kill-readers`, `pause-readers`, `restart-readers`: which of the scenario's live readers
/// (`readers:`) are hit, by index (0..count), or `all` (the default), as worker faults name
/// subtasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReaderTargets {
    /// Reader indexes, or `all` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

/// `job-outage`: every worker goes down, so a target can only say `all`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    /// `all` only (validation refuses ids and broker roles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

/// Broker faults: which brokers (required).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Brokers {
    /// Node ids, `all`, or a role resolved when the fault fires
    /// (`txn-coordinator`, `{txn-coordinator: S}`, `controller`, `leader`, `{leader: P}`).
    pub target: Target,
}

/// `rolling-restart`: every broker in turn; `target: all` says so and is accepted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rolling {
    /// `all` only (validation refuses anything else).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
}

/// `net-partition`: frames between two groups are dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Partition {
    /// `workers`, `worker-N`, `brokers`, `broker-N`.
    pub from: Vec<Group>,
    pub to: Vec<Group>,
    /// `two-way` (default) or `one-way` (from → to only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<NetDirection>,
}

/// `net-blackhole`: the brokers cut off, as `target` or as `to` (exactly one;
/// validation checks it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blackhole {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Vec<Group>>,
}

/// `net-reset`: the link between two groups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub from: Vec<Group>,
    pub to: Vec<Group>,
}

/// `net-delay`: every frame between two groups held delay_ms ± jitter_ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delay {
    pub from: Vec<Group>,
    pub to: Vec<Group>,
    pub delay_ms: u64,
    /// Each frame's delay is delay_ms ± a uniform jitter (seeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<u64>,
}

/// `net-loss`: each frame between two groups dropped with a probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Loss {
    pub from: Vec<Group>,
    pub to: Vec<Group>,
    /// 0 < p ≤ 1 (seeded).
    pub probability: f64,
}

/// `net-bandwidth`: the link between two groups carries at most
/// bytes_per_sec in each direction (the proxy paces whole frames).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bandwidth {
    pub from: Vec<Group>,
    pub to: Vec<Group>,
    /// ≥ 1; shared by every connection between the two groups.
    pub bytes_per_sec: u64,
}

/// `protocol-drop`: frames of chosen Kafka APIs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Frames {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Vec<Group>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Vec<Group>>,
    /// The chance, 0 < p ≤ 1, that a matching frame is acted on (seeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    /// API names as Kafka spells them: `EndTxn`, `Produce`, `InitProducerId`, ...
    pub apis: Vec<String>,
    /// `request` (default) or `response`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<FrameDirection>,
    /// Only frames of this transactional id: the current id of subtask S
    /// (`{subtask: S}`, resolved when the fault fires) or a literal id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<TidSelector>,
    /// Only the n-th matching frame (1-based) after the fault starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u64>,
}

/// `protocol-delay`: as [`Frames`], each matching frame held delay_ms ± jitter_ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FramesDelay {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Vec<Group>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Vec<Group>>,
    pub delay_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    pub apis: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<FrameDirection>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<TidSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u64>,
}

/// `protocol-error`: as [`Frames`], answered (requests) or rewritten
/// (responses) with a Kafka error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FramesError {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Vec<Group>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Vec<Group>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,
    pub apis: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<FrameDirection>,
    /// By Kafka name (`COORDINATOR_NOT_AVAILABLE`) or code.
    pub error: ErrorName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<TidSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u64>,
}

/// `drop-notification`, `decline-checkpoint`: which subtasks, which checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notification {
    /// Subtask ids, or `all` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// The checkpoint acted on (default: the trigger's, else the next one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<u64>,
}

/// `delay-notification`: as [`Notification`], delivered delay_ms late.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotificationDelay {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    pub delay_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<u64>,
}

/// A kind without parameters (`coordinator-crash`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

// ---------------------------------------------------------------------------
// The table

/// The fault families: what a kind acts on, and a random schedule's mixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// The job's processes: its workers and, with `readers:`, its live readers (the
    /// downstream consumers of its topic).
    Workers,
    /// The Kafka nodes.
    Brokers,
    /// Links between nodes, through the rig's TCP proxy.
    Network,
    /// Frames of chosen Kafka APIs, through the Kafka-aware proxy.
    Protocol,
    /// The checkpoint coordinator (Flink's JobManager) and its messages.
    Coordinator,
}

impl Family {
    pub const ALL: [Family; 5] =
        [Family::Workers, Family::Brokers, Family::Network, Family::Protocol, Family::Coordinator];

    pub fn name(self) -> &'static str {
        match self {
            Family::Workers => "workers",
            Family::Brokers => "brokers",
            Family::Network => "network",
            Family::Protocol => "protocol",
            Family::Coordinator => "coordinator",
        }
    }

    /// The family's kinds, in table order.
    pub fn kinds(self) -> impl Iterator<Item = FaultKind> {
        FaultKind::all().iter().copied().filter(move |k| k.family() == self)
    }

    /// Whether every kind of the family acts through the proxy.
    pub fn needs_proxy(self) -> bool {
        self.kinds().all(FaultKind::needs_proxy)
    }
}

/// Whether a kind takes `duration_ms` (the one parameter every spec has a
/// field for, because it says how long any fault lasts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Refused,
    Optional,
    Required,
}

/// One row of the table of fault kinds.
#[derive(Debug)]
pub struct KindInfo {
    pub kind: FaultKind,
    /// As written in YAML.
    pub name: &'static str,
    pub family: Family,
    /// Whether it acts through the rig's proxy in front of every listener.
    pub proxy: bool,
    pub duration: Need,
    /// What it does, in one line.
    pub about: &'static str,
    /// Its parameters: the fields of its struct, as serde's derive lists them.
    params: fn() -> &'static [&'static str],
}

/// The table, written once: each kind's variant and parameter struct, YAML
/// name, family, proxy, duration_ms, and what it does. It generates
/// [`FaultKind`], [`Fault`] and the rows.
macro_rules! fault_kinds {
    ($( $kind:ident($params:ident) $name:literal, $family:ident, proxy: $proxy:literal,
        duration: $duration:ident, $about:literal; )+) => {
        /// A fault kind, by its YAML name (`kind: net-delay`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum FaultKind {
            $( #[doc = $about] #[serde(rename = $name)] $kind, )+
        }

        /// What a fault is: its kind and exactly the parameters that kind
        /// takes. In YAML internally tagged by `kind` (kebab-case names), the
        /// parameters beside it: `{kind: net-delay, from: [workers], to:
        /// [brokers], delay_ms: 200}`.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Fault {
            $( #[doc = $about] $kind($params), )+
        }

        const ALL_KINDS: &[FaultKind] = &[$( FaultKind::$kind ),+];

        const KINDS: &[KindInfo] = &[$(
            KindInfo {
                kind: FaultKind::$kind,
                name: $name,
                family: Family::$family,
                proxy: $proxy,
                duration: Need::$duration,
                about: $about,
                params: fields_of::<$params>,
            },
        )+];

        impl Fault {
            pub fn kind(&self) -> FaultKind {
                match self {
                    $( Fault::$kind(_) => FaultKind::$kind, )+
                }
            }

            /// The parameters of `kind`, read by its struct's own Deserialize.
            pub(super) fn from_params<'de, D: serde::Deserializer<'de>>(
                kind: FaultKind,
                d: D,
            ) -> Result<Fault, D::Error> {
                match kind {
                    $( FaultKind::$kind => $params::deserialize(d).map(Fault::$kind), )+
                }
            }

            /// The parameters, written by their struct's own Serialize.
            pub(super) fn serialize_params<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( Fault::$kind(p) => p.serialize(s), )+
                }
            }
        }
    };
}

fault_kinds! {
    KillWorkers(Workers) "kill-workers", Workers, proxy: false, duration: Refused,
        "SIGKILL chosen workers; the job fails over (restart after restart_delay_ms).";
    PauseWorkers(Workers) "pause-workers", Workers, proxy: false, duration: Required,
        "SIGSTOP chosen workers for duration_ms, then SIGCONT.";
    JobOutage(Outage) "job-outage", Workers, proxy: false, duration: Required,
        "SIGKILL every worker and keep the job down for duration_ms before the restore.";
    KillReaders(ReaderTargets) "kill-readers", Workers, proxy: false, duration: Optional,
        "Drop chosen live readers' consumers without a close (no last commit, no leave); each starts again as a new incarnation after duration_ms (without one, when the job ends).";
    PauseReaders(ReaderTargets) "pause-readers", Workers, proxy: false, duration: Required,
        "Chosen live readers stop polling for duration_ms; a subscribe reader paused past max.poll.interval.ms (6 s) is put out of its group.";
    RestartReaders(ReaderTargets) "restart-readers", Workers, proxy: false, duration: Refused,
        "Chosen live readers close their consumers cleanly (a last commit, leaving the group) and start new incarnations at once.";
    BrokerKill(Brokers) "broker-kill", Brokers, proxy: false, duration: Optional,
        "SIGKILL a broker; it restarts after duration_ms (without one, when the job ends).";
    BrokerStop(Brokers) "broker-stop", Brokers, proxy: false, duration: Optional,
        "SIGTERM a broker and wait for its clean shutdown; down for duration_ms as broker-kill.";
    BrokerRestart(Brokers) "broker-restart", Brokers, proxy: false, duration: Refused,
        "Stop and start a broker (same id and data).";
    BrokerPause(Brokers) "broker-pause", Brokers, proxy: false, duration: Required,
        "SIGSTOP a broker for duration_ms, then SIGCONT.";
    RollingRestart(Rolling) "rolling-restart", Brokers, proxy: false, duration: Refused,
        "Restart every broker in turn, waiting until nothing is under-replicated (Kafka's transactions system test).";
    NetPartition(Partition) "net-partition", Network, proxy: true, duration: Optional,
        "Frames between from and to are dropped (connections hang, as with an iptables DROP); one-way: from → to.";
    NetBlackhole(Blackhole) "net-blackhole", Network, proxy: true, duration: Optional,
        "The target brokers receive nothing from anyone and answer nothing.";
    NetReset(Link) "net-reset", Network, proxy: true, duration: Optional,
        "Connections between from and to are reset, and new ones at once while the fault lasts.";
    NetDelay(Delay) "net-delay", Network, proxy: true, duration: Optional,
        "Every frame between from and to is held delay_ms ± jitter_ms.";
    NetLoss(Loss) "net-loss", Network, proxy: true, duration: Optional,
        "Each frame between from and to is dropped with probability (whole Kafka frames).";
    NetBandwidth(Bandwidth) "net-bandwidth", Network, proxy: true, duration: Optional,
        "The link between from and to carries at most bytes_per_sec each way (whole frames, paced).";
    ProtocolDrop(Frames) "protocol-drop", Protocol, proxy: true, duration: Optional,
        "Matching frames are swallowed.";
    ProtocolDelay(FramesDelay) "protocol-delay", Protocol, proxy: true, duration: Optional,
        "Matching frames are held delay_ms ± jitter_ms.";
    ProtocolError(FramesError) "protocol-error", Protocol, proxy: true, duration: Optional,
        "Matching requests are answered by the proxy with error; matching responses get their error codes replaced.";
    DropNotification(Notification) "drop-notification", Coordinator, proxy: false, duration: Refused,
        "The checkpoint-complete notification is not sent to the targets (they commit it with the next one).";
    DelayNotification(NotificationDelay) "delay-notification", Coordinator, proxy: false, duration: Refused,
        "The notification reaches the targets delay_ms late.";
    CoordinatorCrash(NoParams) "coordinator-crash", Coordinator, proxy: false, duration: Refused,
        "The coordinator dies after a checkpoint is persisted, before it is notified; the job restores from the store.";
    DeclineCheckpoint(Notification) "decline-checkpoint", Coordinator, proxy: false, duration: Refused,
        "The targets decline the checkpoint: it is aborted.";
}

impl FaultKind {
    /// Every kind, in table order.
    pub fn all() -> &'static [FaultKind] {
        ALL_KINDS
    }

    /// The kind's row of the table.
    pub fn info(self) -> &'static KindInfo {
        // The macro writes ALL_KINDS and KINDS from the same rows, in the
        // order it declares the variants.
        &KINDS[self as usize]
    }

    /// The name as written in YAML.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    pub fn family(self) -> Family {
        self.info().family
    }

    /// Network and protocol faults act through the rig's TCP proxy.
    pub fn needs_proxy(self) -> bool {
        self.info().proxy
    }

    pub fn duration(self) -> Need {
        self.info().duration
    }

    pub fn about(self) -> &'static str {
        self.info().about
    }

    /// The parameters the kind takes (required or optional), as YAML names:
    /// its struct's fields, in their order.
    pub fn params(self) -> &'static [&'static str] {
        (self.info().params)()
    }

    /// Whether the kind takes a parameter: one of its struct's, or `duration_ms`.
    pub fn takes(self, param: &str) -> bool {
        if param == "duration_ms" {
            self.duration() != Need::Refused
        } else {
            self.params().contains(&param)
        }
    }

    /// The kinds that take a parameter, in table order.
    pub fn takers(param: &str) -> Vec<FaultKind> {
        FaultKind::all().iter().copied().filter(|k| k.takes(param)).collect()
    }

    /// Every parameter some kind takes, `duration_ms` first, then in the
    /// order the kinds' structs list them.
    pub fn parameters() -> Vec<&'static str> {
        let mut out = vec!["duration_ms"];
        for k in FaultKind::all() {
            for p in k.params() {
                if !out.contains(p) {
                    out.push(p);
                }
            }
        }
        out
    }
}

impl PartialEq<FaultKind> for Fault {
    fn eq(&self, other: &FaultKind) -> bool {
        self.kind() == *other
    }
}

impl Fault {
    /// The kind's YAML name.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    // Accessors by parameter, for code that handles several kinds alike
    // (None: this kind does not take it, or it was left out).

    pub fn target(&self) -> Option<&Target> {
        match self {
            Fault::KillWorkers(p) | Fault::PauseWorkers(p) => p.target.as_ref(),
            Fault::JobOutage(p) => p.target.as_ref(),
            Fault::KillReaders(p) | Fault::PauseReaders(p) | Fault::RestartReaders(p) => p.target.as_ref(),
            Fault::BrokerKill(p) | Fault::BrokerStop(p) | Fault::BrokerRestart(p) | Fault::BrokerPause(p) => {
                Some(&p.target)
            }
            Fault::RollingRestart(p) => p.target.as_ref(),
            Fault::NetBlackhole(p) => p.target.as_ref(),
            Fault::DropNotification(p) | Fault::DeclineCheckpoint(p) => p.target.as_ref(),
            Fault::DelayNotification(p) => p.target.as_ref(),
            _ => None,
        }
    }

    pub fn from(&self) -> Option<&[Group]> {
        match self {
            Fault::NetPartition(p) => Some(&p.from),
            Fault::NetReset(p) => Some(&p.from),
            Fault::NetDelay(p) => Some(&p.from),
            Fault::NetLoss(p) => Some(&p.from),
            Fault::NetBandwidth(p) => Some(&p.from),
            Fault::ProtocolDrop(p) => p.from.as_deref(),
            Fault::ProtocolDelay(p) => p.from.as_deref(),
            Fault::ProtocolError(p) => p.from.as_deref(),
            _ => None,
        }
    }

    pub fn to(&self) -> Option<&[Group]> {
        match self {
            Fault::NetPartition(p) => Some(&p.to),
            Fault::NetBlackhole(p) => p.to.as_deref(),
            Fault::NetReset(p) => Some(&p.to),
            Fault::NetDelay(p) => Some(&p.to),
            Fault::NetLoss(p) => Some(&p.to),
            Fault::NetBandwidth(p) => Some(&p.to),
            Fault::ProtocolDrop(p) => p.to.as_deref(),
            Fault::ProtocolDelay(p) => p.to.as_deref(),
            Fault::ProtocolError(p) => p.to.as_deref(),
            _ => None,
        }
    }

    pub fn direction(&self) -> Option<NetDirection> {
        match self {
            Fault::NetPartition(p) => p.direction,
            _ => None,
        }
    }

    pub fn delay_ms(&self) -> Option<u64> {
        match self {
            Fault::NetDelay(p) => Some(p.delay_ms),
            Fault::ProtocolDelay(p) => Some(p.delay_ms),
            Fault::DelayNotification(p) => Some(p.delay_ms),
            _ => None,
        }
    }

    pub fn jitter_ms(&self) -> Option<u64> {
        match self {
            Fault::NetDelay(p) => p.jitter_ms,
            Fault::ProtocolDelay(p) => p.jitter_ms,
            _ => None,
        }
    }

    pub fn probability(&self) -> Option<f64> {
        match self {
            Fault::NetLoss(p) => Some(p.probability),
            Fault::ProtocolDrop(p) => p.probability,
            Fault::ProtocolDelay(p) => p.probability,
            Fault::ProtocolError(p) => p.probability,
            _ => None,
        }
    }

    pub fn apis(&self) -> Option<&[String]> {
        match self {
            Fault::ProtocolDrop(p) => Some(&p.apis),
            Fault::ProtocolDelay(p) => Some(&p.apis),
            Fault::ProtocolError(p) => Some(&p.apis),
            _ => None,
        }
    }

    pub fn frames(&self) -> Option<FrameDirection> {
        match self {
            Fault::ProtocolDrop(p) => p.frames,
            Fault::ProtocolDelay(p) => p.frames,
            Fault::ProtocolError(p) => p.frames,
            _ => None,
        }
    }

    pub fn error(&self) -> Option<&ErrorName> {
        match self {
            Fault::ProtocolError(p) => Some(&p.error),
            _ => None,
        }
    }

    pub fn transactional_id(&self) -> Option<&TidSelector> {
        match self {
            Fault::ProtocolDrop(p) => p.transactional_id.as_ref(),
            Fault::ProtocolDelay(p) => p.transactional_id.as_ref(),
            Fault::ProtocolError(p) => p.transactional_id.as_ref(),
            _ => None,
        }
    }

    pub fn nth(&self) -> Option<u64> {
        match self {
            Fault::ProtocolDrop(p) => p.nth,
            Fault::ProtocolDelay(p) => p.nth,
            Fault::ProtocolError(p) => p.nth,
            _ => None,
        }
    }

    pub fn checkpoint(&self) -> Option<u64> {
        match self {
            Fault::DropNotification(p) | Fault::DeclineCheckpoint(p) => p.checkpoint,
            Fault::DelayNotification(p) => p.checkpoint,
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------
// What a user reads about parameters

/// "kill-workers does not take delay_ms; delay_ms is a parameter of …", or a
/// one-line reason where that helps more than the list.
pub fn does_not_take(k: FaultKind, param: &str) -> String {
    let kind = k.name();
    match not_taken_hint(k, param) {
        Some(h) => format!("{kind} does not take {param} ({h})"),
        None => {
            let takers: Vec<&str> = FaultKind::takers(param).into_iter().map(FaultKind::name).collect();
            format!("{kind} does not take {param}; {param} is a parameter of {}", takers.join(", "))
        }
    }
}

/// Why a kind does not take a parameter, where one line helps more than the
/// list of kinds that do.
fn not_taken_hint(k: FaultKind, param: &str) -> Option<&'static str> {
    use FaultKind::*;
    Some(match (k, param) {
        (KillWorkers, "duration_ms") => "the job restarts after job.restart_delay_ms",
        (RestartReaders, "duration_ms") => {
            "the readers start again at once; use kill-readers with duration_ms for a longer down time"
        }
        (BrokerRestart, "duration_ms") => {
            "the broker restarts at once; use broker-kill with duration_ms for a longer down time"
        }
        (RollingRestart, "target") => "it restarts every broker in turn",
        (CoordinatorCrash, "target") => "the coordinator is one process; every worker is killed with it",
        (CoordinatorCrash, "duration_ms") => "the job restores after job.restart_delay_ms",
        (DelayNotification | DropNotification | DeclineCheckpoint, "duration_ms") => {
            "it acts on one checkpoint (`checkpoint`)"
        }
        (NetPartition | NetReset | NetDelay | NetLoss, "target") => "name the two sides with from and to",
        (ProtocolDrop | ProtocolDelay | ProtocolError, "target") => {
            "choose frames with apis, from/to and transactional_id"
        }
        _ => return None,
    })
}

/// A required parameter left out: "net-delay needs delay_ms (…)".
pub fn needs(k: FaultKind, param: &str) -> String {
    let kind = k.name();
    match param {
        "from" | "to" => {
            format!("{kind} needs from and to: the two groups (workers, worker-N, brokers, broker-N) it comes between")
        }
        "delay_ms" => format!("{kind} needs delay_ms (how long each one is held)"),
        "probability" => format!("{kind} needs probability: the chance 0 < p ≤ 1 that a frame is dropped"),
        "apis" => format!(
            "{kind} needs apis: the Kafka APIs whose frames it acts on (e.g. [EndTxn, AddPartitionsToTxn])"
        ),
        "error" => {
            format!("{kind} needs error: the Kafka error to answer with, by name (NOT_COORDINATOR) or code")
        }
        "target" => format!(
            "{kind} needs a target: node ids (1..=cluster.brokers), all, txn-coordinator, {{txn-coordinator: S}}, controller, leader or {{leader: P}}"
        ),
        other => format!("{kind} needs {other}"),
    }
}
