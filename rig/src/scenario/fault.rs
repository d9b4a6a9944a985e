//! One fault of a scenario's schedule and the fault kinds.
use serde::{Deserialize, Serialize};

use super::{ErrorName, FrameDirection, Group, NetDirection, Target, TidSelector, When};

/// One fault in the schedule. The fields after `duration_ms` are parameters
/// of some kinds only; validation names a parameter given to a kind that does
/// not take it (docs/SCENARIOS.md lists which kind takes which).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// A label for the history and report (default: kind and index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub kind: FaultKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    pub when: When,
    /// How long the fault lasts before it is healed (a pause, an outage, a
    /// network or protocol fault, a broker kept down). Without it a fault that
    /// has a heal lasts until the job ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// `every_ms` triggers: how many times (default: until the job ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,

    // --- network faults: between two groups of nodes ---
    /// `workers`, `worker-N`, `brokers`, `broker-N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Vec<Group>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Vec<Group>>,
    /// `net-partition`: `two-way` (default) or `one-way` (from → to only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<NetDirection>,
    /// `net-delay`, `protocol-delay`, `delay-notification`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// `net-delay`, `protocol-delay`: each frame's delay is delay_ms ± a
    /// uniform jitter (seeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<u64>,
    /// `net-loss` (and optional on protocol faults): the chance, 0 < p ≤ 1,
    /// that a matching frame is acted on (seeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probability: Option<f64>,

    // --- protocol faults: frames of chosen Kafka APIs ---
    /// API names as Kafka spells them: `EndTxn`, `Produce`, `InitProducerId`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apis: Option<Vec<String>>,
    /// `request` (default) or `response`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<FrameDirection>,
    /// `protocol-error`: the error to answer with, by Kafka name
    /// (`COORDINATOR_NOT_AVAILABLE`) or code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorName>,
    /// Only frames of this transactional id: the current id of subtask S
    /// (`{subtask: S}`, resolved when the fault fires) or a literal id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<TidSelector>,
    /// Only the n-th matching frame (1-based) after the fault starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u64>,

    // --- coordinator faults ---
    /// `drop-notification`, `delay-notification`, `decline-checkpoint`: the
    /// checkpoint acted on (default: the next one, or the trigger's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<u64>,
}

impl FaultSpec {
    /// A fault with no parameters beyond kind and trigger.
    pub fn new(kind: FaultKind, when: When) -> FaultSpec {
        FaultSpec {
            name: None,
            kind,
            target: None,
            when,
            duration_ms: None,
            times: None,
            from: None,
            to: None,
            direction: None,
            delay_ms: None,
            jitter_ms: None,
            probability: None,
            apis: None,
            frames: None,
            error: None,
            transactional_id: None,
            nth: None,
            checkpoint: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    // --- workers (the job's processes) ---
    /// SIGKILL chosen workers; the job fails over (restart after restart_delay_ms).
    KillWorkers,
    /// SIGSTOP chosen workers for duration_ms, then SIGCONT.
    PauseWorkers,
    /// SIGKILL every worker and keep the job down for duration_ms before the restore.
    JobOutage,
    // --- brokers ---
    /// SIGKILL a broker (it stays down for duration_ms, then restarts; without a
    /// duration it stays down until the job ends).
    BrokerKill,
    /// SIGTERM a broker and wait for its clean shutdown; down for duration_ms
    /// as `broker-kill`.
    BrokerStop,
    /// Stop and start a broker (same id and data).
    BrokerRestart,
    /// SIGSTOP a broker for duration_ms, then SIGCONT.
    BrokerPause,
    /// Restart every broker, one after another, waiting between nodes until no
    /// partition is under-replicated (Kafka's transactions system test).
    RollingRestart,
    // --- network (through the rig's TCP proxy in front of every listener) ---
    /// Frames between `from` and `to` are dropped (connections hang, as with
    /// an iptables DROP); `direction` one-way drops only from → to.
    NetPartition,
    /// The target brokers receive nothing from anyone and answer nothing.
    NetBlackhole,
    /// Connections between `from` and `to` are reset, and new ones are reset
    /// at once while the fault lasts.
    NetReset,
    /// Every frame between `from` and `to` is held delay_ms ± jitter_ms.
    NetDelay,
    /// Each frame between `from` and `to` is dropped with `probability`
    /// (whole Kafka frames: bytes of a TCP stream cannot be lost alone).
    NetLoss,
    // --- protocol (Kafka-aware proxy) ---
    /// Matching frames are swallowed.
    ProtocolDrop,
    /// Matching frames are held delay_ms ± jitter_ms.
    ProtocolDelay,
    /// Matching requests are answered by the proxy with `error` (not
    /// forwarded); matching responses have their error codes replaced.
    ProtocolError,
    // --- the checkpoint coordinator (Flink's JobManager) ---
    /// The "checkpoint complete" notification of `checkpoint` is not sent to
    /// the target subtasks (they commit it with the next one).
    DropNotification,
    /// The notification reaches the target subtasks delay_ms late.
    DelayNotification,
    /// The coordinator crashes after a checkpoint is persisted, before it is
    /// notified: every worker is killed and the job restores from the store.
    CoordinatorCrash,
    /// The target subtasks decline `checkpoint`: it is aborted.
    DeclineCheckpoint,
}

/// A group of nodes for network faults.
pub(super) fn worker_fault(k: FaultKind) -> bool {
    matches!(k, FaultKind::KillWorkers | FaultKind::PauseWorkers | FaultKind::JobOutage)
}

pub(super) fn kind_name(k: FaultKind) -> &'static str {
    match k {
        FaultKind::KillWorkers => "kill-workers",
        FaultKind::PauseWorkers => "pause-workers",
        FaultKind::JobOutage => "job-outage",
        FaultKind::BrokerKill => "broker-kill",
        FaultKind::BrokerStop => "broker-stop",
        FaultKind::BrokerRestart => "broker-restart",
        FaultKind::BrokerPause => "broker-pause",
        FaultKind::RollingRestart => "rolling-restart",
        FaultKind::NetPartition => "net-partition",
        FaultKind::NetBlackhole => "net-blackhole",
        FaultKind::NetReset => "net-reset",
        FaultKind::NetDelay => "net-delay",
        FaultKind::NetLoss => "net-loss",
        FaultKind::ProtocolDrop => "protocol-drop",
        FaultKind::ProtocolDelay => "protocol-delay",
        FaultKind::ProtocolError => "protocol-error",
        FaultKind::DropNotification => "drop-notification",
        FaultKind::DelayNotification => "delay-notification",
        FaultKind::CoordinatorCrash => "coordinator-crash",
        FaultKind::DeclineCheckpoint => "decline-checkpoint",
    }
}

impl FaultKind {
    /// The name as written in YAML.
    pub fn name(&self) -> &'static str {
        kind_name(*self)
    }
}

