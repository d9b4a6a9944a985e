//! What faults did, as typed data: the effects the nemesis records in the
//! history (`fault-started` / `fault-ended`) and in every `verdict.json`, and
//! that the verdict and the report read back.
//!
//! One type per shape of effect, serialised to exactly the JSON the rig has
//! always written (results written before these types existed read back into
//! them: a fixture test holds that), so a key is named in one place for its
//! writer and its readers. Which shapes a fault can have follows from its
//! kind, so reading is directed by the kind ([`Start::parse`],
//! [`End::parse`]); a shape this version does not know (a hand-edited file, a
//! future field set) is kept as [`Start::Other`] / [`End::Other`] rather than
//! dropped, and the report shows it raw.
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use sinkhole_faults::proxy::{Rule, RuleStats};

use sinkhole_cluster::NodeEffect;
use sinkhole_scenario::FaultKind;

pub use super::trigger::{AckedAt, ModeView, Trigger, TxnAt};

/// `Some(None)` ⇄ `null`, `None` ⇄ absent: for the few keys that are written
/// as null in some cases and left out in others.
mod nullable {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    pub fn serialize<S: Serializer, T: Serialize>(v: &Option<Option<T>>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(inner) => inner.serialize(s),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(d).map(Some)
    }
}

// ---------------------------------------------------------------------------
// Pieces

/// Evidence that a node held a role when a fault hit it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Role {
    pub role: String,
    pub of: String,
    pub node: i32,
    pub found_by: String,
    pub at_wall_ms: u64,
    /// "node 2 was the txn-coordinator of … at …".
    pub statement: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtask: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub was_coordinator: Option<bool>,
}

/// One node's part of a broker action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum NodeResult {
    Done { node: i32, confirmed: bool, effect: NodeEffect },
    Failed { node: i32, confirmed: bool, error: String },
}

impl NodeResult {
    /// Whether every signal was seen to take effect and, for starts, the
    /// node answered again.
    pub fn of(node: i32, r: &Result<NodeEffect, String>) -> NodeResult {
        match r {
            Ok(e) => NodeResult::Done { node, confirmed: node_effect_confirmed(e), effect: e.clone() },
            Err(error) => NodeResult::Failed { node, confirmed: false, error: error.clone() },
        }
    }
    pub fn confirmed(&self) -> bool {
        match self {
            NodeResult::Done { confirmed, .. } | NodeResult::Failed { confirmed, .. } => *confirmed,
        }
    }
    pub fn node(&self) -> i32 {
        match self {
            NodeResult::Done { node, .. } | NodeResult::Failed { node, .. } => *node,
        }
    }
}

/// Whether every signal (or, on an external cluster, every command) of a node
/// action was seen to take effect and, for starts, the node answered again.
pub fn node_effect_confirmed(e: &NodeEffect) -> bool {
    e.signals.iter().all(|s| s.confirmed) && e.commands.iter().all(|c| c.confirmed) && e.ready != Some(false)
}

/// The broker's view of a frozen worker's open transaction
/// (DescribeTransactions), or why it could not be had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhileFrozen {
    /// When it was asked, in ms after the pause began.
    pub after_ms: i64,
    pub transactions: Transactions,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Transactions {
    Seen(Vec<TxnView>),
    Error { error: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxnView {
    pub transactional_id: String,
    pub state: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    pub error: Option<String>,
}

// ---------------------------------------------------------------------------
// Starts

/// What a signal did to one worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WorkerHit {
    /// Delivered; `signal` is what the kernel showed afterwards.
    Signalled { subtask: u32, pid: u32, signal: sinkhole_faults::process::SignalEffect },
    /// The process was there, the signal failed.
    Failed { subtask: u32, pid: u32, error: String },
    /// No process to signal (the job was down, or the worker had exited).
    NotRunning { subtask: u32, error: String },
}

impl WorkerHit {
    pub fn confirmed(&self) -> bool {
        matches!(self, WorkerHit::Signalled { signal, .. } if signal.confirmed)
    }
    /// (subtask, pid) of a delivered signal.
    pub fn hit(&self) -> Option<(u32, u32)> {
        match self {
            WorkerHit::Signalled { subtask, pid, .. } => Some((*subtask, *pid)),
            _ => None,
        }
    }
}

/// Workers signalled (kill, pause, outage).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkersStart {
    pub trigger: Trigger,
    pub attempt: u32,
    pub workers: Vec<WorkerHit>,
    /// pause-workers: how long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// pause-workers: the transactions the frozen workers held open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_transactions: Option<Vec<String>>,
    /// pause-workers past the transaction timeout: the broker's view while frozen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub while_frozen: Option<WhileFrozen>,
    /// job-outage: how long the job stays down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage_ms: Option<u64>,
}

