//! Faults on brokers (`broker-kill`, `broker-stop`, `broker-restart`,
//! `broker-pause`, `rolling-restart`) and every other action that needs the
//! cluster (role lookups, container isolation, the broker's view of a
//! transaction): cluster jobs, run one at a time beside the nemesis' loop.
//!
//! The cluster is one `&mut` resource, so its jobs queue; a job that had to
//! wait for another one is late, and says so in its trigger. A job triggered
//! by an event the subject holds (a checkpoint's persist) lets go of the
//! hold as soon as its effect is in place: a kill, stop or pause once it is
//! confirmed, a restart once the node is down — not once it is back.
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use super::{Heal, HealAction, Nemesis};
use crate::subject::{Hold, Subject};
use sinkhole_cluster::Cluster;
use sinkhole_cluster::{NodeAction, NodeEffect};
use sinkhole_history::fault::{
    node_effect_confirmed, Aimed, BrokerStart, Controller, End, IntervalStart, Isolated, NodeResult, RejoinEnd,
    Rejoined, RestartEnd, Role, RollingEnd, RollingNode, Start, Transactions, Trigger, TxnView, UnderReplicated,
};
use sinkhole_scenario::{FaultKind, NamedTarget, Target};

/// A cluster job running beside the loop; it hands the cluster back.
pub(crate) type ClusterOp<'a, B> = Pin<Box<dyn Future<Output = (&'a mut B, Done)> + Send + 'a>>;

/// How long a rolling restart waits, per node, for no under-replicated partition.
const URP_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a node action may take (a graceful stop, a start until ready).
const NODE_ACTION_TIMEOUT: Duration = Duration::from_secs(60);

/// A node action, its error as text (as the effects record it).
async fn act<B: Cluster + ?Sized>(cluster: &mut B, node: i32, action: NodeAction) -> Result<NodeEffect, String> {
    cluster.act(node, action, NODE_ACTION_TIMEOUT).await.map_err(|e| e.to_string())
}

/// A broker fault's resolved target.
#[derive(Debug, Clone)]
pub(crate) enum Aim {
    Nodes(Vec<i32>),
    /// The node coordinating this id, looked up when the action starts.
    CoordinatorOf {
        subtask: u32,
        transactional_id: String,
    },
    /// The KRaft quorum leader, looked up when the action starts.
    Controller,
    /// The leader of a partition, looked up when the action starts.
    LeaderOf {
        topic: String,
        partition: i32,
    },
    /// The coordinator of a (share) group, looked up when the action starts.
    GroupCoordinatorOf {
        group: String,
    },
    /// A follower of the `__transaction_state` partition of this id, looked
    /// up when the action starts.
    TxnLogFollowerOf {
        subtask: u32,
        transactional_id: String,
    },
}

impl Aim {
    fn aimed(&self) -> Aimed {
        match self {
            Aim::Nodes(n) => Aimed::Nodes(n.clone()),
            Aim::CoordinatorOf { transactional_id, .. } => {
                Aimed::CoordinatorOf { coordinator_of: transactional_id.clone() }
            }
            Aim::Controller => Aimed::Role("controller".into()),
            Aim::LeaderOf { topic, partition } => Aimed::LeaderOf { leader_of: format!("{topic}-{partition}") },
            Aim::GroupCoordinatorOf { group } => Aimed::GroupCoordinatorOf { group_coordinator_of: group.clone() },
            Aim::TxnLogFollowerOf { transactional_id, .. } => {
                Aimed::TxnLogFollowerOf { txn_log_follower_of: transactional_id.clone() }
            }
        }
    }
}