/// Network and protocol faults act through the rig's TCP proxy.
pub fn needs_proxy(k: FaultKind) -> bool {
    is_network(k) || is_protocol(k)
}

pub(super) fn is_network(k: FaultKind) -> bool {
    use FaultKind::*;
    matches!(k, NetPartition | NetBlackhole | NetReset | NetDelay | NetLoss)
}

pub(super) fn is_protocol(k: FaultKind) -> bool {
    matches!(k, FaultKind::ProtocolDrop | FaultKind::ProtocolDelay | FaultKind::ProtocolError)
}

pub(super) fn is_broker(k: FaultKind) -> bool {
    use FaultKind::*;
    matches!(k, BrokerKill | BrokerStop | BrokerRestart | BrokerPause)
}

/// Faults on the checkpoint coordinator's messages to chosen subtasks.
pub(super) fn is_notification(k: FaultKind) -> bool {
    use FaultKind::*;
    matches!(k, DropNotification | DelayNotification | DeclineCheckpoint)
}

/// Every optional parameter of a fault, as written in YAML.
pub const FAULT_PARAMS: [&str; 14] = [
    "target",
    "duration_ms",
    "from",
    "to",
    "direction",
    "delay_ms",
    "jitter_ms",
    "probability",
    "apis",
    "frames",
    "error",
    "transactional_id",
    "nth",
    "checkpoint",
];

/// Whether a fault kind takes a parameter (required or optional); the table
/// docs/SCENARIOS.md prints.
pub fn takes(k: FaultKind, param: &str) -> bool {
    use FaultKind::*;
    let net_pair = matches!(k, NetPartition | NetReset | NetDelay | NetLoss);
    match param {
        "target" => worker_fault(k) || is_broker(k) || is_notification(k) || k == NetBlackhole,
        "duration_ms" => {
            matches!(k, PauseWorkers | JobOutage | BrokerKill | BrokerStop | BrokerPause) || needs_proxy(k)
        }
        "from" => net_pair || is_protocol(k),
        "to" => net_pair || k == NetBlackhole || is_protocol(k),
        "direction" => k == NetPartition,
        "delay_ms" => matches!(k, NetDelay | ProtocolDelay | DelayNotification),
        "jitter_ms" => matches!(k, NetDelay | ProtocolDelay),
        "probability" => k == NetLoss || is_protocol(k),
        "apis" | "frames" | "transactional_id" | "nth" => is_protocol(k),
        "error" => k == ProtocolError,
        "checkpoint" => is_notification(k),
        _ => false,
    }
}

pub(super) const ALL_KINDS: [FaultKind; 20] = {
    use FaultKind::*;
    [
        KillWorkers,
        PauseWorkers,
        JobOutage,
        BrokerKill,
        BrokerStop,
        BrokerRestart,
        BrokerPause,
        RollingRestart,
        NetPartition,
        NetBlackhole,
        NetReset,
        NetDelay,
        NetLoss,
        ProtocolDrop,
        ProtocolDelay,
        ProtocolError,
        DropNotification,
        DelayNotification,
        CoordinatorCrash,
        DeclineCheckpoint,
    ]
};

impl FaultKind {
    /// Every kind, in declaration order.
    pub fn all() -> &'static [FaultKind] {
        &ALL_KINDS
    }
}

/// Which parameters a fault has set.
pub(super) fn given(f: &FaultSpec) -> Vec<&'static str> {
    let set = [
        f.target.is_some(),
        f.duration_ms.is_some(),
        f.from.is_some(),
        f.to.is_some(),
        f.direction.is_some(),
        f.delay_ms.is_some(),
        f.jitter_ms.is_some(),
        f.probability.is_some(),
        f.apis.is_some(),
        f.frames.is_some(),
        f.error.is_some(),
        f.transactional_id.is_some(),
        f.nth.is_some(),
        f.checkpoint.is_some(),
    ];
    FAULT_PARAMS.iter().zip(set).filter(|(_, s)| *s).map(|(p, _)| *p).collect()
}

/// Why a kind does not take a parameter, where one line helps more than the
/// list of kinds that do.
pub(super) fn not_taken_hint(k: FaultKind, param: &str) -> Option<&'static str> {
    use FaultKind::*;
    Some(match (k, param) {
        (KillWorkers, "duration_ms") => "the job restarts after job.restart_delay_ms",
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