/// What a reader fault did to one live reader (`readers.jsonl`'s reader index), as its
/// thread acknowledged it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ReaderHit {
    /// The reader acted: `incarnation` is the consumer it hit (killed, paused, closed) or, at a
    /// heal, the one it runs now; `started` the new incarnation a restart began.
    Acted {
        reader: u32,
        incarnation: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        started: Option<u32>,
        /// What it did, in words ("dropped without a close", "stopped polling", ...).
        did: String,
    },
    /// It could not act: the reader had already ended, or did not answer in time.
    Missed { reader: u32, error: String },
}

impl ReaderHit {
    pub fn acted(&self) -> bool {
        matches!(self, ReaderHit::Acted { .. })
    }
}

/// Live readers hit (kill-readers, pause-readers, restart-readers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadersStart {
    pub trigger: Trigger,
    pub readers: Vec<ReaderHit>,
    /// kill-readers, pause-readers: how long (a kill without one: until the job ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// kill-readers, pause-readers healed: each reader started again, or polling again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadersEnd {
    pub readers: Vec<ReaderHit>,
}

/// coordinator-crash: every worker killed, in a checkpoint's window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashStart {
    pub trigger: Trigger,
    pub attempt: u32,
    pub workers: Vec<WorkerHit>,
    pub persisted_not_notified: Option<u64>,
}

/// A broker kill, stop or pause, done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BrokerStart {
    pub trigger: Trigger,
    pub nodes: Vec<NodeResult>,
    pub coordinator: Option<Role>,
    pub role: Option<Role>,
    pub duration_ms: Option<u64>,
}

/// What an interval fault (a restart, a rolling restart) aims at when it begins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Aimed {
    Nodes(Vec<i32>),
    CoordinatorOf { coordinator_of: String },
    LeaderOf { leader_of: String },
    GroupCoordinatorOf { group_coordinator_of: String },
    TxnLogFollowerOf { txn_log_follower_of: String },
    Role(String),
}

/// A broker restart or rolling restart, begun (it ends when the nodes are back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalStart {
    pub trigger: Trigger,
    pub nodes: Aimed,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<String>,
}

/// A proxy rule installed (network and protocol faults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleStart {
    pub trigger: Trigger,
    pub rule: Rule,
    pub rule_id: u64,
    pub role: Option<Role>,
    pub duration_ms: Option<u64>,
}

/// Nodes taken off the network by the container engine (net-blackhole on containers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IsolationStart {
    pub trigger: Trigger,
    pub how: String,
    pub nodes: Vec<Isolated>,
    pub role: Option<Role>,
    pub duration_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Isolated {
    /// `network` is the engine's own report.
    Done {
        node: i32,
        confirmed: Option<Value>,
        network: Value,
    },
    Failed {
        node: i32,
        confirmed: bool,
        error: String,
    },
}

/// A coordinator hook armed (it is confirmed once it acts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmedStart {
    pub trigger: Trigger,
    pub armed_for_checkpoint: ArmedFor,
    pub subtasks: Vec<u32>,
    pub delay_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ArmedFor {
    Checkpoint(u64),
    /// "the next notification".
    Next(String),
}

/// A fault that could not be aimed or carried out: fired, not confirmed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedStart {
    pub trigger: Trigger,
    pub error: String,
}

/// What a fault did when it started.
#[derive(Debug, Clone, PartialEq)]
pub enum Start {
    Workers(WorkersStart),
    Readers(ReadersStart),
    Crash(CrashStart),
    Broker(BrokerStart),
    Interval(IntervalStart),
    Rule(RuleStart),
    Isolation(IsolationStart),
    Armed(ArmedStart),
    Failed(FailedStart),
    /// A shape this version does not know.
    Other(Value),
}

// ---------------------------------------------------------------------------
// Ends

/// pause-workers healed: SIGCONT to each frozen worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumedEnd {
    pub workers: Vec<Resumed>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Resumed {
    Signalled {
        subtask: u32,
        pid: u32,
        signal: sinkhole_faults::process::SignalEffect,
    },
    /// The failover killed it meanwhile: nothing to resume.
    Gone {
        subtask: u32,
        pid: u32,
        gone: String,
    },
}