/// Something to do with the cluster.
#[derive(Debug)]
pub(crate) enum ClusterJob {
    /// A broker fault.
    Fire {
        fault: usize,
        trigger: Trigger,
        due: Instant,
        kind: FaultKind,
        duration: Option<u64>,
        aim: Aim,
        hold: Option<Hold>,
    },
    /// Restart every node in turn, each time waiting until no partition is under-replicated.
    Rolling { fault: usize, trigger: Trigger, due: Instant },
    /// Undo a kill, stop or pause.
    Heal { fault: usize, node: i32, action: NodeAction },
    /// A role to look up before a blackhole is put in place (by the proxy,
    /// or by the engine when the cluster isolates nodes itself).
    Blackhole { fault: usize, trigger: Trigger, due: Instant, aim: Aim, isolate: bool, hold: Option<Hold> },
    /// Put isolated nodes back on the network.
    Rejoin { fault: usize, nodes: Vec<i32> },
    /// The coordinator's view of these transactional ids (DescribeTransactions).
    Observe { fault: usize, ids: Vec<String> },
}

impl ClusterJob {
    pub fn fault(&self) -> usize {
        match self {
            ClusterJob::Fire { fault, .. }
            | ClusterJob::Rolling { fault, .. }
            | ClusterJob::Heal { fault, .. }
            | ClusterJob::Blackhole { fault, .. }
            | ClusterJob::Rejoin { fault, .. }
            | ClusterJob::Observe { fault, .. } => *fault,
        }
    }
}

/// What a cluster job did.
pub(crate) enum Done {
    Fire {
        fault: usize,
        trigger: Trigger,
        kind: FaultKind,
        duration: Option<u64>,
        role: Option<Role>,
        results: Vec<(i32, Result<NodeEffect, String>)>,
        error: Option<String>,
        hold: Option<Hold>,
    },
    Rolling {
        fault: usize,
        nodes: Vec<RollingNode>,
        controller: Controller,
        error: Option<String>,
        ok: bool,
    },
    Heal {
        fault: usize,
        result: NodeResult,
    },
    Blackhole {
        fault: usize,
        trigger: Trigger,
        role: Option<Role>,
        nodes: Result<Vec<i32>, String>,
        isolated: Option<Vec<Isolated>>,
        hold: Option<Hold>,
    },
    Rejoin {
        fault: usize,
        nodes: Vec<Rejoined>,
    },
    Observe {
        fault: usize,
        seen: Transactions,
    },
}

fn node_action(kind: FaultKind) -> NodeAction {
    match kind {
        FaultKind::BrokerKill => NodeAction::Kill,
        FaultKind::BrokerStop => NodeAction::Stop,
        FaultKind::BrokerPause => NodeAction::Pause,
        _ => NodeAction::Restart,
    }
}

/// Evidence that `node` had `role` at this moment.
pub(crate) fn role_evidence(role: &str, of: &str, node: i32, found_by: &str) -> Role {
    let at = sinkhole_base::utc::now_ms();
    let of_text = if of.is_empty() { String::new() } else { format!(" of {of}") };
    let when =
        format!("{}.{:03}", sinkhole_base::utc::Utc::from_unix(at / 1000).rfc3339().trim_end_matches('Z'), at % 1000);
    Role {
        role: role.to_string(),
        of: of.to_string(),
        node,
        found_by: found_by.to_string(),
        at_wall_ms: at,
        statement: format!("node {node} was the {role}{of_text} at {when}Z"),
        subtask: None,
        transactional_id: None,
        was_coordinator: None,
    }
}