/// job-outage: the job was deployed again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutageEnd {
    pub planned_ms: u64,
    pub down_ms: u64,
    pub restored_from: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoteEnd {
    pub note: String,
}

/// broker-restart: the node is back (or not).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestartEnd {
    pub nodes: Vec<NodeResult>,
    pub coordinator: Option<Role>,
    pub role: Option<Role>,
    pub error: Option<String>,
    pub confirmed: bool,
}

/// rolling-restart: every node in turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RollingEnd {
    pub nodes: Vec<RollingNode>,
    pub controller: Controller,
    pub error: Option<String>,
    pub confirmed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RollingNode {
    #[serde(flatten)]
    pub result: NodeResult,
    pub ms_until_ready: u64,
    /// Absent when the node did not come back; null when it came back but
    /// partitions stayed under-replicated.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "nullable")]
    pub ms_until_urp_0: Option<Option<u64>>,
    pub under_replicated_last: Option<UnderReplicated>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UnderReplicated {
    Count(usize),
    Error { error: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Controller {
    pub controller_before: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub order: String,
}

/// A proxy rule removed, with what it matched and did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleEnd {
    pub rule_id: u64,
    pub stats: RuleStats,
    pub acted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_unconfirmed: Option<String>,
}

/// Nodes put back on the network by the engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RejoinEnd {
    pub nodes: Vec<Rejoined>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Rejoined {
    Done { node: i32, network: Value },
    Failed { node: i32, error: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DroppedEnd {
    pub checkpoint: u64,
    pub withheld_from: Vec<u32>,
    pub missed: Vec<Missed>,
    pub covered_by: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Missed {
    pub subtask: u32,
    pub checkpoint: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelayedEnd {
    pub checkpoint: u64,
    pub delay_ms: u64,
    pub late_notifications: Vec<LateNotification>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LateNotification {
    pub subtask: u32,
    pub sent: bool,
    pub why_not: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeclinedEnd {
    pub checkpoint: u64,
    pub declined_by: u32,
    pub aborted: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrashedEnd {
    pub checkpoint: u64,
    pub notified: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotActedEnd {
    pub not_acted: String,
}

/// What a fault did when it ended (was healed, or acted).
// A handful of these exist per run: boxing the big variants buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    Resumed(ResumedEnd),
    Readers(ReadersEnd),
    Outage(OutageEnd),
    Note(NoteEnd),
    /// A broker started or resumed again.
    Node(NodeResult),
    Restart(RestartEnd),
    Rolling(RollingEnd),
    Rule(RuleEnd),
    Rejoin(RejoinEnd),
    Dropped(DroppedEnd),
    Delayed(DelayedEnd),
    Declined(DeclinedEnd),
    Crashed(CrashedEnd),
    NotActed(NotActedEnd),
    Other(Value),
}

// ---------------------------------------------------------------------------
// Reading and writing by kind

fn try_as<T: DeserializeOwned>(v: &Value) -> Option<T> {
    serde_json::from_value(v.clone()).ok()
}

fn has(v: &Value, key: &str) -> bool {
    v.get(key).is_some()
}

impl Start {
    /// Reads a start effect of a fault of `kind` (its YAML name).
    pub fn parse(kind: &str, v: &Value) -> Start {
        use FaultKind::*;
        let k = FaultKind::all().iter().copied().find(|k| k.name() == kind);
        let typed = match k {
            _ if has(v, "error") && !has(v, "nodes") && !has(v, "workers") && !has(v, "rule") => {
                try_as(v).map(Start::Failed)
            }
            Some(KillWorkers | PauseWorkers | JobOutage) => try_as(v).map(Start::Workers),
            Some(KillReaders | PauseReaders | RestartReaders) => try_as(v).map(Start::Readers),
            Some(CoordinatorCrash) => try_as(v).map(Start::Crash),
            Some(BrokerKill | BrokerStop | BrokerPause) => try_as(v).map(Start::Broker),
            Some(BrokerRestart | RollingRestart) => try_as(v).map(Start::Interval),
            Some(DropNotification | DelayNotification | DeclineCheckpoint) => try_as(v).map(Start::Armed),
            Some(_) if has(v, "how") => try_as(v).map(Start::Isolation),
            Some(_) => try_as(v).map(Start::Rule),
            None => None,
        };
        typed.unwrap_or_else(|| Start::Other(v.clone()))
    }

    pub fn to_value(&self) -> Value {
        let r = match self {
            Start::Workers(s) => serde_json::to_value(s),
            Start::Readers(s) => serde_json::to_value(s),
            Start::Crash(s) => serde_json::to_value(s),
            Start::Broker(s) => serde_json::to_value(s),
            Start::Interval(s) => serde_json::to_value(s),
            Start::Rule(s) => serde_json::to_value(s),
            Start::Isolation(s) => serde_json::to_value(s),
            Start::Armed(s) => serde_json::to_value(s),
            Start::Failed(s) => serde_json::to_value(s),
            Start::Other(v) => Ok(v.clone()),
        };
        r.unwrap_or(Value::Null)
    }

    pub fn trigger(&self) -> Option<&Trigger> {
        Some(match self {
            Start::Workers(s) => &s.trigger,
            Start::Readers(s) => &s.trigger,
            Start::Crash(s) => &s.trigger,
            Start::Broker(s) => &s.trigger,
            Start::Interval(s) => &s.trigger,
            Start::Rule(s) => &s.trigger,
            Start::Isolation(s) => &s.trigger,
            Start::Armed(s) => &s.trigger,
            Start::Failed(s) => &s.trigger,
            Start::Other(_) => return None,
        })
    }

    /// The role the target held when it was hit, if one was looked up.
    pub fn role(&self) -> Option<&Role> {
        match self {
            Start::Broker(s) => s.role.as_ref(),
            Start::Rule(s) => s.role.as_ref(),
            Start::Isolation(s) => s.role.as_ref(),
            _ => None,
        }
    }
}

impl End {
    /// Reads an end effect of a fault of `kind` (its YAML name).
    pub fn parse(kind: &str, v: &Value) -> End {
        use FaultKind::*;
        let k = FaultKind::all().iter().copied().find(|k| k.name() == kind);
        let typed = match k {
            _ if has(v, "not_acted") => try_as(v).map(End::NotActed),
            Some(PauseWorkers) => try_as(v).map(End::Resumed),
            Some(KillReaders | PauseReaders) => try_as(v).map(End::Readers),
            Some(JobOutage) if has(v, "note") => try_as(v).map(End::Note),
            Some(JobOutage) => try_as(v).map(End::Outage),
            Some(BrokerKill | BrokerStop | BrokerPause) => try_as(v).map(End::Node),
            Some(BrokerRestart) => try_as(v).map(End::Restart),
            Some(RollingRestart) => try_as(v).map(End::Rolling),
            Some(DropNotification) => try_as(v).map(End::Dropped),
            Some(DelayNotification) => try_as(v).map(End::Delayed),
            Some(DeclineCheckpoint) => try_as(v).map(End::Declined),
            Some(CoordinatorCrash) => try_as(v).map(End::Crashed),
            Some(_) if has(v, "rule_id") => try_as(v).map(End::Rule),
            Some(_) => try_as(v).map(End::Rejoin),
            None => None,
        };
        typed.unwrap_or_else(|| End::Other(v.clone()))
    }

    pub fn to_value(&self) -> Value {
        let r = match self {
            End::Resumed(e) => serde_json::to_value(e),
            End::Readers(e) => serde_json::to_value(e),
            End::Outage(e) => serde_json::to_value(e),
            End::Note(e) => serde_json::to_value(e),
            End::Node(e) => serde_json::to_value(e),
            End::Restart(e) => serde_json::to_value(e),
            End::Rolling(e) => serde_json::to_value(e),
            End::Rule(e) => serde_json::to_value(e),
            End::Rejoin(e) => serde_json::to_value(e),
            End::Dropped(e) => serde_json::to_value(e),
            End::Delayed(e) => serde_json::to_value(e),
            End::Declined(e) => serde_json::to_value(e),
            End::Crashed(e) => serde_json::to_value(e),
            End::NotActed(e) => serde_json::to_value(e),
            End::Other(v) => Ok(v.clone()),
        };
        r.unwrap_or(Value::Null)
    }

    /// The role an interval fault's target held.
    pub fn role(&self) -> Option<&Role> {
        match self {
            End::Restart(e) => e.role.as_ref(),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------------------
// Records

/// One firing of a fault: what it did when it started and when it ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Firing {
    pub start: Start,
    pub end: Option<End>,
    pub confirmed: bool,
}

/// What one fault did over the run, as verdict.json keeps it.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum FaultEffect {
    /// `start` of its first firing, `end` of its last; for a repeated fault
    /// every firing.
    Fired { start: Start, end: Option<End>, firings: Option<Vec<Firing>> },
    /// It never fired, and why.
    Skipped { skipped: String },
}

impl FaultEffect {
    /// The effect of a fault's firings (`repeats`: an `every_ms` fault).
    pub fn of(firings: &[Firing], repeats: bool) -> Option<FaultEffect> {
        let first = firings.first()?;
        Some(FaultEffect::Fired {
            start: first.start.clone(),
            end: firings.last().and_then(|f| f.end.clone()),
            firings: repeats.then(|| firings.to_vec()),
        })
    }

    pub fn start(&self) -> Option<&Start> {
        match self {
            FaultEffect::Fired { start, .. } => Some(start),
            FaultEffect::Skipped { .. } => None,
        }
    }

    pub fn end(&self) -> Option<&End> {
        match self {
            FaultEffect::Fired { end, .. } => end.as_ref(),
            FaultEffect::Skipped { .. } => None,
        }
    }

    pub fn to_value(&self) -> Value {
        let mut m = serde_json::Map::new();
        match self {
            FaultEffect::Skipped { skipped } => {
                m.insert("skipped".into(), Value::String(skipped.clone()));
            }
            FaultEffect::Fired { start, end, firings } => {
                m.insert("start".into(), start.to_value());
                if let Some(e) = end {
                    m.insert("end".into(), e.to_value());
                }
                if let Some(fs) = firings {
                    let all = fs
                        .iter()
                        .map(|f| {
                            serde_json::json!({"start": f.start.to_value(),
                                               "end": f.end.as_ref().map(End::to_value),
                                               "confirmed": f.confirmed})
                        })
                        .collect();
                    m.insert("firings".into(), Value::Array(all));
                }
            }
        }
        Value::Object(m)
    }

    pub fn parse(kind: &str, v: &Value) -> FaultEffect {
        if let Some(s) = v.get("skipped").and_then(|s| s.as_str()) {
            return FaultEffect::Skipped { skipped: s.to_string() };
        }
        let start = Start::parse(kind, v.get("start").unwrap_or(&Value::Null));
        let end = v.get("end").filter(|e| !e.is_null()).map(|e| End::parse(kind, e));
        let firings = v.get("firings").and_then(|f| f.as_array()).map(|all| {
            all.iter()
                .map(|f| Firing {
                    start: Start::parse(kind, f.get("start").unwrap_or(&Value::Null)),
                    end: f.get("end").filter(|e| !e.is_null()).map(|e| End::parse(kind, e)),
                    confirmed: f.get("confirmed").and_then(|c| c.as_bool()).unwrap_or(false),
                })
                .collect()
        });
        FaultEffect::Fired { start, end, firings }
    }
}

/// What one fault did: `verdict.json`'s `faults`, the verdict's evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRecord {
    pub name: String,
    pub kind: String,
    pub fired: bool,
    /// The effect was observed (signal delivered and seen, node was the coordinator, ...).
    pub confirmed: bool,
    pub effect: FaultEffect,
}

#[derive(Serialize, Deserialize)]
struct RawRecord {
    name: String,
    kind: String,
    fired: bool,
    confirmed: bool,
    effect: Value,
}

impl Serialize for FaultRecord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RawRecord {
            name: self.name.clone(),
            kind: self.kind.clone(),
            fired: self.fired,
            confirmed: self.confirmed,
            effect: self.effect.to_value(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for FaultRecord {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FaultRecord, D::Error> {
        let r = RawRecord::deserialize(d)?;
        let effect = FaultEffect::parse(&r.kind, &r.effect);
        Ok(FaultRecord { name: r.name, kind: r.kind, fired: r.fired, confirmed: r.confirmed, effect })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_fault_reads_back_by_its_kind() {
        let start = Start::Readers(ReadersStart {
            trigger: Trigger { at_ms: Some(5), ..Trigger::default() },
            readers: vec![
                ReaderHit::Acted { reader: 0, incarnation: 0, started: None, did: "stopped polling".into() },
                ReaderHit::Missed { reader: 1, error: "it was down".into() },
            ],
            duration_ms: Some(7000),
        });
        assert_eq!(Start::parse("pause-readers", &start.to_value()), start);
        let end = End::Readers(ReadersEnd {
            readers: vec![ReaderHit::Acted { reader: 0, incarnation: 1, started: Some(1), did: "started".into() }],
        });
        assert_eq!(End::parse("kill-readers", &end.to_value()), end);
    }
}