/// Looks up the node a role names now.
async fn resolve<B: Cluster + ?Sized>(
    cluster: &mut B,
    aim: &Aim,
    found_by_role: &str,
) -> Result<(Vec<i32>, Option<Role>), String> {
    match aim {
        Aim::Nodes(n) => Ok((n.clone(), None)),
        Aim::CoordinatorOf { subtask, transactional_id } => {
            let node = cluster
                .find_coordinator(transactional_id)
                .await
                .map_err(|e| format!("finding the coordinator of {transactional_id}: {e}"))?;
            let found_by = if found_by_role.is_empty() {
                "FindCoordinator (key type 1) at the moment of the fault"
            } else {
                found_by_role
            };
            let mut r = role_evidence("txn-coordinator", transactional_id, node, found_by);
            if found_by_role.is_empty() {
                r.subtask = Some(*subtask);
                r.transactional_id = Some(transactional_id.clone());
                r.was_coordinator = Some(true);
            }
            Ok((vec![node], Some(r)))
        }
        Aim::Controller => {
            let node = cluster.controller().await.map_err(|e| format!("finding the controller: {e}"))?;
            let found_by = if found_by_role.is_empty() {
                "DescribeQuorum (API 55): the leader of __cluster_metadata-0"
            } else {
                found_by_role
            };
            Ok((vec![node], Some(role_evidence("controller", "", node, found_by))))
        }
        Aim::LeaderOf { topic, partition } => {
            let node = cluster
                .leader_of(topic, *partition)
                .await
                .map_err(|e| format!("finding the leader of {topic}-{partition}: {e}"))?;
            let found_by = if found_by_role.is_empty() { "Metadata (API 3)" } else { found_by_role };
            Ok((vec![node], Some(role_evidence("leader", &format!("{topic}-{partition}"), node, found_by))))
        }
        Aim::GroupCoordinatorOf { group } => {
            let node = cluster
                .find_group_coordinator(group)
                .await
                .map_err(|e| format!("finding the coordinator of group {group}: {e}"))?;
            let found_by = if found_by_role.is_empty() {
                "FindCoordinator (key type 0) at the moment of the fault"
            } else {
                found_by_role
            };
            Ok((vec![node], Some(role_evidence("group-coordinator", group, node, found_by))))
        }
        Aim::TxnLogFollowerOf { subtask, transactional_id } => {
            let (node, mut r) = txn_log_follower(cluster, transactional_id, found_by_role).await?;
            r.subtask = Some(*subtask);
            r.transactional_id = Some(transactional_id.clone());
            Ok((vec![node], Some(r)))
        }
    }
}

/// A follower of the `__transaction_state` partition that holds `tid`, with
/// the evidence: the partition (Kafka's `TransactionStateManager.partitionFor`),
/// its leader, replicas and ISR, and the coordinator FindCoordinator names,
/// which must be that leader — else the partition was computed wrong, or
/// leadership is moving, and the fault does not fire.
async fn txn_log_follower<B: Cluster + ?Sized>(
    cluster: &mut B,
    tid: &str,
    found_by_role: &str,
) -> Result<(i32, Role), String> {
    let coordinator =
        cluster.find_coordinator(tid).await.map_err(|e| format!("finding the coordinator of {tid}: {e}"))?;
    let placed = cluster
        .txn_log_placement(tid)
        .await
        .map_err(|e| format!("finding the __transaction_state partition of {tid}: {e}"))?;
    let of = format!("__transaction_state-{}", placed.partition);
    if placed.leader != coordinator {
        return Err(format!(
            "{of} (the partition of {tid}) is led by node {}, but FindCoordinator names node {coordinator}",
            placed.leader
        ));
    }
    let node = placed
        .follower()
        .ok_or_else(|| format!("{of} has no follower (replicas {:?}): nothing to stop", placed.replicas))?;
    let found_by = if found_by_role.is_empty() {
        format!(
            "Metadata of {of} (leader {coordinator} = FindCoordinator of {tid}, replicas {:?}, isr {:?}) at the moment of the fault",
            placed.replicas, placed.isr
        )
    } else {
        found_by_role.to_string()
    };
    Ok((node, role_evidence("txn-log-follower", &of, node, &found_by)))
}

/// A broker target resolved as far as it can be without the cluster.
async fn aim_of<S: Subject>(
    subject: &S,
    target: &Option<Target>,
    resolved: super::targets::BrokerTarget,
    named: Option<(u32, String)>,
    partitions: u32,
    topic: String,
    share_group: Option<String>,
) -> Result<Aim, String> {
    use super::targets::BrokerTarget;
    Ok(match resolved {
        BrokerTarget::Nodes(n) => Aim::Nodes(n),
        // A commit_started / txn_opened trigger names a transaction: plain
        // `txn-coordinator` then means that transaction's coordinator (the
        // one the commit talks to), not the one of subtask 0's open id.
        BrokerTarget::CoordinatorOf(_)
            if matches!(target, Some(Target::Named(NamedTarget::TxnCoordinator))) && named.is_some() =>
        {
            let (subtask, transactional_id) = named.expect("checked");
            Aim::CoordinatorOf { subtask, transactional_id }
        }
        // The id is the one open now, as the job knows it.
        BrokerTarget::CoordinatorOf(s) => {
            Aim::CoordinatorOf { subtask: s, transactional_id: subject.open_transaction(s).await }
        }
        BrokerTarget::Controller => Aim::Controller,
        BrokerTarget::LeaderOf(p) => {
            if p >= partitions {
                return Err(format!("partition {p} does not exist ({partitions} partitions)"));
            }
            Aim::LeaderOf { topic, partition: p as i32 }
        }
        BrokerTarget::TxnLogFollowerOf(s) => {
            Aim::TxnLogFollowerOf { subtask: s, transactional_id: subject.open_transaction(s).await }
        }
        BrokerTarget::GroupCoordinator => match share_group {
            Some(group) => Aim::GroupCoordinatorOf { group },
            None => return Err("group-coordinator: this mode reads no share group".into()),
        },
    })
}

/// A restart that lets go of `hold` the moment the node is down (the backend
/// says so between its stop and its start), not when it is back.
async fn restart<B: Cluster + ?Sized>(
    cluster: &mut B,
    node: i32,
    hold: &mut Option<Hold>,
) -> Result<NodeEffect, String> {
    let Some(h) = hold.take() else { return act(cluster, node, NodeAction::Restart).await };
    let (down, is_down) = tokio::sync::oneshot::channel();
    let restarting = cluster.act_with(node, NodeAction::Restart, NODE_ACTION_TIMEOUT, Some(down));
    let release = async move {
        // Down (or the action ended without saying so): the window is in place.
        let _ = is_down.await;
        drop(h);
    };
    let (r, ()) = tokio::join!(restarting, release);
    r.map_err(|e| e.to_string())
}

/// Runs one cluster job to its end (a restart includes the wait until the
/// node answers again).
async fn run_job<B: Cluster + ?Sized>(cluster: &mut B, job: ClusterJob) -> Done {
    match job {
        ClusterJob::Fire { fault, trigger, kind, duration, aim, mut hold, .. } => {
            let (nodes, role) = match resolve(cluster, &aim, "").await {
                Ok(r) => r,
                Err(e) => {
                    return Done::Fire {
                        fault,
                        trigger,
                        kind,
                        duration,
                        role: None,
                        results: vec![],
                        error: Some(e),
                        hold,
                    }
                }
            };
            let mut results = vec![];
            for node in nodes {
                let r = if kind == FaultKind::BrokerRestart {
                    restart(cluster, node, &mut hold).await
                } else {
                    act(cluster, node, node_action(kind)).await
                };
                results.push((node, r));
            }
            Done::Fire { fault, trigger, kind, duration, role, results, error: None, hold }
        }
        ClusterJob::Rolling { fault, .. } => rolling_restart(cluster, fault).await,
        ClusterJob::Heal { fault, node, action } => {
            let r = act(cluster, node, action).await;
            Done::Heal { fault, result: NodeResult::of(node, &r) }
        }
        ClusterJob::Blackhole { fault, trigger, aim, isolate, hold, .. } => {
            let resolved = resolve(cluster, &aim, "looked up when the fault fired").await;
            let (nodes, role) = match resolved {
                Ok((n, r)) => (Ok(n), r),
                Err(e) => (Err(e), None),
            };
            let isolated = match (&nodes, isolate) {
                (Ok(n), true) => {
                    let mut out = vec![];
                    for &node in n {
                        out.push(match cluster.isolate(node).await {
                            Ok(network) => {
                                let confirmed = Some(serde_json::Value::Bool(network.confirmed));
                                let network = serde_json::to_value(network).unwrap_or_default();
                                Isolated::Done { node, confirmed, network }
                            }
                            Err(e) => Isolated::Failed { node, confirmed: false, error: e.to_string() },
                        });
                    }
                    Some(out)
                }
                _ => None,
            };
            Done::Blackhole { fault, trigger, role, nodes, isolated, hold }
        }
        ClusterJob::Rejoin { fault, nodes } => {
            let mut out = vec![];
            for node in nodes {
                out.push(match cluster.rejoin(node).await {
                    Ok(network) => Rejoined::Done { node, network: serde_json::to_value(network).unwrap_or_default() },
                    Err(e) => Rejoined::Failed { node, error: e.to_string() },
                });
            }
            Done::Rejoin { fault, nodes: out }
        }
        ClusterJob::Observe { fault, ids } => {
            let seen = match cluster.describe_transactions(ids).await {
                Ok(v) => serde_json::from_value::<Vec<TxnView>>(v).map(Transactions::Seen).unwrap_or_else(|e| {
                    Transactions::Error { error: format!("the broker's answer did not parse: {e}") }
                }),
                Err(e) => Transactions::Error { error: e.to_string() },
            };
            Done::Observe { fault, seen }
        }
    }
}

/// Kafka's rolling restart, as its transactions system test and its upgrade
/// notes do it: one node at a time, and the next only once the restarted
/// node answers and no partition is under-replicated. Nodes go in id order
/// with the active controller last, so the quorum elects a new leader once,
/// at the end, instead of while other nodes are down.
async fn rolling_restart<B: Cluster + ?Sized>(cluster: &mut B, fault: usize) -> Done {
    let mut order = cluster.node_ids();
    order.sort_unstable();
    let controller = cluster.controller().await.map_err(|e| e.to_string());
    if let Ok(c) = controller {
        if let Some(i) = order.iter().position(|&n| n == c) {
            let n = order.remove(i);
            order.push(n);
        }
    }
    let mut ok = true;
    let mut nodes = vec![];
    let mut error = None;
    for node in order {
        let started = Instant::now();
        let r = act(cluster, node, NodeAction::Restart).await;
        let ms_until_ready = started.elapsed().as_millis() as u64;
        let restarted = r.as_ref().is_ok_and(node_effect_confirmed);
        let mut urp_last = None;
        let mut ms_until_urp_0 = None;
        if restarted {
            let waited = Instant::now();
            loop {
                let u = cluster.under_replicated().await.map_err(|e| e.to_string());
                let zero = matches!(u, Ok(0));
                urp_last = Some(u.clone());
                if zero || waited.elapsed() >= URP_TIMEOUT {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            ms_until_urp_0 = Some(match &urp_last {
                Some(Ok(0)) => Some(waited.elapsed().as_millis() as u64),
                _ => None,
            });
        }
        let urp_zero = matches!(urp_last, Some(Ok(0)));
        let under_replicated_last = match urp_last {
            Some(Ok(n)) => Some(UnderReplicated::Count(n)),
            Some(Err(e)) => Some(UnderReplicated::Error { error: e }),
            None => None,
        };
        ok &= restarted && urp_zero;
        nodes.push(RollingNode {
            result: NodeResult::of(node, &r),
            ms_until_ready,
            ms_until_urp_0,
            under_replicated_last,
        });
        if !restarted {
            // A node that did not come back: going on would take a second one down.
            error = Some(format!("node {node} did not come back; the rolling restart stopped there"));
            break;
        }
    }
    let controller = match controller {
        Ok(c) => Controller { controller_before: Some(c), error: None, order: "id order, the controller last".into() },
        Err(e) => Controller { controller_before: None, error: Some(e), order: "id order".into() },
    };
    let ok = ok && error.is_none();
    Done::Rolling { fault, nodes, controller, error, ok }
}

impl<'a, S: Subject, B: Cluster + ?Sized> Nemesis<'a, S, B> {
    pub(super) async fn fire_broker(&mut self, f: usize, due: super::Due) -> anyhow::Result<()> {
        let spec = self.spec(f).clone();
        if spec.kind == FaultKind::RollingRestart {
            // Minutes long: always beside the loop.
            self.slots[f].queued = true;
            self.queue.push_back(ClusterJob::Rolling { fault: f, trigger: due.trigger, due: due.at });
            return self.pump();
        }
        let aim = match self.broker_aim(f, &spec.kind.target().cloned(), Some(&due.trigger)).await {
            Ok(a) => a,
            Err(e) => return self.fault_failed(f, due.trigger, e),
        };
        let job = ClusterJob::Fire {
            fault: f,
            trigger: due.trigger,
            due: due.at,
            kind: spec.kind.kind(),
            duration: spec.duration_ms,
            aim,
            hold: due.hold,
        };
        self.slots[f].queued = true;
        self.queue.push_back(job);
        self.pump()
    }

    /// A broker target resolved as far as it can be without the cluster.
    /// With `trigger`, plain `txn-coordinator` means the transaction a
    /// commit_started / txn_opened trigger names.
    /// (Not an `async fn`: the future borrows only the subject, so the
    /// nemesis need not be `Sync`.)
    pub(super) fn broker_aim<'s>(
        &'s self,
        f: usize,
        target: &'s Option<Target>,
        trigger: Option<&Trigger>,
    ) -> impl std::future::Future<Output = Result<Aim, String>> + Send + 's {
        let subject = &self.members[self.who(f)].subject;
        let resolved = super::targets::broker_target(target, &self.node_ids, subject.workers());
        let named = trigger.and_then(Trigger::transaction);
        let (partitions, topic) = (self.cfg(f).partitions, self.cfg(f).topic.clone());
        let group = self.cfg(f).share_group.clone();
        async move { aim_of(subject, target, resolved?, named, partitions, topic, group).await }
    }

    /// Starts the next queued cluster job if none is running.
    pub(crate) fn pump(&mut self) -> anyhow::Result<()> {
        if self.op.is_some() {
            return Ok(());
        }
        let Some(mut job) = self.queue.pop_front() else { return Ok(()) };
        let Some(cluster) = self.cluster.take() else {
            self.queue.push_front(job);
            return Ok(());
        };
        self.job_started(&mut job)?;
        self.op = Some(Box::pin(async move {
            let done = run_job(&mut *cluster, job).await;
            (cluster, done)
        }));
        Ok(())
    }

    /// Runs a cluster job now, after the one in flight (if any).
    pub(super) async fn job_now(&mut self, mut job: ClusterJob) -> anyhow::Result<()> {
        self.wait_op().await?;
        let cluster = self.cluster.take().expect("no cluster job in flight");
        self.job_started(&mut job)?;
        let done = run_job(&mut *cluster, job).await;
        self.op_done(cluster, done)
    }

    /// Waits for the cluster job in flight, if any, and records its end.
    pub(super) async fn wait_op(&mut self) -> anyhow::Result<()> {
        if let Some(op) = self.op.take() {
            let (cluster, done) = op.await;
            self.op_done(cluster, done)?;
        }
        Ok(())
    }

    /// A job leaves the queue: how late it is, and the start of an interval fault.
    fn job_started(&mut self, job: &mut ClusterJob) -> anyhow::Result<()> {
        self.op_fault = Some(job.fault());
        let waited_for = self.slots.get(self.last_op_fault.unwrap_or(usize::MAX)).map(|s| s.name.clone());
        let because = waited_for.map(|n| format!("the cluster was busy with fault {n}"));
        match job {
            ClusterJob::Fire { fault, trigger, due, kind: FaultKind::BrokerRestart, aim, .. } => {
                Self::note_lateness(trigger, *due, because);
                // A restart is an interval (stop, start, ready): started now, ended when back.
                let start = IntervalStart { trigger: trigger.clone(), nodes: aim.aimed(), order: None };
                let f = *fault;
                self.fault_started(f, false, Start::Interval(start))?;
            }
            ClusterJob::Fire { trigger, due, .. } | ClusterJob::Blackhole { trigger, due, .. } => {
                Self::note_lateness(trigger, *due, because);
            }
            ClusterJob::Rolling { fault, trigger, due } => {
                Self::note_lateness(trigger, *due, because);
                let start = IntervalStart {
                    trigger: trigger.clone(),
                    nodes: Aimed::Nodes(self.node_ids.clone()),
                    order: Some("id order, controller last".into()),
                };
                let f = *fault;
                self.fault_started(f, false, Start::Interval(start))?;
            }
            _ => {}
        }
        Ok(())
    }

    pub(super) fn op_done(&mut self, cluster: &'a mut B, done: Done) -> anyhow::Result<()> {
        self.op = None;
        self.last_op_fault = self.op_fault.take();
        self.bootstrap.send_replace(cluster.client_bootstrap());
        self.cluster = Some(cluster);
        self.job_done(done)?;
        self.pump()
    }

    fn job_done(&mut self, done: Done) -> anyhow::Result<()> {
        match done {
            Done::Heal { fault, result } => self.fault_ended(fault, End::Node(result)),
            Done::Rolling { fault, nodes, controller, error, ok } => {
                let end = RollingEnd { nodes, controller, error, confirmed: ok };
                self.fault_ended_with(fault, End::Rolling(end), Some(ok))
            }
            Done::Fire { fault, trigger, kind, duration, role, results, error, hold } => {
                let per_node: Vec<NodeResult> = results.iter().map(|(n, r)| NodeResult::of(*n, r)).collect();
                let confirmed = error.is_none() && !per_node.is_empty() && per_node.iter().all(NodeResult::confirmed);
                let r = if kind == FaultKind::BrokerRestart {
                    let end = RestartEnd { nodes: per_node, coordinator: role.clone(), role, error, confirmed };
                    self.fault_ended_with(fault, End::Restart(end), Some(confirmed))
                } else if let Some(error) = error {
                    self.fault_failed(fault, trigger, error)
                } else {
                    for (node, r) in &results {
                        if r.is_ok() {
                            let action = if matches!(kind, FaultKind::BrokerKill | FaultKind::BrokerStop) {
                                HealAction::StartBroker(*node)
                            } else {
                                HealAction::ResumeBroker(*node)
                            };
                            let at = duration.and_then(sinkhole_base::utc::in_ms);
                            self.heals.push(Heal { at, fault, action });
                        }
                    }
                    let start = BrokerStart {
                        trigger,
                        nodes: per_node,
                        coordinator: role.clone(),
                        role,
                        duration_ms: duration,
                    };
                    self.fault_started(fault, confirmed, Start::Broker(start))
                };
                // Recorded first, then the subject may go past the window.
                drop(hold);
                r
            }
            Done::Blackhole { fault, trigger, role, nodes, isolated, hold } => {
                let r = match (nodes, isolated) {
                    (Err(e), _) => self.fault_failed(fault, trigger, e),
                    (Ok(_), Some(isolated)) => self.isolated(fault, trigger, role, isolated),
                    (Ok(nodes), None) => self.install_rule(fault, trigger, None, &nodes, role),
                };
                drop(hold);
                r
            }
            Done::Rejoin { fault, nodes } => self.fault_ended(fault, End::Rejoin(RejoinEnd { nodes })),
            Done::Observe { fault, seen } => self.observed(fault, seen),
        }
    }
}
